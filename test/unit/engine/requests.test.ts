import { containerRequest, describeQuantityProblems, hasManagedResources, podContainerRequests, podRequestProblems } from '../../../lib/engine/requests';
import type { ContainerLike } from '../../../lib/engine/types';
import { config, gpu, pod, type Limits } from './fixtures';

const ctr = (limits: Record<string, string | number>, requests?: Record<string, string | number>): ContainerLike => ({
  name: 'c',
  resources: { limits, ...(requests ? { requests } : {}) },
});

describe('containerRequest (docs/hami-parity.md §1.2 table)', () => {
  const cases: [string, ContainerLike, number, [number, number, number, number] | undefined][] = [
    ['gpu 1', ctr({ 'nvidia.com/gpu': '1' }), 1, [1, 0, 100, 0]],
    ['gpu 2, gpumem 4096', ctr({ 'nvidia.com/gpu': '2', 'nvidia.com/gpumem': '4096' }), 1, [2, 4096, 101, 0]],
    ['gpu 1, pct 50', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '50' }), 1, [1, 0, 50, 0]],
    ['gpu 1, pct 150', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '150' }), 1, [1, 0, 100, 0]],
    ['gpu 1, pct 2^32+50', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': String(2 ** 32 + 50) }), 1, [1, 0, 100, 0]],
    ['gpu 1, pct 101', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '101' }), 1, [1, 0, 100, 0]],
    ['gpu 1, gpucores 50', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpucores': '50' }), 1, [1, 0, 100, 50]],
    ['gpu only in requests', ctr({}, { 'nvidia.com/gpu': '1' }), 1, [1, 0, 100, 0]],
    ['gpu 1, pct 0', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '0' }), 1, [1, 0, 100, 0]],
    ['gpu 1, pct -1', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '-1' }), 1, [1, 0, 100, 0]],
    ['gpu 1, gpumem 2000, pct 0', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '2000', 'nvidia.com/gpumem-percentage': '0' }), 1, [1, 2000, 101, 0]],
    ['gpu 1, gpumem 16Gi', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '16Gi' }), 1, undefined],
    ['gpu 1, gpumem 16.0Gi', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '16.0Gi' }), 1, undefined],
    ['factor 2, gpumem 1024', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '1024' }), 2, [1, 2048, 101, 0]],
    ['factor 2, gpumem 1Gi', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '1Gi' }), 2, undefined],
    ['both gpumem and pct kept', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '2000', 'nvidia.com/gpumem-percentage': '50' }), 1, [1, 2000, 50, 0]],
    ['limits read before requests', ctr({ 'nvidia.com/gpu': '2' }, { 'nvidia.com/gpu': '1' }), 1, [2, 0, 100, 0]],
    ['no gpu resource', ctr({ cpu: '1' }), 1, undefined],
    ['gpu not an integer', ctr({ 'nvidia.com/gpu': '1.5' }), 1, undefined],
    ['gpu 0', ctr({ 'nvidia.com/gpu': '0' }), 1, undefined],
    ['gpu 1000m is 1', ctr({ 'nvidia.com/gpu': '1000m' }), 1, [1, 0, 100, 0]],
    ['negative gpumem rejected', ctr({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '-5' }), 1, undefined],
  ];
  it.each(cases)('%s', (_label, container, memoryFactor, expected) => {
    const request = containerRequest(container, config({ memoryFactor }));
    const wanted = expected && { nums: expected[0], type: 'NVIDIA', memreq: expected[1], mempercentagereq: expected[2], coresreq: expected[3] };
    expect(request).toEqual(wanted);
  });

  it.each([
    [{ 'nvidia.com/gpu': '1' }, 512, 101],
    [{ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '0' }, 512, 101],
    [{ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '0' }, 512, 101],
  ])('defaultMemory 512 applies to %j, not multiplied by the factor', (limits, memreq, pct) => {
    expect(containerRequest(ctr(limits), config({ defaultMemory: 512, memoryFactor: 4 }))).toMatchObject({ memreq, mempercentagereq: pct });
  });

  it('uses defaultCores unless gpucores is given, and configured resource names', () => {
    const custom = config({ resourceCountName: 'hami.io/gpu', resourceCoreName: 'hami.io/gpucores', defaultCores: 20 });
    expect(containerRequest(ctr({ 'hami.io/gpu': 1 }), custom)?.coresreq).toBe(20);
    expect(containerRequest(ctr({ 'hami.io/gpu': 1, 'hami.io/gpucores': 70 }), custom)?.coresreq).toBe(70);
    expect(containerRequest(ctr({ 'nvidia.com/gpu': 1 }), custom)).toBeUndefined();
  });
});

describe('podContainerRequests (docs/hami-parity.md §1.3)', () => {
  it('lists init containers, then app containers, undefined for containers without cards', () => {
    const requests = podContainerRequests(pod([{}, gpu(1)], { init: [gpu(2)] }), config());
    expect(requests.init.map((r) => r?.nums)).toEqual([2]);
    expect(requests.app.map((r) => r?.nums)).toEqual([undefined, 1]);
  });

  it.each([
    [pod([{}]), false],
    [pod([{ cpu: '1' }, {}]), false],
    [pod([{}, gpu(1)]), true],
    [pod([{}], { init: [gpu(1)] }), true],
    [{ metadata: { name: 'bare' } }, false],
  ])('hasManagedResources case %#', (p, expected) => {
    expect(hasManagedResources(p, config())).toBe(expected);
  });
});

describe('podRequestProblems: quantities that cannot be scheduled safely (docs/api.md, "Quantities")', () => {
  const problemsOf = (limits: Limits, memoryFactor = 1) => podRequestProblems(pod([limits]), config({ memoryFactor }));
  const cases: [string, Limits, string | undefined][] = [
    ['gpucores that wraps int32 (-100 to HAMi)', gpu(1, { 'nvidia.com/gpucores': '4294967196' }), 'nvidia.com/gpucores "4294967196" is larger than 2147483647 (HAMi computes it in int32)'],
    ['negative gpumem', gpu(1, { 'nvidia.com/gpumem': '-1' }), 'nvidia.com/gpumem "-1" is negative'],
    ['unreadable gpumem', gpu(1, { 'nvidia.com/gpumem': 'abc' }), 'nvidia.com/gpumem "abc" is not a Kubernetes quantity'],
    ['fractional gpumem', gpu(1, { 'nvidia.com/gpumem': '0.5' }), 'nvidia.com/gpumem "0.5" is not a whole number'],
    ['gpumem 16Gi is beyond int32 MiB', gpu(1, { 'nvidia.com/gpumem': '16Gi' }), 'nvidia.com/gpumem "16Gi" is larger than 2147483647 (HAMi computes it in int32)'],
    ['gpumem 1Gi with factor 2 (times 2 wraps int32)', gpu(1, { 'nvidia.com/gpumem': '1Gi' }), 'nvidia.com/gpumem "1Gi" is larger than 1073741823 (HAMi computes it in int32)'],
    ['gpumem 1000 with factor 2', gpu(1, { 'nvidia.com/gpumem': '1000' }), undefined],
    ['gpu count that wraps int32', { 'nvidia.com/gpu': '4294967297' }, 'nvidia.com/gpu "4294967297" is larger than 2147483647 (HAMi computes it in int32)'],
    ['gpu count 1.5', { 'nvidia.com/gpu': '1.5' }, 'nvidia.com/gpu "1.5" is not a whole number'],
    ['gpu count beyond int64', { 'nvidia.com/gpu': '99999999999999999999' }, 'nvidia.com/gpu "99999999999999999999" is larger than 2147483647 (HAMi computes it in int32)'],
    ['negative percentage', gpu(1, { 'nvidia.com/gpumem-percentage': '-1' }), 'nvidia.com/gpumem-percentage "-1" is negative'],
    ['percentage above 100 is clamped, not refused', gpu(1, { 'nvidia.com/gpumem-percentage': '150' }), undefined],
    ['cores above 100 are clamped, not refused', gpu(1, { 'nvidia.com/gpucores': '300' }), undefined],
    ['plain request', gpu(1, { 'nvidia.com/gpumem': '1000', 'nvidia.com/gpucores': '30' }), undefined],
    ['a JSON number that is not whole', gpu(1, { 'nvidia.com/gpumem': 1.25 }), 'nvidia.com/gpumem "1.25" is not a whole number'],
    ['memory without a count is still checked', { 'nvidia.com/gpumem': '-5' }, 'nvidia.com/gpumem "-5" is negative'],
  ];
  it.each(cases)('%s', (label, limits, expected) => {
    const problems = problemsOf(limits, label.includes('factor 2') ? 2 : 1);
    expect(problems.map((p) => `${p.resource} ${JSON.stringify(p.value)} ${p.problem}`)).toEqual(expected === undefined ? [] : [expected]);
  });

  it('names the container, the resource and the value in one answer for every problem', () => {
    const bad = pod([gpu(1, { 'nvidia.com/gpucores': '-3' }), {}, gpu(1, { 'nvidia.com/gpumem': 'x' })], { init: [{ 'nvidia.com/gpu': '-1' }] });
    expect(describeQuantityProblems(podRequestProblems(bad, config()))).toBe(
      'invalid GPU resource request: container "init0": nvidia.com/gpu "-1" is negative; container "c0": nvidia.com/gpucores "-3" is negative; ' +
        'container "c2": nvidia.com/gpumem "x" is not a Kubernetes quantity',
    );
  });

  it('checks requests too, and reports a resource once per container', () => {
    const p = pod([]);
    const withRequests = { ...p, spec: { containers: [{ name: 'c', resources: { limits: { 'nvidia.com/gpu': '-1' }, requests: { 'nvidia.com/gpu': '-1', 'nvidia.com/gpucores': '0.1' } } }] } };
    expect(podRequestProblems(withRequests, config()).map((x) => x.resource)).toEqual(['nvidia.com/gpu', 'nvidia.com/gpucores']);
  });

  it('makes a pod with unreadable quantities a pod the scheduler answers for', () => {
    expect(hasManagedResources(pod([{ 'nvidia.com/gpumem': 'abc' }]), config())).toBe(true);
    expect(hasManagedResources(pod([{ 'nvidia.com/gpumem': '1000' }]), config())).toBe(false);
  });
});
