/**
 * `/filter` (docs/api.md): decide where a GPU pod goes and book its cards so that no concurrent decision can
 * take the same memory. The decision is made on the warm view (./view.ts); the booking is one conditional
 * write guarded by the engine's claims, sent together with the decision record and the view's refresh, so a
 * filter in steady state waits on one store round trip. A refused guard re-reads that node and decides again.
 */
import { decide } from '../engine/decide';
import { podDeviceSelectors } from '../engine/devices';
import { encodePodDevices, PodAnnotation } from '../engine/podAnnotations';
import { hasManagedResources } from '../engine/requests';
import { parseNodeRegistration } from '../engine/registration';
import type { NodeLike, NodeState, PodLike, QuotaView } from '../engine/types';
import type { Decision } from '../engine/decision';
import { logDecision, logPreemption, logRealtime, recordDecisionMetrics } from '../diagnostics/decisionLogs';
import type { AheadNote, AttemptRecord, FilterRecord, PodRef, SelectorsRecord } from '../diagnostics/record';
import { DECIDED_AHEAD_ANNOTATION, decidedAheadMark } from '../wire/decidedAhead';
import { countFailedNodesByReason } from '../diagnostics/reasons';
import { WAITING_FOR_VICTIMS } from '../diagnostics/answer';
import { afterPendingIo } from '../clock';
import { ContentionError } from '../errors';
import {
  appContainersNeedLock,
  backoffMs,
  bookingCounts,
  cardUsesOf,
  countersAreExact,
  nextLedger,
  storedClaims,
  toQuotaView,
  type Booking,
  type NodeLedger,
} from './ledger';
import { patchPod, podEvent, type Effect } from './effects';
import type { ControlDeps } from './deps';
import type { NodeWrite } from './ports';
import type { ViewFreshness } from './view';
import type { FilterResult } from '../wire/extender';
import { pendingHold, preemptFor, type PendingHold } from './preemption';
import { stricterMode, type PreemptionMode } from '../wire/preemption';

export type { FilterResult } from '../wire/extender';

export interface FilterRequest {
  readonly pod: PodLike;
  readonly podRef: PodRef;
  /** nodeCacheCapable: true. */
  readonly nodeNames: readonly string[] | null;
  /** nodeCacheCapable: false, or cluster-autoscaler simulation. */
  readonly nodes: readonly NodeLike[] | null;
  /** The journal entry the relay's last forwarded cluster events produced: the view must include it. */
  readonly minViewSeq?: number;
  /** Decided ahead of kube-scheduler's filter, or a filter that could not use such a decision (docs/relay.md, "Deciding ahead"). */
  readonly ahead?: AheadNote;
  /** The relay's preemption mode (the chart's), when it is not `on`: the stricter of it and ours applies. */
  readonly preemptionMode?: PreemptionMode;
}

export interface FilterAnswer {
  readonly result: FilterResult;
  readonly effects: readonly Effect[];
  readonly attemptId?: string;
}

const MAX_RESERVE_ATTEMPTS = 24;

export async function filterPod(deps: ControlDeps, req: FilterRequest): Promise<FilterAnswer> {
  if (!hasManagedResources(req.pod, deps.config.engine)) {
    return { result: result({ Nodes: req.nodes ? { items: req.nodes } : null, NodeNames: req.nodeNames }), effects: [] };
  }
  if (req.nodes) return simulate(deps, req, req.nodes);
  return decideAndReserve(deps, req, req.nodeNames ?? []);
}

/** `Nodes` given: devices from the objects, usage zero, nothing written (HAMi's simulation path). */
async function simulate(deps: ControlDeps, req: FilterRequest, nodes: readonly NodeLike[]): Promise<FilterAnswer> {
  const nowMs = deps.runtime.clock.now();
  const states = new Map<string, NodeState>();
  for (const node of nodes) states.set(node.metadata.name, { name: node.metadata.name, registration: parseNodeRegistration(node, deps.config.engine), usage: {} });
  // Quota still follows the live ledger, as HAMi's simulation consults its live quota cache.
  await deps.view.prepare(req.minViewSeq);
  const quota = toQuotaView(req.podRef.namespace, await deps.view.quota(req.podRef.namespace), deps.view.all(), nowMs, req.podRef.uid);
  const decision = decide({ pod: req.pod, candidates: nodes.map((n) => n.metadata.name), nodes: states, ...(quota ? { quota } : {}), config: deps.config.engine, nowMs });
  switch (decision.kind) {
    case 'error':
      return { result: result({ Error: decision.message }), effects: [] };
    case 'noFit':
      return { result: result({ FailedNodes: decision.failedNodes }), effects: [] };
    case 'fit': {
      const best = nodes.find((n) => n.metadata.name === decision.node);
      return { result: result({ Nodes: { items: best ? [structuredClone(best)] : [] }, FailedNodes: decision.failedNodes }), effects: [] };
    }
  }
}

/**
 * Decides on the warm view and books the chosen cards under the engine's claims; a refused guard re-reads the node and
 * decides again. `candidates` are kube-scheduler's NodeNames, or every node for a decision made ahead (./decideAhead.ts).
 */
export async function decideAndReserve(deps: ControlDeps, req: FilterRequest, candidates: readonly string[], gate?: BookingGate): Promise<FilterAnswer> {
  const { runtime, view } = deps;
  const attemptId = runtime.newId();
  const pod = req.podRef;
  const started = runtime.clock.now();
  await view.prepare(req.minViewSeq);
  await view.learn(candidates);
  const quotaLimits = await view.quota(pod.namespace);
  // A preemptor whose victims are still leaving waits for them: its cards are held (docs/preemption.md).
  const held = pendingHold(heldLedgers(deps, pod.uid), pod.uid, runtime.clock.now());
  if (held !== undefined) return finishWaiting(deps, req, held, attemptId, started, view.freshness(runtime.clock.now()), candidates);

  for (let round = 0; round < MAX_RESERVE_ATTEMPTS; round++) {
    if (gate !== undefined) await gate.turn();
    const nowMs = runtime.clock.now();
    const freshness = view.freshness(nowMs);
    const quota = toQuotaView(pod.namespace, quotaLimits, view.all(), nowMs, pod.uid);
    const lockExpireMs = deps.config.nodeLockExpireSeconds * 1000;
    const avoid = deps.config.lockAware ? (name: string) => view.allocationsOn(name, nowMs, lockExpireMs) : undefined;
    const resolved = view.engineCandidates(candidates, nowMs, pod.uid);
    const decision = decide({
      pod: req.pod,
      candidates: resolved.candidates,
      candidateStates: resolved.states,
      nodes: view.engineNodes(nowMs, pod.uid),
      ...(quota ? { quota } : {}),
      config: deps.config.engine,
      nowMs,
      memo: view.memo,
      ...(avoid ? { avoid } : {}),
    });
    if (decision.kind !== 'fit') return finishWithoutFit(deps, req, decision, attemptId, started, freshness, quota);

    const node = view.get(decision.node);
    if (!node) throw new Error(`engine chose node ${decision.node}, which the view does not hold`);
    let recorded: PromiseSettledResult<void>;
    {
      // The booking, its record and the view's refresh travel together: one round trip on the critical path.
      // The booking leaves first; the record is packed and encoded while it is on its way. The refresh only
      // brings the view forward for later decisions, so the answer does not wait for it (ClusterView.refreshInBackground).
      const made = bookingOf(deps, req, decision, attemptId, nowMs);
      const booking = book(deps, req, decision, node, made);
      // The next pod of the batch decides on a view that holds this booking already, as a sequential decider's would.
      if (gate !== undefined) view.accept(gate.sent(node, pod.uid, made, nowMs));
      view.refreshInBackground();
      const record = afterPendingIo().then(() =>
        deps.records.putAttempt(
          attemptRecord(pod, attemptId, started, freshness, req.ahead, {
            status: 'passed',
            summary: decision.message,
            node: decision.node,
            score: decision.score,
            nodePolicy: decision.nodePolicy,
            evaluated: candidates.length,
            nodes: [],
            packed: decision.packEvidence(),
            devices: decision.devices,
            ...(decision.passedOver.length > 0 ? { passedOver: decision.passedOver } : {}),
            ...(decision.leastBusy !== undefined ? { leastBusy: decision.leastBusy } : {}),
            ...selectorsOf(req.pod),
          }),
          started,
        ),
      );
      const [booked, settledRecord] = await Promise.allSettled([booking, record]);
      recorded = settledRecord;
      if (booked.status === 'rejected') {
        gate?.settled(node, pod.uid, nowMs);
        throw booked.reason;
      }
      const write = booked.value;
      if (!write.ok) {
        // The node changed under us (or its cards filled up): refresh it alone and decide again.
        decision.release();
        const current = write.current ?? (await deps.ledger.readNodes([decision.node], { consistent: true })).get(decision.node);
        if (current) view.accept(gate ? gate.settled(current, pod.uid, nowMs) : current);
        else gate?.settled(node, pod.uid, nowMs);
        await runtime.sleep(backoffMs(runtime.random(), round));
        continue;
      }
      view.accept(gate ? gate.settled(write.node, pod.uid, nowMs) : write.node);
    }
    if (recorded.status === 'rejected') {
      // Without a record the decision is not explainable: undo the booking (it would expire anyway).
      await releaseBooking(deps, decision.node, pod.uid).catch(() => undefined);
      throw recorded.reason;
    }
    // A batch deciding ahead gives nothing back: a booking the pod already holds is a live filter's, made meanwhile.
    if (req.ahead?.kind !== 'decided') await releaseEarlierBookings(deps, pod.uid, decision.node, nowMs);
    observe(deps, `${pod.namespace}/${pod.name}`, attemptId, decision, started);
    // Its record packed and its evidence logged: nothing reads the decision's rows any more (lib/engine/evidence.ts, RowStore).
    decision.release();
    const vgpuTime = String(Math.floor(nowMs / 1000));
    return {
      attemptId,
      result: result({ NodeNames: [decision.node] }),
      effects: [
        patchPod(
          pod,
          {
            [PodAnnotation.VgpuNode]: decision.node,
            [PodAnnotation.VgpuTime]: vgpuTime,
            ...decision.podAnnotations,
            ...(req.ahead?.kind === 'decided' ? { [DECIDED_AHEAD_ANNOTATION]: decidedAheadMark(decision.node, vgpuTime) } : {}),
          },
          { [PodAnnotation.VgpuNode]: decision.node },
        ),
        podEvent(pod, 'Normal', 'FilteringSucceed', decision.message),
      ],
    };
  }
  const message = `could not reserve devices for ${pod.namespace}/${pod.name} after ${MAX_RESERVE_ATTEMPTS} attempts: other decisions kept taking the same cards`;
  await deps.records.putAttempt(attemptRecord(pod, attemptId, started, view.freshness(runtime.clock.now()), req.ahead, { status: 'failed', summary: message, evaluated: candidates.length, nodes: [] }), started);
  throw new ContentionError(message);
}

/**
 * Keeps the pods of one decide-ahead batch (./decideAhead.ts) in queue order: each decides in its turn, on a view that
 * holds the bookings of the pods before it (still on their way), and passes the turn on once its own is sent. The
 * bookings travel side by side; the guards settle any two that meet on one card.
 */
export interface BookingGate {
  /** Resolves when this pod may decide: at once after its first decision. */
  turn(): Promise<void>;
  /** This pod's booking is sent: the node for the view (with every booking of the batch on its way there); the next pod's turn. */
  sent(node: NodeLedger, uid: string, booking: Booking, nowMs: number): NodeLedger;
  /** This pod's write ended: the node as it came back, for the view, with the batch's other bookings still on their way. */
  settled(node: NodeLedger, uid: string, nowMs: number): NodeLedger;
}

/**
 * Books the decision on the chosen node. The fast way adds to the cards' counters under the engine's claims,
 * so concurrent filters that both fit do not conflict; the whole-node write (guarded by the version) is used
 * when the counters are not exact yet (an expired reservation still counted, a re-filter of an expired one), and
 * when the engine says cards are taken by position (MIG placements, NeuronCore indexes), which counters cannot guard.
 */
function book(deps: ControlDeps, req: FilterRequest, decision: Extract<Decision, { kind: 'fit' }>, node: NodeLedger, booking: Booking): Promise<NodeWrite> {
  const uid = req.podRef.uid;
  const nowMs = booking.placedAtMs ?? deps.runtime.clock.now();
  const previous = node.bookings[uid];
  if (!decision.bookWholeNode && countersAreExact(node, nowMs) && (previous === undefined || bookingCounts(previous, nowMs))) {
    return deps.ledger.reserve({
      node: node.name,
      uid,
      booking,
      ...(previous ? { replacing: previous } : {}),
      registrationVersion: node.registrationVersion,
      claims: storedClaims(decision.claims, previous?.uses ?? []),
    });
  }
  return deps.ledger.putNode(nextLedger(node, nowMs, { bookings: { ...node.bookings, [uid]: booking } }), node.version);
}

/** The booking a decision makes: a reservation until the pod is seen with its annotations (docs/state.md). */
function bookingOf(deps: ControlDeps, req: FilterRequest, decision: Extract<Decision, { kind: 'fit' }>, attemptId: string, nowMs: number): Booking {
  const initCount = req.pod.spec?.initContainers?.length ?? 0;
  return {
    namespace: req.podRef.namespace,
    name: req.podRef.name,
    state: 'reserved',
    devices: encodePodDevices(decision.devices),
    initCount,
    initDone: false,
    uses: cardUsesOf(decision.devices, initCount, false),
    holdsAppCards: appContainersNeedLock(decision.devices, initCount),
    origin: 'decided',
    expiresAtMs: nowMs + deps.config.reservationTtlSeconds * 1000,
    placedAtMs: nowMs,
    attemptId,
    ...(decision.parts !== undefined ? { parts: decision.parts } : {}),
    // Preemption weighs it (docs/preemption.md); Kubernetes sets it on every pod at admission.
    ...(req.pod.spec?.priority !== undefined ? { priority: req.pod.spec.priority } : {}),
  };
}

/** A pod filtered again drops what it held on other nodes than `kept` (HAMi drops its cached allocation first). */
async function releaseEarlierBookings(deps: ControlDeps, uid: string, kept: string | undefined, nowMs: number): Promise<void> {
  for (const name of nodesBooking(deps, uid, nowMs)) if (name !== kept) await releaseBooking(deps, name, uid);
}

/** The nodes where the view has a booking of the pod that still counts (tombstones stay, so late events cannot revive the pod). */
export function nodesBooking(deps: ControlDeps, uid: string, nowMs: number): string[] {
  return deps.view.holders(uid).filter((name) => {
    const held = deps.view.get(name)?.bookings[uid];
    return held !== undefined && bookingCounts(held, nowMs);
  });
}

/**
 * Removes a pod's booking from one node: first from the view's copy (the write is guarded by its version, so a stale
 * copy costs one refused write), then from the node as re-read after each conflict.
 */
export async function releaseBooking(deps: ControlDeps, node: string, uid: string): Promise<void> {
  // Only a copy that holds the booking is taken on trust; one without it may just be behind.
  const viewed = deps.view.get(node);
  let known = viewed?.bookings[uid] !== undefined ? viewed : undefined;
  for (let round = 0; round < MAX_RESERVE_ATTEMPTS; round++) {
    const current = known ?? (await deps.ledger.readNodes([node], { consistent: true })).get(node);
    known = undefined;
    if (!current || current.bookings[uid] === undefined) return;
    const nowMs = deps.runtime.clock.now();
    const bookings = { ...current.bookings };
    delete bookings[uid];
    const write = await deps.ledger.putNode(nextLedger(current, nowMs, { bookings }), current.version);
    if (write.ok) {
      deps.view.accept(write.node);
      return;
    }
    // The node as stored when the refusal carries it (DynamoDB does; dynalite does not: read it then).
    known = write.current;
    await deps.runtime.sleep(backoffMs(deps.runtime.random(), round));
  }
  throw new ContentionError(`could not release the booking of pod ${uid} on node ${node}`);
}

async function finishWithoutFit(
  deps: ControlDeps,
  req: FilterRequest,
  decision: Exclude<Decision, { kind: 'fit' }>,
  attemptId: string,
  started: number,
  freshness: ViewFreshness,
  quota: QuotaView | undefined,
): Promise<FilterAnswer> {
  const pod = req.podRef;
  // A decision made ahead never preempts: its no fit is not applied, and kube-scheduler's live filter decides (and preempts) then.
  const preemption =
    decision.kind === 'noFit' && req.nodeNames !== null && req.ahead?.kind !== 'decided'
      ? await preemptFor(deps, {
          pod: req.pod,
          podRef: pod,
          candidates: req.nodeNames,
          ...(quota ? { quota } : {}),
          attemptId,
          mode: stricterMode(deps.config.preemption, req.preemptionMode),
        })
      : undefined;
  // A pod filtered again gives back what it held before also when nothing fits now (a decision made ahead on a node
  // kube-scheduler no longer sends, say): its cards would otherwise stay taken until the reservation expired.
  // Preemption's hold stays; a batch deciding ahead applies nothing of its no fit.
  if (req.ahead?.kind !== 'decided') await releaseEarlierBookings(deps, pod.uid, preemption?.heldOn, deps.runtime.clock.now());
  if (preemption !== undefined) logPreemption(deps.logger, { attemptId, pod: `${pod.namespace}/${pod.name}` }, preemption.record);
  const filter: FilterRecord =
    decision.kind === 'error'
      ? { status: 'failed', summary: decision.message, evaluated: 0, nodes: [] }
      : {
          status: 'failed',
          summary: decision.message,
          reasonEvents: decision.reasonEvents,
          evaluated: req.nodeNames?.length ?? 0,
          // From the failure texts, as the metrics count them: the listing's summary reads these, not the evidence.
          reasons: countFailedNodesByReason(decision.failedNodes).map(([code, nodes]) => ({ code, nodes })),
          ...(decision.requestType !== undefined ? { requestType: decision.requestType } : {}),
          ...selectorsOf(req.pod),
          nodes: [],
          packed: decision.packEvidence(),
          ...(preemption ? { preemption: preemption.record } : {}),
        };
  deps.view.refreshInBackground();
  await deps.records.putAttempt(attemptRecord(pod, attemptId, started, freshness, req.ahead, filter), started);
  observe(deps, `${pod.namespace}/${pod.name}`, attemptId, decision, started);
  if (decision.kind === 'error') {
    return { attemptId, result: result({ Error: decision.message }), effects: [podEvent(pod, 'Warning', 'FilteringFailed', decision.message)] };
  }
  decision.release();
  return {
    attemptId,
    result: result({ FailedNodes: decision.failedNodes }),
    effects: [
      ...decision.reasonEvents.map((text) => podEvent(pod, 'Warning', 'FilteringFailed', text)),
      podEvent(pod, 'Warning', 'FilteringFailed', decision.message),
      ...(preemption?.effects ?? []),
    ],
  };
}

/** The ledgers of the nodes holding a booking of pod `uid`, as the view has them. */
function heldLedgers(deps: ControlDeps, uid: string): NodeLedger[] {
  const ledgers: NodeLedger[] = [];
  for (const name of deps.view.holders(uid)) {
    const ledger = deps.view.get(name);
    if (ledger) ledgers.push(ledger);
  }
  return ledgers;
}

/** A preemptor whose victims have not all left: no decision yet, every candidate failed with what it waits for. */
async function finishWaiting(
  deps: ControlDeps,
  req: FilterRequest,
  held: PendingHold,
  attemptId: string,
  started: number,
  freshness: ViewFreshness,
  candidates: readonly string[],
): Promise<FilterAnswer> {
  const pod = req.podRef;
  const until = held.hold.expiresAtMs === undefined ? '' : ` (cards held until ${new Date(held.hold.expiresAtMs).toISOString()})`;
  const summary = `${WAITING_FOR_VICTIMS} ${held.node}: ${held.waitingFor.join(', ')}${until}`;
  const cards = [...new Set(held.hold.uses.map((use) => use.uuid))];
  await deps.records.putAttempt(
    attemptRecord(pod, attemptId, started, freshness, req.ahead, {
      status: 'failed',
      summary,
      evaluated: candidates.length,
      nodes: [],
      preemption: {
        outcome: 'waiting',
        summary,
        node: held.node,
        cards,
        ...(held.hold.expiresAtMs !== undefined ? { holdUntil: new Date(held.hold.expiresAtMs).toISOString() } : {}),
      },
    }),
    started,
  );
  const failed: Record<string, string> = {};
  for (const name of candidates) failed[name] = summary;
  return { attemptId, result: result({ FailedNodes: failed }), effects: [] };
}

function observe(deps: ControlDeps, pod: string, attemptId: string, decision: Decision, started: number): void {
  const ctx = { attemptId, pod };
  if (decision.kind !== 'error') {
    logDecision(deps.logger, ctx, () => decision.evidence);
    logRealtime(deps.logger, ctx, decision.realtime);
  }
  recordDecisionMetrics(deps.metrics, decision, deps.runtime.clock.now() - started);
}

/** The pod's card selection for its record, when it sets one (the pod's side of a CardTypeMismatch or CardUuidMismatch). */
function selectorsOf(pod: PodLike): { selectors?: SelectorsRecord } {
  const parsed = podDeviceSelectors(pod.metadata?.annotations ?? {});
  const selectors: SelectorsRecord = {
    ...(parsed.useTypes.length > 0 ? { useTypes: parsed.useTypes } : {}),
    ...(parsed.noUseTypes.length > 0 ? { noUseTypes: parsed.noUseTypes } : {}),
    ...(parsed.useUuids.size > 0 ? { useUuids: [...parsed.useUuids] } : {}),
    ...(parsed.noUseUuids.size > 0 ? { noUseUuids: [...parsed.noUseUuids] } : {}),
    ...(parsed.vgpuMode !== undefined ? { vgpuMode: parsed.vgpuMode } : {}),
    ...(parsed.numaBind ? { numaBind: true as const } : {}),
  };
  return Object.keys(selectors).length > 0 ? { selectors } : {};
}

function attemptRecord(pod: PodRef, attemptId: string, timeMs: number, view: ViewFreshness, ahead: AheadNote | undefined, filter: FilterRecord): AttemptRecord {
  return {
    pod,
    attemptId,
    attempt: 0,
    time: new Date(timeMs).toISOString(),
    view,
    ...(ahead !== undefined ? { ahead } : {}),
    filter,
    bind: filter.status === 'passed' ? { status: 'pending', summary: '' } : { status: 'pending', summary: 'not attempted: no node passed the filter' },
  };
}

function result(fields: Partial<FilterResult>): FilterResult {
  return { Nodes: null, NodeNames: null, FailedNodes: null, FailedAndUnresolvableNodes: null, Error: '', ...fields };
}
