/**
 * `/bind` and `/bind/outcome` (CONTRACT 2 and 9): HAMi's node lock around the Binding.
 * The common case costs one conditional write: take the lock if it is free, expired or ours, and the pod
 * is booked on the node with a regular container holding cards. Anything else is examined with one read.
 */
import { formatGoDuration } from '../clock';
import { BindPhase, PodAnnotation } from '../engine/podAnnotations';
import { logLockContention, recordLockContention } from '../diagnostics/decisionLogs';
import type { PodRef } from '../diagnostics/record';
import type { NodeLock, PodEntry } from '../store/model';
import { bindPod, patchPod, podEvent, type Effect } from './effects';
import type { ControlDeps } from './deps';

export interface BindRequest {
  readonly pod: PodRef;
  readonly node: string;
}

export interface BindAnswer {
  readonly result: { readonly Error: string };
  readonly effects: readonly Effect[];
}

export interface OutcomeRequest extends BindRequest {
  /** "" on success, else the failure text. */
  readonly error: string;
}

const MAX_LOCK_ROUNDS = 5;

export async function bindPodToNode(deps: ControlDeps, req: BindRequest): Promise<BindAnswer> {
  const { pod, node } = req;
  const { runtime, state, config } = deps;
  for (let round = 0; round < MAX_LOCK_ROUNDS; round++) {
    const nowMs = runtime.clock.now();
    const lock: NodeLock = {
      holder: `${pod.namespace}/${pod.name}`,
      holderUid: pod.uid,
      since: nowMs,
      expiresAt: nowMs + config.nodeLockExpireSeconds * 1000,
    };
    if ((await state.acquireLock(node, lock, nowMs, pod.uid)) === 'ok') return allocating(pod, node, nowMs);

    const { entry, lock: current } = await state.readNode(node);
    const booked = entry?.pods[pod.uid];
    if (!booked || booked.st === 'gone') {
      return fail(deps, req, `pod ${pod.namespace}/${pod.name} has no device booking on node ${node}; it must pass the filter first`);
    }
    // Only regular containers' cards need the lock (hami-spec 6.1 step 3).
    if (booked.appGpu !== true) return allocating(pod, node, nowMs);
    if (!current || current.expiresAt < nowMs || current.holderUid === pod.uid) continue;
    if (holderIsDone(entry?.pods[current.holderUid])) {
      // A lock whose holder is gone or finished is not contention: take it over, if nobody else did.
      if ((await state.replaceLock(node, lock, current)) === 'ok') return allocating(pod, node, nowMs);
      continue;
    }
    logLockContention(deps.logger, { pod: lock.holder, node, holder: current.holder, attemptId: booked.attemptId ?? '' });
    recordLockContention(deps.metrics);
    return fail(deps, req, `node ${node} has been locked within ${formatGoDuration(config.nodeLockExpireSeconds)}: node lock contention`);
  }
  // The lock kept changing hands while we looked: that is contention, in HAMi's words.
  return fail(deps, req, `node ${node} has been locked within ${formatGoDuration(config.nodeLockExpireSeconds)}: node lock contention`);
}

/** The holder no longer needs the lock: deleted, finished, or its device allocation already ended. */
function holderIsDone(holder: PodEntry | undefined): boolean {
  if (!holder || holder.st === 'gone') return true;
  if (holder.phase === 'Succeeded' || holder.phase === 'Failed') return true;
  return holder.bindPhase === BindPhase.Success || holder.bindPhase === BindPhase.Failed;
}

function allocating(pod: PodRef, node: string, nowMs: number): BindAnswer {
  return {
    result: { Error: '' },
    effects: [
      patchPod(pod, { [PodAnnotation.BindPhase]: BindPhase.Allocating, [PodAnnotation.BindTime]: String(Math.floor(nowMs / 1000)) }),
      bindPod(pod, node),
    ],
  };
}

async function fail(deps: ControlDeps, req: BindRequest, text: string): Promise<BindAnswer> {
  const nowMs = deps.runtime.clock.now();
  await deps.records.putBind(req.pod, { status: 'failed', summary: text, node: req.node, time: new Date(nowMs).toISOString() }, nowMs);
  return { result: { Error: text }, effects: [podEvent(req.pod, 'Warning', 'BindingFailed', text)] };
}

/** The relay applied (or failed to apply) the bind Effects. Success keeps the lock: the device plugin ends it. */
export async function recordBindOutcome(deps: ControlDeps, req: OutcomeRequest): Promise<{ readonly effects: readonly Effect[] }> {
  const { pod, node } = req;
  const nowMs = deps.runtime.clock.now();
  const time = new Date(nowMs).toISOString();
  if (req.error === '') {
    const message = `Successfully binding node [${node}] to ${pod.namespace}/${pod.name}`;
    await deps.records.putBind(pod, { status: 'passed', summary: message, node, time }, nowMs);
    return { effects: [podEvent(pod, 'Normal', 'BindingSucceed', message)] };
  }
  await deps.state.releaseLock(node, pod.uid);
  await deps.records.putBind(pod, { status: 'failed', summary: req.error, node, time }, nowMs);
  return { effects: [podEvent(pod, 'Warning', 'BindingFailed', req.error)] };
}
