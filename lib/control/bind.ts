/**
 * `/bind` and `/bind/outcome` (docs/api.md, docs/locks.md): HAMi's node lock around the Binding.
 * The common case costs one conditional write: take the lock if it is free, expired or ours, and the pod is
 * booked on the node with a regular container holding cards. The lock is mirrored on the Node as HAMi writes it
 * (`hami.io/mutex.lock`), because HAMi's device plugin finds the pod it allocates for by that value and releases
 * the lock by deleting it. While another allocation holds the lock, the bind waits for it (bounded); a bind
 * that still has to give up is remembered on the lock, and nudged when the lock ends.
 */
import { formatGoDuration } from '../clock';
import { BindPhase, PodAnnotation } from '../engine/podAnnotations';
import { logLockContention, recordLockContention } from '../diagnostics/decisionLogs';
import type { PodRef } from '../diagnostics/record';
import { lockHeldByOther, NODE_LOCK_ANNOTATION, nodeLockValue, type Booking, type NodeLedger, type NodeLock } from './ledger';
import { bindPod, clearLockMirror, nudges, patchNode, patchPod, podEvent, type Effect } from './effects';
import type { ControlDeps } from './deps';
import type { BindingResult } from '../wire/extender';

export interface BindRequest {
  readonly pod: PodRef;
  readonly node: string;
  /**
   * The caller (the relay's per-node bind queue, docs/relay.md, "Bind hand-over") waits for the lock itself: a lock
   * held by another allocation is answered at once with `lockHeld`, and the bind is neither recorded as failed nor
   * remembered as a waiter.
   */
  readonly handOver?: boolean;
}

export interface BindAnswer {
  readonly result: BindingResult;
  readonly effects: readonly Effect[];
  /** Hand-over binds only: the lock's holder (`namespace/name`); the caller sends the bind again once it ends. */
  readonly lockHeld?: string;
}

export interface OutcomeRequest extends BindRequest {
  /** "" on success, else the failure text. */
  readonly error: string;
  /** RFC 3339: when the relay answered the pod's filter from its decision made ahead, if it did. */
  readonly filterUsedAhead?: string;
}

/** The longest failure text stored in the scheduler log; longer texts are cut, with a note. */
export const MAX_OUTCOME_TEXT = 4096;

/** Reads while waiting for a lock: 50 ms doubling to 400 ms, so a wait of seconds costs a few reads. */
const WAIT_FIRST_MS = 50;
const WAIT_MAX_MS = 400;
const MAX_LOCK_ROUNDS = 64;

export async function bindPodToNode(deps: ControlDeps, req: BindRequest): Promise<BindAnswer> {
  const { pod, node } = req;
  const { runtime, ledger, config } = deps;
  const waitUntil = runtime.clock.now() + config.bindLockWaitSeconds * 1000;
  let pause = WAIT_FIRST_MS;
  for (let round = 0; round < MAX_LOCK_ROUNDS; round++) {
    const nowMs = runtime.clock.now();
    const lock: NodeLock = {
      holder: `${pod.namespace}/${pod.name}`,
      holderUid: pod.uid,
      sinceMs: nowMs,
      expiresAtMs: nowMs + config.nodeLockExpireSeconds * 1000,
    };
    const taken = await ledger.acquireLock(node, lock, nowMs);
    if (taken.ok) return allocating(pod, node, taken.node.lock ?? lock, nowMs);

    const current = taken.current ?? (await ledger.readNodes([node], { consistent: true })).get(node);
    const booked = current?.bookings[pod.uid];
    if (!current || !booked || booked.state === 'gone') {
      return fail(deps, req, `pod ${pod.namespace}/${pod.name} has no device booking on node ${node}; it must pass the filter first`);
    }
    // Only regular containers' cards need the lock (HAMi's bind, step 3).
    if (!booked.holdsAppCards) return allocating(pod, node, undefined, nowMs);
    const held = current.lock;
    // Free for this pod by now (released or expired since the write, or already its own): take it on the next round.
    if (!lockHeldByOther(held, pod.uid, nowMs)) continue;
    if (holderIsDone(current, held)) {
      // A lock whose holder is gone or finished is not contention: take it over (its waiters stay with it).
      const successor = { ...lock, ...(held.waiters ? { waiters: held.waiters } : {}) };
      const replaced = await ledger.replaceLock(node, successor, held);
      if (replaced.ok) return allocating(pod, node, successor, nowMs);
      continue;
    }
    if (req.handOver === true) return { result: { Error: contention(node, config.nodeLockExpireSeconds) }, effects: [], lockHeld: held.holder };
    if (runtime.clock.now() + pause <= waitUntil) {
      // Another allocation is under way: wait for it rather than send the pod back to kube-scheduler's queue.
      await runtime.sleep(pause);
      pause = Math.min(pause * 2, WAIT_MAX_MS);
      continue;
    }
    // Given up: remembered on the lock, so the pod is nudged the moment the lock ends.
    if (!(await ledger.addLockWaiter(node, held.holderUid, pod.uid, `${pod.namespace}/${pod.name}`)).ok) continue;
    logLockContention(deps.logger, { pod: lock.holder, node, holder: held.holder, attemptId: booked.attemptId ?? '' });
    recordLockContention(deps.metrics);
    return fail(deps, req, contention(node, config.nodeLockExpireSeconds));
  }
  // The lock kept changing hands while we looked: that is contention, in HAMi's words.
  return fail(deps, req, contention(node, config.nodeLockExpireSeconds));
}

function contention(node: string, expireSeconds: number): string {
  return `node ${node} has been locked within ${formatGoDuration(expireSeconds)}: node lock contention`;
}

/** The holder no longer needs the lock: deleted, finished, or its device allocation already ended. */
function holderIsDone(node: NodeLedger, lock: NodeLock): boolean {
  const holder: Booking | undefined = node.bookings[lock.holderUid];
  if (!holder || holder.state === 'gone') return true;
  return holder.bindPhase === BindPhase.Success || holder.bindPhase === BindPhase.Failed;
}

/** The lock on the Node first (the device plugin looks the pod up by it), then the pod's bind phase, then the Binding. */
function allocating(pod: PodRef, node: string, lock: NodeLock | undefined, nowMs: number): BindAnswer {
  return {
    result: { Error: '' },
    effects: [
      ...(lock ? [patchNode(node, { [NODE_LOCK_ANNOTATION]: nodeLockValue(lock) })] : []),
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

/**
 * The relay applied (or failed to apply) the bind Effects. Success keeps the lock: the device plugin ends it.
 * Failure releases it, removes its mirror from the Node (guarded: only while it still names this lock), and nudges
 * the pods that waited for it.
 */
export async function recordBindOutcome(deps: ControlDeps, req: OutcomeRequest): Promise<{ readonly effects: readonly Effect[] }> {
  const { pod, node } = req;
  const nowMs = deps.runtime.clock.now();
  const time = new Date(nowMs).toISOString();
  if (req.error === '') {
    const message = `Successfully binding node [${node}] to ${pod.namespace}/${pod.name}`;
    await deps.records.putBind(pod, { status: 'passed', summary: message, node, time, ...(req.filterUsedAhead !== undefined ? { filterUsedAhead: req.filterUsedAhead } : {}) }, nowMs);
    return { effects: [podEvent(pod, 'Normal', 'BindingSucceed', message)] };
  }
  const error = req.error.length > MAX_OUTCOME_TEXT ? `${req.error.slice(0, MAX_OUTCOME_TEXT)}… (${req.error.length - MAX_OUTCOME_TEXT} more characters cut)` : req.error;
  const released = await deps.ledger.releaseLock(node, pod.uid);
  await deps.records.putBind(pod, { status: 'failed', summary: error, node, time }, nowMs);
  return {
    effects: [
      ...(released.ok ? [clearLockMirror(node, released.released), ...nudges(released.released.waiters, nowMs)] : []),
      podEvent(pod, 'Warning', 'BindingFailed', error),
    ],
  };
}
