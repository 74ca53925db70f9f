/**
 * The evidence of one decision, packed while deciding and turned into `NodeEvidence` objects on
 * first read.
 *
 * A decision tries up to every card of every candidate (40,000 cards for 5,000 nodes of 8). Plain
 * evidence objects for all of them, alive until the decision returns, made the time grow faster
 * than the node count: V8's young-generation collector copies (and then promotes) everything still
 * alive, so each collection during a large decision moved all the evidence gathered so far. Instead
 * Fit writes numbers into a few growable Float64Arrays (rows of nodes, containers, tried cards and
 * chosen cards; typed-array contents are not scanned or copied by the collector) and keeps strings
 * only where they are the output anyway (reasons). `evidence()` builds the public objects, with the
 * same keys in the same order as before, when the caller asks for them; a caller that logs or stores
 * the evidence pays for those objects then, once, outside the decision.
 *
 * A lazy `cards` accessor on every `ContainerEvidence` was tried first: own accessors (needed so
 * JSON.stringify and spreads see them) turn each object into a slow dictionary-mode object and cost
 * about 1.5 µs each, more than the evidence objects they replaced. One accessor per decision (see
 * `decide`) costs nothing measurable.
 */
import { CardFact, CARD_FACTS, writeCardFacts } from './cardFacts';
import type { CardFigures } from './cardFigures';
import { ReasonCode } from './types';
import { collapsePodUsage } from './usage';
import type { CardClaim, CardEvidence, ContainerDevice, ContainerEvidence, ContainerRequest, ContainerStatus, DeviceInfo, NodeEvidence } from './types';

export type CardOutcome = ReasonCode | 'Fit';

/** A pod container as the evidence names it. */
export interface TracedContainer {
  readonly name: string;
  /** Position in the aligned device list (init containers first). */
  readonly index: number;
  readonly init: boolean;
  readonly request: ContainerRequest | undefined;
}

/**
 * The row storage of traces nothing reads any more, for the next traces. A 1,000-node decision records about 0.4 MB
 * of rows; V8 counts a Float64Array's storage as memory outside its heap, and made anew for every decision it brought
 * a full collection about twice a second in a filter's environment (measured with `npm run bench`). Kept by the memo
 * (./reuse.ts), which knows when a trace's rows are no longer read (`DecisionTrace.hold`, `drop`).
 */
export class RowStore {
  private readonly free: Float64Array[] = [];
  /** Arrays handed to a later decision since the store was made (for tests and measurement, as the memo's counters). */
  reused = 0;

  /** The smallest stored array of at least `length` numbers (not zeroed), if any. */
  take(length: number): Float64Array | undefined {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const candidate = this.free[i]!;
      if (candidate.length >= length && (best < 0 || candidate.length < this.free[best]!.length)) best = i;
    }
    if (best < 0) return undefined;
    const [taken] = this.free.splice(best, 1);
    this.reused++;
    return taken;
  }

  give(data: Float64Array): void {
    if (this.free.length < MAX_STORED_ROWS && data.length > 0) this.free.push(data);
  }
}

/** A trace has five row sets: a few traces' worth. */
const MAX_STORED_ROWS = 16;
const NO_ROWS = new Float64Array(0);
const NO_FACTS = new Float64Array(0);

/** Rows of numbers in one growable Float64Array; float64 holds every figure exactly (NaN = absent). */
class Rows {
  private data: Float64Array;
  private count = 0;
  /** Storage taken from a `RowStore` holds numbers of an earlier trace: a row is zeroed when appended. */
  private readonly recycled: boolean;

  constructor(
    private readonly width: number,
    initialRows: number,
    private readonly store?: RowStore,
  ) {
    const taken = store?.take(width * initialRows);
    this.recycled = taken !== undefined;
    this.data = taken ?? new Float64Array(width * initialRows);
  }

  get length(): number {
    return this.count;
  }

  /** Adds a row of zeros and returns its number. */
  append(): number {
    const row = this.nextRow();
    if (this.recycled) this.data.fill(0, row * this.width, (row + 1) * this.width);
    return row;
  }

  /** The storage back to the store; the rows cannot be read after. */
  release(): void {
    this.store?.give(this.data);
    this.data = NO_ROWS;
    this.count = 0;
  }

  private nextRow(): number {
    if ((this.count + 1) * this.width > this.data.length) {
      const grown = new Float64Array(Math.max(this.data.length * 2, this.width));
      grown.set(this.data.subarray(0, this.count * this.width));
      this.store?.give(this.data);
      this.data = grown;
    }
    return this.count++;
  }

  /** Adds a copy of row `row` of `from` (rows of the same width) and returns its number. */
  appendCopy(from: Rows, row: number): number {
    const copy = this.nextRow();
    // A loop, not set(subarray(…)): rows are 5 to 9 numbers, and a subarray is an object per row.
    const { data, width } = this;
    for (let column = 0, source = row * width, target = copy * width; column < width; column++) data[target + column] = from.data[source + column]!;
    return copy;
  }

  get(row: number, column: number): number {
    return asSmallIntegerWhenIntegral(this.data[row * this.width + column]!);
  }

  set(row: number, column: number, value: number): void {
    this.data[row * this.width + column] = value;
  }

  /** One column as runs of equal values (see `Runs`). */
  runs(column: number): (number | null)[] {
    const runs: (number | null)[] = [];
    const { data, width, count } = this;
    let row = 0;
    while (row < count) {
      const value = data[row * width + column]!;
      let end = row + 1;
      // Equal, or both absent (NaN).
      while (end < count && (data[end * width + column] === value || (value !== value && data[end * width + column] !== data[end * width + column]))) end++;
      runs.push(Number.isNaN(value) ? null : asSmallIntegerWhenIntegral(value), end - row);
      row = end;
    }
    return runs;
  }
}

/**
 * Whole numbers come back as int32 values. A number read from a Float64Array is a double; stored in
 * an evidence object it would make V8 keep that field as a separate boxed number in every object
 * (several extra objects per card for the collector), where an int32 is stored inline. -0 stays -0.
 */
function asSmallIntegerWhenIntegral(value: number): number {
  return (value | 0) === value && (value !== 0 || 1 / value > 0) ? value | 0 : value;
}

/**
 * A column of numbers as runs of equal values: `[value, count, value, count, ...]`, null standing for an absent
 * figure. Most columns of a large decision are a handful of runs (the same outcome, request and card size on
 * node after node), so a record costs little to serialise and to compress, and stays small before compression.
 */
export type Runs = readonly (number | null)[];

/**
 * A decision's evidence in its packed form, for storage: column by column, each column as runs, counts instead
 * of row offsets, and of each node's cards only those the rows refer to. Built from the rows without making any
 * evidence object.
 *
 * Card ids are not stored. They are GPU UUIDs, random, about 16 bytes each after compression, and a record refers to
 * at least one card per node evaluated: with them a 1,000-node record was about 26 KB. A record read later takes them
 * from the node's registration at that time (`RegisteredCards`, lib/store/storedEvidence.ts), by position, when the node's registration version
 * is still the one the decision saw (`nodes.registrationVersion`); otherwise the card's id reads as empty: the node
 * registered again since (other cards, or the same ones changed), or left. The versions are small numbers: a few runs
 * where nodes registered alike, a byte or so per node at most (docs/state.md, "Layout"); version 4 kept a 32-bit check
 * of the ids per node instead, which was most of a 6.5 KB record at 1,000 nodes and had to read every referenced id
 * while the booking was on its way.
 */
export interface PackedEvidence {
  readonly v: 5;
  readonly containers: readonly TracedContainer[];
  readonly texts: readonly string[];
  readonly nodes: {
    readonly name: readonly string[];
    readonly failed: Runs;
    readonly score: Runs;
    readonly reason: Runs;
    readonly containers: Runs;
    /** The node's registration version at the decision (`NodeState.registrationVersion`); -1 where it was not known. */
    readonly registrationVersion: Runs;
  };
  readonly containerRows: { readonly container: Runs; readonly status: Runs; readonly reason: Runs; readonly cards: Runs; readonly picks: Runs };
  /** Tried cards: the columns of `CardColumn`, in its order. */
  readonly cards: readonly Runs[];
  readonly picks: { readonly position: Runs; readonly usedMem: Runs; readonly usedCores: Runs };
  /** The cards the rows refer to: how many per node, then their columns, node after node. */
  readonly devices: {
    readonly perNode: Runs;
    readonly position: Runs;
    readonly index: Runs;
    readonly devmem: Runs;
    readonly devcore: Runs;
    readonly count: Runs;
  };
}

/**
 * Packed evidence with its columns expanded, row by row, and each referenced card with its id: what a trace is rebuilt
 * from (`DecisionTrace.unpack`). The store reads every packed form it ever wrote into this (lib/store/storedEvidence.ts).
 */
export interface ExpandedEvidence {
  readonly containers: readonly TracedContainer[];
  readonly texts: readonly string[];
  readonly nodes: { readonly name: readonly string[]; readonly failed: readonly number[]; readonly score: readonly number[]; readonly reason: readonly number[]; readonly containers: readonly number[] };
  readonly containerRows: { readonly container: readonly number[]; readonly status: readonly number[]; readonly reason: readonly number[]; readonly cards: readonly number[]; readonly picks: readonly number[] };
  readonly cards: readonly (readonly (number | null)[])[];
  readonly picks: { readonly position: readonly number[]; readonly usedMem: readonly number[]; readonly usedCores: readonly number[] };
  readonly devices: readonly (readonly [number, string, number, number, number, number])[][];
}

/** One node's card positions, each once, in the order first added; reused from node to node. */
class PositionSet {
  private readonly positions: number[] = [];
  size = 0;

  clear(): void {
    this.size = 0;
  }

  add(position: number): void {
    for (let i = 0; i < this.size; i++) if (this.positions[i] === position) return;
    this.positions[this.size++] = position;
  }

  at(i: number): number {
    return this.positions[i]!;
  }
}

// Columns of each kind of row.
const NodeColumn = { failed: 0, score: 1, reason: 2, firstContainer: 3, containerCount: 4, registrationVersion: 5, firstDevice: 6, deviceCount: 7 } as const;
const ContainerColumn = { container: 0, status: 1, reason: 2, firstCard: 3, cardCount: 4, firstPick: 5, pickCount: 6 } as const;
const CardColumn = {
  /** Position of the card in the node's device list. */
  position: 0,
  outcome: 1,
  usedMem: 2,
  usedCores: 3,
  usedSlots: 4,
  requestedMem: 5,
  requestedCores: 6,
  realtimeUsedMem: 7,
  realtimeTotalMem: 8,
} as const;
const PickColumn = { position: 0, usedMem: 1, usedCores: 2, maxSlotsBefore: 3, maxMemBefore: 4, maxCoresBefore: 5, exclusive: 6 } as const;
/** The cards a node's rows refer to, each once, in first-seen order: what the record keeps of them. */
const DeviceColumn = { position: 0, index: 1, devmem: 2, devcore: 3, count: 4 } as const;

/** Small-integer codes for the strings rows refer to. */
const OUTCOMES: readonly CardOutcome[] = ['Fit', ...Object.values(ReasonCode)];
const outcomeCode = new Map<CardOutcome, number>(OUTCOMES.map((outcome, code) => [outcome, code]));
const STATUSES: readonly ContainerStatus[] = ['passed', 'failed', 'skipped', 'noRequest'];
const statusCode = new Map<ContainerStatus, number>(STATUSES.map((status, code) => [status, code]));
const NO_TEXT = -1;
/** A node's registration version where the caller did not give it: no registration version equals it. */
const UNKNOWN_VERSION = -1;

/**
 * Everything one decision saw. Nodes are recorded in candidate order; a node's containers, tried
 * cards and chosen cards are recorded while it is the current node (`beginNode` … next `beginNode`).
 */
export class DecisionTrace {
  private readonly nodeRows: Rows;
  private readonly containerRows: Rows;
  private readonly cardRows: Rows;
  private readonly pickRows: Rows;
  /**
   * Written when a node's recording ends (`endNode`), while its devices are still in the cache from Fit, or copied
   * with the node's rows: packing then reads rows, not the device objects of every node, scattered in the heap.
   */
  private readonly deviceRows: Rows;
  /** Nodes below this row have their device rows. */
  private endedNodes = 0;
  private readonly referenced = new PositionSet();
  /** Per node row: its name, device list and card facts (./cardFacts.ts; shared with the input, not copied). */
  private readonly nodeNames: string[];
  private readonly nodeDevices: (readonly DeviceInfo[])[];
  private readonly nodeFacts: Float64Array[];
  /** Reason texts rows refer to by position. */
  private readonly texts: string[] = [];
  private currentNode = -1;

  /** Decisions and memo entries that still read this trace (`hold`, `drop`): at none, its rows go back to the store. */
  private holders = 1;
  private released = false;

  /**
   * `expectedNodes` sizes the rows (they grow when needed): growing copies, and large decisions are the ones that matter.
   * With a `store`, the rows are taken from it, and given back when the trace is dropped by every holder; the trace
   * starts held once (by its decision).
   */
  constructor(
    private readonly containers: readonly TracedContainer[],
    expectedNodes: number,
    private readonly store?: RowStore,
  ) {
    const nodes = Math.max(expectedNodes, 16);
    const containerCount = Math.max(containers.length, 1);
    // The cards the pod asks for: a node that fits records that many picks, and refers to at least as many cards. Sized
    // to it, the rows of a large decision are not grown (a copy, and storage V8 counts toward its next full collection).
    // At most 16 a node: a request may ask for more cards than any node has.
    const asked = containers.reduce((total, container) => total + (container.request?.nums ?? 0), 0);
    const picks = Math.min(Math.max(asked, containerCount), 16);
    this.nodeRows = new Rows(8, nodes, store);
    this.containerRows = new Rows(7, nodes * containerCount, store);
    // Fit usually stops after a few cards; a guess, not a bound.
    this.cardRows = new Rows(9, nodes * Math.max(containerCount * 2, picks + 1), store);
    this.pickRows = new Rows(7, nodes * picks, store);
    this.deviceRows = new Rows(5, nodes * Math.max(2, picks + 1), store);
    // Sized as the rows, written by node row: grown one push at a time they were copied again and again, and the
    // collector copied them (alive through the decision) at every young collection.
    this.nodeNames = new Array<string>(nodes);
    this.nodeDevices = new Array<readonly DeviceInfo[]>(nodes);
    this.nodeFacts = new Array<Float64Array>(nodes);
  }

  hold(): void {
    this.holders += 1;
  }

  /** One holder fewer; the last one gives the rows back to the store (a trace without a store keeps them). */
  drop(): void {
    this.holders -= 1;
    if (this.holders > 0 || this.store === undefined || this.released) return;
    this.released = true;
    for (const rows of [this.nodeRows, this.containerRows, this.cardRows, this.pickRows, this.deviceRows]) rows.release();
  }

  /** A released trace's rows belong to another trace now: reading them would be reading that one. */
  private assertReadable(): void {
    if (this.released) throw new Error('decision trace read after its rows were given back');
  }

  // ----- recording

  /** A candidate that Fit does not run on (unregistered): failed with `reason`, no containers. */
  failedNode(name: string, reason: string): void {
    this.beginNode(name, [], NO_FACTS);
    this.nodeFailed(reason);
  }

  /**
   * Starts the evidence of a node; returns its row. `facts`: the node's card facts, which the evidence of its cards reads
   * (the `devices` are read only when the evidence is). `registrationVersion`: see `PackedEvidence`.
   */
  beginNode(name: string, devices: readonly DeviceInfo[], facts: Float64Array, registrationVersion = UNKNOWN_VERSION): number {
    this.endNode();
    const row = this.nodeRows.append();
    this.nodeRows.set(row, NodeColumn.reason, NO_TEXT);
    this.nodeRows.set(row, NodeColumn.registrationVersion, registrationVersion);
    this.nodeRows.set(row, NodeColumn.firstContainer, this.containerRows.length);
    this.nodeNames[row] = name;
    this.nodeDevices[row] = devices;
    this.nodeFacts[row] = facts;
    this.currentNode = row;
    return row;
  }

  nodePassed(score: number): void {
    this.nodeRows.set(this.currentNode, NodeColumn.score, score);
  }

  nodeFailed(reason: string): void {
    this.nodeRows.set(this.currentNode, NodeColumn.failed, 1);
    this.nodeRows.set(this.currentNode, NodeColumn.reason, this.text(reason));
  }

  /**
   * Records node `node` of `from` again, as the current node: what Fit recorded there for a pod of the same plan on
   * the same node state (./reuse.ts). Rows are copied with their references moved; reason texts are added in the
   * order Fit adds them (containers', then the node's), so the result packs exactly as Fit's own recording would.
   */
  copyNode(from: DecisionTrace, node: number): number {
    from.assertReadable();
    this.endNode();
    from.endNode();
    const row = this.nodeRows.appendCopy(from.nodeRows, node);
    const firstContainer = from.nodeRows.get(node, NodeColumn.firstContainer);
    const containerCount = from.nodeRows.get(node, NodeColumn.containerCount);
    this.nodeRows.set(row, NodeColumn.firstContainer, this.containerRows.length);
    this.nodeNames[row] = from.nodeNames[node]!;
    this.nodeDevices[row] = from.nodeDevices[node]!;
    this.nodeFacts[row] = from.nodeFacts[node]!;
    for (let source = firstContainer; source < firstContainer + containerCount; source++) {
      const container = this.containerRows.appendCopy(from.containerRows, source);
      const reason = from.containerRows.get(source, ContainerColumn.reason);
      if (reason !== NO_TEXT) this.containerRows.set(container, ContainerColumn.reason, this.text(from.texts[reason]!));
      const firstCard = from.containerRows.get(source, ContainerColumn.firstCard);
      this.containerRows.set(container, ContainerColumn.firstCard, this.cardRows.length);
      for (let card = firstCard; card < firstCard + from.containerRows.get(source, ContainerColumn.cardCount); card++) this.cardRows.appendCopy(from.cardRows, card);
      const firstPick = from.containerRows.get(source, ContainerColumn.firstPick);
      this.containerRows.set(container, ContainerColumn.firstPick, this.pickRows.length);
      for (let pick = firstPick; pick < firstPick + from.containerRows.get(source, ContainerColumn.pickCount); pick++) this.pickRows.appendCopy(from.pickRows, pick);
    }
    const reason = from.nodeRows.get(node, NodeColumn.reason);
    if (reason !== NO_TEXT) this.nodeRows.set(row, NodeColumn.reason, this.text(from.texts[reason]!));
    const firstDevice = from.nodeRows.get(node, NodeColumn.firstDevice);
    this.nodeRows.set(row, NodeColumn.firstDevice, this.deviceRows.length);
    for (let device = firstDevice; device < firstDevice + from.nodeRows.get(node, NodeColumn.deviceCount); device++) this.deviceRows.appendCopy(from.deviceRows, device);
    this.currentNode = row;
    this.endedNodes = row + 1;
    return row;
  }

  /** The slab row the next tried card gets; a container's cards are rows `firstCard … cardRows-1`. */
  get cardCount(): number {
    return this.cardRows.length;
  }

  /** One tried card of the current container: the outcome and the numbers compared. Returns its row. */
  addCard(position: number, outcome: CardOutcome, figures: CardFigures): number {
    const rows = this.cardRows;
    const row = rows.append();
    rows.set(row, CardColumn.position, position);
    rows.set(row, CardColumn.outcome, outcomeCode.get(outcome)!);
    rows.set(row, CardColumn.usedMem, figures.usedMem);
    rows.set(row, CardColumn.usedCores, figures.usedCores);
    rows.set(row, CardColumn.usedSlots, figures.usedSlots);
    rows.set(row, CardColumn.requestedMem, figures.requestedMem);
    rows.set(row, CardColumn.requestedCores, figures.requestedCores);
    rows.set(row, CardColumn.realtimeUsedMem, figures.realtimeUsedMem ?? NaN);
    rows.set(row, CardColumn.realtimeTotalMem, figures.realtimeTotalMem ?? NaN);
    return row;
  }

  /** A card that fit but was given back later (its NUMA group was abandoned) gets its final outcome. */
  relabelCard(row: number, outcome: CardOutcome): void {
    this.cardRows.set(row, CardColumn.outcome, outcomeCode.get(outcome)!);
  }

  /** A container of the current node; `status` decides which of the other arguments count. */
  addContainer(container: number, status: ContainerStatus, reason?: string, firstCard = this.cardRows.length): number {
    const rows = this.containerRows;
    const row = rows.append();
    rows.set(row, ContainerColumn.container, container);
    rows.set(row, ContainerColumn.status, statusCode.get(status)!);
    rows.set(row, ContainerColumn.reason, reason === undefined ? NO_TEXT : this.text(reason));
    rows.set(row, ContainerColumn.firstCard, firstCard);
    rows.set(row, ContainerColumn.cardCount, this.cardRows.length - firstCard);
    rows.set(row, ContainerColumn.firstPick, this.pickRows.length);
    this.nodeRows.set(this.currentNode, NodeColumn.containerCount, this.nodeRows.get(this.currentNode, NodeColumn.containerCount) + 1);
    return row;
  }

  /**
   * One card given to the container recorded last, with what the store must guard for it (see `CardClaim`): the most
   * the card's booked slots, memory and cores may hold before this pod, and whether the pod takes it whole. Numbers, not
   * a guard object: an object made with each decision's arena had a new hidden class in each of a fresh process's first
   * decisions, which left this code reading it the slow, generic way for good (docs/performance.md).
   */
  addPick(position: number, usedMem: number, usedCores: number, maxSlotsBefore: number, maxMemBefore: number, maxCoresBefore: number, exclusive: boolean): void {
    const row = this.pickRows.append();
    this.pickRows.set(row, PickColumn.position, position);
    this.pickRows.set(row, PickColumn.usedMem, usedMem);
    this.pickRows.set(row, PickColumn.usedCores, usedCores);
    this.pickRows.set(row, PickColumn.maxSlotsBefore, maxSlotsBefore);
    this.pickRows.set(row, PickColumn.maxMemBefore, maxMemBefore);
    this.pickRows.set(row, PickColumn.maxCoresBefore, maxCoresBefore);
    this.pickRows.set(row, PickColumn.exclusive, exclusive ? 1 : 0);
    const container = this.containerRows.length - 1;
    this.containerRows.set(container, ContainerColumn.pickCount, this.containerRows.get(container, ContainerColumn.pickCount) + 1);
  }

  /** Writes the current node's device rows (see `deviceRows`), once; recording it further is then wrong. */
  private endNode(): void {
    const node = this.currentNode;
    if (node < this.endedNodes) return;
    const referenced = this.referenced;
    referenced.clear();
    const first = this.nodeRows.get(node, NodeColumn.firstContainer);
    for (let row = first; row < first + this.nodeRows.get(node, NodeColumn.containerCount); row++) {
      const firstCard = this.containerRows.get(row, ContainerColumn.firstCard);
      for (let card = firstCard; card < firstCard + this.containerRows.get(row, ContainerColumn.cardCount); card++) referenced.add(this.cardRows.get(card, CardColumn.position));
      const firstPick = this.containerRows.get(row, ContainerColumn.firstPick);
      for (let pick = firstPick; pick < firstPick + this.containerRows.get(row, ContainerColumn.pickCount); pick++) referenced.add(this.pickRows.get(pick, PickColumn.position));
    }
    const rows = this.deviceRows;
    this.nodeRows.set(node, NodeColumn.firstDevice, rows.length);
    this.nodeRows.set(node, NodeColumn.deviceCount, referenced.size);
    const facts = this.nodeFacts[node]!;
    for (let i = 0; i < referenced.size; i++) {
      const position = referenced.at(i);
      const at = position * CARD_FACTS;
      const row = rows.append();
      rows.set(row, DeviceColumn.position, position);
      rows.set(row, DeviceColumn.index, facts[at + CardFact.index]!);
      rows.set(row, DeviceColumn.devmem, facts[at + CardFact.devmem]!);
      rows.set(row, DeviceColumn.devcore, facts[at + CardFact.devcore]!);
      rows.set(row, DeviceColumn.count, facts[at + CardFact.count]!);
    }
    this.endedNodes = node + 1;
  }

  private text(value: string): number {
    this.texts.push(value);
    return this.texts.length - 1;
  }

  // ----- reading

  /** The node's devices aligned per container (`[]` for containers without cards), as recorded so far. */
  podDevices(node: number): ContainerDevice[][] {
    this.assertReadable();
    const first = this.nodeRows.get(node, NodeColumn.firstContainer);
    const count = this.nodeRows.get(node, NodeColumn.containerCount);
    const aligned: ContainerDevice[][] = [];
    for (let row = first; row < first + count; row++) aligned.push(this.containerDevices(node, row));
    return aligned;
  }

  /**
   * Per card the node's containers took: what the pod's booking adds to the card (after HAMi's init-container
   * collapse, the form the ledger counts) and the tightest bound any of its checks put on the card's usage
   * before the pod. `coresAreMasks` tells the request types whose cores are masks (the registry's, passed in: the
   * trace sits below the device kinds).
   */
  claims(node: number, initCount: number, coresAreMasks: (type: string) => boolean): CardClaim[] {
    this.assertReadable();
    const bounds = new Map<string, { maxSlots: number; maxMem: number; maxCores: number; exclusive: boolean }>();
    const devices = this.nodeDevices[node]!;
    const first = this.nodeRows.get(node, NodeColumn.firstContainer);
    const count = this.nodeRows.get(node, NodeColumn.containerCount);
    for (let row = first; row < first + count; row++) {
      const firstPick = this.containerRows.get(row, ContainerColumn.firstPick);
      for (let pick = firstPick; pick < firstPick + this.containerRows.get(row, ContainerColumn.pickCount); pick++) {
        const uuid = devices[this.pickRows.get(pick, PickColumn.position)]!.id;
        const maxSlots = this.pickRows.get(pick, PickColumn.maxSlotsBefore);
        const maxMem = this.pickRows.get(pick, PickColumn.maxMemBefore);
        const maxCores = this.pickRows.get(pick, PickColumn.maxCoresBefore);
        const exclusive = this.pickRows.get(pick, PickColumn.exclusive) === 1;
        const known = bounds.get(uuid);
        bounds.set(
          uuid,
          known === undefined
            ? { maxSlots, maxMem, maxCores, exclusive }
            : {
                maxSlots: Math.min(known.maxSlots, maxSlots),
                maxMem: Math.min(known.maxMem, maxMem),
                maxCores: Math.min(known.maxCores, maxCores),
                exclusive: known.exclusive || exclusive,
              },
        );
      }
    }
    return collapsePodUsage(this.podDevices(node), initCount, false, coresAreMasks).map((use) => {
      const bound = bounds.get(use.uuid)!;
      return {
        uuid: use.uuid,
        slots: Math.max(use.slots, 1),
        mem: use.usedmem,
        cores: use.usedcores,
        maxSlotsBefore: bound.maxSlots,
        maxMemBefore: bound.maxMem,
        maxCoresBefore: bound.maxCores,
        exclusive: bound.exclusive,
      };
    });
  }

  /** The packed form of everything recorded (see `PackedEvidence`). */
  pack(): PackedEvidence {
    this.assertReadable();
    this.endNode();
    const column = (rows: Rows, col: number): Runs => rows.runs(col);
    return {
      v: 5,
      containers: this.containers,
      texts: this.texts,
      nodes: {
        name: this.nodeNames.slice(0, this.nodeRows.length),
        failed: column(this.nodeRows, NodeColumn.failed),
        score: column(this.nodeRows, NodeColumn.score),
        reason: column(this.nodeRows, NodeColumn.reason),
        containers: column(this.nodeRows, NodeColumn.containerCount),
        registrationVersion: column(this.nodeRows, NodeColumn.registrationVersion),
      },
      containerRows: {
        container: column(this.containerRows, ContainerColumn.container),
        status: column(this.containerRows, ContainerColumn.status),
        reason: column(this.containerRows, ContainerColumn.reason),
        cards: column(this.containerRows, ContainerColumn.cardCount),
        picks: column(this.containerRows, ContainerColumn.pickCount),
      },
      cards: Object.values(CardColumn).map((col) => column(this.cardRows, col)),
      picks: { position: column(this.pickRows, PickColumn.position), usedMem: column(this.pickRows, PickColumn.usedMem), usedCores: column(this.pickRows, PickColumn.usedCores) },
      devices: {
        perNode: column(this.nodeRows, NodeColumn.deviceCount),
        position: column(this.deviceRows, DeviceColumn.position),
        index: column(this.deviceRows, DeviceColumn.index),
        devmem: column(this.deviceRows, DeviceColumn.devmem),
        devcore: column(this.deviceRows, DeviceColumn.devcore),
        count: column(this.deviceRows, DeviceColumn.count),
      },
    };
  }

  /** The trace an evidence was packed from, able to build the same evidence objects (lib/store/storedEvidence.ts reads records into `expanded`). */
  static unpack(packed: ExpandedEvidence): DecisionTrace {
    const trace = new DecisionTrace(packed.containers, packed.nodes.name.length);
    trace.texts.push(...packed.texts);
    let container = 0;
    let card = 0;
    let pick = 0;
    packed.nodes.name.forEach((name, node) => {
      const sparse: DeviceInfo[] = [];
      const referenced = packed.devices[node] ?? [];
      for (const [position, id, index, devmem, devcore, count] of referenced) {
        sparse[position] = { id, index, devmem, devcore, count, type: '', numa: 0, mode: '', health: true };
      }
      // Only the cards the rows refer to: what the record kept of them.
      const facts = new Float64Array(sparse.length * CARD_FACTS);
      for (const [position] of referenced) writeCardFacts(facts, position, sparse[position]!, position, false);
      trace.beginNode(name, sparse, facts);
      const n = trace.currentNode;
      trace.nodeRows.set(n, NodeColumn.failed, packed.nodes.failed[node] ?? 0);
      trace.nodeRows.set(n, NodeColumn.score, packed.nodes.score[node] ?? 0);
      trace.nodeRows.set(n, NodeColumn.reason, packed.nodes.reason[node] ?? NO_TEXT);
      for (let i = 0; i < (packed.nodes.containers[node] ?? 0); i++, container++) {
        const row = trace.containerRows.append();
        const cards = packed.containerRows.cards[container] ?? 0;
        const picks = packed.containerRows.picks[container] ?? 0;
        trace.containerRows.set(row, ContainerColumn.container, packed.containerRows.container[container] ?? 0);
        trace.containerRows.set(row, ContainerColumn.status, packed.containerRows.status[container] ?? 0);
        trace.containerRows.set(row, ContainerColumn.reason, packed.containerRows.reason[container] ?? NO_TEXT);
        trace.containerRows.set(row, ContainerColumn.firstCard, trace.cardRows.length);
        trace.containerRows.set(row, ContainerColumn.cardCount, cards);
        trace.containerRows.set(row, ContainerColumn.firstPick, trace.pickRows.length);
        trace.containerRows.set(row, ContainerColumn.pickCount, picks);
        trace.nodeRows.set(n, NodeColumn.containerCount, i + 1);
        for (let k = 0; k < cards; k++, card++) {
          const r = trace.cardRows.append();
          Object.values(CardColumn).forEach((col, c) => trace.cardRows.set(r, col, packed.cards[c]?.[card] ?? NaN));
        }
        for (let k = 0; k < picks; k++, pick++) {
          const r = trace.pickRows.append();
          trace.pickRows.set(r, PickColumn.position, packed.picks.position[pick] ?? 0);
          trace.pickRows.set(r, PickColumn.usedMem, packed.picks.usedMem[pick] ?? 0);
          trace.pickRows.set(r, PickColumn.usedCores, packed.picks.usedCores[pick] ?? 0);
        }
      }
    });
    return trace;
  }

  /** The public evidence, one entry per node recorded, in order. */
  evidence(): NodeEvidence[] {
    this.assertReadable();
    const nodes: NodeEvidence[] = [];
    for (let row = 0; row < this.nodeRows.length; row++) nodes.push(this.nodeEvidence(row));
    return nodes;
  }

  private nodeEvidence(node: number): NodeEvidence {
    const rows = this.nodeRows;
    const name = this.nodeNames[node]!;
    const first = rows.get(node, NodeColumn.firstContainer);
    const containers: ContainerEvidence[] = [];
    for (let row = first; row < first + rows.get(node, NodeColumn.containerCount); row++) containers.push(this.containerEvidence(node, row));
    if (rows.get(node, NodeColumn.failed) === 1) {
      return { name, status: 'failed', score: 0, reason: this.texts[rows.get(node, NodeColumn.reason)]!, containers };
    }
    return { name, status: 'passed', score: rows.get(node, NodeColumn.score), containers };
  }

  /** Keys in the order the evidence always had: the scheduler log and stored records serialise them. */
  private containerEvidence(node: number, row: number): ContainerEvidence {
    const rows = this.containerRows;
    const { name, index, init, request } = this.containers[rows.get(row, ContainerColumn.container)]!;
    const status = STATUSES[rows.get(row, ContainerColumn.status)]!;
    const cards = this.cards(node, rows.get(row, ContainerColumn.firstCard), rows.get(row, ContainerColumn.cardCount));
    switch (status) {
      case 'noRequest':
        return { name, index, init, status, cards };
      case 'skipped':
        return { name, index, init, status, ...(request ? { request } : {}), cards };
      // Fit ran, so there was a request.
      case 'failed':
        return { name, index, init, status, reason: this.texts[rows.get(row, ContainerColumn.reason)]!, request, cards };
      case 'passed':
        return { name, index, init, status, request, devices: this.containerDevices(node, row), cards };
    }
  }

  private containerDevices(node: number, row: number): ContainerDevice[] {
    const rows = this.containerRows;
    const type = this.containers[rows.get(row, ContainerColumn.container)]!.request?.type ?? '';
    const devices = this.nodeDevices[node]!;
    const first = rows.get(row, ContainerColumn.firstPick);
    const chosen: ContainerDevice[] = [];
    for (let pick = first; pick < first + rows.get(row, ContainerColumn.pickCount); pick++) {
      const device = devices[this.pickRows.get(pick, PickColumn.position)]!;
      chosen.push({
        idx: device.index,
        uuid: device.id,
        type,
        usedmem: this.pickRows.get(pick, PickColumn.usedMem),
        usedcores: this.pickRows.get(pick, PickColumn.usedCores),
      });
    }
    return chosen;
  }

  private cards(node: number, first: number, count: number): CardEvidence[] {
    const devices = this.nodeDevices[node]!;
    const cards: CardEvidence[] = [];
    for (let row = first; row < first + count; row++) cards.push(this.card(row, devices));
    return cards;
  }

  private card(row: number, devices: readonly DeviceInfo[]): CardEvidence {
    const rows = this.cardRows;
    const device = devices[rows.get(row, CardColumn.position)]!;
    const usedMem = rows.get(row, CardColumn.usedMem);
    const card: { -readonly [K in keyof CardEvidence]: CardEvidence[K] } = {
      uuid: device.id,
      index: device.index,
      outcome: OUTCOMES[rows.get(row, CardColumn.outcome)]!,
      totalMem: device.devmem,
      usedMem,
      requestedMem: rows.get(row, CardColumn.requestedMem),
      freeMem: device.devmem - usedMem,
      totalCores: device.devcore,
      usedCores: rows.get(row, CardColumn.usedCores),
      requestedCores: rows.get(row, CardColumn.requestedCores),
      slots: device.count,
      usedSlots: rows.get(row, CardColumn.usedSlots),
    };
    const realtimeUsedMem = rows.get(row, CardColumn.realtimeUsedMem);
    const realtimeTotalMem = rows.get(row, CardColumn.realtimeTotalMem);
    if (!Number.isNaN(realtimeUsedMem) && !Number.isNaN(realtimeTotalMem)) {
      card.realtimeUsedMem = realtimeUsedMem;
      card.realtimeTotalMem = realtimeTotalMem;
    }
    return card;
  }
}
