/**
 * The filter decision (docs/hami-parity.md §4 and §5, docs/api.md §8 and §9): for every candidate node, fit the
 * pod's containers card by card in HAMi's order, score the fitting nodes, choose one, and keep the
 * evidence of every check that failed with the numbers it compared.
 *
 * Speed: a decision visits every card of every candidate (8,000 cards for 1,000 nodes), so the
 * per-card loop allocates nothing: the evidence of each tried card is one row of numbers in the
 * decision's `DecisionTrace` (./evidence), turned into objects only when `evidence` is read. Per-node working
 * usage, card scores and the card order live in typed scratch arrays reused across nodes; the card
 * order is an index array sorted with a small stable insertion sort (what Go's `sort.Sort` does
 * for up to 12 elements). What stays alive per node is a handful of small objects.
 */
import { DecisionTrace } from './evidence';
import type { CardFigures, CardOutcome } from './evidence';
import { fitNodeMessage, genReason, noAvailableNodeMessage, reasonEvents } from './messages';
import type { DeviceScoringWeights, DeviceSelectors, GpuPolicy, NodePolicy } from './podAnnotations';
import {
  DeviceScoringWeightsError,
  deviceScoringWeightsOf,
  gpuPolicyOf,
  nodePolicyOf,
  parseDeviceSelectors,
  realtimeOverrideOf,
  typeAllowed,
  uuidAllowed,
} from './podAnnotations';
import { describeQuantityProblems, PercentageUnset, podContainerRequests, podRequestProblems } from './requests';
import { NodeFailure, NVIDIA, ReasonCode } from './types';
import type {
  ContainerDevice,
  ContainerRequest,
  DecideInput,
  Decision,
  DeviceInfo,
  NodeEvidence,
  NodeRegistration,
  NodeState,
  PairScores,
  QuotaView,
  RealtimeDeviceUsage,
  RealtimeMode,
  RealtimeNote,
} from './types';
import { collapsePodUsage } from './usage';

/** `util.Weight` in HAMi's score formulas. */
const SCORE_WEIGHT = 10;
const f32 = Math.fround;

// ---------------------------------------------------------------------------------------------
// What is fixed for one pod

interface PodContainer {
  readonly name: string;
  /** Position in the aligned device list (init containers first). */
  readonly index: number;
  readonly init: boolean;
  readonly request: ContainerRequest | undefined;
}

interface RealtimeSettings {
  readonly mode: Exclude<RealtimeMode, 'disabled'>;
  readonly marginMiB: number;
  readonly maxAgeMs: number;
  readonly nowMs: number;
}

interface PodPlan {
  readonly namespaceQuota: QuotaView | undefined;
  readonly memoryFactor: number;
  readonly containers: readonly PodContainer[];
  readonly initCount: number;
  readonly selectors: DeviceSelectors;
  readonly gpuPolicy: GpuPolicy;
  readonly nodePolicy: NodePolicy;
  readonly weights: DeviceScoringWeights;
  /** Undefined when the real-time check is off for this pod. */
  readonly realtime: RealtimeSettings | undefined;
  /** Whether use/nouse gputype or vgpu-mode constrain cards at all. */
  readonly selectsByType: boolean;
  /** Whether use/nouse gpuuuid constrain cards at all. */
  readonly selectsByUuid: boolean;
  /** Type/mode checks depend only on the card's type and mode strings: cache them per pod. */
  readonly typeCheckCache: Map<string, boolean>;
}

function planPod(input: DecideInput, weights: DeviceScoringWeights): PodPlan {
  const { pod, config } = input;
  const annotations = pod.metadata.annotations ?? {};
  const requests = podContainerRequests(pod, config);
  const containers: PodContainer[] = [];
  (pod.spec?.initContainers ?? []).forEach((c, i) => containers.push({ name: c.name, index: i, init: true, request: requests.init[i] }));
  const initCount = containers.length;
  (pod.spec?.containers ?? []).forEach((c, i) => containers.push({ name: c.name, index: initCount + i, init: false, request: requests.app[i] }));
  const selectors = parseDeviceSelectors(annotations);
  const realtimeOn = realtimeOverrideOf(annotations) ?? config.realtime.enabled;
  const mode = config.realtime.mode;
  return {
    namespaceQuota: input.quota,
    memoryFactor: config.memoryFactor,
    containers,
    initCount,
    selectors,
    gpuPolicy: gpuPolicyOf(annotations, config.gpuSchedulerPolicy, selectors.numaBind),
    nodePolicy: nodePolicyOf(annotations, config.nodeSchedulerPolicy),
    weights,
    realtime:
      realtimeOn && mode !== 'disabled'
        ? { mode, marginMiB: config.realtime.marginMiB, maxAgeMs: config.realtime.maxAgeMs, nowMs: input.nowMs }
        : undefined,
    selectsByType: selectors.useTypes.length > 0 || selectors.noUseTypes.length > 0 || selectors.vgpuMode !== undefined,
    selectsByUuid: selectors.useUuids.size > 0 || selectors.noUseUuids.size > 0,
    typeCheckCache: new Map(),
  };
}

// ---------------------------------------------------------------------------------------------
// What is fixed for one registration (cached across decisions)

interface PreparedNode {
  readonly devices: readonly DeviceInfo[];
  /** Positions (into `devices`) of the cards Fit sees: type contains "nvidia" (docs/hami-parity.md §4.1). */
  readonly nvidiaCards: Int32Array;
  readonly cordoned: Uint8Array;
  readonly numa: Int32Array;
  /** `type` and `mode` joined, the key of the per-pod type check cache. */
  readonly typeKeys: readonly string[];
  readonly pairScores: PairScores;
  /** Node score denominators over all cards (docs/hami-parity.md §5.1). */
  readonly totalSlots: number;
  readonly totalCores: number;
  readonly totalMem: number;
}

const EMPTY_NODE: PreparedNode = {
  devices: [],
  nvidiaCards: new Int32Array(0),
  cordoned: new Uint8Array(0),
  numa: new Int32Array(0),
  typeKeys: [],
  pairScores: {},
  totalSlots: 0,
  totalCores: 0,
  totalMem: 0,
};
const NO_REQUEST: ContainerRequest = { nums: 0, type: NVIDIA, memreq: 0, mempercentagereq: PercentageUnset, coresreq: 0 };

const preparedNodes = new WeakMap<NodeRegistration, PreparedNode>();

function prepareNode(registration: Extract<NodeRegistration, { registered: true }>): PreparedNode {
  const cached = preparedNodes.get(registration);
  if (cached !== undefined) return cached;
  const { devices } = registration;
  const cordonedIds = new Set(registration.cordoned);
  const nvidia: number[] = [];
  let totalSlots = 0;
  let totalCores = 0;
  let totalMem = 0;
  devices.forEach((device, position) => {
    if (device.type.toLowerCase().includes('nvidia')) nvidia.push(position);
    totalSlots += device.count;
    totalCores += device.devcore;
    totalMem += device.devmem;
  });
  const prepared: PreparedNode = {
    devices,
    nvidiaCards: Int32Array.from(nvidia),
    cordoned: Uint8Array.from(devices, (d) => (cordonedIds.has(d.id) ? 1 : 0)),
    numa: Int32Array.from(devices, (d) => d.numa),
    typeKeys: devices.map((d) => `${d.type}\u0000${d.mode}`),
    pairScores: registration.pairScores,
    totalSlots,
    totalCores,
    totalMem,
  };
  preparedNodes.set(registration, prepared);
  return prepared;
}

// ---------------------------------------------------------------------------------------------
// Scratch space reused across nodes (decide is synchronous and never re-entered)

class Scratch {
  // Usage figures are int32 in HAMi; int32 scratch also keeps evidence numbers small integers.
  baseUsed = new Int32Array(16);
  baseMem = new Int32Array(16);
  baseCores = new Int32Array(16);
  used = new Int32Array(16);
  usedMem = new Int32Array(16);
  usedCores = new Int32Array(16);
  cardScore = new Float64Array(16);
  order = new Int32Array(16);
  picked = new Int32Array(16);
  /** Evidence row of each pick, so a pick given back can be relabelled. */
  pickedRow = new Int32Array(16);
  pickedMem = new Int32Array(16);
  pickedCores = new Int32Array(16);
  /** What the store must guard for each pick: the most the card's booked usage may hold before this pod. */
  pickedMaxSlots = new Int32Array(16);
  pickedMaxMem = new Int32Array(16);
  pickedMaxCores = new Int32Array(16);
  pickedExclusive = new Uint8Array(16);
  /** Index into the decision's real-time notes per card, -1 when none yet for this node. */
  noteAt = new Int32Array(16);
  reasonCounts = new Int32Array(REASONS.length);

  ensure(cards: number): void {
    if (cards <= this.order.length) return;
    const size = Math.max(cards, this.order.length * 2);
    for (const key of [
      'baseUsed',
      'baseMem',
      'baseCores',
      'used',
      'usedMem',
      'usedCores',
      'pickedMem',
      'pickedCores',
      'pickedMaxSlots',
      'pickedMaxMem',
      'pickedMaxCores',
    ] as const) {
      this[key] = new Int32Array(size);
    }
    this.pickedExclusive = new Uint8Array(size);
    this.cardScore = new Float64Array(size);
    this.order = new Int32Array(size);
    this.picked = new Int32Array(size);
    this.pickedRow = new Int32Array(size);
    this.noteAt = new Int32Array(size);
  }

  /** A fresh working copy of the node's booked usage. */
  resetWorkingUsage(cards: number): void {
    for (let p = 0; p < cards; p++) {
      this.used[p] = this.baseUsed[p]!;
      this.usedMem[p] = this.baseMem[p]!;
      this.usedCores[p] = this.baseCores[p]!;
    }
  }
}

/** Reason codes Fit counts, in one fixed order so counts live in a typed array. */
const REASONS: readonly ReasonCode[] = [
  ReasonCode.CardNotHealth,
  ReasonCode.CardCordoned,
  ReasonCode.CardTypeMismatch,
  ReasonCode.NumaNotFit,
  ReasonCode.CardUuidMismatch,
  ReasonCode.CardTimeSlicingExhausted,
  ReasonCode.ExclusiveDeviceAllocateConflict,
  ReasonCode.ResourceQuotaNotFit,
  ReasonCode.CardInsufficientMemory,
  ReasonCode.CardRealtimeInsufficientMemory,
  ReasonCode.CardInsufficientCore,
  ReasonCode.CardComputeUnitsExhausted,
  ReasonCode.AllocatedCardsInsufficientRequest,
];
const reasonSlot = new Map<ReasonCode, number>(REASONS.map((r, i) => [r, i]));

const scratch = new Scratch();

// ---------------------------------------------------------------------------------------------
// The decision

export function decide(input: DecideInput): Decision {
  const problems = podRequestProblems(input.pod, input.config);
  if (problems.length > 0) return { kind: 'error', message: describeQuantityProblems(problems) };
  let weights: DeviceScoringWeights;
  try {
    weights = deviceScoringWeightsOf(input.pod.metadata.annotations ?? {});
  } catch (error) {
    if (error instanceof DeviceScoringWeightsError) return { kind: 'error', message: error.message };
    throw error;
  }
  const plan = planPod(input, weights);
  const notes: RealtimeNote[] = [];
  const trace = new DecisionTrace(plan.containers, input.candidates.length);
  const fitNodes: { name: string; score: number; trace: number }[] = [];
  const failedNodes: Record<string, string> = {};
  const run = new FitRun({ plan, notes, trace, node: EMPTY_NODE, nodeRow: 0, request: NO_REQUEST, realtime: undefined });

  for (const name of input.candidates) {
    const state = input.nodes.get(name);
    if (state === undefined || !state.registration.registered || state.unschedulable !== undefined) {
      const reason = state?.unschedulable ?? NodeFailure.Unregistered;
      trace.failedNode(name, reason);
      failedNodes[name] = reason;
      continue;
    }
    const outcome = evaluateNode(run, state, prepareNode(state.registration));
    if (outcome.reason === undefined) fitNodes.push({ name, score: outcome.score, trace: outcome.trace });
    else failedNodes[name] = outcome.reason;
  }

  // The evidence objects are built when first read (see ./evidence): deciding itself keeps only
  // numbers per card. An own enumerable accessor, so JSON.stringify and spreads include it; the
  // first read replaces it with the built array on the decision itself (not in this function's
  // closure, which lives from the start of the decision and would keep the objects of decisions
  // already dropped alive across young-generation collections).
  const evidenceOnFirstRead = (decision: object): readonly NodeEvidence[] => {
    const evidence = trace.evidence();
    // Reflect: on a decision someone froze, every read builds the evidence again instead of throwing.
    Reflect.defineProperty(decision, 'evidence', { value: evidence, enumerable: true, configurable: true });
    return evidence;
  };

  // Not enumerable: JSON, spreads and key lists of a decision show its evidence, not this.
  const withPacking = <D extends Extract<Decision, { packEvidence: unknown }>>(decision: Omit<D, 'packEvidence'>): D =>
    Object.defineProperty(decision, 'packEvidence', { value: () => trace.pack(), enumerable: false }) as D;

  if (fitNodes.length === 0) {
    return withPacking<Extract<Decision, { kind: 'noFit' }>>({
      kind: 'noFit',
      failedNodes,
      message: noAvailableNodeMessage(input.candidates.length),
      reasonEvents: reasonEvents(failedNodes),
      get evidence() {
        return evidenceOnFirstRead(this);
      },
      realtime: notes,
    });
  }
  // HAMi's listing order; equal scores by node name so the choice is deterministic (docs/api.md §9).
  const spread = plan.nodePolicy === 'spread';
  fitNodes.sort((a, b) => (a.score !== b.score ? (spread ? b.score - a.score : a.score - b.score) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // HAMi takes the last node listed; asked to, pass over nodes that are busy with another allocation while any other fits.
  const passedOver: { name: string; holder: string }[] = [];
  let pick = fitNodes.length - 1;
  if (input.avoid) {
    for (let i = fitNodes.length - 1; i >= 0; i--) {
      const holder = input.avoid(fitNodes[i]!.name);
      if (holder === undefined) break;
      passedOver.push({ name: fitNodes[i]!.name, holder });
    }
    if (passedOver.length === fitNodes.length) passedOver.length = 0;
    else pick = fitNodes.length - 1 - passedOver.length;
  }
  const chosen = fitNodes[pick]!;
  const listed = fitNodes.map(({ name, score }) => ({ name, score }));
  return withPacking<Extract<Decision, { kind: 'fit' }>>({
    kind: 'fit',
    node: chosen.name,
    score: chosen.score,
    devices: trace.podDevices(chosen.trace),
    claims: trace.claims(chosen.trace, plan.initCount),
    fitNodes: listed,
    passedOver,
    failedNodes,
    message: fitNodeMessage(chosen.name, input.candidates.length, listed),
    get evidence() {
      return evidenceOnFirstRead(this);
    },
    realtime: notes,
  });
}

// ---------------------------------------------------------------------------------------------
// One node (docs/hami-parity.md §4.4)

/** The node's trace row, its score, and why it failed (undefined when the pod fits). */
interface NodeOutcome {
  readonly trace: number;
  readonly score: number;
  readonly reason: string | undefined;
}

/** Reused for every node: the caller copies what it keeps. */
const nodeOutcome: { trace: number; score: number; reason: string | undefined } = { trace: 0, score: 0, reason: undefined };

function evaluateNode(run: FitRun, state: NodeState, node: PreparedNode): NodeOutcome {
  const { plan, trace } = run.input;
  const cards = node.devices.length;
  scratch.ensure(cards);
  loadBookedUsage(state, node);
  const score = nodeScore(node);
  run.input.node = node;
  run.input.realtime = plan.realtime === undefined ? undefined : realtimeView(plan.realtime, state);
  if (run.input.realtime !== undefined) scratch.noteAt.fill(-1, 0, cards);
  const nodeRow = trace.beginNode(state.name, node.devices);
  run.input.nodeRow = nodeRow;

  let failure: string | undefined;
  let appCopyReady = false;
  for (let c = 0; c < plan.containers.length; c++) {
    const { init, request } = plan.containers[c]!;
    if (failure !== undefined) {
      trace.addContainer(c, 'skipped');
      continue;
    }
    if (request === undefined) {
      trace.addContainer(c, 'noRequest');
      continue;
    }
    // Init containers run one after another, each on a fresh copy; app containers share one copy.
    if (init) scratch.resetWorkingUsage(cards);
    else if (!appCopyReady) {
      scratch.resetWorkingUsage(cards);
      appCopyReady = true;
    }
    run.input.request = request;
    const firstCard = trace.cardCount;
    failure = fitContainer(run);
    if (failure !== undefined) {
      trace.addContainer(c, 'failed', failure, firstCard);
      continue;
    }
    trace.addContainer(c, 'passed', undefined, firstCard);
    for (let i = 0; i < run.pickedCount; i++) {
      const p = scratch.picked[i]!;
      trace.addPick(p, scratch.pickedMem[i]!, scratch.pickedCores[i]!, {
        maxSlotsBefore: scratch.pickedMaxSlots[i]!,
        maxMemBefore: scratch.pickedMaxMem[i]!,
        maxCoresBefore: scratch.pickedMaxCores[i]!,
        exclusive: scratch.pickedExclusive[i] === 1,
      });
      bookCard(node, node.devices[p]!.id, scratch.pickedMem[i]!, scratch.pickedCores[i]!);
    }
  }
  if (failure !== undefined) trace.nodeFailed(failure);
  else trace.nodePassed(score);
  nodeOutcome.trace = nodeRow;
  nodeOutcome.score = failure === undefined ? score : 0;
  nodeOutcome.reason = failure;
  return nodeOutcome;
}

/** Booked usage per card; cards absent from the ledger are idle (docs/hami-parity.md §7.2). */
function loadBookedUsage(state: NodeState, node: PreparedNode): void {
  const { devices } = node;
  const aligned = state.usageByPosition;
  if (aligned !== undefined && aligned.used.length === devices.length) {
    scratch.baseUsed.set(aligned.used);
    scratch.baseMem.set(aligned.mem);
    scratch.baseCores.set(aligned.cores);
    return;
  }
  for (let p = 0; p < devices.length; p++) {
    const usage = state.usage[devices[p]!.id];
    scratch.baseUsed[p] = usage?.used ?? 0;
    scratch.baseMem[p] = usage?.usedmem ?? 0;
    scratch.baseCores[p] = usage?.usedcores ?? 0;
  }
}

/**
 * `10 × (Σused/Σcount + Σusedcores/Σdevcore + Σusedmem/Σdevmem)` over all cards, before this pod
 * (docs/hami-parity.md §5.1), in float32; 0 when a denominator is 0.
 */
function nodeScore(node: PreparedNode): number {
  if (node.totalSlots === 0 || node.totalCores === 0 || node.totalMem === 0) return 0;
  let used = 0;
  let usedCores = 0;
  let usedMem = 0;
  for (let p = 0; p < node.devices.length; p++) {
    used += scratch.baseUsed[p]!;
    usedCores += scratch.baseCores[p]!;
    usedMem += scratch.baseMem[p]!;
  }
  const slotShare = f32(f32(used) / f32(node.totalSlots));
  const coreShare = f32(f32(usedCores) / f32(node.totalCores));
  const memShare = f32(f32(usedMem) / f32(node.totalMem));
  return f32(SCORE_WEIGHT * f32(f32(slotShare + coreShare) + memShare));
}

/**
 * A chosen card is booked on the working usage the pod's later app containers see. Booking goes by
 * UUID, to the first card registered with it (a registration listing a UUID twice books the first).
 */
function bookCard(node: PreparedNode, uuid: string, mem: number, cores: number): void {
  let p = 0;
  while (p < node.devices.length && node.devices[p]!.id !== uuid) p++;
  scratch.used[p]! += 1;
  scratch.usedMem[p]! += mem;
  scratch.usedCores[p]! += cores;
}

// ---------------------------------------------------------------------------------------------
// Real-time data for one node (docs/api.md §8)

interface RealtimeView {
  readonly settings: RealtimeSettings;
  readonly node: string;
  /** Undefined when the report is missing or stale: fall back to the ledger. */
  readonly devices: Readonly<Record<string, RealtimeDeviceUsage>> | undefined;
}

function realtimeView(settings: RealtimeSettings, state: NodeState): RealtimeView {
  const report = state.realtime;
  const fresh = report !== undefined && settings.nowMs - report.timeMs <= settings.maxAgeMs;
  return { settings, node: state.name, devices: fresh ? report.devices : undefined };
}

// ---------------------------------------------------------------------------------------------
// One container on one node: HAMi's Fit (docs/hami-parity.md §4.2)

/** What one Fit call works on; one object per decision, refilled per node and container. */
interface FitInput {
  readonly plan: PodPlan;
  readonly notes: RealtimeNote[];
  /** The decision's evidence; this node's earlier containers are in it too (for the quota check). */
  readonly trace: DecisionTrace;
  node: PreparedNode;
  /** The node's row in `trace`. */
  nodeRow: number;
  request: ContainerRequest;
  realtime: RealtimeView | undefined;
}

/**
 * HAMi's Fit for the current container: undefined when it fits (the chosen cards are
 * `scratch.picked[0 … run.pickedCount-1]`), else the reason string. Every tried card goes into the trace.
 */
function fitContainer(run: FitRun): string | undefined {
  const { plan, node, request } = run.input;
  const cardCount = node.nvidiaCards.length;
  run.begin();
  scoreCards(node, request, plan.weights);
  if (request.nums > cardCount) return ReasonCode.NodeInsufficientDevice;
  orderCards(node, plan.gpuPolicy);

  for (let i = cardCount - 1; i >= 0; i--) {
    const position = scratch.order[i]!;
    const outcome = run.tryCard(position);
    run.recordCard(position, outcome);
    if (outcome !== 'Fit') {
      scratch.reasonCounts[reasonSlot.get(outcome)!]! += 1;
      continue;
    }
    run.pick(position);
    if (run.remaining === 0 && !plan.gpuPolicy.needTopology) return undefined;
  }
  if (plan.gpuPolicy.needTopology) {
    if (run.pickedCount === request.nums) return undefined;
    if (run.pickedCount > request.nums) {
      run.keepPicked(chooseByTopology(node, run.pickedCount, request.nums));
      return undefined;
    }
  }
  if (run.pickedCount > 0) scratch.reasonCounts[reasonSlot.get(ReasonCode.AllocatedCardsInsufficientRequest)!] = run.pickedCount;
  return genReason(collectReasonCounts(), cardCount);
}

/** Reused: only the reason string built from it outlives the call. */
const reasonCounts = new Map<string, number>();

function collectReasonCounts(): ReadonlyMap<string, number> {
  reasonCounts.clear();
  for (let slot = 0; slot < REASONS.length; slot++) {
    const count = scratch.reasonCounts[slot]!;
    if (count > 0) reasonCounts.set(REASONS[slot]!, count);
  }
  return reasonCounts;
}

/** The mutable state of one Fit call: the working request `k` and the cards picked so far. */
class FitRun {
  /** `k.Nums`: cards still to pick (not decremented under topology-aware). */
  remaining = 0;
  /** `k.Coresreq`: clamped to 100 once a card reaches that check, for all later cards. */
  coresRequest = 0;
  pickedCount = 0;
  private previousNuma = -1;
  /** Evidence row of the card tried last. */
  private lastRow = 0;
  /** Memory the current card would be booked (check 9), kept for its evidence. */
  private memoryRequest = 0;
  private realtimeUsed: number | undefined;
  private realtimeTotal: number | undefined;
  /** Refilled for every tried card; the slab copies the numbers. */
  private readonly figures: CardFigures = {
    usedMem: 0,
    usedCores: 0,
    usedSlots: 0,
    requestedMem: 0,
    requestedCores: 0,
    realtimeUsedMem: undefined,
    realtimeTotalMem: undefined,
  };

  constructor(readonly input: FitInput) {}

  /** Starts Fit for `input.request` on `input.node`. */
  begin(): void {
    this.remaining = this.input.request.nums;
    this.coresRequest = this.input.request.coresreq;
    this.pickedCount = 0;
    this.previousNuma = -1;
    scratch.reasonCounts.fill(0);
  }

  /** Checks in HAMi's order; the first that fails names the outcome. */
  tryCard(p: number): ReasonCode | 'Fit' {
    const { plan, node, request } = this.input;
    const device = node.devices[p]!;
    this.memoryRequest = memoryToBook(request, device.devmem);
    this.realtimeUsed = undefined;
    this.realtimeTotal = undefined;
    if (!device.health) return ReasonCode.CardNotHealth;
    if (node.cordoned[p] === 1) return ReasonCode.CardCordoned;
    if (!this.typeMatches(p)) return ReasonCode.CardTypeMismatch;
    if (plan.selectors.numaBind) this.startNumaGroupIfChanged(node.numa[p]!);
    if (plan.selectsByUuid && !uuidAllowed(plan.selectors, device.id)) return ReasonCode.CardUuidMismatch;
    const used = scratch.used[p]!;
    if (device.count <= used) return ReasonCode.CardTimeSlicingExhausted;
    if (plan.gpuPolicy.isMutex && used > 0) return ReasonCode.ExclusiveDeviceAllocateConflict;
    if (this.coresRequest > 100) this.coresRequest = 100;
    if (!this.quotaFits(p)) return ReasonCode.ResourceQuotaNotFit;
    if (device.devmem - scratch.usedMem[p]! < this.memoryRequest) return ReasonCode.CardInsufficientMemory;
    if (!this.realtimeMemoryFits(p)) return ReasonCode.CardRealtimeInsufficientMemory;
    const usedCores = scratch.usedCores[p]!;
    if (device.devcore - usedCores < this.coresRequest) return ReasonCode.CardInsufficientCore;
    // Cores = 100 asks for the whole card.
    if (device.devcore === 100 && this.coresRequest === 100 && used > 0) return ReasonCode.ExclusiveDeviceAllocateConflict;
    // A request without cores cannot go on a card whose compute is fully booked.
    if (device.devcore !== 0 && usedCores === device.devcore && this.coresRequest === 0) return ReasonCode.CardComputeUnitsExhausted;
    return 'Fit';
  }

  pick(p: number): void {
    if (this.remaining <= 0) return;
    scratch.picked[this.pickedCount] = p;
    scratch.pickedRow[this.pickedCount] = this.lastRow;
    scratch.pickedMem[this.pickedCount] = this.memoryRequest;
    scratch.pickedCores[this.pickedCount] = this.coresRequest;
    this.guardPick(p, this.pickedCount);
    this.pickedCount += 1;
    if (!this.input.plan.gpuPolicy.needTopology) this.remaining -= 1;
  }

  /** Keeps only the picks at `kept` (indexes into the picks, ascending). */
  keepPicked(kept: readonly number[]): void {
    kept.forEach((from, to) => {
      scratch.picked[to] = scratch.picked[from]!;
      scratch.pickedRow[to] = scratch.pickedRow[from]!;
      scratch.pickedMem[to] = scratch.pickedMem[from]!;
      scratch.pickedCores[to] = scratch.pickedCores[from]!;
      scratch.pickedMaxSlots[to] = scratch.pickedMaxSlots[from]!;
      scratch.pickedMaxMem[to] = scratch.pickedMaxMem[from]!;
      scratch.pickedMaxCores[to] = scratch.pickedMaxCores[from]!;
      scratch.pickedExclusive[to] = scratch.pickedExclusive[from]!;
    });
    this.pickedCount = kept.length;
  }

  /**
   * The checks that let card `p` through, restated as bounds on the card's booked usage before this pod (the
   * stored counters): this container's check saw that usage plus what the pod's earlier containers took here.
   * The store admits the booking only while the bounds still hold, so a decision made on a stale view can
   * never over-allocate (docs/state.md, "Guards").
   */
  private guardPick(p: number, pick: number): void {
    const device = this.input.node.devices[p]!;
    const cores = this.coresRequest;
    const earlierSlots = scratch.used[p]! - scratch.baseUsed[p]!;
    const earlierMem = scratch.usedMem[p]! - scratch.baseMem[p]!;
    const earlierCores = scratch.usedCores[p]! - scratch.baseCores[p]!;
    scratch.pickedMaxSlots[pick] = device.count - 1 - earlierSlots;
    scratch.pickedMaxMem[pick] = device.devmem - earlierMem - this.memoryRequest;
    // A container asking no cores needs one core left (CardComputeUnitsExhausted).
    scratch.pickedMaxCores[pick] = device.devcore - earlierCores - cores - (cores === 0 && device.devcore !== 0 ? 1 : 0);
    const wholeCard = device.devcore === 100 && cores === 100;
    scratch.pickedExclusive[pick] = this.input.plan.gpuPolicy.isMutex || wholeCard ? 1 : 0;
  }

  private pickedDevice(i: number): ContainerDevice {
    const device = this.input.node.devices[scratch.picked[i]!]!;
    return { idx: device.index, uuid: device.id, type: this.input.request.type, usedmem: scratch.pickedMem[i]!, usedcores: scratch.pickedCores[i]! };
  }

  /** The card's evidence: the outcome and the numbers the checks compared (card totals come from the device). */
  recordCard(p: number, outcome: CardOutcome): void {
    const { figures } = this;
    figures.usedMem = scratch.usedMem[p]!;
    figures.usedCores = scratch.usedCores[p]!;
    figures.usedSlots = scratch.used[p]!;
    figures.requestedMem = this.memoryRequest;
    figures.requestedCores = this.coresRequest;
    figures.realtimeUsedMem = this.realtimeUsed;
    figures.realtimeTotalMem = this.realtimeTotal;
    this.lastRow = this.input.trace.addCard(p, outcome, figures);
  }

  /** use/nouse gputype, vgpu-mode and the request type (check 3). */
  private typeMatches(p: number): boolean {
    const { plan, node, request } = this.input;
    if (request.type !== NVIDIA) return false;
    if (!plan.selectsByType) return true;
    const key = node.typeKeys[p]!;
    let allowed = plan.typeCheckCache.get(key);
    if (allowed === undefined) {
      const device = node.devices[p]!;
      allowed = typeAllowed(plan.selectors, device.type, device.mode);
      plan.typeCheckCache.set(key, allowed);
    }
    return allowed;
  }

  /**
   * numa-bind (check 4): all cards of a container share one NUMA node. Entering a new NUMA group
   * drops the cards picked in the previous one, counting them as NumaNotFit.
   */
  private startNumaGroupIfChanged(numa: number): void {
    if (numa === this.previousNuma) return;
    if (this.remaining !== this.input.request.nums) {
      // HAMi gives back the group's picks and counts them NumaNotFit; the evidence says the same.
      scratch.reasonCounts[reasonSlot.get(ReasonCode.NumaNotFit)!]! += this.pickedCount;
      for (let i = 0; i < this.pickedCount; i++) this.input.trace.relabelCard(scratch.pickedRow[i]!, ReasonCode.NumaNotFit);
    }
    this.remaining = this.input.request.nums;
    this.previousNuma = numa;
    this.pickedCount = 0;
  }

  /**
   * Namespace quota (check 10, docs/hami-parity.md §7.4): the pod's bookings so far, this container's picks
   * and this card, collapsed as accounting will see them, must stay within the limits.
   */
  private quotaFits(p: number): boolean {
    const quota = this.input.plan.namespaceQuota;
    if (quota === undefined || (quota.memLimit === undefined && quota.coreLimit === undefined)) return true;
    const current: ContainerDevice[] = [];
    for (let i = 0; i < this.pickedCount; i++) current.push(this.pickedDevice(i));
    const device = this.input.node.devices[p]!;
    current.push({ idx: device.index, uuid: device.id, type: this.input.request.type, usedmem: this.memoryRequest, usedcores: this.coresRequest });
    const earlier = this.input.trace.podDevices(this.input.nodeRow);
    let mem = 0;
    let cores = 0;
    for (const booked of collapsePodUsage([...earlier, current], this.input.plan.initCount)) {
      mem += booked.usedmem;
      cores += booked.usedcores;
    }
    const factor = this.input.plan.memoryFactor > 1 ? this.input.plan.memoryFactor : 1;
    if (quota.memLimit !== undefined && quota.usedMem + mem > quota.memLimit * factor) return false;
    if (quota.coreLimit !== undefined && quota.usedCores + cores > quota.coreLimit) return false;
    return true;
  }

  /**
   * Real-time check (docs/api.md §8), after the ledger's memory check: real free memory (total - real
   * used - margin - what this pod already took on the card in this decision) against the request.
   * Missing or stale data falls back to the ledger; it never rejects.
   */
  private realtimeMemoryFits(p: number): boolean {
    const view = this.input.realtime;
    if (view === undefined) return true;
    const device = this.input.node.devices[p]!;
    const cachedUsedMem = scratch.usedMem[p]!;
    const measured = view.devices?.[device.id];
    if (measured === undefined) {
      this.note(p, { node: view.node, uuid: device.id, outcome: 'fallback', requestedMem: this.memoryRequest, cachedUsedMem });
      return true;
    }
    this.realtimeUsed = measured.usedMemMB;
    this.realtimeTotal = measured.totalMemMB;
    const bookedByThisPod = cachedUsedMem - scratch.baseMem[p]!;
    const realFree = measured.totalMemMB - measured.usedMemMB - view.settings.marginMiB - bookedByThisPod;
    const short = realFree < this.memoryRequest;
    const outcome = !short ? 'passed' : view.settings.mode === 'strict' ? 'failed' : 'warned';
    this.note(p, {
      node: view.node,
      uuid: device.id,
      outcome,
      requestedMem: this.memoryRequest,
      realUsedMem: measured.usedMemMB,
      totalMem: measured.totalMemMB,
      cachedUsedMem,
    });
    return outcome !== 'failed';
  }

  /** At most one note per node and card: the most severe outcome wins. */
  private note(p: number, note: RealtimeNote): void {
    const { notes } = this.input;
    const at = scratch.noteAt[p]!;
    if (at < 0) {
      scratch.noteAt[p] = notes.length;
      notes.push(note);
    } else if (NOTE_SEVERITY[note.outcome] > NOTE_SEVERITY[notes[at]!.outcome]) {
      notes[at] = note;
    }
  }
}

const NOTE_SEVERITY: Readonly<Record<RealtimeNote['outcome'], number>> = { passed: 0, fallback: 1, warned: 2, failed: 3 };

/** Memory to book on a card (check 9): gpumem wins; else the percentage of the card, in int32 arithmetic. */
function memoryToBook(request: ContainerRequest, devmem: number): number {
  if (request.memreq > 0) return request.memreq;
  if (request.mempercentagereq !== PercentageUnset) return Math.trunc(Math.imul(devmem, request.mempercentagereq) / 100);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// Card scores and order (docs/hami-parity.md §5.2, 5.3)

/**
 * `10 × (wSlot×(request+used)/count + wCore×(core+usedcores)/devcore + wMem×(mem+usedmem)/devmem)`
 * in float32, on the working usage. Request terms count only when the card's type is exactly the
 * request type (`NVIDIA`), which real model names never are (docs/hami-parity.md §5.2 quirk).
 */
function scoreCards(node: PreparedNode, request: ContainerRequest, weights: DeviceScoringWeights): void {
  for (let i = 0; i < node.nvidiaCards.length; i++) {
    const p = node.nvidiaCards[i]!;
    scratch.cardScore[p] = cardScore(node.devices[p]!, scratch.used[p]!, scratch.usedCores[p]!, scratch.usedMem[p]!, request, weights);
  }
}

/** One card's score for one container's request (`DeviceListsScore.ComputeScore`). */
export function cardScore(
  device: DeviceInfo,
  used: number,
  usedCores: number,
  usedMem: number,
  request: ContainerRequest,
  weights: DeviceScoringWeights,
): number {
  if (device.count === 0 || device.devcore === 0 || device.devmem === 0) return 0;
  let slots = 0;
  let cores = 0;
  let mem = 0;
  if (request.type === device.type) {
    slots = 1;
    cores = request.coresreq;
    const pct = request.mempercentagereq;
    mem = pct !== 0 && pct !== PercentageUnset ? Math.trunc((device.devmem * pct) / 100) : request.memreq;
  }
  const slotShare = f32(f32(slots + used) / f32(device.count));
  const coreShare = f32(f32(cores + usedCores) / f32(device.devcore));
  const memShare = f32(f32(mem + usedMem) / f32(device.devmem));
  const weighted = f32(f32(f32(weights.slot) * slotShare) + f32(f32(weights.core) * coreShare));
  return f32(SCORE_WEIGHT * f32(weighted + f32(f32(weights.memory) * memShare)));
}

/** Fills `scratch.order` with the node's NVIDIA cards in policy order (Fit takes from the end). */
function orderCards(node: PreparedNode, policy: GpuPolicy): void {
  const { order } = scratch;
  const n = node.nvidiaCards.length;
  order.set(node.nvidiaCards);
  // Stable insertion sort: Go's sort.Sort for up to 12 elements; kept stable beyond (HAMi's pdqsort
  // may reorder equal cards there).
  for (let i = 1; i < n; i++) {
    const card = order[i]!;
    let j = i - 1;
    while (j >= 0 && sortsBefore(node, policy, card, order[j]!)) {
      order[j + 1] = order[j]!;
      j--;
    }
    order[j + 1] = card;
  }
}

/** Go's `DeviceUsageList.Less` (docs/hami-parity.md §5.3): does card `a` sort before card `b`? */
function sortsBefore(node: PreparedNode, policy: GpuPolicy, a: number, b: number): boolean {
  const scoreA = scratch.cardScore[a]!;
  const scoreB = scratch.cardScore[b]!;
  const numaA = node.numa[a]!;
  const numaB = node.numa[b]!;
  switch (policy.kind) {
    case 'chain':
      for (const key of policy.keys) {
        if (key === 'numa' && numaA !== numaB) return numaA < numaB;
        if (key === 'binpack' && scoreA !== scoreB) return scoreA < scoreB;
        if (key === 'spread' && scoreA !== scoreB) return scoreA > scoreB;
      }
      return node.devices[a]!.index < node.devices[b]!.index;
    case 'mutex': {
      // Busy cards first, idle cards last, so Fit tries idle ones first.
      const usedA = scratch.used[a]!;
      const usedB = scratch.used[b]!;
      return usedA !== usedB ? usedA > usedB : numaA < numaB;
    }
    case 'binpack':
    case 'spread': {
      const binpack = policy.kind === 'binpack';
      if (policy.numaBind) {
        // Keep NUMA groups contiguous so Fit can collect a same-NUMA run.
        if (numaA !== numaB) return binpack ? numaA > numaB : numaA < numaB;
        return binpack ? scoreA < scoreB : scoreA > scoreB;
      }
      if (scoreA !== scoreB) return binpack ? scoreA < scoreB : scoreA > scoreB;
      return numaA < numaB;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Topology-aware choice (docs/hami-parity.md §4.2, after the loop)

/**
 * More cards fit than requested: one card -> the card least connected to the others (first minimum
 * in pick order); several -> the combination (lexicographic in pick order) with the highest sum of
 * pair scores, first maximum. Missing pairs count 0.
 */
function chooseByTopology(node: PreparedNode, pickedCount: number, wanted: number): number[] {
  // Picks are referred to by their index in `scratch.picked` (pick order); the result is ascending.
  const uuid = (pick: number): string => node.devices[scratch.picked[pick]!]!.id;
  const pair = (a: number, b: number): number => node.pairScores[uuid(a)]?.[uuid(b)] ?? 0;
  if (wanted === 1) {
    let best = 0;
    let bestScore = Infinity;
    for (let card = 0; card < pickedCount; card++) {
      let total = 0;
      for (let other = 0; other < pickedCount; other++) if (uuid(other) !== uuid(card)) total += pair(card, other);
      if (total < bestScore) {
        bestScore = total;
        best = card;
      }
    }
    return [best];
  }
  let best: number[] | undefined;
  let bestScore = -Infinity;
  const current: number[] = [];
  const visit = (start: number): void => {
    if (current.length === wanted) {
      let total = 0;
      for (let i = 0; i < current.length - 1; i++) for (let j = i + 1; j < current.length; j++) total += pair(current[i]!, current[j]!);
      if (total > bestScore) {
        bestScore = total;
        best = [...current];
      }
      return;
    }
    for (let i = start; i <= pickedCount - (wanted - current.length); i++) {
      current.push(i);
      visit(i + 1);
      current.pop();
    }
  };
  visit(0);
  return best ?? Array.from({ length: wanted }, (_, i) => i);
}
