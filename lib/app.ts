/**
 * The composition root: configuration, clients and services built once per process and injected.
 * Lambda handlers use `lambdaDeps()`; the local server and tests call `createDeps` with their own store.
 */
import { loadConfig, type AppConfig } from './config';
import { systemRuntime, type Runtime } from './clock';
import type { ControlDeps } from './control/deps';
import type { LedgerStore, RecordStorePort } from './control/ports';
import { ClusterView } from './control/view';
import { logger, metrics, setVerbosity } from './powertools';
import { createDocumentClient, emptyStats, type StoreStats } from './store/dynamo';
import type { DocumentClient } from './store/dynamoHttp';
import { DynamoLedgerStore } from './store/ledgerStore';
import { RecordStore } from './store/recordStore';

export interface StoreOptions {
  /** A document client to use instead of one built from the configuration. */
  readonly doc?: DocumentClient;
  /** Counts every store call and the capacity it consumed (benchmarks, tests). */
  readonly stats?: StoreStats;
}

/** The DynamoDB adapters for the configured tables. */
export function dynamoStores(config: AppConfig, runtime: Runtime, options: StoreOptions = {}): { ledger: LedgerStore; records: RecordStorePort } {
  const doc = options.doc ?? createDocumentClient({ region: config.region, ...(config.ddbEndpoint ? { endpoint: config.ddbEndpoint } : {}), localCredentials: config.localCredentials });
  const stats = options.stats ?? emptyStats();
  return {
    ledger: new DynamoLedgerStore(doc, config.stateTable, stats, runtime.sleep, () => runtime.clock.now()),
    records: new RecordStore(doc, config.recordsTable, config.recordRetentionHours * 3600, stats, runtime.sleep),
  };
}

/** The services with the whole configuration they were built from (the local server and tests read its tables). */
export type AppDeps = ControlDeps & { readonly config: AppConfig };

export function createDeps(
  config: AppConfig,
  runtime: Runtime = systemRuntime,
  stores: { ledger: LedgerStore; records: RecordStorePort } = dynamoStores(config, runtime),
): AppDeps {
  setVerbosity(config.logVerbosity);
  return {
    config,
    runtime,
    ledger: stores.ledger,
    records: stores.records,
    view: new ClusterView(stores.ledger, runtime.clock, logger, { maxAgeMs: config.viewMaxAgeMs }),
    logger,
    metrics,
  };
}

let lambda: ControlDeps | undefined;

/** Built on first use in a Lambda execution environment and reused by every warm invocation (its view stays warm). */
export function lambdaDeps(): ControlDeps {
  lambda ??= createDeps(loadConfig());
  return lambda;
}
