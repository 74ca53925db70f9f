/**
 * NVIDIA GPUs (docs/hami-parity.md, docs/devices.md): registered by HAMi's device plugin in
 * `hami.io/node-nvidia-register`, requested with `nvidia.com/gpu`, `nvidia.com/gpumem`, `nvidia.com/gpumem-percentage`
 * and `nvidia.com/gpucores`, fitted card by card with HAMi's checks; cards shared by HAMi-core, or split into MIG
 * instances (./mig).
 */
import { fitContainer, type FitRules, type FitRun } from '../../fit';
import { encodePodDevices, PodAnnotation } from '../../podAnnotations';
import { NodeFailure, ReasonCode, type DeviceInfo, type NodeState, type PodDevices } from '../../types';
import { NVIDIA, NvidiaSelectorAnnotations } from './names';
import type { DeviceKind } from '../kind';
import { encodeMigAllocations, isMig, migHeld, MigAllocationsAnnotation, MIG_MODE, placeMigInstances, selectMigCandidate } from './mig';
import { RegisterAnnotation, registerNvidia } from './registration';
import { admitNvidia } from './admission';
import { nvidiaQuantities, nvidiaRequest } from './requests';
import { nvidiaWords } from './words';
import { nvidiaHints } from './hints';

/**
 * HAMi's `CustomFilterRule` for MIG cards: with the instances this container already took on the card placed first,
 * some profile holding the memory must still have a free placement.
 */
function migPlacementFits(run: FitRun, position: number): boolean {
  const device = run.input.node.devices[position]!;
  if (!isMig(device)) return true;
  const { arena } = run.input;
  const profiles = device.migProfiles ?? [];
  const occupied = [...(arena.placements[position] ?? [])];
  for (let i = 0; i < run.pickedCount; i++) {
    if (arena.picked[i] !== position) continue;
    const earlier = selectMigCandidate(profiles, occupied, arena.pickedMem[i]!);
    if (earlier === undefined) return false;
    occupied.push(earlier.placement);
  }
  return selectMigCandidate(profiles, occupied, run.memory) !== undefined;
}

const custom = { fits: migPlacementFits, failure: ReasonCode.CardMigTopologyInfeasible };
// A MIG card just picked is tried again for the container's next instance (HAMi's `i++`).
const retriesCard = (run: FitRun, position: number) => isMig(run.input.node.devices[position]!);
/** A node without MIG cards: HAMi's checks alone. */
const SHARED_ONLY: FitRules = { vendor: NVIDIA, countsDevices: true };
const MIG_NODE: FitRules = { vendor: NVIDIA, countsDevices: true, custom, retriesCard };
const MIG_REQUEST: FitRules = { vendor: NVIDIA, countsDevices: false, custom, retriesCard };

/** Whether the node being tried has a MIG card (worked out once per registration: `prepare`). */
function hasMigCard(run: FitRun): boolean {
  return run.input.kindState === true;
}

/**
 * HAMi's `isMIGRequest`: the node has a MIG card and the pod does not ask for another mode; then one card may serve
 * several of the container's instances, and asking more cards than the node has is no failure by itself.
 */
function migRequest(run: FitRun): boolean {
  if (!hasMigCard(run)) return false;
  const mode = run.input.plan.annotations[NvidiaSelectorAnnotations.vgpuMode];
  return mode === undefined || mode.includes(MIG_MODE);
}

function rulesFor(run: FitRun): FitRules {
  if (!hasMigCard(run)) return SHARED_ONLY;
  return migRequest(run) ? MIG_REQUEST : MIG_NODE;
}

export const nvidia: DeviceKind = {
  vendor: NVIDIA,
  words: nvidiaWords,
  hints: nvidiaHints,
  prepare: (devices: readonly DeviceInfo[]) => devices.some((device) => (device.vendor ?? NVIDIA) === NVIDIA && isMig(device)),
  register: registerNvidia,
  fitSees: (device: DeviceInfo) => device.type.toLowerCase().includes('nvidia'),
  request: nvidiaRequest,
  quantities: nvidiaQuantities,
  fit: (run: FitRun, cards: Int32Array) => fitContainer(run, cards, rulesFor(run)),
  // HAMi's `AddResourceUsage`: a MIG instance books its profile's memory and cores, and takes its placement.
  addResourceUsage(run: FitRun, pick: number) {
    // Most nodes have no MIG card: known without reading the card's object (./cardFacts.ts in the engine says why).
    if (!hasMigCard(run)) return undefined;
    const { arena, node } = run.input;
    const position = arena.picked[pick]!;
    const device = node.devices[position]!;
    if (!isMig(device)) return undefined;
    const taken = (arena.placements[position] ??= []);
    const chosen = selectMigCandidate(device.migProfiles ?? [], taken, arena.pickedMem[pick]!);
    if (chosen === undefined) return NodeFailure.MigAllocationFailed;
    taken.push(chosen.placement);
    // The guards follow what is booked: the profile's memory and cores rather than the request's, and the instances
    // this container already took on the card (their profiles are settled: picks are booked in order).
    let ownMem = 0;
    let ownCores = 0;
    for (let earlier = 0; earlier < pick; earlier++) {
      if (arena.picked[earlier] !== position) continue;
      ownMem += arena.pickedMem[earlier]!;
      ownCores += arena.pickedCores[earlier]!;
    }
    arena.pickedMaxMem[pick]! -= chosen.profile.memoryMB - arena.pickedMem[pick]! + ownMem;
    arena.pickedMaxCores[pick]! -= chosen.profile.core - arena.pickedCores[pick]! + ownCores;
    arena.pickedMem[pick] = chosen.profile.memoryMB;
    arena.pickedCores[pick] = chosen.profile.core;
    // A profile holding more than the card has left (a registration whose profiles overlap in memory) would be
    // refused by the store's guard on every round: refused here instead, with the reason HAMi gives.
    if (arena.pickedMaxMem[pick]! < arena.baseMem[position]! || arena.pickedMaxCores[pick]! < arena.baseCores[position]!) return NodeFailure.MigAllocationFailed;
    return undefined;
  },
  // HAMi's NVIDIA admission defaults (./admission).
  admit: admitNvidia,
  registerAnnotation: RegisterAnnotation,
  locksNode: true,
  positional: isMig,
  allocatedAnnotation: PodAnnotation.DevicesAllocated,
  partsAnnotation: MigAllocationsAnnotation,
  ownedPodAnnotations: [MigAllocationsAnnotation],
  selectorAnnotations: NvidiaSelectorAnnotations,
  heldParts: migHeld,
  // What the device plugin reads: the devices to allocate and as allocated, and where each MIG instance goes
  // (docs/hami-parity.md §3.1, docs/devices.md).
  podAnnotations(devices: PodDevices, node: NodeState, context) {
    const encoded = encodePodDevices(devices);
    const annotations: Record<string, string> = { [PodAnnotation.DevicesToAllocate]: encoded, [PodAnnotation.DevicesAllocated]: encoded };
    if (!node.registration.registered || !node.registration.devices.some(isMig)) return annotations;
    // The decision's devices already carry profile memory and cores; placing them again from what is in use gives
    // the placements the decision took (the selection is deterministic and the profile holds its own memory).
    const placed = placeMigInstances(devices, context.initCount, node.registration.devices, node.placementsInUse ?? {});
    if (placed !== undefined && placed.allocations.length > 0) annotations[MigAllocationsAnnotation] = encodeMigAllocations(placed.allocations);
    return annotations;
  },
};
