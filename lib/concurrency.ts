/**
 * Bounded parallelism for store and API calls: enough in flight to hide round trips, few enough not to flood the
 * other side. Free of any import, for every bundle.
 */

/**
 * Runs `task` for every item, at most `limit` at once, starting them in order. Resolves when all have ended; the
 * first failure rejects it (the tasks already started still run to their end, as with `Promise.all`).
 */
export async function forEachAtMost<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
