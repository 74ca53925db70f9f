/**
 * Ingestion's rules, on the in-memory store: bookings belong to the scheduler, adoption, order tolerance,
 * per-node containment, the journal and the directory.
 */
import { ingestClusterEvents, sameJson } from '../../../lib/control/clusterEvents';
import { filterPod } from '../../../lib/control/filter';
import { readNodeDevices } from '../../../lib/control/views';
import { StoreRejectedError, StoreUnavailableError } from '../../../lib/errors';
import { card, forwardedPod, gpuNode, gpuPod } from '../../support/cluster';
import { filterOf, placedPatch, world, type Environment } from './fixtures';

const node = (name: string, cards = 1, devmem = 16384) => gpuNode(name, Array.from({ length: cards }, (_, i) => card(`GPU-${name}-${i}`, { devmem })));
const added = (object: unknown) => ({ type: 'ADDED', object });
const modified = (object: unknown) => ({ type: 'MODIFIED', object });

async function place(env: Environment, pod: ReturnType<typeof gpuPod>, nodes: string[]): Promise<Record<string, string>> {
  return placedPatch(await filterPod(env.deps, filterOf(pod, nodes)));
}

/** A world in which node n1 (one 16 GiB card) has been forwarded, and an environment that saw it. */
async function withNode(): Promise<{ w: ReturnType<typeof world>; env: Environment }> {
  const w = world();
  const env = w.environment();
  await ingestClusterEvents(env.deps, [added(node('n1'))]);
  return { w, env };
}

/** Pod p placed on n1 and holding n1's lock (with `waiters`), its allocation reported as the device plugin does, and an environment to forward it. */
async function lockedByPlacedPod(waiters?: Record<string, string>) {
  const { w, env } = await withNode();
  const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 5000 }]);
  const annotations = await place(env, pod, ['n1']);
  await w.store.acquireLock('n1', { holder: 'default/p', holderUid: pod.metadata.uid, sinceMs: w.clock.now, expiresAtMs: w.clock.now + 300_000, ...(waiters ? { waiters } : {}) }, w.clock.now);
  const allocated = modified(forwardedPod(pod, { ...annotations, 'hami.io/bind-phase': 'success' }, { rv: '5' }));
  return { w, pod, allocated, ingest: w.environment() };
}

const usedMem = async (env: Environment, name: string) => (await readNodeDevices(env.deps, name)).devices.reduce((sum, d) => sum + d.usedmem, 0);

describe('cluster events: bookings belong to the scheduler', () => {
  it('confirms a reservation when the pod shows the decided devices', async () => {
    const { w, env } = await withNode();
    const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 12000 }]);
    const annotations = await place(env, pod, ['n1']);
    await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, annotations))]);
    expect(w.store.stored('n1')!.bookings[pod.metadata.uid]).toMatchObject({ state: 'confirmed', origin: 'decided' });
    expect(w.store.stored('n1')!.bookings[pod.metadata.uid]!.expiresAtMs).toBeUndefined();
  });

  it('keeps counting the decided devices when the annotation is edited after placement, reporting it once per new value', async () => {
    const { env } = await withNode();
    const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 12000 }]);
    const annotations = await place(env, pod, ['n1']);
    await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, annotations))]);
    const edited = { ...annotations, 'hami.io/vgpu-devices-allocated': 'GPU-n1-0,NVIDIA,1,0:;' };
    const first = await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, edited, { rv: '3' }))]);
    expect(first.effects).toEqual([
      expect.objectContaining({ kind: 'RecordEvent', type: 'Warning', reason: 'SchedulerAnnotationsChanged', name: 'p', uid: pod.metadata.uid, message: expect.stringContaining('GPU-n1-0,NVIDIA,12000,0:;') }),
    ]);
    expect(env.lines.find((l) => l.message === 'SchedulerAnnotationsChanged')?.fields).toMatchObject({ pod: 'default/p', node: 'n1', seen: 'GPU-n1-0,NVIDIA,1,0:;' });
    expect(await usedMem(env, 'n1')).toBe(12000);
    const again = await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, edited, { rv: '4', phase: 'Running' }))]);
    expect(again.effects).toEqual([]);
    const other = await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, { ...edited, 'hami.io/vgpu-devices-allocated': 'GPU-n1-0,NVIDIA,2,0:;' }, { rv: '5' }))]);
    expect(other.effects).toHaveLength(1);
    expect(await usedMem(env, 'n1')).toBe(12000);
    // The next pod of that size does not fit on the card t1 holds.
    const next = gpuPod('q', [{ name: 'c', gpu: 1, mem: 12000 }]);
    const answer = await filterPod(env.deps, { pod: next, podRef: { namespace: 'default', name: 'q', uid: next.metadata.uid }, nodeNames: ['n1'], nodes: null });
    expect(answer.result.FailedNodes).toEqual({ n1: '1/1 CardInsufficientMemory' });
  });

  it('does not follow an annotation that names another node than the decision', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(node('n1')), added(node('n2'))]);
    const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 12000 }]);
    const annotations = await place(env, pod, ['n1']);
    await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, annotations))]);
    await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, { ...annotations, 'hami.io/vgpu-node': 'n2', 'hami.io/vgpu-devices-allocated': 'GPU-n2-0,NVIDIA,1,0:;' }, { rv: '3' }))]);
    expect(await usedMem(env, 'n1')).toBe(12000);
    expect(await usedMem(env, 'n2')).toBe(0);
  });

  it('adopts a pod placed before we took over, from its annotations', async () => {
    const { w, env } = await withNode();
    const pod = gpuPod('old', [{ name: 'c', gpu: 1, mem: 5000 }]);
    await ingestClusterEvents(env.deps, [added(forwardedPod(pod, { 'hami.io/vgpu-node': 'n1', 'hami.io/vgpu-devices-allocated': 'GPU-n1-0,NVIDIA,5000,10:;', 'hami.io/bind-phase': 'success' }, { phase: 'Running' }))]);
    expect(w.store.stored('n1')!.bookings[pod.metadata.uid]).toMatchObject({ state: 'confirmed', origin: 'adopted' });
    expect(await usedMem(env, 'n1')).toBe(5000);
  });

  it('frees a deleted pod, and a late older event does not bring it back', async () => {
    const { env } = await withNode();
    const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 5000 }]);
    const annotations = await place(env, pod, ['n1']);
    await ingestClusterEvents(env.deps, [{ type: 'DELETED', object: forwardedPod(pod, annotations, { rv: '9' }) }]);
    await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, annotations, { rv: '5' }))]);
    expect(await usedMem(env, 'n1')).toBe(0);
  });
});

/** A pod placed on n1 (of n1 and n2) by the filter and confirmed; `edit` forwards it with annotations changed. */
async function confirmedOnN1() {
  const w = world();
  const env = w.environment();
  await ingestClusterEvents(env.deps, [added(node('n1')), added(node('n2'))]);
  const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 12000 }]);
  const annotations = await place(env, pod, ['n1']);
  await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, { ...annotations, 'hami.io/bind-phase': 'success' }, { rv: '2', phase: 'Running' }))]);
  let rv = 2;
  const edit = (changes: Record<string, string | null>) => {
    rv += 1;
    return ingestClusterEvents(env.deps, [modified(forwardedPod(pod, { ...annotations, 'hami.io/bind-phase': 'success', ...changes }, { rv: String(rv), phase: 'Running' }))]);
  };
  return { w, env, pod, annotations, edit };
}

const changedWarnings = (effects: readonly { kind: string; reason?: string }[]) => effects.filter((e) => e.kind === 'RecordEvent' && e.reason === 'SchedulerAnnotationsChanged');

describe('cluster events: one Warning per change of scheduler-owned annotations', () => {
  it('an edit of hami.io/vgpu-node alone gives one Warning naming the key, and the booking stays where it was decided', async () => {
    const { env, pod, edit } = await confirmedOnN1();
    const answer = await edit({ 'hami.io/vgpu-node': 'n2' });
    expect(answer.effects).toEqual([
      {
        kind: 'RecordEvent',
        namespace: 'default',
        name: 'p',
        uid: pod.metadata.uid,
        type: 'Warning',
        reason: 'SchedulerAnnotationsChanged',
        message: expect.stringContaining('hami.io/vgpu-node (now "n2")'),
      },
    ]);
    expect(answer.effects[0]).toMatchObject({ message: expect.not.stringContaining('hami.io/vgpu-devices-allocated') });
    expect(env.lines.filter((l) => l.message === 'SchedulerAnnotationsChanged').map((l) => l.fields)).toEqual([
      expect.objectContaining({ pod: 'default/p', node: 'n1', annotations: 'hami.io/vgpu-node', seenNode: 'n2' }),
    ]);
    expect(await usedMem(env, 'n1')).toBe(12000);
    expect(await usedMem(env, 'n2')).toBe(0);
  });

  it('both keys changed in one update give one Warning naming both', async () => {
    const { edit } = await confirmedOnN1();
    const answer = await edit({ 'hami.io/vgpu-node': 'n2', 'hami.io/vgpu-devices-allocated': 'GPU-n2-0,NVIDIA,1,0:;' });
    const warnings = changedWarnings(answer.effects);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ message: expect.stringContaining('hami.io/vgpu-node (now "n2"), hami.io/vgpu-devices-allocated (now "GPU-n2-0,NVIDIA,1,0:;")') });
  });

  it('the same edit carried by later events (a status change, a re-list) gives no second Warning; a different edit does', async () => {
    const { env, edit } = await confirmedOnN1();
    expect(changedWarnings((await edit({ 'hami.io/vgpu-node': 'n2' })).effects)).toHaveLength(1);
    expect((await edit({ 'hami.io/vgpu-node': 'n2' })).effects).toEqual([]);
    expect((await edit({ 'hami.io/vgpu-node': 'n2' })).effects).toEqual([]);
    expect(env.lines.filter((l) => l.message === 'SchedulerAnnotationsChanged')).toHaveLength(1);
    // Another key changed besides: a new change, one new Warning, then quiet again.
    expect(changedWarnings((await edit({ 'hami.io/vgpu-node': 'n2', 'hami.io/vgpu-devices-allocated': 'GPU-n2-0,NVIDIA,1,0:;' })).effects)).toHaveLength(1);
    expect((await edit({ 'hami.io/vgpu-node': 'n2', 'hami.io/vgpu-devices-allocated': 'GPU-n2-0,NVIDIA,1,0:;' })).effects).toEqual([]);
  });

  it('annotations set back to the decision clear the dispute, so a later edit is reported again', async () => {
    const { w, pod, edit } = await confirmedOnN1();
    expect(changedWarnings((await edit({ 'hami.io/vgpu-node': 'n2' })).effects)).toHaveLength(1);
    expect(w.store.stored('n1')!.bookings[pod.metadata.uid]!.disputed).toBeDefined();
    expect((await edit({})).effects).toEqual([]);
    expect(w.store.stored('n1')!.bookings[pod.metadata.uid]!.disputed).toBeUndefined();
    expect(changedWarnings((await edit({ 'hami.io/vgpu-node': 'n2' })).effects)).toHaveLength(1);
  });

  it('scheduler-owned annotations removed from a confirmed pod give one Warning, and the decision keeps counting', async () => {
    const { env, edit } = await confirmedOnN1();
    const answer = await edit({ 'hami.io/vgpu-node': null, 'hami.io/vgpu-devices-allocated': null });
    expect(changedWarnings(answer.effects)).toEqual([expect.objectContaining({ message: expect.stringContaining('hami.io/vgpu-node (now (removed)), hami.io/vgpu-devices-allocated (now (removed))') })]);
    expect((await edit({ 'hami.io/vgpu-node': null, 'hami.io/vgpu-devices-allocated': null })).effects).toEqual([]);
    expect(await usedMem(env, 'n1')).toBe(12000);
  });

  it('a pod whose annotations the device plugin moves on (bind phase) or the relay re-lists unchanged gives no Warning', async () => {
    const { edit } = await confirmedOnN1();
    expect((await edit({ 'hami.io/bind-phase': 'allocating' })).effects).toEqual([]);
    expect((await edit({ 'hami.io/vgpu-devices-to-allocate': ';' })).effects).toEqual([]);
    expect((await edit({})).effects).toEqual([]);
  });
});

describe('cluster events: adoption past capacity', () => {
  /** n1's card half-filled by the filter (16,000 of 16,384 MiB), and a pod of another namespace that claims the card whole. */
  async function fullCardAndIntruder() {
    const { w, env } = await withNode();
    const placed = gpuPod('placed', [{ name: 'c', gpu: 1, mem: 16000 }]);
    await ingestClusterEvents(env.deps, [modified(forwardedPod(placed, await place(env, placed, ['n1'])))]);
    const intruder = gpuPod('intruder', [{ name: 'c', gpu: 1, mem: 16384, cores: 100 }], { namespace: 'team-b' });
    const claims = added(forwardedPod(intruder, { 'hami.io/vgpu-node': 'n1', 'hami.io/vgpu-devices-allocated': 'GPU-n1-0,NVIDIA,16384,100:;', 'hami.io/bind-phase': 'success' }, { rv: '7', phase: 'Running' }));
    const recorded: { name: string; value: number }[] = [];
    env.deps.metrics.addMetric = (name, _unit, value) => {
      recorded.push({ name, value });
    };
    return { w, env, intruder, claims, recorded };
  }

  it('counts the adopted pod as the card is really used, and raises it: Warnings on the pod and the Node, a log line, a metric', async () => {
    const { env, intruder, claims, recorded } = await fullCardAndIntruder();
    const answer = await ingestClusterEvents(env.deps, [claims]);
    expect(answer.rejected).toEqual([]);
    expect(answer.effects).toEqual([
      {
        kind: 'RecordEvent',
        namespace: 'team-b',
        name: 'intruder',
        uid: intruder.metadata.uid,
        type: 'Warning',
        reason: 'AdoptedPastCapacity',
        message: expect.stringContaining('GPU-n1-0 (memory 32384/16384 MiB)'),
      },
      { kind: 'RecordNodeEvent', name: 'n1', type: 'Warning', reason: 'AdoptedPastCapacity', message: expect.stringContaining('Pod team-b/intruder') },
    ]);
    expect(env.lines.filter((l) => l.message === 'AdoptedPastCapacity').map((l) => [l.level, l.fields])).toEqual([
      ['warn', expect.objectContaining({ pod: 'team-b/intruder', node: 'n1', cards: 'GPU-n1-0', over: 'memory' })],
    ]);
    expect(recorded).toEqual([{ name: 'AdoptedPastCapacity', value: 1 }]);
    const card = (await readNodeDevices(env.deps, 'n1')).devices[0]!;
    expect(card).toMatchObject({ usedmem: 32384, devmem: 16384, usedcores: 100, used: 2, overcommitted: ['memory'] });
  });

  it('reports it once: the pod’s later events say nothing more, a resend of that very event says it again', async () => {
    const { env, intruder, claims } = await fullCardAndIntruder();
    expect((await ingestClusterEvents(env.deps, [claims])).effects).toHaveLength(2);
    expect((await ingestClusterEvents(env.deps, [claims])).effects).toEqual([]);
    const later = modified(forwardedPod(intruder, { 'hami.io/vgpu-node': 'n1', 'hami.io/vgpu-devices-allocated': 'GPU-n1-0,NVIDIA,16384,100:;', 'hami.io/bind-phase': 'success' }, { rv: '8', phase: 'Running' }));
    expect((await ingestClusterEvents(env.deps, [later])).effects).toEqual([]);
    expect((await ingestClusterEvents(env.deps, [later], [], { resend: true })).effects.map((e) => e.kind)).toEqual(['RecordEvent', 'RecordNodeEvent']);
  });

  it('judges the card once the whole batch is applied: pods forwarded before their Node at a takeover are raised too', async () => {
    const w = world();
    const env = w.environment();
    const claim = (name: string, mem: number, on = 'n1') =>
      added(forwardedPod(gpuPod(name, [{ name: 'c', gpu: 1, mem }]), { 'hami.io/vgpu-node': on, 'hami.io/vgpu-devices-allocated': `GPU-${on}-0,NVIDIA,${mem},0:;` }, { phase: 'Running' }));
    const answer = await ingestClusterEvents(env.deps, [claim('first', 10000), claim('second', 10000), added(node('n1'))]);
    expect(answer.rejected).toEqual([]);
    // Neither pod was placed by the scheduler; together they hold 20,000 of 16,384 MiB, so both are named.
    expect(answer.effects.filter((e) => e.kind === 'RecordEvent').map((e) => (e.kind === 'RecordEvent' ? e.name : '')).sort()).toEqual(['first', 'second']);
    expect(answer.effects.filter((e) => e.kind === 'RecordNodeEvent')).toHaveLength(2);
    // Pods of a node that has not registered yet cannot be judged: nothing is said.
    expect((await ingestClusterEvents(env.deps, [claim('third', 20000, 'n9')])).effects).toEqual([]);
  });

  it('an adoption within the card’s capacity says nothing and marks nothing', async () => {
    const { w, env } = await withNode();
    const old = gpuPod('old', [{ name: 'c', gpu: 1, mem: 5000 }]);
    const answer = await ingestClusterEvents(env.deps, [added(forwardedPod(old, { 'hami.io/vgpu-node': 'n1', 'hami.io/vgpu-devices-allocated': 'GPU-n1-0,NVIDIA,5000,100:;' }, { phase: 'Running' }))]);
    expect(answer.effects).toEqual([]);
    expect(w.store.stored('n1')!.bookings[old.metadata.uid]).toMatchObject({ origin: 'adopted' });
    expect((await readNodeDevices(env.deps, 'n1')).devices[0]!.overcommitted).toBeUndefined();
  });

  it('no new pod is placed on the card until it is back within its capacity', async () => {
    const { env, intruder, claims } = await fullCardAndIntruder();
    const adopted = await ingestClusterEvents(env.deps, [claims]);
    const small = gpuPod('small', [{ name: 'c', gpu: 1, mem: 100 }]);
    const refused = await filterPod(env.deps, filterOf(small, ['n1'], adopted.viewSeq));
    expect(refused.result.FailedNodes).toEqual({ n1: '1/1 CardOvercommitted' });
    const gone = await ingestClusterEvents(env.deps, [{ type: 'DELETED', object: forwardedPod(intruder, { 'hami.io/vgpu-node': 'n1' }, { rv: '9' }) }]);
    expect((await readNodeDevices(env.deps, 'n1')).devices[0]!.overcommitted).toBeUndefined();
    const placed = await filterPod(env.deps, filterOf(small, ['n1'], gone.viewSeq));
    expect(placed.result.NodeNames).toEqual(['n1']);
  });
});

describe('cluster events: containment, journal and directory', () => {
  it('rejects only the events of a node that cannot take them, and applies the rest', async () => {
    const w = world();
    const env = w.environment();
    const putNode = env.deps.ledger.putNode.bind(env.deps.ledger);
    // The store refuses one node's write for good (e.g. DynamoDB's item size limit).
    (env.deps.ledger as { putNode: typeof putNode }).putNode = async (ledger, expected) =>
      ledger.name === 'refused' ? Promise.reject(new StoreRejectedError("the store refused to save it: the item would exceed DynamoDB's 400 KB item size limit")) : putNode(ledger, expected);
    const answer = await ingestClusterEvents(env.deps, [added(node('refused')), added(node('fine')), modified(node('refused'))]);
    expect(answer.accepted).toBe(1);
    expect(answer.rejected).toEqual([
      { index: 0, error: "node refused: the store refused to save it: the item would exceed DynamoDB's 400 KB item size limit" },
      { index: 2, error: "node refused: the store refused to save it: the item would exceed DynamoDB's 400 KB item size limit" },
    ]);
    expect((await readNodeDevices(env.deps, 'fine')).registered).toBe(true);
  });

  it('keeps a node registering more cards than one node’s item holds unregistered, with the reason', async () => {
    const w = world();
    const env = w.environment();
    const big = node('big');
    const annotation = JSON.stringify(Array.from({ length: 65 }, (_, i) => ({ id: `GPU-${i}`, index: i, count: 10, devmem: 1000, devcore: 100, type: 'NVIDIA-A100', numa: 0, mode: 'hami-core', health: true })));
    await ingestClusterEvents(env.deps, [added({ ...big, metadata: { ...big.metadata, annotations: { 'hami.io/node-nvidia-register': annotation } } })]);
    expect((await readNodeDevices(env.deps, 'big')).reason).toBe("registers 65 cards; one node's stored state holds at most 64");
  });

  it('repairs an unreadable booking when the pod’s own event arrives', async () => {
    const { w } = await withNode();
    const n1 = w.store.stored('n1')!;
    w.store.seed({ ...n1, version: n1.version + 1, unreadable: [{ part: 'booking uid-old', problem: 'negative value', raw: '["default","old",1,"GPU-n1-0,NVIDIA,1,-100:;",0,2]', blocking: true }] });
    const fresh = w.environment();
    expect((await readNodeDevices(fresh.deps, 'n1')).reason).toBe('node state unreadable');
    const old = gpuPod('old', [{ name: 'c', gpu: 1, mem: 1 }], { uid: 'uid-old' });
    const answer = await ingestClusterEvents(fresh.deps, [{ type: 'DELETED', object: forwardedPod(old, { 'hami.io/vgpu-node': 'n1' }) }]);
    expect(answer.rejected).toEqual([]);
    expect((await readNodeDevices(fresh.deps, 'n1')).registered).toBe(true);
  });

  it('announces what changed in the journal, and keeps the node directory', async () => {
    const w = world();
    const env = w.environment();
    const first = await ingestClusterEvents(env.deps, [added(node('n1')), added(node('n2'))]);
    expect(first.viewSeq).toBe(1);
    expect(await w.store.readDirectory()).toEqual(['n1', 'n2']);
    const [entry] = await w.store.readJournal(0, { consistent: true });
    expect(Object.keys(entry!.nodes).sort()).toEqual(['n1', 'n2']);
    // Nothing changed: no entry.
    expect((await ingestClusterEvents(env.deps, [modified(node('n1'))])).viewSeq).toBeUndefined();
    const removed = await ingestClusterEvents(env.deps, [{ type: 'DELETED', object: node('n2') }]);
    expect(removed.viewSeq).toBe(2);
    expect(await w.store.readDirectory()).toEqual(['n1']);
  });

  it('lists a node again when it comes back after a deletion', async () => {
    const { w, env } = await withNode();
    await ingestClusterEvents(env.deps, [{ type: 'DELETED', object: gpuNode('n1', [card('GPU-n1-0')], { rv: '2' }) }]);
    expect(await w.store.readDirectory()).toEqual([]);
    await ingestClusterEvents(env.deps, [added(gpuNode('n1', [card('GPU-n1-0')], { rv: '3' }))]);
    expect(await w.store.readDirectory()).toEqual(['n1']);
    // A new environment's view starts from the directory: it knows the node again.
    expect((await readNodeDevices(w.environment().deps, 'n1')).registered).toBe(true);
  });

  it('lists a node on the retry of a batch whose directory write failed after the node was written', async () => {
    const w = world();
    const addToDirectory = w.store.addToDirectory.bind(w.store);
    w.store.addToDirectory = async () => {
      throw new StoreUnavailableError('throttled');
    };
    const throttled = w.environment();
    await expect(ingestClusterEvents(throttled.deps, [added(node('n1'))])).rejects.toThrow(StoreUnavailableError);
    expect(w.store.stored('n1')?.deleted).toBe(false);
    w.store.addToDirectory = addToDirectory;
    // The relay sends the batch again: nothing changes on the node, and it is listed now.
    expect((await ingestClusterEvents(w.environment().deps, [added(node('n1'))])).rejected).toEqual([]);
    expect(await w.store.readDirectory()).toEqual(['n1']);
  });

  it('journals the nodes a batch wrote even when another node of the batch hit a transient failure, then asks for a retry', async () => {
    const w = world();
    const putNode = w.store.putNode.bind(w.store);
    w.store.putNode = async (ledger, expected) => {
      if (ledger.name === 'n2') throw new StoreUnavailableError('throttled');
      return putNode(ledger, expected);
    };
    const env = w.environment();
    await expect(ingestClusterEvents(env.deps, [added(node('n1')), added(node('n2'))])).rejects.toThrow(StoreUnavailableError);
    // n1 was written: the journal says so (warm views elsewhere catch up on it) and the directory lists it.
    expect((await w.store.readJournal(0, { consistent: true })).flatMap((entry) => Object.keys(entry.nodes))).toEqual(['n1']);
    expect(await w.store.readDirectory()).toEqual(['n1']);
    w.store.putNode = putNode;
    // The relay sends the batch again: n2 goes in as well.
    expect((await ingestClusterEvents(w.environment().deps, [added(node('n1')), added(node('n2'))])).rejected).toEqual([]);
    expect(await w.store.readDirectory()).toEqual(['n1', 'n2']);
  });

  it('answers the Warning of an annotation change again when the relay resends the batch whose answer was lost, and only then', async () => {
    const { w, env } = await withNode();
    const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 12000 }]);
    const annotations = await place(env, pod, ['n1']);
    await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, annotations))]);
    const putNode = w.store.putNode.bind(w.store);
    w.store.putNode = async (ledger, expected) => {
      if (ledger.name === 'n2') throw new StoreUnavailableError('throttled');
      return putNode(ledger, expected);
    };
    const failing = w.environment();
    const edited = modified(forwardedPod(pod, { ...annotations, 'hami.io/vgpu-devices-allocated': 'GPU-n1-0,NVIDIA,1,0:;' }, { rv: '3' }));
    await expect(ingestClusterEvents(failing.deps, [edited, added(node('n2'))])).rejects.toThrow(StoreUnavailableError);
    // The change was written and logged; its Warning went down with the 503.
    expect(failing.lines.find((l) => l.message === 'SchedulerAnnotationsChanged')?.fields).toMatchObject({ pod: 'default/p', node: 'n1', seen: 'GPU-n1-0,NVIDIA,1,0:;' });
    w.store.putNode = putNode;
    const warning = expect.objectContaining({ kind: 'RecordEvent', type: 'Warning', reason: 'SchedulerAnnotationsChanged', name: 'p' });
    // The relay's resend (to a store that works again) finds the change recorded for this very event: the Warning
    // is answered now.
    const relay = w.environment();
    const resent = await ingestClusterEvents(relay.deps, [edited, added(node('n2'))], [], { resend: true });
    expect(resent.rejected).toEqual([]);
    expect(resent.effects).toEqual([warning]);
    // The same event replayed by a re-list (not a resend) repeats nothing, and a later event of the pod neither.
    expect((await ingestClusterEvents(relay.deps, [edited])).effects).toEqual([]);
    const later = modified(forwardedPod(pod, { ...annotations, 'hami.io/vgpu-devices-allocated': 'GPU-n1-0,NVIDIA,1,0:;' }, { rv: '4', phase: 'Running' }));
    expect((await ingestClusterEvents(relay.deps, [later], [], { resend: true })).effects).toEqual([]);
  });

  it('rejects only the pod event whose hami.io/vgpu-node is no node name, and stores nothing under it', async () => {
    const { w, env } = await withNode();
    const good = gpuPod('good', [{ name: 'c', gpu: 1, mem: 1000 }]);
    const annotations = await place(env, good, ['n1']);
    const forged = gpuPod('forged', [{ name: 'c', gpu: 1, mem: 1000 }]);
    const bad = forwardedPod(forged, { ...annotations, 'hami.io/vgpu-node': 'n'.repeat(3000) });
    const answer = await ingestClusterEvents(env.deps, [modified(bad), modified(forwardedPod(good, annotations))]);
    expect(answer.accepted).toBe(1);
    expect(answer.rejected).toEqual([{ index: 0, error: expect.stringContaining('hami.io/vgpu-node') }]);
    expect(answer.rejected[0]!.error).toContain('is not a node name');
    expect(w.store.stored('n1')!.bookings[good.metadata.uid]).toMatchObject({ state: 'confirmed' });
    expect(await w.store.readDirectory()).toEqual(['n1']);
    // Deleted with the same annotation: nothing to reject, nothing written under it.
    expect((await ingestClusterEvents(env.deps, [{ type: 'DELETED', object: bad }])).rejected).toEqual([]);
    expect(await w.store.readDirectory()).toEqual(['n1']);
  });

  it('finds a pod reported deleted by name only (a relist found it gone) through the warm view', async () => {
    const { w, env } = await withNode();
    const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 5000 }]);
    const annotations = await place(env, pod, ['n1']);
    await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, annotations))]);
    const answer = await ingestClusterEvents(w.environment().deps, [{ type: 'DELETED', object: { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p', namespace: 'default' } } }]);
    expect(answer).toMatchObject({ accepted: 1, rejected: [] });
    expect(await usedMem(env, 'n1')).toBe(0);
  });

  it('a pod deleted by name only frees the pod of that name that is still booked, not an earlier one already gone', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(node('n1', 2))]);
    const first = gpuPod('p', [{ name: 'c', gpu: 1, mem: 5000 }], { uid: 'uid-p-1' });
    await ingestClusterEvents(env.deps, [modified(forwardedPod(first, await place(env, first, ['n1'])))]);
    await ingestClusterEvents(env.deps, [{ type: 'DELETED', object: forwardedPod(first, {}) }]);
    // The pod is created again under the same name (a StatefulSet's pod), and placed.
    const second = gpuPod('p', [{ name: 'c', gpu: 1, mem: 3000 }], { uid: 'uid-p-2' });
    await ingestClusterEvents(env.deps, [modified(forwardedPod(second, await place(env, second, ['n1'])))]);
    expect(await usedMem(env, 'n1')).toBe(3000);
    const answer = await ingestClusterEvents(env.deps, [{ type: 'DELETED', object: { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'p', namespace: 'default' } } }]);
    expect(answer).toMatchObject({ accepted: 1, rejected: [] });
    expect(await usedMem(env, 'n1')).toBe(0);
    expect(w.store.stored('n1')!.bookings['uid-p-2']?.state).toBe('gone');
  });

  it('refuses names longer than Kubernetes allows, one event at a time', async () => {
    const w = world();
    const env = w.environment();
    const long = node('n'.repeat(254));
    const answer = await ingestClusterEvents(env.deps, [added(long), added(node('ok'))]);
    expect(answer.rejected).toEqual([{ index: 0, error: 'object.metadata.name: must be at most 253 characters' }]);
    expect(answer.accepted).toBe(1);
  });

  it('frees the node lock when the device plugin reports the allocation ended', async () => {
    const { w, env } = await withNode();
    const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 5000 }]);
    const annotations = await place(env, pod, ['n1']);
    await w.store.acquireLock('n1', { holder: 'default/p', holderUid: pod.metadata.uid, sinceMs: w.clock.now, expiresAtMs: w.clock.now + 300_000 }, w.clock.now);
    expect(w.store.stored('n1')!.lock?.holder).toBe('default/p');
    await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, { ...annotations, 'hami.io/bind-phase': 'success' }, { rv: '5' }))]);
    expect(w.store.stored('n1')!.lock).toBeUndefined();
  });

  it('ends a lock nobody waits for in the write that records the allocation: one write, and the journal names the lock', async () => {
    const { w, pod, allocated, ingest } = await lockedByPlacedPod();
    const answer = await ingestClusterEvents(ingest.deps, [allocated]);
    expect(w.store.stored('n1')!.lock).toBeUndefined();
    expect(w.store.stored('n1')!.bookings[pod.metadata.uid]?.bindPhase).toBe('success');
    const writes = ingest.store.calls.map((c) => c.operation).filter((op) => !['readNodes', 'readJournal', 'journalHead', 'readDirectory', 'appendJournal'].includes(op));
    expect(writes).toEqual(['replaceBooking']);
    // The device plugin has not deleted the annotation (no Node event says so): the mirror follows the lock, guarded by its value.
    expect(answer.effects).toEqual([expect.objectContaining({ kind: 'PatchNodeAnnotations', name: 'n1', annotations: { 'hami.io/mutex.lock': null }, ifAnnotations: { 'hami.io/mutex.lock': expect.stringMatching(/,default,p$/) } })]);
    const journal = await w.store.readJournal(0, { consistent: true });
    expect(journal[journal.length - 1]!.locks).toEqual(['n1']);
  });

  it('clears a lock annotation a Node still shows for a pod whose lock already ended (an answer lost with a 503), guarded by that value', async () => {
    const { w, allocated, ingest } = await lockedByPlacedPod();
    await ingestClusterEvents(ingest.deps, [allocated]);
    expect(w.store.stored('n1')!.lock).toBeUndefined();
    const stale = '2027-01-15T08:00:00Z,default,p';
    const shown = gpuNode('n1', [card('GPU-n1-0', { devmem: 16384 })], { rv: '9', annotations: { 'hami.io/mutex.lock': stale } });
    const answer = await ingestClusterEvents(ingest.deps, [modified(shown)]);
    expect(answer.effects).toEqual([{ kind: 'PatchNodeAnnotations', name: 'n1', annotations: { 'hami.io/mutex.lock': null }, ifAnnotations: { 'hami.io/mutex.lock': stale } }]);
    // A Node naming a pod still allocating is left alone.
    const other = gpuPod('o', [{ name: 'c', gpu: 1, mem: 5000 }]);
    await place(w.environment(), other, ['n1']);
    const allocating = gpuNode('n1', [card('GPU-n1-0', { devmem: 16384 })], { rv: '10', annotations: { 'hami.io/mutex.lock': '2027-01-15T08:00:01Z,default,o' } });
    expect((await ingestClusterEvents(ingest.deps, [modified(allocating)])).effects).toEqual([]);
  });

  it('ends a lock others wait for on its own, after the batch, and nudges them', async () => {
    const { w, allocated, ingest } = await lockedByPlacedPod({ 'uid-q': 'default/q' });
    const answer = await ingestClusterEvents(ingest.deps, [allocated]);
    expect(w.store.stored('n1')!.lock).toBeUndefined();
    expect(ingest.store.calls.map((c) => c.operation).filter((op) => op === 'replaceBooking' || op === 'releaseLock')).toEqual(['replaceBooking', 'releaseLock']);
    expect(answer.effects).toEqual([expect.objectContaining({ kind: 'PatchNodeAnnotations', name: 'n1', annotations: { 'hami.io/mutex.lock': null }, ifAnnotations: { 'hami.io/mutex.lock': expect.stringMatching(/,default,p$/) } }), expect.objectContaining({ kind: 'PatchPodAnnotations', name: 'q', uid: 'uid-q' })]);
  });

  it('a waiter that arrives between the batch’s read and its write keeps the lock for the release that nudges it', async () => {
    const { w, pod, allocated, ingest } = await lockedByPlacedPod();
    const replaceBooking = ingest.store.replaceBooking.bind(ingest.store);
    let raced = false;
    ingest.store.replaceBooking = async (...args) => {
      if (!raced) {
        raced = true;
        await w.store.addLockWaiter('n1', pod.metadata.uid, 'uid-q', 'default/q');
      }
      return replaceBooking(...args);
    };
    const answer = await ingestClusterEvents(ingest.deps, [allocated]);
    expect(w.store.stored('n1')!.lock).toBeUndefined();
    expect(w.store.stored('n1')!.bookings[pod.metadata.uid]?.bindPhase).toBe('success');
    expect(answer.effects).toEqual([expect.objectContaining({ kind: 'PatchNodeAnnotations', name: 'n1', annotations: { 'hami.io/mutex.lock': null }, ifAnnotations: { 'hami.io/mutex.lock': expect.stringMatching(/,default,p$/) } }), expect.objectContaining({ kind: 'PatchPodAnnotations', name: 'q', uid: 'uid-q' })]);
  });

  it('keeps a lock whose batch must be sent again, so the resend frees it and nudges its waiters', async () => {
    const { w, env } = await withNode();
    const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 5000 }]);
    const annotations = await place(env, pod, ['n1']);
    const lock = { holder: 'default/p', holderUid: pod.metadata.uid, sinceMs: w.clock.now, expiresAtMs: w.clock.now + 300_000, waiters: { 'uid-q': 'default/q' } };
    await w.store.acquireLock('n1', lock, w.clock.now);
    const putNode = w.store.putNode.bind(w.store);
    w.store.putNode = async (ledger, expected) => {
      if (ledger.name === 'n2') throw new StoreUnavailableError('throttled');
      return putNode(ledger, expected);
    };
    const batch = [modified(forwardedPod(pod, { ...annotations, 'hami.io/bind-phase': 'success' }, { rv: '5' })), added(node('n2'))];
    // A 503 carries no Effects: had the lock been freed here, the nudge for q would be lost with it.
    await expect(ingestClusterEvents(w.environment().deps, batch)).rejects.toThrow(StoreUnavailableError);
    expect(w.store.stored('n1')!.lock?.holderUid).toBe(pod.metadata.uid);
    w.store.putNode = putNode;
    const resent = await ingestClusterEvents(w.environment().deps, batch);
    expect(w.store.stored('n1')!.lock).toBeUndefined();
    expect(resent.effects).toEqual([expect.objectContaining({ kind: 'PatchNodeAnnotations', name: 'n1', annotations: { 'hami.io/mutex.lock': null }, ifAnnotations: { 'hami.io/mutex.lock': expect.stringMatching(/,default,p$/) } }), expect.objectContaining({ kind: 'PatchPodAnnotations', name: 'q', uid: 'uid-q' })]);
  });

  it('journals the locks a batch freed when another lock of the batch cannot be freed for now, and frees that one on the resend', async () => {
    const w = world();
    await ingestClusterEvents(w.environment().deps, [added(node('n1')), added(node('n2'))]);
    const env = w.environment();
    const p = gpuPod('p', [{ name: 'c', gpu: 1, mem: 5000 }]);
    const r = gpuPod('r', [{ name: 'c', gpu: 1, mem: 5000 }]);
    const onN1 = await place(env, p, ['n1']);
    const onN2 = await place(env, r, ['n2']);
    await w.store.acquireLock('n1', { holder: 'default/p', holderUid: p.metadata.uid, sinceMs: w.clock.now, expiresAtMs: w.clock.now + 300_000 }, w.clock.now);
    // n2's lock has a waiter: it ends on its own after the batch's writes (n1's ends with its booking's write).
    await w.store.acquireLock('n2', { holder: 'default/r', holderUid: r.metadata.uid, sinceMs: w.clock.now, expiresAtMs: w.clock.now + 300_000, waiters: { 'uid-q': 'default/q' } }, w.clock.now);
    const releaseLock = w.store.releaseLock.bind(w.store);
    w.store.releaseLock = async (name, holderUid) => {
      if (name === 'n2') throw new StoreUnavailableError('throttled');
      return releaseLock(name, holderUid);
    };
    const success = (pod: typeof p, annotations: Record<string, string>) => modified(forwardedPod(pod, { ...annotations, 'hami.io/bind-phase': 'success' }, { rv: '5' }));
    const batch = [success(p, onN1), success(r, onN2)];
    const before = (await w.store.readJournal(0, { consistent: true })).length;
    await expect(ingestClusterEvents(w.environment().deps, batch)).rejects.toThrow(StoreUnavailableError);
    expect(w.store.stored('n1')!.lock).toBeUndefined();
    expect(w.store.stored('n2')!.lock?.holderUid).toBe(r.metadata.uid);
    // Other warm views learn that n1 is free (lock-aware placement stops avoiding it).
    expect((await w.store.readJournal(0, { consistent: true })).slice(before).flatMap((entry) => entry.locks ?? [])).toEqual(['n1']);
    w.store.releaseLock = releaseLock;
    await ingestClusterEvents(w.environment().deps, batch);
    expect(w.store.stored('n2')!.lock).toBeUndefined();
  });
});

describe('cluster events: quotas', () => {
  const quota = (namespace: string, name: string, mem: string, rv: string) => added({ kind: 'ResourceQuota', apiVersion: 'v1', metadata: { name, namespace, resourceVersion: rv }, spec: { hard: { 'limits.nvidia.com/gpumem': mem } } });

  it('writes the quotas of different namespaces side by side, and one namespace’s in order, each landing', async () => {
    const w = world();
    const env = w.environment();
    const answer = await ingestClusterEvents(env.deps, [quota('team-a', 'q1', '1000', '1'), quota('team-b', 'q1', '2000', '2'), quota('team-a', 'q2', '3000', '3'), quota('team-c', 'q1', '4000', '4')]);
    expect(answer.rejected).toEqual([]);
    const puts = env.store.calls.filter((c) => c.operation === 'putQuota');
    // Three namespaces, four writes: the first of each namespace goes out together...
    expect(puts).toHaveLength(4);
    expect(puts.some((c) => c.inFlightAtStart > 0)).toBe(true);
    // ...and none refused: team-a's second write waited for its first (same item, same version).
    expect((await w.store.readQuota('team-a'))?.quotas).toEqual({ q1: { mem: 1000, resourceVersion: '1' }, q2: { mem: 3000, resourceVersion: '3' } });
    expect((await w.store.readQuota('team-a'))?.version).toBe(2);
    expect((await w.store.readQuota('team-b'))?.quotas.q1?.mem).toBe(2000);
    expect((await w.store.readQuota('team-c'))?.quotas.q1?.mem).toBe(4000);
  });
});

describe('cluster events: complete re-lists converge', () => {
  it('drops bookings and locks of pods a complete list no longer has, keeps reservations and newer bookings, and nodes and quotas likewise', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [added(node('n1', 2)), added(node('gone-node'))]);
    const kept = gpuPod('kept', [{ name: 'c', gpu: 1, mem: 1000 }]);
    const vanished = gpuPod('vanished', [{ name: 'c', gpu: 1, mem: 2000 }]);
    const later = gpuPod('later', [{ name: 'c', gpu: 1, mem: 4000 }]);
    const reserved = gpuPod('reserved', [{ name: 'c', gpu: 1, mem: 8000 }]);
    for (const [pod, rv] of [[kept, '10'], [vanished, '11'], [later, '30']] as const) {
      const annotations = await place(env, pod, ['n1']);
      await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, annotations, { rv }))]);
    }
    await place(env, reserved, ['n1']);
    await w.store.acquireLock('n1', { holder: 'default/vanished', holderUid: vanished.metadata.uid, sinceMs: w.clock.now, expiresAtMs: w.clock.now + 300_000 }, w.clock.now);
    await ingestClusterEvents(env.deps, [added({ kind: 'ResourceQuota', apiVersion: 'v1', metadata: { name: 'q', namespace: 'team', resourceVersion: '5' }, spec: { hard: { 'limits.nvidia.com/gpumem': '1000' } } })]);

    // The relay lists at resourceVersion 20: `later` was confirmed after it (rv 30), so the list could not know it.
    const answer = await ingestClusterEvents(env.deps, [], [
      { kind: 'Pod', resourceVersion: '20', keys: [kept.metadata.uid] },
      { kind: 'Node', resourceVersion: '20', keys: ['n1'] },
      { kind: 'ResourceQuota', resourceVersion: '20', keys: [] },
    ]);
    expect(answer.rejected).toEqual([]);
    const n1 = w.store.stored('n1')!;
    expect(n1.bookings[vanished.metadata.uid]?.state).toBe('gone');
    expect(n1.bookings[kept.metadata.uid]?.state).toBe('confirmed');
    expect(n1.bookings[later.metadata.uid]?.state).toBe('confirmed');
    expect(n1.bookings[reserved.metadata.uid]?.state).toBe('reserved');
    expect(n1.lock).toBeUndefined();
    expect(await usedMem(env, 'n1')).toBe(1000 + 4000 + 8000);
    expect(w.store.stored('gone-node')!.deleted).toBe(true);
    expect((await w.store.readQuota('team'))?.quotas.q?.deleted).toBe(true);
    expect(env.lines.filter((l) => l.message === 'ListedObjectsGone').map((l) => l.fields)).toEqual([
      { kind: 'Pod', resourceVersion: '20', gone: 1 },
      { kind: 'Node', resourceVersion: '20', gone: 1 },
      { kind: 'ResourceQuota', resourceVersion: '20', gone: 1 },
    ]);
  });

  it('a list taken before a booking was last confirmed does not drop it', async () => {
    const { env } = await withNode();
    const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 1000 }]);
    const annotations = await place(env, pod, ['n1']);
    await ingestClusterEvents(env.deps, [modified(forwardedPod(pod, annotations, { rv: '50' }))]);
    await ingestClusterEvents(env.deps, [], [{ kind: 'Pod', resourceVersion: '40', keys: [] }]);
    expect(await usedMem(env, 'n1')).toBe(1000);
  });
});

describe('cluster events: stored and fresh facts compare as JSON', () => {
  it.each([
    ['key order', { a: 1, b: { c: [1, 2], d: 'x' } }, { b: { d: 'x', c: [1, 2] }, a: 1 }, true],
    ['an undefined property is absent', { a: 1, b: undefined }, { a: 1 }, true],
    ['an undefined element is null', [1, undefined], [1, null], true],
    ['a missing property', { a: 1, b: 2 }, { a: 1 }, false],
    ['a property only on the right', { a: 1 }, { a: 1, b: 0 }, false],
    ['a nested difference', { r: { cards: [{ id: 'g0', mem: 1 }] } }, { r: { cards: [{ id: 'g0', mem: 2 }] } }, false],
    ['array length', [1, 2], [1, 2, 3], false],
    ['an array against an object', { 0: 1 }, [1], false],
    ['null against an object', null, {}, false],
    ['a number against its text', { v: 1 }, { v: '1' }, false],
  ])('%s', (_what, a, b, same) => {
    expect(sameJson(a, b)).toBe(same);
    expect(sameJson(b, a)).toBe(same);
    expect(sameJson(a, b)).toBe(JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b)));
  });
});

/** The comparison the walk replaces, as a reference: JSON text with keys in order. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => sortKeys(v ?? null));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([x], [y]) => (x < y ? -1 : 1))
      .map(([k, v]) => [k, sortKeys(v)]),
  );
}
