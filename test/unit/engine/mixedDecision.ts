/**
 * One decision over a mixed pod on three nodes (one fits, one fails its init container on memory, one is unregistered)
 * and the evidence it must give: read by the engine's evidence tests and the stored evidence formats' (test/unit/store).
 */
import { card, gpu, input, node, pod } from './fixtures';
import type { RegisteredCards } from '../../../lib/control/ports';
import type { DecideInput, Decision } from '../../../lib/engine/decision';
import type { CardEvidence, DeviceInfo, NodeEvidence, ReasonCode } from '../../../lib/engine/types';

/** Each node of a decision's input as registered, version and cards by position: where a stored record finds its card ids. */
export const registeredIn =
  (given: Pick<DecideInput, 'nodes'>): RegisteredCards =>
  (name) => {
    const state = given.nodes.get(name);
    return state?.registration.registered ? { registrationVersion: state.registrationVersion ?? -1, cards: state.registration.devices } : undefined;
  };

export function decided(decision: Decision): Exclude<Decision, { kind: 'error' }> {
  if (decision.kind === 'error') throw new Error(decision.message);
  return decision;
}


/** A card's evidence as the engine always wrote it, keys in that order. */
export function cardEvidence(
  device: DeviceInfo,
  outcome: ReasonCode | 'Fit',
  used: { mem: number; cores: number; slots: number },
  requested: { mem: number; cores: number },
  realtime?: { usedMem: number; totalMem: number },
): CardEvidence {
  return {
    uuid: device.id,
    index: device.index,
    outcome,
    totalMem: device.devmem,
    usedMem: used.mem,
    requestedMem: requested.mem,
    freeMem: device.devmem - used.mem,
    totalCores: device.devcore,
    usedCores: used.cores,
    requestedCores: requested.cores,
    slots: device.count,
    usedSlots: used.slots,
    ...(realtime ? { realtimeUsedMem: realtime.usedMem, realtimeTotalMem: realtime.totalMem } : {}),
  };
}

export const idle = { mem: 0, cores: 0, slots: 0 };

// n1 fits an init container and two app containers (one without GPU); n2 fails the init
// container on memory, so its app containers are skipped; ghost is not registered.
export const a = card('a', { index: 0 });
export const b = card('b', { index: 1 });
export const x = card('x', { index: 0, count: 4, devmem: 16000, devcore: 200 });
export const mixedInput = () =>
  input(
    pod([gpu(1, { 'nvidia.com/gpumem': 2000, 'nvidia.com/gpucores': 20 }), {}], { init: [gpu(1, { 'nvidia.com/gpumem': 1000, 'nvidia.com/gpucores': 10 })] }),
    [
      node('n1', [a, b], { usage: { a: { used: 1, usedmem: 1000, usedcores: 10 } } }),
      node('n2', [x], { usage: { x: { used: 3, usedmem: 15500, usedcores: 50 } } }),
    ],
    { candidates: ['n1', 'n2', 'ghost'] },
  );
export const initRequest = { nums: 1, type: 'NVIDIA', memreq: 1000, mempercentagereq: 101, coresreq: 10 };
export const appRequest = { nums: 1, type: 'NVIDIA', memreq: 2000, mempercentagereq: 101, coresreq: 20 };
// docs/hami-parity.md §5.1 in float32: 10 × (1/20 slots + 10/200 cores + 1000/16384 MiB).
export const f32 = Math.fround;
export const n1Score = f32(10 * f32(f32(f32(f32(1) / f32(20)) + f32(f32(10) / f32(200))) + f32(f32(1000) / f32(16384))));
export const mixedEvidence: NodeEvidence[] = [
  {
    name: 'n1',
    status: 'passed',
    score: n1Score,
    containers: [
      {
        name: 'init0',
        index: 0,
        init: true,
        status: 'passed',
        request: initRequest,
        devices: [{ idx: 1, uuid: 'b', type: 'NVIDIA', usedmem: 1000, usedcores: 10 }],
        // Spread tries the idle card first.
        cards: [cardEvidence(b, 'Fit', idle, { mem: 1000, cores: 10 })],
      },
      {
        name: 'c0',
        index: 1,
        init: false,
        status: 'passed',
        request: appRequest,
        devices: [{ idx: 1, uuid: 'b', type: 'NVIDIA', usedmem: 2000, usedcores: 20 }],
        // App containers start from the booked usage again, not from the init container's copy.
        cards: [cardEvidence(b, 'Fit', idle, { mem: 2000, cores: 20 })],
      },
      { name: 'c1', index: 2, init: false, status: 'noRequest', cards: [] },
    ],
  },
  {
    name: 'n2',
    status: 'failed',
    score: 0,
    reason: '1/1 CardInsufficientMemory',
    containers: [
      {
        name: 'init0',
        index: 0,
        init: true,
        status: 'failed',
        reason: '1/1 CardInsufficientMemory',
        request: initRequest,
        cards: [cardEvidence(x, 'CardInsufficientMemory', { mem: 15500, cores: 50, slots: 3 }, { mem: 1000, cores: 10 })],
      },
      { name: 'c0', index: 1, init: false, status: 'skipped', request: appRequest, cards: [] },
      { name: 'c1', index: 2, init: false, status: 'skipped', cards: [] },
    ],
  },
  { name: 'ghost', status: 'failed', score: 0, reason: 'node unregistered', containers: [] },
];
