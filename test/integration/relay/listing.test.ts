/**
 * The relay's user port serves the console and the listing routes (docs/api.md §10, §11) under the scheduler
 * log's rules: TokenReview, then SubjectAccessReview; `list nodes` for the overview, `get pods` per namespace.
 */
import { startFakeKube, type FakeKube } from '../../support/fakeKube';
import { gpuPod, recordingLogger, startFakeControlPlane, startTestRelay, type FakeControlPlane } from './harness';
import type { RunningRelay } from '../../../lib/relay/relay';

let kube: FakeKube;
let cp: FakeControlPlane;
let relay: RunningRelay;
let logger: ReturnType<typeof recordingLogger>;

const ADMIN = 'admin-token-5a1e';
const ALICE = 'alice-token-77b0';
const NOBODY = 'nobody-token-0c3d';

const summary = (namespace: string, name: string) => ({ pod: { namespace, name, uid: `u-${name}` }, status: 'pending' });

beforeEach(async () => {
  kube = await startFakeKube({ requiredToken: 'relay-token' });
  kube.addUser(ADMIN, { username: 'admin', groups: ['ops'] });
  kube.addUser(ALICE, { username: 'alice' });
  kube.addUser(NOBODY, { username: 'nobody' });
  kube.grant({ group: 'ops', verb: 'list', resource: 'nodes' });
  kube.grant({ group: 'ops', verb: 'get', resource: 'pods' });
  kube.grant({ user: 'alice', verb: 'get', resource: 'pods', namespace: 'team-a' });
  cp = await startFakeControlPlane();
  cp.on('GET', '/api/v1/nodes', { body: { kind: 'NodeDevicesList', apiVersion: 'v1', metadata: {}, items: [{ name: 'node1', devices: [] }] } });
  cp.on('GET', '/api/v1/schedulerlogs', {
    body: { kind: 'SchedulerLogList', apiVersion: 'v1', metadata: { continue: 'opaque-next' }, items: [summary('team-a', 'a1'), summary('team-b', 'b1'), summary('team-a', 'a2')] },
  });
  cp.on('GET', '/api/v1/namespaces/team-a/schedulerlogs', { body: { kind: 'SchedulerLogList', apiVersion: 'v1', metadata: {}, items: [summary('team-a', 'a1')] } });
  logger = recordingLogger();
  relay = await startTestRelay(kube, cp.url, { logger });
});

afterEach(async () => {
  await relay.close();
  await cp.close();
  await kube.close();
});

async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown>; headers: Headers; text: string }> {
  const res = await fetch(`${relay.userUrl}${path}`, { headers });
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = {};
  }
  return { status: res.status, body, headers: res.headers, text };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('GET /api/v1/nodes on the user port', () => {
  it('answers a user who may list nodes, passing limit and continue only', async () => {
    const answer = await get('/api/v1/nodes?limit=10&continue=abc&token=leak', bearer(ADMIN));
    expect(answer.status).toBe(200);
    expect(answer.body.items).toEqual([{ name: 'node1', devices: [] }]);
    expect(cp.callsTo('/api/v1/nodes').map((c) => c.query)).toEqual([{ limit: '10', continue: 'abc' }]);
  });

  it('refuses a user who may not list nodes with 403 and kube-apiserver wording, without asking the control plane', async () => {
    const answer = await get('/api/v1/nodes', bearer(ALICE));
    expect(answer.status).toBe(403);
    expect(answer.body).toMatchObject({ kind: 'Status', reason: 'Forbidden', message: 'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope' });
    expect(cp.callsTo('/api/v1/nodes')).toHaveLength(0);
  });

  it('accepts the token in X-Hami-Authorization, where kubectl hami ui puts it, with the same checks', async () => {
    expect((await get('/api/v1/nodes', { 'x-hami-authorization': `Bearer ${ADMIN}` })).status).toBe(200);
    expect((await get('/api/v1/nodes', { 'x-hami-authorization': `Bearer ${NOBODY}` })).status).toBe(403);
    expect((await get('/api/v1/nodes', { 'x-hami-authorization': 'Bearer forged' })).status).toBe(401);
    expect(logger.text()).not.toMatch(new RegExp(`${ADMIN}|${NOBODY}`));
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

  it('gives the all-namespaces page whole to a user who may get pods everywhere', async () => {
    const answer = await get('/api/v1/schedulerlogs?limit=3', bearer(ADMIN));
    expect(answer.body).toMatchObject({ metadata: { continue: 'opaque-next' }, items: [summary('team-a', 'a1'), summary('team-b', 'b1'), summary('team-a', 'a2')] });
  });

  it("keeps only the items of namespaces where the user may get pods, and the page's continue token", async () => {
    const answer = await get('/api/v1/schedulerlogs?limit=3', bearer(ALICE));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ metadata: { continue: 'opaque-next' }, items: [summary('team-a', 'a1'), summary('team-a', 'a2')] });
    expect(answer.text).not.toContain('team-b');
    // One review for the cluster scope, then one per namespace on the page.
    const namespaces = kube.requests
      .filter((r) => r.path.endsWith('/subjectaccessreviews'))
      .map((r) => (r.body as { spec: { resourceAttributes: { namespace?: string } } }).spec.resourceAttributes.namespace ?? '*');
    expect(namespaces).toEqual(['*', 'team-a', 'team-b']);
  });

  it('reuses the reviews of a user who asks again within seconds (the console polls): one TokenReview, one review per question', async () => {
    const reviews = () => kube.requests.filter((r) => r.path.endsWith('/tokenreviews') || r.path.endsWith('/subjectaccessreviews')).length;
    await get('/api/v1/schedulerlogs?limit=3', bearer(ALICE));
    // A TokenReview, the cluster scope, then team-a and team-b.
    expect(reviews()).toBe(4);
    const again = await get('/api/v1/schedulerlogs?limit=3', bearer(ALICE));
    expect(again.body).toMatchObject({ items: [summary('team-a', 'a1'), summary('team-a', 'a2')] });
    expect(reviews()).toBe(4);
  });

  it('gives a user without any rights an empty page, and no one without a token anything', async () => {
    expect((await get('/api/v1/schedulerlogs', bearer(NOBODY))).body.items).toEqual([]);
    expect((await get('/api/v1/schedulerlogs')).status).toBe(401);
  });
});

describe('a pod without a scheduling record', () => {
  it("answers the control plane's 404 with the debugging decision tree, walked with the relay's view of the cluster", async () => {
    kube.create('Pod', gpuPod('waiting', 'team-a'));
    cp.on('GET', 'schedulerlog', { status: 404, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'no scheduling record for pod team-a/waiting' } });
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
    const res = await fetch(`${relay.extenderUrl}/`);
    expect(res.status).toBe(404);
  });
});
