/** Time, randomness and delays are injected so tests never sleep and decisions replay exactly. */
import { randomUUID } from 'node:crypto';

export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export type Sleep = (ms: number) => Promise<void>;

export interface Runtime {
  readonly clock: Clock;
  readonly sleep: Sleep;
  /** Uniform in [0, 1); for backoff jitter. */
  readonly random: () => number;
  readonly newId: () => string;
}

export const systemRuntime: Runtime = {
  clock: { now: () => Date.now() },
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: Math.random,
  newId: () => randomUUID(),
};

/** Go's time.Duration String() for whole seconds: 300 -> "5m0s", 90 -> "1m30s", 3600 -> "1h0m0s". */
export function formatGoDuration(totalSeconds: number): string {
  if (totalSeconds === 0) return '0s';
  const h = Math.floor(totalSeconds / 3600);
  const m = Math.floor((totalSeconds % 3600) / 60);
  const s = totalSeconds % 60;
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

/**
 * Resolves once the I/O already started has been handed to the system (setImmediate runs after pending
 * callbacks and microtasks): work that can wait (encoding a record) then does not delay a request sent just before.
 * Not a delay: it does not depend on time.
 */
export function afterPendingIo(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
