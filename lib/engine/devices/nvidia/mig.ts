/**
 * NVIDIA MIG as HAMi v2.10 places it (dynamic MIG, docs/devices.md "NVIDIA MIG"): a card in `mig` mode offers
 * profiles, each with legal placements (slice ranges); a container's instance takes the smallest profile that holds
 * its memory with a placement overlapping none in use, and HAMi's device plugin creates exactly that instance. The
 * choice is written to `hami.io/vgpu-mig-allocations`; usage is rebuilt from it, failing closed as HAMi does.
 */
import type { ContainerDevice, DeviceInfo, MigPlacement, MigProfile, PodDevices } from '../../types';

export const MIG_MODE = 'mig';
export const MigAllocationsAnnotation = 'hami.io/vgpu-mig-allocations';

/** One MIG instance a pod holds: which container and which of its devices, on which card, which profile, where. */
export interface MigAllocation {
  readonly containerIndex: number;
  readonly deviceIndex: number;
  readonly gpuUUID: string;
  readonly profile: string;
  readonly placement: MigPlacement;
}

export function isMig(device: DeviceInfo): boolean {
  return device.mode === MIG_MODE;
}

function overlaps(a: MigPlacement, b: MigPlacement): boolean {
  return a.start < b.start + b.size && b.start < a.start + a.size;
}

/** HAMi's placement order: `1g.` and `3g.` profiles fill from the highest start, the others from the lowest. */
function orderedPlacements(profile: MigProfile): MigPlacement[] {
  const high = profile.name.startsWith('1g.') || profile.name.startsWith('3g.');
  return [...profile.placements].sort((a, b) => (high ? b.start - a.start : a.start - b.start));
}

/** The first placement of the profile (in HAMi's order) that overlaps nothing occupied. */
export function freePlacement(profile: MigProfile, occupied: readonly MigPlacement[]): MigPlacement | undefined {
  return orderedPlacements(profile).find((candidate) => !occupied.some((taken) => overlaps(candidate, taken)));
}

/** Every placement of the profile that overlaps nothing occupied, in HAMi's order. */
export function freePlacements(profile: MigProfile, occupied: readonly MigPlacement[]): MigPlacement[] {
  return orderedPlacements(profile).filter((candidate) => !occupied.some((taken) => overlaps(candidate, taken)));
}

/**
 * HAMi's `selectMigCandidate`: profiles by memory, then slice count, ascending; the first that holds `memory` and has
 * a free placement.
 */
export function selectMigCandidate(profiles: readonly MigProfile[], occupied: readonly MigPlacement[], memory: number): { profile: MigProfile; placement: MigPlacement } | undefined {
  const bySize = [...profiles].sort((a, b) => (a.memoryMB !== b.memoryMB ? a.memoryMB - b.memoryMB : a.sliceCount - b.sliceCount));
  for (const profile of bySize) {
    if (profile.memoryMB < memory) continue;
    const placement = freePlacement(profile, occupied);
    if (placement !== undefined) return { profile, placement };
  }
  return undefined;
}

/**
 * The MIG instances a pod's devices take on a node (HAMi's `AddResourceUsage`, container by container): init
 * containers each on their own copy of what is in use (they run one at a time), app containers one after another on
 * one copy. `devices` hold the memory each container asked for; the result rewrites MIG devices to their profile's
 * memory and cores and lists the allocations, or undefined when one cannot be placed.
 */
export function placeMigInstances(
  devices: PodDevices,
  initCount: number,
  cards: readonly DeviceInfo[],
  inUse: Readonly<Record<string, readonly MigPlacement[]>>,
): { devices: ContainerDevice[][]; allocations: MigAllocation[] } | undefined {
  const byId = new Map(cards.map((card) => [card.id, card]));
  const appOccupied = new Map<string, MigPlacement[]>();
  const allocations: MigAllocation[] = [];
  const placed: ContainerDevice[][] = [];
  for (const [containerIndex, container] of devices.entries()) {
    const occupied = containerIndex < initCount ? new Map<string, MigPlacement[]>() : appOccupied;
    const out: ContainerDevice[] = [];
    for (const [deviceIndex, device] of container.entries()) {
      const card = byId.get(device.uuid);
      if (card === undefined || !isMig(card)) {
        out.push(device);
        continue;
      }
      const taken = occupied.get(card.id) ?? [...(inUse[card.id] ?? [])];
      occupied.set(card.id, taken);
      const candidate = selectMigCandidate(card.migProfiles ?? [], taken, device.usedmem);
      if (candidate === undefined) return undefined;
      taken.push(candidate.placement);
      allocations.push({ containerIndex, deviceIndex, gpuUUID: card.id, profile: candidate.profile.name, placement: candidate.placement });
      out.push({ ...device, usedmem: candidate.profile.memoryMB, usedcores: candidate.profile.core });
    }
    placed.push(out);
  }
  return { devices: placed, allocations };
}

/** `hami.io/vgpu-mig-allocations` as HAMi writes it (a JSON array; empty when the pod has no MIG instance). */
export function encodeMigAllocations(allocations: readonly MigAllocation[]): string {
  return JSON.stringify(
    allocations.map((a) => ({ containerIndex: a.containerIndex, deviceIndex: a.deviceIndex, gpuUUID: a.gpuUUID, profile: a.profile, placement: { start: a.placement.start, size: a.placement.size } })),
  );
}

/** A MIG allocations annotation that cannot be read; the message is HAMi's where HAMi has one. */
export class MigAllocationsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigAllocationsError';
  }
}

/**
 * HAMi's `DecodeMigAllocations`: every entry complete (container and device indexes not negative, card, profile, a
 * placement of some size), the runtime identity the device plugin adds all there or all absent, no two entries for
 * one container device. The runtime identity is not kept: placement is what the scheduler counts.
 */
export function decodeMigAllocations(text: string): MigAllocation[] {
  if (text === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new MigAllocationsError(`${MigAllocationsAnnotation} is not valid JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(parsed)) throw new MigAllocationsError(`${MigAllocationsAnnotation} must be a JSON array`);
  const seen = new Set<string>();
  return parsed.map((raw: unknown, i) => {
    const entry = (raw !== null && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
    const placement = (entry.placement !== null && typeof entry.placement === 'object' ? entry.placement : {}) as Record<string, unknown>;
    const whole = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined);
    const containerIndex = whole(entry.containerIndex);
    const deviceIndex = whole(entry.deviceIndex);
    const start = whole(placement.start);
    const size = whole(placement.size);
    const gpuUUID = typeof entry.gpuUUID === 'string' ? entry.gpuUUID : '';
    const profile = typeof entry.profile === 'string' ? entry.profile : '';
    if (containerIndex === undefined || deviceIndex === undefined || gpuUUID === '' || profile === '' || start === undefined || size === undefined || size === 0) {
      throw new MigAllocationsError(`MIG allocation ${i} is incomplete`);
    }
    const runtime = [entry.migUUID !== undefined && entry.migUUID !== '', entry.gpuInstanceID !== undefined && entry.gpuInstanceID !== null, entry.computeInstanceID !== undefined && entry.computeInstanceID !== null].filter(Boolean).length;
    if (runtime !== 0 && runtime !== 3) throw new MigAllocationsError(`MIG allocation ${i} has partial runtime identity`);
    const key = `${containerIndex}/${deviceIndex}`;
    if (seen.has(key)) throw new MigAllocationsError(`duplicate MIG allocation for container ${containerIndex} device ${deviceIndex}`);
    seen.add(key);
    return { containerIndex, deviceIndex, gpuUUID, profile, placement: { start, size } };
  });
}

/**
 * What a booked pod's MIG instances hold on the node (HAMi's `getNodesUsage`): each of its device entries on a card
 * takes the card's next allocation; and, failing closed, the cards that cannot be accounted for: a MIG card entry
 * without an allocation, an allocation on a card not in MIG mode, allocations on a card the node does not list
 * (then every MIG card of the node). Unreadable allocations count as none.
 */
export function migHeld(
  devices: PodDevices,
  allocationsText: string | undefined,
  cards: readonly DeviceInfo[],
): { placements: Record<string, MigPlacement[]>; failClosed: string[] } {
  let allocations: MigAllocation[] = [];
  try {
    allocations = decodeMigAllocations(allocationsText ?? '');
  } catch {
    allocations = [];
  }
  const pending = new Map<string, MigAllocation[]>();
  for (const allocation of allocations) pending.set(allocation.gpuUUID, [...(pending.get(allocation.gpuUUID) ?? []), allocation]);
  const byId = new Map(cards.map((card) => [card.id, card]));
  const placements: Record<string, MigPlacement[]> = {};
  const failClosed = new Set<string>();
  for (const device of devices.flat()) {
    const card = byId.get(device.uuid);
    if (card === undefined) continue;
    const next = pending.get(card.id)?.shift();
    if (next !== undefined) {
      if (!isMig(card)) failClosed.add(card.id);
      else (placements[card.id] ??= []).push(next.placement);
    } else if (isMig(card)) {
      failClosed.add(card.id);
    }
  }
  for (const [uuid, left] of pending) {
    if (left.length === 0) continue;
    const card = byId.get(uuid);
    if (card === undefined) {
      for (const other of cards) if (isMig(other)) failClosed.add(other.id);
    } else if (!isMig(card)) {
      failClosed.add(card.id);
    } else {
      for (const allocation of left) (placements[card.id] ??= []).push(allocation.placement);
    }
  }
  return { placements, failClosed: [...failClosed] };
}

/** A MIG card's profiles with their free placements now, and its instances in use by whom (by start): the devices view's. */
export function migPartsView(profiles: readonly MigProfile[], held: readonly { readonly placement: MigPlacement; readonly pod: string }[]) {
  const taken = held.map((part) => part.placement);
  return {
    profiles: profiles.map((p) => ({ name: p.name, memoryMB: p.memoryMB, core: p.core, placements: p.placements.length, free: freePlacements(p, taken).length })),
    inUse: held.map((part) => ({ start: part.placement.start, size: part.placement.size, pod: part.pod })).sort((a, b) => a.start - b.start),
  };
}
