/**
 * GPU-aware preemption end to end (docs/preemption.md): fake Kubernetes API server (with the Eviction subresource and
 * PodDisruptionBudgets) + relay + the local control plane. kube-scheduler is played by this test, calling the relay's
 * /filter and /bind as it would; the kubelet's part (a pod marked for deletion goes once its containers stopped) is
 * played by removing the pod.
 */
import { REQUEUE_ANNOTATION } from '../../../lib/control/effects';
import { useRelayOnLocalControlPlane } from '../../support/relayRig';
import { eventually, gpuNode, postJson, recordingLogger } from './harness';

const TOKEN = 'preemption-control-plane-token';
const NS = 'ml';

const cards = (prefix: string, n: number) =>
  JSON.stringify(Array.from({ length: n }, (_, i) => ({ id: `GPU-${prefix}-${i}`, count: 10, devmem: 16384, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true, index: i, mode: 'hami-core' })));

async function usedMem(node: string): Promise<number[]> {
  const res = await fetch(`${rig.local.url}/api/v1/nodes/${node}/devices`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const view = (await res.json()) as { devices: { usedmem: number }[] };
  return view.devices.map((d) => d.usedmem);
}

async function schedulerLog(name: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${rig.local.url}/api/v1/namespaces/${NS}/pods/${name}/schedulerlog`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return (await res.json()) as Record<string, unknown>;
}

function podSpec(name: string, mem: number, priority: number, labels: Record<string, string> = {}) {
  return {
    metadata: { name, namespace: NS, labels },
    spec: {
      schedulerName: 'hami-scheduler',
      priority,
      containers: [{ name: 'main', image: 'cuda:12', resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': String(mem) } } }],
    },
    status: { phase: 'Pending' },
  };
}

/** kube-scheduler's filter through the relay, with the pod as its informer holds it. */
async function filter(name: string, nodes: string[]): Promise<Record<string, unknown>> {
  const { kind: _k, apiVersion: _a, ...pod } = rig.kube.get('Pod', NS, name)!;
  const answer = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: pod, Nodes: null, NodeNames: nodes });
  expect(answer.status).toBe(200);
  return answer.body;
}

/** Filter and bind, then the device plugin's allocation ends and the pod runs. */
async function run(name: string, mem: number, priority: number, node: string, labels: Record<string, string> = {}): Promise<void> {
  const created = rig.kube.create('Pod', podSpec(name, mem, priority, labels));
  expect((await filter(name, [node])).NodeNames).toEqual([node]);
  expect((await postJson(`${rig.relay.extenderUrl}/bind`, { PodName: name, PodNamespace: NS, PodUID: created.metadata?.uid, Node: node })).body).toEqual({ Error: '' });
  rig.kube.patch('Pod', NS, name, { metadata: { annotations: { 'hami.io/bind-phase': 'success' } }, status: { phase: 'Running' } });
}

const evictions = () => rig.kube.writes().filter((w) => w.method === 'POST' && w.path.endsWith('/eviction')).map((w) => w.path.split('/')[6]);
const eventsOf = (reason: string) => rig.kube.list('Event').filter((e) => e.reason === reason).map((e) => (e.involvedObject as { name: string }).name);
const terminating = (name: string) => rig.kube.get('Pod', NS, name)?.metadata?.deletionTimestamp !== undefined;
const requeued = (name: string) => (rig.kube.get('Pod', NS, name)?.metadata?.annotations as Record<string, string> | undefined)?.[REQUEUE_ANNOTATION] !== undefined;

const rig = useRelayOnLocalControlPlane({ per: 'suite', token: TOKEN, relay: { logger: recordingLogger() } });

describe('GPU-aware preemption through the relay', () => {
  it('evicts the chosen victim, keeps the freed card from a third pod, and binds the preemptor there once the victim is gone', async () => {
    rig.kube.create('Node', gpuNode('full', cards('f', 1)));
    await eventually(async () => expect(await usedMem('full')).toEqual([0]), 15000);
    await run('batch', 12288, 0, 'full');
    await run('service', 4096, 10, 'full');
    await eventually(async () => expect(await usedMem('full')).toEqual([16384]), 10000);

    // Full: the high-priority pod fits nowhere; the batch pod (priority 0) is evicted for it, the service reprieved.
    rig.kube.create('Pod', podSpec('urgent', 8192, 1000));
    const first = await filter('urgent', ['full']);
    expect(first.NodeNames).toBeNull();
    expect(first).not.toHaveProperty('Effects');
    expect(evictions()).toEqual(['batch']);
    expect(terminating('batch')).toBe(true);
    expect(terminating('service')).toBe(false);
    expect(eventsOf('Preempted')).toEqual(['batch']);
    expect(eventsOf('Preempting')).toEqual(['urgent']);
    // The ledger holds the freed memory for the preemptor, never for two pods at once.
    expect(await usedMem('full')).toEqual([4096 + 8192]);

    // A third pod finds no room meanwhile.
    rig.kube.create('Pod', podSpec('third', 8192, 0));
    expect((await filter('third', ['full'])).NodeNames).toBeNull();
    expect(evictions()).toEqual(['batch']);

    // The kubelet is done with the victim: the preemptor is nudged, then placed and bound on the freed card.
    rig.kube.remove('Pod', NS, 'batch');
    await eventually(() => expect(requeued('urgent')).toBe(true), 10000);
    expect((await filter('urgent', ['full'])).NodeNames).toEqual(['full']);
    const urgent = rig.kube.get('Pod', NS, 'urgent')!;
    expect((urgent.metadata?.annotations as Record<string, string>)['hami.io/vgpu-devices-allocated']).toBe('GPU-f-0,NVIDIA,8192,0:;');
    expect((await postJson(`${rig.relay.extenderUrl}/bind`, { PodName: 'urgent', PodNamespace: NS, PodUID: urgent.metadata?.uid, Node: 'full' })).body).toEqual({ Error: '' });
    expect((rig.kube.get('Pod', NS, 'urgent')?.spec as { nodeName?: string }).nodeName).toBe('full');
    expect((await filter('third', ['full'])).NodeNames).toBeNull();

    // Explained on both sides.
    const victimLog = await schedulerLog('batch');
    expect(victimLog.preemptedBy).toMatchObject({ pod: `${NS}/urgent`, node: 'full' });
  });

  it('a PodDisruptionBudget that forbids the eviction: the refusal is explained and the next plan evicts another pod', async () => {
    rig.kube.create('Node', gpuNode('pdb', cards('p', 2)));
    await eventually(async () => expect(await usedMem('pdb')).toEqual([0, 0]), 15000);
    await run('older', 16384, 0, 'pdb', { app: 'older' });
    await run('newer', 16384, 0, 'pdb', { app: 'db' });
    await eventually(async () => expect(await usedMem('pdb')).toEqual([16384, 16384]), 10000);
    rig.kube.create('PodDisruptionBudget', { metadata: { name: 'db', namespace: NS }, spec: { selector: { matchLabels: { app: 'db' } } }, status: { disruptionsAllowed: 0, desiredHealthy: 1, currentHealthy: 1 } });
    const before = evictions().length;

    // The less important pod (placed later) is chosen first; its budget refuses.
    rig.kube.create('Pod', podSpec('vip', 16384, 500));
    expect((await filter('vip', ['pdb'])).NodeNames).toBeNull();
    expect(evictions().slice(before)).toEqual(['newer']);
    expect(terminating('newer')).toBe(false);
    expect(eventsOf('PreemptionRefused')).toEqual(['vip']);
    const refused = rig.kube.list('Event').find((e) => e.reason === 'PreemptionRefused');
    expect(refused?.message).toContain('refused by its PodDisruptionBudget');
    await eventually(() => expect(requeued('vip')).toBe(true), 10000);
    // Nothing is held any more: both cards count their pods again.
    expect(await usedMem('pdb')).toEqual([16384, 16384]);

    // The next attempt plans around the protected pod.
    expect((await filter('vip', ['pdb'])).NodeNames).toBeNull();
    expect(evictions().slice(before)).toEqual(['newer', 'older']);
    expect(terminating('older')).toBe(true);
    const log = await schedulerLog('vip');
    expect((log.filter as { preemption?: { outcome: string; victims: { pod: string }[] } }).preemption).toMatchObject({ outcome: 'evicting', victims: [{ pod: `${NS}/older` }] });
  });

  it('when every plan would break a PodDisruptionBudget, the failure is explained and nothing more is evicted', async () => {
    rig.kube.create('Node', gpuNode('guarded', cards('g', 2)));
    await eventually(async () => expect(await usedMem('guarded')).toEqual([0, 0]), 15000);
    await run('keep-a', 16384, 0, 'guarded', { keep: 'a' });
    await run('keep-b', 16384, 0, 'guarded', { keep: 'b' });
    await eventually(async () => expect(await usedMem('guarded')).toEqual([16384, 16384]), 10000);
    for (const which of ['a', 'b']) {
      rig.kube.create('PodDisruptionBudget', { metadata: { name: `keep-${which}`, namespace: NS }, spec: { selector: { matchLabels: { keep: which } } }, status: { disruptionsAllowed: 0 } });
    }
    const before = evictions().length;
    rig.kube.create('Pod', podSpec('boss', 16384, 900));
    // Each plan is tried once and refused; then no plan is left that a budget allows.
    expect((await filter('boss', ['guarded'])).NodeNames).toBeNull();
    expect((await filter('boss', ['guarded'])).NodeNames).toBeNull();
    expect(evictions().slice(before).sort()).toEqual(['keep-a', 'keep-b']);
    const last = await filter('boss', ['guarded']);
    expect(last.NodeNames).toBeNull();
    expect(evictions().length - before).toBe(2);
    const log = await schedulerLog('boss');
    expect((log.filter as { preemption?: { outcome: string; summary: string } }).preemption).toMatchObject({ outcome: 'refused', summary: expect.stringContaining('PodDisruptionBudget refused its eviction') });
    expect(terminating('keep-a') || terminating('keep-b')).toBe(false);
  });
});
