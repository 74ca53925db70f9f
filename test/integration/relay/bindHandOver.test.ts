/**
 * Bind hand-over end to end (docs/relay.md, "Bind hand-over"; docs/locks.md): fake Kubernetes API server + relay + the
 * local control plane, kube-scheduler played by this test (one filter at a time, binds asynchronous) and HAMi's device
 * plugin by a stand-in that finds the pod it allocates for by the Node's `hami.io/mutex.lock`, reports the allocation
 * and deletes the annotation. The control plane refuses a bind that meets the lock at once
 * (HAMI_BIND_LOCK_WAIT_SECONDS=0), so only the relay's queue can absorb a burst.
 */
import { useRelayOnLocalControlPlane } from '../../support/relayRig';
import { eventually, gpuNode, gpuPod, postJson, recordingLogger } from './harness';

const TOKEN = 'handover-e2e-token';
const LOCK = 'hami.io/mutex.lock';
const NODES = ['node-h', 'node-i'];
const cards = (node: string) =>
  JSON.stringify([0, 1, 2].map((index) => ({ id: `GPU-${node}-${index}`, count: 10, devmem: 16384, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true, index, mode: 'hami-core' })));

const rig = useRelayOnLocalControlPlane({
  per: 'suite',
  token: TOKEN,
  env: { HAMI_BIND_LOCK_WAIT_SECONDS: '0' },
  prepare: ({ kube }) => {
    for (const node of NODES) kube.create('Node', gpuNode(node, cards(node)));
  },
  // A batch window as deployed: the events that end a lock must not wait it out.
  relay: { logger: recordingLogger(), env: { RELAY_BATCH_MAX_DELAY_MS: '200' } },
  registered: NODES,
});

const lockOn = (node: string): string | undefined => (rig.kube.get('Node', '', node)?.metadata?.annotations as Record<string, string> | undefined)?.[LOCK];
const nodeOf = (name: string): string | undefined => (rig.kube.get('Pod', 'team-a', name)?.spec as { nodeName?: string } | undefined)?.nodeName;

/** kube-scheduler's filter for one pod, then its bind, not awaited (kube-scheduler binds asynchronously). */
async function schedule(name: string, candidates: readonly string[] = NODES): Promise<{ node: string | undefined; bind: Promise<string> }> {
  const pod = rig.kube.get('Pod', 'team-a', name)!;
  const { kind: _kind, apiVersion: _apiVersion, ...asSeen } = pod as Record<string, unknown>;
  const filter = await postJson(`${rig.relay.extenderUrl}/filter`, { Pod: asSeen, Nodes: null, NodeNames: candidates });
  const node = (filter.body.NodeNames as string[] | null)?.[0];
  if (node === undefined) return { node, bind: Promise.resolve(`not filtered: ${JSON.stringify(filter.body)}`) };
  const bind = postJson(`${rig.relay.extenderUrl}/bind`, { PodName: name, PodNamespace: 'team-a', PodUID: pod.metadata?.uid, Node: node }).then((res) => String(res.body.Error ?? ''));
  return { node, bind };
}

/** HAMi's device plugin on `node`: allocates for the pod the lock names, reports success and deletes the annotation. */
async function devicePlugin(node: string, allocations: number): Promise<string[]> {
  const served: string[] = [];
  while (served.length < allocations) {
    const value = await eventually(() => {
      const current = lockOn(node);
      if (current === undefined || served.some((name) => current.endsWith(`,team-a,${name}`))) throw new Error(`no new allocation on ${node}`);
      return current;
    });
    const [, namespace = '', name = ''] = value.split(',');
    rig.kube.patch('Pod', namespace, name, { metadata: { annotations: { 'hami.io/bind-phase': 'success' } }, status: { phase: 'Running' } });
    rig.kube.patch('Node', '', node, { metadata: { annotations: { [LOCK]: null } } });
    served.push(name);
  }
  return served;
}

describe('bind hand-over through the relay', () => {
  it('binds 20 pods created at once on 2 nodes with no refused bind, each in turn as the device plugin ends the last allocation', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `burst-${String(i).padStart(2, '0')}`);
    for (const name of names) rig.kube.create('Pod', gpuPod(name));
    const placed: { name: string; node: string | undefined; bind: Promise<string> }[] = [];
    for (const name of names) placed.push({ name, ...(await schedule(name)) });
    const perNode = new Map(NODES.map((node) => [node, placed.filter((p) => p.node === node).length]));
    expect([...perNode.values()].reduce((a, b) => a + b, 0)).toBe(20);
    const plugins = NODES.map((node) => devicePlugin(node, perNode.get(node) ?? 0));
    const errors = await Promise.all(placed.map((p) => p.bind));
    expect(errors.filter((error) => error !== '')).toEqual([]);
    const served = await Promise.all(plugins);
    for (const p of placed) expect(nodeOf(p.name)).toBe(p.node);
    // Each node's allocations went in kube-scheduler's order: the queue is first come, first served.
    for (const [i, node] of NODES.entries()) expect(served[i]).toEqual(placed.filter((p) => p.node === node).map((p) => p.name));
  });

  it('a force-deleted lock holder leaves no lock annotation on the Node, and the bind waiting behind it takes the lock', async () => {
    rig.kube.create('Pod', gpuPod('holder'));
    const holder = await schedule('holder');
    expect(await holder.bind).toBe('');
    const node = holder.node!;
    expect(lockOn(node)).toMatch(/,team-a,holder$/);

    rig.kube.create('Pod', gpuPod('next'));
    // The next pod fits only that node, and kube-scheduler binds it while the holder's allocation is under way: it waits.
    const next = await schedule('next', [node]);
    expect(next.node).toBe(node);
    // The holder is force-deleted before the device plugin ever allocates for it.
    rig.kube.remove('Pod', 'team-a', 'holder');
    expect(await next.bind).toBe('');
    expect(nodeOf('next')).toBe(node);
    expect(lockOn(node)).toMatch(/,team-a,next$/);

    // And without a bind behind it: the control plane's end of the lock clears the Node's annotation.
    rig.kube.remove('Pod', 'team-a', 'next');
    await eventually(() => expect(lockOn(node)).toBeUndefined());
  });
});
