import {
  BindPhase,
  PodAnnotationFormatError,
  decodePodDevices,
  encodePodDevices,
  gpuPolicyOf,
  nodePolicyOf,
  parseDeviceScoringWeights,
  typeAllowed,
  uuidAllowed,
} from '../../../lib/engine/podAnnotations';
import { podDeviceSelectors } from '../../../lib/engine/devices';
import type { ContainerDevice } from '../../../lib/engine/types';

const dev = (uuid: string, type: string, usedmem: number, usedcores: number): ContainerDevice => ({ idx: 0, uuid, type, usedmem, usedcores });

describe('device encoding (docs/hami-parity.md §3.3)', () => {
  it.each<[string, ContainerDevice[][], string]>([
    ['one container, one device', [[dev('nvidia-device-0', 'NVIDIA', 2000, 1)]], 'nvidia-device-0,NVIDIA,2000,1:;'],
    ['two devices in one container', [[dev('UUID1', 'Type1', 1000, 30), dev('UUID2', 'Type1', 1000, 30)]], 'UUID1,Type1,1000,30:UUID2,Type1,1000,30:;'],
    ['two containers', [[dev('GPU-8dcd', 'NVIDIA', 500, 3)], [dev('GPU-ebe7', 'NVIDIA', 500, 3)]], 'GPU-8dcd,NVIDIA,500,3:;GPU-ebe7,NVIDIA,500,3:;'],
    ['[sidecar, gpu] aligned placeholder', [[], [dev('GPU-x', 'NVIDIA', 1000, 30)]], ';GPU-x,NVIDIA,1000,30:;'],
  ])('%s', (_label, devices, text) => {
    expect(encodePodDevices(devices)).toBe(text);
    expect(decodePodDevices(text)).toEqual(devices);
  });

  it('keeps empty entries in the middle and after a trailing placeholder', () => {
    expect(decodePodDevices('GPU-a,NVIDIA,1,1:;;')).toEqual([[dev('GPU-a', 'NVIDIA', 1, 1)], []]);
  });

  it.each([
    ['GPU-a,NVIDIA,1:;', 'pod annotation format error, missing fields, do not use nodeName in task spec'],
    ['GPU-a,NVIDIA,x,1:;', 'strconv.ParseInt: parsing "x": invalid syntax'],
    ['GPU-a,NVIDIA,1,99999999999:;', 'strconv.ParseInt: parsing "99999999999": value out of range'],
    ['GPU-a,NVIDIA,-5,1:;', 'pod annotation format error, negative value -5'],
  ])('%j fails with %j', (text, message) => {
    expect(() => decodePodDevices(text)).toThrow(PodAnnotationFormatError);
    expect(() => decodePodDevices(text)).toThrow(message);
  });
});

describe('bind phases (docs/hami-parity.md §6.2-6.3, lock-free parts)', () => {
  it('uses the values the device plugin reads and writes', () => {
    expect(Object.values(BindPhase)).toEqual(['allocating', 'success', 'failed']);
  });

  it('the first non-empty entry of to-allocate is the GPU container, as the device plugin pops it', () => {
    const entries = decodePodDevices(';GPU-x,NVIDIA,1000,30:;');
    expect(entries.find((e) => e.length > 0)).toEqual([dev('GPU-x', 'NVIDIA', 1000, 30)]);
  });
});

describe('steering annotations (docs/hami-parity.md §3.4)', () => {
  it('gputype: case-insensitive substring; nouse checked after use', () => {
    const s = podDeviceSelectors({ 'nvidia.com/use-gputype': 'a100, ,h100', 'nvidia.com/nouse-gputype': '80gb' });
    expect(typeAllowed(s, 'NVIDIA-A100-SXM4-40GB', 'hami-core')).toBe(true);
    expect(typeAllowed(s, 'NVIDIA-A100-SXM4-80GB', 'hami-core')).toBe(false);
    expect(typeAllowed(s, 'NVIDIA-Tesla T4', 'hami-core')).toBe(false);
  });

  it('blank values are no constraint', () => {
    const s = podDeviceSelectors({ 'nvidia.com/use-gputype': '  ', 'nvidia.com/use-gpuuuid': ',' });
    expect(typeAllowed(s, 'anything', 'mig')).toBe(true);
    expect(uuidAllowed(s, 'GPU-1')).toBe(true);
  });

  it('gpuuuid: exact trimmed match', () => {
    const s = podDeviceSelectors({ 'nvidia.com/use-gpuuuid': ' GPU-1 ,GPU-2', 'nvidia.com/nouse-gpuuuid': 'GPU-2' });
    expect([uuidAllowed(s, 'GPU-1'), uuidAllowed(s, 'GPU-2'), uuidAllowed(s, 'GPU-10')]).toEqual([true, false, false]);
  });

  it('vgpu-mode: the value must contain the card mode (empty mode always matches)', () => {
    const s = podDeviceSelectors({ 'nvidia.com/vgpu-mode': 'hami-core' });
    expect([typeAllowed(s, 'NVIDIA', 'hami-core'), typeAllowed(s, 'NVIDIA', 'mig'), typeAllowed(s, 'NVIDIA', '')]).toEqual([true, false, true]);
  });

  it.each([
    ['true', true],
    ['1', true],
    ['T', true],
    ['yes', false],
    ['false', false],
  ])('numa-bind %j -> %p (Go ParseBool)', (value, expected) => {
    expect(podDeviceSelectors({ 'nvidia.com/numa-bind': value }).numaBind).toBe(expected);
  });

  it('node policy: exactly "spread" spreads, anything else packs', () => {
    expect(nodePolicyOf({ 'hami.io/node-scheduler-policy': 'spread' }, 'binpack')).toBe('spread');
    expect(nodePolicyOf({ 'hami.io/node-scheduler-policy': 'Spread' }, 'spread')).toBe('binpack');
    expect(nodePolicyOf({}, 'spread')).toBe('spread');
  });

  it.each([
    ['binpack', false, { kind: 'binpack', needTopology: false, isMutex: false, numaBind: false }],
    ['mutex', false, { kind: 'mutex', needTopology: false, isMutex: true, numaBind: false }],
    ['topology-aware', false, { kind: 'spread', needTopology: true, isMutex: false, numaBind: false }],
    ['whatever', true, { kind: 'spread', needTopology: false, isMutex: false, numaBind: true }],
    ['numa', false, { kind: 'chain', keys: ['numa'], needTopology: false, isMutex: false }],
    ['binpack,numa,binpack', false, { kind: 'chain', keys: ['binpack', 'numa'], needTopology: false, isMutex: false }],
    ['binpack,spread', true, { kind: 'chain', keys: ['numa', 'binpack', 'spread'], needTopology: false, isMutex: false }],
    ['mutex,topology-aware', false, { kind: 'chain', keys: ['spread'], needTopology: true, isMutex: true }],
  ])('gpu policy %j (numa-bind %p)', (value, numaBind, expected) => {
    expect(gpuPolicyOf({ 'hami.io/gpu-scheduler-policy': value }, 'spread', numaBind)).toEqual(expected);
  });

  it('gives every pod with the same card policy the same frozen object (its shape stays known to the compiled code)', () => {
    for (const value of ['spread', 'binpack', 'mutex,topology-aware', 'binpack,numa', 'numa']) {
      const first = gpuPolicyOf({ 'hami.io/gpu-scheduler-policy': value }, 'spread', false);
      expect(gpuPolicyOf({ 'hami.io/gpu-scheduler-policy': value }, 'binpack', false)).toBe(first);
      expect(Object.isFrozen(first)).toBe(true);
    }
    expect(gpuPolicyOf({}, 'binpack', true)).toBe(gpuPolicyOf({ 'hami.io/gpu-scheduler-policy': 'binpack' }, 'spread', true));
    expect(gpuPolicyOf({}, 'binpack', true)).not.toBe(gpuPolicyOf({}, 'binpack', false));
  });
});

describe('hami.io/device-scoring-weights (docs/hami-parity.md §5.2)', () => {
  it('parses three non-negative integer weights in any order', () => {
    expect(parseDeviceScoringWeights(' memory=3, slot=1 ,core=0')).toEqual({ slot: 1, core: 0, memory: 3 });
  });

  const prefix = (v: string): string => `invalid hami.io/device-scoring-weights annotation ${JSON.stringify(v)}: `;
  it.each([
    ['slot=1,core=1', 'expected slot, core, and memory weights'],
    ['slot=1,core,memory=1', 'expected key=value entries'],
    ['slot=1,slot=1,memory=1', 'duplicate "slot" weight'],
    ['slot=1,core=x,memory=1', '"core" weight must be an integer'],
    ['slot=1,core=99999999999999999999,memory=1', '"core" weight must be an integer'],
    ['slot=1,core=-1,memory=1', '"core" weight must not be negative'],
    ['slot=1,gpu=1,memory=1', 'unknown weight "gpu"'],
    ['slot=0,core=0,memory=0', 'at least one weight must be positive'],
  ])('%j -> HAMi error text', (value, detail) => {
    expect(() => parseDeviceScoringWeights(value)).toThrow(prefix(value) + detail);
  });
});
