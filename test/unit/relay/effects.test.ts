/**
 * How the relay applies Effects: a bind's in order, stopping at the first failed write (the lock before the Binding);
 * the unrelated ones a /cluster/events answer carries side by side, every one tried, the first failure reported.
 */
import { applyEffects, type ClusterWriter, type EvictionOutcome } from '../../../lib/relay/effects';
import type { EvictionRefused } from '../../../lib/wire/preemption';
import type { Effect } from '../../../lib/wire/effects';
import type { AppLogger } from '../../../lib/powertools';

const silent: AppLogger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

const nudge = (name: string): Effect => ({ kind: 'PatchPodAnnotations', namespace: 'team-a', name, uid: `uid-${name}`, annotations: { 'hami.io/requeue': '2026-11-24T00:00:00.000Z' } });

/** A writer whose pod patches wait until released; it counts how many were in flight at once. */
function gatedWriter(failing: ReadonlySet<string> = new Set()) {
  const waiting: (() => void)[] = [];
  const patched: string[] = [];
  let inFlight = 0;
  let most = 0;
  const writer: ClusterWriter = {
    patchPodMetadata: (effect) =>
      new Promise<void>((resolve, reject) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        waiting.push(() => {
          inFlight -= 1;
          patched.push(effect.name);
          if (failing.has(effect.name)) reject(new Error(`patch of ${effect.name} refused`));
          else resolve();
        });
      }),
    bindPod: () => Promise.resolve(),
    recordEvent: () => Promise.resolve(),
    patchNodeMetadata: () => Promise.resolve(),
    evictPod: () => Promise.resolve({ kind: 'evicted' as const }),
  };
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
  /** Lets every waiting patch finish, until the application is done. */
  const drain = async (done: Promise<unknown>) => {
    let finished = false;
    void done.then(() => (finished = true));
    while (!finished) {
      await flush();
      waiting.splice(0).forEach((release) => release());
    }
  };
  return { writer, patched, most: () => most, drain };
}

describe('applying Effects', () => {
  it('applies the independent Effects of a cluster-events answer side by side, at most 8 at once, and reports the first failure', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `p${i}`);
    const w = gatedWriter(new Set(['p3']));
    const outcome = applyEffects(names.map(nudge), w.writer, silent, { independent: true });
    await w.drain(outcome);
    expect(await outcome).toEqual({ ok: false, error: 'patch of p3 refused' });
    expect(w.most()).toBe(8);
    expect([...w.patched].sort()).toEqual([...names].sort());
  });

  it('applies a bind’s Effects one after another and stops at the first failure', async () => {
    const w = gatedWriter(new Set(['p1']));
    const outcome = applyEffects([nudge('p0'), nudge('p1'), nudge('p2')], w.writer, silent);
    await w.drain(outcome);
    expect(await outcome).toEqual({ ok: false, error: 'patch of p1 refused' });
    expect(w.most()).toBe(1);
    expect(w.patched).toEqual(['p0', 'p1']);
  });

  describe('evictions (GPU-aware preemption, docs/preemption.md)', () => {
    const preemptor = { namespace: 'ml', name: 'urgent', uid: 'uid-urgent' };
    const evict = (name: string, by = preemptor): Effect => ({ kind: 'EvictPod', namespace: 'ml', name, uid: `uid-${name}`, node: 'n1', preemptor: by });

    function evictingWriter(outcomes: Record<string, EvictionOutcome>) {
      const evicted: string[] = [];
      const writer: ClusterWriter = {
        ...gatedWriter().writer,
        evictPod: (effect) => {
          evicted.push(effect.name);
          return Promise.resolve(outcomes[effect.name] ?? { kind: 'evicted' });
        },
      };
      return { writer, evicted };
    }

    it('reports a refusal once and leaves the same plan\'s other victims alone; another preemptor\'s go on; the list never fails', async () => {
      const w = evictingWriter({ a: { kind: 'refused', message: 'evict pod ml/a: Cannot evict pod', disruptionBudget: true } });
      const reports: EvictionRefused[] = [];
      const other = { namespace: 'ml', name: 'other', uid: 'uid-other' };
      const outcome = await applyEffects([evict('a'), evict('b'), evict('c', other)], w.writer, silent, { evictionRefused: async (r) => void reports.push(r) });
      expect(outcome).toEqual({ ok: true });
      expect(w.evicted).toEqual(['a', 'c']);
      expect(reports).toEqual([{ preemptor, victim: { namespace: 'ml', name: 'a', uid: 'uid-a' }, node: 'n1', message: 'evict pod ml/a: Cannot evict pod', disruptionBudget: true }]);
    });

    it('a pod already gone counts as evicted, with nothing to report', async () => {
      const w = evictingWriter({ a: { kind: 'gone' } });
      const reports: EvictionRefused[] = [];
      await applyEffects([evict('a'), evict('b')], w.writer, silent, { evictionRefused: async (r) => void reports.push(r) });
      expect(w.evicted).toEqual(['a', 'b']);
      expect(reports).toEqual([]);
    });

    it.each(['log', 'off'] as const)('a relay with HAMI_PREEMPTION=%s evicts nothing and reports the plan refused, so its hold ends', async (mode) => {
      const w = evictingWriter({});
      const reports: EvictionRefused[] = [];
      await applyEffects([evict('a'), evict('b')], w.writer, silent, { preemption: mode, evictionRefused: async (r) => void reports.push(r) });
      expect(w.evicted).toEqual([]);
      expect(reports.map((r) => [r.victim.name, r.disruptionBudget, r.message])).toEqual([['a', false, `this cluster's relay has HAMI_PREEMPTION=${mode}: nothing is evicted`]]);
    });
  });
});
