/**
 * A fake Kubernetes API server over real HTTP (127.0.0.1, random port) that behaves like the real one
 * for what the relay uses: list + watch with resourceVersion (history replay, bookmarks, 410 Gone after
 * compaction, server-side timeoutSeconds), JSON merge patch (null deletes, resourceVersion bump; a
 * metadata.uid or metadata.resourceVersion in the patch is a precondition: 409 Conflict when it differs),
 * pods/binding (201, 409 "already assigned", 409 when the Binding's metadata.uid is not the pod's), pods/eviction (policy/v1:
 * 201 and a graceful deletion, the pod marked with deletionTimestamp until the test removes it as the kubelet would, at
 * once when it is not bound or has ended; 429 TooManyRequests with a `DisruptionBudget` cause when the one
 * PodDisruptionBudget selecting a running pod allows no disruption, else one disruption taken from it; a Pending pod's
 * budgets are not asked; 500 when several select it; 409 when the uid precondition differs; 404 for a missing pod), PodDisruptionBudgets (`spec.selector.matchLabels`,
 * `status.disruptionsAllowed` as the test sets it), core/v1 events (create, patch), Secrets and
 * MutatingWebhookConfigurations (create with 409 AlreadyExists, replace with optimistic concurrency on
 * resourceVersion: 409 Conflict when stale), TokenReview and SubjectAccessReview with configurable users and
 * grants, and the service proxy (`/api/v1/namespaces/{ns}/services/{scheme:name:port}/proxy/...`: the caller
 * authenticated and allowed `get` on `services/proxy`, the Authorization header consumed, everything else passed to
 * the Service's registered address). Everything written is recorded for asserts.
 *
 *   const kube = await startFakeKube();
 *   kube.create('Node', node); const kc = kube.kubeConfig();   // ... kube.close()
 */
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

export type FakeKind = 'Node' | 'Pod' | 'ResourceQuota' | 'Event' | 'Secret' | 'MutatingWebhookConfiguration' | 'PodDisruptionBudget';
type Obj = Record<string, unknown> & { metadata?: Record<string, unknown> };

const PLURAL: Record<string, FakeKind> = {
  nodes: 'Node',
  pods: 'Pod',
  resourcequotas: 'ResourceQuota',
  events: 'Event',
  secrets: 'Secret',
  mutatingwebhookconfigurations: 'MutatingWebhookConfiguration',
  poddisruptionbudgets: 'PodDisruptionBudget',
};
const NAMESPACED: Record<FakeKind, boolean> = { Node: false, Pod: true, ResourceQuota: true, Event: true, Secret: true, MutatingWebhookConfiguration: false, PodDisruptionBudget: true };
/** Kinds a client may create with POST on the collection and replace with PUT (the others are written by the test). */
const CLIENT_WRITABLE: ReadonlySet<FakeKind> = new Set(['Secret', 'MutatingWebhookConfiguration']);

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: Record<string, string>;
  readonly contentType: string | undefined;
  readonly authorization: string | undefined;
  readonly body: unknown;
}

export interface FakeUser {
  readonly username: string;
  readonly uid?: string;
  readonly groups?: readonly string[];
}

export interface FakeGrant {
  readonly user?: string;
  readonly group?: string;
  readonly verb: string;
  readonly resource: string;
  /** Absent: every namespace. */
  readonly namespace?: string;
}

interface InjectedFailure {
  readonly method: string;
  readonly pathPattern: RegExp;
  readonly status: number;
  remaining: number;
}

interface HistoryEntry {
  readonly rv: number;
  readonly kind: FakeKind;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: Obj;
}

interface OpenWatch {
  readonly kind: FakeKind;
  readonly namespace: string | undefined;
  readonly bookmarks: boolean;
  readonly res: ServerResponse;
}

export interface FakeKube {
  readonly url: string;
  /** A KubeConfig pointing at this server, authenticating with the given bearer token. */
  kubeConfig(token?: string): KubeConfig;
  create(kind: FakeKind, obj: Obj): Obj;
  /** Replaces the object (keeps uid), bumps resourceVersion, notifies watchers with MODIFIED. */
  update(kind: FakeKind, obj: Obj): Obj;
  /** JSON merge patch, as PATCH with application/merge-patch+json does. */
  patch(kind: FakeKind, namespace: string | undefined, name: string, mergePatch: unknown): Obj;
  /** Deletes the object; `silent` skips the watch event and history (a change the relay never saw). */
  remove(kind: FakeKind, namespace: string | undefined, name: string, opts?: { silent?: boolean }): void;
  get(kind: FakeKind, namespace: string | undefined, name: string): Obj | undefined;
  list(kind: FakeKind): Obj[];
  /** Forgets history up to now: watches from an older resourceVersion get 410 Gone. */
  compact(): void;
  /** Sends a BOOKMARK with the current resourceVersion to every watch that asked for bookmarks. */
  sendBookmarks(): void;
  /** Ends every open watch stream cleanly (as the server's own timeout would). */
  closeWatches(): void;
  openWatches(kind?: FakeKind): number;
  /** The next `times` requests matching method and path answer `status` with a Status body. */
  failNext(method: string, pathPattern: RegExp, status: number, times?: number): void;
  addUser(token: string, user: FakeUser): void;
  grant(grant: FakeGrant): void;
  /** Where the service proxy sends `<scheme>:<name>:<port>` of a namespace (a plain-HTTP address here). */
  serveService(namespace: string, service: string, upstream: string): void;
  readonly requests: RecordedRequest[];
  /** Writes only (POST, PATCH, PUT, DELETE), in order. */
  writes(): RecordedRequest[];
  resourceVersion(): number;
  close(): Promise<void>;
}

export interface FakeKubeOptions {
  /** When set, every API request must carry `Authorization: Bearer <token>` (the relay's service account). */
  readonly requiredToken?: string;
  /** How a too-old watch resourceVersion is reported: an ERROR event in a 200 stream (as kube-apiserver does), or HTTP 410. */
  readonly goneAs?: 'event' | 'status';
}

const clone = <T>(v: T): T => structuredClone(v);
const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObj(patch)) return clone(patch);
  const out: Record<string, unknown> = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function status(code: number, reason: string, message: string, details?: Record<string, unknown>): Obj {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code, ...(details ? { details } : {}) };
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function startFakeKube(opts: FakeKubeOptions = {}): Promise<FakeKube> {
  let rv = 100;
  let compactedBelow = 0;
  const store = new Map<FakeKind, Map<string, Obj>>([
    ['Node', new Map()],
    ['Pod', new Map()],
    ['ResourceQuota', new Map()],
    ['Event', new Map()],
    ['Secret', new Map()],
    ['MutatingWebhookConfiguration', new Map()],
    ['PodDisruptionBudget', new Map()],
  ]);
  const history: HistoryEntry[] = [];
  const watches = new Set<OpenWatch>();
  const failures: InjectedFailure[] = [];
  const users = new Map<string, FakeUser>();
  const grants: FakeGrant[] = [];
  const requests: RecordedRequest[] = [];
  const services = new Map<string, string>();

  const keyOf = (kind: FakeKind, namespace: string | undefined, name: string) => (NAMESPACED[kind] ? `${namespace ?? 'default'}/${name}` : name);
  const meta = (o: Obj): Record<string, unknown> => (o.metadata ??= {});

  const emit = (kind: FakeKind, type: HistoryEntry['type'], object: Obj) => {
    const entry: HistoryEntry = { rv, kind, type, object: clone(object) };
    history.push(entry);
    for (const w of watches) {
      if (w.kind !== kind) continue;
      if (w.namespace !== undefined && meta(object).namespace !== w.namespace) continue;
      w.res.write(`${JSON.stringify({ type, object })}\n`);
    }
  };

  const create = (kind: FakeKind, input: Obj): Obj => {
    const obj = clone(input);
    const m = meta(obj);
    if (typeof m.name !== 'string' || m.name === '') throw new Error('metadata.name is required');
    if (NAMESPACED[kind]) m.namespace ??= 'default';
    const key = keyOf(kind, m.namespace as string | undefined, m.name);
    if (store.get(kind)!.has(key)) throw Object.assign(new Error(`${kind} ${key} already exists`), { code: 409 });
    rv++;
    m.uid ??= randomUUID();
    m.resourceVersion = String(rv);
    m.creationTimestamp ??= new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    store.get(kind)!.set(key, obj);
    emit(kind, 'ADDED', obj);
    return clone(obj);
  };

  const replace = (kind: FakeKind, key: string, next: Obj): Obj => {
    rv++;
    meta(next).resourceVersion = String(rv);
    store.get(kind)!.set(key, next);
    emit(kind, 'MODIFIED', next);
    return clone(next);
  };

  const get = (kind: FakeKind, namespace: string | undefined, name: string) => {
    const o = store.get(kind)!.get(keyOf(kind, namespace, name));
    return o === undefined ? undefined : clone(o);
  };

  const patch = (kind: FakeKind, namespace: string | undefined, name: string, p: unknown): Obj => {
    const key = keyOf(kind, namespace, name);
    const current = store.get(kind)!.get(key);
    if (current === undefined) throw Object.assign(new Error(`${kind} ${key} not found`), { code: 404 });
    const next = mergePatch(current, p) as Obj;
    // Identity is not patchable.
    meta(next).name = meta(current).name;
    meta(next).namespace = meta(current).namespace;
    meta(next).uid = meta(current).uid;
    return replace(kind, key, next);
  };

  const remove = (kind: FakeKind, namespace: string | undefined, name: string, removeOpts: { silent?: boolean } = {}) => {
    const key = keyOf(kind, namespace, name);
    const current = store.get(kind)!.get(key);
    if (current === undefined) return;
    store.get(kind)!.delete(key);
    rv++;
    if (removeOpts.silent) return;
    meta(current).resourceVersion = String(rv);
    emit(kind, 'DELETED', current);
  };

  const readBody = (req: IncomingMessage) =>
    new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });

  const serveWatch = (res: ServerResponse, kind: FakeKind, namespace: string | undefined, query: Record<string, string>) => {
    const from = query.resourceVersion ?? '';
    if (from !== '' && from !== '0' && Number(from) < compactedBelow) {
      const gone = status(410, 'Expired', `too old resource version: ${from} (${compactedBelow})`);
      if (opts.goneAs === 'status') return sendJson(res, 410, gone);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify({ type: 'ERROR', object: gone })}\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    const w: OpenWatch = { kind, namespace, bookmarks: query.allowWatchBookmarks === 'true', res };
    const matches = (o: Obj) => namespace === undefined || meta(o).namespace === namespace;
    if (from === '' || from === '0') {
      for (const o of store.get(kind)!.values()) if (matches(o)) res.write(`${JSON.stringify({ type: 'ADDED', object: o })}\n`);
    } else {
      for (const h of history) if (h.kind === kind && h.rv > Number(from) && matches(h.object)) res.write(`${JSON.stringify({ type: h.type, object: h.object })}\n`);
    }
    watches.add(w);
    const timeout = Number(query.timeoutSeconds ?? '0');
    const timer = timeout > 0 ? setTimeout(() => res.end(), timeout * 1000) : undefined;
    timer?.unref();
    res.on('close', () => {
      watches.delete(w);
      if (timer) clearTimeout(timer);
    });
  };

  const subjectAllowed = (spec: Record<string, unknown>): boolean => {
    const attrs = isObj(spec.resourceAttributes) ? spec.resourceAttributes : {};
    const groups = Array.isArray(spec.groups) ? (spec.groups as string[]) : [];
    return grants.some(
      (g) =>
        (g.user === undefined || g.user === spec.user) &&
        (g.group === undefined || groups.includes(g.group)) &&
        (g.user !== undefined || g.group !== undefined) &&
        g.verb === attrs.verb &&
        g.resource === attrs.resource &&
        (attrs.group ?? '') === '' &&
        (g.namespace === undefined || g.namespace === attrs.namespace),
    );
  };

  /** kube-apiserver's service proxy: authenticate, authorize `get services/proxy`, drop Authorization, forward. */
  const proxy = (req: IncomingMessage, res: ServerResponse, namespace: string, service: string, rest: string) => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const user = token === undefined ? undefined : users.get(token);
    const isRelay = token !== undefined && token === opts.requiredToken;
    if (user === undefined && !isRelay) return sendJson(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
    const groups = [...(user?.groups ?? []), 'system:authenticated'];
    const allowed = isRelay || subjectAllowed({ user: user?.username, groups, resourceAttributes: { namespace, verb: 'get', resource: 'services/proxy' } });
    if (!allowed) {
      return sendJson(res, 403, status(403, 'Forbidden', `services "${service.split(':')[1] ?? service}" is forbidden: User "${user?.username ?? ''}" cannot get resource "services/proxy" in API group "" in the namespace "${namespace}"`));
    }
    const upstream = services.get(`${namespace}/${service}`);
    if (upstream === undefined) return sendJson(res, 503, status(503, 'ServiceUnavailable', `no endpoints available for service "${service}"`));
    const headers = { ...req.headers };
    delete headers.authorization;
    delete headers.host;
    const forwarded = httpRequest(`${upstream}${rest}`, { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forwarded.on('error', (err) => sendJson(res, 503, status(503, 'ServiceUnavailable', `error trying to reach service: ${err.message}`)));
    req.pipe(forwarded);
  };

  /** The PodDisruptionBudgets of the pod's namespace whose `spec.selector.matchLabels` all match its labels. */
  const budgetsOf = (pod: Obj): Obj[] => {
    const labels = isObj(meta(pod).labels) ? (meta(pod).labels as Record<string, unknown>) : {};
    return [...store.get('PodDisruptionBudget')!.values()].filter((pdb) => {
      if (meta(pdb).namespace !== meta(pod).namespace) return false;
      const spec = isObj(pdb.spec) ? pdb.spec : {};
      const selector = isObj(spec.selector) && isObj(spec.selector.matchLabels) ? spec.selector.matchLabels : undefined;
      // kube-apiserver: an empty selector selects every pod of the namespace (policy/v1); no selector none.
      return selector !== undefined && Object.entries(selector).every(([k, v]) => labels[k] === v);
    });
  };

  /** policy/v1 Eviction, as kube-apiserver's eviction REST handler answers it. */
  const evict = (res: ServerResponse, namespace: string, name: string, pod: Obj | undefined, body: unknown): void => {
    const eviction = isObj(body) ? body : {};
    const em = isObj(eviction.metadata) ? eviction.metadata : {};
    if (em.name !== undefined && em.name !== name) return sendJson(res, 400, status(400, 'BadRequest', `name in URL does not match name in Eviction object`));
    if (pod === undefined) return sendJson(res, 404, status(404, 'NotFound', `pods "${name}" not found`, { name, kind: 'pods' }));
    const options = isObj(eviction.deleteOptions) ? eviction.deleteOptions : {};
    const preconditions = isObj(options.preconditions) ? options.preconditions : {};
    if (preconditions.uid !== undefined && preconditions.uid !== meta(pod).uid) {
      return sendJson(res, 409, status(409, 'Conflict', `Operation cannot be fulfilled on pods "${name}": Precondition failed: UID in precondition: ${String(preconditions.uid)}, UID in object meta: ${String(meta(pod).uid)}`));
    }
    const success = () => sendJson(res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
    const spec = isObj(pod.spec) ? pod.spec : {};
    const phase = isObj(pod.status) ? pod.status.phase : undefined;
    const bound = typeof spec.nodeName === 'string' && spec.nodeName !== '';
    // Ended pods, and pods on no node, go at once (no kubelet to wait for), without asking their budgets.
    if (phase === 'Succeeded' || phase === 'Failed' || !bound) {
      remove('Pod', namespace, name);
      return success();
    }
    if (meta(pod).deletionTimestamp !== undefined) return success();
    // kube-apiserver's canIgnorePDB: a Pending pod is not counted healthy by any budget, so none is asked.
    const budgets = phase === 'Pending' ? [] : budgetsOf(pod);
    if (budgets.length > 1) {
      return sendJson(res, 500, status(500, 'InternalError', 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.'));
    }
    const budget = budgets[0];
    if (budget !== undefined) {
      const st = isObj(budget.status) ? budget.status : {};
      const allowed = typeof st.disruptionsAllowed === 'number' ? st.disruptionsAllowed : 0;
      if (allowed <= 0) {
        const cause = `The disruption budget ${String(meta(budget).name)} needs ${String(st.desiredHealthy ?? 0)} healthy pods and has ${String(st.currentHealthy ?? 0)} currently`;
        return sendJson(res, 429, status(429, 'TooManyRequests', 'Cannot evict pod as it would violate the pod\'s disruption budget.', { causes: [{ reason: 'DisruptionBudget', message: cause }] }));
      }
      patch('PodDisruptionBudget', namespace, String(meta(budget).name), { status: { disruptionsAllowed: allowed - 1, disruptedPods: { ...(isObj(st.disruptedPods) ? st.disruptedPods : {}), [name]: new Date().toISOString() } } });
    }
    // Graceful deletion: the pod is marked and stays until its kubelet is done (the test removes it).
    const grace = typeof spec.terminationGracePeriodSeconds === 'number' ? spec.terminationGracePeriodSeconds : 30;
    patch('Pod', namespace, name, { metadata: { deletionTimestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'), deletionGracePeriodSeconds: grace } });
    return success();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const proxied = /^\/api\/v1\/namespaces\/([^/]+)\/services\/([^/]+)\/proxy(\/.*)?$/.exec(url.pathname);
    if (proxied) {
      requests.push({ method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams.entries()), contentType: req.headers['content-type'], authorization: req.headers.authorization, body: undefined });
      return proxy(req, res, proxied[1] ?? '', decodeURIComponent(proxied[2] ?? ''), `${proxied[3] ?? '/'}${url.search}`);
    }
    const query = Object.fromEntries(url.searchParams.entries());
    const method = req.method ?? 'GET';
    const raw = method === 'GET' ? '' : await readBody(req);
    let body: unknown;
    try {
      body = raw === '' ? undefined : JSON.parse(raw);
    } catch {
      body = raw;
    }
    const contentType = req.headers['content-type'];
    requests.push({ method, path: url.pathname, query, contentType, authorization: req.headers.authorization, body });

    if (opts.requiredToken !== undefined && req.headers.authorization !== `Bearer ${opts.requiredToken}`) {
      return sendJson(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
    }
    const failure = failures.find((f) => f.remaining > 0 && f.method === method && f.pathPattern.test(url.pathname));
    if (failure) {
      failure.remaining--;
      return sendJson(res, failure.status, status(failure.status, 'InternalError', `injected failure ${failure.status}`));
    }

    if (method === 'POST' && url.pathname === '/apis/authentication.k8s.io/v1/tokenreviews') {
      const spec = isObj(body) && isObj(body.spec) ? body.spec : {};
      const user = typeof spec.token === 'string' ? users.get(spec.token) : undefined;
      return sendJson(res, 201, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        metadata: {},
        spec,
        status: user
          ? { authenticated: true, user: { username: user.username, uid: user.uid ?? `uid-${user.username}`, groups: [...(user.groups ?? []), 'system:authenticated'] } }
          : { authenticated: false, error: 'invalid bearer token' },
      });
    }
    if (method === 'POST' && url.pathname === '/apis/authorization.k8s.io/v1/subjectaccessreviews') {
      const spec = isObj(body) && isObj(body.spec) ? body.spec : {};
      const allowed = subjectAllowed(spec);
      return sendJson(res, 201, {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        metadata: {},
        spec,
        status: { allowed, ...(allowed ? { reason: 'allowed by fake grant' } : {}) },
      });
    }

    const m = /^\/(?:api\/v1|apis\/admissionregistration\.k8s\.io\/v1|apis\/policy\/v1)(?:\/namespaces\/([^/]+))?\/([a-z]+)(?:\/([^/]+))?(?:\/([a-z]+))?$/.exec(url.pathname);
    const kind = m ? PLURAL[m[2] ?? ''] : undefined;
    if (!m || kind === undefined) return sendJson(res, 404, status(404, 'NotFound', `the server could not find the requested resource (${url.pathname})`));
    const namespace = m[1];
    const name = m[3];
    const sub = m[4];

    if (method === 'GET' && name === undefined) {
      if (query.watch === 'true' || query.watch === '1') return serveWatch(res, kind, namespace, query);
      const items = [...store.get(kind)!.values()].filter((o) => namespace === undefined || meta(o).namespace === namespace);
      return sendJson(res, 200, { kind: `${kind}List`, apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items });
    }
    if (name === undefined) {
      if (method === 'POST' && kind === 'Event') {
        const ev = isObj(body) ? (body as Obj) : {};
        if (meta(ev).namespace !== undefined && meta(ev).namespace !== namespace) {
          return sendJson(res, 400, status(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request'));
        }
        const inv = isObj(ev.involvedObject) ? ev.involvedObject : {};
        // kube-apiserver's rule (legacyValidateEvent): a cluster-scoped object's (a Node's) events go in `default`.
        const involvedNamespace = typeof inv.namespace === 'string' ? inv.namespace : '';
        if (involvedNamespace === '' ? namespace !== 'default' : involvedNamespace !== namespace) {
          return sendJson(res, 422, status(422, 'Invalid', 'involvedObject.namespace: Invalid value: does not match event.namespace'));
        }
        try {
          return sendJson(res, 201, create('Event', { ...ev, metadata: { ...meta(ev), namespace } }));
        } catch (err) {
          return sendJson(res, 409, status(409, 'AlreadyExists', (err as Error).message));
        }
      }
      if (method === 'POST' && CLIENT_WRITABLE.has(kind)) {
        const obj = isObj(body) ? (body as Obj) : {};
        if (NAMESPACED[kind] && meta(obj).namespace !== undefined && meta(obj).namespace !== namespace) {
          return sendJson(res, 400, status(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request'));
        }
        if (get(kind, namespace, String(meta(obj).name)) !== undefined) {
          return sendJson(res, 409, status(409, 'AlreadyExists', `${m[2]} "${String(meta(obj).name)}" already exists`, { name: meta(obj).name, kind: m[2] }));
        }
        return sendJson(res, 201, create(kind, { ...obj, metadata: { ...meta(obj), ...(NAMESPACED[kind] ? { namespace } : {}) } }));
      }
      return sendJson(res, 405, status(405, 'MethodNotAllowed', `${method} not supported on ${url.pathname}`));
    }
    const current = get(kind, namespace, name);
    if (sub === 'binding' && kind === 'Pod' && method === 'POST') {
      const binding = isObj(body) ? body : {};
      const bm = isObj(binding.metadata) ? binding.metadata : {};
      const target = isObj(binding.target) ? binding.target : {};
      if (bm.name !== undefined && bm.name !== name) return sendJson(res, 400, status(400, 'BadRequest', 'name in URL does not match name in Binding object'));
      if (current === undefined) return sendJson(res, 404, status(404, 'NotFound', `pods "${name}" not found`));
      if (bm.uid !== undefined && bm.uid !== meta(current).uid) {
        return sendJson(res, 409, status(409, 'Conflict', `Operation cannot be fulfilled on pods/binding "${name}": precondition failed: UID in precondition: ${String(bm.uid)}, UID in object meta: ${String(meta(current).uid)}`));
      }
      const spec = isObj(current.spec) ? current.spec : {};
      if (typeof spec.nodeName === 'string' && spec.nodeName !== '') {
        return sendJson(res, 409, status(409, 'Conflict', `Operation cannot be fulfilled on pods/binding "${name}": pod ${name} is already assigned to node "${spec.nodeName}"`));
      }
      const st = isObj(current.status) ? current.status : {};
      const conditions = Array.isArray(st.conditions) ? st.conditions : [];
      patch('Pod', namespace, name, {
        spec: { nodeName: target.name },
        status: { conditions: [...conditions, { type: 'PodScheduled', status: 'True' }] },
        ...(isObj(bm.annotations) ? { metadata: { annotations: bm.annotations } } : {}),
      });
      return sendJson(res, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
    }
    if (sub === 'eviction' && kind === 'Pod' && method === 'POST') return evict(res, namespace ?? 'default', name, current, body);
    if (sub !== undefined) return sendJson(res, 404, status(404, 'NotFound', `unknown subresource ${sub}`));
    if (current === undefined) return sendJson(res, 404, status(404, 'NotFound', `${m[2]} "${name}" not found`));
    if (method === 'GET') return sendJson(res, 200, current);
    if (method === 'PATCH') {
      // kube-apiserver accepts several patch types; the relay must send merge patches, so only those (and
      // strategic merge, which equals merge patch for the maps used here) are accepted.
      const ct = (contentType ?? '').split(';')[0]?.trim();
      if (ct !== 'application/merge-patch+json' && ct !== 'application/strategic-merge-patch+json') {
        return sendJson(res, 415, status(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json (got ${ct})`));
      }
      // Preconditions, as kube-apiserver applies them: a uid or resourceVersion in the patch must match the object.
      const pm = isObj(body) && isObj(body.metadata) ? body.metadata : {};
      if (pm.uid !== undefined && pm.uid !== meta(current).uid) {
        return sendJson(res, 409, status(409, 'Conflict', `Operation cannot be fulfilled on ${m[2]} "${name}": Precondition failed: UID in precondition: ${String(pm.uid)}, UID in object meta: ${String(meta(current).uid)}`));
      }
      if (pm.resourceVersion !== undefined && pm.resourceVersion !== meta(current).resourceVersion) {
        return sendJson(res, 409, status(409, 'Conflict', `Operation cannot be fulfilled on ${m[2]} "${name}": the object has been modified; please apply your changes to the latest version and try again`));
      }
      return sendJson(res, 200, patch(kind, namespace, name, body));
    }
    if (method === 'PUT' && CLIENT_WRITABLE.has(kind)) {
      // Optimistic concurrency: a replace naming an older resourceVersion is refused, as kube-apiserver does.
      const obj = isObj(body) ? (body as Obj) : {};
      const sent = meta(obj).resourceVersion;
      if (sent !== undefined && sent !== '' && sent !== meta(current).resourceVersion) {
        return sendJson(res, 409, status(409, 'Conflict', `Operation cannot be fulfilled on ${m[2]} "${name}": the object has been modified; please apply your changes to the latest version and try again`));
      }
      const next = clone(obj);
      meta(next).name = name;
      if (NAMESPACED[kind]) meta(next).namespace = namespace;
      meta(next).uid = meta(current).uid;
      meta(next).creationTimestamp = meta(current).creationTimestamp;
      return sendJson(res, 200, replace(kind, keyOf(kind, namespace, name), next));
    }
    if (method === 'DELETE') {
      remove(kind, namespace, name);
      return sendJson(res, 200, current);
    }
    return sendJson(res, 405, status(405, 'MethodNotAllowed', `${method} not supported`));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, status(500, 'InternalError', err instanceof Error ? err.message : String(err)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    kubeConfig(token = 'relay-token') {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'fake', server: url, skipTLSVerify: true }],
        users: [{ name: 'relay', token }],
        contexts: [{ name: 'fake', cluster: 'fake', user: 'relay' }],
        currentContext: 'fake',
      });
      return kc;
    },
    create,
    update(kind, obj) {
      const m = meta(obj);
      const key = keyOf(kind, m.namespace as string | undefined, String(m.name));
      const current = store.get(kind)!.get(key);
      if (current === undefined) throw new Error(`${kind} ${key} not found`);
      const next = clone(obj);
      meta(next).uid = meta(current).uid;
      if (NAMESPACED[kind]) meta(next).namespace ??= 'default';
      return replace(kind, key, next);
    },
    patch,
    remove,
    get,
    list: (kind) => [...store.get(kind)!.values()].map(clone),
    compact() {
      // Watching from the current version stays possible (a fresh list returns it); anything older is gone.
      compactedBelow = rv;
      history.length = 0;
    },
    sendBookmarks() {
      for (const w of watches) {
        if (w.bookmarks) w.res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { kind: w.kind, apiVersion: 'v1', metadata: { resourceVersion: String(rv) } } })}\n`);
      }
    },
    closeWatches() {
      for (const w of watches) w.res.end();
    },
    openWatches: (kind) => [...watches].filter((w) => kind === undefined || w.kind === kind).length,
    failNext(method, pathPattern, code, times = 1) {
      failures.push({ method, pathPattern, status: code, remaining: times });
    },
    addUser: (token, user) => void users.set(token, user),
    grant: (g) => void grants.push(g),
    serveService: (namespace, service, upstream) => void services.set(`${namespace}/${service}`, upstream.replace(/\/+$/, '')),
    requests,
    writes: () => requests.filter((r) => r.method !== 'GET'),
    resourceVersion: () => rv,
    async close() {
      for (const w of watches) w.res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
