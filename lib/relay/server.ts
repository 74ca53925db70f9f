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
import { BadRequestError, errorMessage } from '../errors';
import { decodePathSegment } from '../http/paths';
import { authenticate, authorize, authorizePodRead, reviewAccess, type ReviewApis } from './userAuth';
import { statusBody } from '../http/respond';
import { forEachAtMost } from '../concurrency';

export const MAX_BODY_BYTES = 8 * 1024 * 1024;
const SCHEDULER_LOG_ROUTE = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/schedulerlog$/;
const NAMESPACE_LOGS_ROUTE = /^\/api\/v1\/namespaces\/([^/]+)\/schedulerlogs$/;
const PASSED_QUERY = ['detail', 'history'] as const;
const LIST_QUERY = ['limit', 'continue'] as const;
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
   * the cluster (lib/cli/decisionTree.ts), added to the 404 as `diagnosis`; undefined when the cluster cannot be read.
   */
  readonly diagnose?: (namespace: string, name: string) => Promise<unknown>;
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

export function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
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

/** Forwards a GET to the control plane and answers what it answered (a 503 Status when it cannot be reached). */
async function forward(res: ServerResponse, path: string, query: Record<string, string>, deps: RouterDeps): Promise<number> {
  const answer = await fromControlPlane(res, path, query, deps);
  if (answer === undefined) return 503;
  send(res, answer.status, answer.text);
  return answer.status;
}

/** A refused authentication or review, answered with its Status. */
function deny(res: ServerResponse, refusal: { readonly code: number; readonly reason: string; readonly message: string }): number {
  send(res, refusal.code, statusBody(refusal.code, refusal.reason, refusal.message));
  return refusal.code;
}

/** `GET /api/v1/nodes` (docs/api.md §10): every node's devices view, for users who may list nodes. */
async function listNodes(req: IncomingMessage, res: ServerResponse, url: URL, deps: RouterDeps): Promise<number> {
  const decision = await authorize(authorizationOf(req), { verb: 'list', resource: 'nodes' }, deps.reviews, deps.logger);
  if (!decision.allowed) return deny(res, decision);
  return forward(res, url.pathname, passedQuery(url, LIST_QUERY), deps);
}

/** `GET /api/v1/namespaces/{ns}/schedulerlogs`: for users who may get pods in the namespace. */
async function namespaceLogs(req: IncomingMessage, res: ServerResponse, url: URL, namespace: string, deps: RouterDeps): Promise<number> {
  const decision = await authorize(authorizationOf(req), { verb: 'get', resource: 'pods', namespace }, deps.reviews, deps.logger);
  if (!decision.allowed) return deny(res, decision);
  return forward(res, url.pathname, passedQuery(url, LIST_QUERY), deps);
}

/** SubjectAccessReviews sent at once for one page of the all-namespaces list. */
const PARALLEL_REVIEWS = 8;

/**
 * `GET /api/v1/schedulerlogs`: a user who may get pods in every namespace sees the page as it is; anyone else sees
 * only the items of namespaces where they may get pods (one review per namespace on the page), so a page may hold
 * fewer items than its limit, and `continue` still leads on. Continue tokens name no pod (docs/api.md §10).
 */
async function allLogs(req: IncomingMessage, res: ServerResponse, url: URL, deps: RouterDeps): Promise<number> {
  const who = await authenticate(authorizationOf(req), deps.reviews, deps.logger);
  if (!who.ok) return deny(res, who);
  const everywhere = await reviewAccess(who.user, { verb: 'get', resource: 'pods' }, deps.reviews, deps.logger);
  if (everywhere.allowed) return forward(res, url.pathname, passedQuery(url, LIST_QUERY), deps);
  if (everywhere.code !== 403) return deny(res, everywhere);
  const answer = await fromControlPlane(res, url.pathname, passedQuery(url, LIST_QUERY), deps);
  if (answer === undefined) return 503;
  if (answer.status !== 200) {
    send(res, answer.status, answer.text);
    return answer.status;
  }
  const list = JSON.parse(answer.text) as { items?: { pod?: { namespace?: unknown } }[] } & Record<string, unknown>;
  const namespaceOf = (item: { pod?: { namespace?: unknown } }) => (typeof item.pod?.namespace === 'string' ? item.pod.namespace : '');
  // One review per namespace on the page, a few at a time (a page of 1,000 pods may span many namespaces).
  const namespaces = [...new Set((list.items ?? []).map(namespaceOf))];
  const allowed = new Map<string, boolean>();
  let refused: Awaited<ReturnType<typeof reviewAccess>> | undefined;
  await forEachAtMost(namespaces, PARALLEL_REVIEWS, async (namespace) => {
    // Once a review could not be made, the answer is that failure: no more reviews.
    if (refused !== undefined) return;
    const decision = await reviewAccess(who.user, { verb: 'get', resource: 'pods', namespace }, deps.reviews, deps.logger);
    if (!decision.allowed && decision.code !== 403) refused ??= decision;
    allowed.set(namespace, decision.allowed);
  });
  if (refused !== undefined && !refused.allowed) return deny(res, refused);
  send(res, 200, { ...list, items: (list.items ?? []).filter((item) => allowed.get(namespaceOf(item)) === true) });
  return 200;
}

async function schedulerLog(req: IncomingMessage, res: ServerResponse, url: URL, match: RegExpExecArray, deps: RouterDeps): Promise<number> {
  const namespace = decodePathSegment(match[1] ?? '');
  const name = decodePathSegment(match[2] ?? '');
  const decision = await authorizePodRead(authorizationOf(req), { namespace, name }, deps.reviews, deps.logger);
  if (!decision.allowed) return deny(res, decision);
  if (deps.diagnose === undefined) return forward(res, url.pathname, passedQuery(url, PASSED_QUERY), deps);
  const answer = await fromControlPlane(res, url.pathname, passedQuery(url, PASSED_QUERY), deps);
  if (answer === undefined) return 503;
  if (answer.status !== 404) {
    send(res, answer.status, answer.text);
    return answer.status;
  }
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
    if (url.pathname === '/api/v1/schedulerlogs') return allLogs(req, res, url, deps);
    const logs = NAMESPACE_LOGS_ROUTE.exec(url.pathname);
    if (logs !== null) return namespaceLogs(req, res, url, decodePathSegment(logs[1] ?? ''), deps);
  }
  send(res, 404, statusBody(404, 'NotFound', `no route for ${method} ${url.pathname}`));
  return 404;
}

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
        if (err instanceof BadRequestError && !res.headersSent) {
          send(res, 400, statusBody(400, 'BadRequest', err.message));
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
