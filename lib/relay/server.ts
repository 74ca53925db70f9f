/**
 * The relay's HTTP surface. Two listeners share one router: the extender listener serves kube-scheduler's
 * verbs, the user listener serves scheduler logs, the listing routes and the web console; both serve probes. Splitting them lets a
 * NetworkPolicy keep /filter and /bind reachable by the scheduler only (the protocol has no auth).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppLogger } from '../powertools';
import type { ControlPlaneClient } from './controlPlane';
import { relayBind, relayFilter, type ExtenderDeps } from './extender';
import { consoleAsset } from '../console/serve';
import { BadRequestError, DomainError, errorMessage } from '../errors';
import { decodePathSegment } from '../http/paths';
import { bearerToken } from '../http/bearer';
import { authenticate, reviewAccess, type AccessQuestion, type ReviewApis, type ReviewedUser } from './userAuth';
import { statusBody } from '../http/respond';
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from '../control/listing';
import type { PagePosition, PageTokens } from './pageTokens';
import type { LogSampler, UnknownTokenGate } from './tokenGate';
import { hideHoldersOfLog, hidePodsOfNode, holderNamespacesOfLog, isObject, NamespaceAccess, podNamespacesOfNodes, podOfSummary, scanPage } from './userListings';

export const MAX_BODY_BYTES = 8 * 1024 * 1024;
const SCHEDULER_LOG_ROUTE = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/schedulerlog$/;
const NAMESPACE_LOGS_ROUTE = /^\/api\/v1\/namespaces\/([^/]+)\/schedulerlogs$/;
const PASSED_QUERY = ['detail', 'history'] as const;
/**
 * Control-plane pages read per call, and calls per page at most, while a page is filled with what a caller who may
 * read some namespaces only may see (docs/relay.md, "Page tokens").
 */
const SCAN_PAGE_SIZE = MAX_LIST_LIMIT;
const MAX_READS_PER_PAGE = 10;
/**
 * Where `kubectl hami ui` puts the user's token: kube-apiserver's service proxy, which it calls through, consumes the
 * Authorization header (docs/relay.md, "The console"). Checked exactly like Authorization.
 */
export const FORWARDED_AUTHORIZATION_HEADER = 'x-hami-authorization';

export interface RouterDeps {
  readonly extender: ExtenderDeps;
  readonly controlPlane: ControlPlaneClient;
  readonly reviews: ReviewApis;
  readonly logger: AppLogger;
  /** Ready once informers have listed; the control plane's /healthz is checked on each probe. */
  readonly watcherSynced: () => boolean;
  readonly probeTimeoutMs: number;
  readonly schedulerLogTimeoutMs: number;
  /** With mutual TLS the extender listener waits for its certificate; not ready until it listens. */
  readonly extenderListening?: () => boolean;
  /**
   * For a pod without a scheduling record: hami-diag's debugging decision tree walked with the relay's own view of
   * the cluster (lib/diagnostics/decisionTree.ts), added to the 404 as `diagnosis`; undefined when the cluster cannot be read.
   */
  readonly diagnose?: (namespace: string, name: string) => Promise<unknown>;
  /** Seals and opens the user port's continue tokens. */
  readonly pageTokens: PageTokens;
  /** Admits TokenReviews of tokens that have not authenticated lately, within per-client and overall budgets. */
  readonly tokenGate: UnknownTokenGate;
  /** One log line per window for refused tokens and limited callers. */
  readonly logSampler: LogSampler;
}

export type Listener = 'extender' | 'user';

class BodyTooLargeError extends Error {
  constructor() {
    super(`request body exceeds ${MAX_BODY_BYTES} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new BodyTooLargeError());
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * A JSON answer. Never sniffed as another type, never kept by a cache or a browser's history: answers of the user
 * port carry what a user may read, under their token.
 */
export function send(res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
  });
  res.end(text);
}

async function readiness(deps: RouterDeps): Promise<{ ready: boolean; checks: Record<string, string> }> {
  const informers = deps.watcherSynced() ? 'ok' : 'informers not synced';
  const extender = deps.extenderListening === undefined || deps.extenderListening() ? 'ok' : 'extender port waits for its certificate';
  let controlPlane = 'ok';
  try {
    const res = await deps.controlPlane.get('/healthz', { timeoutMs: deps.probeTimeoutMs });
    if (res.status !== 200) controlPlane = `control plane /healthz answered HTTP ${res.status}`;
  } catch (err) {
    controlPlane = errorMessage(err);
  }
  return { ready: informers === 'ok' && controlPlane === 'ok' && extender === 'ok', checks: { informers, controlPlane, extender } };
}

/** The caller's bearer token header: Authorization, else the one `kubectl hami ui` forwards. */
function authorizationOf(req: IncomingMessage): string | undefined {
  const forwarded = req.headers[FORWARDED_AUTHORIZATION_HEADER];
  return req.headers.authorization ?? (typeof forwarded === 'string' ? forwarded : undefined);
}

function passedQuery(url: URL, keys: readonly string[]): Record<string, string> {
  const query: Record<string, string> = {};
  for (const key of keys) {
    const value = url.searchParams.get(key);
    if (value !== null) query[key] = value;
  }
  return query;
}

/** A GET to the control plane; when it cannot be reached, the 503 Status is answered here and undefined returned. */
async function fromControlPlane(res: ServerResponse, path: string, query: Record<string, string>, deps: RouterDeps): Promise<{ status: number; text: string } | undefined> {
  try {
    return await deps.controlPlane.get(path, { timeoutMs: deps.schedulerLogTimeoutMs, query });
  } catch (err) {
    deps.logger.warn('UserRouteUnavailable', { path, error: errorMessage(err) });
    send(res, 503, statusBody(503, 'ServiceUnavailable', 'the scheduler control plane is unavailable; retry later'));
    return undefined;
  }
}

/** A refused authentication or review, answered with its Status. */
function deny(res: ServerResponse, refusal: { readonly code: number; readonly reason: string; readonly message: string }): number {
  send(res, refusal.code, statusBody(refusal.code, refusal.reason, refusal.message));
  return refusal.code;
}

/**
 * Who the caller is, by the TokenReview of their bearer token; or the status of the refusal, already answered. A
 * token that has not authenticated lately is reviewed only within the unknown-token budgets (lib/relay/tokenGate.ts):
 * past them, 429 with Retry-After, and no review is sent.
 */
async function caller(req: IncomingMessage, res: ServerResponse, deps: RouterDeps): Promise<ReviewedUser | number> {
  const authorization = authorizationOf(req);
  const token = bearerToken(authorization);
  if (token !== undefined) {
    const client = req.socket.remoteAddress ?? 'unknown';
    const admission = deps.tokenGate.admit(token, client);
    if (!admission.admitted) {
      const notLogged = deps.logSampler.sample(`TokenReviewsLimited:${admission.limit}`);
      if (notLogged !== undefined) {
        deps.logger.warn('TokenReviewsLimited', { client, limit: admission.limit, retryAfterSeconds: admission.retryAfterSeconds, ...(notLogged > 0 ? { notLogged } : {}) });
      }
      const from = admission.limit === 'client' ? 'from this client' : 'from all clients together';
      const message = `too many requests with bearer tokens the relay has not seen authenticate (${from}): retry after ${admission.retryAfterSeconds}s`;
      send(res, 429, { ...statusBody(429, 'TooManyRequests', message), details: { retryAfterSeconds: admission.retryAfterSeconds } }, { 'retry-after': String(admission.retryAfterSeconds) });
      return 429;
    }
  }
  const who = await authenticate(authorization, deps.reviews, deps.logger, deps.logSampler);
  if (!who.ok) return deny(res, who);
  if (token !== undefined) deps.tokenGate.authenticated(token);
  return who.user;
}

/** The caller's user, allowed `question`; or the status of the refusal, already answered. */
async function allowedCaller(req: IncomingMessage, res: ServerResponse, question: AccessQuestion, deps: RouterDeps): Promise<ReviewedUser | number> {
  const user = await caller(req, res, deps);
  if (typeof user === 'number') return user;
  const decision = await reviewAccess(user, question, deps.reviews, deps.logger);
  return decision.allowed ? user : deny(res, decision);
}

/** The namespaces where the user may get pods, asked as a request meets them (to filter, so refusals are not logged). */
function namespaceAccess(user: ReviewedUser, deps: RouterDeps): NamespaceAccess {
  return new NamespaceAccess((namespace) => reviewAccess(user, { verb: 'get', resource: 'pods', ...(namespace !== undefined ? { namespace } : {}) }, deps.reviews, deps.logger, false));
}

/** `limit` (checked as the control plane checks it) and where the page starts, from the caller's continue token. */
function pageQuery(url: URL, list: string, deps: RouterDeps): { readonly limit: number; readonly start: PagePosition } {
  const raw = url.searchParams.get('limit');
  const limit = raw === null ? DEFAULT_LIST_LIMIT : Number(raw);
  if (raw !== null && (!/^\d{1,7}$/.test(raw) || limit < 1 || limit > MAX_LIST_LIMIT)) throw new BadRequestError(`limit must be a whole number from 1 to ${MAX_LIST_LIMIT}`);
  const token = url.searchParams.get('continue');
  return { limit, start: token === null || token === '' ? { skip: 0 } : deps.pageTokens.open(list, token) };
}

type Json = Record<string, unknown>;

/** The control plane's answer passed on as it is; its status, for the access log. */
function passOn(res: ServerResponse, answer: { status: number; text: string }): number {
  send(res, answer.status, answer.text);
  return answer.status;
}

/**
 * `GET /api/v1/nodes` (docs/api.md §10): every node's devices view, for users who may list nodes; the pods on the
 * cards only of namespaces where they may get pods (the others counted as `hiddenPods`). Continue tokens sealed.
 */
async function listNodes(req: IncomingMessage, res: ServerResponse, url: URL, deps: RouterDeps): Promise<number> {
  const user = await allowedCaller(req, res, { verb: 'list', resource: 'nodes' }, deps);
  if (typeof user === 'number') return user;
  const page = pageQuery(url, 'nodes', deps);
  const answer = await fromControlPlane(res, url.pathname, { limit: String(page.limit), ...(page.start.upstream !== undefined ? { continue: page.start.upstream } : {}) }, deps);
  if (answer === undefined) return 503;
  if (answer.status !== 200) return passOn(res, answer);
  const list = JSON.parse(answer.text) as Json;
  const items = Array.isArray(list.items) ? list.items : [];
  const readable = await namespaceAccess(user, deps).readable(podNamespacesOfNodes(items));
  if ('allowed' in readable) return deny(res, readable);
  const { continue: upstream, ...metadata } = isObject(list.metadata) ? list.metadata : {};
  send(res, 200, {
    ...list,
    metadata: { ...metadata, ...(typeof upstream === 'string' ? { continue: deps.pageTokens.seal('nodes', { upstream, skip: 0 }) } : {}) },
    items: items.map((node) => hidePodsOfNode(node, readable)),
  });
  return 200;
}

/**
 * `GET /api/v1/namespaces/{ns}/schedulerlogs` (for users who may get pods there) and `GET /api/v1/schedulerlogs`: a
 * user who may get pods in every namespace sees the control plane's pages; anyone else only the items of namespaces
 * where they may (one review per namespace met), in pages cut on those items alone (lib/relay/userListings.ts), so
 * neither a page nor its token tells anything of the rest.
 */
async function schedulerLogList(req: IncomingMessage, res: ServerResponse, url: URL, namespace: string | undefined, deps: RouterDeps): Promise<number> {
  const user = namespace === undefined ? await caller(req, res, deps) : await allowedCaller(req, res, { verb: 'get', resource: 'pods', namespace }, deps);
  if (typeof user === 'number') return user;
  const access = namespaceAccess(user, deps);
  const all = namespace !== undefined || (await access.all());
  if (typeof all !== 'boolean') return deny(res, all);
  const list = namespace === undefined ? 'schedulerlogs' : `schedulerlogs/${namespace}`;
  const page = pageQuery(url, list, deps);
  let shape: Json = { kind: 'SchedulerLogList', apiVersion: 'v1' };
  let failedStatus = 503;
  const result = await scanPage({
    start: page.start,
    limit: page.limit,
    everything: all,
    scanPageSize: SCAN_PAGE_SIZE,
    maxReads: MAX_READS_PER_PAGE,
    read: async (upstream, limit) => {
      const answer = await fromControlPlane(res, url.pathname, { limit: String(limit), ...(upstream !== undefined ? { continue: upstream } : {}) }, deps);
      if (answer === undefined) return { failed: true };
      if (answer.status !== 200) {
        failedStatus = passOn(res, answer);
        return { failed: true };
      }
      const body = JSON.parse(answer.text) as Json;
      shape = { kind: body.kind, apiVersion: body.apiVersion };
      const next = isObject(body.metadata) && typeof body.metadata.continue === 'string' ? body.metadata.continue : undefined;
      return { items: Array.isArray(body.items) ? body.items : [], ...(next !== undefined ? { continue: next } : {}) };
    },
    shown: async (items) => {
      if (all) return items.map(() => true);
      const namespaces = items.map((item) => podOfSummary(item).namespace ?? '');
      const readable = await access.readable(namespaces.filter((ns) => ns !== ''));
      return 'allowed' in readable ? readable : namespaces.map((ns) => readable.has(ns));
    },
    identity: (item) => {
      const pod = podOfSummary(item);
      return pod.namespace !== undefined && pod.name !== undefined ? `${pod.namespace}/${pod.name}` : undefined;
    },
  });
  if ('failed' in result) return failedStatus;
  if ('denied' in result) return deny(res, result.denied);
  send(res, 200, { ...shape, metadata: result.next !== undefined ? { continue: deps.pageTokens.seal(list, result.next) } : {}, items: result.items });
  return 200;
}

/**
 * `GET /api/v1/namespaces/{ns}/pods/{name}/schedulerlog`: for users who may get the pod. The nodes its filter passed
 * over name the pod holding each one's lock: shown only where the user may get pods in that pod's namespace.
 */
async function schedulerLog(req: IncomingMessage, res: ServerResponse, url: URL, match: RegExpExecArray, deps: RouterDeps): Promise<number> {
  const namespace = decodePathSegment(match[1] ?? '');
  const name = decodePathSegment(match[2] ?? '');
  const user = await allowedCaller(req, res, { verb: 'get', resource: 'pods', namespace, name }, deps);
  if (typeof user === 'number') return user;
  const answer = await fromControlPlane(res, url.pathname, passedQuery(url, PASSED_QUERY), deps);
  if (answer === undefined) return 503;
  if (answer.status === 200) {
    const log = JSON.parse(answer.text) as unknown;
    const holders = holderNamespacesOfLog(log);
    if (holders.size === 0) return passOn(res, answer);
    const readable = await namespaceAccess(user, deps).readable(holders);
    if ('allowed' in readable) return deny(res, readable);
    send(res, 200, hideHoldersOfLog(log, readable));
    return 200;
  }
  if (answer.status !== 404 || deps.diagnose === undefined) return passOn(res, answer);
  // No record: why, in the debugging decision tree's words (the user may get this pod, so may read about it).
  const diagnosis = await deps.diagnose(namespace, name);
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(answer.text) as Record<string, unknown>;
  } catch {
    body = statusBody(404, 'NotFound', `no scheduling record for pod ${namespace}/${name}`);
  }
  send(res, 404, diagnosis === undefined ? body : { ...body, diagnosis });
  return 404;
}

/** Handles one request on the given listener; returns the status for the access log. */
async function route(listener: Listener, req: IncomingMessage, res: ServerResponse, deps: RouterDeps): Promise<number> {
  const url = new URL(req.url ?? '/', 'http://relay.invalid');
  const method = req.method ?? 'GET';
  if (method === 'GET' && url.pathname === '/healthz') {
    send(res, 200, { status: 'ok' });
    return 200;
  }
  if (method === 'GET' && url.pathname === '/readyz') {
    const r = await readiness(deps);
    send(res, r.ready ? 200 : 503, r);
    return r.ready ? 200 : 503;
  }
  if (listener === 'extender' && method === 'POST' && (url.pathname === '/filter' || url.pathname === '/bind')) {
    let body: string;
    try {
      body = await readBody(req);
    } catch (err) {
      // Still 200: kube-scheduler discards other bodies and would only see a code.
      send(res, 200, { Error: errorMessage(err) });
      return 200;
    }
    const answer = url.pathname === '/filter' ? await relayFilter(body, deps.extender) : await relayBind(body, deps.extender);
    send(res, 200, answer);
    return 200;
  }
  if (listener === 'user') {
    // The web console's assets (docs/api.md §11) hold no data: served to anyone; the routes they call are checked.
    const asset = consoleAsset(method, url.pathname);
    if (asset !== undefined) {
      res.writeHead(asset.statusCode, { ...asset.headers, 'content-length': Buffer.byteLength(asset.body) });
      res.end(asset.body);
      return asset.statusCode;
    }
  }
  if (listener === 'user' && method === 'GET') {
    const log = SCHEDULER_LOG_ROUTE.exec(url.pathname);
    if (log !== null) return schedulerLog(req, res, url, log, deps);
    if (url.pathname === '/api/v1/nodes') return listNodes(req, res, url, deps);
    if (url.pathname === '/api/v1/schedulerlogs') return schedulerLogList(req, res, url, undefined, deps);
    const logs = NAMESPACE_LOGS_ROUTE.exec(url.pathname);
    if (logs !== null) return schedulerLogList(req, res, url, decodePathSegment(logs[1] ?? ''), deps);
  }
  send(res, 404, statusBody(404, 'NotFound', `no route for ${method} ${url.pathname}`));
  return 404;
}

/** Kubernetes' reasons for the errors a caller can fix. */
const CLIENT_ERROR_REASONS: Readonly<Record<number, string>> = { 400: 'BadRequest', 410: 'Expired' };

export function createRelayServer(listener: Listener, deps: RouterDeps): Server {
  return createServer(relayHandler(listener, deps));
}

/** The request handler of one listener (served over plain HTTP, or by the mutual-TLS listener). */
export function relayHandler(listener: Listener, deps: RouterDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const started = Date.now();
    route(listener, req, res, deps)
      .then((status) => {
        // Paths only: query strings and headers (which carry tokens) are never logged.
        if (!req.url?.startsWith('/healthz') && !req.url?.startsWith('/readyz')) {
          deps.logger.debug('Request', { listener, method: req.method, path: new URL(req.url ?? '/', 'http://x').pathname, status, durationMs: Date.now() - started });
        }
      })
      .catch((err: unknown) => {
        // A request the caller can fix (a bad limit or continue token, 400; a token under a key no longer held, 410).
        if (err instanceof DomainError && err.status < 500 && !res.headersSent) {
          send(res, err.status, statusBody(err.status, CLIENT_ERROR_REASONS[err.status] ?? 'BadRequest', err.message));
          return;
        }
        deps.logger.error('RequestFailed', { listener, path: new URL(req.url ?? '/', 'http://x').pathname, error: errorMessage(err) });
        if (!res.headersSent) send(res, 500, statusBody(500, 'InternalError', 'internal error'));
        else res.destroy();
      });
  };
}

export async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const shownHost = addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  return `http://${shownHost}:${addr.port}`;
}

export async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
