/**
 * The usage ledger's rules, as pure functions over stored node entries (lib/store/model.ts).
 * HAMi's accounting (hami-spec 7.1-7.4): a pod's cards count from the filter decision until the pod is
 * deleted or reaches Succeeded/Failed; a terminating pod still counts. Our additions: a filter's
 * reservation expires if the pod is never seen with its annotations (the relay failed to patch it), and
 * deleted pods leave a tombstone so a late, older event cannot bring them back.
 */
import { addPodUsage } from '../engine/usage';
import type { DeviceUsage, NodeState, PodDevices, QuotaView } from '../engine/types';
import { decodeRegistration, type CardUse, type NodeEntry, type PodEntry, type QuotaItem, type SealedNodeEntry } from '../store/model';

/** How long a deleted pod's tombstone guards against late events. */
export const TOMBSTONE_TTL_MS = 60 * 60 * 1000;

/** Whether a booked pod counts against its node's cards at `nowMs`. */
export function podCounts(pod: PodEntry, nowMs: number): boolean {
  if (pod.st === 'confirmed') return true;
  if (pod.st === 'reserved') return pod.exp === undefined || pod.exp > nowMs;
  return false;
}

/** The engine's view of a node: registration plus usage of every counting pod except `excludeUid`. */
export function toNodeState(name: string, entry: NodeEntry, nowMs: number, excludeUid?: string): NodeState {
  const usage: Record<string, DeviceUsage> = {};
  for (const [uid, pod] of Object.entries(entry.pods)) {
    if (uid === excludeUid || !podCounts(pod, nowMs) || !pod.u) continue;
    addPodUsage(usage, pod.u.map(cardUseToDevice));
  }
  const registration =
    entry.deleted === true
      ? { registered: false as const, reason: 'node deleted' }
      : entry.reg !== undefined
        ? decodeRegistration(entry.reg)
        : { registered: false as const, reason: 'node not reported by the relay yet' };
  return { name, registration, usage, ...(entry.realtime ? { realtime: entry.realtime } : {}) };
}

function cardUseToDevice([uuid, slots, usedmem, usedcores]: CardUse) {
  return { idx: 0, uuid, type: 'NVIDIA', usedmem, usedcores, slots };
}


/** Some regular container holds a card: `/bind` must take the node lock (hami-spec 6.1 step 3). */
export function appContainersUseCards(devices: PodDevices, initCount: number): boolean {
  return devices.slice(initCount).some((container) => container.length > 0);
}

/** Namespace quota as the engine checks it: the tightest limit of any live ResourceQuota, usage of counting pods. */
export function toQuotaView(
  namespace: string,
  quota: QuotaItem | undefined,
  nodes: ReadonlyMap<string, NodeEntry>,
  nowMs: number,
  excludeUid?: string,
): QuotaView | undefined {
  if (!quota) return undefined;
  let memLimit: number | undefined;
  let coreLimit: number | undefined;
  for (const q of Object.values(quota.quotas)) {
    if (q.deleted) continue;
    if (q.mem !== undefined) memLimit = memLimit === undefined ? q.mem : Math.min(memLimit, q.mem);
    if (q.cores !== undefined) coreLimit = coreLimit === undefined ? q.cores : Math.min(coreLimit, q.cores);
  }
  if (memLimit === undefined && coreLimit === undefined) return undefined;
  let usedMem = 0;
  let usedCores = 0;
  for (const entry of nodes.values()) {
    for (const [uid, pod] of Object.entries(entry.pods)) {
      if (uid === excludeUid || pod.ns !== namespace || !podCounts(pod, nowMs)) continue;
      for (const [, , mem, cores] of pod.u ?? []) {
        usedMem += mem;
        usedCores += cores;
      }
    }
  }
  return {
    ...(memLimit !== undefined ? { memLimit } : {}),
    ...(coreLimit !== undefined ? { coreLimit } : {}),
    usedMem,
    usedCores,
  };
}

/**
 * The entry made ready to be written whole: counters recomputed from the bookings that count, with a zero
 * counter for every registered card (fast reservations add to existing counters only).
 */
export function seal(entry: NodeEntry, nowMs: number): SealedNodeEntry {
  const cu: Record<string, { s: number; m: number; c: number }> = {};
  const registration = entry.reg !== undefined ? decodeRegistration(entry.reg) : undefined;
  if (registration?.registered) for (const device of registration.devices) cu[device.id] = { s: 0, m: 0, c: 0 };
  for (const pod of Object.values(entry.pods)) {
    if (!podCounts(pod, nowMs)) continue;
    for (const [uuid, slots, mem, cores] of pod.u ?? []) {
      const counter = cu[uuid] ?? (cu[uuid] = { s: 0, m: 0, c: 0 });
      counter.s += Math.max(slots, 1);
      counter.m += mem;
      counter.c += cores;
    }
  }
  return { ...entry, cu } as SealedNodeEntry;
}

/** Whether the entry's counters are exact, so a guarded fast reservation may add to them. */
export function countersAreExact(entry: NodeEntry, nowMs: number): boolean {
  if (entry.cu === undefined || entry.regv === undefined) return false;
  return Object.values(entry.pods).every((pod) => pod.st !== 'reserved' || pod.exp === undefined || pod.exp > nowMs);
}

/** A copy of the entry without expired reservations and tombstones, one version on. */
export function nextVersion(entry: NodeEntry, nowMs: number): NodeEntry {
  const pods: Record<string, PodEntry> = {};
  for (const [uid, pod] of Object.entries(entry.pods)) {
    if (pod.st !== 'confirmed' && pod.exp !== undefined && pod.exp <= nowMs) continue;
    pods[uid] = pod;
  }
  return { ...entry, ver: entry.ver + 1, pods };
}

/**
 * Kubernetes resourceVersions are opaque, but etcd's are increasing integers; where both are integers
 * an older one is recognised, otherwise the newcomer wins (as a fresh list would).
 */
export function isOlder(incoming: string | undefined, stored: string | undefined): boolean {
  if (incoming === undefined || stored === undefined) return false;
  if (!/^\d+$/.test(incoming) || !/^\d+$/.test(stored)) return false;
  return BigInt(incoming) < BigInt(stored);
}

/** Every node holding an entry for this pod uid. */
export function nodesHoldingPod(nodes: ReadonlyMap<string, NodeEntry>, uid: string): string[] {
  const found: string[] = [];
  for (const [name, entry] of nodes) if (entry.pods[uid] !== undefined) found.push(name);
  return found;
}

/** Full-jitter exponential backoff after a lost race: 0..min(2^round, 32) ms, so racers spread out. */
export function backoffMs(random: number, round: number): number {
  return Math.floor(random * Math.min(2 ** round, 32));
}
