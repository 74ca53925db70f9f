/** The node lock around binds, on the in-memory store. */
import { bindPodToNode, MAX_OUTCOME_TEXT, recordBindOutcome } from '../../../lib/control/bind';
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import { filterPod } from '../../../lib/control/filter';
import { readNodeDevices, readSchedulerLog } from '../../../lib/control/views';
import { renderNodeDevicesText } from '../../../lib/cli/render';
import { card, forwardedPod, gpuNode, gpuPod, type ContainerSpec } from '../../support/cluster';
import { filterOf, patchOf, world, type Environment } from './fixtures';

async function placed(env: Environment, name: string, containers: ContainerSpec[] = [{ name: 'c', gpu: 1, mem: 1000 }], initContainers: ContainerSpec[] = []) {
  const pod = gpuPod(name, containers, { initContainers });
  const answer = await filterPod(env.deps, filterOf(pod, ['n1']));
  expect(answer.result.NodeNames).toEqual(['n1']);
  return { pod, ref: { namespace: 'default', name, uid: pod.metadata.uid }, annotations: patchOf(answer) ?? {} };
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
    expect(answer.effects.map((e) => e.kind)).toEqual(['PatchNodeAnnotations', 'PatchPodAnnotations', 'BindPod']);
    // HAMi's value, which its device plugin reads to find the pod: <RFC 3339 time>,<namespace>,<pod>.
    expect(answer.effects[0]).toEqual({ kind: 'PatchNodeAnnotations', name: 'n1', annotations: { 'hami.io/mutex.lock': `${new Date(w.clock.now).toISOString().slice(0, 19)}Z,default,a` } });
    expect(w.store.stored('n1')!.lock?.holder).toBe('default/a');
  });

  it('waits while another allocation holds the lock, and binds as soon as it ends', async () => {
    const { w, env } = await setup();
    const a = await placed(env, 'a');
    const b = await placed(env, 'b');
    await bindPodToNode(env.deps, { pod: a.ref, node: 'n1' });
    const started = w.clock.now;
    let reads = 0;
    w.onSleep = async () => {
      reads += 1;
      // 1.2 s into the wait, the device plugin reports a's allocation.
      if (w.clock.now - started >= 1200 && w.store.stored('n1')!.lock?.holderUid === a.ref.uid) {
        await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: forwardedPod(a.pod, { ...a.annotations, 'hami.io/bind-phase': 'success' }) }]);
      }
    };
    const answer = await bindPodToNode(env.deps, { pod: b.ref, node: 'n1' });
    expect(answer.result.Error).toBe('');
    expect(w.store.stored('n1')!.lock?.holder).toBe('default/b');
    expect(w.clock.now - started).toBeLessThan(2000);
    // Backing off 50 ms doubling to 400 ms: a handful of reads, not a poll every millisecond.
    expect(reads).toBeLessThanOrEqual(8);
  });

  it('a hand-over bind (the relay waits for the lock itself) meeting the lock is answered at once: no wait, no failure recorded, no waiter', async () => {
    const { w, env } = await setup();
    const a = await placed(env, 'a');
    const b = await placed(env, 'b');
    await bindPodToNode(env.deps, { pod: a.ref, node: 'n1' });
    const started = w.clock.now;
    const held = await bindPodToNode(env.deps, { pod: b.ref, node: 'n1', handOver: true });
    expect(held).toEqual({ result: { Error: 'node n1 has been locked within 5m0s: node lock contention' }, effects: [], lockHeld: 'default/a' });
    expect(w.clock.now).toBe(started);
    expect(w.store.stored('n1')!.lock?.waiters).toBeUndefined();
    expect((await readSchedulerLog(env.deps, { namespace: 'default', name: 'b', history: false })).bind.status).not.toBe('failed');
    // Once the allocation ends, the same bind takes the lock.
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: forwardedPod(a.pod, { ...a.annotations, 'hami.io/bind-phase': 'success' }) }]);
    const taken = await bindPodToNode(env.deps, { pod: b.ref, node: 'n1', handOver: true });
    expect(taken.result.Error).toBe('');
    expect(taken.lockHeld).toBeUndefined();
    expect(w.store.stored('n1')!.lock?.holder).toBe('default/b');
  });

  it('gives up after HAMI_BIND_LOCK_WAIT_SECONDS with HAMi’s text, and the pod is nudged when the lock ends', async () => {
    const { w, env } = await setup();
    const a = await placed(env, 'a');
    const b = await placed(env, 'b');
    await bindPodToNode(env.deps, { pod: a.ref, node: 'n1' });
    const started = w.clock.now;
    expect((await bindPodToNode(env.deps, { pod: b.ref, node: 'n1' })).result.Error).toBe('node n1 has been locked within 5m0s: node lock contention');
    expect(w.clock.now - started).toBeLessThanOrEqual(5000);
    expect(w.store.stored('n1')!.lock?.waiters).toEqual({ [b.ref.uid]: 'default/b' });
    // The allocation ends: the answer to the forwarded event carries a nudge for b.
    const ended = await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: forwardedPod(a.pod, { ...a.annotations, 'hami.io/bind-phase': 'success' }) }]);
    expect(ended.effects).toEqual([
      { kind: 'PatchNodeAnnotations', name: 'n1', annotations: { 'hami.io/mutex.lock': null }, ifAnnotations: { 'hami.io/mutex.lock': expect.stringMatching(/,default,a$/) } },
      { kind: 'PatchPodAnnotations', namespace: 'default', name: 'b', uid: b.ref.uid, annotations: { 'hami.io/requeue': new Date(w.clock.now).toISOString() } },
    ]);
    expect((await bindPodToNode(env.deps, { pod: b.ref, node: 'n1' })).result.Error).toBe('');
  });

  it('with no wait configured answers contention at once (HAMi’s behaviour)', async () => {
    const w = world();
    const env = w.environment({ HAMI_BIND_LOCK_WAIT_SECONDS: '0' });
    await ingestClusterEvents(env.deps, [{ type: 'ADDED', object: gpuNode('n1', [card('GPU-0'), card('GPU-1')]) }]);
    const a = await placed(env, 'a');
    const b = await placed(env, 'b');
    await bindPodToNode(env.deps, { pod: a.ref, node: 'n1' });
    const started = w.clock.now;
    expect((await bindPodToNode(env.deps, { pod: b.ref, node: 'n1' })).result.Error).toMatch(/node lock contention$/);
    expect(w.clock.now).toBe(started);
  });

  it('follows the Node annotation: seen naming the holder, then deleted by the device plugin, it ends the lock', async () => {
    const { w, env } = await setup();
    const a = await placed(env, 'a');
    const b = await placed(env, 'b');
    const bound = await bindPodToNode(env.deps, { pod: a.ref, node: 'n1' });
    const value = (bound.effects[0] as { annotations: Record<string, string> }).annotations['hami.io/mutex.lock']!;
    await bindPodToNode(env.deps, { pod: b.ref, node: 'n1' });
    // A Node update forwarded before the relay applied the lock patch does not free the lock...
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: gpuNode('n1', [card('GPU-0'), card('GPU-1')], { rv: '2' }) }]);
    expect(w.store.stored('n1')!.lock?.holder).toBe('default/a');
    // ...the Node showing HAMi's value marks the lock mirrored...
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: gpuNode('n1', [card('GPU-0'), card('GPU-1')], { rv: '3', annotations: { 'hami.io/mutex.lock': value } }) }]);
    expect(w.store.stored('n1')!.lock?.mirrored).toBe(true);
    // ...and the device plugin deleting it ends the lock and nudges the pod that waited.
    const released = await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: gpuNode('n1', [card('GPU-0'), card('GPU-1')], { rv: '4' }) }]);
    expect(w.store.stored('n1')!.lock).toBeUndefined();
    expect(released.effects.map((e) => (e.kind === 'PatchPodAnnotations' ? e.name : e.kind))).toEqual(['b']);
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

  it('a failed bind releases the lock, removes its mirror from the Node, and records the failure, cut to a bounded length', async () => {
    const { w, env } = await setup();
    const a = await placed(env, 'a');
    await bindPodToNode(env.deps, { pod: a.ref, node: 'n1' });
    const outcome = await recordBindOutcome(env.deps, { pod: a.ref, node: 'n1', error: 'x'.repeat(1_000_000) });
    // Guarded by the lock's value: a late outcome never deletes the next holder's annotation.
    expect(outcome.effects[0]).toEqual({ kind: 'PatchNodeAnnotations', name: 'n1', annotations: { 'hami.io/mutex.lock': null }, ifAnnotations: { 'hami.io/mutex.lock': expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ,default,a$/) } });
    expect(w.store.stored('n1')!.lock).toBeUndefined();
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'a', history: false });
    expect(log.bind.status).toBe('failed');
    expect(log.bind.summary.length).toBeLessThan(MAX_OUTCOME_TEXT + 100);
    expect(log.bind.summary).toMatch(/… \(995904 more characters cut\)$/);
  });
});

describe('a pod whose bind failed, still booked', () => {
  it('is marked as such beside the card that holds it, in the node view and in hami-diag node', async () => {
    const { w, env } = await setup();
    const a = await placed(env, 'a');
    const b = await placed(env, 'b');
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: forwardedPod(a.pod, { ...a.annotations, 'hami.io/bind-phase': 'failed' }) }]);
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: forwardedPod(b.pod, { ...b.annotations, 'hami.io/bind-phase': 'success' }) }]);
    const view = await readNodeDevices(env.deps, 'n1');
    const held = view.devices.filter((d) => d.pods.length > 0);
    expect(held.flatMap((d) => d.pods).sort()).toEqual(['default/a', 'default/b']);
    expect(held.flatMap((d) => d.bindFailed ?? [])).toEqual(['default/a']);
    const text = renderNodeDevicesText(view, { nowMs: w.clock.now });
    expect(text).toContain('default/a (bind failed)');
    expect(text).not.toContain('default/b (bind failed)');
  });
});
