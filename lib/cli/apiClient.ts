/**
 * The scheduler API as hami-diag reads it: GET the scheduler log and the node devices view, turn
 * transport and HTTP failures into one-line errors. The token goes in a header and nowhere else.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { z } from 'zod';
import { nodeDevicesSchema, type NodeDevices } from '../diagnostics/nodeDevices';
import { schedulerLogSchema, statusBodySchema, type SchedulerLog } from '../diagnostics/schedulerLog';
import { ApiAuthError, ApiResponseError, ApiUnreachableError, UsageError } from './errors';

export interface ApiOptions {
  readonly server: string;
  readonly token?: string;
  readonly timeoutMs: number;
}

/** `raw` is the answer exactly as the API sent it (every field, also those this version does not know). */
export type Lookup<T> = { readonly kind: 'found'; readonly value: T; readonly raw: unknown } | { readonly kind: 'notFound'; readonly message: string };

export async function getSchedulerLog(
  api: ApiOptions,
  namespace: string,
  name: string,
  query: { readonly detail?: boolean; readonly history?: boolean } = {},
): Promise<Lookup<SchedulerLog>> {
  const params = new URLSearchParams();
  if (query.detail) params.set('detail', 'devices');
  if (query.history) params.set('history', 'true');
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}/schedulerlog`;
  return getTyped(api, params.size > 0 ? `${path}?${params.toString()}` : path, schedulerLogSchema);
}

export async function getNodeDevices(api: ApiOptions, node: string): Promise<Lookup<NodeDevices>> {
  return getTyped(api, `/api/v1/nodes/${encodeURIComponent(node)}/devices`, nodeDevicesSchema);
}

async function getTyped<T>(api: ApiOptions, path: string, schema: z.ZodType<T>): Promise<Lookup<T>> {
  const base = parseServer(api.server);
  const where = displayServer(base);
  // Relative to the server's path prefix (an API Gateway stage, a proxy path): drop the leading slash.
  const answer = await get(new URL(path.replace(/^\//, ''), base), api.token, api.timeoutMs, where);
  if (answer.status === 401 || answer.status === 403) {
    throw new ApiAuthError(
      api.token
        ? `the scheduler API refused the token (${answer.status})`
        : `the scheduler API requires a token (${answer.status}): pass --token or set HAMI_API_TOKEN`,
    );
  }
  const body = parseJson(answer.body);
  if (answer.status === 404) {
    const status = statusBodySchema.safeParse(body);
    if (status.success) return { kind: 'notFound', message: status.data.message ?? 'not found' };
    throw new ApiResponseError(`the server at ${where} answered 404 for ${path}: is it the scheduler API?`);
  }
  if (answer.status < 200 || answer.status > 299) {
    const status = statusBodySchema.safeParse(body);
    const detail = status.success && status.data.message ? `: ${status.data.message}` : '';
    throw new ApiResponseError(`the scheduler API at ${where} answered ${answer.status}${detail}`);
  }
  if (body === undefined) throw new ApiResponseError(`the scheduler API at ${where} answered with something that is not JSON`);
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new ApiResponseError(`unexpected answer from the scheduler API at ${where}${at}: ${issue?.message ?? 'invalid'}`);
  }
  return { kind: 'found', value: parsed.data, raw: body };
}

function parseServer(server: string): URL {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new UsageError(`--server must be a URL such as http://127.0.0.1:8080 (got "${server}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--server must be http:// or https:// (got ${url.protocol})`);
  // A path prefix is a directory that API paths resolve under.
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

/** The server as shown in messages: credentials in the URL are never echoed. */
export function displayServer(url: URL): string {
  const shown = new URL(url.href);
  shown.username = '';
  shown.password = '';
  return shown.href.replace(/\/$/, '');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const transportErrors: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  CERT_HAS_EXPIRED: 'TLS certificate expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'self-signed TLS certificate',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS certificate not trusted',
};

function get(target: URL, token: string | undefined, timeoutMs: number, where: string): Promise<{ status: number; body: string }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(target, { method: 'GET', headers }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) => reject(new ApiUnreachableError(`cannot reach the scheduler API at ${where}: ${err.message}`, { cause: err })));
    });
    req.setTimeout(timeoutMs, () => {
      req.destroy(Object.assign(new Error(`no answer within ${timeoutMs / 1000}s`), { code: 'TIMEOUT' }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      const code = err.code ?? '';
      const described = code === 'TIMEOUT' ? err.message : transportErrors[code] ? `${transportErrors[code]} (${code})` : err.message;
      reject(new ApiUnreachableError(`cannot reach the scheduler API at ${where}: ${described}`, { cause: err }));
    });
    req.end();
  });
}
