/**
 * Decide-ahead (docs/relay.md, "Deciding ahead"), on the in-memory store: queue order, bookings sent side by side
 * that never over-book, the record marked as decided ahead, and what each pod's answer carries.
 */
import { AHEAD_CONCURRENCY, decideAhead, type AheadPod } from '../../../lib/control/decideAhead';
import { filterPod } from '../../../lib/control/filter';
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import { readSchedulerLog } from '../../../lib/control/views';
import { AHEAD_USED_HEADER, DECIDED_AHEAD_ANNOTATION, markedDecision, queueOrder } from '../../../lib/wire/decidedAhead';
import { bindOutcomeRoute } from '../../../lib/http/routes';
import { BadRequestError } from '../../../lib/errors';
import { card, forwardedPod, gpuNode, gpuPod, type ContainerSpec } from '../../support/cluster';
import { filterOf, world, type Environment } from './fixtures';

const nodeEvent = (name: string, cards: number, devmem: number) => ({
  type: 'ADDED',
  object: gpuNode(
    name,
    Array.from({ length: cards }, (_, i) => card(`GPU-${name}-${i}`, { devmem, devcore: 100, count: 10 })),
  ),
});

const ahead = (name: string, containers: ContainerSpec[], priority = 0, createdMs?: number): AheadPod => ({ pod: gpuPod(name, containers), priority, createdMs });

async function cluster(env: Environment, nodes: [string, number, number][]): Promise<void> {
  await ingestClusterEvents(env.deps, nodes.map(([name, cards, devmem]) => nodeEvent(name, cards, devmem)));
}

const TWO_NODES: [string, number, number][] = [
  ['n1', 1, 16000],
  ['n2', 1, 16000],
];

/** A world of `nodes` (name, cards, MiB a card) and a pod `name` asking one card of `mem` MiB, not decided yet. */
async function onePodOn(nodes: [string, number, number][], name: string, mem: number) {
  const w = world();
  const env = w.environment();
  await cluster(env, nodes);
  const item = ahead(name, [{ name: 'c', gpu: 1, mem }]);
  return { w, env, item, pod: item.pod as ReturnType<typeof gpuPod>, uid: item.pod.metadata.uid! };
}

/** `onePodOn` two one-card nodes, the pod (10,000 MiB) decided ahead: the node it was decided on, and the other. */
async function decidedOnOneOfTwo(name: string) {
  const setup = await onePodOn(TWO_NODES, name, 10000);
  const decided = (await decideAhead(setup.env.deps, { pods: [setup.item] })).decisions[0]!.node!;
  return { ...setup, decided, other: decided === 'n1' ? 'n2' : 'n1' };
}

describe('decide-ahead', () => {
  it('orders pods as kube-scheduler’s queue does: priority first, then the oldest, then as sent', () => {
    const pods = [ahead('late', [], 0, 3000), ahead('none', [], 0), ahead('urgent', [], 10, 9000), ahead('early', [], 0, 1000), ahead('early-too', [], 0, 1000)];
    expect(queueOrder(pods, (p) => p).map((p) => p.pod.metadata.name)).toEqual(['urgent', 'early', 'early-too', 'late', 'none']);
  });

  it('gives the last free card to the pod kube-scheduler would pop first, whatever the order sent', async () => {
    const w = world();
    const env = w.environment();
    await cluster(env, [['n1', 1, 16000]]);
    const whole = [{ name: 'c', gpu: 1, mem: 12000 }];
    const answer = await decideAhead(env.deps, { pods: [ahead('young', whole, 0, 5000), ahead('old', whole, 0, 1000), ahead('important', whole, 5, 9000)] });
    expect(answer.decisions.map((d) => [d.name, d.status])).toEqual([
      ['young', 'noFit'],
      ['old', 'noFit'],
      ['important', 'fit'],
    ]);
    expect(answer.decisions[0]!.failedNodes).toEqual({ n1: expect.stringContaining('CardInsufficientMemory') });
    // No fit is not applied ahead: kube-scheduler's own filter reports it live.
    expect(answer.decisions[0]!.Effects).toEqual([]);
  });

  it('books in queue order and never past a card: as many pods placed as the cards hold, each counter within its card', async () => {
    const w = world();
    const env = w.environment();
    await cluster(env, [
      ['n1', 2, 16000],
      ['n2', 2, 16000],
    ]);
    const pods = Array.from({ length: 20 }, (_, i) => ahead(`p${i}`, [{ name: 'c', gpu: 1, mem: 7000, cores: 10 }], 0, 1000 + i));
    const answer = await decideAhead(env.deps, { pods });
    const placed = answer.decisions.filter((d) => d.status === 'fit');
    // 4 cards of 16,000 MiB hold two 7,000 MiB pods each.
    expect(placed).toHaveLength(8);
    expect(answer.decisions.filter((d) => d.status === 'noFit')).toHaveLength(12);
    // The oldest pods are the ones placed (queue order), though their bookings were under way side by side.
    expect(placed.map((d) => d.name).sort()).toEqual(['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7'].sort());
    for (const name of ['n1', 'n2']) {
      const stored = w.store.stored(name)!;
      for (const counter of Object.values(stored.counters)) expect(counter.mem).toBeLessThanOrEqual(16000);
      expect(Object.keys(stored.bookings)).toHaveLength(4);
    }
  });

  it('sends the batch’s bookings side by side, a few at once, not one after another', async () => {
    const w = world();
    const env = w.environment();
    await cluster(env, [
      ['n1', 8, 16000],
      ['n2', 8, 16000],
    ]);
    // Each booking's round trip ends on the next turn of the event loop, as a store's would.
    let inFlight = 0;
    let most = 0;
    const ledger = env.deps.ledger;
    const slowLedger = {
      ...ledger,
      reserve: async (...args: Parameters<typeof ledger.reserve>) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise<void>((resolve) => setImmediate(resolve));
        try {
          return await ledger.reserve(...args);
        } finally {
          inFlight -= 1;
        }
      },
    };
    const pods = Array.from({ length: 16 }, (_, i) => ahead(`s${i}`, [{ name: 'c', gpu: 1, mem: 4000 }], 0, 1000 + i));
    const answer = await decideAhead({ ...env.deps, ledger: slowLedger }, { pods });
    expect(answer.decisions.every((d) => d.status === 'fit')).toBe(true);
    // As many at once as the batch allows, and more than one.
    expect(most).toBe(AHEAD_CONCURRENCY);
    expect(most).toBeGreaterThan(1);
  });

  it('answers the node with the filter’s Effects, marked as decided ahead, and records the attempt as such', async () => {
    const w = world();
    const env = w.environment();
    await cluster(env, [['n1', 2, 16000]]);
    const item = ahead('p1', [{ name: 'c', gpu: 1, mem: 4000, cores: 20 }]);
    const answer = await decideAhead(env.deps, { pods: [item] });
    const [decision] = answer.decisions;
    expect(decision).toMatchObject({ status: 'fit', node: 'n1', uid: item.pod.metadata.uid, namespace: 'default', name: 'p1' });
    const patch = decision!.Effects.find((e) => e.kind === 'PatchPodAnnotations');
    expect(patch?.kind === 'PatchPodAnnotations' && patch.annotations[DECIDED_AHEAD_ANNOTATION]).toBe(`n1@${Math.floor(w.clock.now / 1000)}`);
    // The mark names the decision only together with the annotations it was set with.
    expect(markedDecision((patch as { annotations: Record<string, string> }).annotations)).toEqual({ node: 'n1', timeS: Math.floor(w.clock.now / 1000) });
    expect(markedDecision({ ...(patch as { annotations: Record<string, string> }).annotations, 'hami.io/vgpu-node': 'n2' })).toBeUndefined();
    expect(answer.view.seq).toBeGreaterThan(0);
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'p1', history: false });
    expect(log.ahead).toEqual({ kind: 'decided' });
    expect(log.filter.status).toBe('passed');
  });

  it('a live filter of a pod decided ahead gives its booking back first: the pod is never counted twice', async () => {
    const { w, env, pod, uid, decided, other } = await decidedOnOneOfTwo('p1');
    // kube-scheduler excluded the decided node (a taint added since): the live path decides among the rest.
    const live = await filterPod(env.deps, { ...filterOf(pod, [other]), ahead: { kind: 'notUsed', reason: `node ${decided} not among NodeNames` } });
    expect(live.result.NodeNames).toEqual([other]);
    expect(w.store.stored(decided)!.bookings[uid]).toBeUndefined();
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'p1', history: false });
    expect(log.ahead).toEqual({ kind: 'notUsed', reason: `node ${decided} not among NodeNames` });
  });

  it('a live filter that finds no fit still gives back the booking made ahead: its cards are free for other pods at once', async () => {
    const { w, env, item, pod, uid } = await onePodOn(
      [
        ['n1', 1, 16000],
        ['small', 1, 4000],
      ],
      'p1',
      10000,
    );
    const answer = await decideAhead(env.deps, { pods: [item] });
    expect(answer.decisions[0]!.node).toBe('n1');
    // kube-scheduler no longer sends n1 (a taint added since), and the pod fits nowhere else.
    const live = await filterPod(env.deps, { ...filterOf(pod, ['small']), ahead: { kind: 'notUsed', reason: 'node n1 not among NodeNames' } });
    expect(live.result.NodeNames).toBeNull();
    expect(w.store.stored('n1')!.bookings[uid]).toBeUndefined();
    const other = gpuPod('other', [{ name: 'c', gpu: 1, mem: 12000 }]);
    expect((await filterPod(env.deps, filterOf(other, ['n1']))).result.NodeNames).toEqual(['n1']);
  });

  it('a batch that comes after the pod was decided live skips it and leaves the live booking alone', async () => {
    const { w, env, item, pod, uid } = await onePodOn(TWO_NODES, 'p1', 10000);
    // kube-scheduler's filter stopped waiting for the batch and was decided live first.
    const live = await filterPod(env.deps, filterOf(pod, ['n2']));
    expect(live.result.NodeNames).toEqual(['n2']);
    const answer = await decideAhead(env.deps, { pods: [item] });
    expect(answer.decisions[0]).toMatchObject({ status: 'skipped', Effects: [] });
    expect(w.store.stored('n2')!.bookings[uid]?.state).toBe('reserved');
    expect(w.store.stored('n1')?.bookings[uid]).toBeUndefined();
  });

  it('a decision kube-scheduler never uses stays a reservation while the pod is Pending, and expires with the reservation TTL', async () => {
    const { w, env, item, pod, uid } = await onePodOn([['n1', 1, 16000]], 'stuck', 12000);
    const answer = await decideAhead(env.deps, { pods: [item] });
    const patch = answer.decisions[0]!.Effects.find((e) => e.kind === 'PatchPodAnnotations');
    if (patch?.kind !== 'PatchPodAnnotations') throw new Error('no patch');
    // The relay applied the patch and forwards the pod, still Pending (kube-scheduler never got to it).
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: forwardedPod(pod, patch.annotations) }]);
    expect(w.store.stored('n1')!.bookings[uid]!.state).toBe('reserved');
    const other = gpuPod('other', [{ name: 'c', gpu: 1, mem: 12000 }]);
    expect((await filterPod(env.deps, filterOf(other, ['n1']))).result.NodeNames).toBeNull();
    w.clock.now += env.deps.config.reservationTtlSeconds * 1000 + 1;
    expect((await filterPod(env.deps, filterOf(other, ['n1']))).result.NodeNames).toEqual(['n1']);
  });

  it('the bind outcome says when kube-scheduler’s filter used the decision made ahead; a value that is not a time is refused', async () => {
    const { env, item, uid } = await onePodOn([['n1', 1, 16000]], 'used', 4000);
    await decideAhead(env.deps, { pods: [item] });
    const args = JSON.stringify({ PodName: 'used', PodNamespace: 'default', PodUID: uid, Node: 'n1', Error: '' });
    const outcome = (usedAt: string) => bindOutcomeRoute.handle(env.deps, { body: args, pathParameters: {}, query: {}, headers: { [AHEAD_USED_HEADER]: usedAt } }, () => undefined);
    await expect(outcome('soon')).rejects.toThrow(BadRequestError);
    expect((await outcome('2026-11-28T17:00:00.250Z')).statusCode).toBe(200);
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'used', history: false });
    expect(log.ahead).toEqual({ kind: 'decided' });
    expect(log.bind).toMatchObject({ status: 'passed', node: 'n1', filterUsedAhead: '2026-11-28T17:00:00.250Z' });
  });

  it('a reservation made ahead on another node than the one the pod was bound to is dropped when the bind is seen', async () => {
    const { w, env, pod, uid, decided, other } = await decidedOnOneOfTwo('late');
    expect(w.store.stored(decided)!.bookings[uid]?.state).toBe('reserved');
    // The batch's booking landed after kube-scheduler's filter had decided the pod live elsewhere; the pod is bound there.
    const bound = { 'hami.io/vgpu-node': other, 'hami.io/vgpu-devices-allocated': `GPU-${other}-0,NVIDIA,10000,0:;`, 'hami.io/bind-phase': 'allocating' };
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: forwardedPod(pod, bound) }]);
    expect(w.store.stored(decided)!.bookings[uid]).toBeUndefined();
  });

  it('a decision kube-scheduler used is confirmed once the pod is bound', async () => {
    const w = world();
    const env = w.environment();
    await cluster(env, [['n1', 1, 16000]]);
    const item = ahead('used', [{ name: 'c', gpu: 1, mem: 12000 }]);
    const answer = await decideAhead(env.deps, { pods: [item] });
    const patch = answer.decisions[0]!.Effects.find((e) => e.kind === 'PatchPodAnnotations');
    if (patch?.kind !== 'PatchPodAnnotations') throw new Error('no patch');
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: forwardedPod(item.pod as ReturnType<typeof gpuPod>, patch.annotations, { phase: 'Running', rv: '3' }) }]);
    expect(w.store.stored('n1')!.bookings[item.pod.metadata.uid!]!.state).toBe('confirmed');
  });

  // docs/locks.md, "Lock-aware placement": a pod of the batch placed on a node is an allocation in progress there (its
  // bind will take the node's lock), so the pods after it pass that node over while another fits, and once every node
  // has one, take the node with the fewest (HAMi's choice among equals).
  it.each([
    { lockAware: 'true', nodes: ['n4', 'n3', 'n2', 'n1', 'n4', 'n3'], why: 'one pod per node while a node with none fits, then the one with the fewest allocations under way' },
    { lockAware: 'false', nodes: ['n4', 'n4', 'n4', 'n4', 'n4', 'n4'], why: 'HAMi’s choice for every pod' },
  ])('binpack with HAMI_LOCK_AWARE=$lockAware: $why', async ({ lockAware, nodes }) => {
    const settings = { HAMI_LOCK_AWARE: lockAware, HAMI_NODE_SCHEDULER_POLICY: 'binpack' };
    const names = ['n1', 'n2', 'n3', 'n4'];
    const pods = Array.from({ length: 6 }, (_, i) => ahead(`p${i}`, [{ name: 'c', gpu: 1, mem: 3000, cores: 10 }], 0, 1000 + i));
    const w = world();
    const env = w.environment(settings);
    await cluster(env, names.map((name) => [name, 2, 16000]));
    const answer = await decideAhead(env.deps, { pods });
    expect(answer.decisions.map((d) => d.node)).toEqual(nodes);
    // The same pods filtered live one after another, on the same cluster, land on the same nodes.
    const live = world();
    const liveEnv = live.environment(settings);
    await cluster(liveEnv, names.map((name) => [name, 2, 16000]));
    const liveNodes: (string | undefined)[] = [];
    for (const item of pods) liveNodes.push((await filterPod(liveEnv.deps, filterOf(item.pod as ReturnType<typeof gpuPod>, names))).result.NodeNames?.[0]);
    expect(liveNodes).toEqual(nodes);
  });

  it('skips pods that ask for no managed resource, writing nothing', async () => {
    const w = world();
    const env = w.environment();
    await cluster(env, [['n1', 1, 16000]]);
    const answer = await decideAhead(env.deps, { pods: [ahead('cpu', [{ name: 'c' }])] });
    expect(answer.decisions).toEqual([expect.objectContaining({ status: 'skipped', Effects: [] })]);
    expect(Object.keys(w.store.stored('n1')!.bookings)).toEqual([]);
  });
});
