/**
 * What the control plane's routes accept at their edges, over real HTTP against the local server (docs/api.md §2):
 * namespaces and pod names as Kubernetes' own rules, the headers every answer carries, and the bearer scheme in any
 * letter case (RFC 7235).
 */
import { card, forwardedPod, gpuNode, gpuPod } from '../../support/cluster';
import { useControlPlane } from '../../support/controlPlaneRig';

const controlPlane = useControlPlane({ per: 'suite', nodes: [gpuNode('node1', [card('GPU-1')])] });
const { api } = controlPlane;

const segment = (value: string) => encodeURIComponent(value);

/** Names Kubernetes refuses for a namespace (a DNS-1123 label), each with why. */
const badNamespaces: [string, string][] = [
  ['-bad-', 'starts and ends with "-"'],
  ['bad-', 'ends with "-"'],
  ['UPPER', 'upper case'],
  ['a_b', 'an underscore'],
  ['é', 'not ASCII'],
  ['a.b', 'a dot (labels have none)'],
  ['a'.repeat(64), '64 characters'],
];
const goodNamespaces = ['default', 'team-a', '0abc', 'a', 'a'.repeat(63)];

/** Names Kubernetes refuses for a pod (a DNS-1123 subdomain). */
const badPodNames: [string, string][] = [
  ['-bad-', 'starts with "-"'],
  ['UPPER', 'upper case'],
  ['a_b', 'an underscore'],
  ['é', 'not ASCII'],
  ['a..b', 'an empty label'],
  ['a.', 'ends with "."'],
  ['a'.repeat(254), '254 characters'],
];
const goodPodNames = ['train-0', 'web.v2-abc12', 'a'.repeat(253)];

describe('namespaces and pod names follow Kubernetes’ rules', () => {
  it.each(badNamespaces)('namespace %j (%s) is a 400 naming the namespace, on both namespaced routes', async (namespace) => {
    for (const path of [`/api/v1/namespaces/${segment(namespace)}/pods/p/schedulerlog`, `/api/v1/namespaces/${segment(namespace)}/schedulerlogs`]) {
      const res = await api.call('GET', path);
      expect(res.status).toBe(400);
      expect(res.json).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest', message: expect.stringMatching(/^invalid namespace ".+": (.*RFC 1123 label|.*at most 63)/) });
      expect(res.json.message).toContain(JSON.stringify(namespace.slice(0, 80)).slice(1, -1));
    }
  });

  it.each(goodNamespaces)('namespace %j is accepted', async (namespace) => {
    expect((await api.call('GET', `/api/v1/namespaces/${segment(namespace)}/pods/p/schedulerlog`)).status).toBe(404);
    expect((await api.call('GET', `/api/v1/namespaces/${segment(namespace)}/schedulerlogs`)).status).toBe(200);
  });

  it.each(badPodNames)('pod name %j (%s) is a 400 naming the pod name', async (name) => {
    const res = await api.call('GET', `/api/v1/namespaces/default/pods/${segment(name)}/schedulerlog`);
    expect(res.status).toBe(400);
    expect(res.json.message).toMatch(/^invalid pod name ".+": .*(RFC 1123 subdomain|at most 253)/);
  });

  it.each(goodPodNames)('pod name %j is accepted', async (name) => {
    expect((await api.call('GET', `/api/v1/namespaces/default/pods/${segment(name)}/schedulerlog`)).status).toBe(404);
  });

  it('extender bodies name the field Kubernetes would refuse', async () => {
    const upper = gpuPod('p', [{ name: 'c', gpu: 1, mem: 100 }], { namespace: 'UPPER' });
    const filtered = await api.filter(upper, ['node1']);
    expect(filtered.status).toBe(200);
    expect(filtered.json.Error).toMatch(/^invalid ExtenderArgs: pod\.metadata\.namespace: .*RFC 1123 label/);
    const underscore = gpuPod('a_b', [{ name: 'c', gpu: 1, mem: 100 }]);
    expect((await api.filter(underscore, ['node1'])).json.Error).toMatch(/^invalid ExtenderArgs: pod\.metadata\.name: .*RFC 1123 subdomain/);
    const bind = await api.call('POST', '/bind', { PodName: 'p', PodNamespace: '-bad-', PodUID: 'u', Node: 'node1' });
    expect(bind.json.Error).toMatch(/^invalid ExtenderBindingArgs: podnamespace: .*RFC 1123 label/);
  });

  it('a cluster event naming a namespace Kubernetes would refuse is rejected on its own', async () => {
    const bad = forwardedPod(gpuPod('p', [{ name: 'c', gpu: 1 }], { namespace: 'a_b' }), {});
    const good = forwardedPod(gpuPod('q', [{ name: 'c', gpu: 1 }], { namespace: 'team-a' }), {});
    const res = await api.events([{ type: 'ADDED', object: bad }, { type: 'ADDED', object: good }]);
    expect(res.json.accepted).toBe(1);
    expect(res.json.rejected).toEqual([{ index: 0, error: expect.stringMatching(/^object\.metadata\.namespace: .*RFC 1123 label/) }]);
  });
});

describe('answers’ headers', () => {
  it.each<[string, string, string, number]>([
    ['a JSON answer', 'GET', '/api/v1/nodes/node1/devices', 200],
    ['a list', 'GET', '/api/v1/nodes', 200],
    ['an extender answer', 'POST', '/filter', 200],
    ['an error', 'GET', '/api/v1/nodes/nowhere/devices', 404],
    ['an unknown path', 'GET', '/nothing/here', 404],
    ['a wrong method', 'DELETE', '/filter', 405],
    ['the health check', 'GET', '/healthz', 200],
  ])('%s carries nosniff and no-store', async (_label, method, path, status) => {
    const res = await fetch(`${controlPlane.server.url}${path}`, { method, ...(method === 'POST' ? { body: '{}' } : {}) });
    await res.text();
    expect(res.status).toBe(status);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });
});

describe('the bearer scheme, in any letter case', () => {
  const TOKEN = 'correct-horse-battery';
  const guarded = useControlPlane({ per: 'suite', token: TOKEN });

  const status = async (authorization: string | undefined) => {
    const res = await fetch(`${guarded.server.url}/api/v1/nodes`, { headers: authorization === undefined ? {} : { authorization } });
    const body = (await res.json()) as { reason?: string };
    return { status: res.status, body, nosniff: res.headers.get('x-content-type-options') };
  };

  it.each([`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `BEARER ${TOKEN}`, `bEaReR ${TOKEN}`, `Bearer  ${TOKEN}`])('accepts %j', async (authorization) => {
    expect((await status(authorization)).status).toBe(200);
  });

  it.each([undefined, `Basic ${TOKEN}`, `Bearer${TOKEN}`, 'Bearer', 'Bearer wrong-token-value', `Bearer ${TOKEN}x`, TOKEN])('refuses %j with a 401 Status', async (authorization) => {
    const answer = await status(authorization);
    expect(answer.status).toBe(401);
    expect(answer.body.reason).toBe('Unauthorized');
    expect(answer.nosniff).toBe('nosniff');
  });
});
