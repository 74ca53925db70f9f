/**
 * The store adapters against real DynamoDB-compatible servers: dynalite, and DynamoDB Local where Java is
 * installed. Conditional writes are what keep concurrent Lambdas from over-allocating, so each condition is
 * exercised for both outcomes.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDocumentClient } from '../../../lib/store/dynamo';
import { emptyNodeEntry, encodeRegistration, type NodeEntry, type NodeLock } from '../../../lib/store/model';
import { RecordStore } from '../../../lib/store/recordStore';
import { seal } from '../../../lib/control/ledger';
import { StateStore } from '../../../lib/store/stateStore';
import { ensureTables } from '../../../lib/store/tables';
import type { AttemptRecord } from '../../../lib/diagnostics/record';
import { backends, type DynamoBackend } from '../../support/dynamo';

const noSleep = async () => undefined;

function bookedEntry(ver: number, uid: string, appGpu: boolean): NodeEntry {
  return { ...emptyNodeEntry(), ver, pods: { [uid]: { ns: 'default', name: uid, st: 'confirmed', u: [['GPU-0', 1, 1000, 10]], appGpu } } };
}

function lockFor(uid: string, since: number, ttlMs = 300_000): NodeLock {
  return { holder: `default/${uid}`, holderUid: uid, since, expiresAt: since + ttlMs };
}

describe.each(backends)('store on %s', (_name, start) => {
  let backend: DynamoBackend;
  let state: StateStore;
  let records: RecordStore;
  let table = 0;

  beforeAll(async () => {
    backend = await start();
  }, 90_000);

  afterAll(async () => {
    await backend.stop();
  });

  beforeEach(async () => {
    table += 1;
    const raw = new DynamoDBClient({ endpoint: backend.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await ensureTables(raw, [`state-${table}`, `records-${table}`], noSleep);
    raw.destroy();
    const doc = createDocumentClient({ region: 'local', endpoint: backend.endpoint });
    state = new StateStore(doc, `state-${table}`, 4, noSleep);
    records = new RecordStore(doc, `records-${table}`, 3600);
  });

  it('creates a node entry once, then replaces it only at the expected version', async () => {
    expect(await state.putNodeEntry('gpu-a', seal(emptyNodeEntry(), 0), null)).toBe('ok');
    expect(await state.putNodeEntry('gpu-a', seal(emptyNodeEntry(), 0), null)).toBe('conflict');
    expect(await state.putNodeEntry('gpu-a', seal({ ...emptyNodeEntry(), ver: 1 }, 0), 0)).toBe('ok');
    expect(await state.putNodeEntry('gpu-a', seal({ ...emptyNodeEntry(), ver: 2 }, 0), 0)).toBe('conflict');
    expect((await state.readNode('gpu-a')).entry?.ver).toBe(1);
  });

  it('reads every node of every shard, and the namespace quota, in one call', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `node-${i}`);
    for (const name of names) await state.putNodeEntry(name, seal(bookedEntry(0, `pod-${name}`, true), 0), null);
    await state.putQuota('team-a', { ver: 1, quotas: { gpu: { mem: 1000 } } }, null);
    const before = state.counter.calls;
    const cluster = await state.readCluster('team-a');
    expect(state.counter.calls - before).toBe(1);
    expect([...cluster.nodes.keys()].sort()).toEqual([...names].sort());
    expect(cluster.quota?.quotas.gpu?.mem).toBe(1000);
  });

  it('keeps entries of different nodes in one shard independent', async () => {
    // With one shard every node shares an item: a write to one must not disturb another's version.
    const single = new StateStore(createDocumentClient({ region: 'local', endpoint: backend.endpoint }), state.table, 1, noSleep);
    await single.putNodeEntry('x', seal(emptyNodeEntry(), 0), null);
    await single.putNodeEntry('y', seal(emptyNodeEntry(), 0), null);
    expect(await single.putNodeEntry('x', seal({ ...emptyNodeEntry(), ver: 1 }, 0), 0)).toBe('ok');
    expect(await single.putNodeEntry('y', seal({ ...emptyNodeEntry(), ver: 1 }, 0), 0)).toBe('ok');
  });

  it('takes a lock only for a booked pod with cards in regular containers', async () => {
    await state.putNodeEntry('gpu-a', seal({ ...bookedEntry(0, 'holder', true), pods: { ...bookedEntry(0, 'holder', true).pods, ...bookedEntry(0, 'init-only', false).pods } }, 0), null);
    expect(await state.acquireLock('gpu-a', lockFor('stranger', 1000), 1000, 'stranger')).toBe('conflict');
    expect(await state.acquireLock('gpu-a', lockFor('init-only', 1000), 1000, 'init-only')).toBe('conflict');
    expect(await state.acquireLock('gpu-a', lockFor('holder', 1000), 1000, 'holder')).toBe('ok');
  });

  it('is re-entrant for the holder, exclusive for others until expiry, and released only by the holder', async () => {
    const entry = bookedEntry(0, 'a', true);
    entry.pods.b = { ns: 'default', name: 'b', st: 'confirmed', u: [], appGpu: true };
    await state.putNodeEntry('gpu-a', seal(entry, 0), null);
    expect(await state.acquireLock('gpu-a', lockFor('a', 1000), 1000, 'a')).toBe('ok');
    expect(await state.acquireLock('gpu-a', lockFor('a', 2000), 2000, 'a')).toBe('ok');
    expect(await state.acquireLock('gpu-a', lockFor('b', 3000), 3000, 'b')).toBe('conflict');
    expect(await state.releaseLock('gpu-a', 'b')).toBe('conflict');
    // Expired locks are free.
    expect(await state.acquireLock('gpu-a', lockFor('b', 400_000), 400_000, 'b')).toBe('ok');
    expect((await state.readNode('gpu-a')).lock?.holderUid).toBe('b');
    expect(await state.releaseLock('gpu-a', 'b')).toBe('ok');
    expect((await state.readNode('gpu-a')).lock).toBeUndefined();
  });

  it('takes over a stale lock only if it is still the one judged stale', async () => {
    const entry = bookedEntry(0, 'a', true);
    entry.pods.b = { ns: 'default', name: 'b', st: 'confirmed', u: [], appGpu: true };
    await state.putNodeEntry('gpu-a', seal(entry, 0), null);
    const stale = lockFor('a', 1000);
    await state.acquireLock('gpu-a', stale, 1000, 'a');
    expect(await state.replaceLock('gpu-a', lockFor('b', 2000), { ...stale, since: 999 })).toBe('conflict');
    expect(await state.replaceLock('gpu-a', lockFor('b', 2000), stale)).toBe('ok');
    expect((await state.readNode('gpu-a')).lock?.holder).toBe('default/b');
  });

  it('books concurrent fast reservations that fit, and refuses the one that would over-allocate', async () => {
    const registration = { registered: true as const, devices: [{ id: 'GPU-0', index: 0, count: 10, devmem: 10000, devcore: 100, type: 'A100', numa: 0, mode: '', health: true }], cordoned: [], pairScores: {} };
    await state.putNodeEntry('gpu-a', seal({ ...emptyNodeEntry(), reg: encodeRegistration(registration), regv: 1 }, 0), null);
    const claim = (mem: number) => ({ uuid: 'GPU-0', slots: 1, mem, cores: 10, maxSlotsBefore: 9, maxMemBefore: 10000 - mem, maxCoresBefore: 90, exclusive: false, slotsHeldBefore: 0 });
    const booking = (uid: string, mem: number) => ({ ns: 'default', name: uid, st: 'reserved' as const, u: [['GPU-0', 1, mem, 10] as [string, number, number, number]] });
    // Three filters decided on the same stale view (an idle card) race: 4000 + 4000 fit, the third does not.
    const outcomes = await Promise.all(['a', 'b', 'c'].map((uid) => state.reserve('gpu-a', uid, booking(uid, 4000), 1, [claim(4000)])));
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(2);
    const { entry } = await state.readNode('gpu-a');
    expect(entry?.cu?.['GPU-0']).toEqual({ s: 2, m: 8000, c: 20 });
    expect(entry?.ver).toBe(2);
    expect(Object.keys(entry?.pods ?? {})).toHaveLength(2);
    // A pod already booked here, a changed registration, or an exclusive claim on a used card are refused.
    const booked = Object.keys(entry?.pods ?? {})[0] ?? '';
    expect(await state.reserve('gpu-a', booked, booking(booked, 100), 1, [claim(100)])).toBe('conflict');
    expect(await state.reserve('gpu-a', 'd', booking('d', 100), 2, [claim(100)])).toBe('conflict');
    expect(await state.reserve('gpu-a', 'd', booking('d', 100), 1, [{ ...claim(100), exclusive: true }])).toBe('conflict');
    expect(await state.reserve('gpu-a', 'd', booking('d', 100), 1, [claim(100)])).toBe('ok');
  });

  it('stores attempts and the bind outcome, newest first, and treats expired records as absent', async () => {
    const pod = { namespace: 'default', name: 'p', uid: 'u' };
    const attempt = (id: string): AttemptRecord => ({
      pod,
      attemptId: id,
      attempt: 0,
      time: '2026-11-20T00:00:00.000Z',
      filter: { status: 'failed', summary: `no available node, 1 nodes do not meet (${id})`, nodes: [] },
      bind: { status: 'pending', summary: '' },
    });
    const t0 = 1_800_000_000_000;
    await records.putAttempt(attempt('first'), t0);
    await records.putAttempt(attempt('second'), t0 + 1000);
    await records.putBind(pod, { status: 'failed', summary: 'lock' }, t0 + 2000);
    const read = await records.readPod('default', 'p', 5, t0 + 3000);
    expect(read.attempts.map((a) => a.record.attemptId)).toEqual(['second', 'first']);
    expect(read.bind).toMatchObject({ status: 'failed', summary: 'lock', timeMs: t0 + 2000 });
    const later = await records.readPod('default', 'p', 5, t0 + 3600_000 + 5000);
    expect(later.attempts).toEqual([]);
    expect(later.bind).toBeUndefined();
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
            uuid: `GPU-${i}-${j}-${Math.random().toString(36).slice(2)}`,
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
    await records.putAttempt(record, 1_800_000_000_000);
    const read = await records.readPod('default', 'big', 1, 1_800_000_000_000);
    expect(read.attempts[0]?.record.filter.nodes).toHaveLength(1000);
    expect(read.attempts[0]?.record.filter.nodes[999]?.reason).toBe('8/8 CardInsufficientMemory');
  });
});
