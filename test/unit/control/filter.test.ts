/**
 * The filter's rules, on the in-memory store: what is booked and under which guard, what a stale view may and
 * may not do, when the view reads the store, and how bad pods and bad state are answered.
 */
import { filterPod } from '../../../lib/control/filter';
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import { bindPodToNode } from '../../../lib/control/bind';
import { emptyLedger, MAX_BOOKINGS_PER_NODE, nextLedger, type Booking } from '../../../lib/control/ledger';
import { readNodeDevices, readSchedulerLog } from '../../../lib/control/views';
import { parseNodeRegistration } from '../../../lib/engine/registration';
import { defaultEngineConfig } from '../../../lib/config';
import { card, forwardedPod, gpuNode, gpuPod, type ContainerSpec } from '../../support/cluster';
import { filterOf, placedPatch, world, type Environment } from './fixtures';
import { NotFoundError } from '../../../lib/errors';

const cardsOf = (name: string, cards = 2, spec: { devmem?: number; devcore?: number; count?: number } = {}) =>
  Array.from({ length: cards }, (_, i) => card(`GPU-${name}-${i}`, { devmem: spec.devmem ?? 16384, devcore: spec.devcore ?? 100, count: spec.count ?? 10 }));

const nodeEvent = (name: string, cards = 2, spec: { devmem?: number; devcore?: number; count?: number } = {}) => ({ type: 'ADDED', object: gpuNode(name, cardsOf(name, cards, spec)) });

const pod = (name: string, containers: ContainerSpec[] = [{ name: 'c', gpu: 1, mem: 4000, cores: 20 }]) => gpuPod(name, containers);

async function registered(env: Environment, ...names: string[]): Promise<number> {
  const answer = await ingestClusterEvents(env.deps, names.map((n) => nodeEvent(n)));
  return answer.viewSeq ?? 0;
}

/** Two environments on one store: one takes cluster events (n1 registered), the other decides (its view loaded). */
async function ingestingAndDeciding() {
  const w = world();
  const ingest = w.environment();
  const decider = w.environment();
  await registered(ingest, 'n1');
  await filterPod(decider.deps, filterOf(pod('warm-up'), ['n1']));
  return { w, ingest, decider };
}

describe('filter: booking', () => {
  it('books the chosen cards under the engine’s claims, and the counters hold exactly the booking', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1');
    const answer = await filterPod(env.deps, filterOf(pod('p1'), ['n1']));
    expect(answer.result.NodeNames).toEqual(['n1']);
    const stored = w.store.stored('n1')!;
    const booking = stored.bookings[pod('p1').metadata.uid]!;
    expect(booking).toMatchObject({ state: 'reserved', origin: 'decided', uses: [{ mem: 4000, cores: 20, slots: 1 }], holdsAppCards: true });
    const card = booking.uses[0]!.uuid;
    expect(stored.counters[card]).toEqual({ slots: 1, mem: 4000, cores: 20 });
  });

  it('in steady state waits on one store round trip: the booking and the view’s refresh go together, nothing is read first', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1', 'n2');
    await filterPod(env.deps, filterOf(pod('warm-up'), ['n1', 'n2']));
    const before = env.store.calls.length;
    await filterPod(env.deps, filterOf(pod('p2'), ['n1', 'n2']));
    const calls = env.store.calls.slice(before);
    expect(calls.map((c) => c.operation)).toEqual(['reserve', 'readJournal']);
    expect(calls[1]!.inFlightAtStart).toBe(1);
  });

  it('a view behind the journal entry the relay names catches up before deciding', async () => {
    const { ingest, decider } = await ingestingAndDeciding();
    // A node registered through another environment: this view has not seen it.
    const seq = await registered(ingest, 'n2');
    const stale = await filterPod(decider.deps, filterOf(pod('p3', [{ name: 'c', gpu: 1, mem: 16000 }]), ['n2']));
    // Unknown names are read before being called unregistered, so even without the relay's word the node is found.
    expect(stale.result.NodeNames).toEqual(['n2']);
    const seq2 = await ingestClusterEvents(ingest.deps, [nodeEvent('n2', 2, { devmem: 1000 })]);
    // Without the relay's position the view (fresh by its age bound) still holds the old, larger cards...
    const before = decider.store.calls.length;
    const told = await filterPod(decider.deps, filterOf(pod('p4', [{ name: 'c', gpu: 1, mem: 8000 }]), ['n2'], seq2.viewSeq));
    // ...with it, the view reads the journal first and decides on the shrunk cards (p3's is now booked past its memory).
    expect(decider.store.calls[before]?.operation).toBe('readJournal');
    expect(told.result.FailedNodes).toEqual({ n2: '1/2 CardInsufficientMemory, 1/2 CardOvercommitted' });
    expect(seq).toBeLessThan(seq2.viewSeq!);
  });

  it('a journal entry that cannot be read makes a view reload the whole cluster, since it may have named any node', async () => {
    const { w, decider } = await ingestingAndDeciding();
    // n1's cards shrink in the store with no readable entry naming n1 (as if that entry's item were damaged).
    const stored = w.store.stored('n1')!;
    const shrunk = parseNodeRegistration(gpuNode('n1', cardsOf('n1', 2, { devmem: 1000 })), defaultEngineConfig);
    expect((await w.store.putNode(nextLedger({ ...stored, registration: shrunk, registrationVersion: stored.registrationVersion + 1 }, w.clock.now), stored.version)).ok).toBe(true);
    const loads = () => decider.lines.filter((l) => l.message === 'ViewLoaded').length;
    const loadsBefore = loads();
    // An entry that names nothing leaves the view as it was...
    await decider.deps.view.prepare(await w.store.appendJournal({ atMs: w.clock.now, nodes: {}, namespaces: [] }));
    expect(decider.deps.view.get('n1')?.registrationVersion).toBe(stored.registrationVersion);
    // ...one that cannot be read does not: the view starts again from the whole cluster and decides on the small cards
    // (the warm-up pod's is now booked past its memory).
    const damaged = w.store.damageJournal();
    const answer = await filterPod(decider.deps, filterOf(pod('p1', [{ name: 'c', gpu: 1, mem: 8000 }]), ['n1'], damaged));
    expect(answer.result.FailedNodes).toEqual({ n1: '1/2 CardInsufficientMemory, 1/2 CardOvercommitted' });
    expect(loads()).toBe(loadsBefore + 1);
  });

  it('a decision on a stale view never over-allocates: the guard refuses it, the node alone is re-read, and the pod lands where it fits', async () => {
    const w = world();
    // HAMi's exact choice: lock-aware placement would steer B away from n1 before any guard is needed.
    const a = w.environment({ HAMI_LOCK_AWARE: 'false' });
    const b = w.environment({ HAMI_LOCK_AWARE: 'false' });
    await ingestClusterEvents(a.deps, [nodeEvent('n1', 1, { devmem: 10000 }), nodeEvent('n2', 1, { devmem: 10000 })]);
    // Both environments load their views.
    await filterPod(a.deps, filterOf(pod('a-0', [{ name: 'c', gpu: 1, mem: 1 }]), ['n1']));
    await filterPod(b.deps, filterOf(pod('b-0', [{ name: 'c', gpu: 1, mem: 1 }]), ['n1']));
    // A books 8000 on n1; B still sees n1 nearly idle and prefers it (binpack keeps to the busier n1).
    expect((await filterPod(a.deps, filterOf(pod('a-1', [{ name: 'c', gpu: 1, mem: 8000 }]), ['n1']))).result.NodeNames).toEqual(['n1']);
    const before = b.store.calls.length;
    const answer = await filterPod(b.deps, filterOf(pod('b-1', [{ name: 'c', gpu: 1, mem: 8000 }]), ['n1', 'n2']));
    expect(answer.result.NodeNames).toEqual(['n2']);
    const calls = b.store.calls.slice(before).map((c) => c.operation);
    // The refused write returned the node as stored (as DynamoDB does); nothing else was read.
    expect(calls).toEqual(['reserve', 'readJournal', 'reserve', 'readJournal']);
    for (const name of ['n1', 'n2']) expect(w.store.stored(name)!.counters[`GPU-${name}-0`]!.mem).toBeLessThanOrEqual(10000);
  });

  it('a pod filtered again replaces its own booking on the node, and gives back what it held elsewhere', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1', 'n2');
    const p = pod('again');
    expect((await filterPod(env.deps, filterOf(p, ['n1']))).result.NodeNames).toEqual(['n1']);
    expect((await filterPod(env.deps, filterOf(p, ['n1']))).result.NodeNames).toEqual(['n1']);
    expect(Object.values(w.store.stored('n1')!.counters).reduce((s, c) => s + c.mem, 0)).toBe(4000);
    const before = env.store.calls.length;
    expect((await filterPod(env.deps, filterOf(p, ['n2']))).result.NodeNames).toEqual(['n2']);
    // Given back from the view's copy of n1, guarded by its version: no read first.
    expect(env.store.calls.slice(before).map((c) => c.operation)).toEqual(['reserve', 'readJournal', 'putNode']);
    expect(Object.values(w.store.stored('n1')!.counters).reduce((s, c) => s + c.mem, 0)).toBe(0);
    expect(Object.values(w.store.stored('n2')!.counters).reduce((s, c) => s + c.mem, 0)).toBe(4000);
  });

  it('a pod filtered again gives back its booking from a stale copy of the node without touching another pod’s', async () => {
    const w = world();
    const a = w.environment({ HAMI_LOCK_AWARE: 'false' });
    const b = w.environment({ HAMI_LOCK_AWARE: 'false' });
    await ingestClusterEvents(a.deps, [nodeEvent('n1', 1, { devmem: 10000 }), nodeEvent('n2', 1, { devmem: 10000 })]);
    const p = pod('p', [{ name: 'c', gpu: 1, mem: 3000 }]);
    expect((await filterPod(a.deps, filterOf(p, ['n1']))).result.NodeNames).toEqual(['n1']);
    // B books on n1 after A last looked: A's copy of n1 is a version behind.
    expect((await filterPod(b.deps, filterOf(pod('q', [{ name: 'c', gpu: 1, mem: 5000 }]), ['n1']))).result.NodeNames).toEqual(['n1']);
    const before = a.store.calls.length;
    expect((await filterPod(a.deps, filterOf(p, ['n2']))).result.NodeNames).toEqual(['n2']);
    // The write from the stale copy is refused; the refusal carries n1 as stored, and the second write lands.
    expect(a.store.calls.slice(before).map((c) => c.operation)).toEqual(['reserve', 'readJournal', 'putNode', 'putNode']);
    const n1 = w.store.stored('n1')!;
    expect(Object.values(n1.bookings).map((booking) => booking.name)).toEqual(['q']);
    expect(n1.counters['GPU-n1-0']!.mem).toBe(5000);
  });

  it('an expired reservation is pruned by a whole write under the node’s version before a new booking', async () => {
    const w = world();
    const env = w.environment({ HAMI_RESERVATION_TTL_SECONDS: '10' });
    await registered(env, 'n1');
    await filterPod(env.deps, filterOf(pod('p1', [{ name: 'c', gpu: 1, mem: 16000 }]), ['n1']));
    w.clock.now += 11_000;
    expect((await filterPod(env.deps, filterOf(pod('p2', [{ name: 'c', gpu: 1, mem: 16000 }]), ['n1']))).result.NodeNames).toEqual(['n1']);
    expect(Object.keys(w.store.stored('n1')!.bookings)).toEqual([pod('p2').metadata.uid]);
  });

  it('records how fresh the view was with the decision', async () => {
    const w = world();
    const env = w.environment();
    const seq = await registered(env, 'n1');
    await filterPod(env.deps, filterOf(pod('warm-up'), ['n1']));
    w.clock.now += 250;
    await filterPod(env.deps, filterOf(pod('p1'), ['n1']));
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'p1', history: false });
    expect(log.view).toEqual({ seq, ageMs: 250 });
  });
});

/** The promise's value if it settles within `turns` turns of the event loop (no time passes), else 'pending'. */
async function settledWithin<T>(promise: Promise<T>, turns = 50): Promise<T | 'pending'> {
  let outcome: { value: T } | undefined;
  void promise.then((value) => (outcome = { value }));
  for (let turn = 0; turn < turns && outcome === undefined; turn++) await new Promise((resolve) => setImmediate(resolve));
  return outcome === undefined ? 'pending' : outcome.value;
}

/** Holds the environment's journal reads until released (the view's refresh, as if the store were slow to answer). */
function holdJournalReads(env: Environment): (() => void)[] {
  const held: (() => void)[] = [];
  const read = env.store.readJournal.bind(env.store);
  env.store.readJournal = (...args) => new Promise((resolve, reject) => held.push(() => void read(...args).then(resolve, reject)));
  return held;
}

describe('filter: the view’s refresh', () => {
  it('answers without waiting for the refresh; a later decision waits for it only when its view is behind the relay’s word', async () => {
    const { ingest, decider } = await ingestingAndDeciding();
    const held = holdJournalReads(decider);
    const seq = await registered(ingest, 'n2');
    const first = await settledWithin(filterPod(decider.deps, filterOf(pod('p1'), ['n1'])));
    expect(first === 'pending' ? first : first.result.NodeNames).toEqual(['n1']);
    expect(held).toHaveLength(1);
    // A view fit without it (no word from the relay, young enough) decides at once, and joins the refresh running.
    const second = await settledWithin(filterPod(decider.deps, filterOf(pod('p2'), ['n1'])));
    expect(second === 'pending' ? second : second.result.NodeNames).toEqual(['n1']);
    expect(held).toHaveLength(1);
    // Told of the entry registering n2, a decision waits for the refresh, which brings n2, rather than read on its own.
    const told = filterPod(decider.deps, filterOf(pod('p3', [{ name: 'c', gpu: 1, mem: 16000 }]), ['n1', 'n2'], seq));
    expect(await settledWithin(told)).toBe('pending');
    held.shift()!();
    expect((await told).result.NodeNames).toEqual(['n2']);
    expect(decider.deps.view.seq).toBeGreaterThanOrEqual(seq);
    for (const release of held) release();
  });

  it('a refresh that fails costs only freshness: the answer stands and the failure is logged', async () => {
    const { decider } = await ingestingAndDeciding();
    decider.store.readJournal = () => Promise.reject(new Error('store unavailable'));
    const answer = await filterPod(decider.deps, filterOf(pod('p1'), ['n1']));
    expect(answer.result.NodeNames).toEqual(['n1']);
    await settledWithin(new Promise(() => undefined), 5);
    expect(decider.lines).toContainEqual({ level: 'warn', message: 'ViewRefreshFailed', fields: { error: 'store unavailable' } });
  });
});

describe('filter: the scheduler log’s card ids', () => {
  const triedIds = async (env: Environment, name: string) => {
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name, history: false, detail: 'devices' });
    return log.filter.nodes.map((n) => ({ node: n.name, ids: n.containers.flatMap((c) => ((c as { devices?: { uuid: string }[] }).devices ?? []).map((d) => d.uuid)) }));
  };

  it('come from the registrations when read; a node that registered other cards since shows none, the others keep theirs', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1', 'n2');
    await filterPod(env.deps, filterOf(pod('p1'), ['n1', 'n2']));
    const before = await triedIds(env, 'p1');
    expect(before.map((n) => n.node)).toEqual(['n1', 'n2']);
    for (const n of before) expect(n.ids.length).toBeGreaterThan(0);
    for (const n of before) for (const id of n.ids) expect(id).toMatch(new RegExp(`^GPU-${n.node}-[01]$`));
    // The card of n2 that the record refers to is replaced (same position, another GPU): n2's ids are unknown now.
    const tried = before[1]!.ids[0]!;
    const swapped = cardsOf('n2').map((c) => (c.id === tried ? { ...c, id: 'GPU-n2-replacement' } : c));
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: gpuNode('n2', swapped, { rv: '2' }) }]);
    const after = await triedIds(env, 'p1');
    expect(after[0]).toEqual(before[0]);
    expect(after[1]!.ids).toEqual(before[1]!.ids.map(() => ''));
  });

  /** A cold environment on a store where another one placed p1 on n1. */
  const coldReaderOfP1 = async (): Promise<Environment> => {
    const w = world();
    const setup = w.environment();
    await registered(setup, 'n1');
    await filterPod(setup.deps, filterOf(pod('p1'), ['n1']));
    return w.environment();
  };

  it('a pod without records is not found without loading the cluster; one with records loads it for the ids', async () => {
    const cold = await coldReaderOfP1();
    await expect(readSchedulerLog(cold.deps, { namespace: 'default', name: 'nobody', history: false })).rejects.toThrow(NotFoundError);
    expect(cold.store.calls).toEqual([]);
    const ids = await triedIds(cold, 'p1');
    expect(ids[0]!.ids.every((id) => /^GPU-n1-[01]$/.test(id))).toBe(true);
    expect(cold.store.calls.length).toBeGreaterThan(0);
  });

  it('a store that cannot bring the view up costs the ids only: the log is still read, and the failure logged', async () => {
    const reader = await coldReaderOfP1();
    reader.store.journalHead = () => Promise.reject(new Error('store unavailable'));
    const ids = await triedIds(reader, 'p1');
    expect(ids.map((n) => n.node)).toEqual(['n1']);
    expect(ids[0]!.ids.length).toBeGreaterThan(0);
    expect(ids[0]!.ids.every((id) => id === '')).toBe(true);
    expect(reader.lines).toContainEqual({ level: 'warn', message: 'ViewRefreshFailed', fields: { error: 'store unavailable' } });
  });

  it('an attempt whose evidence cannot be read (a later release\'s format) still answers, with the pod\'s other attempts', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1', 'n2');
    await filterPod(env.deps, filterOf(pod('p1'), ['n1', 'n2']));
    // The pod is filtered again by a release that packs its evidence in a version this one does not know.
    const put = env.deps.records.putAttempt.bind(env.deps.records);
    env.deps.records.putAttempt = (record, timeMs) => put(record.filter.packed ? { ...record, filter: { ...record.filter, packed: { ...record.filter.packed, v: 99 } as never } } : record, timeMs);
    w.clock.now += 1000;
    const again = await filterPod(env.deps, filterOf(pod('p1'), ['n1', 'n2']));
    const node = again.result.NodeNames?.[0];
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'p1', history: true });
    expect(log.attempt).toBe(2);
    expect(log.filter.status).toBe('passed');
    expect(log.filter.summary).toBe(`find fit node(${node}); the nodes' evidence cannot be read`);
    expect(log.filter.nodes).toEqual([]);
    expect(log.filter.evidenceNote).toBe("the nodes' evidence cannot be read (packed evidence of unknown version 99): written by a later release, or damaged");
    expect(log.history?.map((h) => [h.attempt, h.filter.nodes.map((n) => n.name), h.filter.evidenceNote])).toEqual([[1, ['n1', 'n2'], undefined]]);
    expect(env.lines).toContainEqual({ level: 'warn', message: 'SchedulerLogEvidenceUnreadable', fields: { pod: 'default/p1', attemptId: again.attemptId, error: 'packed evidence of unknown version 99' } });
  });
});

describe('filter: lock-aware placement', () => {
  it('passes over a node another pod is allocating on while another fits, and says so in the scheduler log', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1', 'n2');
    const first = await filterPod(env.deps, filterOf(pod('first'), ['n1', 'n2']));
    const busy = first.result.NodeNames![0]!;
    const second = await filterPod(env.deps, filterOf(pod('second'), ['n1', 'n2']));
    const other = second.result.NodeNames![0]!;
    expect(other).not.toBe(busy);
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'second', history: false });
    expect(log.filter.passedOver).toEqual([{ name: busy, holder: 'default/first' }]);
    expect(log.filter.summary).toContain(`find fit node(${other})`);
  });

  it('takes a busy node when nothing else fits, and HAMi’s exact choice when switched off', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1');
    await filterPod(env.deps, filterOf(pod('first'), ['n1']));
    expect((await filterPod(env.deps, filterOf(pod('second'), ['n1']))).result.NodeNames).toEqual(['n1']);
    const exact = w.environment({ HAMI_LOCK_AWARE: 'false' });
    await registered(exact, 'n2', 'n3');
    const a = await filterPod(exact.deps, filterOf(pod('a'), ['n2', 'n3']));
    const b = await filterPod(exact.deps, filterOf(pod('b'), ['n2', 'n3']));
    // Binpack keeps to the node it just used.
    expect(b.result.NodeNames).toEqual(a.result.NodeNames);
  });

  it('with every node busy, takes the one with the fewest allocations under way: a burst larger than the nodes waits on each in turn', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1', 'n2');
    const placed: string[] = [];
    for (const name of ['first', 'second', 'third', 'fourth']) placed.push((await filterPod(env.deps, filterOf(pod(name), ['n1', 'n2']))).result.NodeNames![0]!);
    const [first, second, third, fourth] = placed;
    expect(second).not.toBe(first);
    // Both busy with one allocation each: HAMi's choice. Then its node has two, and the other node is taken.
    expect(fourth).not.toBe(third);
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'fourth', history: false });
    expect(log.filter.passedOver).toEqual([{ name: third, holder: third === first ? 'default/first' : 'default/second' }]);
    expect(log.filter.leastBusy).toEqual({ allocations: 1 });
    const one = await readSchedulerLog(env.deps, { namespace: 'default', name: 'second', history: false });
    expect(one.filter.leastBusy).toBeUndefined();
  });

  it('a node is free again once the device plugin reports the allocation ended', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1', 'n2');
    const first = pod('first');
    const placed = await filterPod(env.deps, filterOf(first, ['n1', 'n2']));
    const node = placed.result.NodeNames![0]!;
    await ingestClusterEvents(env.deps, [{ type: 'MODIFIED', object: forwardedPod(first, { ...placedPatch(placed), 'hami.io/bind-phase': 'success' }, { phase: 'Running' }) }]);
    // Binpack's choice again: the node already in use.
    expect((await filterPod(env.deps, filterOf(pod('second'), ['n1', 'n2']))).result.NodeNames).toEqual([node]);
  });
  it('another environment’s view learns of a lock taken and ended, though locks do not move a node’s version', async () => {
    const w = world();
    const events = w.environment();
    const filters = w.environment();
    await registered(events, 'n1');
    const first = pod('first');
    await filterPod(filters.deps, filterOf(first, ['n1']));
    const bound = await bindPodToNode(events.deps, { pod: { namespace: 'default', name: 'first', uid: first.metadata.uid }, node: 'n1' });
    const lockValue = (bound.effects[0] as { annotations: Record<string, string> }).annotations['hami.io/mutex.lock']!;
    const versionBefore = w.store.stored('n1')!.version;
    const mirrored = await ingestClusterEvents(events.deps, [{ type: 'MODIFIED', object: gpuNode('n1', cardsOf('n1'), { rv: '2', annotations: { 'hami.io/mutex.lock': lockValue } }) }]);
    expect(w.store.stored('n1')!.version).toBe(versionBefore);
    await filters.deps.view.prepare(mirrored.viewSeq);
    expect(filters.deps.view.get('n1')?.lock?.holder).toBe('default/first');
    // The device plugin deletes the annotation: the lock ends, and the journal says so.
    const ended = await ingestClusterEvents(events.deps, [{ type: 'MODIFIED', object: gpuNode('n1', cardsOf('n1'), { rv: '3' }) }]);
    expect(ended.viewSeq).toBeGreaterThan(mirrored.viewSeq!);
    await filters.deps.view.prepare(ended.viewSeq);
    expect(filters.deps.view.get('n1')?.lock).toBeUndefined();
  });
});

describe('filter: bad pods and bad state', () => {
  it('answers bad quantities with an Error naming container, resource and value, records it, and books nothing', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1');
    const bad = gpuPod('hostile', [{ name: 'main', gpu: 1, cores: 4294967196 }]);
    const answer = await filterPod(env.deps, filterOf(bad, ['n1']));
    expect(answer.result.Error).toBe('invalid GPU resource request: container "main": nvidia.com/gpucores "4294967196" is larger than 2147483647 (HAMi computes it in int32)');
    expect(Object.keys(w.store.stored('n1')!.bookings)).toEqual([]);
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'hostile', history: false });
    expect(log.filter.summary).toBe(answer.result.Error);
    expect(log.hints?.map((h) => h.code)).toEqual(['InvalidResourceRequest']);
  });

  it('a node whose stored state cannot be read fails alone, with a reason; the operator log carries the raw value; others schedule', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1', 'n2');
    // What an older version stored for a pod asking gpucores 4294967196: a booking with -100 cores.
    const n1 = w.store.stored('n1')!;
    w.store.seed({ ...n1, version: n1.version + 1, unreadable: [{ part: 'booking old-uid', problem: 'pod annotation format error, negative value -100', raw: '["default","old",1,"GPU-n1-0,NVIDIA,1000,-100:;",0,2]', blocking: true }] });
    const fresh = w.environment();
    const answer = await filterPod(fresh.deps, filterOf(pod('p1'), ['n1', 'n2']));
    expect(answer.result.NodeNames).toEqual(['n2']);
    const log = await readSchedulerLog(fresh.deps, { namespace: 'default', name: 'p1', history: false });
    expect(log.filter.nodes.find((n) => n.name === 'n1')).toMatchObject({ status: 'failed', reason: 'node state unreadable' });
    expect(fresh.lines.find((l) => l.message === 'NodeStateUnreadable')?.fields).toMatchObject({ node: 'n1', parts: [{ part: 'booking old-uid', raw: expect.stringContaining('-100') }] });
    expect(await readNodeDevices(fresh.deps, 'n1')).toMatchObject({ registered: false, reason: 'node state unreadable', problems: [{ part: 'booking old-uid' }] });
  });

  it('a node already holding as many bookings as its item may is refused with that reason', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'full', 'n2');
    const full = w.store.stored('full')!;
    const bookings: Record<string, Booking> = {};
    for (let i = 0; i < MAX_BOOKINGS_PER_NODE; i++) {
      bookings[`u${i}`] = { namespace: 'x', name: `p${i}`, state: 'confirmed', devices: ';', initCount: 0, initDone: false, uses: [], holdsAppCards: false, origin: 'adopted' };
    }
    w.store.seed(nextLedger({ ...full, bookings }, w.clock.now));
    const answer = await filterPod(w.environment().deps, filterOf(pod('p1'), ['full', 'n2']));
    expect(answer.result.NodeNames).toEqual(['n2']);
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'p1', history: false });
    expect(log.filter.nodes.find((n) => n.name === 'full')?.reason).toBe('node at its limit of booked pods');
  });

  it('a registration listing one card twice leaves the node unregistered with the reason, and nothing is placed on it', async () => {
    const w = world();
    const env = w.environment();
    const twice = JSON.stringify([0, 1].map((i) => ({ id: 'GPU-dup', index: i, count: 10, devmem: 16384, devcore: 100, type: 'NVIDIA-A100', numa: 0, mode: 'hami-core', health: true })));
    const dup = gpuNode('dup', [card('GPU-dup'), card('GPU-dup')]);
    await ingestClusterEvents(env.deps, [{ type: 'ADDED', object: { ...dup, metadata: { ...dup.metadata, annotations: { 'hami.io/node-nvidia-register': twice } } } }]);
    const answer = await filterPod(env.deps, filterOf(pod('two', [{ name: 'c', gpu: 2, mem: 1000 }]), ['dup']));
    expect(answer.result.FailedNodes).toEqual({ dup: 'node unregistered' });
    expect((await readNodeDevices(env.deps, 'dup')).reason).toBe('hami.io/node-nvidia-register lists device "GPU-dup" more than once');
  });

  it('a card without cores (devcore 0) takes a request without cores: the guard agrees with the engine', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [nodeEvent('nocore', 1, { devcore: 0 })]);
    expect((await filterPod(env.deps, filterOf(pod('m', [{ name: 'c', gpu: 1, mem: 1000 }]), ['nocore']))).result.NodeNames).toEqual(['nocore']);
  });

  it('the registration the engine parses is the one the ledger stores', () => {
    const node = nodeEvent('n1').object;
    expect(nextLedger({ ...emptyLedger('n1'), registration: parseNodeRegistration(node, defaultEngineConfig) }, 0).counters).toEqual({
      'GPU-n1-0': { slots: 0, mem: 0, cores: 0 },
      'GPU-n1-1': { slots: 0, mem: 0, cores: 0 },
    });
  });
});

describe('filter: the Events a pod gets are plain text', () => {
  it('carry no Markdown, whether no node fits or the pod is refused', async () => {
    const w = world();
    const env = w.environment();
    await registered(env, 'n1', 'n2');
    const noFit = await filterPod(env.deps, filterOf(pod('huge', [{ name: 'c', gpu: 1, mem: 100_000 }]), ['n1', 'n2']));
    const badWeights = gpuPod('weights', [{ name: 'c', gpu: 1, mem: 1000 }], { annotations: { 'hami.io/device-scoring-weights': 'slot=1' } });
    const refused = await filterPod(env.deps, filterOf(badWeights, ['n1']));
    const messages = [...noFit.effects, ...refused.effects].flatMap((e) => (e.kind === 'RecordEvent' ? [e.message] : []));
    expect(messages.length).toBeGreaterThanOrEqual(2);
    expect(messages.filter((m) => m.includes('`'))).toEqual([]);
  });
});
