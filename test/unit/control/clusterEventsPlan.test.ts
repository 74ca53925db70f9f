/**
 * Planning cluster events (lib/control/clusterEventsPlan.ts), pure: which nodes a batch changes, which locks its events
 * end, what it says of each node's lock annotation, and what a lock becomes after the batch (docs/locks.md). Tables,
 * no store.
 */
import { parseEvents, planClusterEvents, settleLock, staleLockMirror, type LockNote, type LockSettlement, type PlanContext } from '../../../lib/control/clusterEventsPlan';
import { emptyLedger, type Booking, type NodeLedger, type NodeLock } from '../../../lib/control/ledger';
import { defaultEngineConfig } from '../../../lib/engine/types';
import { card, forwardedPod, gpuNode, gpuPod } from '../../support/cluster';

const LOCK = 'hami.io/mutex.lock';
const value = (pod: string) => `2026-11-28T10:00:00Z,default,${pod}`;

/** A view in which pod uid-p is booked on n1, and a pod named default/gone once had uid-gone on n2. */
const context: PlanContext = {
  engine: defaultEngineConfig,
  holders: (uid) => (uid === 'uid-p' ? ['n1'] : uid === 'uid-gone' ? ['n2'] : []),
  uidsByName: (namespace, name) => (namespace === 'default' && name === 'gone' ? ['uid-gone'] : []),
};

const nodeWith = (name: string, lock?: string) => gpuNode(name, [card(`GPU-${name}`)], lock !== undefined ? { annotations: { [LOCK]: lock } } : {});
const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 5000 }], { uid: 'uid-p' });
const onN1 = { 'hami.io/vgpu-node': 'n1', 'hami.io/vgpu-devices-allocated': 'GPU-n1,NVIDIA,5000,0:;' };

function plan(events: readonly unknown[]) {
  const { valid, rejected } = parseEvents(events);
  const planned = planClusterEvents(context, valid, false);
  return {
    nodes: [...planned.changes.keys()].sort(),
    locksEnded: Object.fromEntries([...planned.lockHolders].map(([node, uids]) => [node, [...uids]])),
    notes: Object.fromEntries(planned.lockNotes),
    present: [...planned.present].sort(),
    rejected: [...rejected, ...planned.rejected].map((r) => r.index),
  };
}

describe('planning a batch', () => {
  it.each([
    {
      case: 'a Node: its node changes, is present, and its lock annotation is noted (none)',
      events: [{ type: 'ADDED', object: nodeWith('n1') }],
      want: { nodes: ['n1'], locksEnded: {}, notes: { n1: { last: null, named: [] } }, present: ['n1'], rejected: [] },
    },
    {
      case: 'a Node named a holder, then lost the annotation: both are noted, in order',
      events: [
        { type: 'MODIFIED', object: nodeWith('n1', value('p')) },
        { type: 'MODIFIED', object: nodeWith('n1') },
      ],
      want: { nodes: ['n1'], locksEnded: {}, notes: { n1: { last: null, named: ['default/p'] } }, present: ['n1'], rejected: [] },
    },
    {
      case: 'a deleted Node is not present',
      events: [
        { type: 'ADDED', object: nodeWith('n1') },
        { type: 'DELETED', object: nodeWith('n1') },
      ],
      want: { nodes: ['n1'], locksEnded: {}, notes: { n1: { last: null, named: [] } }, present: [], rejected: [] },
    },
    {
      case: 'a pod whose allocation the device plugin reported ends its lock where it is booked',
      events: [{ type: 'MODIFIED', object: forwardedPod(pod, { ...onN1, 'hami.io/bind-phase': 'success' }) }],
      want: { nodes: ['n1'], locksEnded: { n1: ['uid-p'] }, notes: {}, present: [], rejected: [] },
    },
    {
      case: 'a pod still allocating ends no lock',
      events: [{ type: 'MODIFIED', object: forwardedPod(pod, { ...onN1, 'hami.io/bind-phase': 'allocating' }) }],
      want: { nodes: ['n1'], locksEnded: {}, notes: {}, present: [], rejected: [] },
    },
    {
      case: 'a pod deleted without its uid (a re-list) is found by name in the view',
      events: [{ type: 'DELETED', object: { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'gone', namespace: 'default' } } }],
      want: { nodes: ['n2'], locksEnded: { n2: ['uid-gone'] }, notes: {}, present: [], rejected: [] },
    },
    {
      case: 'a pod updated without its uid is rejected; so is an event that is no object, and the rest still plans',
      events: [{ type: 'MODIFIED', object: { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'x', namespace: 'default' } } }, { type: 'ADDED' }, { type: 'ADDED', object: nodeWith('n3') }],
      want: { nodes: ['n3'], locksEnded: {}, notes: { n3: { last: null, named: [] } }, present: ['n3'], rejected: [1, 0] },
    },
    {
      case: 'a pod whose vgpu-node is no node name is rejected',
      events: [{ type: 'MODIFIED', object: forwardedPod(pod, { ...onN1, 'hami.io/vgpu-node': 'Not A Node!' }) }],
      want: { nodes: [], locksEnded: {}, notes: {}, present: [], rejected: [0] },
    },
  ])('$case', ({ events, want }) => {
    expect(plan(events)).toEqual(want);
  });
});

describe('what a batch does to a node’s lock', () => {
  const lock = (mirrored: boolean): NodeLock => ({ holder: 'default/p', holderUid: 'uid-p', sinceMs: 0, expiresAtMs: 1, ...(mirrored ? { mirrored } : {}) });
  const note = (last: string | null, named: string[] = []): LockNote => ({ last, named });
  const release = (clearMirror: boolean): LockSettlement => ({ action: 'release', clearMirror });
  it.each<{ case: string; mirrored: boolean; holderDone: boolean; note: LockNote | undefined; want: LockSettlement }>([
    { case: 'the holder’s end, no Node event: released, and its annotation cleared', mirrored: true, holderDone: true, note: undefined, want: release(true) },
    { case: 'the holder’s end while the Node still names it: released and cleared', mirrored: false, holderDone: true, note: note(value('p'), ['default/p']), want: release(true) },
    { case: 'the holder’s end with the annotation gone in the same batch: released, nothing to clear', mirrored: true, holderDone: true, note: note(null), want: release(false) },
    { case: 'no news of the lock: kept', mirrored: true, holderDone: false, note: undefined, want: { action: 'keep' } },
    { case: 'the Node names the holder for the first time: marked mirrored', mirrored: false, holderDone: false, note: note(value('p'), ['default/p']), want: { action: 'markMirrored' } },
    { case: 'the Node names it, mirrored already: kept', mirrored: true, holderDone: false, note: note(value('p'), ['default/p']), want: { action: 'keep' } },
    { case: 'the annotation gone after it was mirrored: the device plugin released it', mirrored: true, holderDone: false, note: note(null), want: release(false) },
    { case: 'the annotation named it and went, both in this batch: released', mirrored: false, holderDone: false, note: note(null, ['default/p']), want: release(false) },
    { case: 'no annotation, never seen naming it (a Node event from before the lock’s patch): kept', mirrored: false, holderDone: false, note: note(null), want: { action: 'keep' } },
  ])('$case', ({ mirrored, holderDone, note: seen, want }) => {
    expect(settleLock(lock(mirrored), holderDone, seen)).toEqual(want);
  });
});

describe('a lock annotation with no lock behind it', () => {
  const booked = (name: string, extra: Partial<Booking> = {}): Booking => ({ namespace: 'default', name, state: 'confirmed', initCount: 0, initDone: false, uses: [], holdsAppCards: true, origin: 'decided', ...extra });
  const ledger = (bookings: Record<string, Booking>, lockHolder?: string): NodeLedger => ({
    ...emptyLedger('n1'),
    bookings,
    ...(lockHolder !== undefined ? { lock: { holder: `default/${lockHolder}`, holderUid: `uid-${lockHolder}`, sinceMs: 0, expiresAtMs: 1 } } : {}),
  });
  const seen = (pod: string): LockNote => ({ last: value(pod), named: [`default/${pod}`] });
  it.each<{ case: string; node: NodeLedger; note: LockNote | undefined; ended?: string[]; want: string | undefined }>([
    { case: 'names a deleted pod, no lock: cleared', node: ledger({ 'uid-p': booked('p', { state: 'gone' }) }), note: seen('p'), want: value('p') },
    { case: 'names a pod whose allocation was reported: cleared', node: ledger({ 'uid-p': booked('p', { bindPhase: 'success' }) }), note: seen('p'), want: value('p') },
    { case: 'names a pod whose allocation this batch ends: cleared', node: ledger({ 'uid-p': booked('p') }), note: seen('p'), ended: ['uid-p'], want: value('p') },
    { case: 'names a finished pod while another holds the lock: cleared (the holder writes its own)', node: ledger({ 'uid-p': booked('p', { bindPhase: 'failed' }), 'uid-q': booked('q') }, 'q'), note: seen('p'), want: value('p') },
    { case: 'names the lock’s holder: left to the lock’s own settling', node: ledger({ 'uid-p': booked('p', { bindPhase: 'success' }) }, 'p'), note: seen('p'), want: undefined },
    { case: 'names a pod still allocating: kept', node: ledger({ 'uid-p': booked('p', { bindPhase: 'allocating' }) }), note: seen('p'), want: undefined },
    { case: 'names a pod the ledger never booked here (HAMi’s own lock): kept', node: ledger({}), note: seen('p'), want: undefined },
    { case: 'no annotation: nothing', node: ledger({ 'uid-p': booked('p', { state: 'gone' }) }), note: { last: null, named: [] }, want: undefined },
    { case: 'no Node event: nothing', node: ledger({ 'uid-p': booked('p', { state: 'gone' }) }), note: undefined, want: undefined },
  ])('$case', ({ node, note: shown, ended, want }) => {
    expect(staleLockMirror(node, shown, ended ? new Set(ended) : undefined)).toBe(want);
  });
});
