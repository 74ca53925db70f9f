/**
 * The fake API server's Eviction subresource answers as kube-apiserver does (test/support/fakeKube.ts), so the relay's
 * preemption tests stand on real behaviour: graceful deletion, PodDisruptionBudgets, preconditions, missing pods.
 */
import { startFakeKube, type FakeKube } from '../../support/fakeKube';

let kube: FakeKube;

beforeEach(async () => {
  kube = await startFakeKube();
});

afterEach(async () => {
  await kube.close();
});

async function evict(name: string, uid?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${kube.url}/api/v1/namespaces/ml/pods/${name}/eviction`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: 'ml' }, ...(uid ? { deleteOptions: { preconditions: { uid } } } : {}) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const running = (name: string, labels: Record<string, string> = {}) =>
  kube.create('Pod', { metadata: { name, namespace: 'ml', labels }, spec: { nodeName: 'n1', terminationGracePeriodSeconds: 20 }, status: { phase: 'Running' } });
const budget = (name: string, app: string, disruptionsAllowed: number) =>
  kube.create('PodDisruptionBudget', { metadata: { name, namespace: 'ml' }, spec: { selector: { matchLabels: { app } } }, status: { disruptionsAllowed, desiredHealthy: 2, currentHealthy: 2 } });

describe('fake pods/eviction', () => {
  it('201 and a graceful deletion, one disruption taken from the budget', async () => {
    const pod = running('a', { app: 'web' });
    budget('web', 'web', 1);
    expect(await evict('a', String(pod.metadata?.uid))).toMatchObject({ status: 201, body: { status: 'Success' } });
    expect(kube.get('Pod', 'ml', 'a')?.metadata).toMatchObject({ deletionTimestamp: expect.any(String), deletionGracePeriodSeconds: 20 });
    expect(kube.get('PodDisruptionBudget', 'ml', 'web')?.status).toMatchObject({ disruptionsAllowed: 0, disruptedPods: { a: expect.any(String) } });
  });

  it('429 TooManyRequests with a DisruptionBudget cause when the budget allows none; the pod stays', async () => {
    running('b', { app: 'db' });
    budget('db', 'db', 0);
    const answer = await evict('b');
    expect(answer).toMatchObject({
      status: 429,
      body: { reason: 'TooManyRequests', message: "Cannot evict pod as it would violate the pod's disruption budget.", details: { causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget db needs 2 healthy pods and has 2 currently' }] } },
    });
    expect(kube.get('Pod', 'ml', 'b')?.metadata?.deletionTimestamp).toBeUndefined();
  });

  it('500 when two budgets select the pod; a Pending pod\'s budgets are not asked', async () => {
    running('c', { app: 'db' });
    budget('db', 'db', 0);
    budget('db-too', 'db', 5);
    expect((await evict('c')).status).toBe(500);
    kube.create('Pod', { metadata: { name: 'd', namespace: 'ml', labels: { app: 'db' } }, spec: { nodeName: 'n1' }, status: { phase: 'Pending' } });
    expect((await evict('d')).status).toBe(201);
  });

  it('409 when the uid precondition differs, 404 for a missing pod, and an unbound pod goes at once', async () => {
    running('e');
    expect((await evict('e', 'another-uid')).status).toBe(409);
    expect(await evict('nobody')).toMatchObject({ status: 404, body: { reason: 'NotFound' } });
    kube.create('Pod', { metadata: { name: 'f', namespace: 'ml' }, spec: {}, status: { phase: 'Pending' } });
    expect((await evict('f')).status).toBe(201);
    expect(kube.get('Pod', 'ml', 'f')).toBeUndefined();
  });
});
