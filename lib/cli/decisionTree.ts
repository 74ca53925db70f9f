/**
 * When the scheduler has no record of a pod, HAMi's debugging decision tree tells why: does the pod
 * ask for managed GPU resources, does it name our scheduler, is it already bound, is its node
 * registered? The walk is pure (pod and node in, branch out); fetching is the ClusterReader's job.
 */
import { registerNeuron } from '../engine/devices/neuron/registration';
import { defaultEngineConfig } from '../config';

/** The pod fields the walk reads (Kubernetes JSON). */
export interface ClusterPod {
  readonly metadata: { readonly name?: string; readonly namespace?: string; readonly annotations?: Readonly<Record<string, string>> };
  readonly spec?: {
    readonly schedulerName?: string;
    readonly nodeName?: string;
    readonly containers?: readonly ClusterContainer[];
    readonly initContainers?: readonly ClusterContainer[];
  };
  readonly status?: { readonly phase?: string };
}
export interface ClusterContainer {
  readonly name: string;
  readonly resources?: {
    readonly limits?: Readonly<Record<string, string | number>>;
    readonly requests?: Readonly<Record<string, string | number>>;
  };
}
export interface ClusterNode {
  readonly metadata: { readonly name?: string; readonly annotations?: Readonly<Record<string, string>>; readonly labels?: Readonly<Record<string, string>> };
  readonly status?: { readonly allocatable?: Readonly<Record<string, string | number>>; readonly capacity?: Readonly<Record<string, string | number>> };
}

/** Read access to the cluster, as the user's kubeconfig allows. `undefined` = not found. */
export interface ClusterReader {
  getPod(namespace: string, name: string): Promise<ClusterPod | undefined>;
  getNode(name: string): Promise<ClusterNode | undefined>;
}

export interface TreeOptions {
  /** The schedulerName of the kube-scheduler profile that calls the extender. */
  readonly schedulerName: string;
  /** Resource names the scheduler manages (NVIDIA's count, memory, memory percentage, cores; AWS Neuron's devices, cores). */
  readonly resourceNames: readonly string[];
}

export const defaultTreeOptions: TreeOptions = {
  schedulerName: 'hami-scheduler',
  resourceNames: [
    defaultEngineConfig.resourceCountName,
    defaultEngineConfig.resourceMemoryName,
    defaultEngineConfig.resourceMemoryPercentageName,
    defaultEngineConfig.resourceCoreName,
    defaultEngineConfig.neuronResourceName,
    defaultEngineConfig.neuronCoreResourceName,
  ],
};

export interface TreeStep {
  readonly question: string;
  readonly answer: string;
  /** Whether this answer is the healthy one (the walk continues). */
  readonly ok: boolean;
}

export type TreeBranch =
  | 'pod-not-found'
  | 'no-managed-resources'
  | 'other-scheduler'
  | 'never-filtered'
  | 'node-missing'
  | 'node-unregistered'
  | 'record-expired'
  | 'bound-elsewhere';

export interface TreeResult {
  readonly steps: readonly TreeStep[];
  readonly branch: TreeBranch;
  readonly explanation: string;
  readonly advice: string;
}

const registerAnnotation = 'hami.io/node-nvidia-register';
const vgpuNodeAnnotation = 'hami.io/vgpu-node';

/** Walks the tree. `node` is the pod's node when it is bound (`undefined` if that node does not exist). */
export function walkDecisionTree(
  target: { readonly namespace: string; readonly name: string },
  pod: ClusterPod | undefined,
  node: ClusterNode | undefined,
  opts: TreeOptions = defaultTreeOptions,
): TreeResult {
  const steps: TreeStep[] = [];
  const podName = `${target.namespace}/${target.name}`;
  if (pod === undefined) {
    steps.push({ question: 'Does the pod exist?', answer: 'no', ok: false });
    return {
      steps,
      branch: 'pod-not-found',
      explanation: `Kubernetes has no pod ${podName}.`,
      advice: `Check the namespace and name (kubectl get pods -n ${target.namespace}).`,
    };
  }
  steps.push({ question: 'Does the pod exist?', answer: 'yes', ok: true });

  const managed = managedRequests(pod, opts.resourceNames);
  steps.push({
    question: 'Does it request managed GPU resources?',
    answer: managed.length === 0 ? `no (none of ${opts.resourceNames.join(', ')})` : `yes: ${managed.join(', ')}`,
    ok: managed.length > 0,
  });
  if (managed.length === 0) {
    return {
      steps,
      branch: 'no-managed-resources',
      explanation: 'The pod asks for no GPU resource this scheduler manages, so the filter passes it through without a decision and keeps no record.',
      advice: `If it needs a GPU, add ${opts.resourceNames[0] ?? 'nvidia.com/gpu'} (and optionally memory/cores) to the container limits.`,
    };
  }

  const schedulerName = pod.spec?.schedulerName ?? 'default-scheduler';
  const rightScheduler = schedulerName === opts.schedulerName;
  steps.push({ question: 'Which schedulerName?', answer: rightScheduler ? schedulerName : `${schedulerName} (expected ${opts.schedulerName})`, ok: rightScheduler });
  if (!rightScheduler) {
    return {
      steps,
      branch: 'other-scheduler',
      explanation: `The pod is scheduled by "${schedulerName}", which does not call this extender.`,
      advice: `Set spec.schedulerName: ${opts.schedulerName}, or check that HAMi's admission webhook (which sets it for GPU pods) is running and covers this namespace.`,
    };
  }

  const nodeName = pod.spec?.nodeName;
  steps.push({ question: 'Is it bound to a node?', answer: nodeName ? `yes: ${nodeName}` : `no (phase ${pod.status?.phase ?? 'unknown'})`, ok: true });
  if (!nodeName) {
    return {
      steps,
      branch: 'never-filtered',
      explanation: 'The pod waits for scheduling, but no filter call for it has reached the control plane.',
      advice:
        'Check the pod events (kubectl describe pod) for FailedScheduling, the kube-scheduler extender configuration (urlPrefix pointing at the relay, managedResources), and the relay (/readyz, logs).',
    };
  }

  if (node === undefined) {
    steps.push({ question: 'Is its node registered?', answer: `node ${nodeName} does not exist`, ok: false });
    return {
      steps,
      branch: 'node-missing',
      explanation: `The pod is bound to ${nodeName}, which no longer exists.`,
      advice: 'Delete the pod so its controller recreates it, and it is scheduled again.',
    };
  }
  const registration = nodeRegistration(node);
  steps.push({ question: 'Is its node registered?', answer: registration.registered ? 'yes' : `no: ${registration.reason}`, ok: registration.registered });
  if (!registration.registered) {
    return {
      steps,
      branch: 'node-unregistered',
      explanation: `The pod is bound to ${nodeName}, but that node's GPUs are not registered with HAMi (${registration.reason}).`,
      advice: `Check the HAMi device plugin on ${nodeName} and its ${registerAnnotation} annotation (hami-diag node ${nodeName}).`,
    };
  }
  if (pod.metadata.annotations?.[vgpuNodeAnnotation] !== undefined) {
    return {
      steps,
      branch: 'record-expired',
      explanation: `This scheduler placed the pod on ${nodeName}; its scheduling record has expired (records are kept for a retention window, 24 h by default).`,
      advice: 'Nothing to fix. Raise the record retention to keep scheduler logs longer.',
    };
  }
  return {
    steps,
    branch: 'bound-elsewhere',
    explanation: `The pod is on ${nodeName} without a decision from this scheduler (spec.nodeName set directly, or bound by another scheduler), so its GPUs were not assigned by HAMi.`,
    advice: 'Remove spec.nodeName from the pod template and let the HAMi scheduler place the pod.',
  };
}

function managedRequests(pod: ClusterPod, resourceNames: readonly string[]): string[] {
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  const found: string[] = [];
  for (const container of containers) {
    const resources = { ...container.resources?.requests, ...container.resources?.limits };
    for (const name of resourceNames) {
      const value = resources[name];
      if (value !== undefined && String(value) !== '0') found.push(`${name}=${value} (${container.name})`);
    }
  }
  return found;
}

/**
 * docs/api.md §9: registered when the register annotation parses and is non-empty and allocatable GPUs are absent or
 * above 0, or when the node advertises AWS Neuron devices the engine registers (docs/devices.md, "AWS Neuron").
 */
export function nodeRegistration(node: ClusterNode): { registered: true } | { registered: false; reason: string } {
  const neuron = registerNeuron({ metadata: { name: node.metadata.name ?? '', ...(node.metadata.labels ? { labels: node.metadata.labels } : {}) }, ...(node.status ? { status: node.status } : {}) }, defaultEngineConfig);
  if (neuron !== undefined && 'devices' in neuron) return { registered: true };
  const raw = node.metadata.annotations?.[registerAnnotation];
  if (raw === undefined || raw.trim() === '') return { registered: false, reason: `${registerAnnotation} is missing or empty` };
  const trimmed = raw.trim();
  if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      return { registered: false, reason: `${registerAnnotation} is not valid JSON` };
    }
    if (!Array.isArray(parsed) || parsed.length === 0) return { registered: false, reason: `${registerAnnotation} lists no devices` };
  }
  const allocatable = node.status?.allocatable?.[defaultEngineConfig.resourceCountName];
  if (allocatable !== undefined && !(Number(allocatable) > 0)) {
    return { registered: false, reason: `allocatable ${defaultEngineConfig.resourceCountName} is ${allocatable}` };
  }
  return { registered: true };
}
