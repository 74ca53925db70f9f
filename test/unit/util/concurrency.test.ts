/**
 * Bounded parallelism (lib/concurrency.ts), which cluster events, the store's batch reads and the relay's reviews use:
 * never more than the limit in flight, every item run once, the first failure reported.
 */
import { forEachAtMost } from '../../../lib/concurrency';

/** A task per item that waits until the test lets it finish, recording how many ran at once. */
function gatedTasks() {
  const gates = new Map<number, () => void>();
  const started: number[] = [];
  let inFlight = 0;
  let most = 0;
  const task = (item: number) =>
    new Promise<void>((resolve) => {
      started.push(item);
      inFlight += 1;
      most = Math.max(most, inFlight);
      gates.set(item, () => {
        inFlight -= 1;
        resolve();
      });
    });
  const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
  return { task, started, gates, most: () => most, flush };
}

describe('forEachAtMost', () => {
  it('keeps at most the limit in flight, starts items in order, and runs each once', async () => {
    const t = gatedTasks();
    const done = forEachAtMost([1, 2, 3, 4, 5], 2, t.task);
    await t.flush();
    expect(t.started).toEqual([1, 2]);
    t.gates.get(2)!();
    await t.flush();
    expect(t.started).toEqual([1, 2, 3]);
    for (const item of [1, 3, 4, 5]) {
      await t.flush();
      t.gates.get(item)!();
    }
    await done;
    expect(t.started).toEqual([1, 2, 3, 4, 5]);
    expect(t.most()).toBe(2);
  });

  it('rejects with the first failure and resolves at once for no items', async () => {
    await expect(forEachAtMost([], 4, () => Promise.reject(new Error('never called')))).resolves.toBeUndefined();
    const seen: number[] = [];
    const failing = forEachAtMost([1, 2, 3], 3, async (item) => {
      seen.push(item);
      if (item === 2) throw new Error('item 2 failed');
    });
    await expect(failing).rejects.toThrow('item 2 failed');
    expect(seen).toEqual([1, 2, 3]);
  });
});
