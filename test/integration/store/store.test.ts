/**
 * The storage ports' contract, run against every implementation: the in-memory store the rule tables use, and
 * the DynamoDB adapter on dynalite and (where Java is installed) DynamoDB Local. Conditional writes are what
 * keep concurrent deciders from over-allocating, so each condition is exercised for both outcomes; the
 * in-memory store is only trustworthy because it passes the same cases.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { emptyLedger, nextLedger, type Booking, type NodeLedger, type NodeLock } from '../../../lib/control/ledger';
import type { LedgerStore, RecordStorePort } from '../../../lib/control/ports';
import type { StoredClaim } from '../../../lib/engine/claims';
import type { AttemptRecord } from '../../../lib/diagnostics/record';
import { decide } from '../../../lib/engine/decide';
import { createDocumentClient, emptyStats } from '../../../lib/store/dynamo';
import type { DocumentClient } from '../../../lib/store/dynamoHttp';
import { DynamoLedgerStore } from '../../../lib/store/ledgerStore';
import { MemoryLedgerStore, MemoryRecordStore } from '../../../lib/store/memory';
import { RecordStore } from '../../../lib/store/recordStore';
import { ensureTables } from '../../../lib/store/tables';
import { backends, type DynamoBackend } from '../../support/dynamo';
import { card, gpu, input, node as engineNode, pod as enginePod } from '../../unit/engine/fixtures';

const noSleep = async () => undefined;
const RETENTION_S = 3600;

interface Stores {
  readonly ledger: LedgerStore;
  readonly records: RecordStorePort;
  /** A second, independent adapter on the same data (another Lambda environment). */
  readonly other: LedgerStore;
  /** The stores' clock (epoch ms), 0 until a test moves it. */
  readonly clock: { now: number };
  /** The DynamoDB adapter's client (absent for the in-memory store), for a test to reach items directly. */
  readonly doc?: DocumentClient;
}

type Factory = { start(): Promise<void>; stop(): Promise<void>; fresh(): Promise<Stores> };

function memoryFactory(): Factory {
  return {
    start: async () => undefined,
    stop: async () => undefined,
    fresh: async () => {
      const clock = { now: 0 };
      const ledger = new MemoryLedgerStore(() => clock.now);
      return { ledger, other: ledger, records: new MemoryRecordStore(RETENTION_S * 1000), clock };
    },
  };
}

function dynamoFactory(startBackend: () => Promise<DynamoBackend>): Factory {
  let backend: DynamoBackend;
  let table = 0;
  return {
    start: async () => {
      backend = await startBackend();
    },
    stop: () => backend.stop(),
    fresh: async () => {
      table += 1;
      const raw = new DynamoDBClient({ endpoint: backend.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
      await ensureTables(raw, [`state-${table}`, `records-${table}`], noSleep);
      raw.destroy();
      const doc = () => createDocumentClient({ region: 'local', endpoint: backend.endpoint, localCredentials: true });
      const clock = { now: 0 };
      return {
        ledger: new DynamoLedgerStore(doc(), `state-${table}`, emptyStats(), noSleep, () => clock.now),
        other: new DynamoLedgerStore(doc(), `state-${table}`, emptyStats(), noSleep, () => clock.now),
        records: new RecordStore(doc(), `records-${table}`, RETENTION_S),
        clock,
        doc: doc(),
      };
    },
  };
}

const implementations: [string, Factory][] = [['memory', memoryFactory()], ...backends.map(([name, start]): [string, Factory] => [name, dynamoFactory(start)])];

function booking(name: string, mem: number, overrides: Partial<Booking> = {}): Booking {
  return {
    namespace: 'default',
    name,
    state: 'confirmed',
    devices: `GPU-0,NVIDIA,${mem},10:;`,
    initCount: 0,
    initDone: false,
    uses: [{ uuid: 'GPU-0', slots: 1, mem, cores: 10 }],
    holdsAppCards: true,
    origin: 'decided',
    ...overrides,
  };
}

const registration = {
  registered: true as const,
  devices: [{ id: 'GPU-0', index: 0, count: 10, devmem: 10000, devcore: 100, type: 'NVIDIA-A100', numa: 0, mode: 'hami-core', health: true }],
  cordoned: [],
  pairScores: {},
};

function node(name: string, bookings: Record<string, Booking> = {}): NodeLedger {
  return nextLedger({ ...emptyLedger(name), registration, registrationVersion: 1, bookings }, 0);
}

function lockFor(uid: string, since: number, ttlMs = 300_000): NodeLock {
  return { holder: `default/${uid}`, holderUid: uid, sinceMs: since, expiresAtMs: since + ttlMs };
}

function claim(mem: number, overrides: Partial<StoredClaim> = {}): StoredClaim {
  return { uuid: 'GPU-0', slots: 1, mem, cores: 10, maxSlotsBefore: 9, maxMemBefore: 10000 - mem, maxCoresBefore: 90, exclusive: false, slotsHeldBefore: 0, ...overrides };
}

describe.each(implementations)('storage ports on %s', (name, factory) => {
  let stores: Stores;

  beforeAll(() => factory.start(), 90_000);
  afterAll(() => factory.stop());
  beforeEach(async () => {
    stores = await factory.fresh();
  });

  const read = async (name: string) => (await stores.ledger.readNodes([name], { consistent: true })).get(name);

  it('creates a node once, then replaces it only at the expected version, returning it as stored', async () => {
    const first = await stores.ledger.putNode(node('gpu-a'), null);
    expect(first.ok && first.node.version).toBe(1);
    expect((await stores.ledger.putNode(node('gpu-a'), null)).ok).toBe(false);
    const next = nextLedger(node('gpu-a'), 0);
    expect((await stores.ledger.putNode(next, 1)).ok).toBe(true);
    expect((await stores.ledger.putNode(nextLedger(next, 0), 1)).ok).toBe(false);
    expect((await read('gpu-a'))?.version).toBe(2);
    expect((await stores.ledger.readNodes(['gpu-a', 'nowhere'], { consistent: false })).size).toBe(1);
  });

  it('treats a deleted node past its expiry as absent: read as absent, created again in its place', async () => {
    const gone = nextLedger({ ...node('gpu-z'), deleted: true }, 0);
    expect((await stores.ledger.putNode(gone, null)).ok).toBe(true);
    expect((await read('gpu-z'))?.deleted).toBe(true);
    expect((await stores.ledger.putNode(node('gpu-z'), null)).ok).toBe(false);
    stores.clock.now = 8 * 24 * 3600 * 1000;
    expect(await read('gpu-z')).toBeUndefined();
    expect((await stores.ledger.putNode(node('gpu-z'), null)).ok).toBe(true);
    expect(await read('gpu-z')).toMatchObject({ deleted: false, version: 1 });
  });

  it('books concurrent reservations that fit, refuses the one that would over-allocate, and keeps counters exact', async () => {
    await stores.ledger.putNode(node('gpu-a'), null);
    const reservation = (uid: string, mem: number) => ({ node: 'gpu-a', uid, booking: booking(uid, mem, { state: 'reserved' }), registrationVersion: 1, claims: [claim(mem)] });
    // Three deciders working from the same stale view (an idle card) race: 4000 + 4000 fit, the third does not.
    const outcomes = await Promise.all(['a', 'b', 'c'].map((uid) => (uid === 'b' ? stores.other : stores.ledger).reserve(reservation(uid, 4000))));
    expect(outcomes.filter((o) => o.ok)).toHaveLength(2);
    const stored = await read('gpu-a');
    expect(stored?.counters['GPU-0']).toEqual({ slots: 2, mem: 8000, cores: 20 });
    expect(Object.keys(stored?.bookings ?? {})).toHaveLength(2);
    expect(stored?.version).toBe(3);
    const refused = outcomes.find((o) => !o.ok);
    // A refused write returns the node as stored, except on dynalite, which ignores ReturnValuesOnConditionCheckFailure
    // (the adapter then reads it again: docs/state.md).
    const returned = refused && !refused.ok ? refused.current : undefined;
    expect(returned?.counters['GPU-0']?.mem).toBe(name === 'dynalite' ? undefined : 8000);
  });

  it('refuses a reservation for a pod already booked, on a changed registration, or exclusive on a used card', async () => {
    await stores.ledger.putNode(node('gpu-a', { held: booking('held', 1000) }), null);
    const r = (uid: string, overrides: Partial<Parameters<LedgerStore['reserve']>[0]> = {}) => ({ node: 'gpu-a', uid, booking: booking(uid, 100, { state: 'reserved' }), registrationVersion: 1, claims: [claim(100)], ...overrides });
    expect((await stores.ledger.reserve(r('held'))).ok).toBe(false);
    expect((await stores.ledger.reserve(r('d', { registrationVersion: 2 }))).ok).toBe(false);
    expect((await stores.ledger.reserve(r('d', { claims: [claim(100, { exclusive: true })] }))).ok).toBe(false);
    expect((await stores.ledger.reserve(r('d', { node: 'nowhere' }))).ok).toBe(false);
    const ok = await stores.ledger.reserve(r('d'));
    expect(ok.ok && ok.node.counters['GPU-0']).toEqual({ slots: 2, mem: 1100, cores: 20 });
    expect((await read('nowhere'))).toBeUndefined();
  });

  it('lets a pod filtered again replace its own booking only while it is exactly the one read', async () => {
    const held = booking('p', 3000, { state: 'reserved' });
    await stores.ledger.putNode(node('gpu-a', { p: held }), null);
    const replacing = { node: 'gpu-a', uid: 'p', booking: booking('p', 1000, { state: 'reserved' }), registrationVersion: 1, claims: [claim(-2000, { slots: 0, cores: 0, maxMemBefore: 9000 + 3000, slotsHeldBefore: 1 })] };
    expect((await stores.ledger.reserve({ ...replacing, replacing: booking('p', 9999) })).ok).toBe(false);
    const ok = await stores.ledger.reserve({ ...replacing, replacing: held });
    expect(ok.ok && ok.node.counters['GPU-0']).toEqual({ slots: 1, mem: 1000, cores: 10 });
  });

  it('replaces a booking with the same usage only if it is still the expected one', async () => {
    const held = booking('p', 3000, { state: 'reserved' });
    await stores.ledger.putNode(node('gpu-a', { p: held }), null);
    const confirmed = booking('p', 3000, { resourceVersion: '5' });
    expect((await stores.ledger.replaceBooking('gpu-a', 'p', confirmed, booking('p', 3000))).ok).toBe(false);
    const ok = await stores.ledger.replaceBooking('gpu-a', 'p', confirmed, held);
    expect(ok.ok && ok.node.bookings.p).toEqual(confirmed);
  });

  it('ends the lock with its holder’s booking only while that pod holds it and nobody waits', async () => {
    const held = booking('a', 3000);
    await stores.ledger.putNode(node('gpu-a', { a: held, b: booking('b', 1000) }), null);
    const allocated = booking('a', 3000, { resourceVersion: '7' });
    // No lock: refused, and the booking stays as it was.
    expect((await stores.ledger.replaceBooking('gpu-a', 'a', allocated, held, true)).ok).toBe(false);
    await stores.ledger.acquireLock('gpu-a', lockFor('b', 1000), 1000);
    expect((await stores.ledger.replaceBooking('gpu-a', 'a', allocated, held, true)).ok).toBe(false);
    expect((await read('gpu-a'))?.lock?.holderUid).toBe('b');
    await stores.ledger.releaseLock('gpu-a', 'b');
    await stores.ledger.acquireLock('gpu-a', lockFor('a', 2000), 2000);
    await stores.ledger.addLockWaiter('gpu-a', 'a', 'b', 'default/b');
    expect((await stores.ledger.replaceBooking('gpu-a', 'a', allocated, held, true)).ok).toBe(false);
    expect((await read('gpu-a'))?.bookings.a).toEqual(held);
    // Its waiter gone (the lock taken anew, as after a release), the write lands: booking replaced, lock gone.
    await stores.ledger.releaseLock('gpu-a', 'a');
    await stores.ledger.acquireLock('gpu-a', lockFor('a', 3000), 3000);
    const before = (await read('gpu-a'))!;
    const ended = await stores.ledger.replaceBooking('gpu-a', 'a', allocated, held, true);
    expect(ended.ok && ended.node.lock).toBeUndefined();
    expect(ended.ok && ended.node.bookings.a).toEqual(allocated);
    expect(ended.ok && ended.node.version).toBe(before.version + 1);
    expect(await read('gpu-a')).toMatchObject({ bookings: { a: allocated } });
    expect((await read('gpu-a'))?.lock).toBeUndefined();
  });

  it('takes a lock only for a booked pod whose regular containers hold cards', async () => {
    await stores.ledger.putNode(node('gpu-a', { holder: booking('holder', 1000), initonly: booking('initonly', 1000, { holdsAppCards: false }) }), null);
    expect((await stores.ledger.acquireLock('gpu-a', lockFor('stranger', 1000), 1000)).ok).toBe(false);
    expect((await stores.ledger.acquireLock('gpu-a', lockFor('initonly', 1000), 1000)).ok).toBe(false);
    const taken = await stores.ledger.acquireLock('gpu-a', lockFor('holder', 1000), 1000);
    expect(taken.ok && taken.node.lock?.holder).toBe('default/holder');
  });

  it('is re-entrant for the holder, exclusive for others until expiry, released only by the holder, and untouched by whole writes', async () => {
    await stores.ledger.putNode(node('gpu-a', { a: booking('a', 1000), b: booking('b', 1000) }), null);
    expect((await stores.ledger.acquireLock('gpu-a', lockFor('a', 1000), 1000)).ok).toBe(true);
    expect((await stores.ledger.acquireLock('gpu-a', lockFor('a', 2000), 2000)).ok).toBe(true);
    expect((await stores.ledger.acquireLock('gpu-a', lockFor('b', 3000), 3000)).ok).toBe(false);
    expect((await stores.ledger.releaseLock('gpu-a', 'b')).ok).toBe(false);
    // A whole write of the node (cluster events) keeps the lock a bind holds.
    const current = (await read('gpu-a'))!;
    expect((await stores.ledger.putNode(nextLedger(current, 0), current.version)).ok).toBe(true);
    expect((await read('gpu-a'))?.lock?.holderUid).toBe('a');
    // Expired locks are free.
    expect((await stores.ledger.acquireLock('gpu-a', lockFor('b', 400_000), 400_000)).ok).toBe(true);
    expect((await read('gpu-a'))?.lock?.holderUid).toBe('b');
    expect((await stores.ledger.releaseLock('gpu-a', 'b')).ok).toBe(true);
    expect((await read('gpu-a'))?.lock).toBeUndefined();
  });

  it('takes over a stale lock only if it is still the one judged stale', async () => {
    await stores.ledger.putNode(node('gpu-a', { a: booking('a', 1000), b: booking('b', 1000) }), null);
    const stale = lockFor('a', 1000);
    await stores.ledger.acquireLock('gpu-a', stale, 1000);
    expect((await stores.ledger.replaceLock('gpu-a', lockFor('b', 2000), { ...stale, sinceMs: 999 })).ok).toBe(false);
    expect((await stores.ledger.replaceLock('gpu-a', lockFor('b', 2000), stale)).ok).toBe(true);
    expect((await read('gpu-a'))?.lock?.holder).toBe('default/b');
  });

  it('numbers journal entries without gaps, even with two writers, and reads them after a position', async () => {
    const appended = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? stores.ledger : stores.other).appendJournal({ atMs: i, nodes: { [`n${i}`]: i }, namespaces: [] })));
    expect([...appended].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await stores.other.journalHead()).toBe(6);
    const after = await stores.ledger.readJournal(3, { consistent: true });
    expect(after.map((e) => e.seq)).toEqual([4, 5, 6]);
    expect(Object.keys(after[0]!.nodes)).toHaveLength(1);
    // Lock changes travel by name (a lock does not move a node's version).
    const seq = await stores.ledger.appendJournal({ atMs: 7, nodes: {}, namespaces: [], locks: ['gpu-a'] });
    expect(await stores.other.readJournal(seq - 1, { consistent: true })).toEqual([{ seq, atMs: 7, nodes: {}, namespaces: [], locks: ['gpu-a'] }]);
  });

  it('keeps the node directory as names are added and removed', async () => {
    await stores.ledger.addToDirectory(['b', 'a', 'c']);
    await stores.other.addToDirectory(['a', 'd']);
    await stores.ledger.removeFromDirectory(['c']);
    expect(await stores.ledger.readDirectory()).toEqual(['a', 'b', 'd']);
  });

  it('writes namespace quotas under their version', async () => {
    expect(await stores.ledger.putQuota('team-a', { version: 1, quotas: { gpu: { mem: 1000 } } }, null)).toBe(true);
    expect(await stores.ledger.putQuota('team-a', { version: 1, quotas: {} }, null)).toBe(false);
    expect(await stores.ledger.putQuota('team-a', { version: 2, quotas: { gpu: { mem: 2000, cores: 50, resourceVersion: '4' } } }, 1)).toBe(true);
    expect(await stores.ledger.readQuota('team-a')).toEqual({ version: 2, quotas: { gpu: { mem: 2000, cores: 50, resourceVersion: '4' } } });
    expect(await stores.ledger.readQuota('team-b')).toBeUndefined();
  });

  const attemptOf = (pod: AttemptRecord['pod'], id: string): AttemptRecord => ({
    pod,
    attemptId: id,
    attempt: 0,
    time: '2026-11-20T00:00:00.000Z',
    view: { seq: 3, ageMs: 12 },
    filter: { status: 'failed', summary: `no available node, 1 nodes do not meet (${id})`, nodes: [] },
    bind: { status: 'pending', summary: '' },
  });

  it('stores attempts and the bind outcome, newest first, and treats expired records as absent', async () => {
    const pod = { namespace: 'default', name: 'p', uid: 'u' };
    const attempt = (id: string) => attemptOf(pod, id);
    const t0 = 1_800_000_000_000;
    await stores.records.putAttempt(attempt('first'), t0);
    await stores.records.putAttempt(attempt('second'), t0 + 1000);
    // The same attempt written again (decided anew after a lost race) replaces itself.
    await stores.records.putAttempt({ ...attempt('second'), filter: { status: 'passed', summary: 'again', nodes: [] } }, t0 + 1000);
    await stores.records.putBind(pod, { status: 'failed', summary: 'lock' }, t0 + 2000);
    const found = await stores.records.readPod('default', 'p', 5, t0 + 3000);
    expect(found.attempts.map((a) => [a.record.attemptId, a.record.filter.summary])).toEqual([
      ['second', 'again'],
      ['first', 'no available node, 1 nodes do not meet (first)'],
    ]);
    expect(found.attempts[0]?.record.view).toEqual({ seq: 3, ageMs: 12 });
    expect(found.bind).toMatchObject({ status: 'failed', summary: 'lock', timeMs: t0 + 2000 });
    const later = await stores.records.readPod('default', 'p', 5, t0 + RETENTION_S * 1000 + 5000);
    expect(later.attempts).toEqual([]);
    expect(later.bind).toBeUndefined();
  });

  it('keeps the node names of packed evidence, stored apart in a list written once per retention period', async () => {
    const names = Array.from({ length: 40 }, (_, i) => `ip-10-0-${i}-7.eu-west-1.compute.internal`);
    const decision = decide(input(enginePod([gpu(1, { 'nvidia.com/gpumem': 1000 })]), names.map((n, i) => engineNode(n, [card(`GPU-${i}`)]))));
    if (decision.kind !== 'fit') throw new Error('expected a fit');
    const pod = { namespace: 'default', name: 'packed', uid: 'u' };
    const packed = (id: string): AttemptRecord => ({
      ...attemptOf(pod, id),
      filter: { status: 'passed', summary: decision.message, node: decision.node, score: decision.score, nodePolicy: decision.nodePolicy, evaluated: names.length, nodes: [], packed: decision.packEvidence(), devices: decision.devices },
    });
    const t0 = 1_800_000_000_000;
    await stores.records.putAttempt(packed('one'), t0);
    await stores.records.putAttempt(packed('two'), t0 + 1000);
    const found = await stores.records.readPod('default', 'packed', 5, t0 + 2000);
    expect(found.attempts.map((a) => a.record.filter.nodes.map((n) => n.name))).toEqual([names, names]);
    expect(found.attempts.map((a) => [a.record.filter.summary, a.record.evidenceUnreadable])).toEqual([
      [decision.message, undefined],
      [decision.message, undefined],
    ]);

    const records = stores.records;
    if (!(records instanceof RecordStore) || stores.doc === undefined) return;
    // The list went with the first attempt only; it goes again once a retention period has passed.
    const items = (timeMs: number) => records.putAttemptParams(packed('three'), timeMs).RequestItems?.[records.table]?.map((r) => String(r.PutRequest?.Item?.pk));
    expect(items(t0 + 2000)).toEqual(['POD#default/packed', expect.stringMatching(/^LOGS#/)]);
    expect(items(t0 + RETENTION_S * 1000)).toEqual(['POD#default/packed', expect.stringMatching(/^LOGS#/), expect.stringMatching(/^NAMES#/)]);
    // A list that has expired (DynamoDB deletes it some time after; until then it is absent all the same): the
    // attempts read without their evidence.
    const listKey = { pk: items(t0 + RETENTION_S * 1000)![2]!, sk: 'L' };
    const list = (await stores.doc.send('BatchGetItem', { RequestItems: { [records.table]: { Keys: [listKey] } } })).Responses?.[records.table]?.[0];
    expect(list).toMatchObject({ ...listKey, enc: 'br', expiresAt: Math.floor(t0 / 1000) + 2 * RETENTION_S });
    await stores.doc.send('PutItem', { TableName: records.table, Item: { ...list, expiresAt: Math.floor(t0 / 1000) } });
    const later = await stores.records.readPod('default', 'packed', 5, t0 + 3000);
    expect(later.attempts.map((a) => [a.record.filter.node, a.record.filter.nodes.length, a.record.evidenceUnreadable])).toEqual([
      [decision.node, 0, 'the node names this attempt refers to are no longer stored'],
      [decision.node, 0, 'the node names this attempt refers to are no longer stored'],
    ]);
  });

  it('asks for the nodes’ registrations once, and only when the pod has an attempt to decode', async () => {
    let asked = 0;
    const registered = async () => {
      asked += 1;
      return () => undefined;
    };
    const t0 = 1_800_000_000_000;
    expect(await stores.records.readPod('default', 'unknown', 5, t0, registered)).toEqual({ attempts: [] });
    const boundOnly = { namespace: 'default', name: 'bound-only', uid: 'u1' };
    await stores.records.putBind(boundOnly, { status: 'passed', summary: 'bound' }, t0);
    expect((await stores.records.readPod('default', 'bound-only', 5, t0, registered)).bind).toMatchObject({ status: 'passed' });
    expect(asked).toBe(0);
    const pod = { namespace: 'default', name: 'tried', uid: 'u2' };
    await stores.records.putAttempt(attemptOf(pod, 'one'), t0);
    await stores.records.putAttempt(attemptOf(pod, 'two'), t0 + 1000);
    expect((await stores.records.readPod('default', 'tried', 5, t0 + 2000, registered)).attempts).toHaveLength(2);
    expect(asked).toBe(1);
  });

  it('keeps a thousand-node record under the item size limit', async () => {
    const pod = { namespace: 'default', name: 'big', uid: 'u' };
    const nodes = Array.from({ length: 1000 }, (_, i) => ({
      name: `node-${i}`,
      status: 'failed' as const,
      score: 0,
      reason: '8/8 CardInsufficientMemory',
      containers: [
        {
          name: 'c',
          index: 0,
          init: false,
          status: 'failed' as const,
          reason: '8/8 CardInsufficientMemory',
          cards: Array.from({ length: 8 }, (_, j) => ({
            uuid: `GPU-${i}-${j}-${(i * 31 + j * 7).toString(36)}`,
            index: j,
            outcome: 'CardInsufficientMemory' as const,
            totalMem: 81920,
            usedMem: 80000 + j,
            requestedMem: 4096,
            freeMem: 1920 - j,
            totalCores: 100,
            usedCores: 50,
            requestedCores: 10,
            slots: 10,
            usedSlots: 3,
          })),
        },
      ],
    }));
    const record: AttemptRecord = {
      pod,
      attemptId: 'big',
      attempt: 0,
      time: '2026-11-20T00:00:00.000Z',
      filter: { status: 'failed', summary: 'no available node, 1000 nodes do not meet', nodes },
      bind: { status: 'pending', summary: '' },
    };
    await stores.records.putAttempt(record, 1_800_000_000_000);
    const found = await stores.records.readPod('default', 'big', 1, 1_800_000_000_000);
    expect(found.attempts[0]?.record.filter.nodes).toHaveLength(1000);
    expect(found.attempts[0]?.record.filter.nodes[999]?.reason).toBe('8/8 CardInsufficientMemory');
  });
});
