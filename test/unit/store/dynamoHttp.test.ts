/**
 * The store client's protocol edges, against a scripted HTTP server on loopback: what it sends (target, signed
 * headers, attribute values), how DynamoDB's answers and failures come back, and which failures it tries again.
 * The adapters' suites run it against dynalite and DynamoDB Local.
 */
import { crc32 } from 'node:zlib';
import { DynamoHttpClient, DynamoServiceError, isTransientStoreError, marshalMap, unmarshalMap } from '../../../lib/store/dynamoHttp';
import { classifyStoreError } from '../../../lib/store/dynamo';
import { StoreFaultError, StoreUnavailableError } from '../../../lib/errors';
import { answerDynamo, startFakeDynamo, type FakeDynamo } from '../../support/fakeDynamo';

interface Seen {
  readonly target: string;
  readonly authorization: string;
  readonly body: Record<string, unknown>;
}

type Answer = { status: number; body: string; crc?: number | 'omit' } | 'hang';

describe('DynamoHttpClient', () => {
  let dynamo: FakeDynamo;
  let endpoint: string;
  let answers: Answer[];
  let seen: Seen[];
  let slept: number[];

  beforeAll(async () => {
    dynamo = await startFakeDynamo(({ headers, body }, res) => {
      seen.push({ target: String(headers['x-amz-target']), authorization: String(headers.authorization), body });
      const answer = answers.shift() ?? { status: 200, body: '{}' };
      if (answer === 'hang') return;
      const crc = answer.crc === 'omit' ? undefined : String(answer.crc ?? crc32(Buffer.from(answer.body)));
      answerDynamo(res, answer.status, answer.body, crc !== undefined ? { 'x-amz-crc32': crc } : {});
    });
    endpoint = dynamo.endpoint;
  });

  afterAll(() => dynamo.close());

  beforeEach(() => {
    answers = [];
    seen = [];
    slept = [];
  });

  const client = (timeoutMs = 5_000) =>
    new DynamoHttpClient({
      region: 'eu-west-1',
      endpoint,
      credentials: () => ({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' }),
      timeoutMs,
      sleep: async (ms) => {
        slept.push(ms);
      },
      random: () => 0.5,
    });

  it('sends the operation as a signed JSON 1.0 call with attribute values, and returns plain values', async () => {
    const stored = { pk: { S: 'NODE#a' }, v: { N: '7' }, rec: { B: Buffer.from([1, 2, 3]).toString('base64') }, names: { SS: ['x', 'y'] } };
    answers = [{ status: 200, body: JSON.stringify({ Attributes: stored, ConsumedCapacity: { CapacityUnits: 2 } }) }];
    const c = client();
    const out = await c.send('UpdateItem', {
      TableName: 'state',
      Key: { pk: 'NODE#a', sk: '-' },
      UpdateExpression: 'SET v = :v',
      ExpressionAttributeValues: { ':v': 7, ':gone': undefined, ':m': { list: [1, 'two', null, true] } },
    });
    c.destroy();
    expect(seen[0]?.target).toBe('DynamoDB_20120810.UpdateItem');
    expect(seen[0]?.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/dynamodb\/aws4_request, SignedHeaders=.*x-amz-target.*, Signature=[0-9a-f]{64}$/);
    expect(seen[0]?.body).toEqual({
      TableName: 'state',
      Key: { pk: { S: 'NODE#a' }, sk: { S: '-' } },
      UpdateExpression: 'SET v = :v',
      ExpressionAttributeValues: { ':v': { N: '7' }, ':m': { M: { list: { L: [{ N: '1' }, { S: 'two' }, { NULL: true }, { BOOL: true }] } } } },
    });
    expect(out.ConsumedCapacity).toEqual({ CapacityUnits: 2 });
    expect(out.Attributes).toEqual({ pk: 'NODE#a', v: 7, rec: Buffer.from([1, 2, 3]), names: new Set(['x', 'y']) });
  });

  it('converts the keys and items of batch requests and their leftovers', async () => {
    answers = [
      { status: 200, body: JSON.stringify({ Responses: { state: [{ pk: { S: 'a' } }] }, UnprocessedKeys: { state: { Keys: [{ pk: { S: 'b' } }], ConsistentRead: true } } }) },
      { status: 200, body: JSON.stringify({ UnprocessedItems: { records: [{ PutRequest: { Item: { pk: { S: 'r' }, n: { N: '1' } } } }] } }) },
    ];
    const c = client();
    const got = await c.send('BatchGetItem', { RequestItems: { state: { Keys: [{ pk: 'a' }, { pk: 'b' }], ConsistentRead: true } } });
    const wrote = await c.send('BatchWriteItem', { RequestItems: { records: [{ PutRequest: { Item: { pk: 'r', n: 1 } } }, { DeleteRequest: { Key: { pk: 'old' } } }] } });
    c.destroy();
    expect(seen[0]?.body).toEqual({ RequestItems: { state: { Keys: [{ pk: { S: 'a' } }, { pk: { S: 'b' } }], ConsistentRead: true } } });
    expect(seen[1]?.body).toEqual({ RequestItems: { records: [{ PutRequest: { Item: { pk: { S: 'r' }, n: { N: '1' } } } }, { DeleteRequest: { Key: { pk: { S: 'old' } } } }] } });
    expect(got.Responses).toEqual({ state: [{ pk: 'a' }] });
    expect(got.UnprocessedKeys).toEqual({ state: { Keys: [{ pk: 'b' }], ConsistentRead: true } });
    expect(wrote.UnprocessedItems).toEqual({ records: [{ PutRequest: { Item: { pk: 'r', n: 1 } } }] });
  });

  it('reports a refused condition by name, once, with the item as stored', async () => {
    answers = [
      {
        status: 400,
        body: JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException', message: 'The conditional request failed', Item: { pk: { S: 'a' }, v: { N: '3' } } }),
      },
    ];
    const c = client();
    const err = await c.send('PutItem', { TableName: 't', Item: { pk: 'a' } }).catch((e: unknown) => e);
    c.destroy();
    expect(err).toBeInstanceOf(DynamoServiceError);
    expect(err).toMatchObject({ name: 'ConditionalCheckFailedException', message: 'The conditional request failed', status: 400, item: { pk: 'a', v: 3 } });
    expect(seen).toHaveLength(1);
    expect(slept).toEqual([]);
  });

  it('tries throttling and server faults again with backoff, up to three attempts', async () => {
    const throttled = { status: 400, body: JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException', message: 'slow down' }) };
    answers = [throttled, { status: 500, body: '{"__type":"com.amazon.coral.service#InternalFailure"}' }, { status: 200, body: '{"Items":[]}' }];
    const c = client();
    await expect(c.send('Query', { TableName: 't', KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'x' } })).resolves.toEqual({ Items: [] });
    expect(seen).toHaveLength(3);
    // Full jitter (random 0.5) over the SDK's bases: 500 ms for throttling, 100 ms doubled for the second retry.
    expect(slept).toEqual([250, 100]);

    answers = [throttled, throttled, throttled];
    const err = await c.send('Query', { TableName: 't', KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'x' } }).catch((e: unknown) => e);
    c.destroy();
    expect(err).toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(classifyStoreError('Query', err)).toBeInstanceOf(StoreUnavailableError);
  });

  it('does not try a validation error again, and it is not reported as retryable', async () => {
    answers = [{ status: 400, body: JSON.stringify({ __type: 'com.amazon.coral.validate#ValidationException', message: 'One or more parameter values were invalid' }) }];
    const c = client();
    const err = await c.send('PutItem', { TableName: 't', Item: { pk: 'a' } }).catch((e: unknown) => e);
    c.destroy();
    expect(seen).toHaveLength(1);
    expect(isTransientStoreError(err)).toBe(false);
    expect(classifyStoreError('PutItem', err)).toBeInstanceOf(StoreFaultError);
  });

  it('takes an answer whose checksum does not match as corrupted and asks again', async () => {
    answers = [{ status: 200, body: '{"Items":[{"pk":{"S":"a"}}]}', crc: 12345 }, { status: 200, body: '{"Items":[]}', crc: 'omit' }];
    const c = client();
    await expect(c.send('Query', { TableName: 't', KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'a' } })).resolves.toEqual({ Items: [] });
    c.destroy();
    expect(seen).toHaveLength(2);
  });

  it('gives up on a store that does not answer, as a retryable timeout', async () => {
    answers = ['hang', 'hang', 'hang'];
    const c = client(50);
    const err = await c.send('Query', { TableName: 't', KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'a' } }).catch((e: unknown) => e);
    c.destroy();
    expect(err).toMatchObject({ name: 'TimeoutError' });
    expect(seen).toHaveLength(3);
    expect(classifyStoreError('Query', err)).toBeInstanceOf(StoreUnavailableError);
  });

  it('refuses values DynamoDB cannot hold before sending, as a fault of ours', async () => {
    const c = client();
    const err = await c.send('PutItem', { TableName: 't', Item: { pk: 'a', when: new Date(0) } }).catch((e: unknown) => e);
    const nan = await c.send('PutItem', { TableName: 't', Item: { pk: 'a', n: Number.NaN } }).catch((e: unknown) => e);
    c.destroy();
    expect(seen).toHaveLength(0);
    expect(classifyStoreError('PutItem', err)).toBeInstanceOf(StoreFaultError);
    expect(classifyStoreError('PutItem', nan)).toBeInstanceOf(StoreFaultError);
  });
});

describe('attribute values', () => {
  it('round-trip every kind the codec stores', () => {
    const item = { s: 'x', n: 1.5, big: 1_800_000_000_000, t: true, f: false, z: null, b: Buffer.from('hi'), l: [1, ['a'], { m: 2 }], m: { nested: { deep: 'y' } }, ss: new Set(['a', 'b']), ns: new Set([1, 2]) };
    expect(unmarshalMap(marshalMap(item))).toEqual(item);
  });

  it('leaves undefined members out and refuses empty sets', () => {
    expect(marshalMap({ a: undefined, b: [1, undefined, 2] })).toEqual({ b: { L: [{ N: '1' }, { N: '2' }] } });
    expect(() => marshalMap({ s: new Set() })).toThrow(TypeError);
  });
});
