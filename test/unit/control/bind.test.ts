/** The node lock around binds, on the in-memory store. */
import { bindPodToNode, MAX_OUTCOME_TEXT, recordBindOutcome } from '../../../lib/control/bind';
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import { filterPod } from '../../../lib/control/filter';
import { readSchedulerLog } from '../../../lib/control/views';
import { card, forwardedPod, gpuNode, gpuPod, type ContainerSpec } from '../../support/cluster';
import { world, type Environment } from './fixtures';

async function placed(env: Environment, name: string, containers: ContainerSpec[] = [{ name: 'c', gpu: 1, mem: 1000 }], initContainers: ContainerSpec[] = []) {
  const pod = gpuPod(name, containers, { initContainers });
  const answer = await filterPod(env.deps, { pod, podRef: { namespace: 'default', name, uid: pod.metadata.uid }, nodeNames: ['n1'], nodes: null });
  expect(answer.result.NodeNames).toEqual(['n1']);
  const patch = answer.effects.find((e) => e.kind === 'PatchPodAnnotations');
  return { pod, ref: { namespace: 'default', name, uid: pod.metadata.uid }, annotations: (patch && 'annotations' in patch ? patch.annotations : {}) as Record<string, string> };
}

async function setup(): Promise<{ w: ReturnType<typeof world>; env: Environment }> {
  const w = world();
  const env = w.environment();
  await ingestClusterEvents(env.deps, [{ type: 'ADDED', object: gpuNode('n1', [card('GPU-0'), card('GPU-1')]) }]);
  return { w, env };
}

describe('bind', () => {
  it('takes the node lock and answers the allocating patch and the Binding', async () => {
    const { w, env } = await setup();
    const a = await placed(env, 'a');
    const answer = await bindPodToNode(env.deps, { pod: a.ref, node: 'n1' });
    expect(answer.result.Error).toBe('');
    expect(answer.effects.map((e) => e.kind)).toEqual(['PatchPodAnnotations', 'BindPod']);
    expect(w.store.stored('n1')!.lock?.holder).toBe('default/a');
  });

  it('answers HAMi’s contention text while another allocation holds the lock, and takes over once it ended', async () => {
    const { env } = await setup();
    const a = await placed(env, 'a');
    const b = await placed(env, 'b');
    await bindPodToNode(env.deps, { pod: a.ref, node: 'n1' });
    expect((await bindPodToNode(env.deps, { pod: b.ref, node: 'n1' })).result.Error).toBe('node n1 has been locked within 5m0s: node lock contention');
    // The device plugin reports a's allocation: the lock is free (released, or taken over if the release was missed).
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: forwardedPod(a.pod, { ...a.annotations, 'hami.io/bind-phase': 'success' }) }]);
    expect((await bindPodToNode(env.deps, { pod: b.ref, node: 'n1' })).result.Error).toBe('');
  });

  it('refuses a pod with no booking on the node', async () => {
    const { env } = await setup();
    const answer = await bindPodToNode(env.deps, { pod: { namespace: 'default', name: 'ghost', uid: 'uid-ghost' }, node: 'n1' });
    expect(answer.result.Error).toBe('pod default/ghost has no device booking on node n1; it must pass the filter first');
  });

  it('needs no lock for a pod whose cards are all in init containers', async () => {
    const { w, env } = await setup();
    const a = await placed(env, 'a', [{ name: 'c' }], [{ name: 'init', gpu: 1, mem: 1000 }]);
    expect((await bindPodToNode(env.deps, { pod: a.ref, node: 'n1' })).result.Error).toBe('');
    expect(w.store.stored('n1')!.lock).toBeUndefined();
  });

  it('a failed bind releases the lock and records the failure, cut to a bounded length', async () => {
    const { w, env } = await setup();
    const a = await placed(env, 'a');
    await bindPodToNode(env.deps, { pod: a.ref, node: 'n1' });
    await recordBindOutcome(env.deps, { pod: a.ref, node: 'n1', error: 'x'.repeat(1_000_000) });
    expect(w.store.stored('n1')!.lock).toBeUndefined();
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'a', history: false });
    expect(log.bind.status).toBe('failed');
    expect(log.bind.summary.length).toBeLessThan(MAX_OUTCOME_TEXT + 100);
    expect(log.bind.summary).toMatch(/… \(995904 more characters cut\)$/);
  });
});
