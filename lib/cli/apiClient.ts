/**
 * The scheduler API as hami-diag reads it: GET the scheduler log and the node devices view, turn
 * transport and HTTP failures into one-line errors. The token goes in a header and nowhere else.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { z } from 'zod';
import { MAX_LIST_LIMIT } from '../control/listing';
import { nodeDevicesSchema, type NodeDevices } from '../diagnostics/nodeDevices';
import { schedulerLogSchema, statusBodySchema, type SchedulerLog } from '../diagnostics/schedulerLog';
import { ApiAuthError, ApiResponseError, ApiUnreachableError, UsageError } from './errors';
import { relayProxyPrefix, type KubeRequest, type RelayOptions } from './relayRoute';

/** Where the scheduler API is: a server addressed directly (`npm start`, API Gateway) or the relay through kube-apiserver. */
export type ApiOptions = ServerApi | KubeApi;

/** `--server` with `--token`: the API (or the local server) answered directly. */
export interface ServerApi {
  readonly server: string;
  readonly token?: string;
  readonly timeoutMs: number;
}

/** The relay's user port through kube-apiserver's service proxy, with the kubeconfig's credentials (lib/cli/relayRoute.ts). */
export interface KubeApi {
  readonly kube: KubeRequest;
  readonly relay: RelayOptions;
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

/** Pages read at most for one listing (each up to MAX_LIST_LIMIT items): a bound, not a limit anyone should meet. */
const MAX_LIST_PAGES = 1000;

/**
 * One node's devices view. The relay's user port has no per-node route: its `GET /api/v1/nodes` pages (in name order)
 * are read until the node is met or passed.
 */
export async function getNodeDevices(api: ApiOptions, node: string): Promise<Lookup<NodeDevices>> {
  if (!('kube' in api)) return getTyped(api, `/api/v1/nodes/${encodeURIComponent(node)}/devices`, nodeDevicesSchema);
  let next: string | undefined;
  let pages = 0;
  do {
    const page = await getList(api, '/api/v1/nodes', next);
    for (const item of page.items) {
      const parsed = nodeDevicesSchema.safeParse(item);
      if (parsed.success && parsed.data.name === node) return { kind: 'found', value: parsed.data, raw: item };
    }
    next = page.continue;
    pages += 1;
  } while (next !== undefined && pages < MAX_LIST_PAGES);
  return { kind: 'notFound', message: `node ${node} has not been reported by the relay` };
}

/** What a listing route answers, every page read: the items as sent, and the list's kind and apiVersion. */
export interface Listing {
  readonly kind: string;
  readonly apiVersion: string;
  readonly items: readonly unknown[];
}

/** Every page of `GET /api/v1/nodes`, `/api/v1/schedulerlogs` or `/api/v1/namespaces/{ns}/schedulerlogs`. */
export async function listAll(api: ApiOptions, path: string): Promise<Listing> {
  const items: unknown[] = [];
  let shape = { kind: 'List', apiVersion: 'v1' };
  let next: string | undefined;
  let pages = 0;
  do {
    const page = await getList(api, path, next);
    shape = { kind: page.kind, apiVersion: page.apiVersion };
    items.push(...page.items);
    next = page.continue;
    pages += 1;
  } while (next !== undefined && pages < MAX_LIST_PAGES);
  return { ...shape, items };
}

const listPageSchema = z.object({
  kind: z.string().default('List'),
  apiVersion: z.string().default('v1'),
  metadata: z.object({ continue: z.string().optional() }).loose().optional(),
  items: z.array(z.unknown()),
});

async function getList(api: ApiOptions, path: string, next: string | undefined): Promise<{ kind: string; apiVersion: string; items: unknown[]; continue?: string }> {
  const params = new URLSearchParams({ limit: String(MAX_LIST_LIMIT) });
  if (next !== undefined) params.set('continue', next);
  const found = await getTyped(api, `${path}?${params.toString()}`, listPageSchema);
  if (found.kind === 'notFound') throw new ApiResponseError(`${where(api)} has no ${path}: ${found.message}`);
  const page = found.value;
  return { kind: page.kind, apiVersion: page.apiVersion, items: page.items, ...(page.metadata?.continue ? { continue: page.metadata.continue } : {}) };
}

async function getTyped<T>(api: ApiOptions, path: string, schema: z.ZodType<T>): Promise<Lookup<T>> {
  const shown = where(api);
  const named = `${scheduler(api)}${shown}`;
  const answer = await get(api, path);
  if (answer.status === 401 || answer.status === 403) throw refused(api, answer.status, parseJson(answer.body));
  const body = parseJson(answer.body);
  if (answer.status === 404) {
    const status = statusBodySchema.safeParse(body);
    if ('kube' in api && isMissingService(body)) {
      throw new ApiResponseError(
        `the Kubernetes API found no Service ${api.relay.relayNamespace}/${api.relay.relayService}: is the relay installed there? (--relay-namespace, --relay-service)`,
      );
    }
    if (status.success) return { kind: 'notFound', message: status.data.message ?? 'not found' };
    throw new ApiResponseError(`the server at ${shown} answered 404 for ${path}: is it the scheduler API?`);
  }
  if (answer.status < 200 || answer.status > 299) {
    const status = statusBodySchema.safeParse(body);
    const detail = status.success && status.data.message ? `: ${status.data.message}` : '';
    throw new ApiResponseError(`${named} answered ${answer.status}${detail}`);
  }
  if (body === undefined) throw new ApiResponseError(`${named} answered with something that is not JSON`);
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw new ApiResponseError(`unexpected answer from ${named}${at}: ${issue?.message ?? 'invalid'}`);
  }
  return { kind: 'found', value: parsed.data, raw: body };
}

/** 401 or 403, said for the route taken: a token to pass, or the Kubernetes permission the kubeconfig's user lacks. */
function refused(api: ApiOptions, status: number, body: unknown): ApiAuthError {
  if ('kube' in api) {
    const parsed = statusBodySchema.safeParse(body);
    const detail = parsed.success && parsed.data.message ? `: ${parsed.data.message}` : '';
    return new ApiAuthError(`${where(api)} refused your kubeconfig's credentials (${status})${detail}`);
  }
  return new ApiAuthError(
    api.token ? `the scheduler API refused the token (${status})` : `the scheduler API requires a token (${status}): pass --token or set HAMI_API_TOKEN`,
  );
}

/** kube-apiserver's 404 for the proxied Service itself (not the relay's 404 for a pod without a record). */
function isMissingService(body: unknown): boolean {
  const details = (body as { details?: { kind?: unknown } } | null)?.details;
  return typeof details === 'object' && details !== null && details.kind === 'services';
}

/** The API as messages name it: never with credentials. */
function where(api: ApiOptions): string {
  if ('kube' in api) return `the relay ${api.relay.relayNamespace}/${api.relay.relayService}:${api.relay.relayPort} through ${displayServer(new URL(api.kube.server))}`;
  return displayServer(parseServer(api.server));
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

function get(api: ApiOptions, path: string): Promise<{ status: number; body: string }> {
  const shown = where(api);
  let target: URL;
  let options: RequestOptions;
  if ('kube' in api) {
    target = new URL(`${relayProxyPrefix(api.kube.server, api.relay)}${path}`);
    options = { ...api.kube.base, method: 'GET', headers: { ...api.kube.headers, accept: 'application/json' } };
  } else {
    // Relative to the server's path prefix (an API Gateway stage, a proxy path): drop the leading slash.
    target = new URL(path.replace(/^\//, ''), parseServer(api.server));
    options = { method: 'GET', headers: { accept: 'application/json', ...(api.token ? { authorization: `Bearer ${api.token}` } : {}) } };
  }
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const timeoutMs = api.timeoutMs;
  return new Promise((resolve, reject) => {
    const req = send(target, options, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) => reject(new ApiUnreachableError(`cannot reach ${scheduler(api)}${shown}: ${err.message}`, { cause: err })));
    });
    req.setTimeout(timeoutMs, () => {
      req.destroy(Object.assign(new Error(`no answer within ${timeoutMs / 1000}s`), { code: 'TIMEOUT' }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      const code = err.code ?? '';
      const described = code === 'TIMEOUT' ? err.message : transportErrors[code] ? `${transportErrors[code]} (${code})` : err.message;
      reject(new ApiUnreachableError(`cannot reach ${scheduler(api)}${shown}: ${described}`, { cause: err }));
    });
    req.end();
  });
}

/** "the scheduler API at " before a server's address; nothing before "the relay …". */
function scheduler(api: ApiOptions): string {
  return 'kube' in api ? '' : 'the scheduler API at ';
}
