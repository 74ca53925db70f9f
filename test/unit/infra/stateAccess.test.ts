/**
 * Each function's IAM role (`custom.tableAccess` in serverless.yml) grants every state-table operation its code makes.
 * The control code behind each function runs on the in-memory ledger, which counts its calls under the DynamoDB
 * operation the adapter makes for them, in a cold execution environment (its warm view loads first, as after a
 * deployment). A grant missing here is an AccessDenied on AWS that no local run would show.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { bindPodToNode, recordBindOutcome } from '../../../lib/control/bind';
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import { filterPod } from '../../../lib/control/filter';
import { listNodeDevices, listSchedulerLogs, readNodeDevices, readSchedulerLog } from '../../../lib/control/views';
import { card, forwardedPod, gpuNode, gpuPod } from '../../support/cluster';
import { filterOf, placedPatch, world, type World } from '../control/fixtures';

const tableAccess = (parse(readFileSync(path.resolve(__dirname, '../../../serverless.yml'), 'utf8'), { logLevel: 'error' }) as { custom: { tableAccess: Record<string, { StateTable?: string[] }> } }).custom.tableAccess;

const pod = gpuPod('p1', [{ name: 'c', gpu: 1, mem: 4000, cores: 20 }]);
const ref = { namespace: 'default', name: 'p1', uid: pod.metadata.uid };
const waiting = gpuPod('p3', [{ name: 'c', gpu: 1, mem: 2000 }]);
const nodeEvent = (name: string) => ({ type: 'ADDED', object: gpuNode(name, [card(`GPU-${name}-0`, { devmem: 16384, devcore: 100, count: 10 })]) });

/** A cluster of two nodes and a pod placed and bound, written through an environment of its own. */
async function cluster(): Promise<World> {
  const w = world();
  const setup = w.environment();
  await ingestClusterEvents(setup.deps, [nodeEvent('n1'), nodeEvent('n2')]);
  const placed = await filterPod(setup.deps, filterOf(pod, ['n1', 'n2']));
  const node = placed.result.NodeNames![0]!;
  await bindPodToNode(setup.deps, { pod: ref, node });
  await recordBindOutcome(setup.deps, { pod: ref, node, error: '' });
  await ingestClusterEvents(setup.deps, [{ type: 'MODIFIED', object: forwardedPod(pod, { ...placedPatch(placed), 'hami.io/bind-phase': 'allocating' }) }]);
  // A second pod placed and not bound yet: the bind function's work.
  await filterPod(setup.deps, filterOf(waiting, ['n1']));
  return w;
}

/** The state-table operations `work` makes from a cold environment. */
async function operationsOf(w: World, work: (deps: ReturnType<World['environment']>['deps']) => Promise<unknown>): Promise<string[]> {
  const before = { ...w.store.stats.byOperation };
  await work(w.environment().deps);
  return Object.entries(w.store.stats.byOperation)
    .filter(([operation, count]) => count > (before[operation] ?? 0))
    .map(([operation]) => operation)
    .sort();
}

const scenarios: Record<string, (deps: ReturnType<World['environment']>['deps']) => Promise<unknown>> = {
  filter: (deps) => filterPod(deps, filterOf(gpuPod('p2', [{ name: 'c', gpu: 1, mem: 2000 }]), ['n1', 'n2', 'unknown'])),
  bind: (deps) => bindPodToNode(deps, { pod: { namespace: 'default', name: 'p3', uid: waiting.metadata.uid }, node: 'n1' }),
  bindOutcome: (deps) => recordBindOutcome(deps, { pod: ref, node: 'n1', error: 'node n1 not found' }),
  clusterEvents: (deps) =>
    ingestClusterEvents(deps, [nodeEvent('n3'), { type: 'DELETED', object: gpuNode('n2', []) }], [{ kind: 'Node', resourceVersion: '99', keys: ['n1', 'n3'] }]),
  schedulerLog: (deps) => readSchedulerLog(deps, { namespace: 'default', name: 'p1', history: true, detail: 'devices' }),
  nodeDevices: (deps) => readNodeDevices(deps, 'n1'),
  listNodes: (deps) => listNodeDevices(deps, { limit: 10 }),
  namespaceSchedulerLogs: (deps) => listSchedulerLogs(deps, { limit: 10, namespace: 'default' }),
  allSchedulerLogs: (deps) => listSchedulerLogs(deps, { limit: 10 }),
};

describe('IAM grants cover what each function does to the state table', () => {
  it('every function with a role has a scenario here', () => {
    expect(Object.keys(scenarios).sort()).toEqual(Object.keys(tableAccess).filter((fn) => fn !== 'healthz').sort());
  });

  it.each(Object.keys(scenarios))('%s', async (fn) => {
    const w = await cluster();
    const used = await operationsOf(w, scenarios[fn]!);
    const granted = tableAccess[fn]?.StateTable ?? [];
    expect(used.filter((operation) => !granted.includes(operation))).toEqual([]);
  });
});
