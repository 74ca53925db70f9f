/**
 * End to end: fake Kubernetes API server + relay + the local control plane (the `npm start` code path).
 * kube-scheduler is played by this test, calling the relay exactly as it would (POST /filter with
 * NodeNames, then POST /bind).
 */
import type { RunningRelay } from '../../../lib/relay/relay';
import { useRelayOnLocalControlPlane } from '../../support/relayRig';
import { eventually, gpuNode, postJson } from './harness';

const TOKEN = 'e2e-control-plane-token';
const REGISTER = (prefix: string) =>
  JSON.stringify([
    { id: `GPU-${prefix}-0`, count: 10, devmem: 8192, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true, index: 0, mode: 'hami-core' },
    { id: `GPU-${prefix}-1`, count: 10, devmem: 8192, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true, index: 1, mode: 'hami-core' },
  ]);

interface DeviceView {
  registered: boolean;
  devices: { id: string; used: number; usedmem: number; pods: string[] }[];
}

const rig = useRelayOnLocalControlPlane({ per: 'suite', token: TOKEN });
/** The relay while one runs: the tests stop and start it. */
let relay: RunningRelay | undefined;

async function devices(node: string): Promise<DeviceView> {
  const res = await fetch(`${rig.local.url}/api/v1/nodes/${node}/devices`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as DeviceView;
}

const usedOn = (view: DeviceView) => view.devices.reduce((n, d) => n + d.used, 0);

function gpuPodSpec(name: string, extra: { annotations?: Record<string, string>; nodeName?: string } = {}) {
  return {
    metadata: { name, namespace: 'team-a', annotations: extra.annotations ?? {} },
    spec: {
      schedulerName: 'hami-scheduler',
      ...(extra.nodeName ? { nodeName: extra.nodeName } : {}),
      containers: [{ name: 'main', image: 'cuda:12', resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '3000', 'nvidia.com/gpucores': '30' } } }],
    },
    status: { phase: extra.nodeName ? 'Running' : 'Pending' },
  };
}

/** The pod as kube-scheduler's informer holds it: no kind/apiVersion. */
function schedulerView(pod: Record<string, unknown>): Record<string, unknown> {
  const { kind: _kind, apiVersion: _apiVersion, ...rest } = pod;
  return rest;
}

describe('relay + local control plane', () => {
  it('registers nodes, filters and binds a GPU pod, frees its cards on deletion, and survives a relay restart', async () => {
    // Nodes with HAMi registrations appear in the ledger.
    rig.kube.create('Node', gpuNode('node-1', REGISTER('a')));
    rig.kube.create('Node', gpuNode('node-2', REGISTER('b')));
    relay = await rig.startRelay();
    await eventually(async () => expect((await devices('node-1')).registered).toBe(true), 15000);
    await eventually(async () => expect((await devices('node-2')).registered).toBe(true), 15000);

    // Filter, as kube-scheduler calls it with nodeCacheCapable: true.
    const created = rig.kube.create('Pod', gpuPodSpec('train-0'));
    const filter = await postJson(`${relay.extenderUrl}/filter`, { Pod: schedulerView(created), Nodes: null, NodeNames: ['node-1', 'node-2'] });
    expect(filter.status).toBe(200);
    expect(filter.body.Error ?? '').toBe('');
    expect(filter.body).not.toHaveProperty('Effects');
    const nodeNames = filter.body.NodeNames as string[];
    expect(nodeNames).toHaveLength(1);
    const chosen = nodeNames[0] as string;

    const filtered = rig.kube.get('Pod', 'team-a', 'train-0');
    const annotations = filtered?.metadata?.annotations as Record<string, string>;
    expect(annotations['hami.io/vgpu-node']).toBe(chosen);
    expect(annotations['hami.io/vgpu-devices-allocated']).toMatch(/^GPU-[ab]-[01],NVIDIA,3000,30:;$/);
    expect(annotations['hami.io/vgpu-devices-to-allocate']).toBe(annotations['hami.io/vgpu-devices-allocated']);
    // With HAMI_DECIDE_AHEAD=false (these suites' setting) the pod was neither claimed nor decided ahead: only the
    // live filter's patch touched it.
    expect(annotations).not.toHaveProperty('hami.io/decided-ahead');
    expect(relay.ahead).toBeUndefined();
    expect(rig.kube.writes().filter((w) => w.method === 'PATCH' && w.path === '/api/v1/namespaces/team-a/pods/train-0')).toHaveLength(1);

    // Bind.
    const bind = await postJson(`${relay.extenderUrl}/bind`, { PodName: 'train-0', PodNamespace: 'team-a', PodUID: created.metadata?.uid, Node: chosen });
    expect(bind).toEqual({ status: 200, body: { Error: '' } });
    const bound = rig.kube.get('Pod', 'team-a', 'train-0');
    expect((bound?.spec as { nodeName: string }).nodeName).toBe(chosen);
    expect(bound?.metadata?.annotations).toEqual(expect.objectContaining({ 'hami.io/bind-phase': 'allocating' }));
    expect(rig.kube.writes().filter((w) => w.path === '/api/v1/namespaces/team-a/pods/train-0/binding')).toHaveLength(1);
    expect(rig.kube.list('Event').map((e) => e.reason)).toEqual(expect.arrayContaining(['FilteringSucceed', 'BindingSucceed']));

    // The card is booked; deleting the pod frees it.
    await eventually(async () => expect(usedOn(await devices(chosen))).toBe(1), 10000);
    rig.kube.remove('Pod', 'team-a', 'train-0');
    await eventually(async () => expect(usedOn(await devices(chosen))).toBe(0), 10000);

    // Kill the relay; a pod placed while it is down is accounted once it is back.
    await relay.close();
    relay = undefined;
    rig.kube.create('Pod', gpuPodSpec('train-1', { nodeName: chosen, annotations: { ...annotations, 'hami.io/bind-phase': 'success' } }));
    relay = await rig.startRelay();
    await eventually(async () => {
      const view = await devices(chosen);
      expect(usedOn(view)).toBe(1);
      expect(view.devices.flatMap((d) => d.pods)).toEqual(['team-a/train-1']);
    }, 10000);
  });

  it('keeps counting what the scheduler decided when a pod owner edits the allocation annotation, and warns on the pod', async () => {
    const oneCard = JSON.stringify([{ id: 'GPU-t-0', count: 10, devmem: 16384, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true, index: 0, mode: 'hami-core' }]);
    rig.kube.create('Node', gpuNode('node-t', oneCard));
    relay ??= await rig.startRelay();
    await eventually(async () => expect((await devices('node-t')).registered).toBe(true), 15000);
    const asking = (name: string) => {
      const spec = gpuPodSpec(name);
      spec.spec.containers[0]!.resources.limits['nvidia.com/gpumem'] = '12000';
      return spec;
    };

    // t1 is placed with 12,000 MiB of the 16,384 MiB card, bound and allocated.
    const t1 = rig.kube.create('Pod', asking('t1'));
    const filter = await postJson(`${relay.extenderUrl}/filter`, { Pod: schedulerView(t1), Nodes: null, NodeNames: ['node-t'] });
    expect(filter.body.NodeNames).toEqual(['node-t']);
    expect((await postJson(`${relay.extenderUrl}/bind`, { PodName: 't1', PodNamespace: 'team-a', PodUID: t1.metadata?.uid, Node: 'node-t' })).body).toEqual({ Error: '' });
    rig.kube.patch('Pod', 'team-a', 't1', { metadata: { annotations: { 'hami.io/bind-phase': 'success' } }, status: { phase: 'Running' } });
    await eventually(async () => expect((await devices('node-t')).devices[0]?.usedmem).toBe(12000), 10000);

    // The owner rewrites the allocation to 1 MiB (what `kubectl annotate --overwrite` does).
    rig.kube.patch('Pod', 'team-a', 't1', { metadata: { annotations: { 'hami.io/vgpu-devices-allocated': 'GPU-t-0,NVIDIA,1,0:;' } } });
    await eventually(() => expect(rig.kube.list('Event').filter((e) => e.reason === 'SchedulerAnnotationsChanged').map((e) => (e.involvedObject as { name: string }).name)).toEqual(['t1']), 10000);
    expect((await devices('node-t')).devices[0]).toMatchObject({ usedmem: 12000, pods: ['team-a/t1'] });

    // The next 12,000 MiB pod is not promised the same card.
    const t2 = rig.kube.create('Pod', asking('t2'));
    const second = await postJson(`${relay.extenderUrl}/filter`, { Pod: schedulerView(t2), Nodes: null, NodeNames: ['node-t'] });
    expect(second.body.NodeNames ?? []).toEqual([]);
    expect(second.body.FailedNodes).toEqual({ 'node-t': '1/1 CardInsufficientMemory' });
    // Another change to the same value is not reported twice.
    rig.kube.patch('Pod', 'team-a', 't1', { metadata: { labels: { touched: 'yes' } }, status: { phase: 'Running', podIP: '10.0.0.9' } });
    rig.kube.patch('Pod', 'team-a', 't1', { metadata: { annotations: { 'hami.io/bind-time': '1' } } });
    // The relay has seen the last patch and forwarded all it had: only then does the count say anything.
    const running = relay;
    await eventually(() => expect(running.watcher.cachedObject('Pod', 'team-a', 't1')?.metadata?.annotations?.['hami.io/bind-time']).toBe('1'), 10000);
    await running.forwarder.idle();
    expect((await devices('node-t')).devices[0]?.usedmem).toBe(12000);
    expect(rig.kube.list('Event').filter((e) => e.reason === 'SchedulerAnnotationsChanged')).toHaveLength(1);
  });

  it('raises a pod adopted past a card’s capacity with Warnings on the pod and on its Node', async () => {
    const oneCard = JSON.stringify([{ id: 'GPU-o-0', count: 10, devmem: 16384, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true, index: 0, mode: 'hami-core' }]);
    rig.kube.create('Node', gpuNode('node-o', oneCard));
    relay ??= await rig.startRelay();
    await eventually(async () => expect((await devices('node-o')).registered).toBe(true), 15000);
    // o1 is placed by the scheduler with 12,000 MiB of the 16,384 MiB card.
    const spec = gpuPodSpec('o1');
    spec.spec.containers[0]!.resources.limits['nvidia.com/gpumem'] = '12000';
    const o1 = rig.kube.create('Pod', spec);
    expect((await postJson(`${relay.extenderUrl}/filter`, { Pod: schedulerView(o1), Nodes: null, NodeNames: ['node-o'] })).body.NodeNames).toEqual(['node-o']);
    await eventually(async () => expect((await devices('node-o')).devices[0]?.usedmem).toBe(12000), 10000);

    // A pod of another namespace arrives bound to the node, its annotations claiming the whole card.
    rig.kube.create('Pod', {
      metadata: {
        name: 'squatter',
        namespace: 'team-b',
        annotations: { 'hami.io/vgpu-node': 'node-o', 'hami.io/vgpu-devices-allocated': 'GPU-o-0,NVIDIA,16384,100:;', 'hami.io/bind-phase': 'success' },
      },
      spec: { schedulerName: 'hami-scheduler', nodeName: 'node-o', containers: [{ name: 'main', image: 'cuda:12', resources: { limits: { 'nvidia.com/gpu': '1' } } }] },
      status: { phase: 'Running' },
    });
    const adopted = () => rig.kube.list('Event').filter((e) => e.reason === 'AdoptedPastCapacity').map((e) => [e.metadata?.namespace, (e.involvedObject as { kind: string; name: string }).kind, (e.involvedObject as { name: string }).name]);
    await eventually(() => expect(adopted().sort()).toEqual([['default', 'Node', 'node-o'], ['team-b', 'Pod', 'squatter']]), 10000);
    expect((await devices('node-o')).devices[0]).toMatchObject({ usedmem: 28384, usedcores: 130, overcommitted: ['memory', 'cores'] });
  });
});

describe('a relay restart or outage loses nothing', () => {
  interface LockView {
    lock: { holder: string } | null;
  }
  const lockOf = async (node: string) => ((await devices(node)) as DeviceView & LockView).lock;
  const bookedPods = async (node: string) => (await devices(node)).devices.flatMap((d) => d.pods).sort();

  async function schedule(name: string, nodes: readonly string[]): Promise<string | undefined> {
    const pod = rig.kube.get('Pod', 'team-a', name)!;
    const filter = await postJson(`${relay!.extenderUrl}/filter`, { Pod: schedulerView(pod), Nodes: null, NodeNames: nodes });
    const chosen = (filter.body.NodeNames as string[] | null)?.[0];
    if (chosen === undefined) return undefined;
    const bind = await postJson(`${relay!.extenderUrl}/bind`, { PodName: name, PodNamespace: 'team-a', PodUID: pod.metadata?.uid, Node: chosen });
    expect(bind.body).toEqual({ Error: '' });
    return chosen;
  }

  it('forgets a pod deleted while no relay watched (its card and its lock), and the next pod schedules', async () => {
    // Prepare: one node with one card that holds two pods; the first is running, the second still allocating (lock held)
    await relay?.close();
    const oneCard = JSON.stringify([{ id: 'GPU-r-0', count: 10, devmem: 6500, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true, index: 0, mode: 'hami-core' }]);
    rig.kube.create('Node', gpuNode('node-r', oneCard));
    relay = await rig.startRelay();
    await eventually(async () => expect((await devices('node-r')).registered).toBe(true), 15000);
    rig.kube.create('Pod', gpuPodSpec('r-run'));
    expect(await schedule('r-run', ['node-r'])).toBe('node-r');
    rig.kube.patch('Pod', 'team-a', 'r-run', { metadata: { annotations: { 'hami.io/bind-phase': 'success' } }, status: { phase: 'Running' } });
    await eventually(async () => expect(await lockOf('node-r')).toBeNull(), 10000);
    rig.kube.create('Pod', gpuPodSpec('r-alloc'));
    expect(await schedule('r-alloc', ['node-r'])).toBe('node-r');
    await eventually(async () => expect(await bookedPods('node-r')).toEqual(['team-a/r-alloc', 'team-a/r-run']), 10000);
    expect((await lockOf('node-r'))?.holder).toBe('team-a/r-alloc');

    // Act: the relay dies; both pods are force-deleted (nobody watches), another is created; the relay comes back
    await relay?.close();
    relay = undefined;
    rig.kube.remove('Pod', 'team-a', 'r-run', { silent: true });
    rig.kube.remove('Pod', 'team-a', 'r-alloc', { silent: true });
    rig.kube.create('Pod', gpuPodSpec('r-next'));
    relay = await rig.startRelay();

    // Assess: after its list, the ledger equals the cluster: no bookings, no lock; the new pod schedules
    await eventually(async () => {
      expect(await bookedPods('node-r')).toEqual([]);
      expect(usedOn(await devices('node-r'))).toBe(0);
      expect(await lockOf('node-r')).toBeNull();
    }, 15000);
    expect(await schedule('r-next', ['node-r'])).toBe('node-r');
    await eventually(async () => expect(await bookedPods('node-r')).toEqual(['team-a/r-next']), 10000);
  });

  it('soak: 200 pod creations and deletions with random relay kills end with the ledger equal to the cluster and nothing Pending that fits', async () => {
    // A deterministic pseudo-random sequence (the same run every time).
    let seed = 20_260_301;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    await relay?.close();
    relay = undefined;
    const nodes = ['soak-1', 'soak-2'];
    for (const n of nodes) rig.kube.create('Node', gpuNode(n, REGISTER(n)));
    relay = await rig.startRelay();
    await eventually(async () => {
      for (const n of nodes) expect((await devices(n)).registered).toBe(true);
    }, 15000);
    const live: string[] = [];
    let created = 0;
    for (let step = 0; step < 200; step++) {
      const roll = random();
      if (roll < 0.08) {
        // Kill the relay, or start it again.
        if (relay !== undefined) {
          await relay.close();
          relay = undefined;
        } else {
          relay = await rig.startRelay();
        }
      } else if (roll < 0.55 || live.length === 0) {
        const name = `soak-${created++}`;
        rig.kube.create('Pod', gpuPodSpec(name));
        live.push(name);
        if (relay !== undefined) {
          const node = await schedule(name, nodes);
          if (node !== undefined) rig.kube.patch('Pod', 'team-a', name, { metadata: { annotations: { 'hami.io/bind-phase': 'success' } }, status: { phase: 'Running' } });
        }
      } else {
        const name = live.splice(Math.floor(random() * live.length), 1)[0]!;
        rig.kube.remove('Pod', 'team-a', name, { silent: relay === undefined });
      }
    }
    relay ??= await rig.startRelay();

    // Whatever is still Pending and fits gets scheduled now (kube-scheduler's retries).
    const pending = () => rig.kube.list('Pod').filter((p) => String(p.metadata?.name).startsWith('soak-') && (p.spec as { nodeName?: string }).nodeName === undefined);
    const bound = () => rig.kube.list('Pod').filter((p) => String(p.metadata?.name).startsWith('soak-') && (p.spec as { nodeName?: string }).nodeName !== undefined);
    // The ledger first converges on what the cluster holds (the relay's list, its complete list).
    const expected = async () => {
      for (const n of nodes) {
        const want = bound().filter((p) => (p.spec as { nodeName: string }).nodeName === n).map((p) => `team-a/${String(p.metadata?.name)}`).sort();
        expect(await bookedPods(n)).toEqual(want);
      }
    };
    await eventually(expected, 20000);
    for (const p of pending()) {
      const node = await schedule(String(p.metadata?.name), nodes);
      if (node !== undefined) rig.kube.patch('Pod', 'team-a', String(p.metadata?.name), { metadata: { annotations: { 'hami.io/bind-phase': 'success' } }, status: { phase: 'Running' } });
    }
    await eventually(expected, 20000);
    // Nothing Pending that fits: each card holds two 3000 MiB pods, so Pending pods mean every card is full.
    const capacity = nodes.length * 2 * 2;
    expect(pending().length === 0 || bound().length === capacity).toBe(true);
    expect(bound().length + pending().length).toBe(live.length);
  }, 120_000);
});
