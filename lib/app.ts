/**
 * The composition root: configuration, clients and services built once per process and injected.
 * Lambda handlers use `lambdaDeps()`; the local server and tests call `createDeps` with their own store.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { loadConfig, type AppConfig } from './config';
import { systemRuntime, type Runtime } from './clock';
import type { ControlDeps } from './control/deps';
import { logger, metrics, setVerbosity } from './powertools';
import { createDocumentClient } from './store/dynamo';
import { RecordStore } from './store/recordStore';
import { StateStore } from './store/stateStore';

export function createDeps(config: AppConfig, runtime: Runtime = systemRuntime, doc?: DynamoDBDocumentClient): ControlDeps {
  setVerbosity(config.logVerbosity);
  const client = doc ?? createDocumentClient({ region: config.region, ...(config.ddbEndpoint ? { endpoint: config.ddbEndpoint } : {}) });
  return {
    config,
    runtime,
    state: new StateStore(client, config.stateTable, config.storeShards, runtime.sleep),
    records: new RecordStore(client, config.recordsTable, config.recordRetentionHours * 3600),
    logger,
    metrics,
  };
}

let lambda: ControlDeps | undefined;

/** Built on first use in a Lambda execution environment and reused by every warm invocation. */
export function lambdaDeps(): ControlDeps {
  lambda ??= createDeps(loadConfig());
  return lambda;
}
