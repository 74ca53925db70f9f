/**
 * Effects (docs/api.md §3): the Kubernetes writes the handlers decide and the relay applies, in order.
 */
import type { PodRef } from '../diagnostics/record';

export type Effect =
  | {
      readonly kind: 'PatchPodAnnotations';
      readonly namespace: string;
      readonly name: string;
      readonly uid: string;
      readonly annotations: Readonly<Record<string, string | null>>;
      readonly labels?: Readonly<Record<string, string | null>>;
    }
  | { readonly kind: 'BindPod'; readonly namespace: string; readonly name: string; readonly uid: string; readonly node: string }
  | { readonly kind: 'PatchNodeAnnotations'; readonly name: string; readonly annotations: Readonly<Record<string, string | null>> }
  | {
      readonly kind: 'RecordEvent';
      readonly namespace: string;
      readonly name: string;
      readonly uid: string;
      readonly type: 'Normal' | 'Warning';
      readonly reason: EventReason;
      readonly message: string;
    }
  | {
      /** A core/v1 Event on a Node (cluster-scoped: recorded in `default`, as the kubelet records its own). */
      readonly kind: 'RecordNodeEvent';
      readonly name: string;
      readonly type: 'Normal' | 'Warning';
      readonly reason: EventReason;
      readonly message: string;
    };

/**
 * HAMi's event reasons (docs/hami-parity.md, "Events"), and ours: a scheduler-owned annotation changed after
 * placement; a pod adopted from its annotations took a card past its capacity (on the pod and on its Node).
 */
export type EventReason = 'FilteringSucceed' | 'FilteringFailed' | 'BindingSucceed' | 'BindingFailed' | 'SchedulerAnnotationsChanged' | 'AdoptedPastCapacity';

export function podEvent(pod: PodRef, type: 'Normal' | 'Warning', reason: EventReason, message: string): Effect {
  return { kind: 'RecordEvent', namespace: pod.namespace, name: pod.name, uid: pod.uid, type, reason, message };
}

export function nodeEvent(node: string, type: 'Normal' | 'Warning', reason: EventReason, message: string): Effect {
  return { kind: 'RecordNodeEvent', name: node, type, reason, message };
}

export function patchPod(
  pod: PodRef,
  annotations: Readonly<Record<string, string | null>>,
  labels?: Readonly<Record<string, string | null>>,
): Effect {
  return { kind: 'PatchPodAnnotations', namespace: pod.namespace, name: pod.name, uid: pod.uid, annotations, ...(labels ? { labels } : {}) };
}

export function bindPod(pod: PodRef, node: string): Effect {
  return { kind: 'BindPod', namespace: pod.namespace, name: pod.name, uid: pod.uid, node };
}

export function patchNode(name: string, annotations: Readonly<Record<string, string | null>>): Effect {
  return { kind: 'PatchNodeAnnotations', name, annotations };
}

/**
 * A pod annotation the relay sets to bring a pod back into kube-scheduler's active queue at once (an update
 * of the pod itself moves a parked pod; node updates do not, for GPU pods). Its value is the time.
 */
export const REQUEUE_ANNOTATION = 'hami.io/requeue';

/** Nudges for pods that met a lock which has now ended. */
export function nudges(waiters: Readonly<Record<string, string>> | undefined, nowMs: number): Effect[] {
  return Object.entries(waiters ?? {}).map(([uid, ref]) => {
    const [namespace = '', name = ''] = ref.split('/');
    return patchPod({ namespace, name, uid }, { [REQUEUE_ANNOTATION]: new Date(nowMs).toISOString() });
  });
}
