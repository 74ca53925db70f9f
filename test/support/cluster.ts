/** Fresh Kubernetes objects for tests, shaped as the relay forwards them (docs/api.md §4). */

export interface CardSpec {
  readonly id: string;
  readonly index?: number;
  readonly count?: number;
  readonly devmem?: number;
  readonly devcore?: number;
  readonly type?: string;
  readonly numa?: number;
  readonly health?: boolean;
  /** `mig` with `migProfiles` for a card split into MIG instances (HAMi v2.10's field names). */
  readonly mode?: string;
  readonly migProfiles?: readonly { name: string; memoryMB: number; core: number; sliceCount: number; placements: readonly { start: number; size: number }[] }[];
}

export function card(id: string, overrides: Omit<CardSpec, 'id'> = {}): CardSpec {
  return { id, ...overrides };
}

/** A Node with HAMi's JSON registration annotation. */
export function gpuNode(
  name: string,
  cards: readonly CardSpec[],
  options: { rv?: string; annotations?: Record<string, string>; allocatable?: string } = {},
) {
  const register = cards.map((c, i) => ({
    id: c.id,
    index: c.index ?? i,
    count: c.count ?? 10,
    devmem: c.devmem ?? 16384,
    devcore: c.devcore ?? 100,
    type: c.type ?? 'NVIDIA-Tesla T4',
    numa: c.numa ?? 0,
    mode: c.mode ?? 'hami-core',
    health: c.health ?? true,
    ...(c.migProfiles ? { migProfiles: c.migProfiles } : {}),
  }));
  return {
    kind: 'Node',
    apiVersion: 'v1',
    metadata: {
      name,
      resourceVersion: options.rv ?? '1',
      labels: { 'gpu': 'on' },
      annotations: { 'hami.io/node-nvidia-register': JSON.stringify(register), ...(options.annotations ?? {}) },
    },
    status: { allocatable: { 'nvidia.com/gpu': options.allocatable ?? String(cards.length * 10), cpu: '8' } },
  };
}

/** A Node as the stock AWS Neuron device plugin advertises it: capacity only, and the instance-type label. */
export function neuronNode(
  name: string,
  devices: number,
  cores: number,
  instanceType: string,
  options: { rv?: string; annotations?: Record<string, string> } = {},
) {
  const capacity = { 'aws.amazon.com/neuron': String(devices), 'aws.amazon.com/neuroncore': String(cores), cpu: '128' };
  return {
    kind: 'Node',
    apiVersion: 'v1',
    metadata: {
      name,
      resourceVersion: options.rv ?? '1',
      labels: { 'node.kubernetes.io/instance-type': instanceType },
      annotations: { ...(options.annotations ?? {}) },
    },
    status: { capacity, allocatable: capacity },
  };
}

export interface NeuronContainerSpec {
  readonly name: string;
  /** `aws.amazon.com/neuron`: whole devices. */
  readonly devices?: number;
  /** `aws.amazon.com/neuroncore`: cores. */
  readonly cores?: number;
  /** Ask for an NVIDIA card too (a pod may use one kind). */
  readonly gpu?: number;
}

/** A pending pod asking for AWS Neuron devices or cores, shaped like `gpuPod`'s. */
export function neuronPod(name: string, containers: readonly NeuronContainerSpec[], options: PodOptions<NeuronContainerSpec> = {}) {
  return pendingPod(name, containers, options, 'neuron:2', (c) => ({
    'aws.amazon.com/neuron': c.devices,
    'aws.amazon.com/neuroncore': c.cores,
    'nvidia.com/gpu': c.gpu,
  }));
}

export interface PodOptions<C> {
  readonly namespace?: string;
  readonly uid?: string;
  readonly annotations?: Record<string, string>;
  readonly labels?: Record<string, string>;
  readonly initContainers?: readonly C[];
  /** `spec.priority` as Kubernetes resolves it from the PriorityClass at admission. */
  readonly priority?: number;
  readonly preemptionPolicy?: 'PreemptLowerPriority' | 'Never';
}

/** A pending pod for our scheduler; each container's limits are those `limitsOf` gives a value. */
function pendingPod<C extends { readonly name: string }>(
  name: string,
  containers: readonly C[],
  options: PodOptions<C>,
  image: string,
  limitsOf: (container: C) => Record<string, number | undefined>,
) {
  const toContainer = (c: C) => {
    const limits: Record<string, string> = {};
    for (const [resource, value] of Object.entries(limitsOf(c))) if (value !== undefined) limits[resource] = String(value);
    return { name: c.name, image, resources: { limits } };
  };
  const namespace = options.namespace ?? 'default';
  return {
    metadata: {
      name,
      namespace,
      uid: options.uid ?? `uid-${namespace}-${name}`,
      resourceVersion: '1',
      annotations: options.annotations ?? {},
      ...(options.labels ? { labels: options.labels } : {}),
    },
    spec: {
      schedulerName: 'hami-scheduler',
      initContainers: (options.initContainers ?? []).map(toContainer),
      containers: containers.map(toContainer),
      ...(options.priority !== undefined ? { priority: options.priority } : {}),
      ...(options.preemptionPolicy !== undefined ? { preemptionPolicy: options.preemptionPolicy } : {}),
    },
    status: { phase: 'Pending' },
  };
}

export interface ContainerSpec {
  readonly name: string;
  readonly gpu?: number;
  readonly mem?: number;
  readonly cores?: number;
  readonly pct?: number;
}

export function gpuPod(name: string, containers: readonly ContainerSpec[], options: PodOptions<ContainerSpec> = {}) {
  return pendingPod(name, containers, options, 'cuda:12', (c) => ({
    'nvidia.com/gpu': c.gpu,
    'nvidia.com/gpumem': c.mem,
    'nvidia.com/gpucores': c.cores,
    'nvidia.com/gpumem-percentage': c.pct,
  }));
}

/** The pod as the relay would forward it after applying the filter's annotation patch. */
export function forwardedPod(
  pod: ReturnType<typeof gpuPod>,
  annotations: Record<string, string | null>,
  options: { rv?: string; phase?: string; deletionTimestamp?: string } = {},
) {
  const merged: Record<string, string> = { ...pod.metadata.annotations };
  for (const [k, v] of Object.entries(annotations)) {
    if (v === null) delete merged[k];
    else merged[k] = v;
  }
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    ...pod,
    metadata: {
      ...pod.metadata,
      annotations: merged,
      resourceVersion: options.rv ?? '2',
      ...(options.deletionTimestamp ? { deletionTimestamp: options.deletionTimestamp } : {}),
    },
    status: { phase: options.phase ?? 'Pending' },
  };
}

/**
 * Minimal JSON-over-HTTP client for the control plane. `baseUrl` may be read at each call, for a client of whichever
 * server a suite's hooks started for the current test (test/support/controlPlaneRig.ts).
 */
export function controlClient(baseUrl: string | (() => string), token?: string) {
  const base = typeof baseUrl === 'string' ? () => baseUrl : baseUrl;
  const call = async (method: string, path: string, body?: unknown, raw?: string) => {
    const res = await fetch(`${base()}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(body !== undefined || raw !== undefined ? { body: raw ?? JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test client: callers assert on the shape
    return { status: res.status, json: json as any, text };
  };
  return {
    call,
    events: (events: { type: string; object: unknown }[]) => call('POST', '/cluster/events', { events }),
    filter: (pod: unknown, nodeNames: string[]) => call('POST', '/filter', { Pod: pod, Nodes: null, NodeNames: nodeNames }),
    bind: (pod: { metadata: { name: string; namespace: string; uid: string } }, node: string) =>
      call('POST', '/bind', { PodName: pod.metadata.name, PodNamespace: pod.metadata.namespace, PodUID: pod.metadata.uid, Node: node }),
    outcome: (pod: { metadata: { name: string; namespace: string; uid: string } }, node: string, error = '') =>
      call('POST', '/bind/outcome', { PodName: pod.metadata.name, PodNamespace: pod.metadata.namespace, PodUID: pod.metadata.uid, Node: node, Error: error }),
    schedulerLog: (ns: string, name: string, query = '') => call('GET', `/api/v1/namespaces/${ns}/pods/${name}/schedulerlog${query}`),
    devices: (node: string) => call('GET', `/api/v1/nodes/${node}/devices`),
  };
}

export type ControlClient = ReturnType<typeof controlClient>;

/** The annotations a filter answer asks the relay to patch. */
export function patchedAnnotations(answer: { Effects: { kind: string; annotations?: Record<string, string | null> }[] }) {
  const patch = answer.Effects.find((e) => e.kind === 'PatchPodAnnotations');
  if (!patch?.annotations) throw new Error('no PatchPodAnnotations effect');
  return patch.annotations;
}
