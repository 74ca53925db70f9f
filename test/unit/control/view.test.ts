/**
 * The warm view resolves a candidate list it has seen before by position (kube-scheduler sends the same list, filter
 * after filter) and resolves it again when nodes come or go; either way the engine gets, by position, the states
 * `engineNodes` gives by name.
 */
import { bindPodToNode } from '../../../lib/control/bind';
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import { filterPod } from '../../../lib/control/filter';
import { allocationsOn } from '../../../lib/control/ledger';
import type { ClusterView } from '../../../lib/control/view';
import { card, gpuNode, gpuPod } from '../../support/cluster';
import { filterOf, world } from './fixtures';

const node = (type: 'ADDED' | 'DELETED', name: string) => ({ type, object: gpuNode(name, [card(`GPU-${name}-0`, { devmem: 16384, devcore: 100, count: 10 })]) });

/** What `engineNodes` gives for each name. */
function byName(view: ClusterView, names: readonly string[], nowMs: number, excludeUid?: string) {
  const nodes = view.engineNodes(nowMs, excludeUid);
  return names.map((name) => nodes.get(name));
}

describe('view: candidate lists', () => {
  it('gives the states engineNodes gives, and the list it resolved before while the names and the nodes are the same', async () => {
    const w = world();
    const ingest = w.environment();
    const decider = w.environment();
    await ingestClusterEvents(ingest.deps, ['n1', 'n2', 'n3'].map((n) => node('ADDED', n)));
    const view = decider.deps.view;
    await view.prepare();

    const first = view.engineCandidates(['n1', 'n9', 'n3'], w.clock.now);
    expect(first.candidates).toEqual(['n1', 'n9', 'n3']);
    first.states.forEach((state, i) => expect(state).toBe(byName(view, first.candidates, w.clock.now)[i]));
    expect(first.states[1]).toBeUndefined();
    // The same names in a new array (the next request): the list resolved before, which the engine's memo knows.
    expect(view.engineCandidates(['n1', 'n9', 'n3'], w.clock.now).candidates).toBe(first.candidates);
    // Other names, or the same in another order: resolved on their own.
    const reordered = ['n3', 'n9', 'n1'];
    expect(view.engineCandidates(reordered, w.clock.now).candidates).toBe(reordered);

    // A node comes: the list is resolved again, and the newcomer is found.
    await ingestClusterEvents(ingest.deps, [node('ADDED', 'n9')]);
    const list = ['n1', 'n9', 'n3'];
    await view.learn(list);
    const joined = view.engineCandidates(list, w.clock.now);
    expect(joined.candidates).toBe(list);
    expect(joined.states[1]?.name).toBe('n9');
    joined.states.forEach((state, i) => expect(state).toBe(byName(view, list, w.clock.now)[i]));

    // A node changes (here: it is being deleted): the same list, each state as the node is now.
    const gone = await ingestClusterEvents(ingest.deps, [node('DELETED', 'n3')]);
    await view.prepare(gone.viewSeq);
    const after = view.engineCandidates(['n1', 'n9', 'n3'], w.clock.now);
    expect(after.candidates).toBe(list);
    expect(after.states[2]).not.toBe(joined.states[2]);
    expect(after.states[2]?.registration).toEqual({ registered: false, reason: 'node deleted' });
    after.states.forEach((state, i) => expect(state).toBe(byName(view, list, w.clock.now)[i]));
  });

  it('leaves the filtered pod’s own bookings out of its nodes’ states, as engineNodes does', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, ['n1', 'n2'].map((n) => node('ADDED', n)));
    const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 4000, cores: 20 }]);
    await filterPod(env.deps, filterOf(pod, ['n1']));
    const view = env.deps.view;
    const uid = pod.metadata.uid;
    const withPod = view.engineCandidates(['n1', 'n2'], w.clock.now);
    const without = view.engineCandidates(['n1', 'n2'], w.clock.now, uid);
    expect(without.states).toEqual(byName(view, ['n1', 'n2'], w.clock.now, uid));
    // The booking shows in n1's usage, except for the pod itself.
    expect(without.states[0]).not.toEqual(withPod.states[0]);
    expect(without.states[1]).toBe(withPod.states[1]);
  });
});

describe('view: who allocates on a node (lock-aware placement)', () => {
  it('answers as allocationsOn does on the node’s ledger, as time passes and as the ledger changes', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, ['n1', 'n2'].map((n) => node('ADDED', n)));
    const view = env.deps.view;
    await view.prepare();
    const lockExpireMs = env.deps.config.nodeLockExpireSeconds * 1000;
    const asLedger = (name: string, nowMs: number) => allocationsOn(view.get(name)!, nowMs, lockExpireMs);
    const ask = [{ name: 'c', gpu: 1, mem: 4000, cores: 20 }];
    expect(view.allocationsOn('n1', w.clock.now, lockExpireMs)).toBeUndefined();
    expect(view.allocationsOn('unknown', w.clock.now, lockExpireMs)).toBeUndefined();

    // A pod placed on n1: n1 is busy with its allocation, n2 is not.
    await filterPod(env.deps, filterOf(gpuPod('first', ask), ['n1']));
    expect(view.allocationsOn('n1', w.clock.now, lockExpireMs)).toEqual({ holder: 'default/first', count: 1 });
    expect(view.allocationsOn('n2', w.clock.now, lockExpireMs)).toBeUndefined();
    // The same ledger asked later: the time rules still apply (at each moment as the ledger's own answer).
    for (const later of [1, lockExpireMs - 1, lockExpireMs, 10 * lockExpireMs]) {
      expect(view.allocationsOn('n1', w.clock.now + later, lockExpireMs)).toEqual(asLedger('n1', w.clock.now + later));
    }
    expect(view.allocationsOn('n1', w.clock.now + 10 * lockExpireMs, lockExpireMs)).toBeUndefined();

    // n2's ledger changes after it was asked about: the answer follows the new ledger.
    await filterPod(env.deps, filterOf(gpuPod('second', ask), ['n2']));
    expect(view.allocationsOn('n2', w.clock.now, lockExpireMs)).toEqual({ holder: 'default/second', count: 1 });
    expect(view.allocationsOn('n2', w.clock.now, lockExpireMs)).toEqual(asLedger('n2', w.clock.now));

    // The first pod's bind takes n1's lock (in the store; this view learns of it when the Node shows it): the lock's
    // holder and its placement are one allocation under way, not two.
    const first = gpuPod('first', ask);
    await bindPodToNode(env.deps, { pod: { namespace: 'default', name: 'first', uid: first.metadata.uid }, node: 'n1' });
    expect(w.store.stored('n1')!.lock?.holder).toBe('default/first');
    expect(allocationsOn(w.store.stored('n1')!, w.clock.now, lockExpireMs)).toEqual({ holder: 'default/first', count: 1 });
    // A second pod only n1 may take: two allocations under way there, the lock's holder named.
    await filterPod(env.deps, filterOf(gpuPod('third', ask), ['n1']));
    expect(allocationsOn(w.store.stored('n1')!, w.clock.now, lockExpireMs)).toEqual({ holder: 'default/first', count: 2 });
    expect(view.allocationsOn('n1', w.clock.now, lockExpireMs)?.count).toBe(2);
  });
});
