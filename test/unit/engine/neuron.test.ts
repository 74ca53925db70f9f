/**
 * The AWS Neuron device kind (docs/devices.md, "AWS Neuron"): its parts one by one (registration, requests, runs,
 * masks, annotations) and placements on registered trn1 and inf2 nodes, then the cases where we deliberately differ
 * from HAMi v2.10, each named "fix:" with what HAMi does. HAMi's own test cases, translated row by row, are in
 * neuronParity.test.ts. Fit is exercised through `decide`, as the scheduler runs it.
 */
import fc from 'fast-check';
import { claimAdmits } from '../../../lib/engine/claims';
import { decide } from '../../../lib/engine/decide';
import { coresAreMasks } from '../../../lib/engine/devices';
import { neuron } from '../../../lib/engine/devices/neuron';
import { neuronPodAnnotations } from '../../../lib/engine/devices/neuron/annotations';
import { deviceRun } from '../../../lib/engine/devices/neuron/fit';
import { contiguousCores, coreCount, coreIndexes, usedMask } from '../../../lib/engine/devices/neuron/masks';
import { registerNeuron } from '../../../lib/engine/devices/neuron/registration';
import { neuronRequest } from '../../../lib/engine/devices/neuron/requests';
import { parseNodeRegistration } from '../../../lib/engine/registration';
import { describeQuantityProblems, podRequestProblems } from '../../../lib/engine/requests';
import { collapsePodUsage } from '../../../lib/engine/usage';
import { type ContainerRequest, type DeviceInfo, type DeviceUsage, type NodeLike } from '../../../lib/engine/types';
import { AWS_NEURON } from '../../../lib/engine/devices/neuron/names';
import { type Decision } from '../../../lib/engine/decision';
import { config, input, NEURON, NEURON_CORES, neuronDevice, neuronNode, neuronState, node, pod, type Limits } from './fixtures';
import { card, gpuNode } from '../../support/cluster';

const CORES = NEURON_CORES;

function fit(decision: Decision): Extract<Decision, { kind: 'fit' }> {
  if (decision.kind !== 'fit') throw new Error(`expected a fit, got ${JSON.stringify(decision.kind === 'noFit' ? decision.failedNodes : decision)}`);
  return decision;
}
function reasonOf(decision: Decision, name: string): string | undefined {
  if (decision.kind !== 'noFit') throw new Error(`expected no fit, got ${decision.kind}`);
  return decision.failedNodes[name];
}

const device = neuronDevice;

const devicesOf = (d: Decision): string[] => fit(d).devices.flat().map((x) => x.uuid);
const masksOf = (d: Decision): number[] => fit(d).devices.flat().map((x) => x.usedcores);
const indexesOf = (d: Decision): number[] => fit(d).devices.flat().map((x) => x.idx);

describe('registration from the Node (HAMi Test_GetNodeDevices)', () => {
  it('fix (HAMi #2762): cores per device come from each node, not from the first node registered', () => {
    const inf1 = registerNeuron(neuronNode('a', 4, 16, 'inf1.6xlarge'), config());
    const trn2 = registerNeuron(neuronNode('b', 16, 128, 'trn2.48xlarge'), config());
    const inf2 = registerNeuron(neuronNode('c', 12, 24, 'inf2.48xlarge'), config());
    const geometry = (found: typeof inf1) => (found !== undefined && 'devices' in found ? found.devices.map((d) => [d.count, d.devcore]) : found);
    expect(geometry(inf1)).toEqual(Array(4).fill([4, 15]));
    expect(geometry(trn2)).toEqual(Array(16).fill([8, 255]));
    expect(geometry(inf2)).toEqual(Array(12).fill([2, 3]));
  });

  it.each<[string, NodeLike, ReturnType<typeof registerNeuron>]>([
    ['no Neuron resource: nothing to say', { metadata: { name: 'n' }, status: { capacity: { cpu: '8' } } }, undefined],
    ['zero devices: nothing to say', neuronNode('n', 0, 0), undefined],
    ['allocatable when the node reports no capacity', { metadata: { name: 'n' }, status: { allocatable: { [NEURON]: '1', [CORES]: '2' } } }, { devices: [device('n-AWSNeuron-0', 0, { nodeType: '' })] }],
    ['cores missing', { metadata: { name: 'n' }, status: { capacity: { [NEURON]: '2' } } }, { reason: 'capacity aws.amazon.com/neuroncore is missing: the cores per aws.amazon.com/neuron device are unknown' }],
    ['cores not divisible by devices', neuronNode('n', 2, 3), { reason: 'capacity aws.amazon.com/neuroncore 3 is not divisible by capacity aws.amazon.com/neuron 2' }],
    ['a count that is no number', { metadata: { name: 'n' }, status: { capacity: { [NEURON]: '1.5', [CORES]: '2' } } }, { reason: 'capacity aws.amazon.com/neuron "1.5" is not a number of devices' }],
    ['more cores per device than a mask holds', neuronNode('n', 1, 32), { reason: '32 cores per aws.amazon.com/neuron device is more than a core mask holds (31)' }],
    ['more devices than an instance has', neuronNode('n', 100000, 200000), { reason: 'capacity aws.amazon.com/neuron 100000 is more devices than a Neuron instance has (at most 256)' }],
  ])('%s', (_label, nodeObject, expected) => {
    expect(registerNeuron(nodeObject, config())).toEqual(expected);
  });

  it('reads the configured resource names', () => {
    const named = config({ neuronResourceName: 'example.com/chip', neuronCoreResourceName: 'example.com/core' });
    const found = registerNeuron({ metadata: { name: 'n' }, status: { capacity: { 'example.com/chip': '2', 'example.com/core': '4' } } }, named);
    expect(found !== undefined && 'devices' in found ? found.devices.map((d) => d.id) : found).toEqual(['n-AWSNeuron-0', 'n-AWSNeuron-1']);
    expect(registerNeuron(neuronNode('n', 2, 4), named)).toBeUndefined();
  });

  it('a node whose NVIDIA card takes the id of one of its Neuron devices is unregistered (they would share one booking)', () => {
    const both = gpuNode('trn', [card('trn-AWSNeuron-0')]);
    const withNeuron = { ...both, metadata: { ...both.metadata, labels: { 'node.kubernetes.io/instance-type': 'trn1.2xlarge' } }, status: { ...both.status, capacity: { [NEURON]: '1', [CORES]: '2' } } };
    expect(parseNodeRegistration(withNeuron, config())).toEqual({ registered: false, reason: 'device "trn-AWSNeuron-0" is registered by two device kinds' });
    // Another id: both kinds side by side.
    const apart = { ...withNeuron, metadata: { ...withNeuron.metadata, annotations: gpuNode('trn', [card('GPU-0')]).metadata.annotations } };
    const registration = parseNodeRegistration(apart, config());
    expect(registration.registered && registration.devices.map((d) => d.id)).toEqual(['GPU-0', 'trn-AWSNeuron-0']);
  });

  it('a node with Neuron capacity and no HAMi NVIDIA annotation is registered with its Neuron devices only', () => {
    const registration = parseNodeRegistration(neuronNode('trn', 2, 4), config());
    expect(registration.registered && registration.devices.map((d) => [d.id, d.vendor])).toEqual([
      ['trn-AWSNeuron-0', 'AWSNeuron'],
      ['trn-AWSNeuron-1', 'AWSNeuron'],
    ]);
  });
});

describe('requests (HAMi Test_GenerateResourceRequests, after v2.10)', () => {
  const container = (limits: Limits, requests: Limits = {}) => ({ name: 'c', resources: { limits, requests } });
  it.each<[string, ReturnType<typeof container>, ContainerRequest | undefined]>([
    ['HAMi "allocate neuron device": 1 device, cores 0 = the whole device', container({ [NEURON]: 1 }), { nums: 1, type: 'AWSNeuron', memreq: 0, mempercentagereq: 0, coresreq: 0 }],
    ['HAMi "allocate neuron core": 2 cores, split per node by Fit', container({ [CORES]: 2 }), { nums: 1, type: 'AWSNeuron', memreq: 0, mempercentagereq: 0, coresreq: 2 }],
    ['HAMi "set request-only neuron number": read from requests too', container({}, { [NEURON]: 2 }), { nums: 2, type: 'AWSNeuron', memreq: 0, mempercentagereq: 0, coresreq: 0 }],
    ['both asked: the device count wins, as in HAMi', container({ [NEURON]: 1, [CORES]: 1 }), { nums: 1, type: 'AWSNeuron', memreq: 0, mempercentagereq: 0, coresreq: 0 }],
    ['fix (HAMi v2.10 rejects an odd core count above one): 3 cores are a request', container({ [CORES]: 3 }), { nums: 1, type: 'AWSNeuron', memreq: 0, mempercentagereq: 0, coresreq: 3 }],
    ['zero devices ask for nothing', container({ [NEURON]: 0 }), undefined],
    ['zero cores ask for nothing', container({ [CORES]: '0' }), undefined],
    ['no Neuron resource', container({ 'nvidia.com/gpu': 1 }), undefined],
  ])('%s', (_label, c, expected) => {
    expect(neuronRequest(c, config())).toEqual(expected);
  });

  it.each([
    ['HAMi "reject negative neuron core count"', { [CORES]: '-1' }, `${CORES} "-1" is negative`],
    ['HAMi "reject neuron core count that overflows"', { [CORES]: '4294967296' }, `${CORES} "4294967296" is larger than 2147483647 (HAMi computes it in int32)`],
    ['HAMi "reject request-only neuron number that overflows device count"', { [NEURON]: '2147483648' }, `${NEURON} "2147483648" is larger than 2147483647 (HAMi computes it in int32)`],
    ['a fraction', { [NEURON]: '500m' }, `${NEURON} "500m" is not a whole number`],
  ])('%s: the pod is refused with the quantity rules', (_label, limits, problem) => {
    const p = pod([limits]);
    expect(describeQuantityProblems(podRequestProblems(p, config()))).toBe(`invalid GPU resource request: container "c0": ${problem}`);
    const d = decide(input(p, [neuronState(neuronNode('trn', 16, 32))]));
    expect(d).toEqual({ kind: 'error', message: `invalid GPU resource request: container "c0": ${problem}` });
  });

  it('a pod asking NVIDIA and Neuron devices is refused: one kind per pod', () => {
    const p = pod([{ 'nvidia.com/gpu': 1 }, { [NEURON]: 1 }]);
    expect(decide(input(p, [neuronState(neuronNode('trn', 16, 32))]))).toEqual({
      kind: 'error',
      message: 'invalid GPU resource request: container "c1": nvidia.com/gpu and aws.amazon.com/neuron "both" ask for two kinds of device in one pod; a pod may use one kind',
    });
  });
});

describe('device runs (HAMi Test_graphSelect)', () => {
  const sixteen = (nodeType: string) => Array.from({ length: 16 }, (_, i) => device(`d${i}`, i, { nodeType }));
  const usableExcept = (busy: number[]) => Array.from({ length: 16 }, (_, i) => !busy.includes(i));
  it.each<[string, string, number[], number, number[] | undefined]>([
    ['HAMi "full allocate": inf2, 16 of 16', 'inf2', [], 16, Array.from({ length: 16 }, (_, i) => i)],
    ['HAMi "8 allocate fail": trn, devices 7 and 13 busy', 'trn', [7, 13], 8, undefined],
    ['HAMi "8 allocate success": trn, device 7 busy', 'trn', [7], 8, [8, 9, 10, 11, 12, 13, 14, 15]],
    ['HAMi "8 allocate": inf, devices 5 and 14 busy: any contiguous run', 'inf', [5, 14], 8, [6, 7, 8, 9, 10, 11, 12, 13]],
    ['trn, 4 devices, device 1 busy: the next aligned group', 'trn1.32xlarge', [1], 4, [4, 5, 6, 7]],
    ['trn, 4 devices, device 4 busy: 0-3 (runs start at multiples of 4)', 'trn1.32xlarge', [4], 4, [0, 1, 2, 3]],
    ['trn, 2 devices: not a group AWS allows', 'trn1.32xlarge', [], 2, undefined],
    ['trn, 3 devices: not a group AWS allows', 'trn1.32xlarge', [], 3, undefined],
    ['no instance type: the Trainium rules, as HAMi', '', [], 2, undefined],
    ['inf2, 3 devices, devices 0 and 4 busy: 1-3', 'inf2.48xlarge', [0, 4], 3, [1, 2, 3]],
  ])('%s', (_label, nodeType, busy, count, expected) => {
    expect(deviceRun(sixteen(nodeType), usableExcept(busy), count, nodeType)).toEqual(expected);
  });

  it('a run needs consecutive device indexes, not only neighbouring list entries', () => {
    const gapped = [device('d0', 0, { nodeType: 'inf2' }), device('d1', 1, { nodeType: 'inf2' }), device('d3', 3, { nodeType: 'inf2' })];
    expect(deviceRun(gapped, [true, true, true], 3, 'inf2')).toBeUndefined();
    expect(deviceRun(gapped, [true, true, true], 2, 'inf2')).toEqual([0, 1]);
  });
});

describe('core masks', () => {
  it.each<[string, number, number, number, number | undefined]>([
    ['HAMi addCoreUsage: unused 2-core device, 2 cores -> mask 3', 3, 0, 2, 3],
    ['HAMi addCoreUsage: unused 2-core device, 1 core -> mask 1', 3, 0, 1, 1],
    ['HAMi addCoreUsage: core 0 used, 1 core -> the other core (mask 2)', 3, 1, 1, 2],
    ['core 1 used, 1 core -> core 0 (mask 1)', 3, 2, 1, 1],
    ['core 0 used, 2 cores -> none', 3, 1, 2, undefined],
    ['4-core device, core 0 used, 2 cores -> cores 1-2 (mask 6)', 15, 1, 2, 6],
    ['fix (contiguous core range): 4-core device, cores 0 and 2 used, 2 cores -> none (HAMi v2.10 gives cores 1 and 3)', 15, 5, 2, undefined],
    ['8-core device, cores 0-3 used, 4 cores -> cores 4-7', 255, 15, 4, 240],
  ])('%s', (_label, deviceMask, used, count, expected) => {
    expect(contiguousCores(deviceMask, used, count)).toBe(expected);
  });

  it.each<[string, number, number, number]>([
    ['disjoint masks added up are their OR', 1 + 2, 3, 3],
    ['nothing used', 0, 3, 0],
    ['a sum beyond the device (overlapping bookings) reads as every core used', 1 + 3, 3, 3],
    ['bits outside the device read as every core used', 4, 3, 3],
  ])('used cores: %s', (_label, sum, deviceMask, expected) => {
    expect(usedMask(sum, deviceMask)).toBe(expected);
  });

  it('HAMi Test_countMaskAvailable: 3 -> 2, 2 -> 1, 1 -> 1, 0 -> 0; indexes ascending', () => {
    expect([3, 2, 1, 0].map(coreCount)).toEqual([2, 1, 1, 0]);
    expect(coreIndexes(0b1010)).toEqual([1, 3]);
  });

  it('one pod\'s init and app containers on one device book the OR of their masks (an amount would book the larger one)', () => {
    const booked = collapsePodUsage(
      [[{ idx: 0, uuid: 'd0', type: AWS_NEURON, usedmem: 0, usedcores: 1 }], [{ idx: 0, uuid: 'd0', type: AWS_NEURON, usedmem: 0, usedcores: 2 }]],
      1,
      false,
      coresAreMasks,
    );
    expect(booked).toEqual([{ idx: 0, uuid: 'd0', type: AWS_NEURON, usedmem: 0, usedcores: 3, slots: 1 }]);
    const nvidia = collapsePodUsage([[{ idx: 0, uuid: 'g', type: 'NVIDIA', usedmem: 0, usedcores: 10 }], [{ idx: 0, uuid: 'g', type: 'NVIDIA', usedmem: 0, usedcores: 20 }]], 1, false, coresAreMasks);
    expect(nvidia[0]?.usedcores).toBe(20);
  });
});

describe('Fit: device selection and partly used devices', () => {
  const decideOn = (devices: DeviceInfo[], limits: Limits, usage: Record<string, DeviceUsage> = {}, annotations: Record<string, string> = {}) =>
    decide(input(pod([limits], { annotations }), [node('n1', devices, { usage })]));

  it('an empty uuid selection is no constraint', () => {
    expect(reasonOf(decideOn([device('dev-0', 0, { health: false })], { [CORES]: 1 }, {}, { 'aws.amazon.com/use-neuron-uuid': ' ' }), 'n1')).toBe('1/1 CardNotHealth');
  });

  it('the uuid selection picks the device named', () => {
    const d = decideOn([device('dev-0', 0), device('dev-1', 1)], { [CORES]: 1 }, {}, { 'aws.amazon.com/use-neuron-uuid': 'dev-0, other' });
    expect(devicesOf(d)).toEqual(['dev-0']);
  });

  it('a whole device is not given on a device another pod uses part of', () => {
    const d = decideOn([device('dev-0', 0)], { [NEURON]: 1 }, { 'dev-0': { used: 1, usedmem: 0, usedcores: 2 } });
    expect(reasonOf(d, 'n1')).toBe('1/1 CardInsufficientCore');
  });

  it('partly used device: the free core is given (core 1 of device 0 -> mask 1 given on core 0)', () => {
    const d = decideOn([device('dev-0', 0)], { [CORES]: 1 }, { 'dev-0': { used: 1, usedmem: 0, usedcores: 2 } });
    expect(masksOf(d)).toEqual([1]);
  });

  it('a node whose Neuron devices Fit does not see (no type holding AWSNeuron) has none of the kind: NodeInsufficientDevice', () => {
    expect(reasonOf(decideOn([device('dev-0', 0, { type: 'Other' })], { [CORES]: 1 }), 'n1')).toBe('NodeInsufficientDevice');
  });
});

describe('Fit on registered trn1 and inf2 nodes', () => {
  const trn1 = () => neuronNode('trn', 16, 32, 'trn1.32xlarge');
  const inf2 = () => neuronNode('inf', 12, 24, 'inf2.48xlarge');
  const busy = (indexes: number[], use: Partial<DeviceUsage> = { used: 2, usedcores: 3 }) => Object.fromEntries(indexes.map((i) => [i, use]));

  it.each<[string, NodeLike, Record<number, Partial<DeviceUsage>>, Limits, number[], number[]]>([
    ['trn1, 4 devices: the first aligned free group', trn1(), busy([1]), { [NEURON]: 4 }, [4, 5, 6, 7], [3, 3, 3, 3]],
    ['trn1, 16 devices: the whole node', trn1(), {}, { [NEURON]: 16 }, Array.from({ length: 16 }, (_, i) => i), Array(16).fill(3)],
    ['trn1, 8 cores span 4 whole devices, aligned', trn1(), busy([0]), { [CORES]: 8 }, [4, 5, 6, 7], [3, 3, 3, 3]],
    ['inf2, 3 devices: any contiguous run', inf2(), busy([0, 4]), { [NEURON]: 3 }, [1, 2, 3], [3, 3, 3]],
    ['inf2, 3 cores: one device and core 0 of the next (one contiguous core range)', inf2(), busy([0]), { [CORES]: 3 }, [1, 2], [3, 1]],
    ['inf2, 1 core: the last device first, as HAMi tries single devices', inf2(), {}, { [CORES]: 1 }, [11], [1]],
    ['inf2, 2 cores: a whole device', inf2(), busy([11], { used: 1, usedcores: 1 }), { [CORES]: 2 }, [10], [3]],
  ])('%s', (_label, nodeObject, usage, limits, indexes, masks) => {
    const d = decide(input(pod([limits]), [neuronState(nodeObject, usage)]));
    expect(indexesOf(d)).toEqual(indexes);
    expect(masksOf(d)).toEqual(masks);
    expect(fit(d).bookWholeNode).toBe(true);
  });

  it.each<[string, NodeLike, Record<number, Partial<DeviceUsage>>, Limits, string]>([
    ['inf2, 13 devices on a 12-device node', inf2(), {}, { [NEURON]: 13 }, 'NodeInsufficientDevice'],
    ['inf2, 26 cores need 13 devices of 2 cores', inf2(), {}, { [CORES]: 26 }, 'NodeInsufficientDevice'],
    ['inf2, 1 core with every core booked', inf2(), busy(Array.from({ length: 12 }, (_, i) => i), { used: 1, usedcores: 3 }), { [CORES]: 1 }, '12/12 CardInsufficientCore'],
  ])('%s', (_label, nodeObject, usage, limits, reason) => {
    expect(reasonOf(decide(input(pod([limits]), [neuronState(nodeObject, usage)])), nodeObject.metadata.name)).toBe(reason);
  });

  it('fix (HAMi #2762): one 4-core request is one device of a 4-core node and two devices of a 2-core node', () => {
    const inf1 = neuronState(neuronNode('inf1', 4, 16, 'inf1.6xlarge'));
    const inf2node = neuronState(neuronNode('inf2', 12, 24, 'inf2.48xlarge'));
    expect(masksOf(decide(input(pod([{ [CORES]: 4 }]), [inf1])))).toEqual([15]);
    expect(masksOf(decide(input(pod([{ [CORES]: 4 }]), [inf2node])))).toEqual([3, 3]);
  });

  it('fix (contiguity on device indexes): devices listed out of index order still form runs by index', () => {
    // HAMi v2.10 takes runs of positions in a list sorted by score; here the list is reversed, device 7 busy.
    const devices = Array.from({ length: 16 }, (_, i) => device(`t-${15 - i}`, 15 - i, { nodeType: 'trn1.32xlarge' }));
    const d = decide(input(pod([{ [NEURON]: 8 }]), [node('t', devices, { usage: { 't-7': { used: 2, usedmem: 0, usedcores: 3 } } })]));
    expect(indexesOf(d)).toEqual([8, 9, 10, 11, 12, 13, 14, 15]);
  });

  it.each<[string, number, number]>([
    ['31 cores, three whole-device masks (wrapping in int32 to a mask with core 1 free)', 31, 3 * 0x7fffffff],
    ['8 cores, masks adding up to 2^32 (wrapping in int32 to no core used)', 8, 2 ** 32],
  ])('fix (HAMi adds masks in int32, wrapping): %s read as every core used', (_label, cores, sum) => {
    const d = decide(input(pod([{ [CORES]: 1 }]), [neuronState(neuronNode('n', 1, cores, 'trn9.example'), { 0: { used: 3, usedcores: sum } })]));
    expect(reasonOf(d, 'n')).toBe('1/1 CardInsufficientCore');
  });

  it('fix (contiguous core range): a 4-core device with cores 0 and 2 booked does not give 2 cores', () => {
    const d = decide(input(pod([{ [CORES]: 2 }]), [neuronState(neuronNode('inf1', 1, 4, 'inf1.xlarge'), { 0: { used: 2, usedcores: 5 } })]));
    expect(reasonOf(d, 'inf1')).toBe('1/1 CardInsufficientCore');
  });

  it('two containers of one pod share a device core by core; a third core-sized container goes to the next device', () => {
    const d = decide(input(pod([{ [CORES]: 1 }, { [CORES]: 1 }, { [CORES]: 1 }]), [neuronState(neuronNode('inf', 2, 4, 'inf2.xlarge'))]));
    expect(fit(d).devices.map((c) => c.map((x) => [x.idx, x.usedcores]))).toEqual([[[1, 1]], [[1, 2]], [[0, 1]]]);
  });

  it('every device tried is in the evidence, with its core mask, tenants and the cores asked', () => {
    const d = decide(input(pod([{ [NEURON]: 8 }]), [neuronState(trn1(), busy([7, 13]))]));
    if (d.kind === 'error') throw new Error(d.message);
    const cards = d.evidence[0]?.containers[0]?.cards ?? [];
    expect(cards).toHaveLength(16);
    expect(cards[7]).toEqual({
      uuid: 'trn-AWSNeuron-7',
      index: 7,
      outcome: 'CardTimeSlicingExhausted',
      totalMem: 0,
      usedMem: 0,
      requestedMem: 0,
      freeMem: 0,
      totalCores: 3,
      usedCores: 3,
      requestedCores: 2,
      slots: 2,
      usedSlots: 2,
    });
    expect(cards.filter((c) => c.outcome === 'NumaNotFit')).toHaveLength(14);
  });

  it('Neuron devices are invisible to NVIDIA requests and NVIDIA cards to Neuron requests: a node with none of the kind fails with NodeInsufficientDevice, as in HAMi', () => {
    const trn = neuronState(trn1());
    expect(reasonOf(decide(input(pod([{ 'nvidia.com/gpu': 1 }]), [trn])), 'trn')).toBe('NodeInsufficientDevice');
    const gpuNode = node('gpu', [{ id: 'GPU-0', index: 0, count: 10, devmem: 8192, devcore: 100, type: 'NVIDIA-A100', numa: 0, mode: 'hami-core', health: true }]);
    expect(reasonOf(decide(input(pod([{ [NEURON]: 1 }]), [gpuNode])), 'gpu')).toBe('NodeInsufficientDevice');
  });

  it('never takes the real-time check: no readings, never refused', () => {
    const state = { ...neuronState(inf2()), realtime: { timeMs: 1_700_000_000_000, devices: {} } };
    const d = decide(input(pod([{ [CORES]: 1 }], { annotations: { 'hami.io/enable-realtime-check': 'true' } }), [state], { config: config({ realtime: { enabled: true, mode: 'strict', marginMiB: 100, maxAgeMs: 60_000 } }) }));
    expect(fit(d).realtime).toEqual([]);
  });
});

describe('pod annotations', () => {
  const nowMs = 1_700_000_000_123;
  const state = neuronState(neuronNode('node-1', 12, 24, 'inf2.48xlarge'));
  const cores = (c: number): ContainerRequest => ({ nums: 1, type: AWS_NEURON, memreq: 0, mempercentagereq: 0, coresreq: c });
  const dev = (idx: number, usedcores: number) => ({ idx, uuid: `node-1-AWSNeuron-${idx}`, type: AWS_NEURON, usedmem: 0, usedcores });
  const common = { NEURON_ALLOC_TIME: '1700000000123000000', NEURON_ALLOCATED: 'false', 'aws.amazon.com/predicate-node': 'node-1' };
  const annotate = (devices: ReturnType<typeof dev>[][], requests: (ContainerRequest | undefined)[]) => neuronPodAnnotations(devices, state, { nowMs, nodeName: 'node-1', requests, config: config() });

  it.each<[string, ReturnType<typeof dev>[][], (ContainerRequest | undefined)[], Record<string, string>]>([
    [
      'core 1 of device 3 is core 7 of the node (2 cores per device)',
      [[dev(3, 2)]],
      [cores(1)],
      { 'hami.io/aws-neuron-devices-allocated': 'node-1-AWSNeuron-3,AWSNeuron,0,2:;', AWS_NEURON_IDS: '7', NEURON_RESOURCE_TYPE: 'aws.amazon.com/neuroncore', ...common },
    ],
    [
      'several containers: one list for the pod, in container order',
      [[dev(4, 1)], [dev(4, 2)], [dev(5, 3)]],
      [cores(1), cores(1), cores(2)],
      {
        'hami.io/aws-neuron-devices-allocated': 'node-1-AWSNeuron-4,AWSNeuron,0,1:;node-1-AWSNeuron-4,AWSNeuron,0,2:;node-1-AWSNeuron-5,AWSNeuron,0,3:;',
        AWS_NEURON_IDS: '8,9,10,11',
        NEURON_RESOURCE_TYPE: 'aws.amazon.com/neuroncore',
        ...common,
      },
    ],
  ])('%s', (_label, devices, requests, expected) => {
    expect(annotate(devices, requests)).toEqual(expected);
  });

  it('fix (HAMi v2.10 reads limits only): a device request in requests is written as device indexes', () => {
    const p = pod([]);
    const requestOnly = { ...p, spec: { containers: [{ name: 'c0', resources: { requests: { [NEURON]: '1' } } }] } };
    const d = decide(input(requestOnly, [state]));
    expect(fit(d).podAnnotations).toMatchObject({ AWS_NEURON_IDS: '11' });
    expect(fit(d).podAnnotations).not.toHaveProperty('NEURON_RESOURCE_TYPE');
  });

  it('the decision carries them, with the configured core resource name', () => {
    const named = config({ neuronCoreResourceName: 'example.com/core' });
    const d = decide({ ...input(pod([{ 'example.com/core': 1 }]), [state], { config: named, nowMs }) });
    expect(fit(d).podAnnotations).toEqual({
      'hami.io/aws-neuron-devices-allocated': 'node-1-AWSNeuron-11,AWSNeuron,0,1:;',
      AWS_NEURON_IDS: '22',
      NEURON_RESOURCE_TYPE: 'example.com/core',
      ...common,
    });
  });
});

describe('the kind', () => {
  it('binds without HAMi\'s node lock and books by position (under the node\'s version)', () => {
    expect(neuron.locksNode).toBe(false);
    expect(neuron.positional(device('d', 0))).toBe(true);
    expect(neuron.coreMask).toBe(true);
    expect(neuron.allocatedAnnotation).toBe('hami.io/aws-neuron-devices-allocated');
  });
});

describe('property: Neuron placements', () => {
  const geometry = fc.record({
    instanceType: fc.constantFrom('trn1.32xlarge', 'trn2.48xlarge', 'inf2.48xlarge', 'inf1.6xlarge', ''),
    devices: fc.integer({ min: 1, max: 16 }),
    coresPerDevice: fc.constantFrom(1, 2, 4, 8),
  });
  // Per device: the cores booked (a mask within the device's) and how many pods hold them.
  const nodeArb = geometry.chain((g) =>
    fc.tuple(fc.constant(g), fc.array(
        fc.tuple(
          // Most devices idle, so that runs of several devices are found as often as refused.
          fc.oneof({ arbitrary: fc.constant(0), weight: 3 }, { arbitrary: fc.integer({ min: 0, max: (1 << g.coresPerDevice) - 1 }), weight: 1 }),
          fc.integer({ min: 0, max: 8 }),
        ),
        { minLength: g.devices, maxLength: g.devices },
      ),
    ),
  );
  const containerArb: fc.Arbitrary<Limits> = fc.oneof(fc.record({ [NEURON]: fc.integer({ min: 1, max: 8 }) }), fc.record({ [CORES]: fc.integer({ min: 1, max: 20 }) }));
  /** A non-empty run of adjacent bits. */
  const isRun = (mask: number) => {
    const shifted = mask / (mask & -mask);
    return mask > 0 && (shifted & (shifted + 1)) === 0;
  };

  it('gives free, contiguous cores; runs of whole free devices by index under AWS\'s rules; exactly what was asked; claims the store admits', () => {
    // The checks below run on fits only: the run must have met some, of devices and of cores, or it proved nothing.
    const fitted = { devices: 0, cores: 0 };
    fc.assert(
      fc.property(fc.array(nodeArb, { minLength: 1, maxLength: 3 }), fc.array(containerArb, { minLength: 1, maxLength: 3 }), fc.boolean(), (specs, app, mutex) => {
        const states = specs.map(([g, usage], n) => {
          const nodeObject = neuronNode(`n${n}`, g.devices, g.devices * g.coresPerDevice, g.instanceType);
          const byIndex: Record<number, Partial<DeviceUsage>> = {};
          usage.forEach(([mask, pods], i) => {
            if (mask !== 0) byIndex[i] = { usedcores: mask, used: Math.max(1, Math.min(pods, coreCount(mask))) };
          });
          return neuronState(nodeObject, byIndex);
        });
        const p = pod(app, mutex ? { annotations: { 'hami.io/gpu-scheduler-policy': 'mutex' } } : {});
        const decision = decide(input(p, states));
        if (decision.kind !== 'fit') return;
        fitted[app.some((limits) => limits[NEURON] !== undefined) ? 'devices' : 'cores'] += 1;
        const chosen = states.find((st) => st.name === decision.node)!;
        if (!chosen.registration.registered) throw new Error('chosen node is not registered');
        const devices = new Map(chosen.registration.devices.map((d) => [d.id, d]));
        const nodeType = chosen.registration.devices[0]!.nodeType ?? '';
        const taken = new Map<string, number>();
        let ids = 0;
        decision.devices.forEach((container, c) => {
          const limits = app[c]!;
          const whole = limits[NEURON] !== undefined;
          for (const given of container) {
            const device = devices.get(given.uuid)!;
            const before = (chosen.usage[given.uuid]?.usedcores ?? 0) | (taken.get(given.uuid) ?? 0);
            expect(given.usedcores & ~device.devcore).toBe(0);
            expect(given.usedcores & before).toBe(0);
            expect(isRun(given.usedcores)).toBe(true);
            // A device of a run of several is entirely free; a device request takes every core; mutex takes unused devices.
            expect(container.length === 1 || before === 0).toBe(true);
            expect(!whole || given.usedcores === device.devcore).toBe(true);
            expect(!mutex || (chosen.usage[given.uuid]?.used ?? 0) === 0).toBe(true);
            taken.set(given.uuid, before | given.usedcores);
            ids += whole ? 1 : coreCount(given.usedcores);
          }
          const indexes = container.map((d) => d.idx);
          expect(indexes.every((idx, k) => idx === indexes[0]! + k)).toBe(true);
          const trainium = !nodeType.includes('inf') && !nodeType.includes('Inf');
          expect(container.length === 1 || !trainium || ([4, 8, 16].includes(container.length) && indexes[0]! % container.length === 0)).toBe(true);
          expect(whole ? container.length : container.reduce((sum, d) => sum + coreCount(d.usedcores), 0)).toBe(Number(whole ? limits[NEURON] : limits[CORES]));
        });
        expect(decision.bookWholeNode).toBe(true);
        expect(decision.podAnnotations.AWS_NEURON_IDS?.split(',')).toHaveLength(ids);
        for (const claim of decision.claims) expect(claimAdmits(claim, chosen.usage[claim.uuid] ?? { used: 0, usedmem: 0, usedcores: 0 })).toBe(true);
      }),
      { numRuns: 300 },
    );
    expect(fitted.devices).toBeGreaterThan(0);
    expect(fitted.cores).toBeGreaterThan(0);
  });
});
