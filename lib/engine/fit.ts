/**
 * HAMi's Fit (docs/hami-parity.md §4.2) for one container on one node: the cards a device kind sees, in policy order,
 * tried from the end with HAMi's checks in HAMi's order; every tried card goes into the decision's evidence, every
 * pick carries the bounds the store must guard. Works on the arena's arrays; allocates nothing per card.
 */
import type { DecisionArena } from './arena';
import { exceedsCapacity } from './capacity';
import { CardFact, CARD_FACTS } from './cardFacts';
import { emptyCardFigures, type CardFigures } from './cardFigures';
import type { CardOutcome, DecisionTrace } from './evidence';
import { genReason } from './messages';
import { cardInOrder, scoreCards, startCardOrder } from './order';
import type { PodPlan, RealtimeSettings } from './plan';
import { typeAllowed, uuidAllowed } from './podAnnotations';
import type { PreparedNode } from './prepared';
import { chooseByTopology } from './topology';
import { PercentageUnset, ReasonCode } from './types';
import type { ContainerDevice, ContainerRequest, NodeState, RealtimeDeviceUsage, RealtimeNote } from './types';
import { collapsePodUsage } from './usage';

/** Reason codes Fit counts, in one fixed order so counts live in a typed array. */
export const REASONS: readonly ReasonCode[] = [
  ReasonCode.CardNotHealth,
  ReasonCode.CardCordoned,
  ReasonCode.CardTypeMismatch,
  ReasonCode.NumaNotFit,
  ReasonCode.CardUuidMismatch,
  ReasonCode.CardOvercommitted,
  ReasonCode.CardTimeSlicingExhausted,
  ReasonCode.ExclusiveDeviceAllocateConflict,
  ReasonCode.ResourceQuotaNotFit,
  ReasonCode.CardInsufficientMemory,
  ReasonCode.CardRealtimeInsufficientMemory,
  ReasonCode.CardInsufficientCore,
  ReasonCode.CardComputeUnitsExhausted,
  ReasonCode.CardNotFoundCustomFilterRule,
  ReasonCode.CardMigTopologyInfeasible,
  ReasonCode.AllocatedCardsInsufficientRequest,
];
const reasonSlot = new Map<ReasonCode, number>(REASONS.map((r, i) => [r, i]));


export interface RealtimeView {
  readonly settings: RealtimeSettings;
  readonly node: string;
  /** Undefined when the report is missing or stale: fall back to the ledger. */
  readonly devices: Readonly<Record<string, RealtimeDeviceUsage>> | undefined;
}

export function realtimeView(settings: RealtimeSettings, state: NodeState): RealtimeView {
  const report = state.realtime;
  const fresh = report !== undefined && realtimeReportFresh(report.timeMs, settings.nowMs, settings.maxAgeMs);
  return { settings, node: state.name, devices: fresh ? report.devices : undefined };
}

/**
 * How far ahead of the control plane's clock a real-time reading may be dated and still count, in milliseconds. The
 * node agent stamps readings with its node's clock, which NTP keeps within a second or so of ours; 30 s leaves room
 * for a clock that drifted, while a reading dated further ahead (a clock set wrong, a hand-written annotation) would
 * otherwise never age, and strict mode would judge the node's cards by it until the next reading (docs/realtime.md).
 */
export const REALTIME_CLOCK_ALLOWANCE_MS = 30_000;

/**
 * Whether a reading taken at `timeMs` may be used at `nowMs`: at most `maxAgeMs` old (HAMI_REALTIME_MAX_AGE_SECONDS),
 * and dated no further ahead than the clock allowance. Anything else is stale: the ledger alone decides.
 */
export function realtimeReportFresh(timeMs: number, nowMs: number, maxAgeMs: number): boolean {
  const ageMs = nowMs - timeMs;
  return ageMs <= maxAgeMs && ageMs >= -REALTIME_CLOCK_ALLOWANCE_MS;
}

/** What one Fit call works on; one object per decision, refilled per node and container. */
export interface FitInput {
  readonly arena: DecisionArena;
  readonly plan: PodPlan;
  readonly notes: RealtimeNote[];
  /** The decision's evidence; this node's earlier containers are in it too (for the quota check). */
  readonly trace: DecisionTrace;
  node: PreparedNode;
  /** The node's row in `trace`. */
  nodeRow: number;
  request: ContainerRequest;
  realtime: RealtimeView | undefined;
  /** What the container's device kind prepared for this node (`DeviceKind.prepare`). */
  kindState: unknown;
}

/** What a device kind adds to HAMi's card loop (HAMi's `CustomFilterRule` and what follows a pick). */
export interface FitRules {
  /** The request type the kind's cards serve (HAMi's check 3 compares it first): its `DeviceKind.vendor`. */
  readonly vendor: string;
  /** Whether asking more cards than the node has fails at once with `NodeInsufficientDevice`. */
  readonly countsDevices: boolean;
  /** A last check after HAMi's own (`CustomFilterRule`), and the reason a card failing it counts under. */
  readonly custom?: { fits(run: FitRun, position: number): boolean; readonly failure: ReasonCode };
  /** Whether a card just picked is tried again for the container's next card (several MIG instances on one card). */
  readonly retriesCard?: (run: FitRun, position: number) => boolean;
}

/**
 * HAMi's Fit for the current container: undefined when it fits (the chosen cards are
 * `this.arena.picked[0 … run.pickedCount-1]`), else the reason string. Every tried card goes into the trace.
 */
export function fitContainer(run: FitRun, cards: Int32Array, rules: FitRules): string | undefined {
  const { arena, plan, node, request } = run.input;
  const cardCount = cards.length;
  run.begin(rules);
  scoreCards(arena, cards, node, request, plan.weights);
  if (rules.countsDevices && request.nums > cardCount) return ReasonCode.NodeInsufficientDevice;
  startCardOrder(arena, cards, node);

  for (let i = cardCount - 1; i >= 0; i--) {
    const position = cardInOrder(arena, plan.gpuPolicy, i);
    const outcome = run.tryCard(position);
    run.recordCard(position, outcome);
    if (outcome !== 'Fit') {
      arena.reasonCounts[reasonSlot.get(outcome)!]! += 1;
      continue;
    }
    run.pick(position);
    if (run.remaining === 0 && !plan.gpuPolicy.needTopology) return undefined;
    if (rules.retriesCard?.(run, position) === true) i++;
  }
  if (plan.gpuPolicy.needTopology) {
    if (run.pickedCount === request.nums) return undefined;
    if (run.pickedCount > request.nums) {
      run.keepPicked(chooseByTopology(arena, node, run.pickedCount, request.nums));
      return undefined;
    }
  }
  if (run.pickedCount > 0) arena.reasonCounts[reasonSlot.get(ReasonCode.AllocatedCardsInsufficientRequest)!] = run.pickedCount;
  return genReason(collectReasonCounts(arena), cardCount);
}

function collectReasonCounts(arena: DecisionArena): ReadonlyMap<string, number> {
  const tally = arena.reasonTally;
  tally.clear();
  for (let slot = 0; slot < REASONS.length; slot++) {
    const count = arena.reasonCounts[slot]!;
    if (count > 0) tally.set(REASONS[slot]!, count);
  }
  return tally;
}

/** The mutable state of one Fit call: the working request `k` and the cards picked so far. */
export class FitRun {
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
  private readonly figures: CardFigures = emptyCardFigures();

  private readonly arena: DecisionArena;

  constructor(readonly input: FitInput) {
    this.arena = input.arena;
  }

  private custom: FitRules['custom'];
  private vendor = '';

  /** Starts Fit for `input.request` on `input.node`. */
  begin(rules: FitRules): void {
    this.custom = rules.custom;
    this.vendor = rules.vendor;
    this.remaining = this.input.request.nums;
    this.coresRequest = this.input.request.coresreq;
    this.pickedCount = 0;
    this.previousNuma = -1;
    this.arena.reasonCounts.fill(0);
  }

  /** Checks in HAMi's order; the first that fails names the outcome. */
  tryCard(p: number): ReasonCode | 'Fit' {
    const { plan, node, request } = this.input;
    // The card's numbers from the node's card facts, not its object (./cardFacts.ts).
    const facts = node.cardFacts;
    const at = p * CARD_FACTS;
    const count = facts[at + CardFact.count]!;
    const devmem = facts[at + CardFact.devmem]!;
    const devcore = facts[at + CardFact.devcore]!;
    this.memoryRequest = memoryToBook(request, devmem);
    this.realtimeUsed = undefined;
    this.realtimeTotal = undefined;
    if (facts[at + CardFact.healthy] !== 1 || this.arena.failClosed[p] === 1) return ReasonCode.CardNotHealth;
    if (facts[at + CardFact.cordoned] === 1) return ReasonCode.CardCordoned;
    if (!this.typeMatches(p)) return ReasonCode.CardTypeMismatch;
    if (plan.selectors.numaBind) this.startNumaGroupIfChanged(facts[at + CardFact.numa]!);
    if (plan.selectsByUuid && !uuidAllowed(plan.selectors, node.devices[p]!.id)) return ReasonCode.CardUuidMismatch;
    // Ours, before HAMi's capacity checks: a card others booked past its capacity takes nothing more (./capacity).
    if (exceedsCapacity(count, devmem, devcore, this.arena.baseUsed[p]!, this.arena.baseMem[p]!, this.arena.baseCores[p]!, false)) return ReasonCode.CardOvercommitted;
    const used = this.arena.used[p]!;
    // A card tried again for the same container (MIG) counts the instances it already gave: HAMi does not, and would
    // book more slots than the card has.
    if (count <= used + this.picksOn(p)) return ReasonCode.CardTimeSlicingExhausted;
    if (plan.gpuPolicy.isMutex && used > 0) return ReasonCode.ExclusiveDeviceAllocateConflict;
    if (this.coresRequest > 100) this.coresRequest = 100;
    if (!this.quotaFits(p)) return ReasonCode.ResourceQuotaNotFit;
    if (devmem - this.arena.usedMem[p]! < this.memoryRequest) return ReasonCode.CardInsufficientMemory;
    if (!this.realtimeMemoryFits(p)) return ReasonCode.CardRealtimeInsufficientMemory;
    const usedCores = this.arena.usedCores[p]!;
    if (devcore - usedCores < this.coresRequest) return ReasonCode.CardInsufficientCore;
    // Cores = 100 asks for the whole card.
    if (devcore === 100 && this.coresRequest === 100 && used > 0) return ReasonCode.ExclusiveDeviceAllocateConflict;
    // A request without cores cannot go on a card whose compute is fully booked.
    if (devcore !== 0 && usedCores === devcore && this.coresRequest === 0) return ReasonCode.CardComputeUnitsExhausted;
    // The kind's own rule sees the memory resolved above, not the raw request.
    if (this.custom !== undefined && !this.custom.fits(this, p)) return this.custom.failure;
    return 'Fit';
  }

  /** How many of this container's picks so far are card `p` (more than one only for MIG instances). */
  picksOn(p: number): number {
    let picks = 0;
    for (let i = 0; i < this.pickedCount; i++) if (this.arena.picked[i] === p) picks++;
    return picks;
  }

  /** Memory the card being tried would be booked (check 9, the request resolved against the card). */
  get memory(): number {
    return this.memoryRequest;
  }

  pick(p: number): void {
    if (this.remaining <= 0) return;
    this.arena.ensurePicks(this.pickedCount + 1);
    this.arena.picked[this.pickedCount] = p;
    this.arena.pickedRow[this.pickedCount] = this.lastRow;
    this.arena.pickedMem[this.pickedCount] = this.memoryRequest;
    this.arena.pickedCores[this.pickedCount] = this.coresRequest;
    this.guardPick(p, this.pickedCount);
    this.pickedCount += 1;
    if (!this.input.plan.gpuPolicy.needTopology) this.remaining -= 1;
  }

  /** Keeps only the picks at `kept` (indexes into the picks, ascending). */
  keepPicked(kept: readonly number[]): void {
    kept.forEach((from, to) => {
      this.arena.picked[to] = this.arena.picked[from]!;
      this.arena.pickedRow[to] = this.arena.pickedRow[from]!;
      this.arena.pickedMem[to] = this.arena.pickedMem[from]!;
      this.arena.pickedCores[to] = this.arena.pickedCores[from]!;
      this.arena.pickedMaxSlots[to] = this.arena.pickedMaxSlots[from]!;
      this.arena.pickedMaxMem[to] = this.arena.pickedMaxMem[from]!;
      this.arena.pickedMaxCores[to] = this.arena.pickedMaxCores[from]!;
      this.arena.pickedExclusive[to] = this.arena.pickedExclusive[from]!;
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
    const facts = this.input.node.cardFacts;
    const at = p * CARD_FACTS;
    const devcore = facts[at + CardFact.devcore]!;
    const cores = this.coresRequest;
    const earlierSlots = this.arena.used[p]! - this.arena.baseUsed[p]!;
    const earlierMem = this.arena.usedMem[p]! - this.arena.baseMem[p]!;
    const earlierCores = this.arena.usedCores[p]! - this.arena.baseCores[p]!;
    this.arena.pickedMaxSlots[pick] = facts[at + CardFact.count]! - 1 - earlierSlots - this.picksOn(p);
    this.arena.pickedMaxMem[pick] = facts[at + CardFact.devmem]! - earlierMem - this.memoryRequest;
    // A container asking no cores needs one core left (CardComputeUnitsExhausted).
    this.arena.pickedMaxCores[pick] = devcore - earlierCores - cores - (cores === 0 && devcore !== 0 ? 1 : 0);
    const wholeCard = devcore === 100 && cores === 100;
    this.arena.pickedExclusive[pick] = this.input.plan.gpuPolicy.isMutex || wholeCard ? 1 : 0;
  }

  private pickedDevice(i: number): ContainerDevice {
    const device = this.input.node.devices[this.arena.picked[i]!]!;
    return { idx: device.index, uuid: device.id, type: this.input.request.type, usedmem: this.arena.pickedMem[i]!, usedcores: this.arena.pickedCores[i]! };
  }

  /** The card's evidence: the outcome and the numbers the checks compared (card totals come from the device). */
  recordCard(p: number, outcome: CardOutcome): void {
    const { figures } = this;
    figures.usedMem = this.arena.usedMem[p]!;
    figures.usedCores = this.arena.usedCores[p]!;
    figures.usedSlots = this.arena.used[p]!;
    figures.requestedMem = this.memoryRequest;
    figures.requestedCores = this.coresRequest;
    figures.realtimeUsedMem = this.realtimeUsed;
    figures.realtimeTotalMem = this.realtimeTotal;
    this.lastRow = this.input.trace.addCard(p, outcome, figures);
  }

  /** use/nouse gputype, vgpu-mode and the request type (check 3). */
  private typeMatches(p: number): boolean {
    const { plan, node, request } = this.input;
    if (request.type !== this.vendor) return false;
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
      this.arena.reasonCounts[reasonSlot.get(ReasonCode.NumaNotFit)!]! += this.pickedCount;
      for (let i = 0; i < this.pickedCount; i++) this.input.trace.relabelCard(this.arena.pickedRow[i]!, ReasonCode.NumaNotFit);
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
    const cachedUsedMem = this.arena.usedMem[p]!;
    const measured = view.devices?.[device.id];
    if (measured === undefined) {
      this.note(p, { node: view.node, uuid: device.id, outcome: 'fallback', requestedMem: this.memoryRequest, cachedUsedMem });
      return true;
    }
    this.realtimeUsed = measured.usedMemMB;
    this.realtimeTotal = measured.totalMemMB;
    const bookedByThisPod = cachedUsedMem - this.arena.baseMem[p]!;
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
    const at = this.arena.noteAt[p]!;
    if (at < 0) {
      this.arena.noteAt[p] = notes.length;
      notes.push(note);
    } else if (NOTE_SEVERITY[note.outcome] > NOTE_SEVERITY[notes[at]!.outcome]) {
      notes[at] = note;
    }
  }
}

const NOTE_SEVERITY: Readonly<Record<RealtimeNote['outcome'], number>> = { passed: 0, fallback: 1, warned: 2, failed: 3 };

/** Memory to book on a card (check 9): gpumem wins; else the percentage of the card, in int32 arithmetic. */
export function memoryToBook(request: ContainerRequest, devmem: number): number {
  if (request.memreq > 0) return request.memreq;
  if (request.mempercentagereq !== PercentageUnset) return Math.trunc(Math.imul(devmem, request.mempercentagereq) / 100);
  return 0;
}
