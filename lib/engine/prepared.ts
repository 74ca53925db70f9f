/**
 * A node as the decision works on it: what is fixed for one registration (`PreparedNode`, made by ./prepareNode.ts
 * and remembered for as long as the registration object lives), and the node-level steps on the arena's usage arrays: loading the booked usage, the
 * node score before the pod (docs/hami-parity.md §5.1), booking a chosen card for the pod's later containers.
 */
import type { DecisionArena } from './arena';
import { saturatedInt32 } from './quantity';
import { SCORE_WEIGHT, type DeviceInfo, type NodeState, type PairScores } from './types';

const f32 = Math.fround;

/** Numbers per card in `PreparedNode.cardTable` (count, devcore, devmem). */
export const CARD_TABLE_WIDTH = 3;

export interface PreparedNode {
  readonly devices: readonly DeviceInfo[];
  /** Per device kind (by its position in `DEVICE_KINDS`), the positions (into `devices`) of the cards its Fit sees; undefined: the node has no device of the kind. */
  readonly cardsByKind: readonly (Int32Array | undefined)[];
  /** Per device kind, what it prepared for this node (`DeviceKind.prepare`). */
  readonly kindState: readonly unknown[];
  /**
   * Per card, `count`, `devcore` and `devmem` (`CARD_TABLE_WIDTH` numbers a card, in that order): what scoring reads of
   * every card, in one array instead of the card's object (./order.ts).
   */
  readonly cardTable: Float64Array;
  /** Per card, its `type` (scoring compares it with the request's). */
  readonly cardTypes: readonly string[];
  readonly cordoned: Uint8Array;
  readonly numa: Int32Array;
  /** `type` and `mode` joined, the key of the per-pod type check cache. */
  readonly typeKeys: readonly string[];
  readonly pairScores: PairScores;
  /** Per card, the position of the first card registered with its UUID (itself unless a UUID is listed twice): where booking it goes. */
  readonly bookedAt: Int32Array;
  /** Node score denominators over all cards (docs/hami-parity.md §5.1). */
  readonly totalSlots: number;
  readonly totalCores: number;
  readonly totalMem: number;
}

export const EMPTY_NODE: PreparedNode = {
  devices: [],
  cardsByKind: [],
  kindState: [],
  cardTable: new Float64Array(0),
  cardTypes: [],
  cordoned: new Uint8Array(0),
  numa: new Int32Array(0),
  typeKeys: [],
  pairScores: {},
  bookedAt: new Int32Array(0),
  totalSlots: 0,
  totalCores: 0,
  totalMem: 0,
};


/**
 * Reads what Fit will read first of a prepared node (its arrays and card objects) and nothing more, so that those
 * objects are in the processor's caches when Fit comes to them (see `NODE_BLOCK` in ./decide.ts); `touchUsage` reads
 * the node's booked usage, one level of objects further.
 */
export function touchPrepared(arena: DecisionArena, node: PreparedNode): void {
  let sum = node.cardTable[0]! + node.numa[0]! + node.cordoned[0]! + node.bookedAt[0]! + (node.cardsByKind[0]?.[0] ?? 0);
  const { devices } = node;
  for (let p = 0; p < devices.length; p++) sum += devices[p]!.index;
  arena.touched = sum;
}

/** Reads the booked usage `loadBookedUsage` will read (see `touchPrepared`). */
export function touchUsage(arena: DecisionArena, state: NodeState, node: PreparedNode): void {
  const aligned = state.usageByPosition;
  if (aligned !== undefined) {
    arena.touched = aligned.used[0]! + aligned.mem[0]! + aligned.cores[0]!;
    return;
  }
  let sum = 0;
  const { devices } = node;
  for (let p = 0; p < devices.length; p++) sum += state.usage[devices[p]!.id]?.used ?? 0;
  arena.touched = sum;
}

/** Booked usage per card into the arena; cards absent from the ledger are idle (docs/hami-parity.md §7.2). */
export function loadBookedUsage(arena: DecisionArena, state: NodeState, node: PreparedNode): void {
  const { devices } = node;
  loadHeldParts(arena, state, node);
  const aligned = state.usageByPosition;
  if (aligned !== undefined && aligned.used.length === devices.length) {
    arena.baseUsed.set(aligned.used);
    arena.baseMem.set(aligned.mem);
    arena.baseCores.set(aligned.cores);
    return;
  }
  for (let p = 0; p < devices.length; p++) {
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
  for (let p = 0; p < node.devices.length; p++) {
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
  const p = node.bookedAt[position]!;
  arena.used[p]! += 1;
  arena.usedMem[p]! += mem;
  arena.usedCores[p]! += cores;
}
