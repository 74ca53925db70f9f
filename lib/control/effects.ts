/**
 * Building Effects (docs/api.md §3; their shapes are ../wire/effects.ts): the Kubernetes writes the handlers decide
 * and the relay applies, in order. Only reasons of EventReason are built here.
 */
import type { PodRef } from '../diagnostics/record';
import { NODE_LOCK_ANNOTATION, nodeLockValue, type NodeLock } from './ledger';
import type { Effect, EventReason, EventType } from '../wire/effects';

export type { Effect, EventReason } from '../wire/effects';

export function podEvent(pod: PodRef, type: EventType, reason: EventReason, message: string): Effect {
  return { kind: 'RecordEvent', namespace: pod.namespace, name: pod.name, uid: pod.uid, type, reason, message };
}

export function nodeEvent(node: string, type: EventType, reason: EventReason, message: string): Effect {
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

export function patchNode(name: string, annotations: Readonly<Record<string, string | null>>, ifAnnotations?: Readonly<Record<string, string>>): Effect {
  return { kind: 'PatchNodeAnnotations', name, annotations, ...(ifAnnotations ? { ifAnnotations } : {}) };
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

/**
 * The mirror follows the lock (docs/locks.md): a lock the control plane ended without the device plugin deleting its
 * annotation has it deleted, but only while the Node still names that very lock, so a late or repeated Effect (two
 * relay replicas, a resent batch) never deletes the next holder's value.
 */
export function clearLockMirror(node: string, lock: NodeLock): Effect {
  return clearLockAnnotation(node, nodeLockValue(lock));
}

/** Deletes the Node's lock annotation only while it is exactly `value`. */
export function clearLockAnnotation(node: string, value: string): Effect {
  return patchNode(node, { [NODE_LOCK_ANNOTATION]: null }, { [NODE_LOCK_ANNOTATION]: value });
}
