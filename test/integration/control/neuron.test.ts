/**
 * A mixed cluster over real HTTP (local server, embedded dynalite): HAMi-core and MIG NVIDIA nodes beside AWS Neuron
 * trn1 and inf2 nodes, driven as the relay and kube-scheduler drive the control plane. Pods of each kind land with the right
 * annotations, are freed on delete, and every failure is explained by code in the scheduler log
 * (docs/devices.md, "AWS Neuron").
 */
import { nodeDevicesSchema } from '../../../lib/diagnostics/nodeDevices';
import { schedulerLogSchema } from '../../../lib/diagnostics/schedulerLog';
import { card, forwardedPod, gpuNode, gpuPod, neuronNode, neuronPod, patchedAnnotations } from '../../support/cluster';
import { useControlPlane } from '../../support/controlPlaneRig';

const NODES = ['gpu-a', 'gpu-b', 'mig-a', 'inf2-a', 'trn1-a'];
const a100Profiles = [
  { name: '1g.5gb', memoryMB: 4864, core: 14, sliceCount: 1, placements: [0, 1, 2, 3, 4, 5, 6].map((start) => ({ start, size: 1 })) },
  { name: '3g.20gb', memoryMB: 19968, core: 42, sliceCount: 3, placements: [0, 4].map((start) => ({ start, size: 4 })) },
];
const coreMode = { 'nvidia.com/vgpu-mode': 'hami-core' };

describe('a mixed NVIDIA and AWS Neuron cluster over HTTP', () => {
  const { api } = useControlPlane({
    per: 'test',
    nodes: [
      gpuNode('gpu-a', [card('GPU-a0'), card('GPU-a1')]),
      gpuNode('gpu-b', [card('GPU-b0')]),
      gpuNode('mig-a', [card('GPU-mig0', { count: 7, devmem: 40960, type: 'NVIDIA-A100-PCIE-40GB', mode: 'mig', migProfiles: a100Profiles })]),
      neuronNode('inf2-a', 12, 24, 'inf2.48xlarge'),
      neuronNode('trn1-a', 16, 32, 'trn1.32xlarge'),
    ],
  });

  /** Every failed node of the pod's scheduler log, with its reason, and the hint codes. */
  async function explained(namespace: string, name: string) {
    const log = await api.schedulerLog(namespace, name, '?detail=devices');
    expect(log.status).toBe(200);
    expect(schedulerLogSchema.safeParse(log.json).success).toBe(true);
    const failed = Object.fromEntries(
      (log.json.filter.nodes as { name: string; status: string; reason?: string; containers: { reason?: string }[] }[])
        .filter((n) => n.status === 'failed')
        .map((n) => [n.name, n.reason ?? n.containers.map((c) => c.reason).find((r) => r !== undefined)]),
    );
    return { failed, hints: (log.json.hints as { code: string }[]).map((h) => h.code), log: log.json };
  }

  it('places an NVIDIA pod on a HAMi-core node with HAMi\'s annotations; the Neuron nodes fail with NodeInsufficientDevice (none of that kind), as HAMi answers', async () => {
    const pod = gpuPod('cuda', [{ name: 'main', gpu: 1, mem: 4000, cores: 30 }], { annotations: coreMode });
    const res = await api.filter(pod, NODES);
    expect(res.json.Error).toBe('');
    expect(['gpu-a', 'gpu-b']).toContain(res.json.NodeNames[0]);
    const annotations = patchedAnnotations(res.json);
    expect(annotations['hami.io/vgpu-devices-allocated']).toMatch(/^GPU-[ab]\d,NVIDIA,4000,30:;$/);
    expect(Object.keys(annotations).filter((key) => key.includes('NEURON') || key.startsWith('aws.amazon.com/'))).toEqual([]);
    const { failed, hints } = await explained('default', 'cuda');
    expect(failed).toEqual({ 'mig-a': '1/1 CardTypeMismatch', 'inf2-a': 'NodeInsufficientDevice', 'trn1-a': 'NodeInsufficientDevice' });
    expect(hints).toEqual(['NodeInsufficientDevice', 'CardTypeMismatch']);
  });

  it('places a MIG pod on the MIG card with its instance, and no AWS annotation', async () => {
    const pod = gpuPod('mig', [{ name: 'main', gpu: 1, mem: 4000 }], { annotations: { 'nvidia.com/vgpu-mode': 'mig' } });
    const res = await api.filter(pod, NODES);
    expect(res.json.NodeNames).toEqual(['mig-a']);
    const annotations = patchedAnnotations(res.json);
    expect(annotations['hami.io/vgpu-devices-allocated']).toBe('GPU-mig0,NVIDIA,4864,14:;');
    expect(JSON.parse(annotations['hami.io/vgpu-mig-allocations']!)).toEqual([{ containerIndex: 0, deviceIndex: 0, gpuUUID: 'GPU-mig0', profile: '1g.5gb', placement: { start: 6, size: 1 } }]);
    expect(Object.keys(annotations).filter((key) => key.includes('NEURON') || key.startsWith('aws.amazon.com/'))).toEqual([]);
    const { failed } = await explained('default', 'mig');
    expect(failed).toEqual({ 'gpu-a': '2/2 CardTypeMismatch', 'gpu-b': '1/1 CardTypeMismatch', 'inf2-a': 'NodeInsufficientDevice', 'trn1-a': 'NodeInsufficientDevice' });
  });

  it('places a 4-device pod on the first aligned trn1 group, binds it without a node lock, and frees it on delete', async () => {
    const pod = neuronPod('train', [{ name: 'main', devices: 4 }]);
    const res = await api.filter(pod, NODES);
    expect(res.json.Error).toBe('');
    // Neuron nodes score 0 (no memory): equal scores go by name, and binpack takes the last.
    expect(res.json.NodeNames).toEqual(['trn1-a']);
    const annotations = patchedAnnotations(res.json);
    expect(annotations).toEqual({
      'hami.io/vgpu-node': 'trn1-a',
      'hami.io/vgpu-time': expect.stringMatching(/^\d+$/),
      'hami.io/aws-neuron-devices-allocated': 'trn1-a-AWSNeuron-0,AWSNeuron,0,3:trn1-a-AWSNeuron-1,AWSNeuron,0,3:trn1-a-AWSNeuron-2,AWSNeuron,0,3:trn1-a-AWSNeuron-3,AWSNeuron,0,3:;',
      AWS_NEURON_IDS: '0,1,2,3',
      NEURON_ALLOC_TIME: expect.stringMatching(/^\d{19}$/),
      NEURON_ALLOCATED: 'false',
      'aws.amazon.com/predicate-node': 'trn1-a',
    });
    expect(BigInt(annotations.NEURON_ALLOC_TIME as string) / 1_000_000_000n).toBe(BigInt(annotations['hami.io/vgpu-time'] as string));

    const bind = await api.bind(pod, 'trn1-a');
    expect(bind.json.Error).toBe('');
    expect(bind.json.Effects.map((e: { kind: string }) => e.kind)).toEqual(['PatchPodAnnotations', 'BindPod']);
    expect((await api.outcome(pod, 'trn1-a')).status).toBe(200);
    expect((await api.schedulerLog('default', 'train')).json.status).toBe('succeeded');

    const confirmed = await api.events([{ type: 'MODIFIED', object: forwardedPod(pod, { ...annotations, NEURON_ALLOCATED: 'true' }, { phase: 'Running' }) }]);
    expect(confirmed.json.rejected).toEqual([]);
    const devices = await api.devices('trn1-a');
    expect(nodeDevicesSchema.safeParse(devices.json).success).toBe(true);
    expect(devices.json.devices.slice(0, 5).map((d: { used: number; coreIndexes: unknown; pods: string[] }) => [d.used, d.coreIndexes, d.pods])).toEqual([
      [1, { used: [0, 1], free: [] }, ['default/train']],
      [1, { used: [0, 1], free: [] }, ['default/train']],
      [1, { used: [0, 1], free: [] }, ['default/train']],
      [1, { used: [0, 1], free: [] }, ['default/train']],
      [0, { used: [], free: [0, 1] }, []],
    ]);

    await api.events([{ type: 'DELETED', object: forwardedPod(pod, annotations, { rv: '9', phase: 'Running' }) }]);
    const after = await api.devices('trn1-a');
    expect(after.json.devices).toHaveLength(16);
    expect(after.json.devices.every((d: { used: number; usedcores: number }) => d.used === 0 && d.usedcores === 0)).toBe(true);
    // All 16 devices are free again: the whole node fits.
    const whole = await api.filter(neuronPod('whole', [{ name: 'main', devices: 16 }]), ['trn1-a']);
    expect(whole.json.NodeNames).toEqual(['trn1-a']);
  });

  it('places a 3-core pod on inf2 as one contiguous core range; trn1 refuses 2 devices by code', async () => {
    const pod = neuronPod('infer', [{ name: 'main', cores: 3 }]);
    const res = await api.filter(pod, NODES);
    expect(res.json.NodeNames).toEqual(['inf2-a']);
    expect(patchedAnnotations(res.json)).toMatchObject({
      'hami.io/aws-neuron-devices-allocated': 'inf2-a-AWSNeuron-0,AWSNeuron,0,3:inf2-a-AWSNeuron-1,AWSNeuron,0,1:;',
      AWS_NEURON_IDS: '0,1,2',
      NEURON_RESOURCE_TYPE: 'aws.amazon.com/neuroncore',
      'aws.amazon.com/predicate-node': 'inf2-a',
    });
    const { failed, hints, log } = await explained('default', 'infer');
    expect(failed).toEqual({ 'gpu-a': 'NodeInsufficientDevice', 'gpu-b': 'NodeInsufficientDevice', 'mig-a': 'NodeInsufficientDevice', 'trn1-a': '1/16 NumaNotFit' });
    expect(hints).toEqual(['NodeInsufficientDevice', 'NumaNotFit']);
    const numa = (log.hints as { code: string; cause: string }[]).find((h) => h.code === 'NumaNotFit');
    expect(numa?.cause).toContain('Trainium');
    const chosen = (log.filter.nodes as { name: string; containers: { chosen?: unknown[] }[] }[]).find((n) => n.name === 'inf2-a')?.containers[0]?.chosen;
    expect(chosen).toEqual([
      { idx: 0, uuid: 'inf2-a-AWSNeuron-0', type: 'AWSNeuron', usedmem: 0, usedcores: 3, coreIndexes: [0, 1] },
      { idx: 1, uuid: 'inf2-a-AWSNeuron-1', type: 'AWSNeuron', usedmem: 0, usedcores: 1, coreIndexes: [0] },
    ]);
    // The next single core goes to the last device, as HAMi tries single devices; the core left on device 1 stays free.
    const next = await api.filter(neuronPod('small', [{ name: 'main', cores: 1 }]), ['inf2-a']);
    expect(patchedAnnotations(next.json).AWS_NEURON_IDS).toBe('22');
  });

  it('explains a pod no node can hold, by code on every node', async () => {
    await api.filter(neuronPod('big', [{ name: 'main', devices: 8 }]), ['trn1-a']);
    const pod = neuronPod('second', [{ name: 'main', devices: 16 }]);
    const res = await api.filter(pod, NODES);
    expect(res.json.NodeNames).toBeNull();
    expect(res.json.FailedNodes).toEqual({
      'gpu-a': 'NodeInsufficientDevice',
      'gpu-b': 'NodeInsufficientDevice',
      'mig-a': 'NodeInsufficientDevice',
      'inf2-a': 'NodeInsufficientDevice',
      // HAMi's graphSelect: no run of 16 free devices is one NumaNotFit for the node.
      'trn1-a': '1/16 NumaNotFit',
    });
    const events = (res.json.Effects as { reason: string; message: string }[]).filter((e) => e.reason === 'FilteringFailed').map((e) => e.message);
    expect(events).toContain('no available node, 5 nodes do not meet');
    const { failed, hints } = await explained('default', 'second');
    expect(failed).toEqual(res.json.FailedNodes);
    expect(hints).toEqual(['NodeInsufficientDevice', 'NumaNotFit']);
  });

  it('answers a pod asking NVIDIA and Neuron devices with the one-kind-per-pod Error, in the scheduler log too', async () => {
    const pod = neuronPod('both', [{ name: 'main', devices: 1 }, { name: 'side', gpu: 1 }]);
    const res = await api.filter(pod, NODES);
    // The container named is the first to ask for the second kind met (kinds in the scheduler's order: NVIDIA, Neuron).
    const message = 'invalid GPU resource request: container "main": nvidia.com/gpu and aws.amazon.com/neuron "both" ask for two kinds of device in one pod; a pod may use one kind';
    expect(res.json.Error).toBe(message);
    const { log, hints } = await explained('default', 'both');
    expect(log.filter).toMatchObject({ status: 'failed', summary: message });
    expect(hints).toEqual(['InvalidResourceRequest']);
    for (const node of ['trn1-a', 'gpu-a', 'mig-a']) {
      const devices = await api.devices(node);
      expect(devices.json.devices.length).toBeGreaterThan(0);
      expect(devices.json.devices.every((d: { pods: string[] }) => d.pods.length === 0)).toBe(true);
    }
  });

  it('simulates with Nodes given (cluster-autoscaler): Neuron devices from the objects\' capacity, nothing written', async () => {
    const pod = neuronPod('sim', [{ name: 'main', devices: 8 }]);
    const items = [neuronNode('new-trn', 16, 32, 'trn1.32xlarge'), neuronNode('new-inf', 6, 12, 'inf2.24xlarge')];
    const res = await api.call('POST', '/filter', { Pod: pod, Nodes: { items }, NodeNames: null });
    expect(res.json.Error).toBe('');
    expect(res.json.Nodes.items.map((n: { metadata: { name: string } }) => n.metadata.name)).toEqual(['new-trn']);
    expect(res.json.FailedNodes).toEqual({ 'new-inf': 'NodeInsufficientDevice' });
    expect(res.json.Effects).toEqual([]);
    expect((await api.schedulerLog('default', 'sim')).status).toBe(404);
  });

  it('keeps NVIDIA and Neuron bookings apart on one cluster: each kind sees only its own devices', async () => {
    const neuron = await api.filter(neuronPod('n1', [{ name: 'main', devices: 1 }]), NODES);
    const gpu = await api.filter(gpuPod('g1', [{ name: 'main', gpu: 2, mem: 1000 }], { annotations: coreMode }), NODES);
    expect(neuron.json.NodeNames).toEqual(['trn1-a']);
    expect(gpu.json.NodeNames).toEqual(['gpu-a']);
    expect((await explained('default', 'g1')).failed).toEqual({ 'gpu-b': 'NodeInsufficientDevice', 'mig-a': 'NodeInsufficientDevice', 'inf2-a': 'NodeInsufficientDevice', 'trn1-a': 'NodeInsufficientDevice' });
  });
});
