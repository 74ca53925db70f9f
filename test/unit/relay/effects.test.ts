/**
 * How the relay applies Effects: a bind's in order, stopping at the first failed write (the lock before the Binding);
 * the unrelated ones a /cluster/events answer carries side by side, every one tried, the first failure reported.
 */
import { applyEffects, type ClusterWriter } from '../../../lib/relay/effects';
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
});
