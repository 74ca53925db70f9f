/**
 * A node as the decision works on it: what is fixed for one registration (remembered for as long as the
 * registration object lives), and the node-level steps on the arena's usage arrays: loading the booked usage, the
 * node score before the pod (docs/hami-parity.md §5.1), booking a chosen card for the pod's later containers.
 */
import type { DecisionArena } from './arena';
import { deviceKindOf, DEVICE_KINDS } from './devices';
import type { DeviceInfo, NodeRegistration, NodeState, PairScores } from './types';

const SCORE_WEIGHT = 10;
const f32 = Math.fround;

export interface PreparedNode {
  readonly devices: readonly DeviceInfo[];
  /** Vendors of the device kinds the node has at least one device of. */
  readonly kinds: ReadonlySet<string>;
  /** Per device kind (by vendor), the positions (into `devices`) of the cards that kind's Fit sees. */
  readonly cardsOf: ReadonlyMap<string, Int32Array>;
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

export const EMPTY_NODE: PreparedNode = {
  devices: [],
  kinds: new Set(),
  cardsOf: new Map(),
  cordoned: new Uint8Array(0),
  numa: new Int32Array(0),
  typeKeys: [],
  pairScores: {},
  totalSlots: 0,
  totalCores: 0,
  totalMem: 0,
};

const NO_CARDS = new Int32Array(0);

/** The positions of the node's cards that the kind with this vendor word sees. */
export function cardsOf(node: PreparedNode, vendor: string): Int32Array {
  return node.cardsOf.get(vendor) ?? NO_CARDS;
}

/**
 * What `prepareNode` computed, per registration object. A memo of a pure function keyed by immutable objects: it
 * changes no result, and entries go with their registrations.
 */
const preparedNodes = new WeakMap<NodeRegistration, PreparedNode>();

export function prepareNode(registration: Extract<NodeRegistration, { registered: true }>): PreparedNode {
  const cached = preparedNodes.get(registration);
  if (cached !== undefined) return cached;
  const { devices } = registration;
  const cordonedIds = new Set(registration.cordoned);
  const kinds = new Set<string>();
  const positions = new Map<string, number[]>(DEVICE_KINDS.map((kind) => [kind.vendor, []]));
  let totalSlots = 0;
  let totalCores = 0;
  let totalMem = 0;
  devices.forEach((device, position) => {
    const kind = deviceKindOf(device);
    if (kind !== undefined) {
      kinds.add(kind.vendor);
      if (kind.fitSees(device)) positions.get(kind.vendor)!.push(position);
    }
    totalSlots += device.count;
    totalCores += device.devcore;
    totalMem += device.devmem;
  });
  const prepared: PreparedNode = {
    devices,
    kinds,
    cardsOf: new Map([...positions].filter(([, list]) => list.length > 0).map(([vendor, list]) => [vendor, Int32Array.from(list)])),
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

/** Booked usage per card into the arena; cards absent from the ledger are idle (docs/hami-parity.md §7.2). */
export function loadBookedUsage(arena: DecisionArena, state: NodeState, node: PreparedNode): void {
  const { devices } = node;
  const aligned = state.usageByPosition;
  if (aligned !== undefined && aligned.used.length === devices.length) {
    arena.baseUsed.set(aligned.used);
    arena.baseMem.set(aligned.mem);
    arena.baseCores.set(aligned.cores);
    return;
  }
  for (let p = 0; p < devices.length; p++) {
    const usage = state.usage[devices[p]!.id];
    arena.baseUsed[p] = usage?.used ?? 0;
    arena.baseMem[p] = usage?.usedmem ?? 0;
    arena.baseCores[p] = usage?.usedcores ?? 0;
  }
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
 * A chosen card is booked on the working usage the pod's later app containers see. Booking goes by
 * UUID, to the first card registered with it (a registration listing a UUID twice books the first).
 */
export function bookCard(arena: DecisionArena, node: PreparedNode, uuid: string, mem: number, cores: number): void {
  let p = 0;
  while (p < node.devices.length && node.devices[p]!.id !== uuid) p++;
  arena.used[p]! += 1;
  arena.usedMem[p]! += mem;
  arena.usedCores[p]! += cores;
}
