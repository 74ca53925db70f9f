/**
 * Control-plane services over the in-memory storage ports: a controllable clock, a recording logger, metrics
 * that count, and a store that records the order and overlap of its calls. Several "environments" (deps with
 * their own warm view) can share one store, as Lambda execution environments share one table.
 */
import type { Runtime } from '../../../lib/clock';
import { loadConfig } from '../../../lib/config';
import type { ControlDeps } from '../../../lib/control/deps';
import type { LedgerStore } from '../../../lib/control/ports';
import { ClusterView } from '../../../lib/control/view';
import type { DecisionMetrics } from '../../../lib/diagnostics/decisionLogs';
import { MemoryLedgerStore, MemoryRecordStore } from '../../../lib/store/memory';

export { filterOf, patchOf, placedPatch } from '../../support/filterRequests';

export interface Recorded {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: Record<string, unknown>;
}

export interface TestClock {
  now: number;
}

/** One ledger call: its name, and how many calls were in flight when it started (0 = nothing overlapped it). */
export interface StoreCall {
  readonly operation: string;
  readonly inFlightAtStart: number;
}

/** Wraps a ledger store, recording every call and whether it overlapped others (sent together = one round trip). */
export function recordingStore(inner: LedgerStore): LedgerStore & { calls: StoreCall[] } {
  const calls: StoreCall[] = [];
  let inFlight = 0;
  const wrapped = {} as LedgerStore & { calls: StoreCall[] };
  for (const key of Object.getOwnPropertyNames(Object.getPrototypeOf(inner)) as (keyof LedgerStore)[]) {
    const method = inner[key];
    if (typeof method !== 'function' || (key as string) === 'constructor') continue;
    (wrapped as unknown as Record<string, unknown>)[key] = async (...args: unknown[]) => {
      calls.push({ operation: key, inFlightAtStart: inFlight });
      inFlight += 1;
      try {
        return await (method as (...a: unknown[]) => Promise<unknown>).apply(inner, args);
      } finally {
        inFlight -= 1;
      }
    };
  }
  wrapped.calls = calls;
  return wrapped;
}

export interface Environment {
  readonly deps: ControlDeps;
  readonly lines: Recorded[];
  readonly store: LedgerStore & { calls: StoreCall[] };
}

export interface World {
  readonly clock: TestClock;
  /** Runs whenever code under test sleeps (after the clock moved on): lets a test change the world meanwhile. */
  onSleep?: () => Promise<void> | void;
  readonly store: MemoryLedgerStore;
  readonly records: MemoryRecordStore;
  /** A new execution environment (its own warm view) on the shared store. */
  environment(env?: Record<string, string>): Environment;
}

const countingMetrics: DecisionMetrics = {
  addMetric: () => undefined,
  singleMetric: () => ({ addDimension: () => undefined, addMetric: () => undefined }),
};

export function world(start = 1_800_000_000_000): World {
  const clock: TestClock = { now: start };
  const store = new MemoryLedgerStore(() => clock.now);
  const records = new MemoryRecordStore(24 * 3600 * 1000);
  let ids = 0;
  const self: { onSleep?: () => Promise<void> | void } = {};
  const runtime: Runtime = {
    clock: { now: () => clock.now },
    // Sleeping moves the test clock on at once: waits and backoffs are exercised without real time passing.
    sleep: async (ms) => {
      clock.now += ms;
      await self.onSleep?.();
    },
    random: () => 0.5,
    newId: () => `attempt-${++ids}`,
  };
  return Object.assign(self, {
    clock,
    store,
    records,
    environment(env: Record<string, string> = {}) {
      const config = loadConfig({ HAMI_VIEW_MAX_AGE_MS: '60000', ...env });
      const lines: Recorded[] = [];
      const at =
        (level: Recorded['level']) =>
        (message: string, fields: Record<string, unknown> = {}): void => {
          lines.push({ level, message, fields });
        };
      const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as ControlDeps['logger'];
      const recording = recordingStore(store);
      const deps: ControlDeps = {
        config,
        runtime,
        ledger: recording,
        records,
        view: new ClusterView(recording, runtime.clock, logger, { maxAgeMs: config.viewMaxAgeMs }),
        logger,
        metrics: countingMetrics,
      };
      return { deps, lines, store: recording };
    },
  });
}
