/**
 * AWS Signature Version 4 for the requests we send ourselves: the relay's calls to API Gateway (IAM auth) and the
 * control plane's calls to DynamoDB (./../store/dynamoHttp.ts). Hashing uses Node's crypto (native), not a
 * JavaScript SHA-256: the store signs every call on a decision's path.
 */
import { createHash, createHmac } from 'node:crypto';
import { fromNodeProviderChain } from '@aws-sdk/credential-providers';

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  /** Temporary credentials (a role's) say when they expire; they are then asked for again before it. */
  readonly expiration?: Date;
}

export interface OutgoingRequest {
  readonly method: 'GET' | 'POST';
  readonly url: URL;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

/** Adds authentication headers to a request (returns the full header set to send): at once where it can. */
export type RequestSigner = (req: OutgoingRequest) => Record<string, string> | Promise<Record<string, string>>;

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
  /** Injected for tests; defaults to the wall clock. */
  readonly now?: () => Date;
  /** `execute-api` (API Gateway) unless given. */
  readonly service?: string;
}

/** Headers SigV4 never signs (they change on the way, or name the signature itself), as the AWS SDK's signer has them. */
const UNSIGNABLE = new Set([
  'authorization',
  'cache-control',
  'connection',
  'expect',
  'from',
  'keep-alive',
  'max-forwards',
  'pragma',
  'referer',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'user-agent',
  'x-amzn-trace-id',
]);
/** Headers the signature writes; ones a caller passes are dropped first. */
const GENERATED = new Set(['authorization', 'x-amz-date', 'date']);
const CONTENT_SHA256 = 'x-amz-content-sha256';
const ALGORITHM = 'AWS4-HMAC-SHA256';
/** Credentials with an expiry are taken again this long before it, as the SDK's credential chain refreshes them. */
const CREDENTIAL_REFRESH_MS = 5 * 60_000;

/**
 * SigV4 (AWS's "Signature Version 4 signing process"), computed synchronously with Node's crypto. It gives exactly what
 * the AWS SDK's `SignatureV4` gives for the same request (a test signs random requests with both): the same headers
 * signed, the same canonical path (empty segments dropped, then URI-escaped a second time, as every service but S3
 * expects), query and header values, and the payload's SHA-256 in `x-amz-content-sha256`.
 *
 * Why not the SDK's signer: it awaits at every step (a promise per hash), about 0.2 ms per store call on a decision's
 * path on this project's machine, and another request signed at the same time (the view's refresh beside the booking)
 * interleaves with it. Here a request is signed in one go when its credentials are at hand; they are asked for again
 * only when they are about to expire (the promise path), so the credential chain still refreshes them.
 */
export function sigV4Signer(opts: SigV4Options): RequestSigner {
  const service = opts.service ?? 'execute-api';
  const now = opts.now ?? (() => new Date());
  let held: { readonly credentials: AwsCredentials; readonly usableUntilMs: number } | undefined;
  let signingKey: { readonly scope: string; readonly secret: string; readonly key: Buffer } | undefined;

  const keyFor = (credentials: AwsCredentials, shortDate: string): Buffer => {
    const scope = `${shortDate}/${opts.region}/${service}`;
    if (signingKey?.scope === scope && signingKey.secret === credentials.secretAccessKey) return signingKey.key;
    let key = hmac(`AWS4${credentials.secretAccessKey}`, shortDate);
    for (const part of [opts.region, service, 'aws4_request']) key = hmac(key, part);
    signingKey = { scope, secret: credentials.secretAccessKey, key };
    return key;
  };

  const signWith = (credentials: AwsCredentials, req: OutgoingRequest, date: Date): Record<string, string> => {
    if (typeof credentials?.accessKeyId !== 'string' || typeof credentials.secretAccessKey !== 'string') throw new Error('Resolved credential object is not valid');
    const longDate = date.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '');
    const shortDate = longDate.slice(0, 8);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries({ ...req.headers, host: req.url.host })) if (!GENERATED.has(name.toLowerCase())) headers[name] = value;
    headers['x-amz-date'] = longDate;
    if (credentials.sessionToken) headers['x-amz-security-token'] = credentials.sessionToken;
    const given = Object.keys(headers).find((name) => name.toLowerCase() === CONTENT_SHA256);
    const payloadHash = given !== undefined ? headers[given]! : sha256Hex(req.body ?? '');
    if (given === undefined) headers[CONTENT_SHA256] = payloadHash;

    const canonical = new Map<string, string>();
    for (const name of Object.keys(headers).sort()) {
      const lower = name.toLowerCase();
      if (UNSIGNABLE.has(lower) || lower.startsWith('proxy-') || lower.startsWith('sec-')) continue;
      canonical.set(lower, headers[name]!.replace(/[\r\n]/g, ' ').replace(/[ \t]+/g, ' ').replace(/^ | $/g, ''));
    }
    const names = [...canonical.keys()].sort();
    const signedHeaders = names.join(';');
    const canonicalRequest = [
      req.method,
      canonicalPath(req.url.pathname),
      canonicalQuery(req.url.searchParams),
      ...names.map((name) => `${name}:${canonical.get(name)!}`),
      '',
      signedHeaders,
      payloadHash,
    ].join('\n');
    const scope = `${shortDate}/${opts.region}/${service}/aws4_request`;
    const stringToSign = `${ALGORITHM}\n${longDate}\n${scope}\n${sha256Hex(canonicalRequest)}`;
    const signature = createHmac('sha256', keyFor(credentials, shortDate)).update(stringToSign).digest('hex');
    headers.authorization = `${ALGORITHM} Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`;
    return headers;
  };

  return (req) => {
    const date = now();
    if (held !== undefined && date.getTime() < held.usableUntilMs) return signWith(held.credentials, req, date);
    return Promise.resolve(opts.credentials()).then((credentials) => {
      const expiresMs = credentials.expiration?.getTime();
      held = { credentials, usableUntilMs: expiresMs === undefined ? Number.POSITIVE_INFINITY : expiresMs - CREDENTIAL_REFRESH_MS };
      return signWith(credentials, req, date);
    });
  };
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

function sha256Hex(data: string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** RFC 3986 escaping as SigV4 wants it: `encodeURIComponent` leaves `!'()*` alone, SigV4 does not. */
function escapeUri(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * The path without empty segments, escaped a second time (slashes kept). `.` and `..` segments never get here: a URL
 * has resolved them in its pathname.
 */
function canonicalPath(path: string): string {
  const segments = path.split('/').filter((segment) => segment !== '');
  const normalized = `${path.startsWith('/') ? '/' : ''}${segments.join('/')}${segments.length > 0 && path.endsWith('/') ? '/' : ''}`;
  return escapeUri(normalized).replace(/%2F/g, '/');
}

/** Parameters sorted by escaped name, one value per name (the last given, as the request carries them here). */
function canonicalQuery(params: URLSearchParams): string {
  const byKey = new Map<string, string>();
  params.forEach((value, key) => {
    if (key.toLowerCase() === 'x-amz-signature') return;
    const escaped = escapeUri(key);
    byKey.set(escaped, `${escaped}=${escapeUri(value)}`);
  });
  return [...byKey.keys()].sort().map((key) => byKey.get(key)!).join('&');
}
