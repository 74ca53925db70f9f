/** Both sides of a mismatch: the card's (from the evidence) and the pod's (its recorded selection); devices of another kind said. */
import { ingestClusterEvents } from '../../../lib/control/clusterEvents';
import { filterPod } from '../../../lib/control/filter';
import { readSchedulerLog } from '../../../lib/control/views';
import { renderSchedulerLogText } from '../../../lib/cli/render';
import { mismatchPhrase, otherKindsPhrase } from '../../../lib/diagnostics/phrases';
import type { CardEvidenceLog, ContainerLog, SelectorsLog } from '../../../lib/diagnostics/schedulerLog';
import { card, gpuNode, gpuPod, neuronNode, neuronPod } from '../../support/cluster';
import { filterOf, world } from '../control/fixtures';

const base: CardEvidenceLog = { uuid: 'GPU-1', index: 1, outcome: 'Fit', totalMem: 16384, usedMem: 0, requestedMem: 1000, freeMem: 16384, totalCores: 100, usedCores: 0, requestedCores: 0, slots: 10, usedSlots: 0 };
const nvidia: ContainerLog['request'] = { nums: 1, type: 'NVIDIA', memreq: 1000, mempercentagereq: 101, coresreq: 0 };
const neuron: ContainerLog['request'] = { nums: 1, type: 'AWSNeuron', memreq: 0, mempercentagereq: 101, coresreq: 0 };

describe('mismatchPhrase', () => {
  it.each<[string, Partial<CardEvidenceLog>, SelectorsLog | undefined, ContainerLog['request'], string]>([
    ['type asked for', { outcome: 'CardTypeMismatch', type: 'NVIDIA-T4' }, { useTypes: ['A100'] }, nvidia, 'card type NVIDIA-T4; the pod asks for A100'],
    ['several types asked for', { outcome: 'CardTypeMismatch', type: 'NVIDIA-T4' }, { useTypes: ['A100', 'H100'] }, nvidia, 'card type NVIDIA-T4; the pod asks for A100 or H100'],
    ['type excluded', { outcome: 'CardTypeMismatch', type: 'NVIDIA-T4' }, { noUseTypes: ['T4'] }, nvidia, 'card type NVIDIA-T4; the pod excludes T4'],
    ['mode asked for', { outcome: 'CardTypeMismatch', type: 'NVIDIA-A100', mode: 'hami-core' }, { vgpuMode: 'mig' }, nvidia, 'card type NVIDIA-A100, mode hami-core; the pod asks for mode mig'],
    ['card type no longer known', { outcome: 'CardTypeMismatch' }, { useTypes: ['A100'] }, nvidia, 'the pod asks for A100'],
    ['selection not recorded', { outcome: 'CardTypeMismatch', type: 'NVIDIA-T4' }, undefined, nvidia, 'card type NVIDIA-T4'],
    ['a device of another kind', { outcome: 'CardTypeMismatch', type: 'NVIDIA-T4' }, undefined, neuron, 'device type NVIDIA-T4; the pod asks for AWSNeuron devices'],
    ['UUID not listed', { outcome: 'CardUuidMismatch' }, { useUuids: ['GPU-7', 'GPU-8'] }, nvidia, 'card GPU-1; the pod asks only for GPU-7, GPU-8'],
    ['UUID excluded', { outcome: 'CardUuidMismatch' }, { noUseUuids: ['GPU-1'] }, nvidia, 'card GPU-1; the pod excludes it'],
    ['NUMA', { outcome: 'NumaNotFit', numa: 1 }, { numaBind: true }, nvidia, 'card on NUMA node 1; the pod asks for all its cards on one NUMA node'],
    ['not a mismatch', { outcome: 'CardInsufficientMemory', type: 'NVIDIA-T4' }, { useTypes: ['A100'] }, nvidia, ''],
    ['nothing known', { outcome: 'CardTypeMismatch' }, undefined, nvidia, ''],
  ])('%s', (_case, over, selectors, request, expected) => {
    expect(mismatchPhrase({ ...base, ...over }, selectors, request)).toBe(expected);
  });
});

describe('a CardTypeMismatch in the scheduler log names both sides', () => {
  it('records what the pod asks for, reads the card type from the registration, and hami-diag prints both', async () => {
    const w = world();
    const env = w.environment();
    await ingestClusterEvents(env.deps, [{ type: 'ADDED', object: gpuNode('t4', [card('GPU-t4-0', { type: 'NVIDIA-Tesla T4' })]) }]);
    const pod = gpuPod('wants-a100', [{ name: 'main', gpu: 1, mem: 1000 }], { annotations: { 'nvidia.com/use-gputype': 'A100' } });
    const answer = await filterPod(env.deps, filterOf(pod, ['t4']));
    expect(answer.result.NodeNames).toBeNull();
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'wants-a100', detail: 'devices', history: false });
    expect(log.filter.selectors).toEqual({ useTypes: ['A100'] });
    expect(log.filter.nodes[0]?.containers[0]?.devices?.[0]).toMatchObject({ uuid: 'GPU-t4-0', outcome: 'CardTypeMismatch', type: 'NVIDIA-Tesla T4' });
    expect(renderSchedulerLogText(log)).toContain('  card 0 CardTypeMismatch: card type NVIDIA-Tesla T4; the pod asks for A100\n');
    // Without the per-card detail, the log carries no card side.
    const plain = await readSchedulerLog(env.deps, { namespace: 'default', name: 'wants-a100', history: false });
    expect(plain.filter.nodes[0]?.containers[0]?.devices).toBeUndefined();
  });
});

describe('otherKindsPhrase', () => {
  it.each<[string, { type: string; count: number }[] | undefined, string | undefined, string]>([
    ['Neuron devices beside NVIDIA cards', [{ type: 'AWSNeuron', count: 2 }], 'NVIDIA', '2 Neuron devices not considered: the pod asks for NVIDIA cards'],
    ['one device', [{ type: 'AWSNeuron', count: 1 }], 'NVIDIA', '1 Neuron device not considered: the pod asks for NVIDIA cards'],
    ['NVIDIA cards beside Neuron devices', [{ type: 'NVIDIA', count: 4 }], 'AWSNeuron', '4 NVIDIA cards not considered: the pod asks for Neuron devices'],
    ['none', [], 'NVIDIA', ''],
    ['not rendered', undefined, 'NVIDIA', ''],
  ])('%s', (_case, others, requestType, expected) => {
    expect(otherKindsPhrase(others, requestType)).toBe(expected);
  });
});

describe('devices of another kind on a node are said, not skipped silently', () => {
  /** One node with an NVIDIA T4 and two AWS Neuron devices. */
  async function mixed() {
    const w = world();
    const env = w.environment();
    const gpu = gpuNode('mix', [card('GPU-mix-0', { type: 'NVIDIA-Tesla T4' })]);
    const trn = neuronNode('mix', 2, 4, 'trn1.2xlarge', { annotations: gpu.metadata.annotations as Record<string, string> });
    const capacity = { ...trn.status.capacity, 'nvidia.com/gpu': '10' };
    await ingestClusterEvents(env.deps, [{ type: 'ADDED', object: { ...trn, status: { capacity, allocatable: capacity } } }]);
    return env;
  }

  it('an NVIDIA pod: the Neuron devices no container tried are counted, and hami-diag says so', async () => {
    const env = await mixed();
    await filterPod(env.deps, filterOf(gpuPod('big', [{ name: 'main', gpu: 1, mem: 100_000 }]), ['mix']));
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'big', detail: 'devices', history: false });
    expect(log.filter.nodes[0]?.otherKinds).toEqual([{ type: 'AWSNeuron', count: 2 }]);
    expect(renderSchedulerLogText(log)).toContain('Cards     mix: 2 Neuron devices not considered: the pod asks for NVIDIA cards\n');
  });

  it('a Neuron pod: the NVIDIA card no container tried is counted in the Neuron words', async () => {
    const env = await mixed();
    await filterPod(env.deps, filterOf(neuronPod('trainer', [{ name: 'main', devices: 1 }]), ['mix']));
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'trainer', detail: 'devices', history: false });
    expect(log.filter.nodes[0]?.containers[0]?.devices?.map((d) => d.uuid)).not.toContain('GPU-mix-0');
    expect(log.filter.nodes[0]?.otherKinds).toEqual([{ type: 'NVIDIA', count: 1 }]);
    expect(renderSchedulerLogText(log)).toContain('Cards     mix: 1 NVIDIA card not considered: the pod asks for Neuron devices\n');
  });

  it('says nothing without the per-card detail', async () => {
    const env = await mixed();
    await filterPod(env.deps, filterOf(gpuPod('big', [{ name: 'main', gpu: 1, mem: 100_000 }]), ['mix']));
    const log = await readSchedulerLog(env.deps, { namespace: 'default', name: 'big', history: false });
    expect(log.filter.nodes[0]?.otherKinds).toBeUndefined();
  });
});
