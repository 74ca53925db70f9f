/**
 * A node's registration as the decision works on it (`PreparedNode`, ./prepared.ts): its cards per device kind and what
 * each kind works out once. Apart from ./prepared.ts because it consults the registry of kinds, which sits above Fit.
 */
import { deviceKindOf, DEVICE_KINDS, kindIndex } from './devices';
import { CARD_TABLE_WIDTH, type PreparedNode } from './prepared';
import type { NodeRegistration } from './types';

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
  const positions: (number[] | undefined)[] = DEVICE_KINDS.map(() => undefined);
  let totalSlots = 0;
  let totalCores = 0;
  let totalMem = 0;
  // Float64: the numbers exactly as the device objects hold them.
  const cardTable = new Float64Array(devices.length * CARD_TABLE_WIDTH);
  devices.forEach((device, position) => {
    cardTable[position * CARD_TABLE_WIDTH] = device.count;
    cardTable[position * CARD_TABLE_WIDTH + 1] = device.devcore;
    cardTable[position * CARD_TABLE_WIDTH + 2] = device.devmem;
    const kind = deviceKindOf(device);
    if (kind !== undefined) {
      const list = (positions[kindIndex(kind)] ??= []);
      if (kind.fitSees(device)) list.push(position);
    }
    totalSlots += device.count;
    totalCores += device.devcore;
    totalMem += device.devmem;
  });
  const prepared: PreparedNode = {
    devices,
    cardsByKind: positions.map((list) => (list === undefined ? undefined : Int32Array.from(list))),
    kindState: DEVICE_KINDS.map((kind) => kind.prepare?.(devices)),
    cardTable,
    cardTypes: sharedStrings(devices.map((d) => d.type)),
    cordoned: Uint8Array.from(devices, (d) => (cordonedIds.has(d.id) ? 1 : 0)),
    numa: Int32Array.from(devices, (d) => d.numa),
    typeKeys: devices.map((d) => `${d.type}\u0000${d.mode}`),
    pairScores: registration.pairScores,
    bookedAt: Int32Array.from(devices, (d) => devices.findIndex((other) => other.id === d.id)),
    totalSlots,
    totalCores,
    totalMem,
  };
  preparedNodes.set(registration, prepared);
  return prepared;
}

/** Equal strings as one string object each, so that comparing a node's cards reads one string, not one per card. */
function sharedStrings(values: readonly string[]): string[] {
  const first = new Map<string, string>();
  return values.map((value) => {
    const shared = first.get(value);
    if (shared !== undefined) return shared;
    first.set(value, value);
    return value;
  });
}
