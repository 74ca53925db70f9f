/**
 * Store failures in the middle of a decision (injected at the store client, on a real dynalite): the
 * caller gets an Error kube-scheduler can retry, and nothing is left booked or locked past its expiry.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDeps, dynamoStores } from '../../../lib/app';
import type { Runtime } from '../../../lib/clock';
import { loadConfig } from '../../../lib/config';
import { bindPodToNode } from '../../../lib/control/bind';
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import type { ControlDeps } from '../../../lib/control/deps';
import { filterPod } from '../../../lib/control/filter';
import { readNodeDevices } from '../../../lib/control/views';
import { StoreFaultError, StoreRejectedError, StoreUnavailableError } from '../../../lib/errors';
import { errorResponse } from '../../../lib/http/respond';
import { createDocumentClient } from '../../../lib/store/dynamo';
import type { DocumentClient } from '../../../lib/store/dynamoHttp';
import { ensureTables } from '../../../lib/store/tables';
import { card, gpuNode, gpuPod } from '../../support/cluster';
import { startDynalite, type DynamoBackend } from '../../support/dynamo';

/** true: a transient outage; an error name and message: that error from the store. */
type Fault = (operation: string, input: Record<string, unknown>) => boolean | { name: string; message: string };

describe('store failure mid-decision', () => {
  let backend: DynamoBackend;
  let deps: ControlDeps;
  let now: number;
  let fault: Fault;

  const runtime: Runtime = {
    clock: { now: () => now },
    sleep: async () => undefined,
    random: () => 0.5,
    newId: () => `attempt-${now}`,
  };

  beforeAll(async () => {
    backend = await startDynalite();
  });

  afterAll(async () => {
    await backend.stop();
  });

  beforeEach(async () => {
    now = 1_800_000_000_000;
    fault = () => false;
    const suffix = Math.random().toString(36).slice(2);
    const config = loadConfig({ DDB_ENDPOINT: backend.endpoint, STATE_TABLE: `state-${suffix}`, RECORDS_TABLE: `records-${suffix}` });
    const raw = new DynamoDBClient({ endpoint: backend.endpoint, region: 'local', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    await ensureTables(raw, [config.stateTable, config.recordsTable], async () => undefined);
    raw.destroy();
    const real = createDocumentClient({ region: 'local', endpoint: backend.endpoint, localCredentials: true });
    const doc: DocumentClient = {
      send: async (operation, input) => {
        const injected = fault(operation, input as unknown as Record<string, unknown>);
        if (injected) throw Object.assign(new Error(injected === true ? 'injected outage' : injected.message), { name: injected === true ? 'InternalServerError' : injected.name });
        return real.send(operation, input);
      },
    };
    deps = createDeps(config, runtime, dynamoStores(config, runtime, { doc }));
    await ingestClusterEvents(deps, [{ type: 'ADDED', object: gpuNode('node1', [card('GPU-a', { devmem: 8000 })]) }]);
  });

  const pod = gpuPod('victim', [{ name: 'c', gpu: 1, mem: 3000 }]);
  const request = () => ({
    pod,
    podRef: { namespace: 'default', name: 'victim', uid: pod.metadata.uid },
    nodeNames: ['node1'],
    nodes: null,
  });
  /** The filter's decision record: its attempt and summary leave in one BatchWriteItem on the records table. */
  const recordWrite = (operation: string, input: Record<string, unknown>) =>
    operation === 'BatchWriteItem' && Object.keys((input.RequestItems ?? {}) as Record<string, unknown>).some((table) => table.startsWith('records-'));
  const usedMem = async () => (await readNodeDevices(deps, 'node1')).devices[0]?.usedmem;

  it('undoes the reservation when the decision record cannot be written, and answers a retryable Error', async () => {
    fault = (operation, input) => recordWrite(operation, input);
    const error = await filterPod(deps, request()).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(JSON.parse(errorResponse(error, 'extender', 'ref-1').body)).toEqual({
      Error: 'scheduler control plane temporarily unavailable, retry (ref ref-1)',
    });
    fault = () => false;
    expect(await usedMem()).toBe(0);
    // kube-scheduler retries, and the pod lands.
    expect((await filterPod(deps, request())).result.NodeNames).toEqual(['node1']);
    expect(await usedMem()).toBe(3000);
  });

  it('lets an orphaned reservation expire when even the undo fails', async () => {
    let failAll = false;
    fault = (operation, input) => failAll || (recordWrite(operation, input) && (failAll = true));
    await expect(filterPod(deps, request())).rejects.toBeInstanceOf(StoreUnavailableError);
    fault = () => false;
    expect(await usedMem()).toBe(3000);
    now += deps.config.reservationTtlSeconds * 1000 + 1;
    expect(await usedMem()).toBe(0);
  });

  it('writes nothing when the cluster cannot be read', async () => {
    fault = (operation) => operation === 'BatchGetItem';
    await expect(filterPod(deps, request())).rejects.toBeInstanceOf(StoreUnavailableError);
    fault = () => false;
    expect(await usedMem()).toBe(0);
  });

  it('answers a permanent refusal by the store as such, never as "retry", and books nothing', async () => {
    fault = (operation, input) =>
      recordWrite(operation, input) && { name: 'ValidationException', message: 'Item size has exceeded the maximum allowed size' };
    const error = await filterPod(deps, request()).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(StoreRejectedError);
    const answer = JSON.parse(errorResponse(error, 'extender', 'ref-2').body) as { Error: string };
    expect(answer.Error).toBe("the store refused to save it: the item would exceed DynamoDB's 400 KB item size limit");
    expect(answer.Error).not.toMatch(/retry/);
    fault = () => false;
    expect(await usedMem()).toBe(0);
  });

  it('reports a missing table as an internal fault, not as something to retry', async () => {
    fault = (operation) => operation === 'BatchGetItem' && { name: 'ResourceNotFoundException', message: 'Requested resource not found' };
    const error = await filterPod(deps, request()).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(StoreFaultError);
    const response = errorResponse(error, 'api', 'ref-3');
    expect(response.statusCode).toBe(500);
    expect(response.body).toContain('internal error in the scheduler control plane (ref ref-3)');
    expect(response.body).not.toContain('Requested resource');
  });

  it('lets a lock left by a bind whose outcome never came expire', async () => {
    const other = gpuPod('other', [{ name: 'c', gpu: 1, mem: 1000 }]);
    await filterPod(deps, request());
    await filterPod(deps, { pod: other, podRef: { namespace: 'default', name: 'other', uid: other.metadata.uid }, nodeNames: ['node1'], nodes: null });
    expect((await bindPodToNode(deps, { pod: { namespace: 'default', name: 'victim', uid: pod.metadata.uid }, node: 'node1' })).result.Error).toBe('');
    const otherRef = { namespace: 'default', name: 'other', uid: other.metadata.uid };
    expect((await bindPodToNode(deps, { pod: otherRef, node: 'node1' })).result.Error).toMatch(/node lock contention$/);
    now += deps.config.nodeLockExpireSeconds * 1000 + 1;
    expect((await bindPodToNode(deps, { pod: otherRef, node: 'node1' })).result.Error).toBe('');
  });
});
