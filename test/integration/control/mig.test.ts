/**
 * A cluster of HAMi-core and MIG cards over real HTTP (local server, embedded dynalite), as the relay and
 * kube-scheduler drive it: each pod lands on the kind of card it asks for with the annotations HAMi's device plugin
 * reads, MIG instances are freed when their pod goes, and a pod that fits nowhere is told why, by code, with a hint.
 */
import { card, forwardedPod, gpuNode, gpuPod, patchedAnnotations } from '../../support/cluster';
import { useControlPlane } from '../../support/controlPlaneRig';

const a100Profiles = [
  { name: '1g.5gb', memoryMB: 4864, core: 14, sliceCount: 1, placements: [0, 1, 2, 3, 4, 5, 6].map((start) => ({ start, size: 1 })) },
  { name: '3g.20gb', memoryMB: 19968, core: 42, sliceCount: 3, placements: [0, 4].map((start) => ({ start, size: 4 })) },
];

describe('MIG and HAMi-core cards over HTTP', () => {
  const { api } = useControlPlane({
    per: 'test',
    nodes: [
      gpuNode('core1', [card('GPU-core1-0', { devmem: 40960, type: 'NVIDIA-A100-PCIE-40GB' })]),
      gpuNode('mig1', [card('GPU-mig1-0', { count: 7, devmem: 40960, type: 'NVIDIA-A100-PCIE-40GB', mode: 'mig', migProfiles: a100Profiles })]),
    ],
  });

  it('places a MIG pod on the MIG card with its instance, and a HAMi-core pod on the other; an instance is freed with its pod', async () => {
    const small = gpuPod('mig-small', [{ name: 'c', gpu: 1, mem: 4000 }], { annotations: { 'nvidia.com/vgpu-mode': 'mig' } });
    const placed = await api.filter(small, ['core1', 'mig1']);
    expect(placed.json.NodeNames).toEqual(['mig1']);
    const annotations = patchedAnnotations(placed.json);
    expect(annotations['hami.io/vgpu-devices-allocated']).toBe('GPU-mig1-0,NVIDIA,4864,14:;');
    expect(JSON.parse(annotations['hami.io/vgpu-mig-allocations']!)).toEqual([{ containerIndex: 0, deviceIndex: 0, gpuUUID: 'GPU-mig1-0', profile: '1g.5gb', placement: { start: 6, size: 1 } }]);
    expect((await api.bind(small, 'mig1')).json.Error).toBe('');

    const core = gpuPod('core-a', [{ name: 'c', gpu: 1, mem: 15000 }], { annotations: { 'nvidia.com/vgpu-mode': 'hami-core' } });
    const onCore = await api.filter(core, ['core1', 'mig1']);
    expect(onCore.json.NodeNames).toEqual(['core1']);
    expect(patchedAnnotations(onCore.json)['hami.io/vgpu-mig-allocations']).toBeUndefined();

    // A 3g instance cannot sit at slices 4-7 (slice 6 is taken), so it takes 0-3; a second one has no placement left,
    // though the card has memory enough.
    const large = gpuPod('mig-large', [{ name: 'c', gpu: 1, mem: 15000 }], { annotations: { 'nvidia.com/vgpu-mode': 'mig' } });
    const largeAnswer = await api.filter(large, ['mig1']);
    const largeAnnotations = patchedAnnotations(largeAnswer.json);
    expect(JSON.parse(largeAnnotations['hami.io/vgpu-mig-allocations']!)[0]).toMatchObject({ profile: '3g.20gb', placement: { start: 0, size: 4 } });
    const waiting = gpuPod('mig-waiting', [{ name: 'c', gpu: 1, mem: 15000 }], { annotations: { 'nvidia.com/vgpu-mode': 'mig' } });
    const refused = await api.filter(waiting, ['mig1']);
    expect(refused.json.FailedNodes).toEqual({ mig1: '1/1 CardMigTopologyInfeasible' });
    const log = await api.schedulerLog('default', 'mig-waiting');
    expect(log.json.filter.nodes[0].containers[0].reason).toBe('1/1 CardMigTopologyInfeasible');
    expect(log.json.hints.map((h: { code: string }) => h.code)).toContain('CardMigTopologyInfeasible');

    // The large pod goes: its slices are free for the waiting one.
    const gone = await api.events([{ type: 'DELETED', object: forwardedPod(large, largeAnnotations, { rv: '9' }) }]);
    expect(gone.json.viewSeq).toBeGreaterThan(0);
    const retried = await api.call('POST', '/filter', { Pod: waiting, Nodes: null, NodeNames: ['mig1'] }, undefined);
    expect(retried.json.NodeNames).toEqual(['mig1']);
    const devices = await api.devices('mig1');
    expect(devices.json.devices[0].mig.inUse.map((u: { start: number; pod: string }) => [u.start, u.pod])).toEqual([
      [0, 'default/mig-waiting'],
      [6, 'default/mig-small'],
    ]);
  });
});
