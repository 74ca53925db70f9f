/**
 * In-memory implementations of the control plane's storage ports, with the DynamoDB adapter's conditional
 * semantics (the shared port suite in test/integration/store runs both against the same cases). The rule
 * tables of filter, bind and cluster events run on it, fast and without a server.
 */
import { claimAdmits } from '../engine/claims';
import type { AttemptRecord, BindRecord, PodRef } from '../diagnostics/record';
import { lockEndsWithBooking, lockHeldByOther, type Booking, type CardCounter, type NodeLedger, type NodeLock, type QuotaLedger } from '../control/ledger';
import type { JournalEntry, LedgerStore, LockRelease, NodeWrite, PodRecords, ReadOptions, RecordStorePort, RegisteredCards, Reservation, SummaryPage, SummaryQuery } from '../control/ports';
import { emptyStats, type StoreStats } from './dynamo';
import { NodeCodec, holdsAppCards, nodeItemExpired, type Item } from './codec';
import { decodeRecord, encodeRecord, formatPosition, parsePosition, RECORD_ENCODING, summaryKey, summaryPrefix, SUMMARY_SHARDS } from './recordCodec';
import { shortBind, summarizeAttempt, type AttemptSummary } from '../diagnostics/summary';

export class MemoryLedgerStore implements LedgerStore {
  readonly stats: StoreStats = emptyStats();
  private readonly codec = new NodeCodec();
  private readonly nodes = new Map<string, NodeLedger>();
  /** Each node's item as last encoded, for what the item alone says (its expiry). */
  private readonly items = new Map<string, Item>();
  private readonly directory = new Set<string>();
  private readonly journal: JournalEntry[] = [];
  private readonly quotas = new Map<string, QuotaLedger>();

  constructor(private readonly now: () => number) {}

  private count(operation: string): void {
    this.stats.calls += 1;
    this.stats.byOperation[operation] = (this.stats.byOperation[operation] ?? 0) + 1;
  }

  /** Direct access for tests: the node as stored. */
  stored(name: string): NodeLedger | undefined {
    return this.nodes.get(name);
  }

  /** Tests only: store a node as given, bypassing every condition (e.g. state written by an older version). */
  seed(node: NodeLedger): void {
    this.items.delete(node.name);
    this.nodes.set(node.name, node);
  }

  async readNodes(names: readonly string[], _options: ReadOptions): Promise<ReadonlyMap<string, NodeLedger>> {
    this.count('BatchGetItem');
    const found = new Map<string, NodeLedger>();
    for (const name of names) {
      const node = this.live(name);
      if (node) found.set(name, node);
    }
    return found;
  }

  async readDirectory(): Promise<string[]> {
    this.count('BatchGetItem');
    return [...this.directory].sort();
  }

  async addToDirectory(names: readonly string[]): Promise<void> {
    this.count('UpdateItem');
    for (const name of names) this.directory.add(name);
  }

  async removeFromDirectory(names: readonly string[]): Promise<void> {
    this.count('UpdateItem');
    for (const name of names) this.directory.delete(name);
  }

  /** The node unless its item has expired (expired means absent, as in DynamoDB before its TTL removes it). */
  private live(name: string): NodeLedger | undefined {
    const item = this.items.get(name);
    return item !== undefined && nodeItemExpired(item, this.now()) ? undefined : this.nodes.get(name);
  }

  async putNode(node: NodeLedger, expectedVersion: number | null): Promise<NodeWrite> {
    const current = this.nodes.get(node.name);
    const admitted = expectedVersion === null ? this.live(node.name) === undefined : current?.version === expectedVersion;
    return this.apply(node.name, 'UpdateItem', admitted, () => {
      const { lock: _ignored, ...rest } = node;
      return { ...rest, ...(current?.lock ? { lock: current.lock } : {}) };
    });
  }

  async reserve(r: Reservation): Promise<NodeWrite> {
    const current = this.nodes.get(r.node);
    const held = current?.bookings[r.uid];
    const admitted =
      current !== undefined &&
      (r.replacing ? held !== undefined && this.sameBooking(held, r.replacing) : held === undefined) &&
      current.registrationVersion === r.registrationVersion &&
      r.claims.every((claim) => {
        const counter = current.counters[claim.uuid];
        return counter !== undefined && claimAdmits(claim, { used: counter.slots, usedmem: counter.mem, usedcores: counter.cores });
      });
    return this.apply(r.node, 'UpdateItem', admitted, () => {
      const node = current!;
      const counters: Record<string, CardCounter> = { ...node.counters };
      for (const claim of r.claims) {
        const c = counters[claim.uuid]!;
        counters[claim.uuid] = { slots: c.slots + claim.slots, mem: c.mem + claim.mem, cores: c.cores + claim.cores };
      }
      return { ...node, version: node.version + 1, bookings: { ...node.bookings, [r.uid]: r.booking }, counters };
    });
  }

  async replaceBooking(node: string, uid: string, booking: Booking, expected: Booking, endLock = false): Promise<NodeWrite> {
    const current = this.nodes.get(node);
    const held = current?.bookings[uid];
    const admitted = held !== undefined && this.sameBooking(held, expected) && (!endLock || lockEndsWithBooking(current?.lock, uid));
    return this.apply(node, 'UpdateItem', admitted, () => {
      const { lock: _ended, ...withoutLock } = current!;
      return { ...(endLock ? withoutLock : current!), version: current!.version + 1, bookings: { ...current!.bookings, [uid]: booking } };
    });
  }

  async acquireLock(node: string, lock: NodeLock, nowMs: number): Promise<NodeWrite> {
    const current = this.nodes.get(node);
    const held = current?.bookings[lock.holderUid];
    const free = !lockHeldByOther(current?.lock, lock.holderUid, nowMs);
    return this.apply(node, 'UpdateItem', current !== undefined && free && held !== undefined && holdsAppCards(held), () => ({ ...current!, lock }));
  }

  async replaceLock(node: string, lock: NodeLock, stale: NodeLock): Promise<NodeWrite> {
    const current = this.nodes.get(node);
    const same = current?.lock !== undefined && current.lock.holderUid === stale.holderUid && current.lock.sinceMs === stale.sinceMs;
    return this.apply(node, 'UpdateItem', same, () => ({ ...current!, lock }));
  }

  async releaseLock(node: string, holderUid: string): Promise<LockRelease> {
    const current = this.nodes.get(node);
    const released = current?.lock;
    const write = this.apply(node, 'UpdateItem', released?.holderUid === holderUid, () => {
      const { lock: _released, ...rest } = current!;
      return rest;
    });
    return write.ok && released ? { ok: true, node: write.node, released } : write.ok ? { ok: false, current: write.node } : write;
  }

  async markLockMirrored(node: string, holderUid: string): Promise<NodeWrite> {
    const current = this.nodes.get(node);
    return this.apply(node, 'UpdateItem', current?.lock?.holderUid === holderUid, () => ({ ...current!, lock: { ...current!.lock!, mirrored: true } }));
  }

  async addLockWaiter(node: string, holderUid: string, waiterUid: string, waiter: string): Promise<NodeWrite> {
    const current = this.nodes.get(node);
    return this.apply(node, 'UpdateItem', current?.lock?.holderUid === holderUid, () => ({
      ...current!,
      lock: { ...current!.lock!, waiters: { ...(current!.lock!.waiters ?? {}), [waiterUid]: waiter } },
    }));
  }

  /** One conditional write: when admitted, the node after it (checked against the item bound, as DynamoDB would refuse it). */
  private apply(name: string, operation: string, admitted: boolean, next: () => NodeLedger): NodeWrite {
    this.count(operation);
    const current = this.nodes.get(name);
    if (!admitted) return current ? { ok: false, current } : { ok: false };
    const node = next();
    this.items.set(name, this.codec.encode(node, this.now()));
    this.nodes.set(name, node);
    return { ok: true, node };
  }

  private sameBooking(a: Booking, b: Booking): boolean {
    return this.codec.bookingText(a) === this.codec.bookingText(b);
  }

  async readJournal(afterSeq: number, _options: ReadOptions): Promise<JournalEntry[]> {
    this.count('Query');
    return this.journal.filter((entry) => entry.seq > afterSeq);
  }

  async journalHead(): Promise<number> {
    this.count('Query');
    return this.journal[this.journal.length - 1]?.seq ?? 0;
  }

  async appendJournal(entry: Omit<JournalEntry, 'seq' | 'unreadable'>): Promise<number> {
    this.count('PutItem');
    const seq = (this.journal[this.journal.length - 1]?.seq ?? 0) + 1;
    this.journal.push({ ...entry, seq });
    return seq;
  }

  /** Tests only: an entry whose item cannot be read back (it reads as `unreadable`, as the DynamoDB adapter reads a damaged one). */
  damageJournal(): number {
    const seq = (this.journal[this.journal.length - 1]?.seq ?? 0) + 1;
    this.journal.push({ seq, atMs: 0, nodes: {}, namespaces: [], unreadable: true });
    return seq;
  }

  async readQuota(namespace: string): Promise<QuotaLedger | undefined> {
    this.count('BatchGetItem');
    return this.quotas.get(namespace);
  }

  async putQuota(namespace: string, quota: QuotaLedger, expectedVersion: number | null): Promise<boolean> {
    this.count('PutItem');
    const current = this.quotas.get(namespace);
    if (expectedVersion === null ? current !== undefined : current?.version !== expectedVersion) return false;
    this.quotas.set(namespace, quota);
    return true;
  }

  async readQuotaNamespaces(): Promise<string[]> {
    this.count('BatchGetItem');
    return [...this.quotas.keys()].sort();
  }
}

export class MemoryRecordStore implements RecordStorePort {
  readonly stats: StoreStats = emptyStats();
  private readonly pods = new Map<string, { attempts: { attemptId: string; stored: Uint8Array; timeMs: number; expiresAtMs: number }[]; bind?: BindRecord & { timeMs: number; expiresAtMs: number } }>();

  /** Per shard, sort key to summary, as the DynamoDB adapter keys them (the same listing order). */
  private readonly summaries = new Map<number, Map<string, { summary: AttemptSummary; expiresAtMs: number }>>();

  constructor(private readonly retentionMs: number) {}

  private podOf(namespace: string, name: string) {
    const key = `${namespace}/${name}`;
    let pod = this.pods.get(key);
    if (!pod) {
      pod = { attempts: [] };
      this.pods.set(key, pod);
    }
    return pod;
  }

  async putAttempt(record: AttemptRecord, timeMs: number): Promise<void> {
    this.stats.calls += 1;
    const pod = this.podOf(record.pod.namespace, record.pod.name);
    // The same attempt written again (a lost reservation decided anew) replaces itself, as the stored key is the same.
    pod.attempts = pod.attempts.filter((a) => !(a.timeMs === timeMs && a.attemptId === record.attemptId));
    // Kept in the stored form and decoded when read, as the DynamoDB adapter does (card ids come from the
    // registrations at that time).
    pod.attempts.push({ attemptId: record.attemptId, stored: encodeRecord(record), timeMs, expiresAtMs: timeMs + this.retentionMs });
    pod.attempts.sort((a, b) => b.timeMs - a.timeMs || (a.attemptId < b.attemptId ? 1 : -1));
    const key = summaryKey(record.pod.namespace, record.pod.name);
    this.shard(key.shard).set(key.sk, { summary: summarizeAttempt(record, timeMs), expiresAtMs: timeMs + this.retentionMs });
  }

  async putBind(pod: PodRef, bind: BindRecord, timeMs: number): Promise<void> {
    this.stats.calls += 1;
    this.podOf(pod.namespace, pod.name).bind = { ...bind, timeMs, expiresAtMs: timeMs + this.retentionMs };
    const key = summaryKey(pod.namespace, pod.name);
    const stored = this.shard(key.shard).get(key.sk);
    // The DynamoDB adapter's condition: only a summary whose attempt is not newer than the outcome takes it.
    if (stored && stored.summary.timeMs <= timeMs) {
      this.shard(key.shard).set(key.sk, { summary: { ...stored.summary, bind: shortBind(bind) }, expiresAtMs: timeMs + this.retentionMs });
    }
  }

  async listSummaries(query: SummaryQuery): Promise<SummaryPage> {
    this.stats.calls += 1;
    let position = parsePosition(query.after, query.namespace);
    const prefix = query.namespace === undefined ? undefined : summaryPrefix(query.namespace);
    const items: AttemptSummary[] = [];
    for (;;) {
      const keys = [...this.shard(position.shard).keys()].filter((sk) => sk > position.sk && (prefix === undefined || sk.startsWith(prefix))).sort();
      for (const sk of keys) {
        if (items.length === query.limit) return { items, next: formatPosition(position) };
        const stored = this.shard(position.shard).get(sk);
        position = { shard: position.shard, sk };
        if (stored && stored.expiresAtMs >= query.nowMs) items.push(structuredClone(stored.summary));
      }
      if (query.namespace !== undefined || position.shard + 1 >= SUMMARY_SHARDS) return { items };
      position = { shard: position.shard + 1, sk: '' };
    }
  }

  private shard(shard: number): Map<string, { summary: AttemptSummary; expiresAtMs: number }> {
    let found = this.summaries.get(shard);
    if (!found) {
      found = new Map();
      this.summaries.set(shard, found);
    }
    return found;
  }

  async readPod(namespace: string, name: string, attempts: number, nowMs: number, registered?: () => Promise<RegisteredCards>): Promise<PodRecords> {
    this.stats.calls += 1;
    const pod = this.pods.get(`${namespace}/${name}`);
    if (!pod) return { attempts: [] };
    const live = pod.attempts.filter((a) => a.expiresAtMs >= nowMs).slice(0, attempts);
    const bind = pod.bind && pod.bind.expiresAtMs >= nowMs ? pod.bind : undefined;
    const cards = live.length > 0 ? await registered?.() : undefined;
    const found = live.map(({ stored, timeMs }) => ({ record: decodeRecord(stored, RECORD_ENCODING, cards), timeMs }));
    if (!bind) return { attempts: found };
    const { expiresAtMs: _e, ...rest } = bind;
    return { attempts: found, bind: rest };
  }
}
