/**
 * `/cluster/events` (docs/api.md): Nodes, Pods and ResourceQuotas forwarded by the relay keep the ledger in
 * step with the cluster. Each event is validated on its own; the valid ones are applied to the nodes they
 * touch (read once per batch, written once per node, in parallel), and the batch's changes are announced in
 * the change journal so warm views catch up. One object never fails the batch: a node that cannot be written
 * rejects only the events that touched it; one that cannot be written for now (contention, throttling) lets the
 * rest land and be journaled, and the batch is answered 503 so the relay sends it again. Idempotent and
 * order-tolerant: an older resourceVersion never overwrites a newer one, deleted pods stay deleted.
 *
 * Bookings belong to the scheduler (docs/state.md): what a pod holds is what the filter decided; a later
 * change of its scheduler-owned annotations never changes what the ledger counts. Each distinct change is logged and
 * reported as one Warning event, remembered with the booking. Pods placed before we took over (no booking anywhere)
 * are adopted from their annotations, counted as the cards are really used; an adoption that takes a card past its
 * capacity is raised (Warnings on the pod and the Node, a log line, a metric).
 */
import { markedDecision } from '../wire/decidedAhead';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { CapacityDimension } from '../engine/capacity';
import { allocatedDevicesOf, DEVICE_KINDS, deviceKind, type DeviceKind } from '../engine/devices';
import { nvidia } from '../engine/devices/nvidia';
import { recordAdoptedPastCapacity } from '../diagnostics/decisionLogs';
import { BindPhase, decodePodDevices, PodAnnotation } from '../engine/podAnnotations';
import { quantityAsInt64 } from '../engine/quantity';
import { HandshakeAnnotation, parseNodeRegistration, parseRealtimeReport, RealtimeAnnotation } from '../engine/registration';
import type { NodeRegistration } from '../engine/types';
import { ContentionError, DomainError, StoreRejectedError } from '../errors';
import {
  appContainersNeedLock,
  backoffMs,
  bookingCounts,
  cardUsesOf,
  emptyLedger,
  isOlder,
  lockEndsWithBooking,
  MAX_CARDS_PER_NODE,
  NODE_LOCK_ANNOTATION,
  nextLedger,
  nodeLockHolder,
  overcommittedCards,
  TOMBSTONE_TTL_MS,
  usageOf,
  type Booking,
  type NodeLedger,
  type OvercommittedCard,
  type QuotaLedger,
} from './ledger';
import { nodeEvent, nudges, podEvent, type Effect } from './effects';
import { forEachAtMost } from '../concurrency';
import type { ControlDeps } from './deps';
import { kubeName } from '../wire/names';
import { watchEventSchema, type CompleteList, type NodeObject, type PodObject, type QuotaObject, type WatchEvent } from '../wire/clusterEvents';


export interface IngestOptions {
  /**
   * The batch was sent before and its answer was lost. Its writes may have landed then, so a resend finds nothing
   * to change and would notice nothing: a changed scheduler-owned annotation it finds recorded for this very event
   * is reported again (a Warning twice beats none; Kubernetes counts repeats of one event).
   */
  readonly resend?: boolean;
}

export interface ClusterEventsAnswer {
  readonly accepted: number;
  readonly rejected: readonly { readonly index: number; readonly error: string }[];
  /** The journal entry this batch produced: a filter's view must include it (the relay sends it back as `X-Hami-Min-View-Seq`). */
  readonly viewSeq?: number;
  /** Kubernetes writes the relay applies (Warning events about changed scheduler-owned annotations). */
  readonly effects: readonly Effect[];
}

/** What an event does to one node; must be safe to re-run on a fresher node. */
type NodeChange = (node: NodeLedger | undefined, nowMs: number, notices: PendingNotice[]) => NodeLedger | undefined;

/**
 * What a change notes while the node's changes are applied: a notice, or a pod adopted from its annotations, whose
 * cards are judged once all of the node's changes are (`settleNotices`): a batch may carry the pod before its Node.
 */
type PendingNotice = Notice | { readonly kind: 'adopted'; readonly pod: PodRef; readonly node: string };

/** Something an applied change wants reported (logged, Warning events, a metric): `reportNotice`. */
type Notice =
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

interface PodRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** One scheduler-owned annotation whose value is no longer what the scheduler decided. */
interface AnnotationChange {
  readonly annotation: string;
  readonly decided: string;
  /** Undefined: the annotation was removed. */
  readonly seen: string | undefined;
}

interface PlannedChange {
  readonly index: number;
  readonly change: NodeChange;
}

const MAX_WRITE_ROUNDS = 24;
/** Writes of one batch in flight at once (nodes, namespaces' quotas, locks): each is its own item. */
const PARALLEL_WRITES = 16;

export async function ingestClusterEvents(deps: ControlDeps, events: readonly unknown[], complete: readonly CompleteList[] = [], options: IngestOptions = {}): Promise<ClusterEventsAnswer> {
  const rejected: { index: number; error: string }[] = [];
  const valid: { index: number; event: WatchEvent }[] = [];
  events.forEach((raw, index) => {
    const parsed = watchEventSchema.safeParse(raw);
    if (parsed.success) valid.push({ index, event: parsed.data });
    else rejected.push({ index, error: describe(parsed.error) });
  });
  if (complete.length > 0) await deps.view.prepare();
  for (const list of complete) valid.push(...(await vanished(deps, list)).map((event) => ({ index: -1, event })));
  if (valid.length === 0) return { accepted: 0, rejected, effects: [] };

  const changes = new Map<string, PlannedChange[]>();
  const lockHolders = new Map<string, Set<string>>();
  /** Per node, the lock annotation its latest forwarded version carries (null: none). */
  const lockNotes = new Map<string, string | null>();
  const quotaEvents: { index: number; type: WatchEvent['type']; quota: QuotaObject }[] = [];
  const add = (node: string, index: number, change: NodeChange) => changes.set(node, [...(changes.get(node) ?? []), { index, change }]);
  /** Nodes a Node event reports present: listed in the directory even when nothing changed (a retried batch whose
   * directory write failed after its node writes lists them then). */
  const present = new Set<string>();
  const needsView = valid.some(({ event }) => event.object.kind === 'Pod');
  if (needsView) await deps.view.prepare();

  for (const { index, event } of valid) {
    const object = event.object;
    if (object.kind === 'Node') {
      add(object.metadata.name, index, nodeChange(deps, event.type, object));
      if (event.type !== 'DELETED') {
        lockNotes.set(object.metadata.name, object.metadata.annotations?.[NODE_LOCK_ANNOTATION] ?? null);
        present.add(object.metadata.name);
      } else present.delete(object.metadata.name);
    }
    else if (object.kind === 'ResourceQuota') quotaEvents.push({ index, type: event.type, quota: object });
    else {
      const uids = object.metadata.uid !== undefined ? [object.metadata.uid] : event.type === 'DELETED' ? deps.view.uidsByName(object.metadata.namespace, object.metadata.name) : undefined;
      if (uids === undefined) {
        rejected.push({ index, error: 'object.metadata.uid: required for ADDED and MODIFIED pods' });
        continue;
      }
      for (const uid of uids) {
        const planned = planPod(deps, event.type, object, uid, options.resend === true);
        if ('error' in planned) {
          rejected.push({ index, error: planned.error });
          break;
        }
        for (const [node, change] of planned.changes) add(node, index, change);
        if (planned.releasesLock) for (const node of planned.nodes) lockHolders.set(node, new Set([...(lockHolders.get(node) ?? []), uid]));
      }
    }
  }

  const touched = new Set([...changes.keys(), ...lockHolders.keys(), ...lockNotes.keys()]);
  const current = touched.size > 0 ? await deps.ledger.readNodes([...touched], { consistent: true }) : new Map<string, NodeLedger>();

  const written: Record<string, number> = {};
  /** Nodes whose lock ended in the same write as its holder's booking (no waiters to nudge). */
  const locksEndedWithBookings: string[] = [];
  const notices: Notice[] = [];
  const created: string[] = [];
  const removed: string[] = [];
  /** A node whose write failed for now (contention, throttling): the rest of the batch still lands and is journaled. */
  let retryLater: unknown;
  await forEachAtMost([...changes], PARALLEL_WRITES, async ([node, planned]) => {
    try {
      const outcome = await writeNode(deps, node, current.get(node), planned, lockHolders.get(node));
      notices.push(...outcome.notices);
      if (outcome.lockEnded) locksEndedWithBookings.push(node);
      if (!outcome.node) {
        if (present.has(node) && current.get(node)?.deleted === false) created.push(node);
        return;
      }
      written[node] = outcome.node.version;
      deps.view.accept(outcome.node);
      // New, or back after a deletion (its item stayed, marked deleted): listed again.
      if (!outcome.node.deleted && (current.get(node)?.deleted ?? true)) created.push(node);
      if (outcome.node.deleted && current.get(node)?.deleted !== true) removed.push(node);
    } catch (err) {
      if (!isPermanent(err)) {
        retryLater ??= err;
        return;
      }
      // A node that cannot take these changes for good rejects only the events that touched it.
      deps.logger.warn('NodeEventsRejected', { node, error: (err as Error).message });
      for (const { index } of planned) rejected.push({ index, error: `node ${node}: ${(err as Error).message}` });
    }
  });

  const namespaces: string[] = [];
  // One namespace's quotas are one item under one version: its events go in order, namespaces side by side.
  const quotasByNamespace = new Map<string, (typeof quotaEvents)[number][]>();
  for (const event of quotaEvents) {
    const namespace = event.quota.metadata.namespace;
    const inNamespace = quotasByNamespace.get(namespace);
    if (inNamespace) inNamespace.push(event);
    else quotasByNamespace.set(namespace, [event]);
  }
  await forEachAtMost([...quotasByNamespace.values()], PARALLEL_WRITES, async (inNamespace) => {
    for (const { index, type, quota } of inNamespace) {
      try {
        if (await writeQuota(deps, type, quota)) {
          namespaces.push(quota.metadata.namespace);
          deps.view.forgetQuota(quota.metadata.namespace);
        }
      } catch (err) {
        if (!isPermanent(err)) {
          retryLater ??= err;
          continue;
        }
        rejected.push({ index, error: (err as Error).message });
      }
    }
  });
  // Locks once the batch's writes have landed: a batch answered 503 carries no Effects, so a lock freed then would
  // take its waiters' nudges with it (the resend would find it free and nudge nobody). The resend frees it instead.
  const locks = retryLater === undefined ? await settleLocks(deps, current, lockHolders, lockNotes, new Set(locksEndedWithBookings)) : { effects: [], changed: [] };
  retryLater ??= locks.failure;
  const lockChanged = [...locksEndedWithBookings, ...locks.changed];
  if (created.length > 0) await deps.ledger.addToDirectory(created);
  if (removed.length > 0) await deps.ledger.removeFromDirectory(removed);
  const viewSeq =
    Object.keys(written).length + namespaces.length + lockChanged.length > 0
      ? await deps.ledger.appendJournal({ atMs: deps.runtime.clock.now(), nodes: written, namespaces: [...new Set(namespaces)], ...(lockChanged.length > 0 ? { locks: lockChanged } : {}) })
      : undefined;
  // Logged now, even when the batch is answered 503: its resend (marked `resend`) answers the Warnings again.
  const noticeEffects = notices.flatMap((n) => reportNotice(deps, n));
  // What was written is listed and journaled; the relay sends the batch again for the rest (applying it twice changes nothing).
  if (retryLater !== undefined) throw retryLater;

  const unique = [...new Map(rejected.filter((r) => r.index >= 0).map((r) => [r.index, r])).values()].sort((a, b) => a.index - b.index);
  return { accepted: events.length - unique.length, rejected: unique, ...(viewSeq !== undefined ? { viewSeq } : {}), effects: [...locks.effects, ...noticeEffects] };
}

/**
 * Ends the locks these events end, and follows the Node annotation that mirrors each lock: seen naming the
 * holder, the lock is marked mirrored; a mirrored lock whose annotation is gone (the device plugin deleted it
 * when the allocation ended) is released. Pods that waited for a lock that ends are nudged. A lock that cannot
 * be written for now is left for the batch's resend (`failure`); the others are still settled and journaled.
 */
async function settleLocks(
  deps: ControlDeps,
  current: ReadonlyMap<string, NodeLedger>,
  holdersDone: ReadonlyMap<string, ReadonlySet<string>>,
  lockNotes: ReadonlyMap<string, string | null>,
  /** Nodes whose lock the batch's node writes already ended (`writeNode`): nothing left to settle there. */
  endedWithBookings: ReadonlySet<string>,
): Promise<{ effects: Effect[]; changed: string[]; failure?: unknown }> {
  const effects: Effect[] = [];
  /** Nodes whose lock these events changed: the journal names them, so every view learns of it (lock-aware placement). */
  const changed: string[] = [];
  let failure: unknown;
  // Each node's lock is its own item: they are settled side by side.
  await forEachAtMost([...new Set([...holdersDone.keys(), ...lockNotes.keys()])], PARALLEL_WRITES, async (name) => {
    const lock = current.get(name)?.lock;
    if (!lock || endedWithBookings.has(name)) return;
    try {
      let release = holdersDone.get(name)?.has(lock.holderUid) === true;
      const note = lockNotes.get(name);
      if (!release && note !== undefined) {
        if (nodeLockHolder(note ?? undefined) === lock.holder) {
          if (!lock.mirrored && (await deps.ledger.markLockMirrored(name, lock.holderUid)).ok) changed.push(name);
        } else if (lock.mirrored) {
          release = true;
        }
      }
      if (!release) return;
      const released = await deps.ledger.releaseLock(name, lock.holderUid);
      if (!released.ok) return;
      changed.push(name);
      effects.push(...nudges(released.released.waiters, deps.runtime.clock.now()));
    } catch (err) {
      failure ??= err;
    }
  });
  return { effects, changed, ...(failure !== undefined ? { failure } : {}) };
}

/**
 * What a complete list says was deleted unseen, as DELETED events: ledger objects of that kind absent from the
 * list and not newer than it. A booking or node changed after the list was taken is left alone (the list
 * could not know it); reservations are never dropped here (they expire on their own).
 */
async function vanished(deps: ControlDeps, list: CompleteList): Promise<WatchEvent[]> {
  const live = new Set(list.keys);
  const notNewer = (rv: string | undefined) => rv === undefined || !isOlder(list.resourceVersion, rv);
  const events: WatchEvent[] = [];
  const gone = { kind: list.kind, apiVersion: 'v1' as const, metadata: { resourceVersion: list.resourceVersion } };
  switch (list.kind) {
    case 'Pod':
      for (const node of deps.view.all()) {
        for (const [uid, booking] of Object.entries(node.bookings)) {
          if (booking.state !== 'confirmed' || live.has(uid) || !notNewer(booking.resourceVersion)) continue;
          events.push({ type: 'DELETED', object: { ...gone, kind: 'Pod', metadata: { ...gone.metadata, name: booking.name, namespace: booking.namespace, uid, annotations: { [PodAnnotation.VgpuNode]: node.name } } } });
        }
      }
      break;
    case 'Node':
      for (const node of deps.view.all()) {
        if (node.deleted || live.has(node.name) || !notNewer(node.resourceVersion)) continue;
        events.push({ type: 'DELETED', object: { ...gone, kind: 'Node', metadata: { ...gone.metadata, name: node.name } } });
      }
      break;
    case 'ResourceQuota':
      for (const namespace of await deps.view.quotaNamespaces()) {
        const quota = await deps.view.quota(namespace);
        for (const [name, limits] of Object.entries(quota?.quotas ?? {})) {
          if (limits.deleted || live.has(`${namespace}/${name}`) || !notNewer(limits.resourceVersion)) continue;
          events.push({ type: 'DELETED', object: { ...gone, kind: 'ResourceQuota', metadata: { ...gone.metadata, name, namespace } } });
        }
      }
      break;
  }
  if (events.length > 0) deps.logger.info('ListedObjectsGone', { kind: list.kind, resourceVersion: list.resourceVersion, gone: events.length });
  return events;
}

function isPermanent(err: unknown): boolean {
  // NodeItemTooLargeError is a StoreRejectedError: permanent, and its message names the node and the sizes.
  return err instanceof StoreRejectedError || (err instanceof DomainError && err.status < 500);
}

/**
 * Applies the changes to the node and writes it: bookings whose usage is unchanged are replaced one by one
 * (they do not race reservations); anything else rewrites the node under its version. A lost race re-reads
 * the node and re-applies. A lock that a pod of `endingLocks` holds, with no pod waiting for it, ends in the
 * same write as that pod's booking (`lockEnded`), which saves the lock's own write.
 */
async function writeNode(
  deps: ControlDeps,
  name: string,
  known: NodeLedger | undefined,
  planned: readonly PlannedChange[],
  endingLocks: ReadonlySet<string> = new Set(),
): Promise<{ node?: NodeLedger; notices: Notice[]; lockEnded?: true }> {
  let current = known;
  let lockEnded = false;
  for (let round = 0; round < MAX_WRITE_ROUNDS; round++) {
    const nowMs = deps.runtime.clock.now();
    const pending: PendingNotice[] = [];
    let next: NodeLedger | undefined;
    for (const { change } of planned) next = change(next ?? current, nowMs, pending) ?? next;
    const notices = settleNotices(pending, next ?? current, nowMs);
    // Nothing to write; a resend may still notice what this event changed before.
    if (!next) return { notices };
    const replacements = current ? bookingOnlyChanges(current, next, nowMs) : undefined;
    if (current && replacements) {
      let latest: NodeLedger | undefined;
      let all = true;
      for (const { uid, booking, expected } of replacements) {
        const endLock: boolean = !lockEnded && endingLocks.has(uid) && lockEndsWithBooking(current.lock, uid);
        const write = await deps.ledger.replaceBooking(name, uid, booking, expected, endLock);
        if (write.ok) {
          latest = write.node;
          lockEnded ||= endLock;
        } else all = false;
      }
      if (all && latest) return { node: latest, notices, ...(lockEnded ? { lockEnded: true as const } : {}) };
    } else {
      const write = await deps.ledger.putNode(nextLedger(next, nowMs), current ? current.version : null);
      if (write.ok) return { node: write.node, notices, ...(lockEnded ? { lockEnded: true as const } : {}) };
      // The refusal may carry the node as it is now (not on dynalite): no read needed then.
      if (write.current !== undefined) {
        current = write.current;
        await deps.runtime.sleep(backoffMs(deps.runtime.random(), round));
        continue;
      }
    }
    current = (await deps.ledger.readNodes([name], { consistent: true })).get(name);
    await deps.runtime.sleep(backoffMs(deps.runtime.random(), round));
  }
  throw new ContentionError(`could not apply cluster events to node ${name}`);
}

/**
 * When `next` differs from `current` only in existing bookings whose card usage is the same, those bookings
 * (to write one by one); otherwise undefined. Expired reservations do not count as differences.
 */
function bookingOnlyChanges(current: NodeLedger, next: NodeLedger, nowMs: number): { uid: string; booking: Booking; expected: Booking }[] | undefined {
  const { bookings: currentBookings, version: _cv, counters: _cc, lock: _cl, unreadable: _cu, ...currentRest } = current;
  const { bookings: nextBookings, version: _nv, counters: _nc, lock: _nl, unreadable: _nu, ...nextRest } = next;
  if (!sameJson(currentRest, nextRest)) return undefined;
  const changed: { uid: string; booking: Booking; expected: Booking }[] = [];
  for (const [uid, booking] of Object.entries(nextBookings)) {
    const expected = currentBookings[uid];
    if (expected === booking) continue;
    if (!expected || !bookingCounts(expected, nowMs) || !bookingCounts(booking, nowMs)) return undefined;
    if (!sameJson(expected.uses, booking.uses) || expected.holdsAppCards !== booking.holdsAppCards) return undefined;
    changed.push({ uid, booking, expected });
  }
  for (const uid of Object.keys(currentBookings)) if (nextBookings[uid] === undefined) return undefined;
  return changed;
}

function nodeChange(deps: ControlDeps, type: WatchEvent['type'], object: NodeObject): NodeChange {
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
    const registration = withinCardBound(parseNodeRegistration(object, deps.config.engine));
    const realtime = parseRealtimeReport(annotations[RealtimeAnnotation]);
    const allocatable = object.status?.allocatable?.[deps.config.engine.resourceCountName];
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
function planPod(deps: ControlDeps, type: WatchEvent['type'], pod: PodObject, uid: string, resend: boolean): PodPlan | { error: string } {
  const annotations = pod.metadata.annotations ?? {};
  const named = annotations[PodAnnotation.VgpuNode];
  // The annotation becomes a node key: a value no node can have names none (and must not reach the store).
  const target = named !== undefined && kubeName.safeParse(named).success ? named : undefined;
  const holders = deps.view.holders(uid);
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
      const gone: Booking = { namespace: ref.namespace, name: ref.name, state: 'gone', initCount: 0, initDone: false, uses: [], holdsAppCards: false, origin: held?.origin ?? 'decided', expiresAtMs: nowMs + TOMBSTONE_TTL_MS, ...(rv ? { resourceVersion: rv } : {}) };
      return { ...node, bookings: { ...node.bookings, [uid]: gone }, unreadable: withoutBookingPart(node, uid) };
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
  // confirmed booking, the edit is reported once.
  const follow: NodeChange = (node, _nowMs, notices) => {
    const held = node?.bookings[uid];
    if (!node || !held || held.state === 'gone' || isOlder(rv, held.resourceVersion)) return undefined;
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
  return (type !== undefined ? deviceKind(type) : undefined) ?? nvidia;
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
function settleNotices(pending: readonly PendingNotice[], node: NodeLedger | undefined, nowMs: number): Notice[] {
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

/** An annotation value as a Warning or a log line quotes it: cut, since a pod's annotations may be long. */
function quoted(value: string | undefined, max: number): string {
  if (value === undefined) return '(removed)';
  return JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value);
}

function reportNotice(deps: ControlDeps, notice: Notice): Effect[] {
  const pod = `${notice.pod.namespace}/${notice.pod.name}`;
  switch (notice.kind) {
    case 'annotationsChanged': {
      const keys = notice.changes.map((change) => change.annotation);
      const allocated = notice.changes.find((change) => change.annotation !== PodAnnotation.VgpuNode);
      deps.logger.warn('SchedulerAnnotationsChanged', {
        pod,
        node: notice.node,
        annotations: keys.join(','),
        decided: notice.decided,
        ...(allocated !== undefined ? { seen: allocated.seen?.slice(0, 512) ?? null } : {}),
        ...(keys.includes(PodAnnotation.VgpuNode) ? { seenNode: notice.changes.find((change) => change.annotation === PodAnnotation.VgpuNode)?.seen?.slice(0, 253) ?? null } : {}),
      });
      const what = notice.changes.map((change) => `${change.annotation} (now ${quoted(change.seen, 80)})`).join(', ');
      return [
        podEvent(
          notice.pod,
          'Warning',
          'SchedulerAnnotationsChanged',
          `${keys.length === 1 ? 'A scheduler-owned annotation was' : 'Scheduler-owned annotations were'} changed after the scheduler placed this pod: ${what}; the scheduler keeps counting the devices it decided on node ${notice.node} (${notice.decided}). Only the scheduler and the device plugin may change scheduler-owned annotations.`,
        ),
      ];
    }
    case 'adoptedPastCapacity': {
      deps.logger.warn('AdoptedPastCapacity', {
        pod,
        node: notice.node,
        cards: notice.cards.map((card) => card.uuid).join(','),
        over: [...new Set(notice.cards.flatMap((card) => card.over))].join(','),
        usage: notice.cards.map((card) => ({ uuid: card.uuid, used: card.used, count: card.count, usedmem: card.usedmem, devmem: card.devmem, usedcores: card.usedcores, devcore: card.devcore })),
      });
      recordAdoptedPastCapacity(deps.metrics, notice.cards.length);
      const cards = notice.cards.map((card) => `${card.uuid} (${overText(card)})`).join(', ');
      return [
        podEvent(
          notice.pod,
          'Warning',
          'AdoptedPastCapacity',
          `This pod was not placed by the scheduler; its annotations claim cards other pods already hold, and counting it takes them past their capacity on node ${notice.node}: ${cards}. No new pod is placed on those cards until they are back within it.`,
        ),
        nodeEvent(
          notice.node,
          'Warning',
          'AdoptedPastCapacity',
          `Pod ${pod}, not placed by the scheduler, claims cards past their capacity: ${cards}. No new pod is placed on those cards until they are back within it.`,
        ),
      ];
    }
  }
}

/** `memory 32384/16384 MiB, slots 2/10` for the dimensions a card is over in. */
function overText(card: OvercommittedCard): string {
  return card.over
    .map((dimension) => {
      switch (dimension) {
        case CapacityDimension.Slots:
          return `slots ${card.used}/${card.count}`;
        case CapacityDimension.Memory:
          return `memory ${card.usedmem}/${card.devmem} MiB`;
        case CapacityDimension.Cores:
          return `cores ${card.usedcores}/${card.devcore}%`;
      }
    })
    .join(', ');
}

function initContainersSucceeded(pod: PodObject, initCount: number): boolean {
  const statuses = pod.status?.initContainerStatuses ?? [];
  return initCount > 0 && statuses.length === initCount && statuses.every((s) => s.state?.terminated?.exitCode === 0);
}

/** Writes one ResourceQuota's limits; true when the namespace's quotas changed. */
async function writeQuota(deps: ControlDeps, type: WatchEvent['type'], quota: QuotaObject): Promise<boolean> {
  const ns = quota.metadata.namespace;
  const hard = quota.spec?.hard ?? {};
  const mem = quantityAsInt64(hard[`limits.${deps.config.engine.resourceMemoryName}`]);
  const cores = quantityAsInt64(hard[`limits.${deps.config.engine.resourceCoreName}`]);
  const rv = quota.metadata.resourceVersion;
  for (let round = 0; round < MAX_WRITE_ROUNDS; round++) {
    const current = await deps.ledger.readQuota(ns);
    const existing = current?.quotas[quota.metadata.name];
    if (existing && isOlder(rv, existing.resourceVersion)) return false;
    const limits =
      type === 'DELETED'
        ? { deleted: true, ...(rv ? { resourceVersion: rv } : {}) }
        : { ...(mem !== undefined ? { mem } : {}), ...(cores !== undefined ? { cores } : {}), ...(rv ? { resourceVersion: rv } : {}) };
    if (existing && sameJson(existing, limits)) return false;
    const next: QuotaLedger = { version: (current?.version ?? 0) + 1, quotas: { ...(current?.quotas ?? {}), [quota.metadata.name]: limits } };
    if (await deps.ledger.putQuota(ns, next, current ? current.version : null)) return true;
    await deps.runtime.sleep(backoffMs(deps.runtime.random(), round));
  }
  throw new ContentionError(`could not apply quota ${ns}/${quota.metadata.name}`);
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
