/**
 * AWS Neuron parity with HAMi v2.10 (docs/devices.md, "AWS Neuron"; docs/hami-parity.md §10): every case of HAMi's
 * pkg/device/awsneuron/device_test.go that places devices (Test_GetNodeDevices, Test_splitCoreRequest,
 * Test_countMaskAvailable, Test_graphSelect, TestDevices_Fit, Test_PatchAnnotations) and the count check of
 * pkg/scheduler/score.go's `fitInDevices` (TestFitInDevices, applied to Neuron requests), each row named after the
 * HAMi case it comes from, translated into our terms (facts only) and run through `decide` as the scheduler runs it.
 * Rows assert the exact reason text (HAMi's `GenReason`, "<count>/<devices> <Reason>"), the devices chosen and the
 * core indexes written. Rows starting "differs:" are the deliberate, documented differences (docs/devices.md, "HAMi's
 * behaviour we deliberately fix"), with what HAMi v2.10 answers.
 */
import { decide } from '../../../lib/engine/decide';
import { neuronPodAnnotations } from '../../../lib/engine/devices/neuron/annotations';
import { coreCount } from '../../../lib/engine/devices/neuron/masks';
import { registerNeuron } from '../../../lib/engine/devices/neuron/registration';
import { parseNodeRegistration } from '../../../lib/engine/registration';
import type { ContainerRequest, DeviceInfo, DeviceUsage, NodeLike } from '../../../lib/engine/types';
import { AWS_NEURON } from '../../../lib/engine/devices/neuron/names';
import type { Decision } from '../../../lib/engine/decision';
import { config, input, NEURON, NEURON_CORES, neuronDevice, neuronNode, neuronState, node, pod, type Limits } from './fixtures';

function fitOf(decision: Decision): Extract<Decision, { kind: 'fit' }> {
  if (decision.kind !== 'fit') throw new Error(`expected a fit, got ${JSON.stringify(decision.kind === 'noFit' ? decision.failedNodes : decision)}`);
  return decision;
}
function reasonOf(decision: Decision, name: string): string | undefined {
  if (decision.kind !== 'noFit') throw new Error(`expected no fit, got ${JSON.stringify(decision)}`);
  return decision.failedNodes[name];
}
const uuidsOf = (d: Decision): string[] => fitOf(d).devices.flat().map((x) => x.uuid);
const indexesOf = (d: Decision): number[] => fitOf(d).devices.flat().map((x) => x.idx);
const masksOf = (d: Decision): number[] => fitOf(d).devices.flat().map((x) => x.usedcores);
const idsOf = (d: Decision): string | undefined => fitOf(d).podAnnotations.AWS_NEURON_IDS;
const range = (from: number, count: number): number[] => Array.from({ length: count }, (_, i) => from + i);

/** One pod of one container on the given nodes. */
const decideOne = (limits: Limits, nodes: Parameters<typeof input>[1], annotations: Record<string, string> = {}) => decide(input(pod([limits], { annotations }), nodes));

describe('HAMi TestDevices_Fit (Fit on the devices listed; rows run on a node holding exactly those devices)', () => {
  /** makeAWSDeviceUsage(id, index, used, count, totalcore, usedcores, "trn", health): the usage goes to the ledger. */
  const onNode = (devices: DeviceInfo[], usage: Record<string, Partial<DeviceUsage>> = {}) =>
    node('n1', devices, { usage: Object.fromEntries(Object.entries(usage).map(([id, u]) => [id, { used: 0, usedmem: 0, usedcores: 0, ...u }])) });

  it('"fit success": dev-0 (2 tenants) and dev-1 (12 tenants), both index 0, 2 cores asked: dev-1, the last listed, mask 3', () => {
    const devices = [neuronDevice('dev-0', 0), neuronDevice('dev-1', 0, { count: 12 })];
    // Nums 1, Coresreq 2 on 2-core devices: `neuroncore: 2`, or one whole device.
    for (const limits of [{ [NEURON_CORES]: 2 }, { [NEURON]: 1 }] as Limits[]) {
      const d = decideOne(limits, [onNode(devices)]);
      expect(uuidsOf(d)).toEqual(['dev-1']);
      expect(masksOf(d)).toEqual([3]);
    }
  });

  it.each<[string, DeviceInfo[], Record<string, Partial<DeviceUsage>>, Limits, Record<string, string>, string]>([
    [
      '"fit fail: core not enough": core 0 booked (used 0, usedcores 1), 2 cores asked',
      [neuronDevice('dev-0', 0)],
      { 'dev-0': { usedcores: 1 } },
      { [NEURON_CORES]: 2 },
      {},
      '1/1 CardInsufficientCore',
    ],
    ['"fit fail: user assign use uuid mismatch"', [neuronDevice('dev-1', 0)], {}, { [NEURON_CORES]: 2 }, { 'aws.amazon.com/use-neuron-uuid': 'dev-0' }, '1/1 CardUuidMismatch'],
    ['"fit fail: user assign no use uuid match"', [neuronDevice('dev-0', 0)], {}, { [NEURON_CORES]: 2 }, { 'aws.amazon.com/nouse-neuron-uuid': 'dev-0' }, '1/1 CardUuidMismatch'],
    ['"fit fail: card overused": 2 of 2 tenants', [neuronDevice('dev-0', 0)], { 'dev-0': { used: 2 } }, { [NEURON_CORES]: 2 }, {}, '1/1 CardTimeSlicingExhausted'],
    [
      '"mutex policy rejects used device": 1 tenant holding no core',
      [neuronDevice('dev-0', 0)],
      { 'dev-0': { used: 1 } },
      { [NEURON_CORES]: 2 },
      { 'hami.io/gpu-scheduler-policy': 'mutex' },
      '1/1 ExclusiveDeviceAllocateConflict',
    ],
    ['"fit fail: CardNotHealth"', [neuronDevice('dev-0', 0, { health: false })], {}, { [NEURON_CORES]: 2 }, {}, '1/1 CardNotHealth'],
    [
      '"fit fail: type mismatch": a device whose type holds the request\'s only ignoring case (HAMi\'s node filter lowers case, Fit does not)',
      [neuronDevice('dev-0', 0, { type: 'awsneuron' })],
      {},
      { [NEURON_CORES]: 2 },
      {},
      '1/1 CardTypeMismatch',
    ],
    ['"fit fail: NumaNotFit with multiple devices": trn, 2 of 2 free devices asked (not a group Trainium allows)', [neuronDevice('dev-0', 0), neuronDevice('dev-1', 1)], {}, { [NEURON]: 2 }, {}, '1/2 NumaNotFit'],
    ['"fit fail: NumaNotFit with multiple devices", as cores: 4 cores span the 2 devices', [neuronDevice('dev-0', 0), neuronDevice('dev-1', 1)], {}, { [NEURON_CORES]: 4 }, {}, '1/2 NumaNotFit'],
    [
      '"fit fail: memory not enough": 2 devices on a 1-device node; HAMi\'s Fit says 1/1 NumaNotFit, but its scheduler (fitInDevices) answers first',
      [neuronDevice('dev-0', 0)],
      {},
      { [NEURON]: 2 },
      {},
      'NodeInsufficientDevice',
    ],
  ])('%s', (_label, devices, usage, limits, annotations, reason) => {
    expect(reasonOf(decideOne(limits, [onNode(devices, usage)], annotations), 'n1')).toBe(reason);
  });

  it('"fit fail: type mismatch" with the request\'s type: no request has a type other than its kind\'s, and a node without Neuron devices answers as fitInDevices does', () => {
    // HAMi answers a request type no device kind handles with "Device type not found" before any Fit; ours are planned
    // by their kind. A Neuron request on a node with only NVIDIA cards: none of its type, NodeInsufficientDevice.
    const gpuOnly = node('n1', [{ id: 'GPU-0', index: 0, count: 10, devmem: 8192, devcore: 100, type: 'NVIDIA-A100', numa: 0, mode: 'hami-core', health: true }]);
    expect(reasonOf(decideOne({ [NEURON]: 1 }, [gpuOnly]), 'n1')).toBe('NodeInsufficientDevice');
  });
});

describe('HAMi Test_graphSelect (runs of several devices), through the scheduler on 16-device nodes', () => {
  // makeDeviceUsages: 16 devices, some with a tenant (Used 1): here a tenant holding both cores of its device.
  const sixteen = (instanceType: string, busy: number[]) =>
    neuronState(neuronNode('n', 16, 32, instanceType), Object.fromEntries(busy.map((i) => [i, { used: 1, usedcores: 3 }])));

  it.each<[string, string, number[], number, number[]]>([
    ['"full allocate": inf2, 16 of 16', 'inf2', [], 16, range(0, 16)],
    ['"8 allocate success": trn, device 7 busy: the next group aligned to 8', 'trn', [7], 8, range(8, 8)],
    ['"8 allocate": inf, devices 5 and 14 busy: the first run of 8 free devices', 'inf', [5, 14], 8, range(6, 8)],
  ])('%s', (_label, instanceType, busy, count, indexes) => {
    const asDevices = decideOne({ [NEURON]: count }, [sixteen(instanceType, busy)]);
    expect(indexesOf(asDevices)).toEqual(indexes);
    expect(masksOf(asDevices)).toEqual(indexes.map(() => 3));
    expect(idsOf(asDevices)).toBe(indexes.join(','));
    // The same devices asked as cores (2 per device): the core indexes of those devices.
    const asCores = decideOne({ [NEURON_CORES]: 2 * count }, [sixteen(instanceType, busy)]);
    expect(indexesOf(asCores)).toEqual(indexes);
    expect(idsOf(asCores)).toBe(indexes.flatMap((i) => [2 * i, 2 * i + 1]).join(','));
  });

  it('"8 allocate fail": trn, devices 7 and 13 busy: no group of 8, one NumaNotFit for the node', () => {
    const d = decideOne({ [NEURON]: 8 }, [sixteen('trn', [7, 13])]);
    expect(reasonOf(d, 'n')).toBe('1/16 NumaNotFit');
    // The evidence keeps each device's own outcome: the busy ones by their check, the free ones NumaNotFit.
    if (d.kind === 'error') throw new Error(d.message);
    const outcomes = (d.evidence[0]?.containers[0]?.cards ?? []).map((c) => c.outcome);
    expect(outcomes.filter((o) => o === 'NumaNotFit')).toHaveLength(14);
    expect([outcomes[7], outcomes[13]]).toEqual(['CardInsufficientCore', 'CardInsufficientCore']);
  });

  it.each<[string, NodeLike, Record<number, Partial<DeviceUsage>>, Limits, string]>([
    ['trn, 2 devices: not a group Trainium allows', neuronNode('n', 16, 32, 'trn1.32xlarge'), {}, { [NEURON]: 2 }, '1/16 NumaNotFit'],
    ['trn, 3 devices: not a group Trainium allows', neuronNode('n', 16, 32, 'trn1.32xlarge'), {}, { [NEURON]: 3 }, '1/16 NumaNotFit'],
    ['trn, 6 cores span 3 devices: not a group Trainium allows', neuronNode('n', 16, 32, 'trn1.32xlarge'), {}, { [NEURON_CORES]: 6 }, '1/16 NumaNotFit'],
    ['trn2, 12 devices: not a group Trainium allows', neuronNode('n', 16, 128, 'trn2.48xlarge'), {}, { [NEURON]: 12 }, '1/16 NumaNotFit'],
    ['trn, 4 devices with only 3 free: too few free devices is no run either', neuronNode('n', 16, 32, 'trn1.32xlarge'), Object.fromEntries(range(0, 13).map((i) => [i, { used: 2, usedcores: 3 }])), { [NEURON]: 4 }, '1/16 NumaNotFit'],
    ['trn, 4 devices, one core used in every group of 4: no entirely free group', neuronNode('n', 16, 32, 'trn1.32xlarge'), { 0: { used: 1, usedcores: 1 }, 5: { used: 1, usedcores: 2 }, 10: { used: 1, usedcores: 1 }, 15: { used: 1, usedcores: 1 } }, { [NEURON]: 4 }, '1/16 NumaNotFit'],
    ['inf2, 2 devices, every other device busy: no two free side by side', neuronNode('n', 6, 12, 'inf2.24xlarge'), { 0: { used: 1, usedcores: 3 }, 2: { used: 1, usedcores: 3 }, 4: { used: 1, usedcores: 3 } }, { [NEURON]: 2 }, '1/6 NumaNotFit'],
    ['inf2, 3 cores span 2 devices, every other device partly used', neuronNode('n', 6, 12, 'inf2.24xlarge'), { 1: { used: 1, usedcores: 1 }, 3: { used: 1, usedcores: 2 }, 5: { used: 1, usedcores: 1 } }, { [NEURON_CORES]: 3 }, '1/6 NumaNotFit'],
    ['trn, 17 devices on a 16-device node: fitInDevices counts first', neuronNode('n', 16, 32, 'trn1.32xlarge'), {}, { [NEURON]: 17 }, 'NodeInsufficientDevice'],
  ])('contiguity failure: %s', (_label, nodeObject, usage, limits, reason) => {
    expect(reasonOf(decideOne(limits, [neuronState(nodeObject, usage)]), 'n')).toBe(reason);
  });

  it('differs (HAMi v2.10\'s graphSelect looks only at tenants and health, so it gives devices 0-3 here): the device selection holds for runs too', () => {
    const trn = () => neuronState(neuronNode('n', 8, 16, 'trn1.32xlarge'));
    const only = { 'aws.amazon.com/use-neuron-uuid': range(4, 4).map((i) => `n-AWSNeuron-${i}`).join(',') };
    expect(indexesOf(decideOne({ [NEURON]: 4 }, [trn()], only))).toEqual([4, 5, 6, 7]);
    expect(indexesOf(decideOne({ [NEURON]: 4 }, [trn()], { 'aws.amazon.com/nouse-neuron-uuid': 'n-AWSNeuron-2' }))).toEqual([4, 5, 6, 7]);
    expect(reasonOf(decideOne({ [NEURON]: 8 }, [trn()], only), 'n')).toBe('1/8 NumaNotFit');
  });

  it('an unhealthy device breaks a run as a busy one does (graphSelect skips devices that are not healthy)', () => {
    const devices = range(0, 8).map((i) => neuronDevice(`d${i}`, i, { nodeType: 'trn1.32xlarge', health: i !== 2 }));
    expect(indexesOf(decideOne({ [NEURON]: 4 }, [node('n', devices)]))).toEqual([4, 5, 6, 7]);
    const broken = devices.map((d) => (d.index === 6 ? { ...d, health: false } : d));
    expect(reasonOf(decideOne({ [NEURON]: 4 }, [node('n', broken)]), 'n')).toBe('1/8 NumaNotFit');
  });
});

describe('HAMi TestFitInDevices, for Neuron requests (pkg/scheduler/score.go)', () => {
  it.each<[string, NodeLike, Limits]>([
    ['"request devices nums cannot exceed the total number of devices on the node": 3 devices on 2', neuronNode('n', 2, 4, 'inf2.xlarge'), { [NEURON]: 3 }],
    ['the same as cores: 6 cores need 3 devices of 2 cores', neuronNode('n', 2, 4, 'inf2.xlarge'), { [NEURON_CORES]: 6 }],
  ])('%s: the bare NodeInsufficientDevice', (_label, nodeObject, limits) => {
    expect(reasonOf(decideOne(limits, [neuronState(nodeObject)]), 'n')).toBe('NodeInsufficientDevice');
  });
});

describe('HAMi Test_GetNodeDevices and Test_splitCoreRequest (how a request spans devices)', () => {
  it('"get node device": inf2, 1 device of 2 cores: test-AWSNeuron-0, count 2, devcore 3, the instance type kept', () => {
    expect(registerNeuron(neuronNode('test', 1, 2, 'inf2'), config())).toEqual({
      devices: [{ id: 'test-AWSNeuron-0', index: 0, count: 2, devmem: 0, devcore: 3, type: AWS_NEURON, numa: 0, mode: '', health: true, vendor: AWS_NEURON, nodeType: 'inf2' }],
    });
  });

  // inf2 devices of 2 cores, all free: cores are given from the last device for one device, from device 0 for a run.
  const inf2 = () => neuronState(neuronNode('n', 12, 24, 'inf2.48xlarge'));
  it.each<[string, number, number[], number[]]>([
    ['"single core takes one device": 1 core', 1, [11], [1]],
    ['"a full device is one device": 2 cores', 2, [11], [3]],
    ['"whole devices divide evenly": 6 cores are 3 whole devices', 6, [0, 1, 2], [3, 3, 3]],
    ['differs ("odd count above one has no representable shape", HAMi refuses 3 cores): one device and core 0 of the next', 3, [0, 1], [3, 1]],
  ])('%s', (_label, cores, indexes, masks) => {
    const d = decideOne({ [NEURON_CORES]: cores }, [inf2()]);
    expect(indexesOf(d)).toEqual(indexes);
    expect(masksOf(d)).toEqual(masks);
  });

  it('differs ("per-device cores above the addressable limit are bounded", HAMi gives 2 devices of 2 cores): 4 cores on a 4-core device are that device', () => {
    const d = decideOne({ [NEURON_CORES]: 4 }, [neuronState(neuronNode('n', 4, 16, 'inf1.6xlarge'))]);
    expect(indexesOf(d)).toEqual([3]);
    expect(masksOf(d)).toEqual([15]);
    expect(idsOf(d)).toBe('12,13,14,15');
  });

  it('"device count stays within int32": 2147483648 cores are refused with the quantity rules', () => {
    const d = decide(input(pod([{ [NEURON_CORES]: '2147483648' }]), [inf2()]));
    expect(d).toEqual({ kind: 'error', message: `invalid GPU resource request: container "c0": ${NEURON_CORES} "2147483648" is larger than 2147483647 (HAMi computes it in int32)` });
  });

  it('"unknown per-device cores falls back to the addressable limit" has no counterpart: a request is split by the node Fit tries', () => {
    const two = decideOne({ [NEURON_CORES]: 4 }, [neuronState(neuronNode('n', 2, 4, 'inf2.xlarge'))]);
    const eight = decideOne({ [NEURON_CORES]: 4 }, [neuronState(neuronNode('n', 2, 16, 'trn2.3xlarge'))]);
    expect([indexesOf(two), masksOf(two)]).toEqual([[0, 1], [3, 3]]);
    expect([indexesOf(eight), masksOf(eight)]).toEqual([[1], [15]]);
  });
});

describe('HAMi Test_countMaskAvailable', () => {
  it.each([
    ['"test 3"', 3, 2],
    ['"test 2"', 2, 1],
    ['"test 1"', 1, 1],
    ['"test 0"', 0, 0],
  ])('%s', (_label, mask, count) => {
    expect(coreCount(mask)).toBe(count);
  });
});

describe('HAMi Test_PatchAnnotations (AWS_NEURON_IDS and the resource type; HAMi leaves the predicate node to its caller)', () => {
  const nowMs = 1_700_000_000_123;
  const state = neuronState(neuronNode('node-1', 12, 24, 'inf2.48xlarge'));
  const dev = (uuid: string, idx: number, usedcores: number) => ({ idx, uuid, type: AWS_NEURON, usedmem: 0, usedcores });
  const whole = (nums: number): ContainerRequest => ({ nums, type: AWS_NEURON, memreq: 0, mempercentagereq: 0, coresreq: 0 });
  const cores = (c: number): ContainerRequest => ({ nums: 1, type: AWS_NEURON, memreq: 0, mempercentagereq: 0, coresreq: c });
  const annotate = (devices: ReturnType<typeof dev>[][], requests: (ContainerRequest | undefined)[]) => neuronPodAnnotations(devices, state, { nowMs, nodeName: 'node-1', requests, config: config() });
  const written = { NEURON_ALLOC_TIME: '1700000000123000000', NEURON_ALLOCATED: 'false', 'aws.amazon.com/predicate-node': 'node-1' };

  it.each<[string, ReturnType<typeof dev>[][], (ContainerRequest | undefined)[], Record<string, string>]>([
    ['"neuron device": 2 devices asked, device indexes', [[dev('test1', 0, 3), dev('test2', 1, 3)]], [whole(2)], { 'hami.io/aws-neuron-devices-allocated': 'test1,AWSNeuron,0,3:test2,AWSNeuron,0,3:;', AWS_NEURON_IDS: '0,1', ...written }],
    ['"neuroncore device": 2 cores on device 0, core indexes and the resource type', [[dev('test1', 0, 3)]], [cores(2)], { 'hami.io/aws-neuron-devices-allocated': 'test1,AWSNeuron,0,3:;', AWS_NEURON_IDS: '0,1', NEURON_RESOURCE_TYPE: NEURON_CORES, ...written }],
    ['"init container neuron device": the init container\'s device, the app container none', [[dev('test1', 0, 3)], []], [whole(1), undefined], { 'hami.io/aws-neuron-devices-allocated': 'test1,AWSNeuron,0,3:;;', AWS_NEURON_IDS: '0', ...written }],
  ])('%s', (_label, devices, requests, expected) => {
    expect(annotate(devices, requests)).toEqual(expected);
  });
});

describe('large core geometry and many devices (core indexes count index × cores per device + core)', () => {
  it.each<[string, NodeLike, Record<number, Partial<DeviceUsage>>, Limits, number[], number[], string]>([
    ['trn2, 16 devices of 8 cores, 1 core: core 0 of device 15', neuronNode('n', 16, 128, 'trn2.48xlarge'), {}, { [NEURON_CORES]: 1 }, [15], [1], '120'],
    ['trn2, 8 cores: all of device 15', neuronNode('n', 16, 128, 'trn2.48xlarge'), {}, { [NEURON_CORES]: 8 }, [15], [255], range(120, 8).join(',')],
    ['trn2, 3 cores with cores 0-4 of device 15 used: cores 5-7', neuronNode('n', 16, 128, 'trn2.48xlarge'), { 15: { used: 1, usedcores: 31 } }, { [NEURON_CORES]: 3 }, [15], [224], '125,126,127'],
    ['trn2, 64 cores: devices 0-7 (a group of 8)', neuronNode('n', 16, 128, 'trn2.48xlarge'), {}, { [NEURON_CORES]: 64 }, range(0, 8), Array(8).fill(255), range(0, 64).join(',')],
    ['16 cores per device, 16 cores: the last device', neuronNode('n', 4, 64, 'trn9.example'), {}, { [NEURON_CORES]: 16 }, [3], [0xffff], range(48, 16).join(',')],
    ['16 cores per device, 20 cores on an inf type: one device and 4 cores of the next', neuronNode('n', 4, 64, 'inf9.example'), {}, { [NEURON_CORES]: 20 }, [0, 1], [0xffff, 0xf], range(0, 20).join(',')],
    ['31 cores per device (the widest mask), 1 device', neuronNode('n', 4, 124, 'trn9.example'), {}, { [NEURON]: 1 }, [3], [0x7fffffff], '3'],
    ['31 cores per device, 30 cores with core 0 used: cores 1-30', neuronNode('n', 1, 31, 'trn9.example'), { 0: { used: 1, usedcores: 1 } }, { [NEURON_CORES]: 30 }, [0], [0x7ffffffe], range(1, 30).join(',')],
    ['256 devices of 2 cores, 1 core: core 0 of device 255', neuronNode('n', 256, 512, 'inf2.example'), {}, { [NEURON_CORES]: 1 }, [255], [1], '510'],
    ['256 devices on inf, 256 devices', neuronNode('n', 256, 512, 'inf2.example'), {}, { [NEURON]: 256 }, range(0, 256), Array(256).fill(3), range(0, 256).join(',')],
    ['64 devices on trn, 16 devices with device 3 busy: 16-31', neuronNode('n', 64, 128, 'trn1.example'), { 3: { used: 1, usedcores: 1 } }, { [NEURON]: 16 }, range(16, 16), Array(16).fill(3), range(16, 16).join(',')],
  ])('%s', (_label, nodeObject, usage, limits, indexes, masks, ids) => {
    const d = decideOne(limits, [neuronState(nodeObject, usage)]);
    expect(indexesOf(d)).toEqual(indexes);
    expect(masksOf(d)).toEqual(masks);
    expect(idsOf(d)).toBe(ids);
  });

  it('64 devices on trn, 32 devices: not a group Trainium allows', () => {
    expect(reasonOf(decideOne({ [NEURON]: 32 }, [neuronState(neuronNode('n', 64, 128, 'trn1.example'))]), 'n')).toBe('1/64 NumaNotFit');
  });

  it('differs (HAMi v2.10 registers 32 or more cores per device with the mask -1, on which no single device ever fits): such a node is not registered, with the reason', () => {
    expect(registerNeuron(neuronNode('n', 4, 128, 'trn9.example'), config())).toEqual({ reason: '32 cores per aws.amazon.com/neuron device is more than a core mask holds (31)' });
    // The node has no NVIDIA annotation either: both kinds say why.
    expect(parseNodeRegistration(neuronNode('n', 2, 128, 'trn9.example'), config())).toEqual({
      registered: false,
      reason: 'annos not found hami.io/node-nvidia-register; 64 cores per aws.amazon.com/neuron device is more than a core mask holds (31)',
    });
    expect(reasonOf(decideOne({ [NEURON_CORES]: 1 }, [neuronState(neuronNode('n', 2, 128, 'trn9.example'))]), 'n')).toBe('node unregistered');
  });
});
