/**
 * Planning cluster events (docs/state.md, "Writes and their guards"; docs/locks.md): pure. Valid watch events and what
 * the warm view knows (which nodes book a pod) become, per node, the changes to apply to its ledger (each safe to
 * re-run on a fresher node), the locks the events end, what the events say of each node's lock annotation, and the
 * quota events. Applying them (writes with retries, settling locks, the journal) is ./clusterEvents.ts.
 */
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { allocatedDevicesOf, DEFAULT_KIND, DEVICE_KINDS, deviceKind, type DeviceKind } from '../engine/devices';
import { BindPhase, decodePodDevices, PodAnnotation } from '../engine/podAnnotations';
import { parseNodeRegistration, parseRealtimeReport, HandshakeAnnotation } from '../engine/registration';
import type { EngineConfig, NodeRegistration } from '../engine/types';
import {
  appContainersNeedLock,
  cardUsesOf,
  emptyLedger,
  isOlder,
  MAX_CARDS_PER_NODE,
  NODE_LOCK_ANNOTATION,
  nodeLockHolder,
  overcommittedCards,
  releaseVictimsOf,
  TOMBSTONE_TTL_MS,
  usageOf,
  type Booking,
  type NodeLedger,
  type NodeLock,
  type OvercommittedCard,
} from './ledger';
import { kubeName } from '../wire/names';
import { REALTIME_ANNOTATION } from '../wire/realtime';
import { markedDecision } from '../wire/decidedAhead';
import { watchEventSchema, type NodeObject, type PodObject, type QuotaObject, type WatchEvent } from '../wire/clusterEvents';

/** What planning needs to know beyond the events: the engine's settings and the warm view's bookings. */
export interface PlanContext {
  readonly engine: EngineConfig;
  /** The nodes that hold a booking of the pod. */
  holders(uid: string): readonly string[];
  /** The uids booked under a pod's name (a DELETED event from a re-list may carry no uid). */
  uidsByName(namespace: string, name: string): readonly string[];
}

/** What an event does to one node; must be safe to re-run on a fresher node. */
export type NodeChange = (node: NodeLedger | undefined, nowMs: number, notices: PendingNotice[]) => NodeLedger | undefined;

/**
 * What a change notes while the node's changes are applied: a notice, or a pod adopted from its annotations, whose
 * cards are judged once all of the node's changes are (`settleNotices`): a batch may carry the pod before its Node.
 */
export type PendingNotice = Notice | { readonly kind: 'adopted'; readonly pod: PodRef; readonly node: string };

/** Something an applied change wants reported (logged, Warning events, a metric): `reportNotice`. */
export type Notice =
  | {
      /** Scheduler-owned annotations of a confirmed pod no longer say what the scheduler decided. */
      readonly kind: 'annotationsChanged';
      readonly pod: PodRef;
      /** The node the booking is on. */
      readonly node: string;
      /** The devices as decided (the booking's). */
      readonly decided: string;
      readonly changes: readonly AnnotationChange[];
    }
  | {
      /** A pod adopted from its annotations took cards past their capacity. */
      readonly kind: 'adoptedPastCapacity';
      readonly pod: PodRef;
      readonly node: string;
      readonly cards: readonly OvercommittedCard[];
    };

export interface PodRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** One scheduler-owned annotation whose value is no longer what the scheduler decided. */
export interface AnnotationChange {
  readonly annotation: string;
  readonly decided: string;
  /** Undefined: the annotation was removed. */
  readonly seen: string | undefined;
}

export interface PlannedChange {
  readonly index: number;
  readonly change: NodeChange;
}

export interface Rejection {
  readonly index: number;
  readonly error: string;
}

export interface QuotaEvent {
  readonly index: number;
  readonly type: WatchEvent['type'];
  readonly quota: QuotaObject;
}

/** What a batch's Node events say of one node's lock annotation: its latest value, and every holder any of them named. */
export interface LockNote {
  /** The annotation in the node's latest forwarded version (null: none). */
  readonly last: string | null;
  /** The holders (`namespace/name`) the annotation named in any version of the batch, in order. */
  readonly named: readonly string[];
}

export interface EventPlan {
  readonly changes: ReadonlyMap<string, readonly PlannedChange[]>;
  /** Per node, the pods whose events end their lock there if they hold it (allocation ended, or the pod finished). */
  readonly lockHolders: ReadonlyMap<string, ReadonlySet<string>>;
  readonly lockNotes: ReadonlyMap<string, LockNote>;
  readonly quotaEvents: readonly QuotaEvent[];
  /**
   * Nodes a Node event reports present: listed in the directory even when nothing changed (a retried batch whose
   * directory write failed after its node writes lists them then).
   */
  readonly present: ReadonlySet<string>;
  readonly rejected: readonly Rejection[];
}

/** Parses each event on its own: the valid ones with their index, the others rejected with the reason. */
export function parseEvents(events: readonly unknown[]): { valid: { index: number; event: WatchEvent }[]; rejected: Rejection[] } {
  const rejected: Rejection[] = [];
  const valid: { index: number; event: WatchEvent }[] = [];
  events.forEach((raw, index) => {
    const parsed = watchEventSchema.safeParse(raw);
    if (parsed.success) valid.push({ index, event: parsed.data });
    else rejected.push({ index, error: describe(parsed.error) });
  });
  return { valid, rejected };
}

/** Events (already valid) and the view's bookings, planned per node. */
export function planClusterEvents(ctx: PlanContext, valid: readonly { readonly index: number; readonly event: WatchEvent }[], resend: boolean): EventPlan {
  const rejected: Rejection[] = [];
  const changes = new Map<string, PlannedChange[]>();
  const lockHolders = new Map<string, Set<string>>();
  const lockNotes = new Map<string, LockNote>();
  const quotaEvents: QuotaEvent[] = [];
  const present = new Set<string>();
  const add = (node: string, index: number, change: NodeChange) => changes.set(node, [...(changes.get(node) ?? []), { index, change }]);
  for (const { index, event } of valid) {
    const object = event.object;
    if (object.kind === 'Node') {
      const name = object.metadata.name;
      add(name, index, nodeChange(ctx, event.type, object));
      if (event.type !== 'DELETED') {
        const value = object.metadata.annotations?.[NODE_LOCK_ANNOTATION] ?? null;
        const holder = nodeLockHolder(value ?? undefined);
        const named = lockNotes.get(name)?.named ?? [];
        lockNotes.set(name, { last: value, named: holder !== undefined && !named.includes(holder) ? [...named, holder] : named });
        present.add(name);
      } else present.delete(name);
    } else if (object.kind === 'ResourceQuota') quotaEvents.push({ index, type: event.type, quota: object });
    else {
      const uids = object.metadata.uid !== undefined ? [object.metadata.uid] : event.type === 'DELETED' ? ctx.uidsByName(object.metadata.namespace, object.metadata.name) : undefined;
      if (uids === undefined) {
        rejected.push({ index, error: 'object.metadata.uid: required for ADDED and MODIFIED pods' });
        continue;
      }
      for (const uid of uids) {
        const planned = planPod(ctx, event.type, object, uid, resend);
        if ('error' in planned) {
          rejected.push({ index, error: planned.error });
          break;
        }
        for (const [node, change] of planned.changes) add(node, index, change);
        if (planned.releasesLock) for (const node of planned.nodes) lockHolders.set(node, new Set([...(lockHolders.get(node) ?? []), uid]));
      }
    }
  }
  return { changes, lockHolders, lockNotes, quotaEvents, present, rejected };
}

/**
 * The lock annotation a batch shows on a node with no lock behind it any more (docs/locks.md, "The mirror follows the
 * lock"): it names a pod that does not hold the node's lock, and whose allocation there is over (its booking gone, or
 * reported `success` or `failed`, or ended by this very batch). Its exact value, for a guarded clear; undefined when
 * the annotation is none of that. A pod the ledger has no booking of on the node (a lock HAMi's own scheduler wrote
 * before the take-over) is left alone: its allocation may still be under way.
 */
export function staleLockMirror(node: NodeLedger | undefined, note: LockNote | undefined, endedHere: ReadonlySet<string> | undefined): string | undefined {
  const value = note?.last;
  if (node === undefined || value === undefined || value === null) return undefined;
  const named = nodeLockHolder(value);
  if (named === undefined || node.lock?.holder === named) return undefined;
  for (const [uid, booking] of Object.entries(node.bookings)) {
    if (`${booking.namespace}/${booking.name}` !== named) continue;
    if (booking.state === 'gone' || booking.bindPhase === BindPhase.Success || booking.bindPhase === BindPhase.Failed || endedHere?.has(uid) === true) return value;
  }
  return undefined;
}

/** What a batch does to a node's lock (docs/locks.md): nothing, mark it mirrored, or end it (and whether to clear its mirror). */
export type LockSettlement = { readonly action: 'keep' } | { readonly action: 'markMirrored' } | { readonly action: 'release'; readonly clearMirror: boolean };

/**
 * The lock's fate after a batch. Its holder's allocation ended (or the pod finished): released, and its annotation
 * cleared unless the batch shows it gone already (the mirror follows the lock). Otherwise the annotation decides:
 * seen naming the holder, the lock is mirrored; gone after it was mirrored (earlier, or by an earlier version in this
 * very batch), the device plugin released it. An annotation not yet seen naming the holder may predate its patch.
 */
export function settleLock(lock: NodeLock, holderDone: boolean, note: LockNote | undefined): LockSettlement {
  const namedNow = note !== undefined && nodeLockHolder(note.last ?? undefined) === lock.holder;
  if (holderDone) return { action: 'release', clearMirror: note === undefined || namedNow };
  if (note === undefined) return { action: 'keep' };
  if (namedNow) return lock.mirrored === true ? { action: 'keep' } : { action: 'markMirrored' };
  if (lock.mirrored === true || note.named.includes(lock.holder)) return { action: 'release', clearMirror: false };
  return { action: 'keep' };
}

function nodeChange(ctx: PlanContext, type: WatchEvent['type'], object: NodeObject): NodeChange {
  const rv = object.metadata.resourceVersion;
  const name = object.metadata.name;
  return (node, nowMs) => {
    const base = node ?? emptyLedger(name);
    if (isOlder(rv, base.resourceVersion)) return undefined;
    if (type === 'DELETED') {
      if (base.deleted) return undefined;
      return { ...base, deleted: true, ...(rv ? { resourceVersion: rv } : {}), registeredAtMs: nowMs, registrationVersion: base.registrationVersion + 1 };
    }
    const annotations = object.metadata.annotations ?? {};
    const registration = withinCardBound(parseNodeRegistration(object, ctx.engine));
    const realtime = parseRealtimeReport(annotations[REALTIME_ANNOTATION]);
    const allocatable = object.status?.allocatable?.[ctx.engine.resourceCountName];
    const handshake = annotations[HandshakeAnnotation];
    const facts = {
      registration,
      ...(realtime ? { realtime } : {}),
      ...(allocatable !== undefined ? { allocatableGpu: String(allocatable) } : {}),
      ...(handshake !== undefined ? { handshake } : {}),
    };
    const before = {
      registration: base.registration,
      ...(base.realtime ? { realtime: base.realtime } : {}),
      ...(base.allocatableGpu !== undefined ? { allocatableGpu: base.allocatableGpu } : {}),
      ...(base.handshake !== undefined ? { handshake: base.handshake } : {}),
    };
    const repairs = base.unreadable?.some((p) => p.part === 'registration') === true;
    if (node && !base.deleted && !repairs && sameJson(before, facts)) return undefined;
    const { realtime: _r, allocatableGpu: _a, handshake: _h, ...rest } = base;
    const registrationChanged = !sameJson(base.registration, registration);
    return {
      ...rest,
      ...facts,
      deleted: false,
      unreadable: base.unreadable?.filter((p) => p.part !== 'registration'),
      ...(rv ? { resourceVersion: rv } : {}),
      registeredAtMs: registrationChanged || base.deleted ? nowMs : (base.registeredAtMs ?? nowMs),
      registrationVersion: registrationChanged || base.deleted ? base.registrationVersion + 1 : base.registrationVersion,
    };
  };
}

/** One node's stored state holds at most MAX_CARDS_PER_NODE cards (docs/state.md, "Size"): more is refused, per node, in words. */
function withinCardBound(registration: NodeRegistration): NodeRegistration {
  if (!registration.registered || registration.devices.length <= MAX_CARDS_PER_NODE) return registration;
  return { registered: false, reason: `registers ${registration.devices.length} cards; one node's stored state holds at most ${MAX_CARDS_PER_NODE}` };
}

interface PodPlan {
  readonly changes: [string, NodeChange][];
  /** Nodes whose lock this pod frees if it holds it (allocation ended, or the pod finished). */
  readonly nodes: readonly string[];
  readonly releasesLock: boolean;
}

/** Which nodes a pod event changes, and how. */
function planPod(ctx: PlanContext, type: WatchEvent['type'], pod: PodObject, uid: string, resend: boolean): PodPlan | { error: string } {
  const annotations = pod.metadata.annotations ?? {};
  const named = annotations[PodAnnotation.VgpuNode];
  // The annotation becomes a node key: a value no node can have names none (and must not reach the store).
  const target = named !== undefined && kubeName.safeParse(named).success ? named : undefined;
  const holders = ctx.holders(uid);
  const phase = pod.status?.phase;
  const finished = type === 'DELETED' || phase === 'Succeeded' || phase === 'Failed';
  const rv = pod.metadata.resourceVersion;
  const ref = { namespace: pod.metadata.namespace, name: pod.metadata.name, uid };

  if (finished) {
    const affected = [...new Set([...holders, ...(target ? [target] : [])])];
    const tombstone: NodeChange = (node, nowMs) => {
      const held = node?.bookings[uid];
      if (!node || held?.state === 'gone' || (!held && node.name !== target)) return undefined;
      // A report older than what the booking last saw cannot end it (e.g. a re-list taken before a later confirmation).
      if (held && isOlder(rv, held.resourceVersion)) return undefined;
      const gone: Booking = { namespace: ref.namespace, name: ref.name, state: 'gone', initCount: 0, initDone: false, uses: [], holdsAppCards: false, origin: held?.origin ?? 'decided', expiresAtMs: nowMs + TOMBSTONE_TTL_MS, ...(rv ? { resourceVersion: rv } : {}), ...(held?.preemptedBy ? { preemptedBy: held.preemptedBy } : {}) };
      return { ...node, bookings: { ...releaseVictimsOf(node.bookings, uid, held), [uid]: gone }, unreadable: withoutBookingPart(node, uid) };
    };
    return { changes: affected.map((node) => [node, tombstone]), nodes: affected, releasesLock: true };
  }

  const bindPhase = annotations[PodAnnotation.BindPhase];
  const releasesLock = bindPhase === BindPhase.Success || bindPhase === BindPhase.Failed;
  const allocation = allocatedDevicesOf(annotations);
  if (named !== undefined && target === undefined && allocation !== undefined) {
    return { error: `pod ${ref.namespace}/${ref.name}: ${PodAnnotation.VgpuNode}: ${JSON.stringify(named.slice(0, 80))} is not a node name` };
  }
  if (!target || allocation === undefined) {
    // Confirmed bookings of a pod whose scheduler-owned annotations are gone: edited away (reported once, counted as decided).
    const removed: NodeChange = (node, _nowMs, notices) => {
      const held = node?.bookings[uid];
      if (!node || held?.state !== 'confirmed' || isOlder(rv, held.resourceVersion)) return undefined;
      const booking = disputed(held, { ...held, ...(rv ? { resourceVersion: rv } : {}) }, annotationChanges(held, node.name, annotations), { pod: ref, node: node.name, resend, rv }, notices);
      return sameJson(held, booking) ? undefined : { ...node, bookings: { ...node.bookings, [uid]: booking } };
    };
    return { changes: holders.map((node): [string, NodeChange] => [node, removed]), nodes: holders, releasesLock };
  }
  const allocated = allocation.text;
  let devices;
  try {
    devices = decodePodDevices(allocated);
  } catch (err) {
    return { error: `pod ${ref.namespace}/${ref.name}: ${allocation.annotation}: ${(err as Error).message}` };
  }
  const initCount = pod.spec?.initContainers?.length ?? 0;
  const initDone = initContainersSucceeded(pod, initCount);
  const facts = {
    ...(rv ? { resourceVersion: rv } : {}),
    ...(bindPhase ? { bindPhase } : {}),
    ...(pod.metadata.deletionTimestamp ? { terminating: true } : {}),
  };
  // Decided (or adopted) elsewhere: the annotation naming another node is not the scheduler's decision.
  const decidedElsewhere = holders.filter((node) => node !== target);

  const confirm: NodeChange = (node, _nowMs, notices) => {
    const base = node ?? emptyLedger(target);
    const held = base.bookings[uid];
    if (held?.state === 'gone' || isOlder(rv, held?.resourceVersion)) return undefined;
    let booking: Booking;
    if (held === undefined) {
      if (decidedElsewhere.length > 0) return undefined;
      // A pod placed before we took over: adopted from its annotations, counted as the cards are really used.
      booking = {
        namespace: ref.namespace,
        name: ref.name,
        state: 'confirmed',
        devices: allocated,
        ...(allocation.parts !== undefined ? { parts: allocation.parts } : {}),
        initCount,
        initDone,
        uses: cardUsesOf(devices, initCount, initDone),
        holdsAppCards: appContainersNeedLock(devices, initCount),
        origin: 'adopted',
        ...facts,
      };
      notices.push({ kind: 'adopted', pod: ref, node: base.name });
    } else if (held.devices === allocated) {
      // Decided ahead and not bound yet (Pending, no bind phase): it stays a reservation, so a decision kube-scheduler never uses expires
      // (docs/relay.md, "Deciding ahead").
      if (held.state === 'reserved' && bindPhase === undefined && (pod.status?.phase ?? 'Pending') === 'Pending' && markedDecision(annotations)?.node === base.name) return undefined;
      const { expiresAtMs: _expiry, resourceVersion: _rv, bindPhase: _bp, terminating: _t, ...kept } = held;
      booking = { ...kept, state: 'confirmed', initDone, uses: held.initDone === initDone ? held.uses : cardUsesOf(devices, held.initCount, initDone), ...facts };
      if (held.state === 'confirmed') booking = disputed(held, booking, annotationChanges(held, base.name, annotations), { pod: ref, node: base.name, resend, rv }, notices);
      // The batch's answer was lost: the adoption it made past capacity is reported again (`IngestOptions.resend`).
      if (resend && held.origin === 'adopted' && rv !== undefined && held.resourceVersion === rv) notices.push({ kind: 'adopted', pod: ref, node: base.name });
    } else if (held.state === 'reserved') {
      // An event from before our patch (or an edit racing it): the reservation stands until the decided annotation is seen.
      return undefined;
    } else {
      // Changed after placement: the decision keeps counting; the change is reported once.
      const { resourceVersion: _rv, bindPhase: _bp, terminating: _t, ...kept } = held;
      booking = disputed(held, { ...kept, ...facts }, annotationChanges(held, base.name, annotations), { pod: ref, node: base.name, resend, rv }, notices);
    }
    if (held && sameJson(held, booking)) return undefined;
    return { ...base, bookings: { ...base.bookings, [uid]: booking }, unreadable: withoutBookingPart(base, uid) };
  };
  // A booking whose node the annotation no longer names only records what changed on the pod (never moves); on a
  // confirmed booking, the edit is reported once. A reservation there is dropped once the pod is bound to the named
  // node (its bind phase set): a batch deciding ahead that booked after the pod's live filter, say (docs/relay.md).
  const follow: NodeChange = (node, _nowMs, notices) => {
    const held = node?.bookings[uid];
    if (!node || !held || held.state === 'gone' || isOlder(rv, held.resourceVersion)) return undefined;
    if (held.state === 'reserved' && bindPhase !== undefined) {
      const { [uid]: _dropped, ...rest } = node.bookings;
      return { ...node, bookings: rest };
    }
    const { resourceVersion: _rv, bindPhase: _bp, terminating: _t, ...kept } = held;
    let booking: Booking = { ...kept, ...facts };
    if (held.state === 'confirmed') booking = disputed(held, booking, annotationChanges(held, node.name, annotations), { pod: ref, node: node.name, resend, rv }, notices);
    return sameJson(held, booking) ? undefined : { ...node, bookings: { ...node.bookings, [uid]: booking } };
  };
  const changes: [string, NodeChange][] = [[target, confirm], ...decidedElsewhere.map((node): [string, NodeChange] => [node, follow])];
  return { changes, nodes: [...new Set([target, ...holders])], releasesLock };
}

/**
 * The scheduler-owned annotations of a pod that no longer say what the scheduler decided for its booking on `node`:
 * `hami.io/vgpu-node` and the device kind's allocated annotation. Those the allocation itself moves on are not
 * compared: `bind-phase`, `bind-time`, `devices-to-allocate`, and the MIG placements, to which HAMi's device plugin
 * adds each instance's identity (docs/devices.md).
 */
function annotationChanges(held: Booking, node: string, annotations: Readonly<Record<string, string>>): AnnotationChange[] {
  const changes: AnnotationChange[] = [];
  const seenNode = annotations[PodAnnotation.VgpuNode];
  if (seenNode !== node) changes.push({ annotation: PodAnnotation.VgpuNode, decided: node, seen: seenNode });
  const kind = bookedKind(held, annotations);
  const seenDevices = annotations[kind.allocatedAnnotation];
  if (seenDevices !== held.devices) changes.push({ annotation: kind.allocatedAnnotation, decided: held.devices ?? '', seen: seenDevices });
  return changes;
}

/** The device kind of a booking: the one whose allocated annotation still holds its devices, else the kind of its first device. */
function bookedKind(held: Booking, annotations: Readonly<Record<string, string>>): DeviceKind {
  const still = DEVICE_KINDS.find((kind) => annotations[kind.allocatedAnnotation] === held.devices);
  if (still !== undefined) return still;
  let type: string | undefined;
  try {
    type = decodePodDevices(held.devices ?? '').flat()[0]?.type;
  } catch {
    type = undefined;
  }
  return (type !== undefined ? deviceKind(type) : undefined) ?? DEFAULT_KIND;
}

/**
 * The booking with its dispute recorded: a change of its scheduler-owned annotations is reported once per distinct
 * change (whichever keys changed), remembered in `disputed`; a resend of the very event that was reported reports it
 * again (`IngestOptions.resend`); annotations back to what was decided clear it, so a later edit is reported anew.
 */
function disputed(
  held: Booking,
  booking: Booking,
  changes: readonly AnnotationChange[],
  context: { readonly pod: PodRef; readonly node: string; readonly resend: boolean; readonly rv: string | undefined },
  notices: PendingNotice[],
): Booking {
  if (changes.length === 0) {
    const { disputed: _d, ...settled } = booking;
    return settled;
  }
  const seen = disputeFingerprint(changes);
  const notice: Notice = { kind: 'annotationsChanged', pod: context.pod, node: context.node, decided: held.devices ?? '', changes };
  if (held.disputed !== seen) {
    notices.push(notice);
    return { ...booking, disputed: seen };
  }
  if (context.resend && context.rv !== undefined && held.resourceVersion === context.rv) notices.push(notice);
  return { ...booking, disputed: seen };
}

/**
 * A short, stable stand-in for what the annotations say now (values may be long; only their change matters). A change
 * of the allocated annotation alone keeps the form earlier releases stored (the fingerprint of its value), so an edit
 * reported before an upgrade is not reported again.
 */
function disputeFingerprint(changes: readonly AnnotationChange[]): string {
  const only = changes.length === 1 ? changes[0] : undefined;
  const text =
    only !== undefined && only.annotation !== PodAnnotation.VgpuNode && only.seen !== undefined && DEVICE_KINDS.some((kind) => kind.allocatedAnnotation === only.annotation)
      ? only.seen
      : JSON.stringify(changes.map((change) => [change.annotation, change.seen ?? null]));
  return createHash('sha256').update(text).digest('base64url').slice(0, 16);
}

/**
 * The notices of a node's changes once all are applied: a pod adopted from its annotations is reported when the cards
 * its booking takes are past their capacity on the node as it now is (nothing while the node is not registered).
 */
export function settleNotices(pending: readonly PendingNotice[], node: NodeLedger | undefined, nowMs: number): Notice[] {
  const notices: Notice[] = [];
  for (const notice of pending) {
    if (notice.kind !== 'adopted') notices.push(notice);
    else if (node !== undefined) {
      const cards = pastCapacity(node, notice.pod.uid, nowMs);
      if (cards.length > 0) notices.push({ kind: 'adoptedPastCapacity', pod: notice.pod, node: notice.node, cards });
    }
  }
  return notices;
}

/** The cards the booking of `uid` takes on `node` that are past their capacity (none while the node is not registered). */
function pastCapacity(node: NodeLedger, uid: string, nowMs: number): OvercommittedCard[] {
  const booking = node.bookings[uid];
  if (booking === undefined || node.deleted || node.registration?.registered !== true) return [];
  const taken = new Set(booking.uses.map((use) => use.uuid));
  return overcommittedCards(node.registration.devices, usageOf(node, nowMs)).filter((card) => taken.has(card.uuid));
}

function withoutBookingPart(node: NodeLedger, uid: string): NodeLedger['unreadable'] {
  const remaining = node.unreadable?.filter((p) => p.part !== `booking ${uid}`);
  return remaining && remaining.length > 0 ? remaining : undefined;
}

function initContainersSucceeded(pod: PodObject, initCount: number): boolean {
  const statuses = pod.status?.initContainerStatuses ?? [];
  return initCount > 0 && statuses.length === initCount && statuses.every((s) => s.state?.terminated?.exitCode === 0);
}

/**
 * Equality of stored and fresh facts (JSON data) as their JSON would compare, key order aside (it may differ after a
 * round trip through the store): a property whose value is undefined is absent, and one in an array is null.
 * Walked, not serialised: it runs for every node an event batch touches, on nodes of a few kilobytes.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i] ?? null, b[i] ?? null)) return false;
    return true;
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  let defined = 0;
  for (const key of Object.keys(left)) {
    const value = left[key];
    if (value === undefined) continue;
    defined += 1;
    if (!Object.hasOwn(right, key) || !sameJson(value, right[key])) return false;
  }
  for (const key of Object.keys(right)) if (right[key] !== undefined) defined -= 1;
  return defined === 0;
}

function describe(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : 'event'}: ${i.message}`)
    .join('; ');
}
