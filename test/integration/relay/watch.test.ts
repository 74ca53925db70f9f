/**
 * Watch forwarding over real HTTP: informers on the fake API server, batches to the fake control plane.
 */
import { startFakeKube, type FakeKube } from '../../support/fakeKube';
import { eventually, gatedDelay, gpuNode, gpuPod, plainPod, startFakeControlPlane, startTestRelay, type FakeControlPlane } from './harness';
import type { RunningRelay } from '../../../lib/relay/relay';

interface Forwarded {
  type: string;
  object: { kind: string; apiVersion: string; metadata: { name: string; namespace?: string; managedFields?: unknown; annotations?: Record<string, string>; labels?: Record<string, string> } };
}

let kube: FakeKube;
let cp: FakeControlPlane;
let relay: RunningRelay | undefined;

beforeEach(async () => {
  kube = await startFakeKube({ requiredToken: 'relay-token' });
  cp = await startFakeControlPlane();
});

afterEach(async () => {
  await relay?.close();
  relay = undefined;
  await cp.close();
  await kube.close();
});

function forwarded(): Forwarded[] {
  return cp.callsTo('/cluster/events').flatMap((c) => (c.body as { events: Forwarded[] }).events);
}

const summary = (f: Forwarded) => `${f.type} ${f.object.kind} ${f.object.metadata.namespace ? `${f.object.metadata.namespace}/` : ''}${f.object.metadata.name}`;

describe('watch forwarding', () => {
  it('lists at start and forwards GPU nodes, GPU pods and quotas with kind/apiVersion and without managedFields', async () => {
    // Prepare
    kube.create('Node', gpuNode('node-1'));
    kube.create('Pod', gpuPod('gpu-a'));
    kube.create('Pod', plainPod('web'));
    kube.create('Pod', { ...plainPod('placed'), metadata: { name: 'placed', namespace: 'team-a', annotations: { 'hami.io/vgpu-node': 'node-1' } } });
    kube.create('ResourceQuota', { metadata: { name: 'gpu', namespace: 'team-a' }, spec: { hard: { 'limits.nvidia.com/gpumem': '30000' } } });

    // Act
    relay = await startTestRelay(kube, cp.url);

    // Assess
    await eventually(() => expect(forwarded().map(summary).sort()).toEqual(['ADDED Node node-1', 'ADDED Pod team-a/gpu-a', 'ADDED Pod team-a/placed', 'ADDED ResourceQuota team-a/gpu']));
    for (const f of forwarded()) {
      expect(f.object.apiVersion).toBe('v1');
      expect(f.object.metadata.managedFields).toBeUndefined();
    }
    const node = forwarded().find((f) => f.object.kind === 'Node');
    expect(node?.object.metadata.annotations?.['hami.io/node-nvidia-register']).toContain('GPU-0');
    // Timestamps from the (deserialized) list come back as RFC 3339 strings.
    expect(JSON.stringify(node)).toMatch(/"creationTimestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"/);
  });

  it('forwards relevant node changes but not heartbeats, GPU pod deletion but not plain pods', async () => {
    // Prepare
    kube.create('Node', gpuNode('node-1'));
    relay = await startTestRelay(kube, cp.url);
    await eventually(() => expect(forwarded()).toHaveLength(1));
    await eventually(() => expect(kube.openWatches()).toBe(3));

    // Act
    kube.patch('Node', undefined, 'node-1', { status: { conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: '2025-05-01T10:01:00Z' }] } });
    kube.patch('Node', undefined, 'node-1', { metadata: { labels: { gpu: 'off' } } });
    kube.create('Pod', plainPod('web'));
    kube.create('Pod', gpuPod('gpu-b'));
    kube.patch('Pod', 'team-a', 'gpu-b', { status: { conditions: [{ type: 'Ready', status: 'False' }] } });
    kube.patch('Pod', 'team-a', 'gpu-b', { status: { phase: 'Running' } });
    kube.remove('Pod', 'team-a', 'web');
    kube.remove('Pod', 'team-a', 'gpu-b');

    // Assess
    await eventually(() =>
      expect(forwarded().map(summary)).toEqual(['ADDED Node node-1', 'MODIFIED Node node-1', 'ADDED Pod team-a/gpu-b', 'MODIFIED Pod team-a/gpu-b', 'DELETED Pod team-a/gpu-b']),
    );
    expect(forwarded()[1]?.object.metadata.labels?.gpu).toBe('off');
  });

  it('asks for bookmarks and a server-side timeout on every watch', async () => {
    relay = await startTestRelay(kube, cp.url, { env: { RELAY_WATCH_TIMEOUT_SECONDS: '120' } });
    await eventually(() => expect(kube.openWatches()).toBe(3));
    const watches = kube.requests.filter((r) => r.query.watch === 'true');
    expect(watches.map((w) => w.path).sort()).toEqual(['/api/v1/nodes', '/api/v1/pods', '/api/v1/resourcequotas']);
    for (const w of watches) expect(w.query).toEqual(expect.objectContaining({ allowWatchBookmarks: 'true', timeoutSeconds: '120' }));
    // A bookmark moves the resource version forward: the next watch starts from it.
    kube.create('Node', { metadata: { name: 'cpu-only' } });
    kube.sendBookmarks();
    const rvAtBookmark = String(kube.resourceVersion());
    kube.closeWatches();
    await eventually(() => expect(kube.requests.some((r) => r.path === '/api/v1/pods' && r.query.watch === 'true' && r.query.resourceVersion === rvAtBookmark)).toBe(true));
  });

  it('restarts a failed watch with exponential backoff, then relists after 410 Gone and converges', async () => {
    // Prepare
    kube.create('Pod', gpuPod('gpu-old'));
    const gate = gatedDelay();
    relay = await startTestRelay(kube, cp.url, { watcherDelay: gate.delay, env: { RELAY_BACKOFF_INITIAL_MS: '100' } });
    await eventually(() => expect(forwarded().map(summary)).toEqual(['ADDED Pod team-a/gpu-old']));
    await eventually(() => expect(kube.openWatches('Pod')).toBe(1));

    // Act 1: the pod watch breaks and re-watching fails (500) twice
    kube.failNext('GET', /^\/api\/v1\/pods$/, 500, 2);
    kube.closeWatches();
    await eventually(() => expect(gate.requested).toEqual([100]));
    gate.release();
    await eventually(() => expect(gate.requested).toEqual([100, 200]));

    // Meanwhile the cluster changes and the API server compacts its history.
    kube.remove('Pod', 'team-a', 'gpu-old');
    kube.create('Pod', gpuPod('gpu-new'));
    kube.compact();
    gate.release();

    // Assess: the watch from the old resourceVersion gets 410, the informer relists and the ledger converges.
    await eventually(() =>
      expect(forwarded().map(summary)).toEqual(['ADDED Pod team-a/gpu-old', 'DELETED Pod team-a/gpu-old', 'ADDED Pod team-a/gpu-new']),
    );
    expect(kube.requests.filter((r) => r.path === '/api/v1/pods' && r.query.watch === undefined)).toHaveLength(2);
    expect(relay.watcher.status().resources.find((r) => r.kind === 'Pod')?.failures).toBe(0);
  });

  it('relists from the informer caches: re-sends every relevant object as MODIFIED without asking the API server', async () => {
    // Prepare
    kube.create('Node', gpuNode('node-1'));
    kube.create('Pod', gpuPod('gpu-a'));
    kube.create('Pod', plainPod('web'));
    relay = await startTestRelay(kube, cp.url);
    await eventually(() => expect(forwarded()).toHaveLength(2));
    kube.create('Pod', gpuPod('gpu-b'));
    kube.remove('Pod', 'team-a', 'gpu-a');
    await eventually(() => expect(forwarded()).toHaveLength(4));
    const requestsBefore = kube.requests.length;

    // Act
    await relay.watcher.relist();
    await relay.forwarder.idle();

    // Assess: what the watch showed (gpu-a deleted, gpu-b added), replayed; plain pods stay unforwarded
    expect(forwarded().slice(4).map(summary).sort()).toEqual(['MODIFIED Node node-1', 'MODIFIED Pod team-a/gpu-b']);
    expect(kube.requests.slice(requestsBefore)).toEqual([]);
  });
});

describe('batching and retry', () => {
  it('sends events in size-bounded batches and retries a failing control plane with backoff, in order', async () => {
    // Prepare: 5 GPU pods, batches of 2, the control plane fails twice first
    for (let i = 0; i < 5; i++) kube.create('Pod', gpuPod(`gpu-${i}`));
    let failuresLeft = 2;
    cp.on('POST', '/cluster/events', (call) => {
      if (failuresLeft-- > 0) return { status: 503, body: { message: 'busy' } };
      const n = (call.body as { events: unknown[] }).events.length;
      return { body: { accepted: n, rejected: [] } };
    });
    const gate = gatedDelay();

    // Act
    relay = await startTestRelay(kube, cp.url, { forwarderDelay: gate.delay, env: { RELAY_BATCH_MAX_EVENTS: '2', RELAY_BACKOFF_INITIAL_MS: '50' } });
    await eventually(() => expect(gate.requested).toEqual([50]));
    gate.release();
    await eventually(() => expect(gate.requested).toEqual([50, 100]));
    gate.release();
    await eventually(() => expect(relay?.forwarder.stats().accepted).toBe(5));

    // Assess
    const sizes = cp.callsTo('/cluster/events').map((c) => (c.body as { events: unknown[] }).events.length);
    expect(sizes).toEqual([2, 2, 2, 2, 1]);
    // The first batch was sent three times (two failures); delivery order is the list order.
    expect(forwarded().slice(4).map((f) => f.object.metadata.name)).toEqual(['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3', 'gpu-4']);
    expect(relay.forwarder.stats().failedAttempts).toBe(2);
  });
});
