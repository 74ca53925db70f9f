/**
 * The in-memory record store lists scheduler-log summaries as the DynamoDB adapter does (same keys, same order,
 * same positions, same bind rule), so rule tables and the local server agree. The adapter itself is run over
 * dynalite by test/integration/control/listing.test.ts.
 */
import type { AttemptRecord } from '../../../lib/diagnostics/record';
import { MemoryRecordStore } from '../../../lib/store/memory';
import { summaryKey } from '../../../lib/store/recordCodec';

const T = 1_800_000_000_000;

function attempt(namespace: string, name: string, attemptId: string, status: 'passed' | 'failed' = 'passed'): AttemptRecord {
  return {
    pod: { namespace, name, uid: `uid-${name}` },
    attemptId,
    attempt: 0,
    time: new Date(T).toISOString(),
    filter: status === 'passed' ? { status, summary: 'find fit node(n1)', node: 'n1', evaluated: 2, nodes: [] } : { status, summary: 'no available node, 2 nodes do not meet', evaluated: 2, reasons: [{ code: 'CardInsufficientMemory', nodes: 2 }], nodes: [] },
    bind: { status: 'pending', summary: '' },
  };
}

async function listAll(store: MemoryRecordStore, namespace: string | undefined, limit: number, nowMs = T): Promise<string[]> {
  const names: string[] = [];
  let after: string | undefined;
  for (let page = 0; page < 100; page++) {
    const got = await store.listSummaries({ limit, nowMs, ...(namespace !== undefined ? { namespace } : {}), ...(after !== undefined ? { after } : {}) });
    names.push(...got.items.map((s) => `${s.pod.namespace}/${s.pod.name}`));
    if (got.next === undefined) return names;
    after = got.next;
  }
  throw new Error('pages never ended');
}

describe('scheduler-log summaries in memory', () => {
  it('lists each pod once, by namespace or all, whatever the page size', async () => {
    const store = new MemoryRecordStore(3_600_000);
    const pods = ['a/p1', 'a/p2', 'a/p3', 'b/q1', 'c/r1', 'c/r2'];
    for (const pod of pods) {
      const [ns, name] = pod.split('/') as [string, string];
      await store.putAttempt(attempt(ns, name, `${name}-1`), T);
    }
    for (const limit of [1, 2, 5, 100]) {
      expect((await listAll(store, undefined, limit)).sort()).toEqual(pods);
      expect((await listAll(store, 'a', limit)).sort()).toEqual(['a/p1', 'a/p2', 'a/p3']);
    }
    expect(await listAll(store, 'none', 10)).toEqual([]);
    expect(await listAll(store, undefined, 10, T + 3_600_001)).toEqual([]);
  });

  it('keeps the latest attempt, and gives it a bind outcome only when the outcome is not older', async () => {
    const store = new MemoryRecordStore(3_600_000);
    await store.putAttempt(attempt('a', 'p', 'first'), T);
    await store.putBind({ namespace: 'a', name: 'p', uid: 'uid-p' }, { status: 'passed', summary: 'ok', node: 'n1' }, T + 10);
    expect((await store.listSummaries({ limit: 10, nowMs: T + 10 })).items[0]).toMatchObject({ attemptId: 'first', bind: { status: 'passed' } });
    await store.putAttempt(attempt('a', 'p', 'second', 'failed'), T + 20);
    // An outcome older than the newest attempt belongs to an earlier one.
    await store.putBind({ namespace: 'a', name: 'p', uid: 'uid-p' }, { status: 'failed', summary: 'late', node: 'n1' }, T + 15);
    expect((await store.listSummaries({ limit: 10, nowMs: T + 20 })).items[0]).toMatchObject({ attemptId: 'second', bind: { status: 'pending' }, filter: { reasons: [{ code: 'CardInsufficientMemory', nodes: 2 }] } });
  });

  it("refuses a position from another namespace's list", async () => {
    const store = new MemoryRecordStore(3_600_000);
    const other = summaryKey('b', 'q');
    await expect(store.listSummaries({ namespace: 'a', limit: 1, nowMs: T, after: `${other.shard}:${other.sk}` })).rejects.toThrow(/continue token/);
    await expect(store.listSummaries({ limit: 1, nowMs: T, after: 'garbage' })).rejects.toThrow('continue token is not valid for this list');
  });
});
