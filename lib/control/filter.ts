/**
 * `/filter` (CONTRACT 2): decide where a GPU pod goes and reserve its cards so no concurrent decision
 * can take the same memory. The reservation is one conditional write on the chosen node's entry; a lost
 * race re-reads that node only and decides again.
 */
import { decide } from '../engine/decide';
import { encodePodDevices, PodAnnotation } from '../engine/podAnnotations';
import { hasManagedResources } from '../engine/requests';
import { parseNodeRegistration } from '../engine/registration';
import type { Decision, DeviceInfo, NodeLike, NodeState, PodLike } from '../engine/types';
import { logDecision, logRealtime, recordDecisionMetrics } from '../diagnostics/decisionLogs';
import type { AttemptRecord, FilterRecord, PodRef } from '../diagnostics/record';
import { ContentionError } from '../errors';
import { cardUsesOf, decodeRegistration, type CardUse, type NodeEntry, type PodEntry } from '../store/model';
import type { CardClaim, ClusterSnapshot, WriteOutcome } from '../store/stateStore';
import { appContainersUseCards, backoffMs, countersAreExact, nextVersion, nodesHoldingPod, podCounts, seal, toNodeState, toQuotaView } from './ledger';
import { patchPod, podEvent, type Effect } from './effects';
import type { ControlDeps } from './deps';

export interface FilterRequest {
  readonly pod: PodLike;
  readonly podRef: PodRef;
  /** nodeCacheCapable: true. */
  readonly nodeNames: readonly string[] | null;
  /** nodeCacheCapable: false, or cluster-autoscaler simulation. */
  readonly nodes: readonly NodeLike[] | null;
}

/** ExtenderFilterResult with Go's null-for-unset encoding. */
export interface FilterResult {
  readonly Nodes: { readonly items: readonly NodeLike[] } | null;
  readonly NodeNames: readonly string[] | null;
  readonly FailedNodes: Readonly<Record<string, string>> | null;
  readonly FailedAndUnresolvableNodes: null;
  readonly Error: string;
}

export interface FilterAnswer {
  readonly result: FilterResult;
  readonly effects: readonly Effect[];
  readonly attemptId?: string;
}

const MAX_RESERVE_ATTEMPTS = 24;

export async function filterPod(deps: ControlDeps, req: FilterRequest): Promise<FilterAnswer> {
  const { config } = deps;
  if (!hasManagedResources(req.pod, config.engine)) {
    return { result: result({ Nodes: req.nodes ? { items: req.nodes } : null, NodeNames: req.nodeNames }), effects: [] };
  }
  if (req.nodes) return simulate(deps, req, req.nodes);
  return decideAndReserve(deps, req, req.nodeNames ?? []);
}

/** `Nodes` given: devices from the objects, usage zero, nothing written (hami-spec 7.5). */
async function simulate(deps: ControlDeps, req: FilterRequest, nodes: readonly NodeLike[]): Promise<FilterAnswer> {
  const nowMs = deps.runtime.clock.now();
  const states = new Map<string, NodeState>();
  for (const node of nodes) {
    const registration = parseNodeRegistration(node, deps.config.engine);
    states.set(node.metadata.name, { name: node.metadata.name, registration, usage: {} });
  }
  // Quota still follows the live ledger, as HAMi's simulation consults its live quota cache.
  const cluster = await deps.state.readCluster(req.podRef.namespace);
  const quota = toQuotaView(req.podRef.namespace, cluster.quota, cluster.nodes, nowMs, req.podRef.uid);
  const decision = decide({
    pod: req.pod,
    candidates: nodes.map((n) => n.metadata.name),
    nodes: states,
    ...(quota ? { quota } : {}),
    config: deps.config.engine,
    nowMs,
  });
  switch (decision.kind) {
    case 'error':
      return { result: result({ Error: decision.message }), effects: [] };
    case 'noFit':
      return { result: result({ FailedNodes: decision.failedNodes }), effects: [] };
    case 'fit': {
      const best = nodes.find((n) => n.metadata.name === decision.node);
      return {
        result: result({ Nodes: { items: best ? [structuredClone(best)] : [] }, FailedNodes: decision.failedNodes }),
        effects: [],
      };
    }
  }
}

async function decideAndReserve(deps: ControlDeps, req: FilterRequest, candidates: readonly string[]): Promise<FilterAnswer> {
  const { runtime, state } = deps;
  const attemptId = runtime.newId();
  const pod = req.podRef;
  const podKey = `${pod.namespace}/${pod.name}`;
  const started = runtime.clock.now();
  let cluster: ClusterSnapshot = await state.readCluster(pod.namespace);

  for (let round = 0; round < MAX_RESERVE_ATTEMPTS; round++) {
    const nowMs = runtime.clock.now();
    const decision = decideOn(deps, req, candidates, cluster, nowMs);
    if (decision.kind !== 'fit') {
      return finishWithoutFit(deps, req, decision, attemptId, started);
    }
    const entry = cluster.nodes.get(decision.node);
    if (!entry) throw new Error(`engine chose node ${decision.node}, which has no entry`);
    if ((await reserve(deps, req, decision, entry, attemptId, nowMs)) === 'conflict') {
      // The node changed under us (or its cards filled up): refresh it alone and decide again.
      const fresh = await state.readNode(decision.node);
      cluster = withNode(cluster, decision.node, fresh.entry);
      await runtime.sleep(backoffMs(runtime.random(), round));
      continue;
    }
    await releaseEarlierBookings(deps, pod.uid, decision.node, cluster, nowMs);
    const record = attemptRecord(pod, attemptId, nowMs, {
      status: 'passed',
      summary: decision.message,
      node: decision.node,
      score: decision.score,
      nodes: decision.evidence,
      devices: decision.devices,
    });
    try {
      await deps.records.putAttempt(record, nowMs);
    } catch (err) {
      // Without a record the decision is not explainable: undo the reservation (it expires anyway).
      await releaseBooking(deps, decision.node, pod.uid).catch(() => undefined);
      throw err;
    }
    observe(deps, podKey, attemptId, decision, started);
    const encoded = encodePodDevices(decision.devices);
    return {
      attemptId,
      result: result({ NodeNames: [decision.node] }),
      effects: [
        patchPod(
          pod,
          {
            [PodAnnotation.VgpuNode]: decision.node,
            [PodAnnotation.VgpuTime]: String(Math.floor(nowMs / 1000)),
            [PodAnnotation.DevicesToAllocate]: encoded,
            [PodAnnotation.DevicesAllocated]: encoded,
          },
          { [PodAnnotation.VgpuNode]: decision.node },
        ),
        podEvent(pod, 'Normal', 'FilteringSucceed', decision.message),
      ],
    };
  }
  throw new ContentionError(`could not reserve devices for ${podKey} after ${MAX_RESERVE_ATTEMPTS} attempts`);
}

function decideOn(deps: ControlDeps, req: FilterRequest, candidates: readonly string[], cluster: ClusterSnapshot, nowMs: number): Decision {
  const states = new Map<string, NodeState>();
  for (const name of candidates) {
    const entry = cluster.nodes.get(name);
    if (entry?.reg && entry.deleted !== true) states.set(name, toNodeState(name, entry, nowMs, req.podRef.uid));
  }
  const quota = toQuotaView(req.podRef.namespace, cluster.quota, cluster.nodes, nowMs, req.podRef.uid);
  return decide({ pod: req.pod, candidates, nodes: states, ...(quota ? { quota } : {}), config: deps.config.engine, nowMs });
}

/**
 * Books the decision on the chosen node. The fast way adds to the cards' counters under capacity guards,
 * so concurrent filters that both fit do not conflict; the whole-entry rewrite (guarded by the version)
 * is used when the counters are not exact yet (expired reservations to prune, a re-filtered pod, old entries).
 */
async function reserve(
  deps: ControlDeps,
  req: FilterRequest,
  decision: Extract<Decision, { kind: 'fit' }>,
  entry: NodeEntry,
  attemptId: string,
  nowMs: number,
): Promise<WriteOutcome> {
  const uid = req.podRef.uid;
  const initCount = req.pod.spec?.initContainers?.length ?? 0;
  const uses = cardUsesOf(decision.devices, initCount, false);
  const booking: PodEntry = {
    ns: req.podRef.namespace,
    name: req.podRef.name,
    st: 'reserved',
    dev: encodePodDevices(decision.devices),
    init: initCount,
    u: uses,
    appGpu: appContainersUseCards(decision.devices, initCount),
    exp: nowMs + deps.config.reservationTtlSeconds * 1000,
    attemptId,
  };
  const registration = entry.reg !== undefined ? decodeRegistration(entry.reg) : undefined;
  const previous = entry.pods[uid];
  const replaceable = previous === undefined || podCounts(previous, nowMs);
  if (registration?.registered && entry.regv !== undefined && replaceable && countersAreExact(entry, nowMs)) {
    const claims = cardClaims(req, decision, uses, previous?.u ?? [], registration.devices, deps.config.engine.gpuSchedulerPolicy);
    if (claims) return deps.state.reserve(decision.node, uid, booking, entry.regv, claims, previous);
  }
  const next = nextVersion(entry, nowMs);
  next.pods[uid] = booking;
  return deps.state.putNodeEntry(decision.node, seal(next, nowMs), entry.ver);
}

/**
 * Per card the pod takes, what it adds and the most the counters may hold before it, per HAMi's checks:
 * memory and cores must fit (a container asking no cores needs a core left, check 14), a slot must be
 * free, and a whole-card or mutex request needs the card unused.
 */
function cardClaims(
  req: FilterRequest,
  decision: Extract<Decision, { kind: 'fit' }>,
  uses: readonly CardUse[],
  previousUses: readonly CardUse[],
  devices: readonly DeviceInfo[],
  configuredPolicy: string,
): CardClaim[] | undefined {
  const policy = req.pod.metadata.annotations?.[PodAnnotation.GpuSchedulerPolicy] ?? configuredPolicy;
  const mutex = policy.split(',').some((p) => p.trim() === 'mutex');
  const before = new Map(previousUses.map(([uuid, slots, mem, cores]) => [uuid, { slots: Math.max(slots, 1), mem, cores }]));
  const after = new Map(uses.map(([uuid, slots, mem, cores]) => [uuid, { slots: Math.max(slots, 1), mem, cores }]));
  const claims: CardClaim[] = [];
  for (const uuid of new Set([...before.keys(), ...after.keys()])) {
    const device = devices.find((d) => d.id === uuid);
    if (!device) return undefined;
    const old = before.get(uuid) ?? { slots: 0, mem: 0, cores: 0 };
    const now = after.get(uuid) ?? { slots: 0, mem: 0, cores: 0 };
    const taken = decision.devices.flat().filter((d) => d.uuid === uuid);
    const wantsNoCores = taken.some((d) => d.usedcores === 0);
    const wholeCard = device.devcore === 100 && taken.some((d) => d.usedcores >= 100);
    claims.push({
      uuid,
      slots: now.slots - old.slots,
      mem: now.mem - old.mem,
      cores: now.cores - old.cores,
      // Counters include the replaced booking: what may be there before = capacity - new share + old share.
      maxSlotsBefore: device.count - now.slots + old.slots,
      maxMemBefore: device.devmem - now.mem + old.mem,
      maxCoresBefore: device.devcore - now.cores + old.cores - (wantsNoCores ? 1 : 0),
      exclusive: taken.length > 0 && (mutex || wholeCard),
      slotsHeldBefore: old.slots,
    });
  }
  return claims;
}

/** A pod filtered again drops what it held elsewhere (HAMi drops its cached allocation first). */
async function releaseEarlierBookings(deps: ControlDeps, uid: string, chosen: string, cluster: ClusterSnapshot, nowMs: number): Promise<void> {
  for (const node of nodesHoldingPod(cluster.nodes, uid)) {
    if (node === chosen) continue;
    const held = cluster.nodes.get(node)?.pods[uid];
    // Only bookings that still count are given back; tombstones stay, so late events cannot revive the pod.
    if (!held || !podCounts(held, nowMs)) continue;
    await releaseBooking(deps, node, uid);
  }
}

/** Remove a pod's booking from one node, re-reading on conflict. */
export async function releaseBooking(deps: ControlDeps, node: string, uid: string): Promise<void> {
  for (let round = 0; round < MAX_RESERVE_ATTEMPTS; round++) {
    const { entry } = await deps.state.readNode(node);
    if (!entry || entry.pods[uid] === undefined) return;
    const nowMs = deps.runtime.clock.now();
    const next = nextVersion(entry, nowMs);
    delete next.pods[uid];
    if ((await deps.state.putNodeEntry(node, seal(next, nowMs), entry.ver)) === 'ok') return;
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
): Promise<FilterAnswer> {
  const pod = req.podRef;
  const nowMs = deps.runtime.clock.now();
  const filter: FilterRecord =
    decision.kind === 'error'
      ? { status: 'failed', summary: decision.message, nodes: [] }
      : { status: 'failed', summary: decision.message, reasonEvents: decision.reasonEvents, nodes: decision.evidence };
  await deps.records.putAttempt(attemptRecord(pod, attemptId, nowMs, filter), nowMs);
  observe(deps, `${pod.namespace}/${pod.name}`, attemptId, decision, started);
  if (decision.kind === 'error') {
    return {
      attemptId,
      result: result({ Error: decision.message }),
      effects: [podEvent(pod, 'Warning', 'FilteringFailed', decision.message)],
    };
  }
  return {
    attemptId,
    result: result({ FailedNodes: decision.failedNodes }),
    effects: [
      ...decision.reasonEvents.map((text) => podEvent(pod, 'Warning', 'FilteringFailed', text)),
      podEvent(pod, 'Warning', 'FilteringFailed', decision.message),
    ],
  };
}

function observe(deps: ControlDeps, pod: string, attemptId: string, decision: Decision, started: number): void {
  const ctx = { attemptId, pod };
  if (decision.kind !== 'error') {
    logDecision(deps.logger, ctx, decision.evidence);
    logRealtime(deps.logger, ctx, decision.realtime);
  }
  recordDecisionMetrics(deps.metrics, decision, deps.runtime.clock.now() - started);
}

function attemptRecord(pod: PodRef, attemptId: string, nowMs: number, filter: FilterRecord): AttemptRecord {
  return {
    pod,
    attemptId,
    attempt: 0,
    time: new Date(nowMs).toISOString(),
    filter,
    bind: filter.status === 'passed' ? { status: 'pending', summary: '' } : { status: 'pending', summary: 'not attempted: no node passed the filter' },
  };
}

function withNode(cluster: ClusterSnapshot, node: string, entry: NodeEntry | undefined): ClusterSnapshot {
  const nodes = new Map(cluster.nodes);
  if (entry) nodes.set(node, entry);
  else nodes.delete(node);
  return { ...cluster, nodes };
}

function result(fields: Partial<FilterResult>): FilterResult {
  return { Nodes: null, NodeNames: null, FailedNodes: null, FailedAndUnresolvableNodes: null, Error: '', ...fields };
}
