/**
 * Each function's IAM role (`custom.tableAccess` in serverless.yml) grants every operation its code makes on each
 * table. The control code behind each function runs on the DynamoDB adapters against dynalite, from a cold execution
 * environment (its warm view loads first, as after a deployment), and every call the adapters send is noted with the
 * tables it names. A grant missing here is an AccessDenied on AWS that no local run would show; a grant that none of
 * the function's paths uses is a privilege it does not need.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { parse } from 'yaml';
import { createDeps, dynamoStores } from '../../../lib/app';
import type { Runtime } from '../../../lib/clock';
import { loadConfig, type AppConfig } from '../../../lib/config';
import { bindPodToNode, recordBindOutcome } from '../../../lib/control/bind';
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import type { ControlDeps } from '../../../lib/control/deps';
import { filterPod } from '../../../lib/control/filter';
import { decideAhead } from '../../../lib/control/decideAhead';
import { evictionRefused } from '../../../lib/control/preemption';
import { listNodeDevices, listSchedulerLogs, readNodeDevices, readSchedulerLog } from '../../../lib/control/views';
import { createDocumentClient } from '../../../lib/store/dynamo';
import type { DocumentClient } from '../../../lib/store/dynamoHttp';
import { ensureTables } from '../../../lib/store/tables';
import { card, forwardedPod, gpuNode, gpuPod } from '../../support/cluster';
import { startDynalite, type DynamoBackend } from '../../support/dynamo';
import { filterOf, placedPatch } from '../../support/filterRequests';

type TableId = 'StateTable' | 'RecordsTable';
type Grants = Partial<Record<TableId, string[]>>;

const tableAccess = (parse(readFileSync(path.resolve(__dirname, '../../../serverless.yml'), 'utf8'), { logLevel: 'error' }) as { custom: { tableAccess: Record<string, Grants> } }).custom.tableAccess;

const pod = gpuPod('p1', [{ name: 'c', gpu: 1, mem: 4000, cores: 20 }]);
const ref = { namespace: 'default', name: 'p1', uid: pod.metadata.uid };
const waiting = gpuPod('p3', [{ name: 'c', gpu: 1, mem: 2000 }]);
const nodeEvent = (name: string) => ({ type: 'ADDED', object: gpuNode(name, [card(`GPU-${name}-0`, { devmem: 16384, devcore: 100, count: 10 })]) });

/** Per function, the paths that reach the store: together they use every grant the function has. */
const scenarios: Record<string, ((deps: ControlDeps) => Promise<unknown>)[]> = {
  filter: [(deps) => filterPod(deps, filterOf(gpuPod('p2', [{ name: 'c', gpu: 1, mem: 2000 }]), ['n1', 'n2', 'unknown']))],
  decideAhead: [(deps) => decideAhead(deps, { pods: [{ pod: gpuPod('p4', [{ name: 'c', gpu: 1, mem: 2000 }]), priority: 0, createdMs: undefined }] })],
  bind: [
    (deps) => bindPodToNode(deps, { pod: { namespace: 'default', name: 'p3', uid: waiting.metadata.uid }, node: 'n1' }),
    // Never filtered: the lock write is refused, the node read (dynalite returns no item with a refusal), the failure recorded.
    (deps) => bindPodToNode(deps, { pod: { namespace: 'default', name: 'p9', uid: 'uid-p9' }, node: 'n1' }),
  ],
  bindOutcome: [(deps) => recordBindOutcome(deps, { pod: ref, node: 'n1', error: 'node n1 not found' }), (deps) => recordBindOutcome(deps, { pod: ref, node: 'n1', error: '' })],
  // A refusal for a pod that holds nothing there: the node is read and written back under its version.
  evictionRefused: [(deps) => evictionRefused(deps, { preemptor: ref, victim: { namespace: 'default', name: 'v', uid: 'uid-v' }, node: 'n1', message: 'Cannot evict pod', disruptionBudget: true })],
  clusterEvents: [
    (deps) =>
      ingestClusterEvents(deps, [nodeEvent('n3'), { type: 'DELETED', object: gpuNode('n2', []) }], [{ kind: 'Node', resourceVersion: '99', keys: ['n1', 'n3'] }]),
  ],
  schedulerLog: [(deps) => readSchedulerLog(deps, { namespace: 'default', name: 'p1', history: true, detail: 'devices' })],
  nodeDevices: [(deps) => readNodeDevices(deps, 'n1')],
  listNodes: [(deps) => listNodeDevices(deps, { limit: 10 })],
  namespaceSchedulerLogs: [(deps) => listSchedulerLogs(deps, { limit: 10, namespace: 'default' })],
  allSchedulerLogs: [(deps) => listSchedulerLogs(deps, { limit: 10 })],
};

describe('IAM grants are exactly what each function does to each table', () => {
  let backend: DynamoBackend;
  let doc: DocumentClient;
  let now = 1_800_000_000_000;
  let ids = 0;
  const runtime: Runtime = { clock: { now: () => now }, sleep: async () => undefined, random: () => 0.5, newId: () => `attempt-${++ids}` };
  /** Per call the adapters sent: its operation and the tables it named. */
  let calls: { operation: string; tables: string[] }[] = [];

  beforeAll(async () => {
    backend = await startDynalite();
    const real = createDocumentClient({ region: 'local', endpoint: backend.endpoint, localCredentials: true });
    doc = {
      send: async (operation, input) => {
        const named = input as { TableName?: string; RequestItems?: Record<string, unknown> };
        calls.push({ operation, tables: named.TableName !== undefined ? [named.TableName] : Object.keys(named.RequestItems ?? {}) });
        return real.send(operation, input);
      },
    };
  });

  afterAll(async () => {
    await backend.stop();
  });

  /** Tables of their own, holding two nodes and a pod placed and bound, and a second pod placed and not bound yet. */
  async function cluster(): Promise<{ config: AppConfig; environment: () => ControlDeps }> {
    const suffix = Math.random().toString(36).slice(2);
    const config = loadConfig({ DDB_ENDPOINT: backend.endpoint, STATE_TABLE: `state-${suffix}`, RECORDS_TABLE: `records-${suffix}`, HAMI_VIEW_MAX_AGE_MS: '60000' });
    const raw = new DynamoDBClient({ endpoint: backend.endpoint, region: 'local', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    await ensureTables(raw, [config.stateTable, config.recordsTable], async () => undefined);
    raw.destroy();
    // One Lambda execution environment: a warm view of its own.
    const environment = () => createDeps(config, runtime, dynamoStores(config, runtime, { doc }));
    const setup = environment();
    await ingestClusterEvents(setup, [nodeEvent('n1'), nodeEvent('n2')]);
    const placed = await filterPod(setup, filterOf(pod, ['n1', 'n2']));
    const node = placed.result.NodeNames![0]!;
    await bindPodToNode(setup, { pod: ref, node });
    await recordBindOutcome(setup, { pod: ref, node, error: '' });
    await ingestClusterEvents(setup, [{ type: 'MODIFIED', object: forwardedPod(pod, { ...placedPatch(placed), 'hami.io/bind-phase': 'allocating' }) }]);
    await filterPod(setup, filterOf(waiting, ['n1']));
    return { config, environment };
  }

  it('every function with a role has a scenario here', () => {
    expect(Object.keys(scenarios).sort()).toEqual(Object.keys(tableAccess).filter((fn) => fn !== 'healthz').sort());
  });

  it.each(Object.keys(scenarios))('%s: granted exactly what its paths use', async (fn) => {
    const granted = Object.entries(tableAccess[fn] ?? {}).flatMap(([table, operations]) => (operations ?? []).map((operation) => `${table} ${operation}`));
    const usedByAny = new Set<string>();
    for (const scenario of scenarios[fn]!) {
      const { config, environment } = await cluster();
      now += 1000;
      calls = [];
      await scenario(environment());
      const tableIds: Record<string, TableId> = { [config.stateTable]: 'StateTable', [config.recordsTable]: 'RecordsTable' };
      const used = new Set(calls.flatMap(({ operation, tables }) => tables.map((table) => `${tableIds[table] ?? table} ${operation}`)));
      // A call without its grant is an AccessDenied on AWS.
      expect([...used].filter((call) => !granted.includes(call)).sort()).toEqual([]);
      // The scenario did reach the store: a test that sees no call proves nothing.
      expect(used.size).toBeGreaterThan(0);
      for (const call of used) usedByAny.add(call);
    }
    // A grant no path uses is a privilege the function does not need.
    expect(granted.filter((grant) => !usedByAny.has(grant)).sort()).toEqual([]);
  });
});
