/**
 * What a caller who may read some namespaces only is shown by the user port's lists: pods of other namespaces never
 * named, and pages cut on visible items alone, so that the pages and their positions depend on nothing hidden.
 */
import type { AuthDecision } from '../../../lib/relay/userAuth';
import type { PagePosition } from '../../../lib/relay/pageTokens';
import { hideHoldersOfLog, hidePodsOfNode, holderNamespacesOfLog, NamespaceAccess, podNamespacesOfNodes, scanPage, type PageScan } from '../../../lib/relay/userListings';

const allow: AuthDecision = { allowed: true, username: 'u' };
const forbid: AuthDecision = { allowed: false, code: 403, reason: 'Forbidden', message: 'no' };
const broken: AuthDecision = { allowed: false, code: 500, reason: 'InternalError', message: 'could not check access' };

/** Reviews answered from a list of readable namespaces ('*': everywhere), counting what was asked. */
function reviews(readable: readonly string[]) {
  const asked: string[] = [];
  return {
    asked,
    review: async (namespace?: string): Promise<AuthDecision> => {
      asked.push(namespace ?? '*');
      if (readable.includes('*')) return allow;
      if (namespace === 'broken') return broken;
      return namespace !== undefined && readable.includes(namespace) ? allow : forbid;
    },
  };
}

describe('NamespaceAccess', () => {
  it('asks the cluster scope once, then each namespace once, and stops at a review that could not be made', async () => {
    const r = reviews(['team-a']);
    const access = new NamespaceAccess(r.review);
    expect([...((await access.readable(['team-a', 'team-b', 'team-a'])) as Set<string>)]).toEqual(['team-a']);
    expect([...((await access.readable(['team-b', 'team-a', 'team-c'])) as Set<string>)]).toEqual(['team-a']);
    expect(r.asked).toEqual(['*', 'team-a', 'team-b', 'team-c']);
    expect(await access.readable(['broken'])).toEqual(broken);
  });

  it('asks nothing per namespace of a caller who may read every one', async () => {
    const r = reviews(['*']);
    expect([...((await new NamespaceAccess(r.review).readable(['x', 'y'])) as Set<string>)]).toEqual(['x', 'y']);
    expect(r.asked).toEqual(['*']);
  });
});

const node = {
  name: 'node1',
  lock: { holder: 'team-b/secret-lock', since: '2025-05-01T10:00:00Z', ageSeconds: 3 },
  devices: [
    { id: 'GPU-0', used: 3, usedmem: 9000, pods: ['team-a/a1', 'team-b/secret-1', 'team-b/secret-2'], bindFailed: ['team-a/a1', 'team-b/secret-2'] },
    { id: 'GPU-1', used: 0, usedmem: 0, pods: [] },
    { id: 'GPU-2', used: 2, usedmem: 10, pods: ['team-a/a2', 'team-c/c1'], mig: { profiles: [], inUse: [{ start: 0, size: 1, pod: 'team-c/c1' }, { start: 1, size: 1, pod: 'team-a/a2' }] } },
  ],
};

describe('node views', () => {
  it('finds every namespace a node names a pod of', () => {
    expect([...podNamespacesOfNodes([node, 'junk', { devices: 'junk' }])].sort()).toEqual(['team-a', 'team-b', 'team-c']);
  });

  it('keeps the usage and counts the pods it hides; MIG instances and the lock keep their times and places', () => {
    const shown = hidePodsOfNode(node, new Set(['team-a']));
    expect(shown).toEqual({
      name: 'node1',
      lock: { since: '2025-05-01T10:00:00Z', ageSeconds: 3, holderHidden: true },
      devices: [
        { id: 'GPU-0', used: 3, usedmem: 9000, pods: ['team-a/a1'], hiddenPods: 2, bindFailed: ['team-a/a1'] },
        { id: 'GPU-1', used: 0, usedmem: 0, pods: [] },
        { id: 'GPU-2', used: 2, usedmem: 10, pods: ['team-a/a2'], hiddenPods: 1, mig: { profiles: [], inUse: [{ start: 0, size: 1, podHidden: true }, { start: 1, size: 1, pod: 'team-a/a2' }] } },
      ],
    });
    expect(JSON.stringify(shown)).not.toMatch(/team-b|team-c|secret/);
    expect(hidePodsOfNode(node, new Set(['team-a', 'team-b', 'team-c']))).toEqual(node);
    // A card whose failed binds are all hidden says none.
    expect((hidePodsOfNode(node, new Set(['team-c'])) as { devices: Record<string, unknown>[] }).devices[0]).not.toHaveProperty('bindFailed');
  });
});

describe('scheduler logs', () => {
  const log = {
    pod: { namespace: 'team-a', name: 'mine' },
    filter: { status: 'passed', passedOver: [{ name: 'node1', holder: 'team-b/theirs' }, { name: 'node2', holder: 'team-a/ours' }] },
    history: [{ filter: { status: 'passed', passedOver: [{ name: 'node3', holder: 'team-c/other' }] } }, { filter: { status: 'failed' } }],
  };

  it('names the holders of the passed-over nodes only where the caller may read them', () => {
    expect([...holderNamespacesOfLog(log)].sort()).toEqual(['team-a', 'team-b', 'team-c']);
    const shown = hideHoldersOfLog(log, new Set(['team-a']));
    expect(shown).toEqual({
      pod: { namespace: 'team-a', name: 'mine' },
      filter: { status: 'passed', passedOver: [{ name: 'node1', holderHidden: true }, { name: 'node2', holder: 'team-a/ours' }] },
      history: [{ filter: { status: 'passed', passedOver: [{ name: 'node3', holderHidden: true }] } }, { filter: { status: 'failed' } }],
    });
  });

  it('names preemption victims, pods kept for their budget and a victim\'s preemptor only where the caller may read them', () => {
    const preempting = {
      pod: { namespace: 'team-a', name: 'urgent' },
      filter: {
        status: 'failed',
        preemption: {
          outcome: 'evicting',
          summary: 'evicting 2 lower-priority pods: team-a/low (priority 0), team-b/theirs (priority 1) …',
          victims: [
            { pod: 'team-a/low', uid: 'u1', priority: 0, cards: [] },
            { pod: 'team-b/theirs', uid: 'u2', priority: 1, cards: [] },
          ],
          spared: ['team-c/kept'],
        },
      },
      preemptedBy: { pod: 'team-d/boss', node: 'n1', time: '2026-01-01T00:00:00Z' },
    };
    expect([...holderNamespacesOfLog(preempting)].sort()).toEqual(['team-a', 'team-b', 'team-c', 'team-d']);
    const shown = hideHoldersOfLog(preempting, new Set(['team-a']));
    expect(shown).toEqual({
      pod: { namespace: 'team-a', name: 'urgent' },
      filter: {
        status: 'failed',
        preemption: {
          outcome: 'evicting',
          summary: 'evicting: some of the pods concerned are in namespaces you may not read',
          victims: [
            { pod: 'team-a/low', uid: 'u1', priority: 0, cards: [] },
            { podHidden: true, priority: 1, cards: [] },
          ],
          spared: [],
        },
      },
      preemptedBy: { podHidden: true, node: 'n1', time: '2026-01-01T00:00:00Z' },
    });
    expect(JSON.stringify(shown)).not.toMatch(/team-b|team-c|team-d|u2/);
    expect(hideHoldersOfLog(preempting, new Set(['team-a', 'team-b', 'team-c', 'team-d']))).toEqual(preempting);
  });
});

/** A control plane's list: pages of at most `limit` from a position, the position being the next item's index. */
function upstream(items: readonly string[]) {
  const reads: { upstream?: string; limit: number }[] = [];
  const read: PageScan['read'] = async (from, limit) => {
    reads.push({ ...(from !== undefined ? { upstream: from } : {}), limit });
    const start = from === undefined ? 0 : Number(from);
    const end = Math.min(items.length, start + limit);
    return { items: items.slice(start, end).map((ref) => ({ pod: ref })), ...(end < items.length ? { continue: String(end) } : {}) };
  };
  return { read, reads };
}

const refOf = (item: unknown) => (item as { pod: string }).pod;

/** Every page a caller who may read `readable` gets, following the positions. */
async function pages(items: readonly string[], readable: readonly string[], limit: number, opts: { scanPageSize?: number; maxReads?: number } = {}) {
  const cp = upstream(items);
  const out: { items: string[]; next?: PagePosition }[] = [];
  let start: PagePosition = { skip: 0 };
  for (;;) {
    const page = await scanPage({
      start,
      limit,
      read: cp.read,
      shown: async (list) => list.map((item) => readable.includes('*') || readable.includes(refOf(item).split('/')[0] ?? '')),
      identity: refOf,
      everything: readable.includes('*'),
      scanPageSize: opts.scanPageSize ?? 4,
      maxReads: opts.maxReads ?? 10,
    });
    if (!('items' in page)) throw new Error('scan failed');
    out.push({ items: page.items.map(refOf), ...(page.next !== undefined ? { next: page.next } : {}) });
    if (page.next === undefined || out.length > 50) return { pages: out, reads: cp.reads };
    start = page.next;
  }
}

describe('scanPage', () => {
  const mixed = ['b/1', 'a/1', 'b/2', 'b/3', 'b/4', 'b/5', 'a/2', 'b/6', 'a/3', 'b/7', 'b/8'];

  it('cuts pages on visible items: the pages are those of a list holding only them', async () => {
    const alone = await pages(['a/1', 'a/2', 'a/3'], ['a'], 1);
    const among = await pages(mixed, ['a'], 1);
    const shape = (p: Awaited<ReturnType<typeof pages>>) => p.pages.map((page) => ({ items: page.items, more: page.next !== undefined }));
    expect(shape(among)).toEqual([
      { items: ['a/1'], more: true },
      { items: ['a/2'], more: true },
      { items: ['a/3'], more: false },
    ]);
    expect(shape(among)).toEqual(shape(alone));
  });

  it('gives a caller who sees nothing one empty page without a position, however long the list', async () => {
    const many = Array.from({ length: 37 }, (_, i) => `b/${i}`);
    const seen = await pages(many, ['a'], 1);
    expect(seen.pages).toEqual([{ items: [] }]);
    // Read through, a scan page at a time.
    expect(seen.reads.map((r) => r.limit)).toEqual(Array.from({ length: 10 }, () => 4));
  });

  it('resumes at the item it stopped before, found by identity should the page have moved', async () => {
    const cp = upstream(mixed);
    const first = await scanPage({ start: { skip: 0 }, limit: 1, read: cp.read, shown: async (l) => l.map((i) => refOf(i).startsWith('a/')), identity: refOf, everything: false, scanPageSize: 4, maxReads: 10 });
    expect(first).toEqual({ items: [{ pod: 'a/1' }], next: { upstream: '4', skip: 2, first: 'a/2' } });
    // b/4 and b/5 were deleted meanwhile: the page read again starts elsewhere, a/2 is found by name.
    const moved = upstream(mixed.filter((ref) => ref !== 'b/4' && ref !== 'b/5'));
    const second = await scanPage({ start: { upstream: '4', skip: 2, first: 'a/2' }, limit: 1, read: moved.read, shown: async (l) => l.map((i) => refOf(i).startsWith('a/')), identity: refOf, everything: false, scanPageSize: 4, maxReads: 10 });
    expect(second).toMatchObject({ items: [{ pod: 'a/2' }] });
  });

  it('passes the control plane pages on as they come to a caller who sees everything', async () => {
    const seen = await pages(mixed, ['*'], 5);
    expect(seen.pages.map((p) => p.items.length)).toEqual([5, 5, 1]);
    expect(seen.reads).toEqual([{ limit: 5 }, { upstream: '5', limit: 5 }, { upstream: '10', limit: 5 }]);
  });

  it('ends a page with what it found once its reads are spent (the one thing a caller may learn of what is hidden)', async () => {
    const long = [...Array.from({ length: 12 }, (_, i) => `b/${i}`), 'a/1'];
    const seen = await pages(long, ['a'], 1, { maxReads: 2 });
    expect(seen.pages.map((p) => p.items)).toEqual([[], ['a/1']]);
  });

  it('stops at a review that could not be made', async () => {
    const cp = upstream(mixed);
    const page = await scanPage({ start: { skip: 0 }, limit: 1, read: cp.read, shown: async () => broken as Extract<AuthDecision, { allowed: false }>, identity: refOf, everything: false, scanPageSize: 4, maxReads: 10 });
    expect(page).toEqual({ denied: broken });
  });
});
