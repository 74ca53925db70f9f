/** What the control-plane services need, created once per process and injected. */
import type { AppConfig } from '../config';
import type { Runtime } from '../clock';
import type { DecisionLogger, DecisionMetrics } from '../diagnostics/decisionLogs';
import type { AppLogger } from '../powertools';
import type { RecordStore } from '../store/recordStore';
import type { StateStore } from '../store/stateStore';

export interface ControlDeps {
  readonly config: AppConfig;
  readonly state: StateStore;
  readonly records: RecordStore;
  readonly runtime: Runtime;
  readonly logger: AppLogger & DecisionLogger;
  readonly metrics: DecisionMetrics;
}
