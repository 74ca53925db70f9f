/**
 * What the state table holds, and the schemas items are checked against on the way out.
 *
 * Layout (state table, keys pk/sk): the cluster is split into a fixed number of shard items
 * (`pk = SHARD#07`, `sk = S`) so that one BatchGetItem reads every node whatever the cluster size.
 * Inside a shard item, each node has two top-level attributes:
 *   `n:<node>`  the node's entry: registration, booked pods, a version bumped on every change;
 *   `l:<node>`  the node lock (HAMi's `hami.io/mutex.lock`), separate so binds never race filters.
 * Every write replaces one attribute under a condition on that attribute (version or lock holder), so
 * concurrent Lambdas serialise per node without transactions. Namespace quotas live in `QUOTA#<ns>`.
 */
import { z } from 'zod';
import { decodePodDevices } from '../engine/podAnnotations';
import type { NodeRegistration, PodDevices } from '../engine/types';
import { collapsePodUsage } from '../engine/usage';

const realtime = z.object({
  timeMs: z.number(),
  devices: z.record(
    z.string(),
    z.object({
      usedMemMB: z.number(),
      totalMemMB: z.number(),
      utilization: z.number().optional(),
      processCount: z.number().optional(),
    }),
  ),
});

/** One card's share of a pod after HAMi's init-container collapse: [uuid, slots, MiB, cores]. */
const cardUse = z.tuple([z.string(), z.number(), z.number(), z.number()]);
export type CardUse = z.infer<typeof cardUse>;

export const podEntrySchema = z.object({
  ns: z.string(),
  name: z.string(),
  /** reserved: chosen by a filter, not yet seen with annotations; confirmed: seen; gone: tombstone. */
  st: z.enum(['reserved', 'confirmed', 'gone']),
  /** `hami.io/vgpu-devices-allocated` text (aligned, init first). */
  dev: z.string().optional(),
  init: z.number().optional(),
  initDone: z.boolean().optional(),
  /** Collapsed usage; not stored (derived from `dev` once per distinct booking text when read). */
  u: z.array(cardUse).optional(),
  /** Some regular (non-init) container holds a card: bind takes the node lock. */
  appGpu: z.boolean().optional(),
  /** Pod resourceVersion last applied (order tolerance). */
  rv: z.string().optional(),
  /** Epoch ms after which a reservation or tombstone no longer counts. */
  exp: z.number().optional(),
  phase: z.string().optional(),
  terminating: z.boolean().optional(),
  bindPhase: z.string().optional(),
  /** The filter attempt that made the reservation. */
  attemptId: z.string().optional(),
});
export type PodEntry = z.infer<typeof podEntrySchema>;

export const nodeEntrySchema = z.object({
  ver: z.number().int(),
  /** Node resourceVersion last applied. */
  rv: z.string().optional(),
  deleted: z.boolean().optional(),
  /**
   * The engine's parsed registration as JSON text (absent until the Node itself has been forwarded; pods
   * may arrive first). Text, not a DynamoDB map: it changes rarely, is read on every filter, and
   * unmarshalling thousands of nested attributes per read costs more than the decision itself.
   */
  reg: z.string().optional(),
  allocatableGpu: z.string().optional(),
  handshake: z.string().optional(),
  realtime: realtime.optional(),
  /** Epoch ms of the last registration change. */
  regAt: z.number().optional(),
  /** Bumped whenever the registration (cards, capacities) changes: fast reservations are guarded by it. */
  regv: z.number().int().optional(),
  /**
   * Card usage counters per UUID (slots, MiB, cores): the sum over counting bookings, kept by every write.
   * Fast reservations add to them under a capacity guard instead of replacing the entry, so concurrent
   * filters on one node do not conflict unless the cards are really contended.
   */
  cu: z.record(z.string(), z.object({ s: z.number(), m: z.number(), c: z.number() })).optional(),
  pods: z.record(z.string(), podEntrySchema),
});
export type NodeEntry = z.infer<typeof nodeEntrySchema>;

/**
 * How a node entry is stored: each booking as compact JSON text (a thousand bookings as nested DynamoDB maps
 * cost twice the read time), plus `ag`, the bookings whose regular containers hold cards (the lock's guard
 * reads it, since it cannot look inside the text).
 */
export const storedNodeEntrySchema = nodeEntrySchema.extend({
  pods: z.record(z.string(), z.string()),
  ag: z.record(z.string(), z.boolean()).optional(),
});
export type StoredNodeEntry = z.infer<typeof storedNodeEntrySchema>;

const bookingCache = new Map<string, PodEntry>();
const bookingText = new WeakMap<PodEntry, string>();
const BOOKING_CACHE_MAX = 200_000;

/** A stored booking, parsed once per distinct text per process; its card usage is derived from `dev`. */
export function decodeBooking(text: string): PodEntry {
  const cached = bookingCache.get(text);
  if (cached) return cached;
  const stored = podEntrySchema.parse(JSON.parse(text));
  const parsed: PodEntry = stored.dev === undefined ? stored : { ...stored, u: cardUsesOf(decodePodDevices(stored.dev), stored.init ?? 0, stored.initDone === true) };
  if (bookingCache.size >= BOOKING_CACHE_MAX) bookingCache.clear();
  bookingCache.set(text, parsed);
  bookingText.set(parsed, text);
  return parsed;
}

/** The exact stored text of a booking read from the store (conditions compare it), or its encoding. */
export function encodeBooking(booking: PodEntry): string {
  const { u: _derived, ...stored } = booking;
  return bookingText.get(booking) ?? JSON.stringify(stored);
}

/** Collapsed per-card usage of a pod's devices (init containers first): what its booking holds. */
export function cardUsesOf(devices: PodDevices, initCount: number, initDone: boolean): CardUse[] {
  return collapsePodUsage(devices, initCount, initDone).map((d) => [d.uuid, d.slots, d.usedmem, d.usedcores]);
}

/** Whether the node lock's guard should let this booking take the lock. */
export function holdsAppCards(booking: PodEntry): boolean {
  return booking.appGpu === true && booking.st !== 'gone';
}

/** A node entry whose counters were recomputed from its bookings: the only kind the store writes whole. */
export type SealedNodeEntry = NodeEntry & { readonly __sealed: true };

const registrationCache = new Map<string, NodeRegistration>();
const REGISTRATION_CACHE_MAX = 20_000;

/**
 * Registration text: compact positional JSON, about half the size of the engine's objects, so a thousand
 * nodes stay within one BatchGetItem response even where the store caps it at 1 MB (dynalite does).
 *   registered:   {"d":[[id,index,count,devmem,devcore,type,numa,mode,health(0|1)],…],"c":[cordoned…],"p":{pair scores}}
 *   unregistered: {"r":"reason"}
 */
export function encodeRegistration(registration: NodeRegistration): string {
  if (!registration.registered) return JSON.stringify({ r: registration.reason });
  return JSON.stringify({
    d: registration.devices.map((d) => [d.id, d.index, d.count, d.devmem, d.devcore, d.type, d.numa, d.mode, d.health ? 1 : 0]),
    ...(registration.cordoned.length > 0 ? { c: registration.cordoned } : {}),
    ...(Object.keys(registration.pairScores).length > 0 ? { p: registration.pairScores } : {}),
  });
}

const compactRegistration = z.union([
  z.object({ r: z.string() }),
  z.object({
    d: z.array(z.tuple([z.string(), z.number(), z.number(), z.number(), z.number(), z.string(), z.number(), z.string(), z.number()])),
    c: z.array(z.string()).optional(),
    p: z.record(z.string(), z.record(z.string(), z.number())).optional(),
  }),
]);

/** The stored registration text, parsed once per distinct text per process (warm Lambdas reuse it). */
export function decodeRegistration(text: string): NodeRegistration {
  const cached = registrationCache.get(text);
  if (cached) return cached;
  let parsed: NodeRegistration;
  try {
    const compact = compactRegistration.parse(JSON.parse(text));
    parsed =
      'r' in compact
        ? { registered: false, reason: compact.r }
        : {
            registered: true,
            devices: compact.d.map(([id, index, count, devmem, devcore, type, numa, mode, health]) => ({ id, index, count, devmem, devcore, type, numa, mode, health: health === 1 })),
            cordoned: compact.c ?? [],
            pairScores: compact.p ?? {},
          };
  } catch {
    parsed = { registered: false, reason: 'stored registration cannot be read; the next node update rewrites it' };
  }
  if (registrationCache.size >= REGISTRATION_CACHE_MAX) registrationCache.clear();
  registrationCache.set(text, parsed);
  return parsed;
}

export const lockSchema = z.object({
  holder: z.string(),
  holderUid: z.string(),
  since: z.number(),
  expiresAt: z.number(),
});
export type NodeLock = z.infer<typeof lockSchema>;

export const quotaItemSchema = z.object({
  ver: z.number().int(),
  /** Per ResourceQuota object: its limits in MiB / percent cores, and its resourceVersion. */
  quotas: z.record(
    z.string(),
    z.object({ mem: z.number().optional(), cores: z.number().optional(), rv: z.string().optional(), deleted: z.boolean().optional() }),
  ),
});
export type QuotaItem = z.infer<typeof quotaItemSchema>;

export const NODE_PREFIX = 'n:';
export const LOCK_PREFIX = 'l:';

export function emptyNodeEntry(): NodeEntry {
  return { ver: 0, pods: {} };
}

/** Stable shard of a node: FNV-1a over the name. */
export function shardOf(nodeName: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < nodeName.length; i++) {
    h ^= nodeName.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}

export function shardKey(shard: number): { pk: string; sk: string } {
  return { pk: `SHARD#${String(shard).padStart(2, '0')}`, sk: 'S' };
}

export function quotaKey(namespace: string): { pk: string; sk: string } {
  return { pk: `QUOTA#${namespace}`, sk: 'Q' };
}
