/**
 * The one codec between the ledger's domain types (lib/control/ledger.ts) and what the state table stores.
 * Layout and size arithmetic: docs/state.md.
 *
 *   pk `NODE#<name>`  sk `N`   one item per node: registration, bookings, counters, lock (bounded by one node)
 *   pk `DIR#<nn>`     sk `D`   node directory shard: a string set of node names (16 shards)
 *   pk `DIR#QUOTA`    sk `D`   the namespaces that have had ResourceQuotas (a string set)
 *   pk `JOURNAL`      sk `<seq, 15 digits>`   change journal entry: nodes and namespaces a cluster-events write changed
 *   pk `QUOTA#<ns>`   sk `Q`   a namespace's ResourceQuota limits
 *
 * Node item attributes (short names: every byte is paid on every read and write):
 *   v version · rv resourceVersion · del deleted · reg registration text · rgv registration version ·
 *   rga registered at (ms) · alc allocatable count · hs handshake · rt real-time report text ·
 *   b bookings (uid -> compact text) · ag uids whose app containers hold cards (the lock's guard reads it) ·
 *   cu counters (uuid -> {s, m, c}) · lk lock {h, u, s, e} · ttl expiry of a deleted node's item (epoch s)
 *
 * Decoding never throws: a part that cannot be read is kept as stored, listed in `unreadable`, and written
 * back unchanged until an event replaces it, so one bad value stays contained to its node.
 */
import { z } from 'zod';
import { decodePodDevices } from '../engine/podAnnotations';
import type { DeviceInfo, NodeRegistration, RealtimeReport } from '../engine/types';
import {
  appContainersNeedLock,
  cardUsesOf,
  type Booking,
  type BookingState,
  type CardCounter,
  type NodeLedger,
  type NodeLock,
  type QuotaLedger,
  type UnreadablePart,
} from '../control/ledger';
import type { JournalEntry } from '../control/ports';
import { errorMessage, NodeItemTooLargeError } from '../errors';
import { isJsonObject } from '../json';

export type Item = Record<string, unknown>;
export type Key = { readonly pk: string; readonly sk: string };

export const DIRECTORY_SHARDS = 16;
const JOURNAL_PK = 'JOURNAL';
/** A deleted node's item without bookings goes after this long (DynamoDB TTL; expired items read as absent). */
const DELETED_NODE_TTL_SECONDS = 7 * 24 * 3600;
/** Refuse to write a node item above this: DynamoDB's limit is 400 KB (docs/state.md, "Size"). */
export const NODE_ITEM_MAX_BYTES = 350 * 1024;

export const NodeAttr = {
  version: 'v',
  resourceVersion: 'rv',
  deleted: 'del',
  registration: 'reg',
  registrationVersion: 'rgv',
  registeredAt: 'rga',
  allocatable: 'alc',
  handshake: 'hs',
  realtime: 'rt',
  bookings: 'b',
  appCards: 'ag',
  counters: 'cu',
  lock: 'lk',
  ttl: 'ttl',
} as const;

export const CounterAttr = { slots: 's', mem: 'm', cores: 'c' } as const;
/** Every item's key attributes (the table's partition and sort key). */
export const KeyAttr = { partition: 'pk', sort: 'sk' } as const;
/** A directory item (node names, or namespaces with quotas): one string set. */
export const DirectoryAttr = { names: 'names' } as const;
export const QuotaAttr = { version: 'v', quotas: 'q' } as const;
export const LockAttr = { holder: 'h', holderUid: 'u', since: 's', expiresAt: 'e', mirrored: 'm', waiters: 'w' } as const;

export function nodeKey(name: string): Key {
  return { pk: `NODE#${name}`, sk: 'N' };
}

export function nodeNameOf(item: Item): string | undefined {
  return typeof item.pk === 'string' && item.pk.startsWith('NODE#') ? item.pk.slice('NODE#'.length) : undefined;
}

/** Stable directory shard of a node name: FNV-1a. */
export function directoryShard(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % DIRECTORY_SHARDS;
}

export function directoryKey(shard: number): Key {
  return { pk: `DIR#${String(shard).padStart(2, '0')}`, sk: 'D' };
}

/** The namespaces that have ever had a ResourceQuota (a string set), so complete quota lists can be checked. */
export const QUOTA_DIRECTORY_KEY: Key = { pk: 'DIR#QUOTA', sk: 'D' };

export function journalKey(seq: number): Key {
  return { pk: JOURNAL_PK, sk: journalSortKey(seq) };
}

export function journalSortKey(seq: number): string {
  return String(seq).padStart(15, '0');
}

export const JOURNAL_PARTITION = JOURNAL_PK;

export function quotaKey(namespace: string): Key {
  return { pk: `QUOTA#${namespace}`, sk: 'Q' };
}

// ---- bookings: compact positional JSON ----------------------------------------------------------------
//   [namespace, name, state(0 reserved | 1 confirmed | 2 gone), devices, initCount, flags, resourceVersion,
//    expiresAtMs, placedAtMs, bindPhase, attemptId, disputed, parts, priority, preemptedBy ([uid, pod, atMs, untilMs]),
//    pdbBlockedUntilMs, preempting ([uid, …])]     flags: 1 initDone, 2 holdsAppCards, 4 terminating, 8 adopted
// Trailing absent fields are dropped; absent fields in the middle are null.

const STATES: readonly BookingState[] = ['reserved', 'confirmed', 'gone'];
const Flag = { initDone: 1, appCards: 2, terminating: 4, adopted: 8 } as const;

/** The booking's positions, named as its problems name them. */
const BOOKING_FIELDS = [
  'namespace',
  'name',
  'state',
  'devices',
  'initCount',
  'flags',
  'resourceVersion',
  'expiresAtMs',
  'placedAtMs',
  'bindPhase',
  'attemptId',
  'disputed',
  'parts',
  'priority',
  'preemptedBy',
  'pdbBlockedUntilMs',
  'preempting',
] as const;

function encodeBookingText(booking: Booking): string {
  const flags =
    (booking.initDone ? Flag.initDone : 0) |
    (booking.holdsAppCards ? Flag.appCards : 0) |
    (booking.terminating ? Flag.terminating : 0) |
    (booking.origin === 'adopted' ? Flag.adopted : 0);
  const fields: (string | number | null | readonly (string | number)[])[] = [
    booking.namespace,
    booking.name,
    STATES.indexOf(booking.state),
    booking.devices ?? null,
    booking.initCount,
    flags,
    booking.resourceVersion ?? null,
    booking.expiresAtMs ?? null,
    booking.placedAtMs ?? null,
    booking.bindPhase ?? null,
    booking.attemptId ?? null,
    booking.disputed ?? null,
    booking.parts ?? null,
    booking.priority ?? null,
    booking.preemptedBy ? [booking.preemptedBy.uid, booking.preemptedBy.pod, booking.preemptedBy.atMs, booking.preemptedBy.untilMs] : null,
    booking.pdbBlockedUntilMs ?? null,
    booking.preempting ?? null,
  ];
  while (fields.length > 3 && fields[fields.length - 1] === null) fields.pop();
  return JSON.stringify(fields);
}

/** Decodes one stored booking; throws with the reason when it cannot be read. */
function decodeBookingText(text: string): Booking {
  const row = readRow(JSON.parse(text), 'booking', 3, BOOKING_FIELDS.length);
  const field = (i: number): string => BOOKING_FIELDS[i]!;
  const state = STATES[readNat(row[2], field(2))];
  if (state === undefined) return unexpected(field(2), undefined, '0, 1 or 2', row[2]);
  const devices = readOptionalText(row[3], field(3)) || undefined;
  const initCount = readOptionalNat(row[4], field(4)) ?? 0;
  const flagBits = readOptionalNat(row[5], field(5)) ?? 0;
  const initDone = (flagBits & Flag.initDone) !== 0;
  const podDevices = devices ? decodePodDevices(devices) : [];
  // Every field in one literal (absent ones undefined, which readers treat as absent): one object shape for all
  // bookings, rather than a shape per combination of fields present.
  return {
    namespace: readText(row[0], field(0), undefined, true),
    name: readText(row[1], field(1), undefined, true),
    state,
    devices,
    initCount,
    initDone,
    uses: state === 'gone' ? [] : cardUsesOf(podDevices, initCount, initDone),
    holdsAppCards: state !== 'gone' && ((flagBits & Flag.appCards) !== 0 || appContainersNeedLock(podDevices, initCount)),
    origin: (flagBits & Flag.adopted) !== 0 ? 'adopted' : 'decided',
    resourceVersion: readOptionalText(row[6], field(6)) || undefined,
    expiresAtMs: readOptionalNat(row[7], field(7)),
    placedAtMs: readOptionalNat(row[8], field(8)),
    bindPhase: readOptionalText(row[9], field(9)) || undefined,
    terminating: (flagBits & Flag.terminating) !== 0 ? true : undefined,
    attemptId: readOptionalText(row[10], field(10)) || undefined,
    disputed: readOptionalText(row[11], field(11)) || undefined,
    parts: readOptionalText(row[12], field(12)) || undefined,
    priority: row[13] === null || row[13] === undefined ? undefined : readInt(row[13], field(13)),
    preemptedBy: readPreemptedBy(row[14], field(14)),
    pdbBlockedUntilMs: readOptionalNat(row[15], field(15)),
    preempting: row[16] === null || row[16] === undefined ? undefined : readList(row[16], field(16)).map((uid, i) => readText(uid, field(16), i, true)),
  };
}

function readPreemptedBy(value: unknown, field: string): Booking['preemptedBy'] {
  if (value === null || value === undefined) return undefined;
  const row = readList(value, field);
  if (row.length !== 4) return unexpected(field, undefined, '4 fields', row.length);
  return { uid: readText(row[0], field, 0, true), pod: readText(row[1], field, 1, true), atMs: readNat(row[2], field, 2), untilMs: readNat(row[3], field, 3) };
}

// ---- registration: compact positional JSON -------------------------------------------------------------
//   registered:   {"d":[[id,index,count,devmem,devcore,type,numa,mode,health(0|1),extras?],…],"c":[cordoned…],"p":{pair scores}}
//                 extras (absent when empty): {"v": vendor, "t": instance type, "g": [[name, memoryMB, core, sliceCount, [[start,size],…]],…]}
//   unregistered: {"r":"reason"}
// Extras came with MIG and AWS Neuron (`t`: the node's instance type, docs/devices.md "AWS Neuron"); devices stored
// without them are NVIDIA's, as before.

function deviceExtras(d: DeviceInfo): Record<string, unknown> | undefined {
  const extras: Record<string, unknown> = {};
  if (d.vendor !== undefined) extras.v = d.vendor;
  if (d.nodeType !== undefined) extras.t = d.nodeType;
  if (d.migProfiles !== undefined && d.migProfiles.length > 0) {
    extras.g = d.migProfiles.map((p) => [p.name, p.memoryMB, p.core, p.sliceCount, p.placements.map((pl) => [pl.start, pl.size])]);
  }
  return Object.keys(extras).length > 0 ? extras : undefined;
}

export function encodeRegistration(registration: NodeRegistration): string {
  if (!registration.registered) return JSON.stringify({ r: registration.reason });
  return JSON.stringify({
    d: registration.devices.map((d) => {
      const row: unknown[] = [d.id, d.index, d.count, d.devmem, d.devcore, d.type, d.numa, d.mode, d.health ? 1 : 0];
      const extras = deviceExtras(d);
      if (extras !== undefined) row.push(extras);
      return row;
    }),
    ...(registration.cordoned.length > 0 ? { c: registration.cordoned } : {}),
    ...(Object.keys(registration.pairScores).length > 0 ? { p: registration.pairScores } : {}),
  });
}

function decodeRegistrationText(text: string): NodeRegistration {
  const stored = readObject(JSON.parse(text), 'registration');
  if (stored.r !== undefined) return { registered: false, reason: readText(stored.r, 'r') };
  const devices = readList(stored.d, 'd').map((row, i) => decodeDeviceRow(readRow(row, `d.${i}`, 9, 10), `d.${i}`));
  const cordoned = stored.c === undefined ? [] : readList(stored.c, 'c').map((id, i) => readText(id, 'c', i));
  const pairScores: Record<string, Record<string, number>> = {};
  if (stored.p !== undefined) {
    for (const [from, scores] of Object.entries(readObject(stored.p, 'p'))) {
      const row: Record<string, number> = {};
      for (const [to, score] of Object.entries(readObject(scores, 'p', from))) row[to] = readInt(score, `p.${from}`, to);
      pairScores[from] = row;
    }
  }
  return { registered: true, devices, cordoned, pairScores };
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** `[id, index, count, devmem, devcore, type, numa, mode, health, extras?]` */
function decodeDeviceRow(row: readonly unknown[], field: string): DeviceInfo {
  const health = row[8];
  if (health !== 0 && health !== 1) return unexpected(field, 8, '0 or 1', health);
  const device: Mutable<DeviceInfo> = {
    id: readText(row[0], field, 0, true),
    index: readNat(row[1], field, 1),
    count: readNat(row[2], field, 2),
    devmem: readNat(row[3], field, 3),
    devcore: readNat(row[4], field, 4),
    type: readText(row[5], field, 5),
    numa: readInt(row[6], field, 6),
    mode: readText(row[7], field, 7),
    health: health === 1,
  };
  if (row.length === 9) return device;
  const at = `${field}.9`;
  const extras = readObject(row[9], at);
  if (extras.v !== undefined) device.vendor = readText(extras.v, at, 'v', true);
  if (extras.t !== undefined) device.nodeType = readText(extras.t, at, 't');
  if (extras.g !== undefined) {
    device.migProfiles = readList(extras.g, at, 'g').map((value, i) => {
      const profileAt = `${at}.g.${i}`;
      const profile = readRow(value, profileAt, 5, 5);
      return {
        name: readText(profile[0], profileAt, 0),
        memoryMB: readNat(profile[1], profileAt, 1),
        core: readNat(profile[2], profileAt, 2),
        sliceCount: readNat(profile[3], profileAt, 3),
        placements: readList(profile[4], profileAt, 4).map((value, j) => {
          const placement = readRow(value, `${profileAt}.4.${j}`, 2, 2);
          return { start: readNat(placement[0], `${profileAt}.4.${j}`, 0), size: readNat(placement[1], `${profileAt}.4.${j}`, 1) };
        }),
      };
    });
  }
  return device;
}

// ---- reading the compact forms -------------------------------------------------------------------------
// Bookings, registrations and counters are read by hand rather than with zod schemas: they are decoded for every
// node a view loads or catches up on, and the schemas' parsing took about 40% of decoding a node (docs/state.md,
// "Decoding"). Each reader checks one value as strictly as a schema would and throws naming the field, which becomes
// the part's problem (`unreadable`).

// A value's place is given as `field` and, inside it, `key`: the name is put together only for a problem.

function unexpected(field: string, key: string | number | undefined, expected: string, value: unknown): never {
  const shown = JSON.stringify(value) ?? String(value);
  throw new Error(`${key === undefined ? field : `${field}.${key}`}: expected ${expected}, found ${shown.length > 40 ? `${shown.slice(0, 37)}...` : shown}`);
}

function readText(value: unknown, field: string, key?: string | number, nonEmpty = false): string {
  if (typeof value !== 'string' || (nonEmpty && value === '')) return unexpected(field, key, nonEmpty ? 'non-empty text' : 'text', value);
  return value;
}

function readOptionalText(value: unknown, field: string, key?: string | number): string | undefined {
  return value === null || value === undefined ? undefined : readText(value, field, key);
}

function readInt(value: unknown, field: string, key?: string | number): number {
  if (!Number.isSafeInteger(value)) return unexpected(field, key, 'an integer', value);
  return value as number;
}

function readNat(value: unknown, field: string, key?: string | number): number {
  if (!Number.isSafeInteger(value) || (value as number) < 0) return unexpected(field, key, 'a non-negative integer', value);
  return value as number;
}

function readOptionalNat(value: unknown, field: string, key?: string | number): number | undefined {
  return value === null || value === undefined ? undefined : readNat(value, field, key);
}

function readObject(value: unknown, field: string, key?: string | number): Record<string, unknown> {
  if (!isJsonObject(value)) return unexpected(field, key, 'an object', value);
  return value;
}

function readList(value: unknown, field: string, key?: string | number): readonly unknown[] {
  if (!Array.isArray(value)) return unexpected(field, key, 'a list', value);
  return value;
}

function readRow(value: unknown, field: string, min: number, max: number): readonly unknown[] {
  const row = readList(value, field);
  if (row.length < min || row.length > max) return unexpected(field, undefined, min === max ? `${min} fields` : `${min} to ${max} fields`, row.length);
  return row;
}

// ---- real-time report: {"t": epoch ms, "d": {uuid: [usedMemMB, totalMemMB, utilization?, processCount?]}} ----

const compactRealtime = z.object({
  t: z.number(),
  d: z.record(z.string(), z.array(z.number().nonnegative()).min(2).max(4)),
});

function encodeRealtime(report: RealtimeReport): string {
  const d: Record<string, number[]> = {};
  for (const [id, use] of Object.entries(report.devices)) {
    const row = [use.usedMemMB, use.totalMemMB];
    if (use.utilization !== undefined || use.processCount !== undefined) row.push(use.utilization ?? 0);
    if (use.processCount !== undefined) row.push(use.processCount);
    d[id] = row;
  }
  return JSON.stringify({ t: report.timeMs, d });
}

function decodeRealtime(text: string): RealtimeReport {
  const compact = compactRealtime.parse(JSON.parse(text));
  const devices: Record<string, RealtimeReport['devices'][string]> = {};
  for (const [id, [usedMemMB = 0, totalMemMB = 0, utilization, processCount]] of Object.entries(compact.d)) {
    devices[id] = { usedMemMB, totalMemMB, ...(utilization !== undefined ? { utilization } : {}), ...(processCount !== undefined ? { processCount } : {}) };
  }
  return { timeMs: compact.t, devices };
}

/** `uuid -> {s, m, c}` */
function decodeCounters(stored: unknown): Record<string, CardCounter> {
  const counters: Record<string, CardCounter> = {};
  for (const [uuid, value] of Object.entries(readObject(stored, 'counters'))) {
    const c = readObject(value, uuid);
    counters[uuid] = { slots: readInt(c[CounterAttr.slots], uuid, CounterAttr.slots), mem: readInt(c[CounterAttr.mem], uuid, CounterAttr.mem), cores: readInt(c[CounterAttr.cores], uuid, CounterAttr.cores) };
  }
  return counters;
}

const lockSchema = z.object({ h: z.string(), u: z.string(), s: z.number(), e: z.number(), m: z.boolean().optional(), w: z.record(z.string(), z.string()).optional() });

/**
 * Whether a stored node item is past its expiry (a deleted node's, `DELETED_NODE_TTL_SECONDS` after it kept
 * nothing). Expired means absent, whether or not DynamoDB's TTL has removed the item yet: reads skip it, and a write
 * that expects no item may replace it.
 */
export function nodeItemExpired(item: Item, nowMs: number): boolean {
  const ttl = item[NodeAttr.ttl];
  return typeof ttl === 'number' && ttl < Math.floor(nowMs / 1000);
}

/**
 * Node items to and from the ledger. Decoded bookings and registrations are cached per stored text (a warm
 * process decodes each distinct text once); one codec lives per store adapter.
 */
export class NodeCodec {
  private readonly bookings = new Map<string, Booking>();
  private readonly registrations = new Map<string, NodeRegistration>();
  private static readonly CACHE_MAX = 200_000;

  /** The ledger of a stored node item; undecodable parts are contained in `unreadable`. */
  decode(name: string, item: Item): NodeLedger {
    const unreadable: UnreadablePart[] = [];
    const problem = (part: string, raw: unknown, err: unknown, blocking: boolean): void => {
      unreadable.push({ part, raw, blocking, problem: describeProblem(err) });
    };
    const text = (attr: string): string | undefined => (typeof item[attr] === 'string' ? (item[attr] as string) : undefined);
    const num = (attr: string): number | undefined => (typeof item[attr] === 'number' ? (item[attr] as number) : undefined);

    let registration: NodeRegistration | undefined;
    const regText = text(NodeAttr.registration);
    if (regText !== undefined) {
      try {
        registration = this.decodeRegistration(regText);
      } catch (err) {
        problem('registration', regText, err, true);
      }
    }

    const bookings: Record<string, Booking> = {};
    const storedBookings = item[NodeAttr.bookings];
    if (storedBookings !== undefined && (storedBookings === null || typeof storedBookings !== 'object' || Array.isArray(storedBookings))) {
      problem('bookings', storedBookings, new Error('bookings are not a map'), true);
    } else {
      for (const [uid, raw] of Object.entries((storedBookings ?? {}) as Record<string, unknown>)) {
        try {
          if (typeof raw !== 'string') throw new Error('booking is not text');
          bookings[uid] = this.decodeBooking(raw);
        } catch (err) {
          problem(`booking ${uid}`, raw, err, true);
        }
      }
    }

    let counters: Record<string, CardCounter> = {};
    const storedCounters = item[NodeAttr.counters];
    if (storedCounters !== undefined) {
      try {
        counters = decodeCounters(storedCounters);
      } catch (err) {
        problem('counters', storedCounters, err, true);
      }
    }

    let lock: NodeLock | undefined;
    if (item[NodeAttr.lock] !== undefined) {
      const parsed = lockSchema.safeParse(item[NodeAttr.lock]);
      if (parsed.success) {
        const { h, u, s, e, m, w } = parsed.data;
        lock = { holder: h, holderUid: u, sinceMs: s, expiresAtMs: e, ...(m ? { mirrored: true } : {}), ...(w && Object.keys(w).length > 0 ? { waiters: w } : {}) };
      }
      else problem('lock', item[NodeAttr.lock], parsed.error, false);
    }

    let realtime: RealtimeReport | undefined;
    const rtText = text(NodeAttr.realtime);
    if (rtText !== undefined) {
      try {
        realtime = decodeRealtime(rtText);
      } catch (err) {
        problem('realtime', rtText, err, false);
      }
    }

    const version = num(NodeAttr.version);
    if (version === undefined || !Number.isInteger(version)) problem('version', item[NodeAttr.version], new Error('version is not an integer'), true);
    const resourceVersion = text(NodeAttr.resourceVersion);
    const registeredAtMs = num(NodeAttr.registeredAt);
    const allocatableGpu = text(NodeAttr.allocatable);
    const handshake = text(NodeAttr.handshake);
    return {
      name,
      version: version ?? 0,
      ...(resourceVersion !== undefined ? { resourceVersion } : {}),
      deleted: item[NodeAttr.deleted] === true,
      ...(registration ? { registration } : {}),
      registrationVersion: num(NodeAttr.registrationVersion) ?? 0,
      ...(registeredAtMs !== undefined ? { registeredAtMs } : {}),
      ...(allocatableGpu !== undefined ? { allocatableGpu } : {}),
      ...(handshake !== undefined ? { handshake } : {}),
      ...(realtime ? { realtime } : {}),
      bookings,
      counters,
      ...(lock ? { lock } : {}),
      ...(unreadable.length > 0 ? { unreadable } : {}),
    };
  }

  /** The stored item of a ledger (key included); throws `NodeItemTooLargeError` beyond the item bound. */
  encode(ledger: NodeLedger, nowMs: number): Item {
    const bookings: Record<string, string> = {};
    const appCards: Record<string, boolean> = {};
    for (const [uid, booking] of Object.entries(ledger.bookings)) {
      bookings[uid] = this.bookingText(booking);
      if (holdsAppCards(booking)) appCards[uid] = true;
    }
    // Unreadable bookings are written back as they were until an event for that pod replaces them.
    for (const part of ledger.unreadable ?? []) {
      const uid = part.part.startsWith('booking ') ? part.part.slice('booking '.length) : undefined;
      if (uid !== undefined && ledger.bookings[uid] === undefined && typeof part.raw === 'string') bookings[uid] = part.raw;
    }
    const counters: Record<string, Record<string, number>> = {};
    for (const [uuid, c] of Object.entries(ledger.counters)) counters[uuid] = { [CounterAttr.slots]: c.slots, [CounterAttr.mem]: c.mem, [CounterAttr.cores]: c.cores };
    const keepsNothing = ledger.deleted && Object.keys(bookings).length === 0;
    const item: Item = {
      ...nodeKey(ledger.name),
      [NodeAttr.version]: ledger.version,
      ...(ledger.resourceVersion !== undefined ? { [NodeAttr.resourceVersion]: ledger.resourceVersion } : {}),
      ...(ledger.deleted ? { [NodeAttr.deleted]: true } : {}),
      ...(ledger.registration ? { [NodeAttr.registration]: encodeRegistration(ledger.registration) } : this.unreadableRaw(ledger, 'registration', NodeAttr.registration)),
      [NodeAttr.registrationVersion]: ledger.registrationVersion,
      ...(ledger.registeredAtMs !== undefined ? { [NodeAttr.registeredAt]: ledger.registeredAtMs } : {}),
      ...(ledger.allocatableGpu !== undefined ? { [NodeAttr.allocatable]: ledger.allocatableGpu } : {}),
      ...(ledger.handshake !== undefined ? { [NodeAttr.handshake]: ledger.handshake } : {}),
      ...(ledger.realtime ? { [NodeAttr.realtime]: encodeRealtime(ledger.realtime) } : {}),
      [NodeAttr.bookings]: bookings,
      [NodeAttr.appCards]: appCards,
      [NodeAttr.counters]: counters,
      ...(ledger.lock ? { [NodeAttr.lock]: encodeLock(ledger.lock) } : {}),
      ...(keepsNothing ? { [NodeAttr.ttl]: Math.floor(nowMs / 1000) + DELETED_NODE_TTL_SECONDS } : {}),
    };
    const bytes = approximateItemBytes(item);
    if (bytes > NODE_ITEM_MAX_BYTES) throw new NodeItemTooLargeError(ledger.name, bytes, NODE_ITEM_MAX_BYTES);
    return item;
  }

  /** The exact stored text of a booking (conditions compare it). */
  bookingText(booking: Booking): string {
    return this.texts.get(booking) ?? encodeBookingText(booking);
  }

  /** Stored texts of decoded bookings: a booking read and written back compares equal to what is stored. */
  private readonly texts = new WeakMap<Booking, string>();

  private decodeBooking(text: string): Booking {
    const hit = this.bookings.get(text);
    if (hit !== undefined) return hit;
    const booking = decodeBookingText(text);
    if (this.bookings.size >= NodeCodec.CACHE_MAX) this.bookings.clear();
    this.bookings.set(text, booking);
    this.texts.set(booking, text);
    return booking;
  }

  private decodeRegistration(text: string): NodeRegistration {
    const hit = this.registrations.get(text);
    if (hit !== undefined) return hit;
    const registration = decodeRegistrationText(text);
    if (this.registrations.size >= NodeCodec.CACHE_MAX) this.registrations.clear();
    this.registrations.set(text, registration);
    return registration;
  }

  private unreadableRaw(ledger: NodeLedger, part: string, attr: string): Item {
    const raw = ledger.unreadable?.find((p) => p.part === part)?.raw;
    return typeof raw === 'string' ? { [attr]: raw } : {};
  }
}

/** Whether the lock's guard should let this booking take the lock. */
export function holdsAppCards(booking: Booking): boolean {
  return booking.holdsAppCards && booking.state !== 'gone';
}

export function encodeLock(lock: NodeLock): Item {
  return {
    [LockAttr.holder]: lock.holder,
    [LockAttr.holderUid]: lock.holderUid,
    [LockAttr.since]: lock.sinceMs,
    [LockAttr.expiresAt]: lock.expiresAtMs,
    ...(lock.mirrored ? { [LockAttr.mirrored]: true } : {}),
    // Always present, so a waiter can be added with one SET on the map.
    [LockAttr.waiters]: { ...(lock.waiters ?? {}) },
  };
}

/** DynamoDB's item size: UTF-8 bytes of attribute names and values, with small per-element overheads. */
export function approximateItemBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value);
  if (typeof value === 'number') return 8;
  if (typeof value === 'boolean' || value === null || value === undefined) return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (Array.isArray(value)) return 3 + value.reduce((sum: number, v) => sum + 1 + approximateItemBytes(v), 0);
  if (value instanceof Set) return [...value].reduce((sum: number, v) => sum + approximateItemBytes(v), 0);
  let sum = 3;
  // for…in over a plain object, not Object.entries: no array per key (every node write measures its item).
  const map = value as Record<string, unknown>;
  for (const k in map) sum += Buffer.byteLength(k) + 1 + approximateItemBytes(map[k]);
  return sum;
}

function describeProblem(err: unknown): string {
  if (err instanceof z.ZodError) return err.issues.slice(0, 3).map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join('; ');
  return errorMessage(err);
}

// ---- journal, directory, quotas ------------------------------------------------------------------------

const journalItem = z.object({
  sk: z.string().regex(/^\d{15}$/),
  t: z.number(),
  n: z.record(z.string(), z.number()).optional(),
  q: z.array(z.string()).optional(),
  l: z.array(z.string()).optional(),
});

/** Journal entries are kept this long: a view further behind reloads the whole cluster. */
export const JOURNAL_RETENTION_SECONDS = 24 * 3600;

export function encodeJournalEntry(entry: JournalEntry): Item {
  return {
    ...journalKey(entry.seq),
    t: entry.atMs,
    ...(Object.keys(entry.nodes).length > 0 ? { n: entry.nodes } : {}),
    ...(entry.namespaces.length > 0 ? { q: [...entry.namespaces] } : {}),
    ...(entry.locks && entry.locks.length > 0 ? { l: [...entry.locks] } : {}),
    ttl: Math.floor(entry.atMs / 1000) + JOURNAL_RETENTION_SECONDS,
  };
}

/** A journal item's sequence number (0 when its sort key is not one). */
export function journalSeqOf(item: Item): number {
  const sk = item[KeyAttr.sort];
  return typeof sk === 'string' && /^\d+$/.test(sk) ? Number(sk) : 0;
}

/** A journal entry; one that cannot be read comes back marked `unreadable` (it may have named anything). */
export function decodeJournalEntry(item: Item): JournalEntry {
  const parsed = journalItem.safeParse(item);
  const seq = journalSeqOf(item);
  if (!parsed.success) return { seq, atMs: 0, nodes: {}, namespaces: [], unreadable: true };
  return { seq, atMs: parsed.data.t, nodes: parsed.data.n ?? {}, namespaces: parsed.data.q ?? [], ...(parsed.data.l ? { locks: parsed.data.l } : {}) };
}

const quotaItem = z.object({
  v: z.number().int(),
  q: z.record(z.string(), z.object({ m: z.number().optional(), c: z.number().optional(), rv: z.string().optional(), del: z.boolean().optional() })),
});

export function encodeQuota(namespace: string, quota: QuotaLedger): Item {
  const q: Record<string, Item> = {};
  for (const [name, limits] of Object.entries(quota.quotas)) {
    q[name] = {
      ...(limits.mem !== undefined ? { m: limits.mem } : {}),
      ...(limits.cores !== undefined ? { c: limits.cores } : {}),
      ...(limits.resourceVersion !== undefined ? { rv: limits.resourceVersion } : {}),
      ...(limits.deleted ? { del: true } : {}),
    };
  }
  return { ...quotaKey(namespace), [QuotaAttr.version]: quota.version, [QuotaAttr.quotas]: q };
}

/** A namespace's quotas; an unreadable item reads as no limits (the next ResourceQuota event rewrites it). */
export function decodeQuota(item: Item): QuotaLedger | { readonly unreadable: string } {
  const parsed = quotaItem.safeParse(item);
  if (!parsed.success) return { unreadable: describeProblem(parsed.error) };
  const quotas: Record<string, QuotaLedger['quotas'][string]> = {};
  for (const [name, q] of Object.entries(parsed.data.q)) {
    quotas[name] = {
      ...(q.m !== undefined ? { mem: q.m } : {}),
      ...(q.c !== undefined ? { cores: q.c } : {}),
      ...(q.rv !== undefined ? { resourceVersion: q.rv } : {}),
      ...(q.del ? { deleted: true } : {}),
    };
  }
  return { version: parsed.data.v, quotas };
}
