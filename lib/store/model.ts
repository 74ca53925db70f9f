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
import type { NodeRegistration } from '../engine/types';

const deviceInfo = z.object({
  id: z.string(),
  index: z.number(),
  count: z.number(),
  devmem: z.number(),
  devcore: z.number(),
  type: z.string(),
  numa: z.number(),
  mode: z.string(),
  health: z.boolean(),
});

const registration = z.union([
  z.object({
    registered: z.literal(true),
    devices: z.array(deviceInfo),
    cordoned: z.array(z.string()),
    pairScores: z.record(z.string(), z.record(z.string(), z.number())),
  }),
  z.object({ registered: z.literal(false), reason: z.string() }),
]);

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
  /** Collapsed usage, precomputed at write time so reads never decode annotations. */
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
  at: z.number().optional(),
});
export type PodEntry = z.infer<typeof podEntrySchema>;

export const nodeEntrySchema = z.object({
  ver: z.number().int(),
  /** Node resourceVersion last applied. */
  rv: z.string().optional(),
  deleted: z.boolean().optional(),
  /** Absent until the Node itself has been forwarded (pods may arrive first). */
  reg: registration.optional(),
  allocatableGpu: z.string().optional(),
  handshake: z.string().optional(),
  realtime: realtime.optional(),
  /** Epoch ms of the last registration change. */
  regAt: z.number().optional(),
  pods: z.record(z.string(), podEntrySchema),
});
/** The registration is stored as the engine parsed it. */
export type NodeEntry = Omit<z.infer<typeof nodeEntrySchema>, 'reg'> & { reg?: NodeRegistration };

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
