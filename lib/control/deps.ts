/** What the control-plane services need, created once per process (one Lambda execution environment) and injected. */
import type { AppConfig } from '../config';
import type { Runtime } from '../clock';
import type { DecisionLogger, DecisionMetrics } from '../diagnostics/decisionLogs';
import type { AppLogger } from '../powertools';
import type { LedgerStore, RecordStorePort } from './ports';
import type { ClusterView } from './view';

export interface ControlDeps {
  readonly config: AppConfig;
  readonly ledger: LedgerStore;
  readonly records: RecordStorePort;
  /** This process's warm view of the cluster (kept across invocations of a warm Lambda). */
  readonly view: ClusterView;
  readonly runtime: Runtime;
  readonly logger: AppLogger & DecisionLogger;
  readonly metrics: DecisionMetrics;
}
