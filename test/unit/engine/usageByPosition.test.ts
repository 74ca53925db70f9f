/**
 * The control plane gives the engine each node's booked usage by card position (`NodeState.usageByPosition`, made by
 * lib/control/ledger.ts `toNodeState`), and the engine reads it instead of looking each card up by UUID: a decision
 * must be exactly the one the UUID look-up gives, with the numbers saturated as HAMi's int32 usage is, a UUID
 * registered twice booked on its first card, and cards without bookings idle.
 */
import { cardUsesOf, emptyLedger, nextLedger, toNodeState, type Booking, type NodeLedger } from '../../../lib/control/ledger';
import { decide } from '../../../lib/engine/decide';
import { NVIDIA } from '../../../lib/engine/devices/nvidia/names';
import { USAGE_WIDTH, UsageColumn, type ContainerDevice, type DeviceInfo, type NodeState } from '../../../lib/engine/types';
import { card, config, gpu, pod, type Limits } from './fixtures';

const NOW = 1_800_000_000_000;

function booking(name: string, devices: ContainerDevice[][]): Booking {
  return { namespace: 'default', name, state: 'confirmed', initCount: 0, initDone: false, uses: cardUsesOf(devices, 0, false), holdsAppCards: true, origin: 'decided' };
}

function use(uuid: string, usedmem: number, usedcores: number): ContainerDevice {
  return { idx: 0, uuid, type: NVIDIA, usedmem, usedcores };
}

function ledgerOf(name: string, devices: DeviceInfo[], bookings: Record<string, Booking>): NodeLedger {
  return nextLedger({ ...emptyLedger(name), registration: { registered: true, devices, cordoned: [], pairScores: {} } }, NOW, { bookings });
}

/** The same state without usage by position: the engine then looks every card up by UUID. */
function byUuid(state: NodeState): NodeState {
  const { usageByPosition: _byPosition, ...rest } = state;
  return rest;
}

function decisionOf(state: NodeState, limits: Limits[]) {
  const d = decide({ pod: pod(limits), candidates: [state.name], nodes: new Map([[state.name, state]]), config: config(), nowMs: NOW });
  return d.kind === 'error' ? d : { kind: d.kind, ...(d.kind === 'fit' ? { node: d.node, devices: d.devices, claims: d.claims } : {}), evidence: d.evidence };
}

describe('usage by position', () => {
  const devices = [
    card('gpu-a', { index: 0, devmem: 16384 }),
    card('gpu-b', { index: 1, devmem: 16384 }),
    // Registered twice: bookings of gpu-b count on its first card.
    card('gpu-b', { index: 2, devmem: 16384 }),
    card('gpu-c', { index: 3, devmem: 16384 }),
    card('gpu-d', { index: 4, devmem: 16384 }),
  ];
  const ledger = ledgerOf('n1', devices, {
    'uid-x': booking('x', [[use('gpu-a', 12000, 30)]]),
    'uid-y': booking('y', [[use('gpu-b', 4000, 50), use('gpu-c', 2000, 10)]]),
    // Past int32: saturated, so the card reads as full (never as free, which a wrapped sum could).
    'uid-z': booking('z', [[use('gpu-d', 2 ** 31 + 5, 0)]]),
    // A booking on a card the registration no longer has is ignored.
    'uid-gone': booking('gone', [[use('gpu-old', 1000, 10)]]),
  });
  const state = toNodeState(ledger, NOW);

  it('holds every registered card, by position, saturated', () => {
    const aligned = state.usageByPosition!;
    expect(aligned).toHaveLength(devices.length * USAGE_WIDTH);
    const at = (p: number, column: number): number => aligned[p * USAGE_WIDTH + column]!;
    expect([at(0, UsageColumn.used), at(0, UsageColumn.mem), at(0, UsageColumn.cores)]).toEqual([1, 12000, 30]);
    expect([at(1, UsageColumn.used), at(1, UsageColumn.mem), at(1, UsageColumn.cores)]).toEqual([1, 4000, 50]);
    // Position 2 is the same UUID as position 1: the ledger's usage is the card's, at both positions.
    expect([at(2, UsageColumn.used), at(2, UsageColumn.mem), at(2, UsageColumn.cores)]).toEqual([1, 4000, 50]);
    expect(at(4, UsageColumn.mem)).toBe(2 ** 31 - 1);
  });

  it.each<[string, Limits[]]>([
    ['one card, memory', [gpu(1, { 'nvidia.com/gpumem': 8000 })]],
    ['two cards, memory and cores', [gpu(2, { 'nvidia.com/gpumem': 4000, 'nvidia.com/gpucores': 40 })]],
    ['two containers', [gpu(1, { 'nvidia.com/gpumem': 3000 }), gpu(1, { 'nvidia.com/gpumem': 3000 })]],
    ['a percentage of the card', [gpu(1, { 'nvidia.com/gpumem-percentage': 60 })]],
    ['more than any card has left', [gpu(1, { 'nvidia.com/gpumem': 16000 })]],
    ['whole cards', [gpu(3, { 'nvidia.com/gpucores': 100 })]],
  ])('decides %s exactly as the look-up by UUID', (_name, limits) => {
    expect(decisionOf(state, limits)).toEqual(decisionOf(byUuid(state), limits));
  });
});
