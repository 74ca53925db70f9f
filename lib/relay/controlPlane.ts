/**
 * HTTP client for the control plane (docs/api.md §2): API Gateway with IAM auth (SigV4-signed) or the
 * local server (bearer token). Every call is bounded by a deadline so no caller can hang on it. A SigV4 call that
 * API Gateway refuses for a skewed clock (`Signature expired: …`) is signed again at once with the time its `Date`
 * header shows, once; later calls keep the correction (../aws/clockSkew.ts).
 */
import { errorTypeFromHeader, isClockSkewError } from '../aws/clockSkew';
import { defaultCredentials, sigV4Signer, type RequestSigner } from '../aws/sigv4';
import type { RelayConfig } from './config';
import { ControlPlaneError, ControlPlaneTimeoutError } from './errors';

export const unsignedRequests: RequestSigner = async (req) => req.headers;

export function bearerSigner(token: string): RequestSigner {
  return async (req) => ({ ...req.headers, authorization: `Bearer ${token}` });
}

export function signerFromConfig(cp: RelayConfig['controlPlane']): RequestSigner {
  switch (cp.auth) {
    case 'token':
      return bearerSigner(cp.token ?? '');
    case 'iam':
      return sigV4Signer({ region: cp.region ?? '', credentials: defaultCredentials() });
    case 'none':
      return unsignedRequests;
  }
}

export interface ControlPlaneResponse {
  readonly status: number;
  /** Parsed JSON, or undefined when the body was not JSON. */
  readonly body: unknown;
  readonly text: string;
}

/**
 * How long a call may take: its own timeout, or a signal the caller aborts when it stops waiting (the
 * extender's deadline, driven by its injected delay), or both. One of the two is required.
 */
export type CallOptions = {
  /** Extra query parameters (appended as given). */
  readonly query?: Readonly<Record<string, string>>;
  /** Extra request headers (signed with the rest). */
  readonly headers?: Readonly<Record<string, string>>;
} & ({ readonly timeoutMs: number; readonly signal?: AbortSignal } | { readonly timeoutMs?: undefined; readonly signal: AbortSignal });

export interface ControlPlaneClient {
  post(path: string, body: unknown, opts: CallOptions): Promise<ControlPlaneResponse>;
  get(path: string, opts: CallOptions): Promise<ControlPlaneResponse>;
}

export function createControlPlaneClient(baseUrl: string, sign: RequestSigner): ControlPlaneClient {
  const call = async (method: 'GET' | 'POST', path: string, body: unknown, opts: CallOptions): Promise<ControlPlaneResponse> => {
    const url = new URL(baseUrl.replace(/\/+$/, '') + path);
    for (const [k, val] of Object.entries(opts.query ?? {})) url.searchParams.set(k, val);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = { accept: 'application/json', ...(opts.headers ?? {}) };
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const timeout = opts.timeoutMs === undefined ? undefined : AbortSignal.timeout(opts.timeoutMs);
    const signals = [timeout, opts.signal].filter((x): x is AbortSignal => x !== undefined);
    const signal = signals.length === 1 ? signals[0] : AbortSignal.any(signals);
    let res: Response;
    let text: string;
    try {
      for (let clockCorrected = false; ; clockCorrected = true) {
        const signedHeaders = await sign({ method, url, headers, ...(payload !== undefined ? { body: payload } : {}) });
        res = await fetch(url, { method, headers: signedHeaders, ...(payload !== undefined ? { body: payload } : {}), signal });
        text = await res.text();
        if (clockCorrected || !signedTooEarlyOrLate(sign, res, text, signedHeaders)) break;
      }
    } catch (err) {
      if (opts.signal?.aborted) throw new ControlPlaneError(`stopped waiting for the control plane's answer to ${path}`, path, undefined, { cause: err });
      if (timeout?.aborted && opts.timeoutMs !== undefined) throw new ControlPlaneTimeoutError(path, opts.timeoutMs, { cause: err });
      if (err instanceof ControlPlaneError) throw err;
      throw new ControlPlaneError(`control plane unreachable for ${path}: ${describe(err)}`, path, undefined, { cause: err });
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, text };
  };
  return {
    post: (path, body, opts) => call('POST', path, body, opts),
    get: (path, opts) => call('GET', path, undefined, opts),
  };
}

/**
 * Whether API Gateway refused a SigV4 call for its time (403, `x-amzn-errortype: InvalidSignatureException` or
 * `{"message":"Signature expired: …"}`) and its `Date` header shows the signing clock off: the signer's clock is
 * then corrected, and the call worth signing again.
 */
function signedTooEarlyOrLate(sign: RequestSigner, res: Response, text: string, signedHeaders: Record<string, string>): boolean {
  if (sign.clock === undefined || res.status !== 403) return false;
  if (!isClockSkewError(errorTypeFromHeader(res.headers.get('x-amzn-errortype')), messageOf(text))) return false;
  return sign.clock.correct(res.headers.get('date'), signedHeaders['x-amz-date']);
}

function messageOf(text: string): string | undefined {
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body !== 'object' || body === null) return undefined;
    const { message, Message } = body as { message?: unknown; Message?: unknown };
    return typeof message === 'string' ? message : typeof Message === 'string' ? Message : undefined;
  } catch {
    return undefined;
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}
