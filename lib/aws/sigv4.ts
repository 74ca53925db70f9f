/**
 * AWS Signature Version 4 for the requests we send ourselves: the relay's calls to API Gateway (IAM auth) and the
 * control plane's calls to DynamoDB (./../store/dynamoHttp.ts). Hashing uses Node's crypto (native), not a
 * JavaScript SHA-256: the store signs every call on a decision's path. Requests are dated by a skew-corrected
 * clock (./clockSkew.ts) that the caller corrects from AWS's clock-skew refusals.
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { fromNodeProviderChain } from '@aws-sdk/credential-providers';
import { SignatureV4 } from '@smithy/signature-v4';
import { AwsClock } from './clockSkew';

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export interface OutgoingRequest {
  readonly method: 'GET' | 'POST';
  readonly url: URL;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

/**
 * Adds authentication headers to a request (returns the full header set to send). A SigV4 signer carries the clock
 * it dates requests with, for its caller to correct after a clock-skew refusal; other signers have none.
 */
export interface RequestSigner {
  (req: OutgoingRequest): Promise<Record<string, string>>;
  readonly clock?: AwsClock;
}

/**
 * The AWS SDK's default credential chain: environment keys, web identity (IRSA on EKS), EKS Pod Identity or
 * container credentials, then the instance profile. Built once; it caches and refreshes expiring credentials.
 */
export function defaultCredentials(): () => Promise<AwsCredentials> {
  const provider = fromNodeProviderChain();
  return () => provider();
}

export interface SigV4Options {
  readonly region: string;
  readonly credentials: () => AwsCredentials | Promise<AwsCredentials>;
  /** The local clock, injected for tests; defaults to the wall clock. Ignored when `clock` is given. */
  readonly now?: () => Date;
  /** The skew-corrected clock requests are dated with; a new one (offset 0) on `now` unless given. */
  readonly clock?: AwsClock;
  /** `execute-api` (API Gateway) unless given. */
  readonly service?: string;
}

type SourceData = string | ArrayBuffer | ArrayBufferView;

const bytes = (data: SourceData): string | Uint8Array =>
  typeof data === 'string' ? data : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);

/** SHA-256 and HMAC-SHA256 in the shape the signer asks for. */
class NodeSha256 {
  private hash: Hash | Hmac;
  constructor(private readonly secret?: SourceData) {
    this.hash = this.fresh();
  }
  private fresh(): Hash | Hmac {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(this.secret));
  }
  update(data: SourceData): void {
    this.hash.update(bytes(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
}

export function sigV4Signer(opts: SigV4Options): RequestSigner {
  const signer = new SignatureV4({
    service: opts.service ?? 'execute-api',
    region: opts.region,
    credentials: async () => opts.credentials(),
    sha256: NodeSha256,
  });
  const localNow = opts.now;
  const clock = opts.clock ?? new AwsClock(localNow ? () => localNow().getTime() : Date.now);
  const sign = async (req: OutgoingRequest): Promise<Record<string, string>> => {
    const query: Record<string, string> = {};
    req.url.searchParams.forEach((value, key) => {
      query[key] = value;
    });
    const signed = await signer.sign(
      {
        method: req.method,
        protocol: req.url.protocol,
        hostname: req.url.hostname,
        ...(req.url.port ? { port: Number(req.url.port) } : {}),
        path: req.url.pathname,
        query,
        headers: { ...req.headers, host: req.url.host },
        ...(req.body !== undefined ? { body: req.body } : {}),
      },
      { signingDate: new Date(clock.now()) },
    );
    return signed.headers;
  };
  return Object.assign(sign, { clock });
}
