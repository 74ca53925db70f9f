/**
 * `/cluster/events` (docs/api.md): Nodes, Pods and ResourceQuotas forwarded by the relay keep the ledger in
 * step with the cluster. Each event is validated on its own and planned per node (./clusterEventsPlan.ts, pure);
 * here the plans are applied to the nodes they touch (read once per batch, written once per node, in parallel),
 * locks are settled, and the batch's changes are announced in the change journal so warm views catch up. One object
 * never fails the batch: a node that cannot be written rejects only the events that touched it; one that cannot be
 * written for now (contention, throttling) lets the rest land and be journaled, and the batch is answered 503 so the
 * relay sends it again. Idempotent and order-tolerant: an older resourceVersion never overwrites a newer one, deleted
 * pods stay deleted.
 *
 * Bookings belong to the scheduler (docs/state.md): what a pod holds is what the filter decided; a later
 * change of its scheduler-owned annotations never changes what the ledger counts. Each distinct change is logged and
 * reported as one Warning event, remembered with the booking. Pods placed before we took over (no booking anywhere)
 * are adopted from their annotations, counted as the cards are really used; an adoption that takes a card past its
 * capacity is raised (Warnings on the pod and the Node, a log line, a metric).
 */
import { CapacityDimension } from '../engine/capacity';
import { recordAdoptedPastCapacity } from '../diagnostics/decisionLogs';
import { PodAnnotation } from '../engine/podAnnotations';
import { quantityAsInt64 } from '../engine/quantity';
import { ContentionError, DomainError, StoreRejectedError } from '../errors';
import { backoffMs, bookingCounts, isOlder, lockEndsWithBooking, nextLedger, type Booking, type NodeLedger, type OvercommittedCard, type QuotaLedger } from './ledger';
import { clearLockAnnotation, clearLockMirror, nodeEvent, nudges, podEvent, type Effect } from './effects';
import { preemptorsReady } from './preemption';
import { forEachAtMost } from '../concurrency';
import type { ControlDeps } from './deps';
import type { CompleteList, QuotaObject, WatchEvent } from '../wire/clusterEvents';
import { parseEvents, planClusterEvents, sameJson, settleLock, settleNotices, staleLockMirror, type LockNote, type Notice, type PendingNotice, type PlannedChange, type PlanContext, type QuotaEvent } from './clusterEventsPlan';

export { sameJson } from './clusterEventsPlan';

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

const MAX_WRITE_ROUNDS = 24;
/** Writes of one batch in flight at once (nodes, namespaces' quotas, locks): each is its own item. */
const PARALLEL_WRITES = 16;

export async function ingestClusterEvents(deps: ControlDeps, events: readonly unknown[], complete: readonly CompleteList[] = [], options: IngestOptions = {}): Promise<ClusterEventsAnswer> {
  const parsed = parseEvents(events);
  const valid = [...parsed.valid];
  if (complete.length > 0) await deps.view.prepare();
  for (const list of complete) valid.push(...(await vanished(deps, list)).map((event) => ({ index: -1, event })));
  if (valid.length === 0) return { accepted: 0, rejected: parsed.rejected, effects: [] };
  if (valid.some(({ event }) => event.object.kind === 'Pod')) await deps.view.prepare();
  const view = deps.view;
  const context: PlanContext = { engine: deps.config.engine, holders: (uid) => view.holders(uid), uidsByName: (namespace, name) => view.uidsByName(namespace, name) };
  const { changes, lockHolders, lockNotes, quotaEvents, present, rejected: planRejected } = planClusterEvents(context, valid, options.resend === true);
  const rejected = [...parsed.rejected, ...planRejected];

  const touched = new Set([...changes.keys(), ...lockHolders.keys(), ...lockNotes.keys()]);
  const current = touched.size > 0 ? await deps.ledger.readNodes([...touched], { consistent: true }) : new Map<string, NodeLedger>();

  const written: Record<string, number> = {};
  /** Nodes whose lock ended in the same write as its holder's booking (no waiters to nudge). */
  const locksEndedWithBookings: string[] = [];
  const notices: Notice[] = [];
  /** Lock annotations to clear for locks that ended with their holder's booking. */
  const mirrorEffects: Effect[] = [];
  const created: string[] = [];
  const removed: string[] = [];
  /** Preemptors whose last victim left with these writes (docs/preemption.md). */
  const preemptorNudges: Effect[] = [];
  /** A node whose write failed for now (contention, throttling): the rest of the batch still lands and is journaled. */
  let retryLater: unknown;
  await forEachAtMost([...changes], PARALLEL_WRITES, async ([node, planned]) => {
    try {
      const known = current.get(node);
      const outcome = await writeNode(deps, node, known, planned, lockHolders.get(node));
      notices.push(...outcome.notices);
      if (outcome.lockEnded) {
        locksEndedWithBookings.push(node);
        // The mirror follows the lock: the lock that ended is the one read (the write was guarded by its holder).
        if (known?.lock !== undefined && lockHolders.get(node)?.has(known.lock.holderUid) === true) mirrorEffects.push(...mirrorClear(node, known.lock, lockNotes.get(node)));
      }
      if (!outcome.node) {
        if (present.has(node) && current.get(node)?.deleted === false) created.push(node);
        return;
      }
      written[node] = outcome.node.version;
      deps.view.accept(outcome.node);
      preemptorNudges.push(...preemptorsReady(current.get(node), outcome.node, deps.runtime.clock.now()));
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
  const quotasByNamespace = new Map<string, QuotaEvent[]>();
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
  return { accepted: events.length - unique.length, rejected: unique, ...(viewSeq !== undefined ? { viewSeq } : {}), effects: [...mirrorEffects, ...locks.effects, ...noticeEffects, ...preemptorNudges] };
}

/** The guarded clear of a lock's annotation, unless the batch shows the annotation gone already. */
function mirrorClear(node: string, lock: NonNullable<NodeLedger['lock']>, note: LockNote | undefined): Effect[] {
  const settled = settleLock(lock, true, note);
  return settled.action === 'release' && settled.clearMirror ? [clearLockMirror(node, lock)] : [];
}

/**
 * Ends the locks these events end, and follows the Node annotation that mirrors each lock (`settleLock`): seen
 * naming the holder, the lock is marked mirrored; a mirrored lock whose annotation is gone (the device plugin deleted
 * it when the allocation ended) is released. A lock ended otherwise has its annotation cleared (guarded by its value).
 * Pods that waited for a lock that ends are nudged. A lock that cannot
 * be written for now is left for the batch's resend (`failure`); the others are still settled and journaled.
 */
async function settleLocks(
  deps: ControlDeps,
  current: ReadonlyMap<string, NodeLedger>,
  holdersDone: ReadonlyMap<string, ReadonlySet<string>>,
  lockNotes: ReadonlyMap<string, LockNote>,
  /** Nodes whose lock the batch's node writes already ended (`writeNode`): nothing left to settle there. */
  endedWithBookings: ReadonlySet<string>,
): Promise<{ effects: Effect[]; changed: string[]; failure?: unknown }> {
  const effects: Effect[] = [];
  /** Nodes whose lock these events changed: the journal names them, so every view learns of it (lock-aware placement). */
  const changed: string[] = [];
  let failure: unknown;
  // Each node's lock is its own item: they are settled side by side.
  await forEachAtMost([...new Set([...holdersDone.keys(), ...lockNotes.keys()])], PARALLEL_WRITES, async (name) => {
    // A Node still naming a pod whose lock is over (ended by an earlier batch whose answer was lost, or before this
    // release kept the mirror): cleared, guarded by the very value seen.
    const stale = staleLockMirror(current.get(name), lockNotes.get(name), holdersDone.get(name));
    if (stale !== undefined) effects.push(clearLockAnnotation(name, stale));
    const lock = current.get(name)?.lock;
    if (!lock || endedWithBookings.has(name)) return;
    try {
      const note = lockNotes.get(name);
      const settled = settleLock(lock, holdersDone.get(name)?.has(lock.holderUid) === true, note);
      if (settled.action === 'markMirrored') {
        if ((await deps.ledger.markLockMirrored(name, lock.holderUid)).ok) changed.push(name);
        return;
      }
      if (settled.action !== 'release') return;
      const released = await deps.ledger.releaseLock(name, lock.holderUid);
      if (!released.ok) return;
      changed.push(name);
      if (settled.clearMirror) effects.push(clearLockMirror(name, released.released));
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

