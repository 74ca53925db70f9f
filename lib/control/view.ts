/**
 * The warm view: each execution environment keeps the decoded cluster and, per decision, fetches only what
 * changed since it last looked (docs/state.md, "Warm view").
 *
 * What changed is told by the change journal: every write of cluster events appends one entry naming the nodes
 * (and their new versions) and namespace quotas it changed. A view that knows entry N reads the entries after
 * N and the nodes they name. Its own writes (reservations, locks) return the node as stored, which the view
 * takes as is. Writes made by other deciders reach it through their effects on the cluster (the relay forwards
 * the pods they placed) or through a refused guard, which re-reads that node: correctness never rests on
 * freshness, since every booking is admitted by the store's guards against the stored counters.
 *
 * Staleness bound: a decision is made on a view that has seen every journal entry written before its last
 * sync, which started at most `maxAgeMs` ago, and never on a view older than the journal entry the relay names
 * (`X-Hami-Min-View-Seq`: the last entry its forwarded events produced). The filter starts a sync with each
 * booking and answers without waiting for it; the next decision waits for it only when the view is not fit
 * without it, so in steady state a decision's view misses at most what the last two filters' syncs brought.
 */
import { sameItems } from '../arrays';
import type { Clock } from '../clock';
import { EvaluationMemo } from '../engine/reuse';
import type { NodeAllocations, NodeState } from '../engine/types';
import type { AppLogger } from '../powertools';
import { allocationCandidates, allocationsOn, bookingCounts, toNodeState, type Booking, type NodeLedger, type QuotaLedger } from './ledger';
import type { LedgerStore } from './ports';
import { errorMessage } from '../errors';

export interface ViewOptions {
  /** A view not synced for this long syncs before deciding, whatever the relay says. */
  readonly maxAgeMs: number;
}

/** How fresh the view a decision was made on was, for the scheduler log. */
export interface ViewFreshness {
  /** The last journal entry the view had seen. */
  readonly seq: number;
  /** Milliseconds since the view's last sync started. */
  readonly ageMs: number;
}

/** Journal entries beyond this many at once: reload the whole cluster instead of reading node by node. */
const RELOAD_AFTER_ENTRIES = 2_000;
/** Names remembered as absent (kube-scheduler may send names that were never registered). */
const ABSENT_MAX = 10_000;

/**
 * A node as the view holds it: its ledger, and the engine's state computed from it, valid until the first reservation
 * in it expires. One object per node, updated in place, so that a decision finds both in one lookup.
 */
interface NodeSlot {
  ledger: NodeLedger;
  state: NodeState | undefined;
  validUntilMs: number;
  /** The ledger's `allocationCandidates`, made when first asked (lock-aware placement asks at every decision). */
  allocationCandidates: readonly Booking[] | undefined;
}

export class ClusterView {
  private readonly nodes = new Map<string, NodeSlot>();
  /** Node names read and not found, until the journal names them. */
  private readonly absent = new Set<string>();
  private readonly quotas = new Map<string, QuotaLedger | null>();
  /** Pod uid -> nodes holding a booking for it (any state). */
  private readonly byUid = new ValuesByKey();
  /** The uids booked under each `namespace/name` (a pod, and an earlier pod of the same name still booked). */
  private readonly byName = new ValuesByKey();
  /**
   * Decisions on this view's node states, for the next pod of the same plan (lib/engine/reuse.ts): the states are
   * new objects whenever their node changes, so only nodes that changed are fitted again.
   */
  readonly memo = new EvaluationMemo();
  /**
   * The last candidate list resolved (`resolve`) and its nodes' slots by position. Where kube-scheduler sends every
   * feasible node (not with its sampling, whose window moves), the list is the same filter after filter until nodes
   * come or go: reading a thousand slots by position costs a fraction of a thousand lookups by names just parsed,
   * each of which misses the caches of a core that waited between filters.
   */
  private resolved: { readonly names: readonly string[]; readonly slots: readonly (NodeSlot | undefined)[]; readonly membership: number } | undefined;
  /** Moves whenever a slot is added or removed: a list resolved before is then resolved again. */
  private membership = 0;
  private loaded = false;
  private seqSeen = 0;
  private syncedAt = 0;
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly store: LedgerStore,
    private readonly clock: Clock,
    private readonly logger: Pick<AppLogger, 'warn' | 'info'>,
    private readonly options: ViewOptions,
  ) {}

  get seq(): number {
    return this.seqSeen;
  }

  freshness(nowMs: number): ViewFreshness {
    return { seq: this.seqSeen, ageMs: Math.max(0, nowMs - this.syncedAt) };
  }

  /**
   * Makes the view fit to decide on: loaded, caught up with the journal entry `minSeq` the relay names, and
   * not older than `maxAgeMs`. Store round trips happen only when one of those does not hold.
   */
  async prepare(minSeq?: number): Promise<void> {
    for (;;) {
      const behind = minSeq !== undefined && minSeq > this.seqSeen;
      // Fit as it is: a sync still running (the last filter's refresh) is not waited for.
      if (this.loaded && !behind && this.clock.now() - this.syncedAt <= this.options.maxAgeMs) return;
      // A sync already running may be enough; look again once it is done.
      if (this.inFlight) {
        await this.inFlight.catch(() => undefined);
        continue;
      }
      await this.run(() => (this.loaded ? this.catchUp(true) : this.load()));
      return;
    }
  }

  /** Reads the candidates the view has never seen (nodes registered since its last sync): they are not called unregistered unread. */
  async learn(names: readonly string[]): Promise<void> {
    const { slots } = this.resolve(names);
    const unknown = names.filter((name, i) => slots[i] === undefined && !this.absent.has(name));
    if (unknown.length === 0) return;
    const found = await this.store.readNodes(unknown, { consistent: true });
    for (const name of unknown) {
      const node = found.get(name);
      if (node) this.accept(node);
      else {
        if (this.absent.size >= ABSENT_MAX) this.absent.clear();
        this.absent.add(name);
      }
    }
  }

  /** Brings the view up to the journal's head; a caller arriving while a sync runs shares it. */
  refresh(): Promise<void> {
    return this.inFlight ?? this.run(() => (this.loaded ? this.catchUp(false) : this.load()));
  }

  /**
   * Starts a sync (or joins the one running) and leaves it running: it only serves later decisions, which wait for it
   * when their view would not be fit without it (`prepare`). A sync that fails costs only freshness and is logged. In
   * Lambda a sync still running when the answer goes out resumes when the environment is next invoked.
   */
  refreshInBackground(): void {
    this.refresh().catch((err: unknown) => this.warnSyncFailed(err));
  }

  /** `prepare` for readers that can do without a fresh view (the scheduler log's card ids): a failed sync is logged. */
  async prepareIfPossible(): Promise<void> {
    await this.prepare().catch((err: unknown) => this.warnSyncFailed(err));
  }

  private warnSyncFailed(err: unknown): void {
    this.logger.warn('ViewRefreshFailed', { error: errorMessage(err) });
  }

  /** A node as a write of ours left it (or as a refused guard found it): taken unless the view has a newer one. */
  accept(node: NodeLedger): void {
    const slot = this.nodes.get(node.name);
    const known = slot?.ledger;
    if (known && known.version > node.version) return;
    if (node.unreadable && node.unreadable.length > 0 && known?.unreadable === undefined) {
      this.logger.warn('NodeStateUnreadable', {
        node: node.name,
        parts: node.unreadable.map((p) => ({ part: p.part, problem: p.problem, raw: clip(p.raw) })),
      });
    }
    this.index(known, node);
    if (slot === undefined) {
      this.nodes.set(node.name, { ledger: node, state: undefined, validUntilMs: 0, allocationCandidates: undefined });
      this.membership += 1;
    } else {
      slot.ledger = node;
      slot.state = undefined;
      slot.allocationCandidates = undefined;
    }
    this.absent.delete(node.name);
  }

  private index(before: NodeLedger | undefined, after: NodeLedger | undefined): void {
    const name = (after ?? before)?.name;
    if (name === undefined) return;
    for (const [uid, booking] of Object.entries(before?.bookings ?? {})) {
      if (after?.bookings[uid] !== undefined) continue;
      // The pod's last holder gone: its name no longer leads to it.
      if (this.byUid.remove(uid, name)) this.byName.remove(podKey(booking.namespace, booking.name), uid);
    }
    for (const [uid, booking] of Object.entries(after?.bookings ?? {})) {
      if (before?.bookings[uid] !== undefined) continue;
      if (this.byUid.add(uid, name)) this.byName.add(podKey(booking.namespace, booking.name), uid);
    }
  }

  private forget(name: string): void {
    this.index(this.nodes.get(name)?.ledger, undefined);
    if (this.nodes.delete(name)) this.membership += 1;
  }

  get(name: string): NodeLedger | undefined {
    return this.nodes.get(name)?.ledger;
  }

  /**
   * The allocations under way on the node (`allocationsOn`), for lock-aware placement. A decision may ask about every
   * node that fits while pods decided ahead are still binding; the bookings worth a look are kept per ledger version.
   */
  allocationsOn(name: string, nowMs: number, lockExpireMs: number): NodeAllocations | undefined {
    const slot = this.nodes.get(name);
    if (slot === undefined) return undefined;
    slot.allocationCandidates ??= allocationCandidates(slot.ledger);
    return allocationsOn(slot.ledger, nowMs, lockExpireMs, slot.allocationCandidates);
  }

  *all(): IterableIterator<NodeLedger> {
    for (const slot of this.nodes.values()) yield slot.ledger;
  }

  /** Nodes holding a booking (of any state) for the pod. */
  holders(uid: string): string[] {
    return this.byUid.values(uid);
  }

  /** Nodes holding a live booking for the pod's namespace/name (a pod reported deleted without its uid). */
  uidsByName(namespace: string, name: string): string[] {
    const found: string[] = [];
    for (const uid of this.byName.values(podKey(namespace, name))) {
      if (this.byUid.values(uid).some((node) => (this.nodes.get(node)?.ledger.bookings[uid]?.state ?? 'gone') !== 'gone')) found.push(uid);
    }
    return found;
  }

  /** The engine's view of every node, the pod being filtered (`excludeUid`) left out of usage. */
  engineNodes(nowMs: number, excludeUid?: string): { get(name: string): NodeState | undefined } {
    const holding = excludeUid !== undefined ? this.byUid.values(excludeUid) : [];
    return {
      get: (name) => {
        const slot = this.nodes.get(name);
        return slot === undefined ? undefined : engineState(slot, name, nowMs, excludeUid, holding);
      },
    };
  }

  /**
   * The candidates as the engine takes them: the list (the very array the view resolved before, when `names` holds
   * the same names in the same order, so the engine's memo knows the list too) and each candidate's state by position,
   * as `engineNodes` gives them.
   */
  engineCandidates(names: readonly string[], nowMs: number, excludeUid?: string): { candidates: readonly string[]; states: (NodeState | undefined)[] } {
    const holding = excludeUid !== undefined ? this.byUid.values(excludeUid) : [];
    const { names: candidates, slots } = this.resolve(names);
    const states = new Array<NodeState | undefined>(slots.length);
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i];
      states[i] = slot === undefined ? undefined : engineState(slot, candidates[i]!, nowMs, excludeUid, holding);
    }
    return { candidates, states };
  }

  /** `names`' slots by position: those of the last list resolved when the names and the view's nodes are the same. */
  private resolve(names: readonly string[]): { names: readonly string[]; slots: readonly (NodeSlot | undefined)[] } {
    const last = this.resolved;
    if (last !== undefined && last.membership === this.membership && sameItems(last.names, names)) return last;
    const slots = names.map((name) => this.nodes.get(name));
    this.resolved = { names, slots, membership: this.membership };
    return this.resolved;
  }

  /** Every namespace that has had a ResourceQuota (read from the store: the view keeps quotas of namespaces it scheduled in only). */
  quotaNamespaces(): Promise<string[]> {
    return this.store.readQuotaNamespaces();
  }

  /** A namespace's quotas changed (a write of this process): read again on next use. */
  forgetQuota(namespace: string): void {
    this.quotas.delete(namespace);
  }

  /** A namespace's quotas (read once, then kept current by the journal). */
  async quota(namespace: string): Promise<QuotaLedger | undefined> {
    if (!this.quotas.has(namespace)) this.quotas.set(namespace, (await this.store.readQuota(namespace)) ?? null);
    return this.quotas.get(namespace) ?? undefined;
  }

  /** One sync at a time: the journal position moves forward only. */
  private run(work: () => Promise<void>): Promise<void> {
    const running = work().finally(() => {
      if (this.inFlight === running) this.inFlight = undefined;
    });
    this.inFlight = running;
    return running;
  }

  /** The whole cluster: the journal's head first, so that everything written after the nodes are read is in entries after it. */
  private async load(): Promise<void> {
    const startedAt = this.clock.now();
    const head = await this.store.journalHead();
    const names = await this.store.readDirectory();
    const nodes = await this.store.readNodes(names, { consistent: true });
    this.nodes.clear();
    this.membership += 1;
    this.byUid.clear();
    this.byName.clear();
    this.absent.clear();
    this.quotas.clear();
    for (const node of nodes.values()) this.accept(node);
    this.seqSeen = head;
    this.syncedAt = startedAt;
    this.loaded = true;
    this.logger.info('ViewLoaded', { nodes: nodes.size, seq: head });
  }

  private async catchUp(consistent: boolean): Promise<void> {
    const startedAt = this.clock.now();
    const entries = await this.store.readJournal(this.seqSeen, { consistent });
    const first = entries[0];
    // A gap (entries expired), too much to read node by node, or an entry that cannot be read: start again from the
    // whole cluster.
    if ((first && first.seq !== this.seqSeen + 1) || entries.length > RELOAD_AFTER_ENTRIES || entries.some((e) => e.unreadable === true)) {
      await this.load();
      return;
    }
    const wanted = new Map<string, number>();
    const relock = new Set<string>();
    for (const entry of entries) {
      for (const [name, version] of Object.entries(entry.nodes)) wanted.set(name, Math.max(version, wanted.get(name) ?? 0));
      for (const namespace of entry.namespaces) this.quotas.delete(namespace);
      for (const name of entry.locks ?? []) relock.add(name);
    }
    const stale = [...new Set([...wanted.keys(), ...relock])].filter((name) => relock.has(name) || (this.nodes.get(name)?.ledger.version ?? -1) < (wanted.get(name) ?? 0));
    if (stale.length > 0) {
      const fresh = await this.store.readNodes(stale, { consistent: true });
      for (const name of stale) {
        const node = fresh.get(name);
        if (node) this.accept(node);
        else this.forget(name);
      }
    }
    const last = entries[entries.length - 1];
    if (last) this.seqSeen = Math.max(this.seqSeen, last.seq);
    this.syncedAt = startedAt;
  }
}

/** The engine's state of a node; computed afresh, the pod's own bookings left out, where the pod holds one. */
function engineState(slot: NodeSlot, name: string, nowMs: number, excludeUid: string | undefined, holding: readonly string[]): NodeState {
  return holding.includes(name) ? toNodeState(slot.ledger, nowMs, excludeUid) : nodeState(slot, nowMs);
}

/** The engine's state of a node, computed again when its ledger changed or a reservation in it expired. */
function nodeState(slot: NodeSlot, nowMs: number): NodeState {
  if (slot.state !== undefined && nowMs < slot.validUntilMs) return slot.state;
  slot.state = toNodeState(slot.ledger, nowMs);
  slot.validUntilMs = validUntil(slot.ledger, nowMs);
  return slot.state;
}

/** Until when a node's computed usage holds: the first counting reservation or tombstone to expire. */
function validUntil(ledger: NodeLedger, nowMs: number): number {
  let until = Number.POSITIVE_INFINITY;
  for (const booking of Object.values(ledger.bookings)) {
    if (booking.expiresAtMs !== undefined && booking.expiresAtMs > nowMs && (bookingCounts(booking, nowMs) || booking.state === 'gone')) {
      until = Math.min(until, booking.expiresAtMs);
    }
    // A victim counts again when its preemptor's hold ends (docs/preemption.md).
    if (booking.preemptedBy !== undefined && booking.preemptedBy.untilMs > nowMs) until = Math.min(until, booking.preemptedBy.untilMs);
  }
  return until;
}

function clip(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  return text.length > 512 ? `${text.slice(0, 509)}...` : text;
}

/**
 * Keys to the values filed under them, most keys holding one value (a pod booked on one node): a key's one value is
 * kept as it is, not in a collection of its own, so that the view's indexes are a few objects per pod, not a `Set`
 * each (every object is marked by every major collection).
 */
export class ValuesByKey {
  private readonly entries = new Map<string, string | string[]>();

  /** Files the value under the key; true when the key had no value before. */
  add(key: string, value: string): boolean {
    const held = this.entries.get(key);
    if (held === undefined) {
      this.entries.set(key, value);
      return true;
    }
    if (typeof held === 'string') {
      if (held !== value) this.entries.set(key, [held, value]);
    } else if (!held.includes(value)) held.push(value);
    return false;
  }

  /** Takes the value from under the key; true when the key holds no value now. */
  remove(key: string, value: string): boolean {
    const held = this.entries.get(key);
    if (held === undefined) return false;
    if (typeof held === 'string') {
      if (held !== value) return false;
      this.entries.delete(key);
      return true;
    }
    const at = held.indexOf(value);
    if (at < 0) return false;
    held.splice(at, 1);
    if (held.length === 1) this.entries.set(key, held[0]!);
    return false;
  }

  values(key: string): string[] {
    const held = this.entries.get(key);
    return held === undefined ? [] : typeof held === 'string' ? [held] : [...held];
  }

  clear(): void {
    this.entries.clear();
  }
}

function podKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
