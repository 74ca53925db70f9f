/**
 * Where the store client sends its calls: DynamoDB's endpoint rules as the AWS SDK's DynamoDB client applies them
 * (its endpoint ruleset), resolved once per client. A custom endpoint wins; the `local` region is DynamoDB Local on
 * localhost:8000; otherwise the region's partition (`@aws-sdk/util-endpoints`: aws, aws-cn, aws-us-gov, aws-iso,
 * aws-iso-b, aws-eusc, …) gives the DNS suffix, with FIPS (`dynamodb-fips.`, except GovCloud whose regular endpoints
 * are FIPS already) and dual-stack (IPv6) variants. A combination the SDK refuses is refused here too, naming what
 * clashes. Not reproduced: account-based endpoints (`{account}.ddb.{region}.amazonaws.com`, the SDK's choice when
 * the credentials carry an account ID); the regional endpoint serves the same tables.
 */
import { partition as awsPartition } from '@aws-sdk/util-endpoints';

/** What the endpoint rules read of a region's partition. */
export interface PartitionInfo {
  readonly name: string;
  readonly dnsSuffix: string;
  readonly dualStackDnsSuffix: string;
  readonly supportsFIPS: boolean;
  readonly supportsDualStack: boolean;
}

export interface DynamoEndpointSettings {
  /** The AWS region, or a FIPS pseudo-region (`us-east-1-fips`, `fips-us-gov-west-1`) that turns FIPS on. */
  readonly region: string;
  /** A custom endpoint URL (dynalite, DynamoDB Local, a proxy); unset: DynamoDB's endpoint for the region. */
  readonly endpoint?: string;
  readonly useFipsEndpoint?: boolean;
  readonly useDualStackEndpoint?: boolean;
}

export interface DynamoEndpoint {
  readonly url: string;
  /** The region requests are signed for. */
  readonly signingRegion: string;
}

/** The settings an endpoint error is about, for a caller to name its own variables. */
export type EndpointSetting = 'region' | 'endpoint' | 'fips' | 'dualStack';

export class DynamoEndpointError extends Error {
  constructor(
    message: string,
    /** The settings that clash or are wrong. */
    readonly settings: readonly EndpointSetting[],
  ) {
    super(message);
    this.name = 'DynamoEndpointError';
  }
}

/** A region must be one DNS label (the SDK's `isValidHostLabel`). */
const HOST_LABEL = /^(?!-)(?!.*-$)[a-zA-Z0-9-]{1,63}$/;

/** The SDK's reading of FIPS pseudo-regions: the real region, and whether the name asked for FIPS. */
export function realRegion(region: string): { readonly region: string; readonly fips: boolean } {
  if (!region.startsWith('fips-') && !region.endsWith('-fips')) return { region, fips: false };
  if (region === 'fips-aws-global' || region === 'aws-fips') return { region: 'us-east-1', fips: true };
  return { region: region.replace(/fips-(dkr-|prod-)?|-fips/, ''), fips: true };
}

export function resolveDynamoEndpoint(settings: DynamoEndpointSettings, partitionOf: (region: string) => PartitionInfo = awsPartition): DynamoEndpoint {
  if (settings.region === '') throw new DynamoEndpointError('no region: DynamoDB needs one to choose its endpoint and sign', ['region']);
  const { region, fips: fipsRegion } = realRegion(settings.region);
  const fips = settings.useFipsEndpoint === true || fipsRegion;
  const dualStack = settings.useDualStackEndpoint === true;
  if (!HOST_LABEL.test(region)) throw new DynamoEndpointError(`region "${settings.region}" is not a valid region name (one DNS label)`, ['region']);

  if (settings.endpoint !== undefined) {
    if (fips) throw new DynamoEndpointError('a FIPS endpoint cannot be combined with a custom endpoint (DynamoDB has no FIPS variant of a custom endpoint)', fipsRegion ? ['endpoint', 'region'] : ['endpoint', 'fips']);
    if (dualStack) throw new DynamoEndpointError('a dual-stack endpoint cannot be combined with a custom endpoint (DynamoDB has no dual-stack variant of a custom endpoint)', ['endpoint', 'dualStack']);
    const url = parseEndpoint(settings.endpoint);
    const p = partitionOf(region);
    if (url.host === `dynamodb.${region}.${p.dualStackDnsSuffix}` || url.host === `search-dynamodb.${region}.${p.dualStackDnsSuffix}`) {
      throw new DynamoEndpointError(`the custom endpoint ${settings.endpoint} is DynamoDB's dual-stack endpoint: turn dual-stack on instead of naming it`, ['endpoint', 'dualStack']);
    }
    return { url: settings.endpoint, signingRegion: region };
  }

  if (region === 'local') {
    if (fips) throw new DynamoEndpointError('the local region (DynamoDB Local) has no FIPS endpoint', fipsRegion ? ['region'] : ['region', 'fips']);
    if (dualStack) throw new DynamoEndpointError('the local region (DynamoDB Local) has no dual-stack endpoint', ['region', 'dualStack']);
    return { url: 'http://localhost:8000', signingRegion: 'us-east-1' };
  }

  const p = partitionOf(region);
  const fipsSettings: EndpointSetting[] = fipsRegion ? ['region'] : ['region', 'fips'];
  if (fips && dualStack) {
    if (!p.supportsFIPS || !p.supportsDualStack) {
      throw new DynamoEndpointError(`FIPS and dual-stack are both on, but partition ${p.name} (region ${region}) does not support ${!p.supportsFIPS && !p.supportsDualStack ? 'either' : !p.supportsFIPS ? 'FIPS' : 'dual-stack'}`, [...fipsSettings, 'dualStack']);
    }
    return { url: `https://dynamodb-fips.${region}.${p.dualStackDnsSuffix}`, signingRegion: region };
  }
  if (fips) {
    if (!p.supportsFIPS) throw new DynamoEndpointError(`FIPS is on, but partition ${p.name} (region ${region}) has no FIPS endpoints`, fipsSettings);
    // GovCloud's regular DynamoDB endpoints are its FIPS endpoints.
    return { url: `https://${p.name === 'aws-us-gov' ? 'dynamodb' : 'dynamodb-fips'}.${region}.${p.dnsSuffix}`, signingRegion: region };
  }
  if (dualStack) {
    if (!p.supportsDualStack) throw new DynamoEndpointError(`dual-stack is on, but partition ${p.name} (region ${region}) has no dual-stack endpoints`, ['region', 'dualStack']);
    return { url: `https://dynamodb.${region}.${p.dualStackDnsSuffix}`, signingRegion: region };
  }
  return { url: `https://dynamodb.${region}.${p.dnsSuffix}`, signingRegion: region };
}

function parseEndpoint(endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new DynamoEndpointError(`the custom endpoint "${endpoint}" is not a URL (such as http://127.0.0.1:8000)`, ['endpoint']);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DynamoEndpointError(`the custom endpoint ${endpoint} is not http or https`, ['endpoint']);
  return url;
}
