/**
 * A node's registration as the decision works on it (`PreparedNode`, ./prepared.ts): its cards per device kind and what
 * each kind works out once. Apart from ./prepared.ts because it consults the registry of kinds, which sits above Fit.
 */
import { deviceKindOf, DEVICE_KINDS, kindIndex } from './devices';
import { CARD_FACTS, writeCardFacts } from './cardFacts';
import type { PreparedNode } from './prepared';
import type { NodeRegistration } from './types';

/**
 * What `prepareNode` computed, per registration object. A memo of a pure function keyed by immutable objects: it
 * changes no result, and entries go with their registrations.
 */
const preparedNodes = new WeakMap<NodeRegistration, PreparedNode>();

/**
 * Equal small arrays of prepared nodes as one object (`shared`): the card positions per kind, what the kinds prepared,
 * the card types, the card facts. Most nodes of a cluster are alike, and a decision reads these arrays on every node;
 * one object read again and again stays in the processor's caches, where each node's own copy was a miss at thousands
 * of nodes (docs/performance.md, "Decisions at 5,000 nodes"). A memo of immutable values, keyed by their whole content:
 * it changes no result. Bounded: past `MAX_SHARED` distinct values a node keeps its own.
 */
const sharedValues = new Map<string, unknown>();
const MAX_SHARED = 4096;

function shared<T>(key: string, value: T): T {
  const found = sharedValues.get(key);
  if (found !== undefined) return found as T;
  if (sharedValues.size < MAX_SHARED) sharedValues.set(key, value);
  return value;
}

/** Equal facts under one hash (a collision): a few at most are kept, then a node keeps its own. */
const MAX_FACTS_PER_HASH = 4;

/**
 * Card facts shared as `shared` shares the small arrays, found by a hash of their numbers and compared number by number:
 * a text of every fact as the key (64 numbers a node) added about 12 ms to a fresh environment's first decision at 5,000
 * nodes.
 */
function sharedFacts(facts: Float64Array): Float64Array {
  let hash = facts.length;
  for (let i = 0; i < facts.length; i++) hash = (Math.imul(hash, 31) + (facts[i]! | 0)) | 0;
  const key = `facts ${hash}`;
  const equal = sharedValues.get(key) as Float64Array[] | undefined;
  const found = equal?.find((other) => sameNumbers(other, facts));
  if (found !== undefined) return found;
  if (equal !== undefined) {
    if (equal.length < MAX_FACTS_PER_HASH) equal.push(facts);
  } else if (sharedValues.size < MAX_SHARED) sharedValues.set(key, [facts]);
  return facts;
}

/** The same numbers in the same order (`Object.is`: 0 and -0 differ, NaN equals NaN). */
function sameNumbers(a: Float64Array, b: Float64Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

export function prepareNode(registration: Extract<NodeRegistration, { registered: true }>): PreparedNode {
  const cached = preparedNodes.get(registration);
  if (cached !== undefined) return cached;
  const prepared = preparedFrom(registration);
  preparedNodes.set(registration, prepared);
  return prepared;
}

/**
 * `prepareNode`'s work, apart from its look-up: a function whose closures capture its variables makes an object for
 * them at every call, and the look-up runs for every candidate of every decision.
 */
function preparedFrom(registration: Extract<NodeRegistration, { registered: true }>): PreparedNode {
  const { devices } = registration;
  const cordonedIds = new Set(registration.cordoned);
  const positions: (number[] | undefined)[] = DEVICE_KINDS.map(() => undefined);
  let totalSlots = 0;
  let totalCores = 0;
  let totalMem = 0;
  const cardFacts = new Float64Array(devices.length * CARD_FACTS);
  devices.forEach((device, position) => {
    const bookedAt = devices.findIndex((other) => other.id === device.id);
    writeCardFacts(cardFacts, position, device, bookedAt, cordonedIds.has(device.id));
    const kind = deviceKindOf(device);
    if (kind !== undefined) {
      const list = (positions[kindIndex(kind)] ??= []);
      if (kind.fitSees(device)) list.push(position);
    }
    totalSlots += device.count;
    totalCores += device.devcore;
    totalMem += device.devmem;
  });
  const cardTypes = devices.map((d) => d.type);
  const typeKeys = devices.map((d) => `${d.type}\u0000${d.mode}`);
  return {
    devices,
    cardCount: devices.length,
    cardsByKind: shared(
      `positions ${JSON.stringify(positions)}`,
      positions.map((list) => (list === undefined ? undefined : Int32Array.from(list))),
    ),
    kindState: sharedKindState(DEVICE_KINDS.map((kind) => kind.prepare?.(devices))),
    // Shared too: the nodes of one instance type have equal card rows, and one block read on every candidate stays
    // cached where a block per node was eight more cache lines a node (2.5 MB at 5,000 nodes of 8 cards).
    cardFacts: sharedFacts(cardFacts),
    cardTypes: shared(`types ${JSON.stringify(cardTypes)}`, sharedStrings(cardTypes)),
    typeKeys: shared(`typeKeys ${JSON.stringify(typeKeys)}`, typeKeys),
    pairScores: registration.pairScores,
    totalSlots,
    totalCores,
    totalMem,
  };
}

/**
 * What the kinds prepared, shared (see `shared`) where every value is undefined, null or a boolean (a flag such as
 * "has a MIG card"), which its text names exactly; anything else stays the node's own.
 */
function sharedKindState(states: readonly unknown[]): readonly unknown[] {
  const flags = states.every((state) => state === undefined || state === null || typeof state === 'boolean');
  return flags ? shared(`kindState ${states.map(String).join('|')}`, states) : states;
}

/** Equal strings as one string object each, so that comparing a node's cards reads one string, not one per card. */
function sharedStrings(values: readonly string[]): string[] {
  const first = new Map<string, string>();
  return values.map((value) => {
    const seen = first.get(value);
    if (seen !== undefined) return seen;
    first.set(value, value);
    return value;
  });
}
