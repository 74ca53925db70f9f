/**
 * A node as the decision works on it: what is fixed for one registration (`PreparedNode`, made by ./prepareNode.ts
 * and remembered for as long as the registration object lives), and the node-level steps on the arena's usage arrays: loading the booked usage, the
 * node score before the pod (docs/hami-parity.md §5.1), booking a chosen card for the pod's later containers.
 */
import type { DecisionArena } from './arena';
import { CardFact, CARD_FACTS } from './cardFacts';
import { saturatedInt32 } from './quantity';
import { SCORE_WEIGHT, UsageColumn, USAGE_WIDTH, type DeviceInfo, type NodeState, type PairScores } from './types';

const f32 = Math.fround;

export interface PreparedNode {
  readonly devices: readonly DeviceInfo[];
  /** `devices.length`, kept here: the hot path then does not read the device list. */
  readonly cardCount: number;
  /** Per device kind (by its position in `DEVICE_KINDS`), the positions (into `devices`) of the cards its Fit sees; undefined: the node has no device of the kind. */
  readonly cardsByKind: readonly (Int32Array | undefined)[];
  /** Per device kind, what it prepared for this node (`DeviceKind.prepare`). */
  readonly kindState: readonly unknown[];
  /**
   * Per card, the numbers every decision reads (./cardFacts.ts): what Fit, scoring, booking and the evidence read of a
   * card, in one block instead of the card objects (those are read only for rarer checks: UUID selection, MIG, Neuron).
   */
  readonly cardFacts: Float64Array;
  /** Per card, its `type` (scoring compares it with the request's). */
  readonly cardTypes: readonly string[];
  /** `type` and `mode` joined, the key of the per-pod type check cache. */
  readonly typeKeys: readonly string[];
  readonly pairScores: PairScores;
  /** Node score denominators over all cards (docs/hami-parity.md §5.1). */
  readonly totalSlots: number;
  readonly totalCores: number;
  readonly totalMem: number;
}

export const EMPTY_NODE: PreparedNode = {
  devices: [],
  cardCount: 0,
  cardsByKind: [],
  kindState: [],
  cardFacts: new Float64Array(0),
  cardTypes: [],
  typeKeys: [],
  pairScores: {},
  totalSlots: 0,
  totalCores: 0,
  totalMem: 0,
};


/**
 * Reads what Fit will read first of a prepared node (its card facts, a cache line a card, and its cards' positions) and
 * nothing more, so that those are in the processor's caches when Fit comes to them (see `NODE_BLOCK` in ./decide.ts);
 * `touchUsage` reads the node's booked usage, one level of objects further.
 */
export function touchPrepared(arena: DecisionArena, node: PreparedNode): void {
  const { cardFacts } = node;
  let sum = node.cardsByKind[0]?.[0] ?? 0;
  for (let at = 0; at < cardFacts.length; at += CARD_FACTS) sum += cardFacts[at]!;
  // The card types' strings and the kinds' state: most nodes share them with other nodes (./prepareNode.ts, `shared`),
  // but a node past that memo's bound has its own.
  sum += (node.cardTypes[0]?.length ?? 0) + (node.kindState[0] === undefined ? 0 : 1);
  arena.touched = sum;
}

/** Reads the booked usage `loadBookedUsage` will read (see `touchPrepared`). */
export function touchUsage(arena: DecisionArena, state: NodeState, node: PreparedNode): void {
  const aligned = state.usageByPosition;
  if (aligned !== undefined) {
    arena.touched = aligned[0]! + aligned[aligned.length - 1]!;
    return;
  }
  let sum = 0;
  const { devices } = node;
  for (let p = 0; p < devices.length; p++) sum += state.usage[devices[p]!.id]?.used ?? 0;
  arena.touched = sum;
}

/** Booked usage per card into the arena; cards absent from the ledger are idle (docs/hami-parity.md §7.2). */
export function loadBookedUsage(arena: DecisionArena, state: NodeState, node: PreparedNode): void {
  loadHeldParts(arena, state, node);
  const aligned = state.usageByPosition;
  const cards = node.cardCount;
  if (aligned !== undefined && aligned.length === cards * USAGE_WIDTH) {
    for (let p = 0, at = 0; p < cards; p++, at += USAGE_WIDTH) {
      arena.baseUsed[p] = aligned[at + UsageColumn.used]!;
      arena.baseMem[p] = aligned[at + UsageColumn.mem]!;
      arena.baseCores[p] = aligned[at + UsageColumn.cores]!;
    }
    return;
  }
  const { devices } = node;
  for (let p = 0; p < cards; p++) {
    const usage = state.usage[devices[p]!.id];
    arena.baseUsed[p] = saturatedInt32(usage?.used ?? 0);
    arena.baseMem[p] = saturatedInt32(usage?.usedmem ?? 0);
    arena.baseCores[p] = saturatedInt32(usage?.usedcores ?? 0);
  }
}

/** Cards failed closed, and parts of cards in use (MIG placements), into the arena; nothing to do for most nodes. */
function loadHeldParts(arena: DecisionArena, state: NodeState, node: PreparedNode): void {
  if (arena.anyFailClosed) arena.failClosed.fill(0);
  arena.anyFailClosed = state.failClosed !== undefined;
  if (state.failClosed !== undefined) {
    for (const uuid of state.failClosed) {
      const p = node.devices.findIndex((d) => d.id === uuid);
      if (p >= 0) arena.failClosed[p] = 1;
    }
  }
  const inUse = state.placementsInUse;
  if (arena.placements.length !== 0) {
    arena.basePlacements.length = 0;
    arena.placements.length = 0;
  }
  if (inUse === undefined) return;
  node.devices.forEach((d, p) => {
    arena.basePlacements[p] = inUse[d.id];
    arena.placements[p] = [...(inUse[d.id] ?? [])];
  });
}

/**
 * `10 × (Σused/Σcount + Σusedcores/Σdevcore + Σusedmem/Σdevmem)` over all cards, before this pod
 * (docs/hami-parity.md §5.1), in float32; 0 when a denominator is 0.
 */
export function nodeScore(arena: DecisionArena, node: PreparedNode): number {
  if (node.totalSlots === 0 || node.totalCores === 0 || node.totalMem === 0) return 0;
  let used = 0;
  let usedCores = 0;
  let usedMem = 0;
  for (let p = 0; p < node.cardCount; p++) {
    used += arena.baseUsed[p]!;
    usedCores += arena.baseCores[p]!;
    usedMem += arena.baseMem[p]!;
  }
  const slotShare = f32(f32(used) / f32(node.totalSlots));
  const coreShare = f32(f32(usedCores) / f32(node.totalCores));
  const memShare = f32(f32(usedMem) / f32(node.totalMem));
  return f32(SCORE_WEIGHT * f32(f32(slotShare + coreShare) + memShare));
}

/**
 * Chosen card `position` is booked on the working usage the pod's later app containers see. Booking goes by
 * UUID, to the first card registered with it (a registration listing a UUID twice books the first: `bookedAt`).
 */
export function bookCard(arena: DecisionArena, node: PreparedNode, position: number, mem: number, cores: number): void {
  const p = node.cardFacts[position * CARD_FACTS + CardFact.bookedAt]!;
  arena.used[p]! += 1;
  arena.usedMem[p]! += mem;
  arena.usedCores[p]! += cores;
}
