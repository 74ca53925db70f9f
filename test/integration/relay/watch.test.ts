/**
 * Watch forwarding over real HTTP: informers on the fake API server, batches to the fake control plane.
 */
import { useRelayOnFakeControlPlane } from '../../support/relayRig';
import { eventually, gatedDelay, gpuNode, gpuPod, plainPod } from './harness';

interface Forwarded {
  type: string;
  object: { kind: string; apiVersion: string; metadata: { name: string; namespace?: string; managedFields?: unknown; annotations?: Record<string, string>; labels?: Record<string, string> } };
}

const rig = useRelayOnFakeControlPlane({ per: 'test' });

function forwarded(): Forwarded[] {
  return rig.cp.callsTo('/cluster/events').flatMap((c) => (c.body as { events: Forwarded[] }).events);
}

const summary = (f: Forwarded) => `${f.type} ${f.object.kind} ${f.object.metadata.namespace ? `${f.object.metadata.namespace}/` : ''}${f.object.metadata.name}`;

describe('watch forwarding', () => {
  it('lists at start and forwards GPU nodes, GPU pods and quotas with kind/apiVersion and without managedFields', async () => {
    // Prepare
    rig.kube.create('Node', gpuNode('node-1'));
    rig.kube.create('Pod', gpuPod('gpu-a'));
    rig.kube.create('Pod', plainPod('web'));
    rig.kube.create('Pod', { ...plainPod('placed'), metadata: { name: 'placed', namespace: 'team-a', annotations: { 'hami.io/vgpu-node': 'node-1' } } });
    rig.kube.create('ResourceQuota', { metadata: { name: 'gpu', namespace: 'team-a' }, spec: { hard: { 'limits.nvidia.com/gpumem': '30000' } } });

    // Act
    await rig.startRelay();

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
    rig.kube.create('Node', gpuNode('node-1'));
    await rig.startRelay();
    await eventually(() => expect(forwarded()).toHaveLength(1));
    await eventually(() => expect(rig.kube.openWatches()).toBe(3));

    // Act
    rig.kube.patch('Node', undefined, 'node-1', { status: { conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: '2025-05-01T10:01:00Z' }] } });
    rig.kube.patch('Node', undefined, 'node-1', { metadata: { labels: { gpu: 'off' } } });
    rig.kube.create('Pod', plainPod('web'));
    rig.kube.create('Pod', gpuPod('gpu-b'));
    rig.kube.patch('Pod', 'team-a', 'gpu-b', { status: { conditions: [{ type: 'Ready', status: 'False' }] } });
    rig.kube.patch('Pod', 'team-a', 'gpu-b', { status: { phase: 'Running' } });
    rig.kube.remove('Pod', 'team-a', 'web');
    rig.kube.remove('Pod', 'team-a', 'gpu-b');

    // Assess
    await eventually(() =>
      expect(forwarded().map(summary)).toEqual(['ADDED Node node-1', 'MODIFIED Node node-1', 'ADDED Pod team-a/gpu-b', 'MODIFIED Pod team-a/gpu-b', 'DELETED Pod team-a/gpu-b']),
    );
    expect(forwarded()[1]?.object.metadata.labels?.gpu).toBe('off');
  });

  it('forwards AWS Neuron nodes with their capacity and instance type, their capacity changes, and Neuron pods', async () => {
    // Prepare
    const capacity = { cpu: '128', 'aws.amazon.com/neuron': '16', 'aws.amazon.com/neuroncore': '32' };
    rig.kube.create('Node', {
      metadata: { name: 'trn-1', labels: { 'node.kubernetes.io/instance-type': 'trn1.32xlarge' } },
      status: { capacity, allocatable: capacity, conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: '2025-05-01T10:00:00Z' }] },
    });
    await rig.startRelay();
    await eventually(() => expect(forwarded()).toHaveLength(1));
    await eventually(() => expect(rig.kube.openWatches()).toBe(3));

    // Act
    rig.kube.patch('Node', undefined, 'trn-1', { status: { capacity: { ...capacity, 'aws.amazon.com/neuroncore': '64' } } });
    const neuronPod = (name: string, limits: Record<string, string>) => ({ ...plainPod(name), spec: { schedulerName: 'hami-scheduler', containers: [{ name: 'main', image: 'neuron:2', resources: { limits } }] } });
    rig.kube.create('Pod', neuronPod('train', { 'aws.amazon.com/neuron': '4' }));
    rig.kube.create('Pod', neuronPod('infer', { 'aws.amazon.com/neuroncore': '1' }));
    rig.kube.create('Pod', plainPod('web'));

    // Assess
    await eventually(() => expect(forwarded().map(summary)).toEqual(['ADDED Node trn-1', 'MODIFIED Node trn-1', 'ADDED Pod team-a/train', 'ADDED Pod team-a/infer']));
    const [added, changed] = forwarded() as unknown as { object: { metadata: { labels: Record<string, string> }; status: { capacity: Record<string, string> } } }[];
    expect(added?.object.metadata.labels['node.kubernetes.io/instance-type']).toBe('trn1.32xlarge');
    expect(added?.object.status.capacity['aws.amazon.com/neuroncore']).toBe('32');
    expect(changed?.object.status.capacity['aws.amazon.com/neuroncore']).toBe('64');
  });

  it('asks for bookmarks and a server-side timeout on every watch', async () => {
    await rig.startRelay({ env: { RELAY_WATCH_TIMEOUT_SECONDS: '120' } });
    await eventually(() => expect(rig.kube.openWatches()).toBe(3));
    const watches = rig.kube.requests.filter((r) => r.query.watch === 'true');
    expect(watches.map((w) => w.path).sort()).toEqual(['/api/v1/nodes', '/api/v1/pods', '/api/v1/resourcequotas']);
    for (const w of watches) expect(w.query).toEqual(expect.objectContaining({ allowWatchBookmarks: 'true', timeoutSeconds: '120' }));
    // A bookmark moves the resource version forward: the next watch starts from it.
    rig.kube.create('Node', { metadata: { name: 'cpu-only' } });
    rig.kube.sendBookmarks();
    const rvAtBookmark = String(rig.kube.resourceVersion());
    rig.kube.closeWatches();
    await eventually(() => expect(rig.kube.requests.some((r) => r.path === '/api/v1/pods' && r.query.watch === 'true' && r.query.resourceVersion === rvAtBookmark)).toBe(true));
  });

  it('restarts a failed watch with exponential backoff, then relists after 410 Gone and converges', async () => {
    // Prepare
    rig.kube.create('Pod', gpuPod('gpu-old'));
    const gate = gatedDelay();
    const relay = await rig.startRelay({ watcherDelay: gate.delay, env: { RELAY_BACKOFF_INITIAL_MS: '100' } });
    await eventually(() => expect(forwarded().map(summary)).toEqual(['ADDED Pod team-a/gpu-old']));
    await eventually(() => expect(rig.kube.openWatches('Pod')).toBe(1));

    // Act 1: the pod watch breaks and re-watching fails (500) twice
    rig.kube.failNext('GET', /^\/api\/v1\/pods$/, 500, 2);
    rig.kube.closeWatches();
    await eventually(() => expect(gate.requested).toEqual([100]));
    gate.release();
    await eventually(() => expect(gate.requested).toEqual([100, 200]));

    // Meanwhile the cluster changes and the API server compacts its history.
    rig.kube.remove('Pod', 'team-a', 'gpu-old');
    rig.kube.create('Pod', gpuPod('gpu-new'));
    rig.kube.compact();
    gate.release();

    // Assess: the watch from the old resourceVersion gets 410, the informer relists and the ledger converges.
    await eventually(() =>
      expect(forwarded().map(summary)).toEqual(['ADDED Pod team-a/gpu-old', 'DELETED Pod team-a/gpu-old', 'ADDED Pod team-a/gpu-new']),
    );
    expect(rig.kube.requests.filter((r) => r.path === '/api/v1/pods' && r.query.watch === undefined)).toHaveLength(2);
    expect(relay.watcher.status().resources.find((r) => r.kind === 'Pod')?.failures).toBe(0);
  });

  it('relists from the informer caches: re-sends every relevant object as MODIFIED without asking the API server', async () => {
    // Prepare
    rig.kube.create('Node', gpuNode('node-1'));
    rig.kube.create('Pod', gpuPod('gpu-a'));
    rig.kube.create('Pod', plainPod('web'));
    const relay = await rig.startRelay();
    await eventually(() => expect(forwarded()).toHaveLength(2));
    rig.kube.create('Pod', gpuPod('gpu-b'));
    rig.kube.remove('Pod', 'team-a', 'gpu-a');
    await eventually(() => expect(forwarded()).toHaveLength(4));
    const requestsBefore = rig.kube.requests.length;

    // Act
    await relay.watcher.relist();
    await relay.forwarder.idle();

    // Assess: what the watch showed (gpu-a deleted, gpu-b added), replayed; plain pods stay unforwarded
    expect(forwarded().slice(4).map(summary).sort()).toEqual(['MODIFIED Node node-1', 'MODIFIED Pod team-a/gpu-b']);
    expect(rig.kube.requests.slice(requestsBefore)).toEqual([]);
  });
});

describe('batching and retry', () => {
  it('sends events in size-bounded batches and retries a failing control plane with backoff, in order', async () => {
    // Prepare: 5 GPU pods, batches of 2, the control plane fails the first two batches of events
    for (let i = 0; i < 5; i++) rig.kube.create('Pod', gpuPod(`gpu-${i}`));
    let failuresLeft = 2;
    rig.cp.on('POST', '/cluster/events', (call) => {
      const n = (call.body as { events: unknown[] }).events.length;
      if (n > 0 && failuresLeft-- > 0) return { status: 503, body: { message: 'busy' } };
      return { body: { accepted: n, rejected: [] } };
    });
    const gate = gatedDelay();

    // Act
    const relay = await rig.startRelay({ forwarderDelay: gate.delay, env: { RELAY_BATCH_MAX_EVENTS: '2', RELAY_BATCH_BACKLOG_EVENTS: '2', RELAY_BACKOFF_INITIAL_MS: '50' } });
    await eventually(() => expect(gate.requested).toEqual([50]));
    gate.release();
    await eventually(() => expect(gate.requested).toEqual([50, 100]));
    gate.release();
    await eventually(() => expect(relay?.forwarder.stats().accepted).toBe(5));

    // Assess
    // (The empty Node and ResourceQuota lists send their complete lists alone: batches without events.)
    const withEvents = rig.cp.callsTo('/cluster/events').map((c) => c.body as { events: unknown[]; complete?: { kind: string }[] }).filter((b) => b.events.length > 0);
    expect(withEvents.map((b) => b.events.length)).toEqual([2, 2, 2, 2, 1]);
    // The pods' complete list closes the batch that carries the list's last events.
    expect(withEvents.map((b) => b.complete?.map((c) => c.kind) ?? [])).toEqual([[], [], [], [], ['Pod']]);
    // The first batch was sent three times (two failures); delivery order is the list order.
    expect(forwarded().slice(4).map((f) => f.object.metadata.name)).toEqual(['gpu-0', 'gpu-1', 'gpu-2', 'gpu-3', 'gpu-4']);
    expect(relay.forwarder.stats().failedAttempts).toBe(2);
  });
});

describe('complete lists (re-lists converge)', () => {
  interface Batch {
    events: Forwarded[];
    complete?: { kind: string; resourceVersion: string; keys: string[] }[];
  }
  const batches = () => rig.cp.callsTo('/cluster/events').map((c) => c.body as Batch);
  const lists = (kind: string) => batches().flatMap((b) => (b.complete ?? []).filter((c) => c.kind === kind));
  const rv = (f: Forwarded) => Number((f.object.metadata as { resourceVersion?: string }).resourceVersion);

  it('follows each completed list with the full set of live objects of its kind, behind every event of that list', async () => {
    // Prepare
    rig.kube.create('Node', gpuNode('node-1'));
    rig.kube.create('Node', { metadata: { name: 'cpu-node' } });
    const gpu = rig.kube.create('Pod', gpuPod('gpu-a'));
    const placed = rig.kube.create('Pod', { ...plainPod('placed'), metadata: { name: 'placed', namespace: 'team-a', annotations: { 'hami.io/vgpu-node': 'node-1' } } });
    rig.kube.create('Pod', plainPod('web'));
    rig.kube.create('ResourceQuota', { metadata: { name: 'gpu', namespace: 'team-a' }, spec: { hard: { 'limits.nvidia.com/gpumem': '30000' } } });

    // Act
    await rig.startRelay();

    // Assess: pods by uid (only those the relay forwards), nodes by name, quotas as namespace/name
    await eventually(() => expect(['Pod', 'Node', 'ResourceQuota'].map((k) => lists(k).length)).toEqual([1, 1, 1]));
    expect(lists('Pod')[0]?.keys.sort()).toEqual([gpu.metadata?.uid, placed.metadata?.uid].sort());
    expect(lists('Node')[0]?.keys.sort()).toEqual(['cpu-node', 'node-1']);
    expect(lists('ResourceQuota')[0]?.keys).toEqual(['team-a/gpu']);
    for (const kind of ['Pod', 'Node', 'ResourceQuota']) {
      // Every event of that kind was delivered in or before the batch carrying the list, none after it.
      const at = batches().findIndex((b) => (b.complete ?? []).some((c) => c.kind === kind));
      const after = batches().slice(at + 1).flatMap((b) => b.events).filter((f) => f.object.kind === kind);
      expect(after).toEqual([]);
      const version = Number(lists(kind)[0]?.resourceVersion);
      for (const f of batches().slice(0, at + 1).flatMap((b) => b.events).filter((e) => e.object.kind === kind)) expect(rv(f)).toBeLessThanOrEqual(version);
    }
  });

  it('sends none for a list that failed, and one once the list is retried and completes', async () => {
    // Prepare: the first pod list answers 500
    rig.kube.create('Pod', gpuPod('gpu-a'));
    rig.kube.failNext('GET', /^\/api\/v1\/pods$/, 500, 1);
    const gate = gatedDelay();

    // Act
    await rig.startRelay({ watcherDelay: gate.delay });
    await eventually(() => expect(gate.waiting()).toBe(1));
    await eventually(() => expect(lists('Node')).toHaveLength(1));
    expect(lists('Pod')).toEqual([]);
    gate.release();

    // Assess
    await eventually(() => expect(lists('Pod')).toHaveLength(1));
    expect(lists('Pod')[0]?.keys).toHaveLength(1);
  });

  it('sends none when a batch of the list was refused for good', async () => {
    // Prepare: the control plane refuses the first batch of pods as malformed (400)
    rig.kube.create('Pod', gpuPod('gpu-a'));
    rig.kube.create('Pod', gpuPod('gpu-b'));
    let refuse = true;
    rig.cp.on('POST', '/cluster/events', (call) => {
      const body = call.body as Batch;
      if (refuse && body.events.some((e) => e.object.kind === 'Pod')) {
        refuse = false;
        return { status: 400, body: { message: 'bad' } };
      }
      return { body: { accepted: body.events.length, rejected: [] } };
    });

    // Act: pods go in batches of one, so the complete list travels after the refused batch
    const relay = await rig.startRelay({ env: { RELAY_BATCH_MAX_EVENTS: '1', RELAY_BATCH_BACKLOG_EVENTS: '1' } });
    await eventually(() => expect(relay?.forwarder.stats().rejected).toBe(1));
    await relay.forwarder.idle();
    await eventually(() => expect(batches().flatMap((b) => b.events).filter((e) => e.object.kind === 'Pod')).toHaveLength(2));

    // Assess
    expect(lists('Pod')).toEqual([]);
  });

  it('follows a re-list of the caches with complete lists as of the informer\'s resourceVersion, whoever forwarded what', async () => {
    // Prepare
    rig.kube.create('Node', gpuNode('node-1'));
    const a = rig.kube.create('Pod', gpuPod('gpu-a'));
    const relay = await rig.startRelay();
    await eventually(() => expect(lists('Pod')).toHaveLength(1));
    const b = rig.kube.create('Pod', gpuPod('gpu-b'));
    rig.kube.remove('Pod', 'team-a', 'gpu-a');
    await eventually(() => expect(forwarded().map(summary)).toContain('DELETED Pod team-a/gpu-a'));

    // Act
    await relay.watcher.relist();
    await relay.forwarder.idle();

    // Assess
    const relisted = lists('Pod')[1];
    expect(relisted?.keys).toEqual([b.metadata?.uid]);
    expect(relisted?.keys).not.toContain(a.metadata?.uid);
    expect(Number(relisted?.resourceVersion)).toBeGreaterThanOrEqual(Math.max(...forwarded().filter((f) => f.object.kind === 'Pod').map(rv)));
    expect(lists('Node').map((l) => l.keys)).toEqual([['node-1'], ['node-1']]);
  });
});
