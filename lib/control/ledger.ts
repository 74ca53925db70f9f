/**
 * The usage ledger: what the control plane holds per node, in readable domain types, and its rules as pure
 * functions. Storage attribute names live in one codec (lib/store/codec.ts); nothing here knows them.
 *
 * HAMi's accounting (docs/hami-parity.md, "Accounting"): a pod's cards count from the filter decision until the pod is
 * deleted or reaches Succeeded/Failed; a terminating pod still counts. Our additions: a filter's reservation
 * expires if the pod is never seen with its annotations (the relay failed to patch it); deleted pods leave a
 * tombstone so a late, older event cannot bring them back; what a pod holds is what the scheduler decided
 * (docs/state.md, "Bookings belong to the scheduler").
 */
import { overcommittedDimensions, type CapacityDimension } from '../engine/capacity';
import type { StoredClaim } from '../engine/claims';
import { coresAreMasks, DEFAULT_KIND, DEVICE_KINDS, deviceKind, deviceKindOf, vendorOf } from '../engine/devices';
import { decodePodDevices } from '../engine/podAnnotations';
import { saturatedInt32 } from '../engine/quantity';
import { collapsePodUsage } from '../engine/usage';
import { NodeFailure, UsageColumn, USAGE_WIDTH, type CardClaim, type DeviceInfo, type DeviceUsage, type MigPlacement, type NodeAllocations, type NodeRegistration, type NodeState, type PodDevices, type QuotaView, type RealtimeReport } from '../engine/types';

/** One card's share of a booking after HAMi's init-container collapse. */
export interface CardUse {
  readonly uuid: string;
  readonly slots: number;
  readonly mem: number;
  readonly cores: number;
  /** The device kind's vendor when not NVIDIA (as `DeviceInfo.vendor`): such uses do not count toward the NVIDIA quota. */
  readonly vendor?: string;
}

export type BookingState = 'reserved' | 'confirmed' | 'gone';

/** What one pod holds on one node. */
export interface Booking {
  readonly namespace: string;
  readonly name: string;
  /** reserved: chosen by a filter, not yet seen with its annotations; confirmed: seen; gone: tombstone. */
  readonly state: BookingState;
  /** The devices as decided, in HAMi's encoding (the kind's allocated annotation: aligned, init containers first); absent on tombstones. */
  readonly devices?: string;
  readonly initCount: number;
  /** Every init container exited 0: only app containers count (HAMi's shrink). */
  readonly initDone: boolean;
  /** Which parts of cards the pod holds, as its device kind records them (MIG placements); absent for most pods. */
  readonly parts?: string;
  /** Collapsed per-card usage, derived from `devices` (never stored). */
  readonly uses: readonly CardUse[];
  /** Some regular (non-init) container holds a card of a kind that binds under HAMi's node lock: `/bind` takes the lock for it. */
  readonly holdsAppCards: boolean;
  /** `decided` by our filter, or `adopted` from the annotations of a pod placed before we took over. */
  readonly origin: 'decided' | 'adopted';
  /** Pod resourceVersion last applied (order tolerance). */
  readonly resourceVersion?: string;
  /** Reservations and tombstones: epoch ms after which they no longer count. */
  readonly expiresAtMs?: number;
  /** Epoch ms of the filter decision that placed the pod. */
  readonly placedAtMs?: number;
  readonly bindPhase?: string;
  readonly terminating?: boolean;
  /** The filter attempt that made the booking. */
  readonly attemptId?: string;
  /** Fingerprint of the scheduler-owned annotation value last reported as changed after placement (reported once per value). */
  readonly disputed?: string;
  /** The pod's priority (`spec.priority`) when the filter placed it: GPU-aware preemption weighs it (docs/preemption.md). */
  readonly priority?: number;
  /**
   * Preemption (docs/preemption.md): this pod is being evicted for `pod` (uid `uid`), whose hold takes its cards; it
   * does not count until `untilMs`, so the ledger never promises a card twice. Counts again after, if still here.
   */
  readonly preemptedBy?: PreemptedBy;
  /** A PodDisruptionBudget refused this pod's eviction: until then, preemption counts evicting it as a violation. */
  readonly pdbBlockedUntilMs?: number;
  /** On a preemptor's hold: the uids of the victims it waits for on this node. */
  readonly preempting?: readonly string[];
}

/** Who a victim's cards are held for, and until when (docs/preemption.md). */
export interface PreemptedBy {
  readonly uid: string;
  /** `namespace/name`. */
  readonly pod: string;
  /** When the preemption was decided. */
  readonly atMs: number;
  readonly untilMs: number;
}

/** Whether a victim's cards are held for its preemptor at `nowMs`. */
export function heldForPreemptor(booking: Booking, nowMs: number): boolean {
  return booking.preemptedBy !== undefined && booking.preemptedBy.untilMs > nowMs;
}

/** Booked usage of one card as the store's guards see it: the sum over counting bookings. */
export interface CardCounter {
  readonly slots: number;
  readonly mem: number;
  readonly cores: number;
}

/**
 * HAMi's node lock, held from `/bind` until the device plugin's allocation ends. DynamoDB is the arbiter; the
 * Node annotation `hami.io/mutex.lock` mirrors it (docs/locks.md).
 */
export interface NodeLock {
  /** `namespace/name` of the holder pod. */
  readonly holder: string;
  readonly holderUid: string;
  readonly sinceMs: number;
  readonly expiresAtMs: number;
  /** The Node annotation has been seen naming this holder: its later absence means the device plugin released it. */
  readonly mirrored?: boolean;
  /** Pods whose bind gave up on this lock (uid -> `namespace/name`): nudged when it ends, so they are retried at once. */
  readonly waiters?: Readonly<Record<string, string>>;
}

/** Whether the lock still holds at `nowMs` (an expired lock counts as none). */
export function lockIsLive(lock: NodeLock | undefined, nowMs: number): lock is NodeLock {
  return lock !== undefined && lock.expiresAtMs >= nowMs;
}

/**
 * Whether another pod than `holderUid` holds the node's lock now; when not, this pod may take it. The stores guard
 * the lock's write with this rule (the DynamoDB adapter's condition states it in DynamoDB's words), and a bind whose
 * write was refused looks at the node again with it.
 */
export function lockHeldByOther(lock: NodeLock | undefined, holderUid: string, nowMs: number): lock is NodeLock {
  return lockIsLive(lock, nowMs) && lock.holderUid !== holderUid;
}

/**
 * Whether the lock can end in the same write as its holder's booking change: `uid` holds it and no pod waits for it.
 * A lock with waiters ends on its own, once the batch's writes have landed, so its nudges go out with the answer
 * (lib/control/clusterEvents.ts, `settleLocks`). The store guards the same condition.
 */
export function lockEndsWithBooking(lock: NodeLock | undefined, uid: string): lock is NodeLock {
  return lock !== undefined && lock.holderUid === uid && Object.keys(lock.waiters ?? {}).length === 0;
}

/** The Node annotation that mirrors the lock, as HAMi writes it. */
export const NODE_LOCK_ANNOTATION = 'hami.io/mutex.lock';

/** HAMi's lock value: `<RFC 3339 time>,<namespace>,<pod>` (whole seconds, as Go's time.RFC3339 writes it). */
export function nodeLockValue(lock: NodeLock): string {
  const [namespace = '', name = ''] = lock.holder.split('/');
  return `${new Date(lock.sinceMs).toISOString().replace(/\.\d{3}Z$/, 'Z')},${namespace},${name}`;
}

/** The holder (`namespace/name`) a lock annotation names, or undefined for a value without one (legacy, or malformed). */
export function nodeLockHolder(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const parts = value.split(',');
  return parts.length === 3 && parts[1] !== '' && parts[2] !== '' ? `${parts[1]}/${parts[2]}` : undefined;
}

/** Whether a pod's allocation on its node is still under way (placed by a filter, not yet reported done by the device plugin). */
export function allocationInProgress(booking: Booking, nowMs: number, lockExpireMs: number): boolean {
  return mayBeAllocating(booking) && allocatingNow(booking, nowMs, lockExpireMs);
}

/** What of `allocationInProgress` depends on the time: the booking counts, and was placed less than the lock's expiry ago. */
function allocatingNow(booking: Booking, nowMs: number, lockExpireMs: number): boolean {
  return bookingCounts(booking, nowMs) && booking.placedAtMs !== undefined && nowMs - booking.placedAtMs < lockExpireMs;
}

/** What of `allocationInProgress` a booking says on its own, whatever the time: placed by a filter, holding app cards, its bind not ended. */
function mayBeAllocating(booking: Booking): boolean {
  return booking.holdsAppCards && booking.placedAtMs !== undefined && booking.bindPhase !== 'success' && booking.bindPhase !== 'failed';
}

/**
 * The node's bookings whose allocation may be under way (`mayBeAllocating`): those `allocatingOn` looks at. They depend
 * on the ledger alone, so a caller that asks about the same ledger again and again keeps them (the view, per node).
 */
export function allocationCandidates(node: NodeLedger): readonly Booking[] {
  const candidates: Booking[] = [];
  for (const uid in node.bookings) {
    const booking = node.bookings[uid]!;
    if (mayBeAllocating(booking)) candidates.push(booking);
  }
  return candidates;
}

/**
 * Who occupies the node for an allocation, if anyone, and how many allocations are under way there: the lock's live
 * holder, and the pods placed on it whose allocation has not ended yet (their binds may not have taken the lock yet;
 * the device plugin allocates them one after another). Lock-aware placement passes such nodes over while others fit,
 * and among busy nodes prefers the one with the fewest (lib/engine/decision.ts, `avoid`). `candidates`: the node's
 * `allocationCandidates`, when the caller keeps them.
 */
export function allocationsOn(node: NodeLedger, nowMs: number, lockExpireMs: number, candidates = allocationCandidates(node)): NodeAllocations | undefined {
  let holder: string | undefined;
  let holderBooking: Booking | undefined;
  let count = 0;
  const lock = node.lock;
  if (lockIsLive(lock, nowMs)) {
    const held = node.bookings[lock.holderUid];
    if (held && held.state !== 'gone' && held.bindPhase !== 'success' && held.bindPhase !== 'failed') {
      holder = lock.holder;
      holderBooking = held;
      count = 1;
    }
  }
  for (const booking of candidates) {
    // The lock's holder counted once.
    if (booking === holderBooking || !allocatingNow(booking, nowMs, lockExpireMs)) continue;
    holder ??= `${booking.namespace}/${booking.name}`;
    count += 1;
  }
  return holder === undefined ? undefined : { holder, count };
}

/** A stored part that could not be decoded, kept as stored so that nothing is lost, and reported to operators. */
export interface UnreadablePart {
  /** `registration`, `counters`, `lock`, `realtime` or `booking <uid>`. */
  readonly part: string;
  readonly problem: string;
  /** The stored value (the codec writes it back unchanged until an event replaces it). */
  readonly raw: unknown;
  /** Whether the node must not be scheduled onto meanwhile (bookings, registration, counters); a lost lock or real-time report does not block. */
  readonly blocking: boolean;
}

/** Everything the control plane holds about one node. */
export interface NodeLedger {
  readonly name: string;
  /** Bumped by every write of the node's bookings or registration. */
  readonly version: number;
  /** Node resourceVersion last applied. */
  readonly resourceVersion?: string;
  readonly deleted: boolean;
  /** As last forwarded; undefined until the Node itself has been seen (its pods may come first). */
  readonly registration?: NodeRegistration;
  /** Bumped whenever the registration (cards, capacities) changes: reservations are guarded by it. */
  readonly registrationVersion: number;
  readonly registeredAtMs?: number;
  readonly allocatableGpu?: string;
  readonly handshake?: string;
  readonly realtime?: RealtimeReport;
  /** By pod uid. */
  readonly bookings: Readonly<Record<string, Booking>>;
  /** Per card UUID, kept exact by every write; reservations add to them under the engine's guards. */
  readonly counters: Readonly<Record<string, CardCounter>>;
  readonly lock?: NodeLock;
  /** Parts of the stored node that could not be decoded: the node is not scheduled until an event repairs them. */
  readonly unreadable?: readonly UnreadablePart[];
}

/** How long a deleted pod's tombstone guards against late events. */
export const TOMBSTONE_TTL_MS = 60 * 60 * 1000;
/**
 * The bound on one node's item (docs/state.md, "Size"): counting bookings and cards. A node beyond it is
 * refused clearly instead of growing its item toward DynamoDB's 400 KB limit.
 */
export const MAX_BOOKINGS_PER_NODE = 640;
export const MAX_CARDS_PER_NODE = 64;
/** Tombstones kept per node (the oldest go first); they only guard against late events. */
export const MAX_TOMBSTONES_PER_NODE = 256;

export function emptyLedger(name: string): NodeLedger {
  return { name, version: 0, deleted: false, registrationVersion: 0, bookings: {}, counters: {} };
}

/** Whether a booking counts against its node's cards at `nowMs`. */
export function bookingCounts(booking: Booking, nowMs: number): boolean {
  // A victim's cards are its preemptor's while the hold lasts (docs/preemption.md).
  if (heldForPreemptor(booking, nowMs)) return false;
  if (booking.state === 'confirmed') return true;
  if (booking.state === 'reserved') return booking.expiresAtMs === undefined || booking.expiresAtMs > nowMs;
  return false;
}

/** Collapsed per-card usage of a pod's devices (init containers first): what its booking holds. */
export function cardUsesOf(devices: PodDevices, initCount: number, initDone: boolean): CardUse[] {
  return collapsePodUsage(devices, initCount, initDone, coresAreMasks).map((d) => ({
    uuid: d.uuid,
    slots: Math.max(d.slots, 1),
    mem: d.usedmem,
    cores: d.usedcores,
    ...(d.type !== DEFAULT_KIND.vendor && deviceKind(d.type) !== undefined ? { vendor: d.type } : {}),
  }));
}

/**
 * Some regular container holds a card of a kind that binds under the node lock: `/bind` must take it (HAMi's bind,
 * step 3; kinds without a node lock, as AWS Neuron, never do).
 */
export function appContainersNeedLock(devices: PodDevices, initCount: number): boolean {
  return devices.slice(initCount).some((container) => container.some((device) => deviceKind(device.type)?.locksNode ?? true));
}

/** Usage per card of every counting booking except `excludeUid` (the pod being filtered again). */
export function usageOf(ledger: NodeLedger, nowMs: number, excludeUid?: string): Record<string, DeviceUsage> {
  return sumBookings(ledger.bookings, nowMs, {}, excludeUid);
}

/** Adds every counting booking's uses (except `excludeUid`'s) to `usage`, card by card. */
function sumBookings(bookings: Readonly<Record<string, Booking>>, nowMs: number, usage: Record<string, DeviceUsage>, excludeUid?: string): Record<string, DeviceUsage> {
  for (const [uid, booking] of Object.entries(bookings)) {
    if (uid === excludeUid || !bookingCounts(booking, nowMs)) continue;
    for (const use of booking.uses) {
      const card = usage[use.uuid] ?? (usage[use.uuid] = { used: 0, usedmem: 0, usedcores: 0 });
      card.used += use.slots;
      card.usedmem += use.mem;
      card.usedcores += use.cores;
    }
  }
  return usage;
}

/** A part of a card a booking holds (a MIG placement), and whose it is. */
export interface HeldPart {
  readonly uuid: string;
  readonly placement: MigPlacement;
  /** `namespace/name`. */
  readonly pod: string;
}

/**
 * Parts of cards the counting bookings hold (MIG placements), and the cards that cannot be accounted for, by each
 * device kind that records parts; only bookings that record parts, or nodes with cards taken by position, are read.
 */
export function partsHeld(ledger: NodeLedger, devices: readonly DeviceInfo[], nowMs: number, excludeUid?: string): { parts: HeldPart[]; failClosed: string[] } {
  const parts: HeldPart[] = [];
  const failClosed = new Set<string>();
  for (const kind of DEVICE_KINDS) {
    if (kind.heldParts === undefined) continue;
    const own = devices.filter((d) => deviceKindOf(d) === kind);
    const byPosition = own.some((d) => kind.positional(d));
    for (const [uid, booking] of Object.entries(ledger.bookings)) {
      if (uid === excludeUid || !bookingCounts(booking, nowMs) || booking.devices === undefined) continue;
      if (booking.parts === undefined && !byPosition) continue;
      const held = kind.heldParts(decodePodDevices(booking.devices), booking.parts, own);
      for (const [uuid, list] of Object.entries(held.placements)) for (const placement of list) parts.push({ uuid, placement, pod: `${booking.namespace}/${booking.name}` });
      for (const uuid of held.failClosed) failClosed.add(uuid);
    }
  }
  return { parts, failClosed: [...failClosed] };
}

function placementsByCard(parts: readonly HeldPart[]): Record<string, MigPlacement[]> {
  const byCard: Record<string, MigPlacement[]> = {};
  for (const part of parts) (byCard[part.uuid] ??= []).push(part.placement);
  return byCard;
}

/** The registration as the views show it: deleted and not-yet-reported nodes are unregistered, with the reason. */
export function effectiveRegistration(ledger: NodeLedger): NodeRegistration {
  if (ledger.deleted) return { registered: false, reason: 'node deleted' };
  return ledger.registration ?? { registered: false, reason: 'node not reported by the relay yet' };
}

/**
 * The engine's view of a node: registration plus usage of every counting booking except `excludeUid`. A node
 * whose stored state is partly unreadable, or that holds as many bookings as its item may, fails as a whole
 * with that reason (never guessed around: a booking we cannot read may be holding memory).
 */
export function toNodeState(ledger: NodeLedger, nowMs: number, excludeUid?: string): NodeState {
  const unschedulable =
    ledger.unreadable?.some((part) => part.blocking) === true
      ? NodeFailure.StateUnreadable
      : countingBookings(ledger, nowMs) >= MAX_BOOKINGS_PER_NODE && !(excludeUid !== undefined && ledger.bookings[excludeUid] !== undefined)
        ? NodeFailure.BookingLimit
        : undefined;
  const registration = effectiveRegistration(ledger);
  const usage = usageOf(ledger, nowMs, excludeUid);
  const held = registration.registered ? partsHeld(ledger, registration.devices, nowMs, excludeUid) : undefined;
  return {
    name: ledger.name,
    registration,
    registrationVersion: ledger.registrationVersion,
    usage,
    ...(registration.registered ? { usageByPosition: aligned(registration.devices, usage) } : {}),
    ...(held && held.parts.length > 0 ? { placementsInUse: placementsByCard(held.parts) } : {}),
    ...(held && held.failClosed.length > 0 ? { failClosed: held.failClosed } : {}),
    ...(ledger.realtime ? { realtime: ledger.realtime } : {}),
    ...(unschedulable ? { unschedulable } : {}),
  };
}

/** `NodeState.usageByPosition`. */
function aligned(devices: readonly { readonly id: string }[], usage: Readonly<Record<string, DeviceUsage>>): Int32Array {
  const out = new Int32Array(devices.length * USAGE_WIDTH);
  devices.forEach((device, p) => {
    const card = usage[device.id];
    if (!card) return;
    out[p * USAGE_WIDTH + UsageColumn.used] = saturatedInt32(card.used);
    out[p * USAGE_WIDTH + UsageColumn.mem] = saturatedInt32(card.usedmem);
    out[p * USAGE_WIDTH + UsageColumn.cores] = saturatedInt32(card.usedcores);
  });
  return out;
}

/** A registered card whose booked usage passes its capacity (lib/engine/capacity.ts), with the numbers compared. */
export interface OvercommittedCard {
  readonly uuid: string;
  readonly over: readonly CapacityDimension[];
  readonly used: number;
  readonly count: number;
  readonly usedmem: number;
  readonly devmem: number;
  readonly usedcores: number;
  readonly devcore: number;
}

/**
 * The cards of `devices` that `usage` (as `usageOf` sums it) takes past their capacity: the engine's rule, which Fit
 * applies card by card (`CardOvercommitted`), for the devices view and for cluster events to report.
 */
export function overcommittedCards(devices: readonly DeviceInfo[], usage: Readonly<Record<string, DeviceUsage>>): OvercommittedCard[] {
  const cards: OvercommittedCard[] = [];
  for (const device of devices) {
    const used = usage[device.id];
    if (used === undefined) continue;
    const over = overcommittedDimensions(device, used.used, used.usedmem, used.usedcores, coresAreMasks(vendorOf(device)));
    if (over.length === 0) continue;
    cards.push({ uuid: device.id, over, used: used.used, count: device.count, usedmem: used.usedmem, devmem: device.devmem, usedcores: used.usedcores, devcore: device.devcore });
  }
  return cards;
}

/** Counting bookings, the quantity the per-node bound is about. */
export function countingBookings(ledger: NodeLedger, nowMs: number): number {
  let count = 0;
  for (const booking of Object.values(ledger.bookings)) if (bookingCounts(booking, nowMs)) count++;
  return count;
}

/**
 * The ledger made ready to be written whole: expired reservations and old tombstones pruned, the version one
 * on, counters recomputed from the bookings that count (a zero counter for every registered card, so
 * reservations can add to it).
 */
export function nextLedger(ledger: NodeLedger, nowMs: number, changes: Partial<Omit<NodeLedger, 'name' | 'version' | 'counters'>> = {}): NodeLedger {
  const merged = { ...ledger, ...changes };
  const bookings: Record<string, Booking> = {};
  const tombstones: [string, Booking][] = [];
  for (const [uid, stored] of Object.entries(merged.bookings)) {
    if (stored.state !== 'confirmed' && stored.expiresAtMs !== undefined && stored.expiresAtMs <= nowMs) continue;
    const booking = withoutEndedMarks(stored, nowMs);
    if (booking.state === 'gone') tombstones.push([uid, booking]);
    else bookings[uid] = booking;
  }
  tombstones.sort((a, b) => (b[1].expiresAtMs ?? 0) - (a[1].expiresAtMs ?? 0));
  for (const [uid, booking] of tombstones.slice(0, MAX_TOMBSTONES_PER_NODE)) bookings[uid] = booking;
  return { ...merged, version: ledger.version + 1, bookings, counters: exactCounters(merged.registration, bookings, nowMs) };
}

function exactCounters(registration: NodeRegistration | undefined, bookings: Readonly<Record<string, Booking>>, nowMs: number): Record<string, CardCounter> {
  // Every registered card has a counter, used or not.
  const empty: Record<string, DeviceUsage> = {};
  if (registration?.registered) for (const device of registration.devices) empty[device.id] = { used: 0, usedmem: 0, usedcores: 0 };
  const counters: Record<string, CardCounter> = {};
  for (const [uuid, use] of Object.entries(sumBookings(bookings, nowMs, empty))) counters[uuid] = { slots: use.used, mem: use.usedmem, cores: use.usedcores };
  return counters;
}

/** A booking without the preemption marks whose time has passed (a victim whose hold ended counts again). */
function withoutEndedMarks(booking: Booking, nowMs: number): Booking {
  // A tombstone keeps its mark: the victim's scheduler log says who preempted it.
  const endedHold = booking.state !== 'gone' && booking.preemptedBy !== undefined && booking.preemptedBy.untilMs <= nowMs;
  const endedBlock = booking.pdbBlockedUntilMs !== undefined && booking.pdbBlockedUntilMs <= nowMs;
  if (!endedHold && !endedBlock) return booking;
  return { ...booking, preemptedBy: endedHold ? undefined : booking.preemptedBy, pdbBlockedUntilMs: endedBlock ? undefined : booking.pdbBlockedUntilMs };
}

/**
 * Whether the stored counters are exact (no expired reservation still counted, no victim whose hold ended left
 * uncounted), so a reservation may add to them.
 */
export function countersAreExact(ledger: NodeLedger, nowMs: number): boolean {
  return Object.values(ledger.bookings).every(
    (b) => (b.state !== 'reserved' || b.expiresAtMs === undefined || b.expiresAtMs > nowMs) && (b.preemptedBy === undefined || b.preemptedBy.untilMs > nowMs),
  );
}

/**
 * The engine's claims restated against the stored counters. The engine decided on usage without the pod's
 * own earlier booking on this node (a re-filter), while the counters still hold it: bounds rise by what it
 * held, the counters change by the difference, and a card it gives up is released.
 */
export function storedClaims(claims: readonly CardClaim[], replaced: readonly CardUse[]): StoredClaim[] {
  const held = new Map(replaced.map((use) => [use.uuid, use]));
  const stored: StoredClaim[] = claims.map((claim) => {
    const old = held.get(claim.uuid) ?? { slots: 0, mem: 0, cores: 0 };
    held.delete(claim.uuid);
    return {
      ...claim,
      slots: claim.slots - old.slots,
      mem: claim.mem - old.mem,
      cores: claim.cores - old.cores,
      maxSlotsBefore: claim.maxSlotsBefore + old.slots,
      maxMemBefore: claim.maxMemBefore + old.mem,
      maxCoresBefore: claim.maxCoresBefore + old.cores,
      slotsHeldBefore: old.slots,
    };
  });
  // Cards the earlier booking held and the new one does not: given back, with no bound.
  for (const old of held.values()) {
    stored.push({
      uuid: old.uuid,
      slots: -old.slots,
      mem: -old.mem,
      cores: -old.cores,
      maxSlotsBefore: Number.MAX_SAFE_INTEGER,
      maxMemBefore: Number.MAX_SAFE_INTEGER,
      maxCoresBefore: Number.MAX_SAFE_INTEGER,
      exclusive: false,
      slotsHeldBefore: old.slots,
    });
  }
  return stored;
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

/** Full-jitter exponential backoff after a lost race: 0..min(2^round, 32) ms, so racers spread out. */
export function backoffMs(random: number, round: number): number {
  return Math.floor(random * Math.min(2 ** round, 32));
}

/** Namespace quota items as stored: per ResourceQuota object, its limits in MiB / percent cores. */
export interface QuotaLedger {
  readonly version: number;
  readonly quotas: Readonly<Record<string, { readonly mem?: number; readonly cores?: number; readonly resourceVersion?: string; readonly deleted?: boolean }>>;
}

/**
 * Namespace quota as the engine checks it: the tightest limit of any live ResourceQuota, usage of counting bookings.
 * The limits name NVIDIA's memory and cores, so only NVIDIA cards count (a NeuronCore mask is no share of a GPU).
 */
export function toQuotaView(
  namespace: string,
  quota: QuotaLedger | undefined,
  nodes: Iterable<NodeLedger>,
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
  for (const ledger of nodes) {
    for (const [uid, booking] of Object.entries(ledger.bookings)) {
      if (uid === excludeUid || booking.namespace !== namespace || !bookingCounts(booking, nowMs)) continue;
      for (const use of booking.uses) {
        if (use.vendor !== undefined) continue;
        usedMem += use.mem;
        usedCores += use.cores;
      }
    }
  }
  return { ...(memLimit !== undefined ? { memLimit } : {}), ...(coreLimit !== undefined ? { coreLimit } : {}), usedMem, usedCores };
}

/**
 * The node's bookings once pod `uid` is gone: a hold it kept ends with it, and its victims still there count again
 * (they hold their cards until they are gone), rather than waiting out the hold's time.
 */
export function releaseVictimsOf(bookings: Readonly<Record<string, Booking>>, uid: string, hold: Booking | undefined): Record<string, Booking> {
  const out: Record<string, Booking> = { ...bookings };
  for (const victim of hold?.preempting ?? []) {
    const booking = out[victim];
    if (booking?.preemptedBy?.uid === uid && booking.state !== 'gone') out[victim] = { ...booking, preemptedBy: undefined };
  }
  return out;
}
