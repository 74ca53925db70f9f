/**
 * When the scheduler has no record of a pod, HAMi's debugging decision tree tells why: does the pod
 * ask for managed GPU resources, does it name our scheduler, is it already bound, is its node
 * registered? The walk is pure (pod and node in, branch out) and asks the engine's own rules, with the configured
 * `EngineConfig`, whether the pod is managed and the node registered; fetching is the ClusterReader's job.
 */
import { z } from 'zod';
import { PodAnnotation } from '../engine/podAnnotations';
import { parseNodeRegistration } from '../engine/registration';
import { hasManagedResources, managedResourceNames } from '../engine/requests';
import type { EngineConfig } from '../engine/types';
import { absentIfNull, nodeSchema, podSchema, podSpecSchema } from '../wire/objects';

/** The engine's Pod (lib/wire/objects.ts) as the Kubernetes API returns it, with what the walk reads beyond it. */
export const clusterPodSchema = podSchema.extend({
  spec: absentIfNull(podSpecSchema.extend({ schedulerName: z.string().optional(), nodeName: z.string().optional() })),
  status: absentIfNull(z.object({ phase: z.string().optional() })),
});
export type ClusterPod = z.output<typeof clusterPodSchema>;
/** The engine's Node (lib/wire/objects.ts): registration is read from it. */
export const clusterNodeSchema = nodeSchema;
export type ClusterNode = z.output<typeof clusterNodeSchema>;

/** Read access to the cluster, as the user's kubeconfig allows. `undefined` = not found. */
export interface ClusterReader {
  getPod(namespace: string, name: string): Promise<ClusterPod | undefined>;
  getNode(name: string): Promise<ClusterNode | undefined>;
}

/** A reader, or why none is available (no kubeconfig): the 404 path then says so instead of guessing. */
export type ClusterAccess = { readonly kind: 'ready'; readonly reader: ClusterReader } | { readonly kind: 'unavailable'; readonly reason: string };

export interface TreeOptions {
  /** The schedulerName of the kube-scheduler profile that calls the extender. */
  readonly schedulerName: string;
  /** The control plane's engine settings (resource names above all): the walk applies its rules with them. */
  readonly engine: EngineConfig;
}

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

/** Walks the tree. `node` is the pod's node when it is bound (`undefined` if that node does not exist). */
export function walkDecisionTree(
  target: { readonly namespace: string; readonly name: string },
  pod: ClusterPod | undefined,
  node: ClusterNode | undefined,
  opts: TreeOptions,
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

  // The filter's own test (the engine's), so the walk and the filter never disagree on which pods are the scheduler's.
  const managed = hasManagedResources(pod, opts.engine);
  const names = managedResourceNames(opts.engine);
  const asked = managedQuantities(pod, names);
  steps.push({
    question: 'Does it request managed GPU resources?',
    answer: managed ? `yes: ${asked.join(', ')}` : asked.length === 0 ? `no (none of ${names.join(', ')})` : `no (${asked.join(', ')} asks for no device)`,
    ok: managed,
  });
  if (!managed) {
    return {
      steps,
      branch: 'no-managed-resources',
      explanation: 'The pod asks for no GPU resource this scheduler manages, so the filter passes it through without a decision and keeps no record.',
      advice: `If it needs a GPU, add ${names[0] ?? 'a device count'} (and optionally memory/cores) to the container limits.`,
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
  const registration = parseNodeRegistration(node, opts.engine);
  steps.push({ question: 'Is its node registered?', answer: registration.registered ? 'yes' : `no: ${registration.reason}`, ok: registration.registered });
  if (!registration.registered) {
    return {
      steps,
      branch: 'node-unregistered',
      explanation: `The pod is bound to ${nodeName}, but that node's GPUs are not registered with HAMi (${registration.reason}).`,
      advice: `Check the HAMi device plugin on ${nodeName} and the devices it registers (hami-diag node ${nodeName}).`,
    };
  }
  if (pod.metadata.annotations?.[PodAnnotation.VgpuNode] !== undefined) {
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

/** The managed quantities the pod's containers state, as `name=value (container)`, init containers first. */
function managedQuantities(pod: ClusterPod, names: readonly string[]): string[] {
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  const found: string[] = [];
  for (const container of containers) {
    const resources = { ...container.resources?.requests, ...container.resources?.limits };
    for (const name of names) {
      const value = resources[name];
      if (value !== undefined && String(value) !== '0') found.push(`${name}=${value} (${container.name})`);
    }
  }
  return found;
}
