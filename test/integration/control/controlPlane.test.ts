/**
 * The control plane over real HTTP (local server, embedded dynalite), driven as the relay and
 * kube-scheduler drive it: cluster events, filter, bind, bind outcome, and the read APIs.
 */
import { nodeDevicesSchema } from '../../../lib/diagnostics/nodeDevices';
import { schedulerLogSchema } from '../../../lib/diagnostics/schedulerLog';
import { startLocalServer } from '../../../lib/local/server';
import { card, controlClient, forwardedPod, gpuNode, gpuPod, patchedAnnotations } from '../../support/cluster';
import { useControlPlane } from '../../support/controlPlaneRig';

describe('control plane over HTTP', () => {
  const { api } = useControlPlane({
    per: 'test',
    nodes: [
      gpuNode('node1', [card('GPU-1a'), card('GPU-1b')]),
      gpuNode('node2', [card('GPU-2a'), card('GPU-2b')]),
      gpuNode('node3', [card('GPU-3a', { devmem: 8192 })]),
    ],
  });

  it('places a GPU pod, answers HAMi annotations and events, and books the card', async () => {
    const pod = gpuPod('train', [{ name: 'main', gpu: 1, mem: 4000, cores: 30 }]);
    const res = await api.filter(pod, ['node1', 'node2', 'node3']);

    expect(res.status).toBe(200);
    expect(res.json.Error).toBe('');
    expect(res.json.FailedNodes).toBeNull();
    expect(res.json.NodeNames).toHaveLength(1);
    const node: string = res.json.NodeNames[0];
    const annotations = patchedAnnotations(res.json);
    expect(annotations['hami.io/vgpu-node']).toBe(node);
    expect(annotations['hami.io/vgpu-devices-allocated']).toMatch(/^GPU-[0-9a-z]+,NVIDIA,4000,30:;$/);
    expect(annotations['hami.io/vgpu-devices-to-allocate']).toBe(annotations['hami.io/vgpu-devices-allocated']);
    expect(annotations['hami.io/vgpu-time']).toMatch(/^\d+$/);
    const event = res.json.Effects.find((e: { kind: string }) => e.kind === 'RecordEvent');
    expect(event).toMatchObject({ type: 'Normal', reason: 'FilteringSucceed', namespace: 'default', name: 'train', uid: pod.metadata.uid });
    expect(event.message).toMatch(new RegExp(`^find fit node\\(${node}\\), 0 nodes not fit, 3 nodes fit\\(`));

    const devices = await api.devices(node);
    expect(devices.status).toBe(200);
    expect(nodeDevicesSchema.safeParse(devices.json).success).toBe(true);
    const used = devices.json.devices.filter((d: { usedmem: number }) => d.usedmem > 0);
    expect(used).toEqual([expect.objectContaining({ used: 1, usedmem: 4000, usedcores: 30, pods: ['default/train'] })]);
  });

  it('binds under the node lock, records the outcome, and reports contention with HAMi text', async () => {
    const first = gpuPod('first', [{ name: 'c', gpu: 1, mem: 1000 }]);
    const second = gpuPod('second', [{ name: 'c', gpu: 1, mem: 1000 }]);
    const f1 = await api.filter(first, ['node3']);
    const f2 = await api.filter(second, ['node3']);
    expect(f1.json.NodeNames).toEqual(['node3']);
    expect(f2.json.NodeNames).toEqual(['node3']);

    const b1 = await api.bind(first, 'node3');
    expect(b1.json.Error).toBe('');
    expect(b1.json.Effects.map((e: { kind: string }) => e.kind)).toEqual(['PatchNodeAnnotations', 'PatchPodAnnotations', 'BindPod']);
    expect(b1.json.Effects[0].annotations['hami.io/mutex.lock']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ,default,first$/);
    expect(b1.json.Effects[1].annotations['hami.io/bind-phase']).toBe('allocating');
    expect(b1.json.Effects[2]).toEqual({ kind: 'BindPod', namespace: 'default', name: 'first', uid: first.metadata.uid, node: 'node3' });
    const o1 = await api.outcome(first, 'node3');
    expect(o1.json.Effects).toEqual([
      expect.objectContaining({ kind: 'RecordEvent', type: 'Normal', reason: 'BindingSucceed', message: 'Successfully binding node [node3] to default/first' }),
    ]);
    expect((await api.schedulerLog('default', 'first')).json.status).toBe('succeeded');

    const b2 = await api.bind(second, 'node3');
    expect(b2.json.Error).toBe('node node3 has been locked within 5m0s: node lock contention');
    expect(b2.json.Effects).toEqual([expect.objectContaining({ type: 'Warning', reason: 'BindingFailed', message: b2.json.Error })]);
    const log2 = await api.schedulerLog('default', 'second');
    expect(log2.json.status).toBe('failed');
    expect(log2.json.bind).toMatchObject({ status: 'failed', summary: 'node node3 has been locked within 5m0s: node lock contention' });
    expect((await api.devices('node3')).json.lock).toMatchObject({ holder: 'default/first' });

    // The device plugin finishes the first pod's allocation: the lock is free again.
    const done = forwardedPod(first, { ...patchedAnnotations(f1.json), 'hami.io/bind-phase': 'success' }, { rv: '5' });
    expect((await api.events([{ type: 'MODIFIED', object: done }])).json.accepted).toBe(1);
    expect((await api.devices('node3')).json.lock).toBeNull();
    expect((await api.bind(second, 'node3')).json.Error).toBe('');
  });

  it('treats a lock whose holder pod was deleted as free', async () => {
    const holder = gpuPod('holder', [{ name: 'c', gpu: 1, mem: 1000 }]);
    const next = gpuPod('next', [{ name: 'c', gpu: 1, mem: 1000 }]);
    const f = await api.filter(holder, ['node3']);
    await api.filter(next, ['node3']);
    expect((await api.bind(holder, 'node3')).json.Error).toBe('');
    const deleted = forwardedPod(holder, patchedAnnotations(f.json), { rv: '9' });
    await api.events([{ type: 'DELETED', object: deleted }]);
    expect((await api.bind(next, 'node3')).json.Error).toBe('');
    expect((await api.devices('node3')).json.lock).toMatchObject({ holder: 'default/next' });
  });

  it('releases the lock when the relay reports a failed bind', async () => {
    const pod = gpuPod('p', [{ name: 'c', gpu: 1, mem: 1000 }]);
    await api.filter(pod, ['node3']);
    await api.bind(pod, 'node3');
    const out = await api.outcome(pod, 'node3', 'pods "p" not found');
    expect(out.json.Effects).toEqual([
      // Guarded by the lock's value: a late outcome never deletes the next holder's annotation.
      { kind: 'PatchNodeAnnotations', name: 'node3', annotations: { 'hami.io/mutex.lock': null }, ifAnnotations: { 'hami.io/mutex.lock': expect.stringMatching(/,default,p$/) } },
      expect.objectContaining({ reason: 'BindingFailed', type: 'Warning', message: 'pods "p" not found' }),
    ]);
    expect((await api.devices('node3')).json.lock).toBeNull();
    const log = await api.schedulerLog('default', 'p');
    expect(log.json).toMatchObject({ status: 'failed', bind: { status: 'failed', summary: 'pods "p" not found' } });
  });

  it('answers no fit with per-node reasons, FilteringFailed events and a failed scheduler log', async () => {
    const pod = gpuPod('huge', [{ name: 'main', gpu: 1, mem: 20000 }]);
    const res = await api.filter(pod, ['node1', 'node3', 'ghost']);
    expect(res.json.NodeNames).toBeNull();
    expect(res.json.Error).toBe('');
    expect(res.json.FailedNodes).toEqual({
      node1: '2/2 CardInsufficientMemory',
      node3: '1/1 CardInsufficientMemory',
      ghost: 'node unregistered',
    });
    const messages = res.json.Effects.map((e: { message: string }) => e.message);
    expect(messages).toEqual(['2 nodes CardInsufficientMemory(node1,node3)', 'no available node, 3 nodes do not meet']);
    expect(res.json.Effects.every((e: { reason: string; type: string }) => e.reason === 'FilteringFailed' && e.type === 'Warning')).toBe(true);

    const log = await api.schedulerLog('default', 'huge');
    expect(log.status).toBe(200);
    expect(schedulerLogSchema.safeParse(log.json).success).toBe(true);
    expect(log.json.status).toBe('failed');
    expect(log.json.filter.status).toBe('failed');
    expect(log.json.filter.summary).toBe('no available node, 3 nodes do not meet');
    const byName = Object.fromEntries(log.json.filter.nodes.map((n: { name: string }) => [n.name, n]));
    expect(byName.node1.containers).toEqual([expect.objectContaining({ name: 'main', status: 'failed', reason: '2/2 CardInsufficientMemory' })]);
    expect(byName.ghost).toMatchObject({ status: 'failed', reason: 'node unregistered', containers: [] });
  });

  it('echoes NodeNames for a pod without managed resources and stores nothing', async () => {
    const pod = gpuPod('cpu-only', [{ name: 'main' }]);
    const res = await api.filter(pod, ['node1', 'node2']);
    expect(res.json).toMatchObject({ NodeNames: ['node1', 'node2'], FailedNodes: null, Error: '', Effects: [] });
    expect((await api.schedulerLog('default', 'cpu-only')).status).toBe(404);
  });

  it('simulates with Nodes given: devices from the objects, usage zero, nothing written', async () => {
    const booked = gpuPod('booked', [{ name: 'c', gpu: 1, mem: 16000 }]);
    await api.filter(booked, ['node3']);
    const pod = gpuPod('sim', [{ name: 'c', gpu: 1, mem: 8000 }]);
    const simNode = gpuNode('node3', [card('GPU-3a', { devmem: 8192 })]);
    const res = await api.call('POST', '/filter', { Pod: pod, Nodes: { items: [simNode] }, NodeNames: null });
    expect(res.json.Error).toBe('');
    expect(res.json.Nodes.items).toHaveLength(1);
    expect(res.json.Nodes.items[0].metadata.name).toBe('node3');
    expect(res.json.Effects).toEqual([]);
    expect((await api.schedulerLog('default', 'sim')).status).toBe(404);
  });

  it('drops the earlier reservation when a pod is filtered again', async () => {
    const pod = gpuPod('again', [{ name: 'c', gpu: 1, mem: 6000 }]);
    await api.filter(pod, ['node3']);
    await api.filter(pod, ['node3']);
    const third = await api.filter(pod, ['node3']);
    expect(third.json.NodeNames).toEqual(['node3']);
    const device = (await api.devices('node3')).json.devices[0];
    expect(device).toMatchObject({ used: 1, usedmem: 6000 });
    const history = await api.schedulerLog('default', 'again', '?history=true');
    expect(history.json.attempt).toBe(3);
    expect(history.json.history).toHaveLength(2);
  });

  it('frees a pod’s cards when it is deleted, and keeps them while it terminates', async () => {
    const pod = gpuPod('short', [{ name: 'c', gpu: 1, mem: 8000 }]);
    const f = await api.filter(pod, ['node3']);
    const annotations = patchedAnnotations(f.json);
    await api.events([{ type: 'MODIFIED', object: forwardedPod(pod, annotations, { rv: '3', phase: 'Running' }) }]);
    await api.events([{ type: 'MODIFIED', object: forwardedPod(pod, annotations, { rv: '4', phase: 'Running', deletionTimestamp: '2026-11-20T10:00:00Z' }) }]);
    expect((await api.devices('node3')).json.devices[0].usedmem).toBe(8000);
    await api.events([{ type: 'DELETED', object: forwardedPod(pod, annotations, { rv: '5' }) }]);
    expect((await api.devices('node3')).json.devices[0].usedmem).toBe(0);
    // A late, older event does not bring the pod back.
    await api.events([{ type: 'MODIFIED', object: forwardedPod(pod, annotations, { rv: '4', phase: 'Running' }) }]);
    expect((await api.devices('node3')).json.devices[0].usedmem).toBe(0);
  });

  it('keeps a deleted pod deleted even if it is filtered again elsewhere and a late event arrives', async () => {
    const pod = gpuPod('ghost', [{ name: 'c', gpu: 1, mem: 3000 }]);
    const f = await api.filter(pod, ['node3']);
    const annotations = patchedAnnotations(f.json);
    await api.events([{ type: 'DELETED', object: forwardedPod(pod, annotations, { rv: '8' }) }]);
    await api.filter(pod, ['node1']);
    await api.events([{ type: 'MODIFIED', object: forwardedPod(pod, annotations, { rv: '7', phase: 'Running' }) }]);
    expect((await api.devices('node3')).json.devices[0].usedmem).toBe(0);
  });

  it('frees a pod reported DELETED by name only (a relist found it gone), and rejects a MODIFIED without uid', async () => {
    const pod = gpuPod('vanished', [{ name: 'c', gpu: 1, mem: 7000 }]);
    await api.filter(pod, ['node3']);
    expect((await api.devices('node3')).json.devices[0].usedmem).toBe(7000);
    const nameOnly = { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'vanished', namespace: 'default' } };
    const modified = await api.events([{ type: 'MODIFIED', object: nameOnly }]);
    expect(modified.json.rejected).toEqual([{ index: 0, error: expect.stringContaining('uid') }]);
    expect((await api.events([{ type: 'DELETED', object: nameOnly }])).json).toMatchObject({ accepted: 1, rejected: [], Effects: [] });
    expect((await api.devices('node3')).json.devices[0].usedmem).toBe(0);
  });

  it('counts confirmed pods forwarded by the relay, and frees them when they succeed', async () => {
    const pod = gpuPod('external', [{ name: 'c', gpu: 1, mem: 5000 }]);
    const annotations = { 'hami.io/vgpu-node': 'node3', 'hami.io/vgpu-devices-allocated': 'GPU-3a,NVIDIA,5000,0:;' };
    await api.events([{ type: 'ADDED', object: forwardedPod(pod, annotations, { rv: '10', phase: 'Running' }) }]);
    expect((await api.devices('node3')).json.devices[0]).toMatchObject({ usedmem: 5000, pods: ['default/external'] });
    await api.events([{ type: 'MODIFIED', object: forwardedPod(pod, annotations, { rv: '11', phase: 'Succeeded' }) }]);
    expect((await api.devices('node3')).json.devices[0]).toMatchObject({ usedmem: 0, pods: [] });
  });

  it('ignores an older node event and unregisters a node whose registration breaks', async () => {
    await api.events([{ type: 'MODIFIED', object: gpuNode('node3', [card('GPU-3a', { devmem: 4096 })], { rv: '0' }) }]);
    expect((await api.devices('node3')).json.devices[0].devmem).toBe(8192);
    const broken = gpuNode('node3', [], { rv: '7', annotations: { 'hami.io/node-nvidia-register': '[{"id":' } });
    expect((await api.events([{ type: 'MODIFIED', object: broken }])).json.accepted).toBe(1);
    const view = await api.devices('node3');
    expect(view.json.registered).toBe(false);
    expect(view.json.reason).toEqual(expect.any(String));
    const res = await api.filter(gpuPod('p', [{ name: 'c', gpu: 1 }]), ['node3']);
    expect(res.json.FailedNodes).toEqual({ node3: 'node unregistered' });
  });

  it('applies namespace quotas from forwarded ResourceQuotas', async () => {
    const quota = {
      kind: 'ResourceQuota',
      apiVersion: 'v1',
      metadata: { name: 'gpu', namespace: 'team-a', resourceVersion: '1' },
      spec: { hard: { 'limits.nvidia.com/gpumem': '6000' } },
    };
    expect((await api.events([{ type: 'ADDED', object: quota }])).json.accepted).toBe(1);
    const ok = await api.filter(gpuPod('a', [{ name: 'c', gpu: 1, mem: 4000 }], { namespace: 'team-a' }), ['node3']);
    expect(ok.json.NodeNames).toEqual(['node3']);
    const over = await api.filter(gpuPod('b', [{ name: 'c', gpu: 1, mem: 4000 }], { namespace: 'team-a' }), ['node3']);
    expect(over.json.FailedNodes).toEqual({ node3: '1/1 ResourceQuotaNotFit' });
    await api.events([{ type: 'DELETED', object: quota }]);
    expect((await api.filter(gpuPod('b', [{ name: 'c', gpu: 1, mem: 4000 }], { namespace: 'team-a' }), ['node3'])).json.NodeNames).toEqual(['node3']);
  });

  describe('bad input', () => {
    it('answers extender routes with 200 and a clear Error', async () => {
      const notJson = await api.call('POST', '/filter', undefined, '{"Pod": ');
      expect(notJson.status).toBe(200);
      expect(notJson.json.Error).toMatch(/^request body is not valid JSON/);
      const noPod = await api.call('POST', '/filter', { NodeNames: ['node1'] });
      expect(noPod.json).toEqual({ Error: 'extender args missing pod' });
      const badPod = await api.call('POST', '/filter', { Pod: { metadata: { name: '' } }, NodeNames: ['node1'] });
      expect(badPod.json.Error).toMatch(/^invalid ExtenderArgs: pod\.metadata/);
      const badBind = await api.call('POST', '/bind', { PodName: 'x' });
      expect(badBind.json.Error).toMatch(/^invalid ExtenderBindingArgs/);
      const huge = await api.call('POST', '/filter', undefined, JSON.stringify({ Pod: { pad: 'x'.repeat(7 * 1024 * 1024) } }));
      expect(huge.status).toBe(200);
      expect(huge.json.Error).toMatch(/larger than/);
    });

    it('accepts extender keys in any letter case', async () => {
      const pod = gpuPod('lower', [{ name: 'c', gpu: 1, mem: 100 }]);
      const res = await api.call('POST', '/filter', { pod, nodenames: ['node3'] });
      expect(res.json.NodeNames).toEqual(['node3']);
      const bind = await api.call('POST', '/bind', { podname: 'lower', podnamespace: 'default', poduid: pod.metadata.uid, NODE: 'node3' });
      expect(bind.json.Error).toBe('');
    });

    it('answers a bind for a pod that was never filtered with an Error and a BindingFailed event', async () => {
      const res = await api.bind(gpuPod('stranger', [{ name: 'c', gpu: 1 }]), 'node1');
      expect(res.json.Error).toBe('pod default/stranger has no device booking on node node1; it must pass the filter first');
      expect(res.json.Effects).toEqual([expect.objectContaining({ reason: 'BindingFailed' })]);
    });

    it('refuses a complete list it cannot trust as a whole, with the reason, and drops nothing', async () => {
      const res = await api.call('POST', '/cluster/events', { events: [], complete: [{ kind: 'Pod', resourceVersion: 'latest', keys: [] }] });
      expect(res.status).toBe(400);
      expect(res.json.message).toBe("invalid cluster events: complete.0.resourceVersion: must be the list's resourceVersion (an integer)");
    });

    it('rejects malformed cluster events one by one and applies the rest', async () => {
      const pod = gpuPod('garbled', [{ name: 'c', gpu: 1 }]);
      const res = await api.events([
        { type: 'ADDED', object: gpuNode('node4', [card('GPU-4a')]) },
        { type: 'EXPLODED', object: gpuNode('node5', [card('GPU-5a')]) },
        { type: 'ADDED', object: forwardedPod(pod, { 'hami.io/vgpu-node': 'node4', 'hami.io/vgpu-devices-allocated': 'GPU-4a,NVIDIA:;' }) },
        { type: 'ADDED', object: { kind: 'Node', apiVersion: 'v1', metadata: {} } },
      ]);
      expect(res.status).toBe(200);
      expect(res.json.accepted).toBe(1);
      expect(res.json.rejected.map((r: { index: number }) => r.index)).toEqual([1, 2, 3]);
      expect(res.json.rejected[1].error).toMatch(/pod annotation format error/);
      expect((await api.devices('node4')).json.registered).toBe(true);
      const notJson = await api.call('POST', '/cluster/events', undefined, 'nope');
      expect(notJson.status).toBe(400);
      expect(notJson.json).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest' });
    });

    it('answers 404 Status bodies for unknown pods, nodes and paths, 405 for wrong methods', async () => {
      const pod = await api.schedulerLog('default', 'nobody');
      expect(pod.status).toBe(404);
      expect(pod.json).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404 });
      expect((await api.devices('nowhere')).status).toBe(404);
      expect((await api.call('GET', '/nothing')).status).toBe(404);
      expect((await api.call('GET', '/filter')).status).toBe(405);
      expect((await api.schedulerLog('default', 'x', '?detail=everything')).status).toBe(400);
    });
  });
});

describe('local server authentication', () => {
  it('requires the bearer token on every route when HAMI_API_TOKEN is set', async () => {
    const server = await startLocalServer({ token: 'correct-horse-battery' });
    try {
      const anonymous = controlClient(server.url);
      const wrong = controlClient(server.url, 'wrong-token-value');
      const right = controlClient(server.url, 'correct-horse-battery');
      expect((await anonymous.call('GET', '/healthz')).status).toBe(401);
      const denied = await wrong.call('POST', '/cluster/events', { events: [] });
      expect(denied.status).toBe(401);
      expect(denied.json).toMatchObject({ kind: 'Status', reason: 'Unauthorized' });
      expect(denied.text).not.toContain('correct-horse-battery');
      expect((await right.call('GET', '/healthz')).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
