/**
 * HAMi's AWS Neuron Fit for one container on one node (docs/devices.md, "AWS Neuron"), with its checks in its order
 * (health, type, the use/nouse-neuron-uuid selection, `Count <= Used`, mutex, cores; ours, before `Count <= Used`:
 * a device booked past its capacity, lib/engine/capacity.ts) and the placement rules of AWS's
 * own scheduler extension, plus the fixes HAMi made after v2.10 and ours:
 *
 * - the request is split per the geometry of the node tried (HAMi #2762: v2.10 uses the first node's);
 * - cores are given as one contiguous run (the Neuron runtime takes a core range; v2.10 gives any free core);
 * - a run of several devices is contiguous in device indexes (v2.10 reads positions in the score-sorted list).
 *
 * A request for several devices that finds no run fails as HAMi's `graphSelect` does, with one `NumaNotFit` for the
 * node (`1/<devices> NumaNotFit`), whatever each device's own check said; the evidence keeps each device's outcome.
 *
 * Every tried device goes into the decision's trace; the chosen ones are left in the arena's pick arrays, their
 * `usedcores` the mask of the cores given.
 */
import type { DecisionArena } from '../../arena';
import { isOvercommitted } from '../../capacity';
import { emptyCardFigures, type CardFigures } from '../../cardFigures';
import type { CardOutcome, DecisionTrace } from '../../evidence';
import type { FitRun } from '../../fit';
import { genReason } from '../../messages';
import { cardInOrder, scoreCards, startCardOrder } from '../../order';
import { idAllowed, parseAnnotationList } from '../../podAnnotations';
import type { PreparedNode } from '../../prepared';
import { ReasonCode, type DeviceInfo } from '../../types';
import { AWS_NEURON } from './names';
import { contiguousCores, coreCount, fullMask, usedMask } from './masks';
import { asksWholeDevices } from './requests';

/** The pod annotations that narrow the devices by id (HAMi's `CheckUUID`: comma lists, blank = no constraint). */
export const NeuronUuidAnnotation = { use: 'aws.amazon.com/use-neuron-uuid', noUse: 'aws.amazon.com/nouse-neuron-uuid' } as const;

/** Device counts a Trainium (and any non-Inferentia) node gives as one group, each aligned to a multiple of itself. */
export const TRAINIUM_GROUPS: readonly number[] = [1, 4, 8, 16];

/** HAMi's test for Inferentia instance types, whose devices form a ring where any contiguous run works. */
export function isInferentia(nodeType: string): boolean {
  return nodeType.includes('inf') || nodeType.includes('Inf');
}

/**
 * The positions (into `ordered`, devices in index order) of a run of `count` usable devices with consecutive indexes:
 * on Inferentia the first such run; elsewhere only counts of 1, 4, 8 or 16 devices, starting at a device index that
 * is a multiple of the count. Undefined when there is none.
 */
export function deviceRun(ordered: readonly DeviceInfo[], usable: readonly boolean[], count: number, nodeType: string): number[] | undefined {
  const ring = isInferentia(nodeType);
  if (!ring && !TRAINIUM_GROUPS.includes(count)) return undefined;
  for (let start = 0; start + count <= ordered.length; start++) {
    if (!ring && ordered[start]!.index % count !== 0) continue;
    let fits = true;
    for (let k = 0; k < count && fits; k++) {
      fits = usable[start + k] === true && ordered[start + k]!.index === ordered[start]!.index + k;
    }
    if (fits) return Array.from({ length: count }, (_, k) => start + k);
  }
  return undefined;
}

interface Tried {
  readonly outcome: CardOutcome;
  /** The cores given when the device fits. */
  readonly mask: number;
  readonly row: number;
}

/** One Fit call's working state. */
class NeuronFit {
  private readonly counts = new Map<string, number>();
  private readonly figures: CardFigures = emptyCardFigures();
  private readonly arena: DecisionArena;
  private readonly node: PreparedNode;
  private readonly trace: DecisionTrace;
  private readonly useIds: ReadonlySet<string>;
  private readonly noUseIds: ReadonlySet<string>;

  constructor(private readonly run: FitRun) {
    this.arena = run.input.arena;
    this.node = run.input.node;
    this.trace = run.input.trace;
    const annotations = run.input.plan.annotations;
    this.useIds = new Set(parseAnnotationList(annotations[NeuronUuidAnnotation.use]));
    this.noUseIds = new Set(parseAnnotationList(annotations[NeuronUuidAnnotation.noUse]));
  }

  fit(cards: Int32Array): string | undefined {
    const request = this.run.input.request;
    this.run.pickedCount = 0;
    // No device this Fit sees: HAMi's fitInDevices answers a request for more devices than the node has (none).
    if (cards.length === 0) return ReasonCode.NodeInsufficientDevice;
    // The geometry of this node: every device of a node has the same cores.
    const perDevice = coreCount(this.node.devices[cards[0]!]!.devcore);
    const whole = asksWholeDevices(request);
    const needed = whole ? request.nums : Math.ceil(request.coresreq / Math.max(perDevice, 1));
    if (needed > cards.length) return ReasonCode.NodeInsufficientDevice;
    return needed === 1 ? this.fitOne(cards, whole ? perDevice : request.coresreq) : this.fitRun(cards, needed, perDevice, whole);
  }

  /** One device: tried from the end of the policy order, as HAMi tries every single-device request. */
  private fitOne(cards: Int32Array, cores: number): string | undefined {
    const { plan, node, request } = this.run.input;
    scoreCards(this.arena, cards, node, request, plan.weights);
    startCardOrder(this.arena, cards, node);
    for (let i = cards.length - 1; i >= 0; i--) {
      const p = cardInOrder(this.arena, plan.gpuPolicy, i);
      const tried = this.tryDevice(p, cores);
      if (tried.outcome === 'Fit') {
        this.pick(0, p, tried);
        this.run.pickedCount = 1;
        return undefined;
      }
      this.count(tried.outcome);
    }
    return genReason(this.counts, cards.length);
  }

  /**
   * Several devices: each must be entirely free; the run is chosen by device index under AWS's rules. Cores span
   * whole devices, the last one holding what remains, so the core indexes given are one contiguous range. No run
   * (too few free devices, or none in a group AWS's rules accept): HAMi's one `NumaNotFit` for the node.
   */
  private fitRun(cards: Int32Array, needed: number, perDevice: number, whole: boolean): string | undefined {
    const request = this.run.input.request;
    const positions = Array.from(cards).sort((a, b) => this.node.devices[a]!.index - this.node.devices[b]!.index);
    const ordered = positions.map((p) => this.node.devices[p]!);
    const tried = positions.map((p) => this.tryDevice(p, perDevice));
    const usable = tried.map((t) => t.outcome === 'Fit');
    const run = deviceRun(ordered, usable, needed, ordered[0]!.nodeType ?? '');
    if (run === undefined) {
      // The devices that would fit alone are in no run: their evidence says why the node failed.
      for (const t of tried) if (t.outcome === 'Fit') this.trace.relabelCard(t.row, ReasonCode.NumaNotFit);
      return genReason(new Map([[ReasonCode.NumaNotFit, 1]]), cards.length);
    }
    const lastCores = whole ? perDevice : request.coresreq - (needed - 1) * perDevice;
    run.forEach((at, i) => {
      const mask = i === needed - 1 ? fullMask(lastCores) : fullMask(perDevice);
      this.pick(i, positions[at]!, { ...tried[at]!, mask });
    });
    this.run.pickedCount = needed;
    return undefined;
  }

  /** HAMi's checks in HAMi's order; the device's evidence row is written whatever the outcome. */
  private tryDevice(p: number, cores: number): Tried {
    const device = this.node.devices[p]!;
    const used = this.arena.used[p]!;
    const usedCores = usedMask(this.arena.usedCores[p]!, device.devcore);
    let mask = 0;
    let outcome: CardOutcome;
    if (!device.health) outcome = ReasonCode.CardNotHealth;
    else if (this.run.input.request.type !== AWS_NEURON || !device.type.includes(AWS_NEURON)) outcome = ReasonCode.CardTypeMismatch;
    else if (!idAllowed(this.useIds, this.noUseIds, device.id)) outcome = ReasonCode.CardUuidMismatch;
    // Ours: a device others booked past its capacity takes nothing more (lib/engine/capacity.ts; cores are masks).
    else if (isOvercommitted(device, this.arena.baseUsed[p]!, this.arena.baseMem[p]!, this.arena.baseCores[p]!, true)) outcome = ReasonCode.CardOvercommitted;
    else if (device.count <= used) outcome = ReasonCode.CardTimeSlicingExhausted;
    else if (this.run.input.plan.gpuPolicy.isMutex && used > 0) outcome = ReasonCode.ExclusiveDeviceAllocateConflict;
    else if (coreCount(device.devcore) - coreCount(usedCores) < cores) outcome = ReasonCode.CardInsufficientCore;
    else {
      const run = contiguousCores(device.devcore, usedCores, cores);
      // Enough free cores, but not side by side.
      if (run === undefined) outcome = ReasonCode.CardInsufficientCore;
      else {
        outcome = 'Fit';
        mask = run;
      }
    }
    const { figures } = this;
    figures.usedCores = usedCores;
    figures.usedSlots = used;
    figures.requestedCores = cores;
    return { outcome, mask, row: this.trace.addCard(p, outcome, figures) };
  }

  private count(outcome: CardOutcome): void {
    this.counts.set(outcome, (this.counts.get(outcome) ?? 0) + 1);
  }

  /**
   * The pick and what the store would guard for it. Neuron bookings are written under the node's version
   * (`positional`), so the bounds only restate the checks: one slot and the given cores must still be free.
   */
  private pick(i: number, p: number, tried: Tried): void {
    const { arena } = this;
    const device = this.node.devices[p]!;
    arena.picked[i] = p;
    arena.pickedRow[i] = tried.row;
    arena.pickedMem[i] = 0;
    arena.pickedCores[i] = tried.mask;
    arena.pickedMaxSlots[i] = device.count - 1 - (arena.used[p]! - arena.baseUsed[p]!);
    arena.pickedMaxMem[i] = 0;
    arena.pickedMaxCores[i] = device.devcore - tried.mask - (arena.usedCores[p]! - arena.baseCores[p]!);
    arena.pickedExclusive[i] = this.run.input.plan.gpuPolicy.isMutex ? 1 : 0;
  }
}

/** The kind's `fit`: undefined when the container fits (picks in the arena), else HAMi's reason text. */
export function neuronFit(run: FitRun, cards: Int32Array): string | undefined {
  return new NeuronFit(run).fit(cards);
}
