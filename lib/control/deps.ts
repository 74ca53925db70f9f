/** What the control-plane services need, created once per process (one Lambda execution environment) and injected. */
import type { Runtime } from '../clock';
import type { DecisionLogger, DecisionMetrics } from '../diagnostics/decisionLogs';
import type { EngineConfig } from '../engine/types';
import type { AppLogger } from '../powertools';
import type { PreemptionMode } from '../wire/preemption';
import type { LedgerStore, RecordStorePort } from './ports';
import type { ClusterView } from './view';

/**
 * The settings the control-plane services read: part of the process's configuration (`AppConfig`, lib/config.ts,
 * which loads them), declared here so that control does not import the layer above it.
 */
export interface ControlConfig {
  readonly engine: EngineConfig;
  readonly nodeLockExpireSeconds: number;
  readonly bindLockWaitSeconds: number;
  readonly lockAware: boolean;
  readonly reservationTtlSeconds: number;
  readonly preemption: PreemptionMode;
  readonly preemptionHoldSeconds: number;
}

export interface ControlDeps {
  readonly config: ControlConfig;
  readonly ledger: LedgerStore;
  readonly records: RecordStorePort;
  /** This process's warm view of the cluster (kept across invocations of a warm Lambda). */
  readonly view: ClusterView;
  readonly runtime: Runtime;
  readonly logger: AppLogger & DecisionLogger;
  readonly metrics: DecisionMetrics;
}
