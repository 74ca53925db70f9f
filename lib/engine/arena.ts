/**
 * The working memory of decisions: per-card typed arrays reused from node to node (a decision visits every card of
 * every candidate, so the per-card loop allocates nothing). A caller that decides again and again (the filter's warm
 * view) keeps one arena; `decide` makes a fresh one when given none. One decision at a time: `decide` is synchronous.
 */

import type { MigPlacement } from './types';

/** A container's picks: grown with the card count, and beyond it when one card gives several (MIG instances). */
const PICK_ARRAYS = ['picked', 'pickedRow', 'pickedMem', 'pickedCores', 'pickedMaxSlots', 'pickedMaxMem', 'pickedMaxCores'] as const;

/** Grown together, to the card count of the largest node seen. */
const INT_ARRAYS = [
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
  'order',
  'picked',
  'pickedRow',
  'noteAt',
] as const;

export class DecisionArena {
  // Usage figures are int32 in HAMi; int32 arrays also keep evidence numbers small integers.
  /** The node's booked usage per card, before this pod. */
  baseUsed = new Int32Array(16);
  baseMem = new Int32Array(16);
  baseCores = new Int32Array(16);
  /** The working usage the current container sees (the pod's earlier containers included). */
  used = new Int32Array(16);
  usedMem = new Int32Array(16);
  usedCores = new Int32Array(16);
  cardScore = new Float64Array(16);
  /** The cards' NUMA nodes and indexes, for ordering them (./order.ts). Float64: as the card facts hold them. */
  cardNuma = new Float64Array(16);
  cardIndex = new Float64Array(16);
  /** Card positions in policy order (Fit takes from the end); settled from `orderedFrom` on (./order.ts). */
  order = new Int32Array(16);
  orderedFrom = 0;
  /** The current container's picks: card position, evidence row, what is booked, and its guards. */
  picked = new Int32Array(16);
  pickedRow = new Int32Array(16);
  pickedMem = new Int32Array(16);
  pickedCores = new Int32Array(16);
  /** What the store must guard for each pick: the most the card's booked usage may hold before this pod. */
  pickedMaxSlots = new Int32Array(16);
  pickedMaxMem = new Int32Array(16);
  pickedMaxCores = new Int32Array(16);
  pickedExclusive = new Uint8Array(16);
  /** 1 for a card the node's bookings make unusable (`NodeState.failClosed`). */
  failClosed = new Uint8Array(16);
  /** Whether `failClosed` holds a 1 anywhere (most nodes have none: then it is not cleared). */
  anyFailClosed = false;
  /** Parts of each card held before this pod (MIG placements in use); undefined: none. */
  basePlacements: (readonly MigPlacement[] | undefined)[] = [];
  /** The working copy the current container sees: before this pod, plus the pod's earlier containers here. */
  placements: MigPlacement[][] = [];
  /** What `touchPrepared` and `touchUsage` read, kept so that their reads are not optimised away. */
  touched = 0;
  /** Index into the decision's real-time notes per card, -1 when none yet for this node. */
  noteAt = new Int32Array(16);
  /** Per reason code (see `REASONS` in ./fit), how many cards of the current container failed with it. */
  reasonCounts = new Int32Array(32);
  /** The reason counts as a map, for `genReason`; only the text built from it outlives a call. */
  readonly reasonTally = new Map<string, number>();

  /** Room for `cards` cards in every per-card array. */
  ensure(cards: number): void {
    if (cards <= this.order.length) return;
    const size = Math.max(cards, this.order.length * 2);
    for (const key of INT_ARRAYS) this[key] = new Int32Array(size);
    this.pickedExclusive = new Uint8Array(size);
    this.failClosed = new Uint8Array(size);
    this.cardScore = new Float64Array(size);
    this.cardNuma = new Float64Array(size);
    this.cardIndex = new Float64Array(size);
  }

  /** Room for `picks` picks of the current container, keeping those made so far. */
  ensurePicks(picks: number): void {
    if (picks <= this.picked.length) return;
    const size = Math.max(picks, this.picked.length * 2);
    for (const key of PICK_ARRAYS) {
      const grown = new Int32Array(size);
      grown.set(this[key]);
      this[key] = grown;
    }
    const exclusive = new Uint8Array(size);
    exclusive.set(this.pickedExclusive);
    this.pickedExclusive = exclusive;
  }

  /** A fresh working copy of the node's booked usage. */
  resetWorkingUsage(cards: number): void {
    for (let p = 0; p < cards; p++) {
      this.used[p] = this.baseUsed[p]!;
      this.usedMem[p] = this.baseMem[p]!;
      this.usedCores[p] = this.baseCores[p]!;
    }
    for (let p = 0; p < this.placements.length; p++) this.placements[p] = [...(this.basePlacements[p] ?? [])];
  }
}
