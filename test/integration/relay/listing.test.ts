/**
 * The relay's user port serves the console and the listing routes (docs/api.md §10, §11) under the scheduler
 * log's rules: TokenReview, then SubjectAccessReview; `list nodes` for the overview, `get pods` per namespace. No
 * answer names a pod of a namespace the caller may not read, no continue token tells anything of one, and tokens
 * nobody knows cost a bounded number of TokenReviews.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { useRelayOnFakeControlPlane } from '../../support/relayRig';
import { gpuPod, recordingLogger, type RecordedCall, type Responder } from './harness';

let logger: ReturnType<typeof recordingLogger>;

const ADMIN = 'admin-token-5a1e';
const ALICE = 'alice-token-77b0';
const NOBODY = 'nobody-token-0c3d';
/** May list nodes, and nothing else. */
const VIEWER = 'viewer-token-3f9a';
/** May list nodes and get pods in team-a. */
const TEAM_A_VIEWER = 'team-a-viewer-token-61c2';

const summary = (namespace: string, name: string) => ({ pod: { namespace, name, uid: `u-${name}` }, status: 'pending' });

const digest = (text: string) => createHash('sha256').update(text).digest();
/** Where the control plane keeps a pod's summary (lib/store/recordStore.ts): hashes of namespace and name. */
const storePosition = (namespace: string, name: string) =>
  `${(digest(namespace)[0] ?? 0) % 16}:${digest(namespace).subarray(0, 16).toString('base64url')}#${digest(name).subarray(0, 16).toString('base64url')}`;
/** The control plane's continue token (lib/control/listing.ts): base64url JSON around the store's position. */
const upstreamToken = (position: string) => Buffer.from(JSON.stringify({ v: 1, k: 'schedulerlogs', s: '', p: position }), 'utf8').toString('base64url');

/** The control plane's all-namespaces list over `pods` (`namespace/name`), paged as it pages: limit, continue. */
function pagedSummaries(pods: readonly string[]): Responder {
  const items = pods.map((ref) => summary(ref.split('/')[0] ?? '', ref.split('/')[1] ?? ''));
  const tokens = items.map((item) => upstreamToken(storePosition(item.pod.namespace, item.pod.name)));
  return (call: RecordedCall) => {
    const limit = Number(call.query.limit ?? '500');
    const from = call.query.continue === undefined ? 0 : tokens.indexOf(call.query.continue) + 1;
    if (from === 0 && call.query.continue !== undefined) return { status: 400, body: { kind: 'Status', code: 400, reason: 'BadRequest', message: 'continue token is not valid' } };
    const end = Math.min(items.length, from + limit);
    return { body: { kind: 'SchedulerLogList', apiVersion: 'v1', metadata: end < items.length ? { continue: tokens[end - 1] } : {}, items: items.slice(from, end) } };
  };
}

const rig = useRelayOnFakeControlPlane({
  per: 'test',
  prepare: ({ kube, cp }) => {
    kube.addUser(ADMIN, { username: 'admin', groups: ['ops'] });
    kube.addUser(ALICE, { username: 'alice' });
    kube.addUser(NOBODY, { username: 'nobody' });
    kube.addUser(VIEWER, { username: 'viewer' });
    kube.addUser(TEAM_A_VIEWER, { username: 'team-a-viewer' });
    kube.grant({ group: 'ops', verb: 'list', resource: 'nodes' });
    kube.grant({ group: 'ops', verb: 'get', resource: 'pods' });
    kube.grant({ user: 'alice', verb: 'get', resource: 'pods', namespace: 'team-a' });
    kube.grant({ user: 'viewer', verb: 'list', resource: 'nodes' });
    kube.grant({ user: 'team-a-viewer', verb: 'list', resource: 'nodes' });
    kube.grant({ user: 'team-a-viewer', verb: 'get', resource: 'pods', namespace: 'team-a' });
    cp.on('GET', '/api/v1/nodes', { body: { kind: 'NodeDevicesList', apiVersion: 'v1', metadata: {}, items: [{ name: 'node1', devices: [] }] } });
    cp.on('GET', '/api/v1/schedulerlogs', pagedSummaries(['team-a/a1', 'team-b/b1', 'team-a/a2']));
    cp.on('GET', '/api/v1/namespaces/team-a/schedulerlogs', { body: { kind: 'SchedulerLogList', apiVersion: 'v1', metadata: {}, items: [summary('team-a', 'a1')] } });
  },
  relay: () => {
    logger = recordingLogger();
    return { logger };
  },
});

async function getAt(base: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown>; headers: Headers; text: string }> {
  const res = await fetch(`${base}${path}`, { headers });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = {};
  }
  return { status: res.status, body, headers: res.headers, text };
}

const get = (path: string, headers: Record<string, string> = {}) => getAt(rig.relay.userUrl, path, headers);

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('GET /api/v1/nodes on the user port', () => {
  it('answers a user who may list nodes, passing limit and the continue it sealed only', async () => {
    rig.cp.on('GET', '/api/v1/nodes', (call) =>
      call.query.continue === undefined
        ? { body: { kind: 'NodeDevicesList', apiVersion: 'v1', metadata: { continue: 'cp-after-node1', remainingItemCount: 1 }, items: [{ name: 'node1', devices: [] }] } }
        : { body: { kind: 'NodeDevicesList', apiVersion: 'v1', metadata: {}, items: [{ name: 'node2', devices: [] }] } },
    );
    const first = await get('/api/v1/nodes?limit=1&token=leak', bearer(ADMIN));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ kind: 'NodeDevicesList', metadata: { remainingItemCount: 1 }, items: [{ name: 'node1', devices: [] }] });
    const token = (first.body.metadata as { continue: string }).continue;
    expect(token).not.toContain('cp-after-node1');
    const second = await get(`/api/v1/nodes?limit=1&continue=${encodeURIComponent(token)}`, bearer(ADMIN));
    expect(second.body).toMatchObject({ metadata: {}, items: [{ name: 'node2', devices: [] }] });
    expect(rig.cp.callsTo('/api/v1/nodes').map((c) => c.query)).toEqual([{ limit: '1' }, { limit: '1', continue: 'cp-after-node1' }]);
  });

  it('refuses a user who may not list nodes with 403 and kube-apiserver wording, without asking the control plane', async () => {
    const answer = await get('/api/v1/nodes', bearer(ALICE));
    expect(answer.status).toBe(403);
    expect(answer.body).toMatchObject({ kind: 'Status', reason: 'Forbidden', message: 'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope' });
    expect(rig.cp.callsTo('/api/v1/nodes')).toHaveLength(0);
    expect(logger.lines.filter((l) => l.message === 'UserRequestForbidden').map((l) => l.fields[0])).toEqual([{ user: 'alice', verb: 'list', resource: 'nodes' }]);
  });

  it('accepts the token in X-Hami-Authorization, where kubectl hami ui puts it, with the same checks', async () => {
    expect((await get('/api/v1/nodes', { 'x-hami-authorization': `Bearer ${ADMIN}` })).status).toBe(200);
    expect((await get('/api/v1/nodes', { 'x-hami-authorization': `Bearer ${NOBODY}` })).status).toBe(403);
    expect((await get('/api/v1/nodes', { 'x-hami-authorization': 'Bearer forged' })).status).toBe(401);
    expect(logger.text()).not.toMatch(new RegExp(`${ADMIN}|${NOBODY}`));
  });

  it('matches the bearer scheme whatever its case (RFC 7235)', async () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) expect((await get('/api/v1/nodes', { authorization: `${scheme} ${ADMIN}` })).status).toBe(200);
    expect((await get('/api/v1/nodes', { authorization: `Basic ${ADMIN}` })).status).toBe(401);
  });

  it("shows a card's pods only to callers who may read their namespace; others see the usage and how many are hidden", async () => {
    const node = {
      name: 'node1',
      registered: true,
      lock: { holder: 'team-b/b-binding', since: '2025-05-01T10:00:00Z', ageSeconds: 2, expires: '2025-05-01T10:05:00Z' },
      devices: [
        { id: 'GPU-0', index: 0, used: 3, usedmem: 9000, usedcores: 30, freemem: 7384, pods: ['team-a/a1', 'team-b/b-secret-1', 'team-b/b-secret-2'] },
        { id: 'GPU-1', index: 1, used: 1, usedmem: 1000, usedcores: 0, freemem: 15384, pods: ['team-b/b-secret-3'], mig: { profiles: [], inUse: [{ start: 0, size: 1, pod: 'team-b/b-secret-3' }] } },
      ],
    };
    rig.cp.on('GET', '/api/v1/nodes', { body: { kind: 'NodeDevicesList', apiVersion: 'v1', metadata: {}, items: [node] } });

    const viewer = await get('/api/v1/nodes', bearer(VIEWER));
    expect(viewer.status).toBe(200);
    expect(viewer.text).not.toMatch(/team-a|team-b|b-secret|b-binding|a1/);
    expect(viewer.body.items).toEqual([
      {
        name: 'node1',
        registered: true,
        lock: { since: '2025-05-01T10:00:00Z', ageSeconds: 2, expires: '2025-05-01T10:05:00Z', holderHidden: true },
        devices: [
          { id: 'GPU-0', index: 0, used: 3, usedmem: 9000, usedcores: 30, freemem: 7384, pods: [], hiddenPods: 3 },
          { id: 'GPU-1', index: 1, used: 1, usedmem: 1000, usedcores: 0, freemem: 15384, pods: [], hiddenPods: 1, mig: { profiles: [], inUse: [{ start: 0, size: 1, podHidden: true }] } },
        ],
      },
    ]);

    const teamA = await get('/api/v1/nodes', bearer(TEAM_A_VIEWER));
    expect(teamA.text).not.toMatch(/team-b|b-secret|b-binding/);
    expect((teamA.body.items as { devices: unknown[] }[])[0]?.devices[0]).toMatchObject({ pods: ['team-a/a1'], hiddenPods: 2 });

    expect((await get('/api/v1/nodes', bearer(ADMIN))).body.items).toEqual([node]);
    // Reviews that only decide what an answer shows refuse no request: nothing logged as forbidden.
    expect(logger.lines.filter((l) => l.message === 'UserRequestForbidden')).toEqual([]);
  });

  it('answers 500 and names nothing when a review of a namespace cannot be made', async () => {
    const page = (pods: string[]) => ({ body: { kind: 'NodeDevicesList', apiVersion: 'v1', metadata: {}, items: [{ name: 'node1', devices: [{ id: 'GPU-0', pods }] }] } });
    rig.cp.on('GET', '/api/v1/nodes', page(['team-a/a1']));
    expect((await get('/api/v1/nodes', bearer(VIEWER))).status).toBe(200);
    // The reviews of list nodes and of the cluster scope are kept: the next one asked is team-c's.
    rig.cp.on('GET', '/api/v1/nodes', page(['team-c/c-secret']));
    rig.kube.failNext('POST', /subjectaccessreviews$/, 500, 1);
    const answer = await get('/api/v1/nodes', bearer(VIEWER));
    expect(answer.status).toBe(500);
    expect(answer.body).toMatchObject({ kind: 'Status', reason: 'InternalError', message: 'could not check access' });
    expect(answer.text).not.toContain('team-c');
    expect((await get('/api/v1/nodes', bearer(VIEWER))).body.items).toEqual([{ name: 'node1', devices: [{ id: 'GPU-0', pods: [], hiddenPods: 1 }] }]);
  });
});

describe('JSON answers of the user port', () => {
  it('are never sniffed as another type nor kept by a cache, whatever their status', async () => {
    for (const [path, headers] of [['/api/v1/nodes', bearer(ADMIN)], ['/api/v1/nodes', {}], ['/api/v1/nowhere', {}], ['/healthz', {}]] as const) {
      const answer = await get(path, headers);
      expect(answer.headers.get('content-type')).toBe('application/json');
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
      expect(answer.headers.get('cache-control')).toBe('no-store');
    }
  });
});

describe('scheduler-log listings on the user port', () => {
  it("lists a namespace for a user who may get pods there, and refuses another's", async () => {
    expect((await get('/api/v1/namespaces/team-a/schedulerlogs', bearer(ALICE))).body.items).toEqual([summary('team-a', 'a1')]);
    const other = await get('/api/v1/namespaces/team-b/schedulerlogs', bearer(ALICE));
    expect(other.status).toBe(403);
    expect(other.body.message).toBe('pods is forbidden: User "alice" cannot get resource "pods" in API group "" in the namespace "team-b"');
  });

  it('answers a path segment that is not percent-encoding with 400 and says why, for lists and scheduler logs alike', async () => {
    for (const path of ['/api/v1/namespaces/%E0/schedulerlogs', '/api/v1/namespaces/team-a/pods/%ZZ/schedulerlog']) {
      const answer = await get(path, bearer(ADMIN));
      expect(answer.status).toBe(400);
      expect(answer.body).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest' });
      expect(answer.body.message).toContain('is not valid percent-encoding');
    }
  });

  it('answers a limit the control plane would refuse with its 400', async () => {
    for (const limit of ['0', '1001', 'ten']) {
      const answer = await get(`/api/v1/schedulerlogs?limit=${limit}`, bearer(ALICE));
      expect(answer.status).toBe(400);
      expect(answer.body.message).toBe('limit must be a whole number from 1 to 1000');
    }
  });

  it("gives the control plane's pages to a user who may get pods everywhere, with sealed tokens", async () => {
    const first = await get('/api/v1/schedulerlogs?limit=2', bearer(ADMIN));
    expect(first.body).toMatchObject({ kind: 'SchedulerLogList', items: [summary('team-a', 'a1'), summary('team-b', 'b1')] });
    const token = (first.body.metadata as { continue: string }).continue;
    expect(token).not.toContain(upstreamToken(storePosition('team-b', 'b1')));
    const second = await get(`/api/v1/schedulerlogs?limit=2&continue=${encodeURIComponent(token)}`, bearer(ADMIN));
    expect(second.body).toEqual({ kind: 'SchedulerLogList', apiVersion: 'v1', metadata: {}, items: [summary('team-a', 'a2')] });
    expect(rig.cp.callsTo('/api/v1/schedulerlogs').map((c) => c.query)).toEqual([{ limit: '2' }, { limit: '2', continue: upstreamToken(storePosition('team-b', 'b1')) }]);
  });

  it('keeps only the items of namespaces where the user may get pods', async () => {
    const answer = await get('/api/v1/schedulerlogs?limit=3', bearer(ALICE));
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ kind: 'SchedulerLogList', apiVersion: 'v1', metadata: {}, items: [summary('team-a', 'a1'), summary('team-a', 'a2')] });
    expect(answer.text).not.toContain('team-b');
    // One review for the cluster scope, then one per namespace met.
    const namespaces = rig.kube.requests
      .filter((r) => r.path.endsWith('/subjectaccessreviews'))
      .map((r) => (r.body as { spec: { resourceAttributes: { namespace?: string } } }).spec.resourceAttributes.namespace ?? '*');
    expect(namespaces).toEqual(['*', 'team-a', 'team-b']);
  });

  it('reuses the reviews of a user who asks again within seconds (the console polls): one TokenReview, one review per question', async () => {
    const reviews = () => rig.kube.requests.filter((r) => r.path.endsWith('/tokenreviews') || r.path.endsWith('/subjectaccessreviews')).length;
    await get('/api/v1/schedulerlogs?limit=3', bearer(ALICE));
    // A TokenReview, the cluster scope, then team-a and team-b.
    expect(reviews()).toBe(4);
    const again = await get('/api/v1/schedulerlogs?limit=3', bearer(ALICE));
    expect(again.body).toMatchObject({ items: [summary('team-a', 'a1'), summary('team-a', 'a2')] });
    expect(reviews()).toBe(4);
  });

  it('gives a user without any rights an empty page, and no one without a token anything', async () => {
    expect((await get('/api/v1/schedulerlogs', bearer(NOBODY))).body).toEqual({ kind: 'SchedulerLogList', apiVersion: 'v1', metadata: {}, items: [] });
    expect((await get('/api/v1/schedulerlogs')).status).toBe(401);
  });
});

describe('continue tokens of the all-namespaces list', () => {
  /** Team-a's three pods, alone or among many of team-b's. */
  const alone = ['team-a/a1', 'team-a/a2', 'team-a/a3'];
  const among = [
    ...Array.from({ length: 7 }, (_, i) => `team-b/hidden-${i}`),
    'team-a/a1',
    ...Array.from({ length: 1200 }, (_, i) => `team-b/more-${i}`),
    'team-a/a2',
    'team-a/a3',
    ...Array.from({ length: 1040 }, (_, i) => `team-b/last-${i}`),
  ];

  /** Every page a caller gets with `limit`, following the tokens. */
  async function allPages(token: string, limit: number): Promise<{ items: string[]; continue?: string }[]> {
    const pages: { items: string[]; continue?: string }[] = [];
    let next: string | undefined;
    do {
      const answer = await get(`/api/v1/schedulerlogs?limit=${limit}${next !== undefined ? `&continue=${encodeURIComponent(next)}` : ''}`, bearer(token));
      expect(answer.status).toBe(200);
      const body = answer.body as { items: { pod: { namespace: string; name: string } }[]; metadata: { continue?: string } };
      next = body.metadata.continue;
      pages.push({ items: body.items.map((i) => `${i.pod.namespace}/${i.pod.name}`), ...(next !== undefined ? { continue: next } : {}) });
    } while (next !== undefined && pages.length < 20);
    return pages;
  }

  /** What a token shows whoever decodes it: its bytes, as text. */
  const decoded = (token: string) => Buffer.from(token, 'base64url').toString('latin1');

  it('pages a caller on what they may see alone: the same pages, and tokens alike, with or without hidden items', async () => {
    rig.cp.on('GET', '/api/v1/schedulerlogs', pagedSummaries(alone));
    const withoutHidden = await allPages(ALICE, 1);
    rig.cp.on('GET', '/api/v1/schedulerlogs', pagedSummaries(among));
    const withHidden = await allPages(ALICE, 1);
    const shape = (pages: { items: string[]; continue?: string }[]) => pages.map((p) => ({ items: p.items, token: p.continue === undefined ? 'none' : `${p.continue.length} characters` }));
    expect(shape(withHidden)).toEqual(shape(withoutHidden));
    expect(shape(withHidden).map((p) => p.items)).toEqual([['team-a/a1'], ['team-a/a2'], ['team-a/a3']]);

    const hiddenNames = among.filter((ref) => ref.startsWith('team-b/'));
    for (const { continue: token } of withHidden) {
      const text = `${token} ${decoded(token ?? '')}`;
      expect(text).not.toContain('team-b');
      expect(text).not.toContain(digest('team-b').subarray(0, 16).toString('base64url'));
      expect(text).not.toContain(digest('team-b').toString('hex').slice(0, 16));
      for (const ref of hiddenNames) expect(text).not.toContain(upstreamToken(storePosition('team-b', ref.split('/')[1] ?? '')));
      // Nor the bytes of the hash.
      expect(Buffer.from(token ?? '', 'base64url').includes(digest('team-b').subarray(0, 6))).toBe(false);
    }
  });

  it('gives a caller who may read nothing one empty page without a token, however many items there are', async () => {
    rig.cp.on('GET', '/api/v1/schedulerlogs', pagedSummaries(among));
    expect(await allPages(NOBODY, 1)).toEqual([{ items: [] }]);
  });

  it("refuses a changed token and another list's with 400, and one sealed by another relay with 410", async () => {
    rig.cp.on('GET', '/api/v1/schedulerlogs', pagedSummaries(among));
    const [first] = await allPages(ALICE, 1);
    const token = first?.continue ?? '';
    const changedAt = 60;
    const changed = `${token.slice(0, changedAt)}${token[changedAt] === 'A' ? 'B' : 'A'}${token.slice(changedAt + 1)}`;
    const tampered = await get(`/api/v1/schedulerlogs?limit=1&continue=${changed}`, bearer(ALICE));
    expect(tampered.status).toBe(400);
    expect(tampered.body).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest', message: 'continue token is not valid: pass the metadata.continue of the previous page unchanged' });

    const otherList = await get(`/api/v1/namespaces/team-a/schedulerlogs?limit=1&continue=${token}`, bearer(ALICE));
    expect(otherList.status).toBe(400);
    expect(otherList.body.message).toBe('continue token belongs to another list');

    const other = await rig.startRelay({ logger: recordingLogger() });
    try {
      const elsewhere = await getAt(other.userUrl, `/api/v1/schedulerlogs?limit=1&continue=${token}`, bearer(ALICE));
      expect(elsewhere.status).toBe(410);
      expect(elsewhere.body).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
      expect(elsewhere.body.message).toContain('start the listing again without continue');
    } finally {
      await other.close();
    }
  });
});

describe('tokens nobody knows', () => {
  /** A GET from a given loopback address (the relay tells clients apart by it). */
  function getFrom(localAddress: string, path: string, token: string): Promise<{ status: number; retryAfter: string | undefined; body: Record<string, unknown> }> {
    const url = new URL(rig.relay.userUrl);
    return new Promise((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, path, localAddress, headers: bearer(token), agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('cost a bounded number of TokenReviews per client and overall, answered 429 with Retry-After, while a signed-in user is served', async () => {
    await rig.relay.close();
    const clock = { ms: Date.parse('2025-05-01T10:00:00Z') };
    await rig.restartRelay({ logger, now: () => new Date(clock.ms), env: { RELAY_TOKEN_REVIEWS_PER_CLIENT: '5', RELAY_TOKEN_REVIEWS: '8' } });
    const tokenReviews = () => rig.kube.requests.filter((r) => r.path.endsWith('/tokenreviews')).length;
    expect((await getFrom('127.0.0.1', '/api/v1/nodes', ADMIN)).status).toBe(200);
    const before = tokenReviews();

    const flood: { status: number; retryAfter: string | undefined; body: Record<string, unknown> }[] = [];
    for (let i = 0; i < 30; i++) flood.push(await getFrom('127.0.0.1', '/api/v1/nodes', `random-${i}`));
    // The admin's first review took one of the client's five.
    expect(flood.map((a) => a.status)).toEqual([...Array.from({ length: 4 }, () => 401), ...Array.from({ length: 26 }, () => 429)]);
    expect(tokenReviews() - before).toBe(4);
    expect(flood[4]).toEqual({
      status: 429,
      retryAfter: '12',
      body: expect.objectContaining({ kind: 'Status', code: 429, reason: 'TooManyRequests', details: { retryAfterSeconds: 12 } }),
    });
    expect(flood[4]?.body.message).toBe('too many requests with bearer tokens the relay has not seen authenticate (from this client): retry after 12s');

    // Another client has its own budget, within what all share (8, 5 of them spent).
    const second = [];
    for (let i = 0; i < 5; i++) second.push(await getFrom('127.0.0.2', '/api/v1/nodes', `other-${i}`));
    expect(second.map((a) => a.status)).toEqual([401, 401, 401, 429, 429]);
    expect(second[3]?.body.message).toBe('too many requests with bearer tokens the relay has not seen authenticate (from all clients together): retry after 8s');
    expect(tokenReviews() - before).toBe(7);

    // The signed-in user is served through it all, also once their review has expired from the cache.
    expect((await getFrom('127.0.0.1', '/api/v1/nodes', ADMIN)).status).toBe(200);
    clock.ms += 11_000;
    expect((await getFrom('127.0.0.1', '/api/v1/nodes', ADMIN)).status).toBe(200);
    expect(tokenReviews() - before).toBe(8);
    expect((await getFrom('127.0.0.1', '/api/v1/nodes', 'random-late')).status).toBe(429);

    // One log line per kind and window; the next one says how many were left out.
    const lines = (message: string) => logger.lines.filter((l) => l.message === message);
    expect(lines('TokenRejected')).toHaveLength(1);
    expect(lines('TokenReviewsLimited').map((l) => (l.fields[0] as { limit: string }).limit)).toEqual(['client', 'overall']);
    clock.ms += 60_000;
    expect((await getFrom('127.0.0.1', '/api/v1/nodes', 'random-next-minute')).status).toBe(401);
    expect(lines('TokenRejected').map((l) => (l.fields[0] as { notLogged?: number }).notLogged)).toEqual([undefined, 6]);
    expect(logger.text()).not.toContain('random-');
  });
});

describe('a scheduler log on the user port', () => {
  it('names the pod holding a passed-over node only to a reader of its namespace', async () => {
    const log = {
      pod: { namespace: 'team-a', name: 'mine', uid: 'u-mine' },
      filter: { status: 'passed', summary: 'fits', nodes: [], passedOver: [{ name: 'node1', holder: 'team-b/b-allocating' }, { name: 'node2', holder: 'team-a/a-allocating' }] },
      history: [{ filter: { status: 'passed', passedOver: [{ name: 'node3', holder: 'team-b/b-earlier' }] } }],
    };
    rig.cp.on('GET', 'schedulerlog', { body: log });
    const alice = await get('/api/v1/namespaces/team-a/pods/mine/schedulerlog?history=true', bearer(ALICE));
    expect(alice.status).toBe(200);
    expect(alice.text).not.toContain('team-b');
    expect(alice.body).toEqual({
      ...log,
      filter: { ...log.filter, passedOver: [{ name: 'node1', holderHidden: true }, { name: 'node2', holder: 'team-a/a-allocating' }] },
      history: [{ filter: { status: 'passed', passedOver: [{ name: 'node3', holderHidden: true }] } }],
    });
    expect(rig.cp.callsTo('/api/v1/namespaces/team-a/pods/mine/schedulerlog').map((c) => c.query)).toEqual([{ history: 'true' }]);
    expect((await get('/api/v1/namespaces/team-a/pods/mine/schedulerlog', bearer(ADMIN))).body).toEqual(log);
  });
});

describe('a pod without a scheduling record', () => {
  it("answers the control plane's 404 with the debugging decision tree, walked with the relay's view of the cluster", async () => {
    rig.kube.create('Pod', gpuPod('waiting', 'team-a'));
    rig.cp.on('GET', 'schedulerlog', { status: 404, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'no scheduling record for pod team-a/waiting' } });
    const answer = await get('/api/v1/namespaces/team-a/pods/waiting/schedulerlog', bearer(ALICE));
    expect(answer.status).toBe(404);
    expect(answer.body).toMatchObject({
      kind: 'Status',
      message: 'no scheduling record for pod team-a/waiting',
      diagnosis: { branch: 'never-filtered', explanation: 'The pod waits for scheduling, but no filter call for it has reached the control plane.' },
    });
    expect((await get('/api/v1/namespaces/team-a/pods/ghost/schedulerlog', bearer(ALICE))).body).toMatchObject({ diagnosis: { branch: 'pod-not-found' } });
  });
});

describe('the console on the user port', () => {
  it('serves its page, script and stylesheet to anyone, with a CSP that allows no inline script', async () => {
    const page = await get('/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).not.toContain('unsafe-inline');
    expect(page.text).toContain('<script defer src="console.js"></script>');
    expect((await get('/console.js')).headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await get('/console.css')).status).toBe(200);
  });

  it('is not served on the extender port', async () => {
    const res = await fetch(`${rig.relay.extenderUrl}/`);
    expect(res.status).toBe(404);
  });
});
