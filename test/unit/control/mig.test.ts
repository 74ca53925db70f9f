/**
 * MIG through the control plane, on the in-memory store: placements are booked with the pod and counted for the
 * next decision, freed when the pod ends, never handed out twice by two filters deciding at once, and taken over
 * from the annotations of pods placed before us.
 */
import { filterPod } from '../../../lib/control/filter';
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import { readNodeDevices } from '../../../lib/control/views';
import { renderNodeDevicesText } from '../../../lib/cli/render';
import { card, forwardedPod, gpuNode, gpuPod } from '../../support/cluster';
import { filterOf, patchOf, world, type Environment } from './fixtures';

const profile1g = { name: '1g.5gb', memoryMB: 4864, core: 14, sliceCount: 1, placements: [0, 1, 2, 3, 4, 5, 6].map((start) => ({ start, size: 1 })) };
const migNode = (name: string) => gpuNode(name, [card(`GPU-${name}`, { count: 7, devmem: 40960, type: 'NVIDIA-A100-PCIE-40GB', mode: 'mig', migProfiles: [profile1g] })]);

const notebook = (name: string) => gpuPod(name, [{ name: 'c', gpu: 1, mem: 4000 }]);

async function placed(env: Environment, pod: ReturnType<typeof gpuPod>, nodes = ['n1'], minViewSeq?: number) {
  const answer = await filterPod(env.deps, filterOf(pod, nodes, minViewSeq));
  return { node: answer.result.NodeNames?.[0], annotations: patchOf(answer) ?? {}, answer };
}

const startsOf = (annotations: Record<string, string>): number[] =>
  (JSON.parse(annotations['hami.io/vgpu-mig-allocations'] ?? '[]') as { placement: { start: number } }[]).map((a) => a.placement.start);

describe('MIG placements in the ledger', () => {
  it('books the placement with the pod: the next pod gets the next one, and a pod that ends gives its own back', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [{ type: 'ADDED', object: migNode('n1') }]);
    const first = notebook('first');
    const a = await placed(env, first);
    const b = await placed(env, notebook('second'));
    expect([startsOf(a.annotations), startsOf(b.annotations)]).toEqual([[6], [5]]);
    expect(w.store.stored('n1')!.bookings[first.metadata.uid]!.parts).toBe(a.annotations['hami.io/vgpu-mig-allocations']);
    // The first pod ends: its placement is free again for the next.
    const ended = await ingestClusterEvents(env.deps, [{ type: 'DELETED', object: forwardedPod(first, a.annotations, { rv: '5' }) }]);
    const c = await placed(env, notebook('third'), ['n1'], ended.viewSeq);
    expect(startsOf(c.annotations)).toEqual([6]);
    // The node's view shows the profile, how many placements are free, and who holds which.
    const view = await readNodeDevices(env.deps, 'n1');
    expect(view.devices[0]).toMatchObject({
      mode: 'mig',
      used: 2,
      usedmem: 2 * 4864,
      mig: { profiles: [{ name: '1g.5gb', memoryMB: 4864, core: 14, placements: 7, free: 5 }], inUse: [{ start: 5, size: 1, pod: 'default/second' }, { start: 6, size: 1, pod: 'default/third' }] },
    });
    expect(renderNodeDevicesText(view, { nowMs: w.clock.now })).toContain('  GPU-n1 MIG: 1g.5gb (4864 MiB, 14 cores) 5 of 7 placements free\n         in use: slices 5-5 default/second, slices 6-6 default/third');
  });

  it('two filters deciding on the same view never take one placement twice: the node’s version refuses the second', async () => {
    const w = world();
    const one = w.environment();
    const two = w.environment();
    await ingestClusterEvents(one.deps, [{ type: 'ADDED', object: migNode('n1') }]);
    // Both views are loaded before either books.
    await one.deps.view.prepare();
    await two.deps.view.prepare();
    await one.deps.view.learn(['n1']);
    await two.deps.view.learn(['n1']);
    const a = await placed(one, notebook('a'));
    const b = await placed(two, notebook('b'));
    expect([a.node, b.node]).toEqual(['n1', 'n1']);
    expect(new Set([...startsOf(a.annotations), ...startsOf(b.annotations)]).size).toBe(2);
    // The second environment's first write met the first's booking and was refused on the version.
    expect(two.store.calls.filter((c) => c.operation === 'putNode').length).toBeGreaterThanOrEqual(2);
  });

  it('the device plugin adding each instance’s identity to the placements is no change of the decision: no Warning', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [{ type: 'ADDED', object: migNode('n1') }]);
    const pod = notebook('nb');
    const { annotations } = await placed(env, pod);
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: forwardedPod(pod, annotations, { rv: '2' }) }]);
    const created = (JSON.parse(annotations['hami.io/vgpu-mig-allocations']!) as Record<string, unknown>[]).map((a) => ({ ...a, migUUID: 'MIG-1', gpuInstanceID: 13, computeInstanceID: 0 }));
    const allocated = await ingestClusterEvents(env.deps, [
      { type: 'MODIFIED', object: forwardedPod(pod, { ...annotations, 'hami.io/vgpu-mig-allocations': JSON.stringify(created), 'hami.io/bind-phase': 'success' }, { rv: '3', phase: 'Running' }) },
    ]);
    expect(allocated.effects).toEqual([]);
    expect(w.store.stored('n1')!.bookings[pod.metadata.uid]!.disputed).toBeUndefined();
  });

  it('takes over a pod placed before us with its placement, so it is not handed out again', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [{ type: 'ADDED', object: migNode('n1') }]);
    const earlier = gpuPod('earlier', [{ name: 'c', gpu: 1, mem: 4000 }]);
    const held = '[{"containerIndex":0,"deviceIndex":0,"gpuUUID":"GPU-n1","profile":"1g.5gb","placement":{"start":6,"size":1},"migUUID":"MIG-x","gpuInstanceID":13,"computeInstanceID":0}]';
    const adopted = await ingestClusterEvents(env.deps, [
      { type: 'ADDED', object: forwardedPod(earlier, { 'hami.io/vgpu-node': 'n1', 'hami.io/vgpu-devices-allocated': 'GPU-n1,NVIDIA,4864,14:;', 'hami.io/vgpu-mig-allocations': held, 'hami.io/bind-phase': 'success' }, { phase: 'Running' }) },
    ]);
    const next = await placed(env, notebook('next'), ['n1'], adopted.viewSeq);
    expect(startsOf(next.annotations)).toEqual([5]);
  });

  it('a pod placed on a MIG card without a placement fails the card closed: nothing more goes on it, and the node says why', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [{ type: 'ADDED', object: migNode('n1') }]);
    const stray = gpuPod('stray', [{ name: 'c', gpu: 1, mem: 4000 }]);
    const taken = await ingestClusterEvents(env.deps, [
      { type: 'ADDED', object: forwardedPod(stray, { 'hami.io/vgpu-node': 'n1', 'hami.io/vgpu-devices-allocated': 'GPU-n1,NVIDIA,4864,14:;', 'hami.io/bind-phase': 'success' }, { phase: 'Running' }) },
    ]);
    const next = await placed(env, notebook('next'), ['n1'], taken.viewSeq);
    expect(next.answer.result.FailedNodes).toEqual({ n1: '1/1 CardNotHealth' });
    expect((await readNodeDevices(env.deps, 'n1')).devices[0]).toMatchObject({
      health: false,
      unhealthyReason: 'a pod booked on this MIG card holds no placement the scheduler can account for',
    });
  });
});
