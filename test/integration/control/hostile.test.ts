/**
 * One bad pod, node or request never takes the scheduler down: each hostile input replayed over real HTTP
 * against the local server and a real store. After each, the answer is clear, nothing is booked for it, every
 * other node still schedules, the node devices view answers 200, /healthz answers 200, and no event batch
 * fails as a whole.
 */
import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { startLocalServer } from '../../../lib/local/server';
import { card, controlClient, forwardedPod, gpuNode, gpuPod, patchedAnnotations } from '../../support/cluster';
import { useControlPlane } from '../../support/controlPlaneRig';

const controlPlane = useControlPlane({
  per: 'test',
  nodes: [gpuNode('node1', [card('GPU-1a'), card('GPU-1b')]), gpuNode('node2', [card('GPU-2a'), card('GPU-2b')])],
});
const { api } = controlPlane;

/** What must hold after any hostile input. */
async function stillHealthy(): Promise<void> {
  expect((await api.call('GET', '/healthz')).status).toBe(200);
  for (const node of ['node1', 'node2']) expect((await api.devices(node)).status).toBe(200);
  const probe = gpuPod(`probe-${Math.random().toString(36).slice(2, 8)}`, [{ name: 'c', gpu: 1, mem: 100 }]);
  const placed = await api.filter(probe, ['node1', 'node2']);
  expect(placed.json.Error).toBe('');
  expect(placed.json.NodeNames).toHaveLength(1);
}

async function bookedMem(): Promise<number> {
  let total = 0;
  for (const node of ['node1', 'node2']) for (const d of (await api.devices(node)).json.devices as { usedmem: number }[]) total += d.usedmem;
  return total;
}

describe('hostile pods', () => {
  it.each([
    ['gpucores that wraps int32', { name: 'main', gpu: 1, cores: 4294967196 }, 'container "main": nvidia.com/gpucores "4294967196" is larger than 2147483647 (HAMi computes it in int32)'],
    ['negative gpumem', { name: 'main', gpu: 1, mem: -1 }, 'container "main": nvidia.com/gpumem "-1" is negative'],
  ])('%s: a clear Error, recorded with a hint, nothing booked', async (_label, container, problem) => {
    const pod = gpuPod('hostile', [container]);
    const res = await api.filter(pod, ['node1', 'node2']);
    expect(res.status).toBe(200);
    expect(res.json.Error).toBe(`invalid GPU resource request: ${problem}`);
    expect(res.json.Effects).toEqual([expect.objectContaining({ type: 'Warning', reason: 'FilteringFailed', message: res.json.Error })]);
    expect(await bookedMem()).toBe(0);
    const log = await api.schedulerLog('default', 'hostile');
    expect(log.json.filter).toMatchObject({ status: 'failed', summary: res.json.Error });
    expect(log.json.hints.map((h: { code: string }) => h.code)).toEqual(['InvalidResourceRequest']);
    await stillHealthy();
  });

  it.each(['-1', 'abc', '0.5'])('gpumem %s is refused in words, never read as a pod without GPUs', async (value) => {
    const pod = gpuPod('unreadable', [{ name: 'main', gpu: 1 }]);
    pod.spec.containers[0]!.resources.limits['nvidia.com/gpumem'] = value;
    const res = await api.filter(pod, ['node1']);
    expect(res.json.Error).toMatch(new RegExp(`^invalid GPU resource request: container "main": nvidia.com/gpumem "${value.replace('.', '\\.')}" is`));
    expect(res.json.NodeNames).toBeNull();
    await stillHealthy();
  });

  it('a forwarded allocation annotation with a negative value is rejected for that event only, with its index', async () => {
    const pod = gpuPod('bad-annotation', [{ name: 'c', gpu: 1, mem: 1000 }]);
    const good = gpuPod('good', [{ name: 'c', gpu: 1, mem: 2000 }]);
    const res = await api.events([
      { type: 'ADDED', object: forwardedPod(pod, { 'hami.io/vgpu-node': 'node1', 'hami.io/vgpu-devices-allocated': 'GPU-1a,NVIDIA,1000,-100:;' }) },
      { type: 'ADDED', object: forwardedPod(good, { 'hami.io/vgpu-node': 'node1', 'hami.io/vgpu-devices-allocated': 'GPU-1a,NVIDIA,2000,10:;' }) },
    ]);
    expect(res.json.accepted).toBe(1);
    expect(res.json.rejected).toEqual([{ index: 0, error: 'pod default/bad-annotation: hami.io/vgpu-devices-allocated: pod annotation format error, negative value -100' }]);
    expect(await bookedMem()).toBe(2000);
    await stillHealthy();
  });
});

describe('hostile state and nodes', () => {
  it('a stored booking an older version wrote with -100 cores blocks only its node, with a reason; the pod’s deletion repairs it', async () => {
    const placed = await api.filter(gpuPod('victim', [{ name: 'c', gpu: 1, mem: 1000 }]), ['node1']);
    expect(placed.json.NodeNames).toEqual(['node1']);
    // What the previous layout stored for a pod asking gpucores 4294967196 (wrapped to -100).
    const raw = new DynamoDBClient({ endpoint: controlPlane.server.deps.config.ddbEndpoint, region: 'local', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    await raw.send(
      new UpdateItemCommand({
        TableName: controlPlane.server.deps.config.stateTable,
        Key: { pk: { S: 'NODE#node1' }, sk: { S: 'N' } },
        UpdateExpression: 'SET #b.#u = :bad, #v = #v + :one',
        ExpressionAttributeNames: { '#b': 'b', '#u': 'uid-old', '#v': 'v' },
        ExpressionAttributeValues: { ':bad': { S: '["default","old",1,"GPU-1a,NVIDIA,1000,-100:;",0,2]' }, ':one': { N: '1' } },
      }),
    );
    raw.destroy();
    // A fresh environment reads it (the running one learns of it from its next refresh).
    const fresh = await startLocalServer({ ddbEndpoint: controlPlane.server.deps.config.ddbEndpoint, env: {} });
    try {
      const other = controlClient(fresh.url);
      const res = await other.filter(gpuPod('next', [{ name: 'c', gpu: 1, mem: 1000 }]), ['node1', 'node2']);
      expect(res.json.NodeNames).toEqual(['node2']);
      const log = await other.schedulerLog('default', 'next');
      expect(log.json.filter.nodes.find((n: { name: string }) => n.name === 'node1')).toMatchObject({ status: 'failed', reason: 'node state unreadable', containers: [] });
      expect(log.json.hints.map((h: { code: string }) => h.code)).toContain('node state unreadable');
      const view = await other.devices('node1');
      expect(view.status).toBe(200);
      expect(view.json).toMatchObject({ registered: false, reason: 'node state unreadable', problems: [{ part: 'booking uid-old', problem: expect.stringContaining('negative value -100') }] });
      // Its pod's deletion (or a relist) repairs the node; the batch is not failed.
      const old = gpuPod('old', [{ name: 'c', gpu: 1 }], { uid: 'uid-old' });
      const repaired = await other.events([{ type: 'DELETED', object: forwardedPod(old, { 'hami.io/vgpu-node': 'node1' }) }, { type: 'MODIFIED', object: gpuNode('node2', [card('GPU-2a'), card('GPU-2b')], { rv: '2' }) }]);
      expect(repaired.json).toMatchObject({ accepted: 2, rejected: [] });
      expect((await other.devices('node1')).json.registered).toBe(true);
    } finally {
      await fresh.close();
    }
    await stillHealthy();
  });

  it('a node with devcore 0 cards takes a pod without cores at once (no endless "retry")', async () => {
    await api.events([{ type: 'ADDED', object: gpuNode('nocore', [card('GPU-z', { devcore: 0 })]) }]);
    const res = await api.filter(gpuPod('mem-only', [{ name: 'c', gpu: 1, mem: 1000 }]), ['nocore']);
    expect(res.json).toMatchObject({ Error: '', NodeNames: ['nocore'] });
    await stillHealthy();
  });

  it('a registration listing one UUID twice leaves the node unregistered with the reason; a 2-card pod is not placed on "both" copies', async () => {
    await api.events([{ type: 'ADDED', object: gpuNode('twice', [card('GPU-same'), card('GPU-same')]) }]);
    const res = await api.filter(gpuPod('pair', [{ name: 'c', gpu: 2, mem: 1000 }]), ['twice']);
    expect(res.json.FailedNodes).toEqual({ twice: 'node unregistered' });
    expect((await api.devices('twice')).json.reason).toBe('hami.io/node-nvidia-register lists device "GPU-same" more than once');
    await stillHealthy();
  });
});

describe('hostile requests', () => {
  it('names longer than Kubernetes allows are bad input, answered clearly and never as "retry"', async () => {
    const long = gpuPod('p'.repeat(5000), [{ name: 'c', gpu: 1, mem: 100 }], { uid: 'uid-long' });
    const filter = await api.filter(long, ['node1']);
    expect(filter.json.Error).toBe('invalid ExtenderArgs: pod.metadata.name: must be at most 253 characters');
    const ns = await api.call('GET', `/api/v1/namespaces/${'n'.repeat(64)}/pods/p/schedulerlog`);
    expect(ns.status).toBe(400);
    expect(ns.json).toMatchObject({ kind: 'Status', code: 400, message: `invalid namespace "${'n'.repeat(64)}": must be at most 63 characters` });
    const bind = await api.call('POST', '/bind', { PodName: 'p', PodNamespace: 'default', PodUID: 'u', Node: 'x'.repeat(300) });
    expect(bind.json.Error).toBe('invalid ExtenderBindingArgs: node: must be at most 253 characters');
    await stillHealthy();
  });

  it('a 1 MB bind outcome error is stored cut to a bounded length, not refused by the store', async () => {
    const pod = gpuPod('loud', [{ name: 'c', gpu: 1, mem: 100 }]);
    await api.filter(pod, ['node1']);
    const res = await api.outcome(pod, 'node1', 'e'.repeat(1024 * 1024));
    expect(res.status).toBe(200);
    const log = await api.schedulerLog('default', 'loud');
    expect(log.json.bind.status).toBe('failed');
    expect(log.json.bind.summary).toMatch(/more characters cut\)$/);
    await stillHealthy();
  });

  it('malformed percent-encoding in a path is a 400 Status', async () => {
    const res = await api.call('GET', '/api/v1/nodes/%ZZ/devices');
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest', message: 'path segment "%ZZ" is not valid percent-encoding' });
    await stillHealthy();
  });

  it('a pod spec with thousands of containers and a request with thousands of unknown node names are answered, not crashed on', async () => {
    const many = gpuPod('many', Array.from({ length: 2000 }, (_, i) => ({ name: `c${i}`, gpu: 1, mem: 10 })));
    const res = await api.filter(many, ['node1']);
    // Two cards of ten slots: the 21st container finds every slot taken.
    expect(res.json.FailedNodes).toEqual({ node1: '2/2 CardTimeSlicingExhausted' });
    const names = Array.from({ length: 5000 }, (_, i) => `ghost-${i}`);
    const ghosts = await api.filter(gpuPod('ghosts', [{ name: 'c', gpu: 1 }]), names);
    expect(ghosts.json.FailedNodes).toEqual(Object.fromEntries(names.map((name) => [name, 'node unregistered'])));
    await stillHealthy();
  });

  it('the placement a probe makes is still exactly HAMi’s format after all of this', async () => {
    const res = await api.filter(gpuPod('after', [{ name: 'main', gpu: 1, mem: 4000, cores: 30 }]), ['node1']);
    expect(patchedAnnotations(res.json)['hami.io/vgpu-devices-allocated']).toMatch(/^GPU-1[ab],NVIDIA,4000,30:;$/);
  });
});
