/**
 * Decide-ahead (docs/relay.md, "Deciding ahead"; docs/api.md §2): many pods decided in one call, before
 * kube-scheduler asks. Each pod goes through the live filter's own decide-and-book (./filter.ts), with every node a
 * candidate, in kube-scheduler's queue order (priority, then creation time): each decides in its turn on a view that holds the
 * bookings of the pods before it, still on their way. Bookings leave side by side, a few at once: two that meet on
 * one node are both admitted when both fit, else the guard refuses one, which re-reads the node and decides again
 * (never over-booked).
 */
import { forEachAtMost } from '../concurrency';
import { errorMessage } from '../errors';
import { hasManagedResources } from '../engine/requests';
import type { PodLike } from '../engine/types';
import { queueOrder, type AheadAnswer, type AheadDecision } from '../wire/decidedAhead';
import type { ControlDeps } from './deps';
import { decideAndReserve, nodesBooking, type BookingGate } from './filter';
import { nextLedger, type Booking, type NodeLedger } from './ledger';

export interface AheadPod {
  readonly pod: PodLike;
  /** `spec.priority` (kube-scheduler's queue sorts by it first, highest first); absent is 0. */
  readonly priority: number;
  /** `metadata.creationTimestamp` in epoch ms (the queue's second key, oldest first); absent sorts last. */
  readonly createdMs: number | undefined;
}

export interface AheadRequest {
  readonly pods: readonly AheadPod[];
  readonly minViewSeq?: number;
}

/** Bookings in flight at once: enough to hide the store's round trip, few enough that decisions see each other's. */
export const AHEAD_CONCURRENCY = 8;

export async function decideAhead(deps: ControlDeps, req: AheadRequest): Promise<AheadAnswer> {
  const { view, runtime } = deps;
  await view.prepare(req.minViewSeq);
  const freshness = view.freshness(runtime.clock.now());
  const decidedAt = new Date(runtime.clock.now()).toISOString();
  // Every node the view holds: what kube-scheduler sends when it scores every feasible node (the chart's default).
  const candidates = [...view.all()].filter((n) => !n.deleted).map((n) => n.name).sort();
  const ordered = queueOrder(req.pods, (p) => p);
  const answers = new Map<AheadPod, AheadDecision>();
  const gates = batchGate();
  await forEachAtMost(ordered, AHEAD_CONCURRENCY, async (item) => {
    // Taken as the pod starts: pods start in queue order, so turns follow it.
    const gate = gates.next();
    try {
      answers.set(item, await decideOne(deps, item.pod, candidates, req.minViewSeq, gate));
    } finally {
      gate.end();
    }
  });
  return { decisions: req.pods.map((p) => answers.get(p)!), view: freshness, decidedAt };
}

/**
 * The batch's turns and its bookings on their way: pods take turns in queue order (the order they start in), and each
 * decides on a view that holds the bookings of the pods before it, sent or still on their way, as a sequential
 * decider's view would. A booking leaves the overlay when its write ends (stored, or refused: the node as found).
 */
function batchGate(): { next(): BookingGate & { end(): void } } {
  let previous: Promise<void> = Promise.resolve();
  const onTheirWay = new Map<string, Map<string, Booking>>();
  const overlaid = (node: NodeLedger, nowMs: number): NodeLedger => {
    const mine = onTheirWay.get(node.name);
    if (mine === undefined || mine.size === 0) return node;
    // The node's own version: the write's outcome, or a refusal's node of the same version, still replaces it.
    return { ...nextLedger(node, nowMs, { bookings: { ...node.bookings, ...Object.fromEntries(mine) } }), version: node.version };
  };
  return {
    next() {
      const turnCame = previous;
      let pass = (): void => undefined;
      previous = new Promise<void>((resolve) => {
        pass = resolve;
      });
      let waited = false;
      return {
        async turn() {
          if (waited) return;
          waited = true;
          await turnCame;
        },
        sent(node, uid, booking, nowMs) {
          let mine = onTheirWay.get(node.name);
          if (mine === undefined) onTheirWay.set(node.name, (mine = new Map()));
          mine.set(uid, booking);
          pass();
          return overlaid(node, nowMs);
        },
        settled(node, uid, nowMs) {
          for (const bookings of onTheirWay.values()) bookings.delete(uid);
          return overlaid(node, nowMs);
        },
        // No booking (no fit, an error, or nothing to decide): the next pod's turn.
        end: () => pass(),
      };
    },
  };
}

async function decideOne(deps: ControlDeps, pod: PodLike, candidates: readonly string[], minViewSeq: number | undefined, gate: BookingGate): Promise<AheadDecision> {
  const podRef = { namespace: pod.metadata.namespace ?? 'default', name: pod.metadata.name, uid: pod.metadata.uid ?? '' };
  const base = { uid: podRef.uid, namespace: podRef.namespace, name: podRef.name };
  if (!hasManagedResources(pod, deps.config.engine)) return { ...base, status: 'skipped', Effects: [] };
  // Booked already: kube-scheduler's filter stopped waiting for this batch and decided the pod live (docs/relay.md).
  const booked = nodesBooking(deps, podRef.uid, deps.runtime.clock.now());
  if (booked.length > 0) {
    deps.logger.info('DecideAheadSkipped', { pod: `${podRef.namespace}/${podRef.name}`, node: booked.join(',') });
    return { ...base, status: 'skipped', Effects: [] };
  }
  try {
    const answer = await decideAndReserve(
      deps,
      { pod, podRef, nodeNames: candidates, nodes: null, ...(minViewSeq !== undefined ? { minViewSeq } : {}), ahead: { kind: 'decided' } },
      candidates,
      gate,
    );
    const { result, effects, attemptId } = answer;
    const ids = attemptId !== undefined ? { attemptId } : {};
    const node = result.NodeNames?.[0];
    if (node !== undefined) return { ...base, ...ids, status: 'fit', node, Effects: [...effects] };
    // No fit (or an error) is not applied ahead: kube-scheduler's own filter decides again, live, and says so then.
    if (result.Error !== '') return { ...base, ...ids, status: 'error', error: result.Error, Effects: [] };
    return { ...base, ...ids, status: 'noFit', failedNodes: { ...(result.FailedNodes ?? {}) }, Effects: [] };
  } catch (err) {
    deps.logger.warn('DecideAheadFailed', { pod: `${podRef.namespace}/${podRef.name}`, error: errorMessage(err) });
    return { ...base, status: 'error', error: errorMessage(err), Effects: [] };
  }
}
