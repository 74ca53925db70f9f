/**
 * Where the store client sends its calls: DynamoDB's endpoint rules over partitions, FIPS and dual-stack, checked
 * against exact hosts and against the AWS SDK's own DynamoDB endpoint resolver; the variables that choose it
 * (DDB_ENDPOINT first, then the AWS SDK's); and the refusals of impossible combinations.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { loadConfig } from '../../../lib/config';
import { ConfigError } from '../../../lib/errors';
import { createDocumentClient } from '../../../lib/store/dynamo';
import { DynamoEndpointError, resolveDynamoEndpoint, type PartitionInfo } from '../../../lib/store/dynamoEndpoint';
import { DynamoHttpClient } from '../../../lib/store/dynamoHttp';
import { answerDynamo, startFakeDynamo, type FakeDynamo } from '../../support/fakeDynamo';

type Case = [region: string, fips: boolean, dualStack: boolean, url: string];

const TABLE: Case[] = [
  ['us-east-1', false, false, 'https://dynamodb.us-east-1.amazonaws.com'],
  ['us-east-1', true, false, 'https://dynamodb-fips.us-east-1.amazonaws.com'],
  ['us-east-1', false, true, 'https://dynamodb.us-east-1.api.aws'],
  ['us-east-1', true, true, 'https://dynamodb-fips.us-east-1.api.aws'],
  ['eu-west-1', false, false, 'https://dynamodb.eu-west-1.amazonaws.com'],
  ['cn-north-1', false, false, 'https://dynamodb.cn-north-1.amazonaws.com.cn'],
  ['cn-northwest-1', true, false, 'https://dynamodb-fips.cn-northwest-1.amazonaws.com.cn'],
  ['cn-north-1', false, true, 'https://dynamodb.cn-north-1.api.amazonwebservices.com.cn'],
  ['cn-north-1', true, true, 'https://dynamodb-fips.cn-north-1.api.amazonwebservices.com.cn'],
  ['us-gov-west-1', false, false, 'https://dynamodb.us-gov-west-1.amazonaws.com'],
  // GovCloud's regular endpoints are FIPS endpoints: FIPS alone keeps them; with dual-stack it is dynamodb-fips.
  ['us-gov-west-1', true, false, 'https://dynamodb.us-gov-west-1.amazonaws.com'],
  ['us-gov-east-1', true, false, 'https://dynamodb.us-gov-east-1.amazonaws.com'],
  ['us-gov-east-1', false, true, 'https://dynamodb.us-gov-east-1.api.aws'],
  ['us-gov-west-1', true, true, 'https://dynamodb-fips.us-gov-west-1.api.aws'],
  ['us-iso-east-1', false, false, 'https://dynamodb.us-iso-east-1.c2s.ic.gov'],
  ['us-iso-east-1', true, false, 'https://dynamodb-fips.us-iso-east-1.c2s.ic.gov'],
  ['us-iso-east-1', false, true, 'https://dynamodb.us-iso-east-1.api.aws.ic.gov'],
  ['us-isob-east-1', false, false, 'https://dynamodb.us-isob-east-1.sc2s.sgov.gov'],
  ['us-isob-east-1', true, true, 'https://dynamodb-fips.us-isob-east-1.api.aws.scloud'],
  ['eusc-de-east-1', false, false, 'https://dynamodb.eusc-de-east-1.amazonaws.eu'],
  ['eusc-de-east-1', true, false, 'https://dynamodb-fips.eusc-de-east-1.amazonaws.eu'],
  ['eusc-de-east-1', false, true, 'https://dynamodb.eusc-de-east-1.api.amazonwebservices.eu'],
  ['eu-isoe-west-1', false, false, 'https://dynamodb.eu-isoe-west-1.cloud.adc-e.uk'],
  ['us-isof-south-1', false, false, 'https://dynamodb.us-isof-south-1.csp.hci.ic.gov'],
  ['local', false, false, 'http://localhost:8000'],
];

describe('resolveDynamoEndpoint', () => {
  it.each(TABLE)('%s, FIPS %s, dual-stack %s → %s', (region, fips, dualStack, url) => {
    expect(resolveDynamoEndpoint({ region, useFipsEndpoint: fips, useDualStackEndpoint: dualStack }).url).toBe(url);
  });

  it('agrees with the AWS SDK DynamoDB client on every case of the table', () => {
    const sdk = new DynamoDBClient({ region: 'us-east-1' });
    try {
      for (const [region, fips, dualStack, url] of TABLE) {
        const theirs = sdk.config.endpointProvider({ Region: region, UseFIPS: fips, UseDualStack: dualStack, AccountIdEndpointMode: 'disabled' });
        expect({ region, fips, dualStack, url: theirs.url.href.replace(/\/$/, '') }).toEqual({ region, fips, dualStack, url });
      }
    } finally {
      sdk.destroy();
    }
  });

  it('signs for the region, and for us-east-1 on the local region', () => {
    expect(resolveDynamoEndpoint({ region: 'ap-southeast-2' }).signingRegion).toBe('ap-southeast-2');
    expect(resolveDynamoEndpoint({ region: 'local' }).signingRegion).toBe('us-east-1');
  });

  it('reads FIPS pseudo-regions as the SDK does: FIPS on, the real region to sign for', () => {
    expect(resolveDynamoEndpoint({ region: 'us-east-1-fips' })).toEqual({ url: 'https://dynamodb-fips.us-east-1.amazonaws.com', signingRegion: 'us-east-1' });
    expect(resolveDynamoEndpoint({ region: 'fips-us-gov-west-1' })).toEqual({ url: 'https://dynamodb.us-gov-west-1.amazonaws.com', signingRegion: 'us-gov-west-1' });
    expect(resolveDynamoEndpoint({ region: 'aws-fips' })).toEqual({ url: 'https://dynamodb-fips.us-east-1.amazonaws.com', signingRegion: 'us-east-1' });
  });

  it('uses a custom endpoint as given, whatever the region', () => {
    expect(resolveDynamoEndpoint({ region: 'local', endpoint: 'http://127.0.0.1:8000' })).toEqual({ url: 'http://127.0.0.1:8000', signingRegion: 'local' });
    expect(resolveDynamoEndpoint({ region: 'eu-west-1', endpoint: 'https://proxy.example/ddb' })).toEqual({ url: 'https://proxy.example/ddb', signingRegion: 'eu-west-1' });
  });

  const refusal = (settings: Parameters<typeof resolveDynamoEndpoint>[0], partitionOf?: (region: string) => PartitionInfo) => {
    try {
      resolveDynamoEndpoint(settings, partitionOf);
    } catch (err) {
      expect(err).toBeInstanceOf(DynamoEndpointError);
      const { message, settings: culprits } = err as DynamoEndpointError;
      return { message, culprits };
    }
    throw new Error('resolved');
  };

  it.each([
    [{ region: 'us-east-1', endpoint: 'https://x.example', useFipsEndpoint: true }, /FIPS endpoint cannot be combined with a custom endpoint/, ['endpoint', 'fips']],
    [{ region: 'us-east-1-fips', endpoint: 'https://x.example' }, /FIPS endpoint cannot be combined with a custom endpoint/, ['endpoint', 'region']],
    [{ region: 'us-east-1', endpoint: 'https://x.example', useDualStackEndpoint: true }, /dual-stack endpoint cannot be combined with a custom endpoint/, ['endpoint', 'dualStack']],
    [{ region: 'us-east-1', endpoint: 'https://dynamodb.us-east-1.api.aws' }, /is DynamoDB's dual-stack endpoint: turn dual-stack on/, ['endpoint', 'dualStack']],
    [{ region: 'local', useFipsEndpoint: true }, /local region \(DynamoDB Local\) has no FIPS endpoint/, ['region', 'fips']],
    [{ region: 'local', useDualStackEndpoint: true }, /local region \(DynamoDB Local\) has no dual-stack endpoint/, ['region', 'dualStack']],
    [{ region: '' }, /no region/, ['region']],
    [{ region: 'eu-west-1/../x' }, /not a valid region name/, ['region']],
    [{ region: 'eu-west-1', endpoint: 'ftp://x.example' }, /not http or https/, ['endpoint']],
  ] as const)('refuses %j', (settings, message, culprits) => {
    const got = refusal(settings);
    expect(got.message).toMatch(message);
    expect(got.culprits).toEqual(culprits);
  });

  it('agrees with the SDK on which combinations it refuses', () => {
    const sdk = new DynamoDBClient({ region: 'us-east-1' });
    try {
      const refused = (p: Record<string, unknown>) => {
        try {
          sdk.config.endpointProvider({ AccountIdEndpointMode: 'disabled', UseFIPS: false, UseDualStack: false, ...p });
          return false;
        } catch {
          return true;
        }
      };
      expect(refused({ Region: 'us-east-1', Endpoint: 'https://x.example', UseFIPS: true })).toBe(true);
      expect(refused({ Region: 'us-east-1', Endpoint: 'https://x.example', UseDualStack: true })).toBe(true);
      expect(refused({ Region: 'us-east-1', Endpoint: 'https://dynamodb.us-east-1.api.aws' })).toBe(true);
      expect(refused({ Region: 'local', UseFIPS: true })).toBe(true);
      expect(refused({ Region: 'local', UseDualStack: true })).toBe(true);
      expect(refused({ Region: 'us-east-1', Endpoint: 'https://x.example' })).toBe(false);
    } finally {
      sdk.destroy();
    }
  });

  describe('a partition without FIPS or dual-stack', () => {
    const partition = (supportsFIPS: boolean, supportsDualStack: boolean) => (): PartitionInfo => ({
      name: 'aws-test',
      dnsSuffix: 'test.example',
      dualStackDnsSuffix: 'api.test.example',
      supportsFIPS,
      supportsDualStack,
    });

    it.each([
      [false, true, { useFipsEndpoint: true }, 'FIPS is on, but partition aws-test (region xx-test-1) has no FIPS endpoints', ['region', 'fips']],
      [true, false, { useDualStackEndpoint: true }, 'dual-stack is on, but partition aws-test (region xx-test-1) has no dual-stack endpoints', ['region', 'dualStack']],
      [false, true, { useFipsEndpoint: true, useDualStackEndpoint: true }, 'FIPS and dual-stack are both on, but partition aws-test (region xx-test-1) does not support FIPS', ['region', 'fips', 'dualStack']],
      [true, false, { useFipsEndpoint: true, useDualStackEndpoint: true }, 'FIPS and dual-stack are both on, but partition aws-test (region xx-test-1) does not support dual-stack', ['region', 'fips', 'dualStack']],
      [false, false, { useFipsEndpoint: true, useDualStackEndpoint: true }, 'FIPS and dual-stack are both on, but partition aws-test (region xx-test-1) does not support either', ['region', 'fips', 'dualStack']],
    ] as const)('FIPS %s, dual-stack %s: refuses %j', (fips, dualStack, flags, message, culprits) => {
      expect(refusal({ region: 'xx-test-1', ...flags }, partition(fips, dualStack))).toEqual({ message, culprits });
    });

    it('still has its plain endpoint, and the variant it supports', () => {
      expect(resolveDynamoEndpoint({ region: 'xx-test-1' }, partition(false, false)).url).toBe('https://dynamodb.xx-test-1.test.example');
      expect(resolveDynamoEndpoint({ region: 'xx-test-1', useFipsEndpoint: true }, partition(true, false)).url).toBe('https://dynamodb-fips.xx-test-1.test.example');
      expect(resolveDynamoEndpoint({ region: 'xx-test-1', useDualStackEndpoint: true }, partition(false, true)).url).toBe('https://dynamodb.xx-test-1.api.test.example');
    });
  });
});

describe('the store endpoint in the configuration', () => {
  it.each([
    [{}, 'https://dynamodb.us-east-1.amazonaws.com'],
    [{ AWS_REGION: 'cn-north-1' }, 'https://dynamodb.cn-north-1.amazonaws.com.cn'],
    [{ AWS_REGION: 'us-gov-west-1', AWS_USE_FIPS_ENDPOINT: 'true' }, 'https://dynamodb.us-gov-west-1.amazonaws.com'],
    [{ AWS_REGION: 'eu-west-1', AWS_USE_FIPS_ENDPOINT: 'true', AWS_USE_DUALSTACK_ENDPOINT: 'true' }, 'https://dynamodb-fips.eu-west-1.api.aws'],
    [{ AWS_REGION: 'eu-west-1', AWS_USE_DUALSTACK_ENDPOINT: 'false', AWS_USE_FIPS_ENDPOINT: 'false' }, 'https://dynamodb.eu-west-1.amazonaws.com'],
    [{ AWS_ENDPOINT_URL: 'http://all.example:4566' }, 'http://all.example:4566'],
    [{ AWS_ENDPOINT_URL: 'http://all.example:4566', AWS_ENDPOINT_URL_DYNAMODB: 'http://ddb.example:8000' }, 'http://ddb.example:8000'],
    [{ AWS_ENDPOINT_URL_DYNAMODB: 'http://ddb.example:8000', DDB_ENDPOINT: 'http://127.0.0.1:9000' }, 'http://127.0.0.1:9000'],
    [{ AWS_ENDPOINT_URL_DYNAMODB: 'http://ddb.example:8000', AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' }, 'https://dynamodb.us-east-1.amazonaws.com'],
    [{ DDB_ENDPOINT: 'http://127.0.0.1:9000', AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: 'true' }, 'http://127.0.0.1:9000'],
  ])('%j → %s', (env, endpoint) => {
    expect(loadConfig(env).ddbEndpoint).toBe(endpoint);
  });

  it('keeps placeholder credentials for DDB_ENDPOINT alone: the AWS variables may name a real endpoint', () => {
    expect(loadConfig({ DDB_ENDPOINT: 'http://127.0.0.1:9000' }).localCredentials).toBe(true);
    expect(loadConfig({ AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:9000' }).localCredentials).toBe(false);
  });

  it('signs for the real region of a FIPS pseudo-region', () => {
    expect(loadConfig({ AWS_REGION: 'us-east-1-fips' })).toMatchObject({ region: 'us-east-1', ddbEndpoint: 'https://dynamodb-fips.us-east-1.amazonaws.com' });
  });

  const problems = (env: Record<string, string>) => {
    try {
      loadConfig(env);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).problems;
    }
    throw new Error('loaded');
  };

  it('refuses an impossible combination at start-up, naming its variables', () => {
    expect(problems({ DDB_ENDPOINT: 'http://127.0.0.1:9000', AWS_USE_FIPS_ENDPOINT: 'true' })).toEqual([
      'DDB_ENDPOINT, AWS_USE_FIPS_ENDPOINT: a FIPS endpoint cannot be combined with a custom endpoint (DynamoDB has no FIPS variant of a custom endpoint)',
    ]);
    expect(problems({ AWS_ENDPOINT_URL_DYNAMODB: 'http://ddb.example', AWS_USE_DUALSTACK_ENDPOINT: 'true' })[0]).toMatch(/^AWS_ENDPOINT_URL_DYNAMODB, AWS_USE_DUALSTACK_ENDPOINT: /);
    expect(problems({ AWS_REGION: 'local', AWS_USE_FIPS_ENDPOINT: 'true' })[0]).toMatch(/^AWS_REGION, AWS_USE_FIPS_ENDPOINT: the local region/);
  });

  it('reads the AWS booleans as strictly as the SDK does', () => {
    expect(problems({ AWS_USE_FIPS_ENDPOINT: 'yes', AWS_USE_DUALSTACK_ENDPOINT: '1' })).toEqual(['AWS_USE_FIPS_ENDPOINT: must be true or false', 'AWS_USE_DUALSTACK_ENDPOINT: must be true or false']);
    expect(problems({ AWS_ENDPOINT_URL_DYNAMODB: 'not a url' })[0]).toMatch(/^AWS_ENDPOINT_URL_DYNAMODB: /);
  });
});

describe('the client on its resolved endpoint', () => {
  let dynamo: FakeDynamo;
  let url: string;
  const seen: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    dynamo = await startFakeDynamo(({ headers }, res) => {
      seen.push(headers);
      answerDynamo(res, 200, '{}');
    });
    url = dynamo.endpoint;
  });

  afterAll(() => dynamo.close());

  it('reaches the endpoint AWS_ENDPOINT_URL_DYNAMODB names, signing for AWS_REGION', async () => {
    const config = loadConfig({ AWS_ENDPOINT_URL_DYNAMODB: url, AWS_REGION: 'eu-central-1' });
    const doc = createDocumentClient({ region: config.region, ...(config.ddbEndpoint ? { endpoint: config.ddbEndpoint } : {}), localCredentials: true });
    await doc.send('Query', { TableName: 't', KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'a' } });
    (doc as DynamoHttpClient).destroy();
    expect(seen).toHaveLength(1);
    expect(seen[0]?.authorization).toMatch(/Credential=local\/\d{8}\/eu-central-1\/dynamodb\/aws4_request/);
  });

  it('refuses an impossible combination when it is built, not on its first call', () => {
    const build = () => new DynamoHttpClient({ region: 'eu-west-1', endpoint: url, useDualStackEndpoint: true, credentials: () => ({ accessKeyId: 'a', secretAccessKey: 'b' }) });
    expect(build).toThrow(DynamoEndpointError);
  });
});
