/** Injected waiting, so retry and batching code never sleeps for real in tests. */
export type DelayFn = (ms: number, signal?: AbortSignal) => Promise<void>;

/** Resolves after `ms`, or early (without error) when `signal` aborts. */
export const realDelay: DelayFn = (ms, signal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    timer.unref?.();
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** Exponential backoff: initial, 2x, 4x … capped at max. `attempt` counts from 0. */
export function backoffMs(attempt: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
}
