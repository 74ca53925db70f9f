/**
 * What the control plane needs from storage, in domain terms. Two implementations honour the same
 * conditional semantics: the DynamoDB adapter (lib/store/ledgerStore.ts, recordStore.ts) and the in-memory
 * one (lib/store/memory.ts) that the rule tables run against. Every node write is conditional: guarded writes
 * are the only thing that keeps concurrent deciders from over-allocating (docs/state.md).
 */
import type { StoredClaim } from '../engine/claims';
import type { AttemptRecord, BindRecord, PodRef } from '../diagnostics/record';
import type { AttemptSummary } from '../diagnostics/summary';
import type { Booking, NodeLedger, NodeLock, QuotaLedger } from './ledger';

/** A node write's result: the node as stored after it, or, when the condition failed, the node as stored if the store said. */
export type NodeWrite = { readonly ok: true; readonly node: NodeLedger } | { readonly ok: false; readonly current?: NodeLedger };

/** A node's registration when a record is read: its version and its cards by position. */
export interface RegisteredNode {
  readonly registrationVersion: number;
  readonly cards: readonly { readonly id: string }[];
}

/** The registration of a node now (undefined: the node is not registered now). */
export type RegisteredCards = (node: string) => RegisteredNode | undefined;

/** A released lock, as it was (its waiters are nudged). */
export type LockRelease = { readonly ok: true; readonly node: NodeLedger; readonly released: NodeLock } | { readonly ok: false; readonly current?: NodeLedger };

/** One entry of the change journal: which nodes (at which version) and namespace quotas a write of cluster events changed. */
export interface JournalEntry {
  readonly seq: number;
  readonly atMs: number;
  readonly nodes: Readonly<Record<string, number>>;
  readonly namespaces: readonly string[];
  /** Nodes whose lock changed (mirrored or released): lock writes do not move a node's version, so views re-read these whatever version they hold. */
  readonly locks?: readonly string[];
  /** The stored entry could not be read: it may have named any node, lock or namespace, so a view reloads everything. */
  readonly unreadable?: true;
}

/** A filter's booking: added to the cards' counters under the engine's guards, not under the node's version. */
export interface Reservation {
  readonly node: string;
  readonly uid: string;
  readonly booking: Booking;
  /** The pod's own earlier booking on this node, exactly as read, which this one replaces; undefined: none may exist. */
  readonly replacing?: Booking;
  /** The registration the decision was made on. */
  readonly registrationVersion: number;
  readonly claims: readonly StoredClaim[];
}

export interface ReadOptions {
  /** Strongly consistent (after a lost race, or when the relay says the view must include a write). */
  readonly consistent: boolean;
}

export interface LedgerStore {
  /** The nodes found among `names` (absent names are left out). */
  readNodes(names: readonly string[], options: ReadOptions): Promise<ReadonlyMap<string, NodeLedger>>;
  /** Every node name ever registered and not deleted. */
  readDirectory(): Promise<string[]>;
  addToDirectory(names: readonly string[]): Promise<void>;
  removeFromDirectory(names: readonly string[]): Promise<void>;

  /** Whole write of a node whose counters are exact (`nextLedger`), if it is still at `expectedVersion` (null: only if absent). */
  putNode(node: NodeLedger, expectedVersion: number | null): Promise<NodeWrite>;
  /** A filter's booking (see `Reservation`). */
  reserve(reservation: Reservation): Promise<NodeWrite>;
  /**
   * Replace one booking whose usage is unchanged, if it is still exactly `expected` (does not race reservations). With
   * `endLock`, the same write removes the node's lock, and is refused unless `lockEndsWithBooking` holds for `uid`.
   */
  replaceBooking(node: string, uid: string, booking: Booking, expected: Booking, endLock?: boolean): Promise<NodeWrite>;

  /** Take the lock when absent, expired or already this pod's, and only while the pod holds app cards here. */
  acquireLock(node: string, lock: NodeLock, nowMs: number): Promise<NodeWrite>;
  /** Take over a lock judged stale, only if it is still exactly that lock. */
  replaceLock(node: string, lock: NodeLock, stale: NodeLock): Promise<NodeWrite>;
  /** Release only if `holderUid` holds the lock (HAMi's owner-checked release); returns the lock as it was. */
  releaseLock(node: string, holderUid: string): Promise<LockRelease>;
  /** Record that the Node annotation now shows the lock of `holderUid` (only while that pod holds it). */
  markLockMirrored(node: string, holderUid: string): Promise<NodeWrite>;
  /** Remember a pod whose bind gave up on the lock of `holderUid` (only while that pod holds it). */
  addLockWaiter(node: string, holderUid: string, waiterUid: string, waiter: string): Promise<NodeWrite>;

  /** Entries after `afterSeq`, oldest first. */
  readJournal(afterSeq: number, options: ReadOptions): Promise<JournalEntry[]>;
  /** The newest entry's sequence number (0 when none). */
  journalHead(): Promise<number>;
  /** Appends an entry at the next sequence number and returns it (gapless: a number is taken only by writing it). */
  appendJournal(entry: Omit<JournalEntry, 'seq' | 'unreadable'>): Promise<number>;

  readQuota(namespace: string): Promise<QuotaLedger | undefined>;
  /** Writes a namespace's quotas under their version; a namespace written once is listed by `readQuotaNamespaces`. */
  putQuota(namespace: string, quota: QuotaLedger, expectedVersion: number | null): Promise<boolean>;
  readQuotaNamespaces(): Promise<string[]>;
}

/** The scheduler log's records (records table). */
export interface PodRecords {
  /** Newest first. */
  readonly attempts: readonly { readonly record: AttemptRecord; readonly timeMs: number }[];
  readonly bind?: BindRecord & { readonly timeMs: number };
}

/** A page of the latest-attempt summaries (docs/api.md §10). */
export interface SummaryQuery {
  /** One namespace; absent: all. */
  readonly namespace?: string;
  readonly limit: number;
  /** Where the previous page stopped: the store's own position text (`SummaryPage.next`), opaque to callers. */
  readonly after?: string;
  readonly nowMs: number;
}

export interface SummaryPage {
  readonly items: readonly AttemptSummary[];
  /** Set when more may follow. */
  readonly next?: string;
}

export interface RecordStorePort {
  /** The attempt and, in the same write, its pod's summary (the pod's latest attempt). */
  putAttempt(record: AttemptRecord, timeMs: number): Promise<void>;
  /** The bind outcome, and the summary's bind part when the summary's attempt is not newer. */
  putBind(pod: PodRef, bind: BindRecord, timeMs: number): Promise<void>;
  /**
   * The bind item and up to `attempts` newest unexpired attempts of a pod; the cards' ids, which records do not store,
   * from the nodes' registrations now (`RegisteredCards`, below; docs/state.md, "Layout"), asked of `registered` once and only
   * when there is an attempt to decode: a pod without records costs no look at the nodes.
   */
  readPod(namespace: string, name: string, attempts: number, nowMs: number, registered?: () => Promise<RegisteredCards>): Promise<PodRecords>;
  /** Unexpired summaries in the store's order, at most `limit`; a position `after` that is not this list's is a BadRequestError. */
  listSummaries(query: SummaryQuery): Promise<SummaryPage>;
}
