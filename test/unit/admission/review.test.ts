/**
 * The admission webhook's rules, driven with AdmissionReview v1 JSON as kube-apiserver sends it; each mutation is
 * checked by applying the answered JSON patch to the pod, as the API server does.
 */
import { cardCapacity, type CardCapacity } from '../../../lib/admission/cards';
import { MAX_REVIEW_DEPTH, reviewAdmission, type AdmissionResponse, type AdmissionSettings } from '../../../lib/admission/review';
import { jsonPatch, pointerToken } from '../../../lib/admission/jsonPatch';
import { defaultEngineConfig } from '../../../lib/config';
import { nestingExceeds } from '../../../lib/json';
import { applyJsonPatch, decodeAdmissionPatch } from '../../support/jsonPatch';

const settings: AdmissionSettings = { engine: defaultEngineConfig, schedulerName: 'hami-scheduler', defaultGpuNum: 1 };
const register = (cards: { devmem: number }[]) => JSON.stringify(cards.map((c, i) => ({ id: `GPU-${i}`, index: i, count: 10, devmem: c.devmem, devcore: 100, type: 'NVIDIA-T4', health: true })));
const capacity: CardCapacity = cardCapacity(
  [
    { metadata: { name: 'node1', annotations: { 'hami.io/node-nvidia-register': register([{ devmem: 16384 }, { devmem: 16384 }]) } } },
    { metadata: { name: 'node2', annotations: { 'hami.io/node-nvidia-register': register([{ devmem: 81920 }, { devmem: 81920 }, { devmem: 81920 }, { devmem: 81920 }]) } } },
    { metadata: { name: 'cpu-node' } },
  ],
  defaultEngineConfig,
);

type Limits = Record<string, string>;
interface PodInput {
  limits?: Limits;
  requests?: Limits;
  schedulerName?: string;
  nodeName?: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  privileged?: boolean;
  init?: { name: string; limits?: Limits; privileged?: boolean }[];
  containers?: unknown[];
}

function pod(p: PodInput = {}): Record<string, unknown> {
  const container = (name: string, limits: Limits | undefined, requests: Limits | undefined, privileged: boolean | undefined) => ({
    name,
    image: 'cuda:12',
    ...(limits || requests ? { resources: { ...(limits ? { limits } : {}), ...(requests ? { requests } : {}) } } : {}),
    ...(privileged !== undefined ? { securityContext: { privileged } } : {}),
  });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'train', namespace: 'ml', ...(p.labels ? { labels: p.labels } : {}), ...(p.annotations ? { annotations: p.annotations } : {}) },
    spec: {
      ...(p.schedulerName !== undefined ? { schedulerName: p.schedulerName } : {}),
      ...(p.nodeName !== undefined ? { nodeName: p.nodeName } : {}),
      ...(p.init ? { initContainers: p.init.map((c) => container(c.name, c.limits, undefined, c.privileged)) } : {}),
      containers: p.containers ?? [container('main', p.limits, p.requests, p.privileged)],
    },
  };
}

function review(object: unknown, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '705ab4f5-6393-11e8-b7cc-42010a800002',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      requestKind: { group: '', version: 'v1', kind: 'Pod' },
      requestResource: { group: '', version: 'v1', resource: 'pods' },
      name: 'train',
      namespace: 'ml',
      operation: 'CREATE',
      userInfo: { username: 'alice', groups: ['system:authenticated'] },
      object,
      oldObject: null,
      dryRun: false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
      ...overrides,
    },
  };
}

function answer(object: unknown, opts: { capacity?: CardCapacity; settings?: AdmissionSettings; overrides?: Record<string, unknown> } = {}): AdmissionResponse['response'] {
  const outcome = reviewAdmission(review(object, opts.overrides), opts.settings ?? settings, 'capacity' in opts ? opts.capacity : capacity);
  if (outcome.kind !== 'answer') throw new Error(outcome.message);
  expect(outcome.review.apiVersion).toBe('admission.k8s.io/v1');
  expect(outcome.review.kind).toBe('AdmissionReview');
  expect(outcome.review.response.uid).toBe('705ab4f5-6393-11e8-b7cc-42010a800002');
  return outcome.review.response;
}

/** The pod as the API server stores it after applying the webhook's patch. */
function admitted(object: Record<string, unknown>, opts: Parameters<typeof answer>[1] = {}): { pod: ReturnType<typeof pod>; warnings: readonly string[] } {
  const response = answer(object, opts);
  expect(response.allowed).toBe(true);
  return { pod: applyJsonPatch(object, decodeAdmissionPatch(response)) as ReturnType<typeof pod>, warnings: response.warnings ?? [] };
}

const spec = (p: Record<string, unknown>) => p.spec as { schedulerName?: string; containers: { resources?: { limits?: Limits } }[]; initContainers?: { resources?: { limits?: Limits } }[] };

describe('routing GPU pods to the extender (HAMi parity)', () => {
  it.each([
    ['no schedulerName', undefined],
    ['default-scheduler', 'default-scheduler'],
    ['already ours', 'hami-scheduler'],
  ])('a GPU pod with %s gets schedulerName hami-scheduler', (_case, schedulerName) => {
    const { pod: after } = admitted(pod({ limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '3000' }, ...(schedulerName ? { schedulerName } : {}) }));
    expect(spec(after).schedulerName).toBe('hami-scheduler');
  });

  it('leaves a pod for another scheduler alone: no patch, no further checks', () => {
    const response = answer(pod({ limits: { 'nvidia.com/gpu': '1' }, schedulerName: 'volcano', nodeName: 'n1', privileged: true }));
    expect(response).toEqual({ uid: expect.any(String), allowed: true });
  });

  it('leaves a pod without managed resources alone', () => {
    expect(answer(pod({ limits: { cpu: '2', memory: '1Gi' } }))).toEqual({ uid: expect.any(String), allowed: true });
  });

  it('answers JSON patches with escaped resource names, and only what changed', () => {
    const response = answer(pod({ limits: { 'nvidia.com/gpu': '1' } }));
    expect(decodeAdmissionPatch(response)).toEqual([
      { op: 'add', path: '/spec/containers/0/resources/limits/nvidia.com~1gpucores', value: '100' },
      { op: 'add', path: '/spec/schedulerName', value: 'hami-scheduler' },
    ]);
  });

  it('uses the configured scheduler and resource names', () => {
    const custom: AdmissionSettings = { engine: { ...defaultEngineConfig, resourceCountName: 'example.com/vgpu', resourceCoreName: 'example.com/vcores' }, schedulerName: 'gpu-sched', defaultGpuNum: 1 };
    const { pod: after } = admitted(pod({ limits: { 'example.com/vgpu': '2' } }), { settings: custom });
    expect(spec(after).schedulerName).toBe('gpu-sched');
    expect(spec(after).containers[0]?.resources?.limits).toEqual({ 'example.com/vgpu': '2', 'example.com/vcores': '100' });
  });
});

describe("HAMi's request defaults", () => {
  it.each([
    ['a card count alone becomes an exclusive card (cores 100)', { 'nvidia.com/gpu': '1' }, undefined, { 'nvidia.com/gpu': '1', 'nvidia.com/gpucores': '100' }],
    ['count in requests only: cores 100 go to limits', undefined, { 'nvidia.com/gpu': '1' }, { 'nvidia.com/gpucores': '100' }],
    ['memory alone gets one card and keeps sharing cores', { 'nvidia.com/gpumem': '3000' }, undefined, { 'nvidia.com/gpumem': '3000', 'nvidia.com/gpu': '1' }],
    ['cores alone get one card', { 'nvidia.com/gpucores': '30' }, undefined, { 'nvidia.com/gpucores': '30', 'nvidia.com/gpu': '1' }],
    ['100 % of the memory is an exclusive card', { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '100' }, undefined, { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '100', 'nvidia.com/gpucores': '100' }],
    ['50 % of the memory shares the cores', { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '50' }, undefined, { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '50' }],
    ['given cores are kept', { 'nvidia.com/gpu': '2', 'nvidia.com/gpucores': '20' }, undefined, { 'nvidia.com/gpu': '2', 'nvidia.com/gpucores': '20' }],
    ['given memory keeps cores unset', { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '4096' }, undefined, { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '4096' }],
  ])('%s', (_case, limits, requests, expected) => {
    const { pod: after } = admitted(pod({ ...(limits ? { limits } : {}), ...(requests ? { requests } : {}) }));
    expect(spec(after).containers[0]?.resources?.limits).toEqual(expected);
    expect(spec(after).schedulerName).toBe('hami-scheduler');
  });

  it('applies them to init containers too', () => {
    const { pod: after } = admitted(pod({ init: [{ name: 'warmup', limits: { 'nvidia.com/gpumem': '1000' } }], limits: { cpu: '1' } }));
    expect(spec(after).initContainers?.[0]?.resources?.limits).toEqual({ 'nvidia.com/gpumem': '1000', 'nvidia.com/gpu': '1' });
    expect(spec(after).containers[0]?.resources?.limits).toEqual({ cpu: '1' });
    expect(spec(after).schedulerName).toBe('hami-scheduler');
  });

  it('without a default card count, memory alone is not a GPU request (HAMi with defaultGPUNum 0)', () => {
    expect(answer(pod({ limits: { 'nvidia.com/gpumem': '3000' } }), { settings: { ...settings, defaultGpuNum: 0 } })).toEqual({ uid: expect.any(String), allowed: true });
  });
});

describe("denials with HAMi's texts", () => {
  it.each([
    ['a privileged GPU container', pod({ limits: { 'nvidia.com/gpu': '1' }, privileged: true }), 'container main is privileged'],
    ['a privileged init container of a GPU pod (init containers first)', pod({ limits: { 'nvidia.com/gpu': '1' }, privileged: true, init: [{ name: 'setup', privileged: true }] }), 'container setup is privileged'],
    ['a GPU pod with nodeName preset', pod({ limits: { 'nvidia.com/gpu': '1' }, nodeName: 'node1' }), 'pod has node assigned'],
    ['a pod without containers', pod({ containers: [] }), 'pod has no containers'],
  ])('denies %s', (_case, object, message) => {
    expect(answer(object)).toEqual({ uid: expect.any(String), allowed: false, status: { code: 403, reason: 'Forbidden', message } });
  });

  it('denies a memory percentage above 100 with HAMi\'s text', () => {
    expect(answer(pod({ limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem-percentage': '150' } }))).toEqual({
      uid: expect.any(String),
      allowed: false,
      status: { code: 400, reason: 'BadRequest', message: 'invalid nvidia.com/gpumem-percentage value 150 in container main: must be an integer between 0 and 100' },
    });
  });

  it('admits a privileged pod or a preset nodeName when it asks for no GPU', () => {
    expect(answer(pod({ limits: { cpu: '1' }, privileged: true, nodeName: 'node1' }))).toEqual({ uid: expect.any(String), allowed: true });
  });
});

describe('our own rules', () => {
  it.each([
    ['hami.io/vgpu-devices-to-allocate', { 'hami.io/vgpu-devices-to-allocate': 'GPU-a,NVIDIA,20000,100:;' }, 'hami.io/vgpu-devices-to-allocate: only the scheduler sets this annotation'],
    [
      'a whole forged booking (HAMi #3041)',
      { 'hami.io/bind-time': '1746093600', 'hami.io/bind-phase': 'allocating', 'hami.io/vgpu-node': 'node1', 'hami.io/vgpu-devices-allocated': 'GPU-a,NVIDIA,20000,100:;' },
      'hami.io/bind-phase, hami.io/bind-time, hami.io/vgpu-devices-allocated, hami.io/vgpu-node: only the scheduler sets these annotations',
    ],
  ])('denies a pod created with %s, whatever scheduler it names', (_case, annotations, text) => {
    for (const schedulerName of [undefined, 'default-scheduler', 'volcano']) {
      const response = answer(pod({ annotations, ...(schedulerName ? { schedulerName } : {}) }));
      expect(response.allowed).toBe(false);
      expect(response.status?.message).toContain(`pod carries ${text}`);
    }
  });

  it('admits user steering annotations', () => {
    const { pod: after } = admitted(pod({ limits: { 'nvidia.com/gpu': '1' }, annotations: { 'nvidia.com/use-gputype': 'A100', 'hami.io/node-scheduler-policy': 'spread' } }));
    expect(spec(after).schedulerName).toBe('hami-scheduler');
  });

  it.each([
    [{ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '1500.5' }, 'invalid GPU resource request: container "main": nvidia.com/gpumem "1500.5" is not a whole number'],
    [{ 'nvidia.com/gpu': '-1' }, 'invalid GPU resource request: container "main": nvidia.com/gpu "-1" is negative'],
    [{ 'nvidia.com/gpu': '1', 'nvidia.com/gpucores': '4294967196' }, 'invalid GPU resource request: container "main": nvidia.com/gpucores "4294967196" is larger than 2147483647 (HAMi computes it in int32)'],
    [{ 'nvidia.com/gpu': 'lots' }, 'invalid GPU resource request: container "main": nvidia.com/gpu "lots" is not a Kubernetes quantity'],
  ])('denies unreadable quantities %j with the filter\'s text', (limits, message) => {
    expect(answer(pod({ limits }))).toEqual({ uid: expect.any(String), allowed: false, status: { code: 400, reason: 'BadRequest', message } });
  });

  // Issue 46: the opt-out used to skip the forged check too (this test admitted a labelled pod carrying hami.io/vgpu-node).
  it('leaves a pod labelled hami.io/webhook: ignore without defaults or routing, but still denies its forged booking', () => {
    const labels = { 'hami.io/webhook': 'ignore' };
    expect(answer(pod({ limits: { 'nvidia.com/gpu': '1' }, labels, privileged: true, nodeName: 'node1' }))).toEqual({ uid: expect.any(String), allowed: true });
    const forged = answer(pod({ limits: { 'nvidia.com/gpu': '1' }, labels, nodeName: 'node1', annotations: { 'hami.io/vgpu-node': 'node1', 'hami.io/vgpu-devices-allocated': 'GPU-victim,NVIDIA,16384,100:;' } }));
    expect(forged).toEqual({
      uid: expect.any(String),
      allowed: false,
      status: { code: 403, reason: 'Forbidden', message: 'pod carries hami.io/vgpu-devices-allocated, hami.io/vgpu-node: only the scheduler sets these annotations (a pod cannot be created with a device booking); remove them' },
    });
  });
});

describe('what the webhook cannot read is denied, never admitted unchecked', () => {
  /** `levels` objects nested inside each other, innermost `{}`. */
  const nested = (levels: number): unknown => {
    let value: unknown = {};
    for (let i = 1; i < levels; i++) value = { x: value };
    return value;
  };
  const unreadable = (where: string, problem: string) => `the webhook cannot read this pod (${where}: ${problem}); the webhook refuses what it cannot check`;

  it.each([
    ['a container without a name', pod({ containers: [{ image: 'cuda:12' }] }), 'spec.containers.0.name', 'Invalid input: expected string, received undefined'],
    ['a numeric annotation', pod({ annotations: { 'team/owner': 7 as unknown as string } }), 'metadata.annotations.team/owner', 'Invalid input: expected string, received number'],
    ['labels that are a list', { ...pod(), metadata: { name: 'train', labels: ['hami.io/webhook'] } }, 'metadata.labels', 'Invalid input: expected record, received array'],
    ['no spec', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'train' } }, 'spec', 'Invalid input: expected object, received undefined'],
    ['no pod at all', undefined, '(pod)', 'Invalid input: expected object, received undefined'],
  ])('denies a pod with %s, saying what it could not read', (_case, object, where, problem) => {
    expect(answer(object)).toEqual({ uid: expect.any(String), allowed: false, status: { code: 400, reason: 'BadRequest', message: unreadable(where, problem) } });
  });

  it('denies a labelled pod it cannot read too (it cannot check it for a forged booking)', () => {
    const object = pod({ labels: { 'hami.io/webhook': 'ignore' }, annotations: { 'hami.io/vgpu-node': 'node1' }, containers: [{ image: 'cuda:12' }] });
    expect(answer(object).status?.message).toBe(unreadable('spec.containers.0.name', 'Invalid input: expected string, received undefined'));
  });

  it.each([
    ['in a container', (levels: number) => pod({ containers: [{ name: 'main', image: 'cuda:12', env: nested(levels) }] })],
    ['in the metadata', (levels: number) => ({ ...pod(), metadata: { name: 'train', deep: nested(levels) } })],
  ])('denies a pod nested 5,000 levels deep %s with a clear message, without overflowing the stack', (_case, make) => {
    expect(answer(make(5000))).toEqual({
      uid: expect.any(String),
      allowed: false,
      status: { code: 400, reason: 'BadRequest', message: `the webhook cannot read this request: it nests objects more than ${MAX_REVIEW_DEPTH} levels deep, which no pod does; the webhook refuses what it cannot check` },
    });
  });

  it('reads a review exactly at the depth limit, and refuses one level more', () => {
    // review 1, request 2, pod 3, spec 4, containers 5, the container 6: the env's levels start at 7.
    const atLimit = (levels: number) => pod({ containers: [{ name: 'main', image: 'cuda:12', resources: { limits: { 'nvidia.com/gpu': '1' } }, env: nested(levels) }] });
    expect(answer(atLimit(MAX_REVIEW_DEPTH - 6)).allowed).toBe(true);
    expect(answer(atLimit(MAX_REVIEW_DEPTH - 5)).status?.message).toMatch(/^the webhook cannot read this request: it nests objects more than 100 levels deep/);
  });

  it('denies a review nested too deep wherever it is, not only in a pod CREATE', () => {
    const response = answer(pod(), { overrides: { operation: 'UPDATE', userInfo: { username: 'alice', extra: { deep: nested(5000) } } } });
    expect(response.allowed).toBe(false);
  });

  it('denies a pod whose check throws, with the error', () => {
    // No JSON body throws; a getter stands for a bug in the checks.
    const object = pod();
    Object.defineProperty(object, 'spec', { enumerable: false, get: () => { throw new Error('spec unavailable'); } });
    expect(answer(object).status).toEqual({ code: 400, reason: 'BadRequest', message: 'the webhook could not check this pod (spec unavailable); the webhook refuses what it cannot check' });
  });

  it('names only strings the review holds as the subject it logs', () => {
    const outcome = reviewAdmission(review({ ...pod(), metadata: { name: nested(5000) } }, { name: { not: 'a string' } }), settings, capacity);
    expect(outcome.kind === 'answer' && outcome.subject).toEqual({ namespace: 'ml' });
    const named = reviewAdmission(review({ ...pod(), metadata: { name: '', generateName: 'train-' } }, { name: '' }), settings, capacity);
    expect(named.kind === 'answer' && named.subject).toEqual({ namespace: 'ml', pod: 'train-' });
  });
});

describe('nestingExceeds', () => {
  it.each([
    [1, 0, false],
    [null, 0, false],
    [{}, 0, true],
    [{}, 1, false],
    [[[]], 1, true],
    [[[]], 2, false],
    [{ a: 1, b: [{ c: {} }] }, 3, true],
    [{ a: 1, b: [{ c: {} }] }, 4, false],
  ])('%j deeper than %i: %s', (value, limit, expected) => {
    expect(nestingExceeds(value, limit)).toBe(expected);
  });

  it('measures 1,000,000 levels without overflowing', () => {
    const deep = JSON.parse(`${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`) as unknown;
    expect(nestingExceeds(deep, MAX_REVIEW_DEPTH)).toBe(true);
  });
});

describe('warnings for requests no registered card can hold', () => {
  it.each([
    ['more memory than the largest card', { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '90000' }, ['container "main" asks for 90000 MiB of GPU memory (nvidia.com/gpumem) but the largest registered card has 81920 MiB: the pod cannot be scheduled']],
    ['more cards than any node has', { 'nvidia.com/gpu': '5' }, ['container "main" asks for 5 cards (nvidia.com/gpu) but no registered node has more than 4: the pod cannot be scheduled']],
    ['a request that fits a card', { 'nvidia.com/gpu': '4', 'nvidia.com/gpumem': '81920' }, []],
  ])('%s', (_case, limits, warnings) => {
    const { pod: after, warnings: got } = admitted(pod({ limits }));
    expect(got).toEqual(warnings);
    expect(spec(after).schedulerName).toBe('hami-scheduler');
  });

  it('says so when no node has registered any card', () => {
    expect(admitted(pod({ limits: { 'nvidia.com/gpu': '1' } }), { capacity: cardCapacity([], defaultEngineConfig) }).warnings).toEqual([
      'no node has registered GPUs yet (annotation hami.io/node-nvidia-register): the pod stays Pending until one does',
    ]);
  });

  it('warns about nothing while the relay has not seen the nodes yet', () => {
    expect(admitted(pod({ limits: { 'nvidia.com/gpu': '9', 'nvidia.com/gpumem': '999999' } }), { capacity: undefined }).warnings).toEqual([]);
  });
});

describe('AWS Neuron pods (HAMi\'s Neuron MutateAdmission only validates)', () => {
  it.each([
    ['whole devices', { 'aws.amazon.com/neuron': '4' }, undefined],
    ['cores', { 'aws.amazon.com/neuroncore': '3' }, undefined],
    ['cores in requests only', undefined, { 'aws.amazon.com/neuroncore': '1' }],
  ])('a pod asking %s is routed to the extender, and nothing else changes', (_case, limits, requests) => {
    const object = pod({ ...(limits ? { limits } : {}), ...(requests ? { requests } : {}) });
    const response = answer(object);
    expect(decodeAdmissionPatch(response)).toEqual([{ op: 'add', path: '/spec/schedulerName', value: 'hami-scheduler' }]);
    expect(response.warnings).toBeUndefined();
  });

  it('gets no NVIDIA defaults, even beside an NVIDIA memory quantity (no nvidia.com/gpu is added to it)', () => {
    const { pod: after } = admitted(pod({ limits: { 'aws.amazon.com/neuron': '1', 'nvidia.com/gpumem': '1000' } }));
    expect(spec(after).containers[0]?.resources?.limits).toEqual({ 'aws.amazon.com/neuron': '1', 'nvidia.com/gpumem': '1000' });
    expect(spec(after).schedulerName).toBe('hami-scheduler');
  });

  it.each([
    [{ 'aws.amazon.com/neuroncore': '-1' }, 'invalid GPU resource request: container "main": aws.amazon.com/neuroncore "-1" is negative'],
    [{ 'aws.amazon.com/neuron': '1.5' }, 'invalid GPU resource request: container "main": aws.amazon.com/neuron "1.5" is not a whole number'],
    [{ 'aws.amazon.com/neuron': '2147483648' }, 'invalid GPU resource request: container "main": aws.amazon.com/neuron "2147483648" is larger than 2147483647 (HAMi computes it in int32)'],
    [
      { 'aws.amazon.com/neuron': '1', 'nvidia.com/gpu': '1' },
      'invalid GPU resource request: container "main": nvidia.com/gpu and aws.amazon.com/neuron "both" ask for two kinds of device in one pod; a pod may use one kind',
    ],
  ])('denies %j with the filter\'s words', (limits, message) => {
    expect(answer(pod({ limits }))).toEqual({ uid: expect.any(String), allowed: false, status: { code: 400, reason: 'BadRequest', message } });
  });

  it('denies a Neuron pod that is privileged or has a node preset, as HAMi denies every device pod', () => {
    expect(answer(pod({ limits: { 'aws.amazon.com/neuron': '1' }, privileged: true })).status?.message).toBe('container main is privileged');
    expect(answer(pod({ limits: { 'aws.amazon.com/neuron': '1' }, nodeName: 'trn-1' })).status?.message).toBe('pod has node assigned');
  });

  it('denies a pod created with an AWS placement, and admits NEURON_ALLOCATED (the AWS device plugin\'s)', () => {
    const forged = answer(pod({ limits: { 'aws.amazon.com/neuron': '1' }, annotations: { AWS_NEURON_IDS: '0', 'aws.amazon.com/predicate-node': 'trn-1', NEURON_ALLOCATED: 'false' } }));
    expect(forged.status?.message).toContain('pod carries AWS_NEURON_IDS, aws.amazon.com/predicate-node: only the scheduler sets these annotations');
    expect(answer(pod({ limits: { 'aws.amazon.com/neuron': '1' }, annotations: { NEURON_ALLOCATED: 'false' } })).allowed).toBe(true);
  });

  it('counts only NVIDIA cards for the warnings: Neuron devices hold no NVIDIA request, and Neuron requests get none', () => {
    const neuronNode = { metadata: { name: 'trn', labels: { 'node.kubernetes.io/instance-type': 'trn1.32xlarge' } }, status: { capacity: { 'aws.amazon.com/neuron': '16', 'aws.amazon.com/neuroncore': '32' } } };
    const onlyNeuron = cardCapacity([neuronNode], defaultEngineConfig);
    expect(onlyNeuron).toEqual({ nodes: 0, cards: 0, largestMemoryMiB: 0, mostCardsOnANode: 0, hasMig: false });
    expect(admitted(pod({ limits: { 'aws.amazon.com/neuron': '32' } }), { capacity: onlyNeuron }).warnings).toEqual([]);
    expect(admitted(pod({ limits: { 'nvidia.com/gpu': '1' } }), { capacity: onlyNeuron }).warnings).toEqual([
      'no node has registered GPUs yet (annotation hami.io/node-nvidia-register): the pod stays Pending until one does',
    ]);
  });
});

describe('requests that are not pod creations', () => {
  it.each([
    ['an UPDATE', { operation: 'UPDATE' }],
    ['another kind', { kind: { group: 'apps', version: 'v1', kind: 'Deployment' } }],
  ])('allows %s untouched', (_case, overrides) => {
    expect(answer(pod({ limits: { 'nvidia.com/gpu': '1' }, privileged: true }), { overrides })).toEqual({ uid: expect.any(String), allowed: true });
  });

  it.each([
    ['an AdmissionReview v1beta1', { ...review(pod()), apiVersion: 'admission.k8s.io/v1beta1' }],
    ['a request without uid', { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { kind: { group: '', version: 'v1', kind: 'Pod' }, operation: 'CREATE' } }],
    ['not JSON object', 'hello'],
  ])('refuses %s as a bad request', (_case, body) => {
    expect(reviewAdmission(body, settings, capacity)).toEqual({ kind: 'badRequest', message: expect.stringMatching(/^not an admission\.k8s\.io\/v1 AdmissionReview: /) });
  });
});

describe('jsonPatch', () => {
  it.each([
    [{ a: 1 }, { a: 1 }, []],
    [{ a: 1 }, { a: 2 }, [{ op: 'replace', path: '/a', value: 2 }]],
    [{ a: 1 }, {}, [{ op: 'remove', path: '/a' }]],
    [{ 'x/y~z': { b: [1, 2] } }, { 'x/y~z': { b: [1, 3], c: true } }, [{ op: 'replace', path: '/x~1y~0z/b/1', value: 3 }, { op: 'add', path: '/x~1y~0z/c', value: true }]],
    [{ l: [1] }, { l: [1, 2] }, [{ op: 'replace', path: '/l', value: [1, 2] }]],
  ])('%j -> %j', (before, after, ops) => {
    expect(jsonPatch(before, after)).toEqual(ops);
    expect(applyJsonPatch(before, jsonPatch(before, after))).toEqual(after);
  });

  it('escapes pointer tokens', () => {
    expect(pointerToken('nvidia.com/gpu')).toBe('nvidia.com~1gpu');
  });
});

describe('cardCapacity', () => {
  it('reads registrations with the engine rules and ignores unregistered nodes', () => {
    expect(capacity).toEqual({ nodes: 2, cards: 6, largestMemoryMiB: 81920, mostCardsOnANode: 4, hasMig: false });
  });
});
