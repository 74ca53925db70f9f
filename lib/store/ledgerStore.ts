/**
 * The ledger's DynamoDB adapter (layout in ./codec.ts, docs/state.md). Each operation has a pure `…Params`
 * builder (asserted by unit tests) and a thin send step. Writes return the node as stored after them
 * (`ReturnValues: ALL_NEW`, free of read units) so a warm view stays current without reading; a refused
 * write returns the node as stored where the store supports it (`ReturnValuesOnConditionCheckFailure`;
 * dynalite ignores it and the caller reads the node instead).
 */
import type { PutCommandInput, QueryCommandInput, UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Sleep } from '../clock';
import type { StoredClaim } from '../engine/claims';
import { StoreUnavailableError } from '../errors';
import type { Booking, NodeLedger, NodeLock, QuotaLedger } from '../control/ledger';
import type { JournalEntry, LedgerStore, LockRelease, NodeWrite, ReadOptions, Reservation } from '../control/ports';
import { batchGetAll, isConditionFailed, send, type StoreStats } from './dynamo';
import { DynamoServiceError, type DocumentClient } from './dynamoHttp';
import {
  CounterAttr,
  DIRECTORY_SHARDS,
  DirectoryAttr,
  JOURNAL_PARTITION,
  KeyAttr,
  LockAttr,
  NodeAttr,
  NodeCodec,
  approximateItemBytes,
  decodeJournalEntry,
  decodeQuota,
  directoryKey,
  directoryShard,
  encodeJournalEntry,
  encodeLock,
  encodeQuota,
  holdsAppCards,
  journalSeqOf,
  journalSortKey,
  nodeItemExpired,
  nodeKey,
  nodeNameOf,
  QUOTA_DIRECTORY_KEY,
  QuotaAttr,
  quotaKey,
  type Item,
} from './codec';

const JOURNAL_APPEND_ROUNDS = 30;

export class DynamoLedgerStore implements LedgerStore {
  readonly codec = new NodeCodec();
  /** The newest journal sequence number this process has seen: appends try the next one first. */
  private journalSeen = 0;
  /** Approximate stored size per node, for the write units a refused conditional write is billed. */
  private readonly sizes = new Map<string, number>();

  constructor(
    private readonly doc: DocumentClient,
    readonly table: string,
    readonly stats: StoreStats,
    private readonly sleep: Sleep,
    private readonly now: () => number,
  ) {}

  // ---- reads -------------------------------------------------------------------------------------

  private batchGet(keys: readonly Item[], consistent: boolean): Promise<Item[]> {
    return batchGetAll(this.doc, this.stats, this.sleep, this.table, keys, consistent);
  }

  async readNodes(names: readonly string[], options: ReadOptions): Promise<ReadonlyMap<string, NodeLedger>> {
    const items = await this.batchGet([...new Set(names)].map(nodeKey), options.consistent);
    const nodes = new Map<string, NodeLedger>();
    const nowMs = this.now();
    for (const item of items) {
      const name = nodeNameOf(item);
      if (name === undefined) continue;
      if (nodeItemExpired(item, nowMs)) continue;
      nodes.set(name, this.decoded(name, item));
    }
    return nodes;
  }

  async readDirectory(): Promise<string[]> {
    const items = await this.batchGet(
      Array.from({ length: DIRECTORY_SHARDS }, (_, i) => directoryKey(i)),
      true,
    );
    const names: string[] = [];
    for (const item of items) {
      const set = item[DirectoryAttr.names];
      if (set instanceof Set) for (const name of set) if (typeof name === 'string') names.push(name);
    }
    return names.sort();
  }

  directoryParams(shard: number, names: readonly string[], action: 'ADD' | 'DELETE'): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: directoryKey(shard),
      UpdateExpression: `${action} #names :names`,
      ExpressionAttributeNames: { '#names': DirectoryAttr.names },
      ExpressionAttributeValues: { ':names': new Set(names) },
      ReturnConsumedCapacity: 'TOTAL',
    };
  }

  addToDirectory(names: readonly string[]): Promise<void> {
    return this.changeDirectory(names, 'ADD');
  }

  removeFromDirectory(names: readonly string[]): Promise<void> {
    return this.changeDirectory(names, 'DELETE');
  }

  private async changeDirectory(names: readonly string[], action: 'ADD' | 'DELETE'): Promise<void> {
    const byShard = new Map<number, string[]>();
    for (const name of names) byShard.set(directoryShard(name), [...(byShard.get(directoryShard(name)) ?? []), name]);
    await Promise.all([...byShard].map(([shard, list]) => send(this.doc, this.stats, 'UpdateItem', this.directoryParams(shard, list, action))));
  }

  // ---- node writes -------------------------------------------------------------------------------

  /**
   * Replaces every attribute of the node but its lock (a bind may hold it meanwhile; lock writes do not move
   * the version), if it is still at `expectedVersion` (null: only if absent).
   */
  putNodeParams(node: NodeLedger, expectedVersion: number | null): UpdateCommandInput {
    const item = this.codec.encode(node, this.now());
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const sets: string[] = [];
    const removes: string[] = [];
    for (const attr of Object.values(NodeAttr)) {
      if (attr === NodeAttr.lock) continue;
      names[`#${attr}`] = attr;
      if (item[attr] === undefined) removes.push(`#${attr}`);
      else {
        sets.push(`#${attr} = :${attr}`);
        values[`:${attr}`] = item[attr];
      }
    }
    if (expectedVersion !== null) values[':expected'] = expectedVersion;
    // Expecting no item: an expired one counts as none (`nodeItemExpired`), as reads already treat it.
    else values[':nowS'] = Math.floor(this.now() / 1000);
    return {
      TableName: this.table,
      Key: nodeKey(node.name),
      UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
      ConditionExpression: expectedVersion === null ? `attribute_not_exists(#v) OR #${NodeAttr.ttl} < :nowS` : '#v = :expected',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ...WRITE_RETURNS,
    };
  }

  putNode(node: NodeLedger, expectedVersion: number | null): Promise<NodeWrite> {
    return this.write(node.name, this.putNodeParams(node, expectedVersion));
  }

  /**
   * Adds the booking and its cards' usage to the counters, guarded by the engine's claims (not the version):
   * concurrent filters on one node both succeed when both fit; the guard refuses the one that would
   * over-allocate. The version still moves, so whole writers see the change.
   */
  reserveParams(r: Reservation): UpdateCommandInput {
    const names: Record<string, string> = {
      '#v': NodeAttr.version,
      '#b': NodeAttr.bookings,
      '#ag': NodeAttr.appCards,
      '#cu': NodeAttr.counters,
      '#rgv': NodeAttr.registrationVersion,
      '#uid': r.uid,
      '#s': CounterAttr.slots,
      '#m': CounterAttr.mem,
      '#c': CounterAttr.cores,
    };
    const values: Record<string, unknown> = { ':booking': this.codec.bookingText(r.booking), ':one': 1, ':rgv': r.registrationVersion };
    const sets = ['#b.#uid = :booking', '#v = #v + :one'];
    const removes: string[] = [];
    if (holdsAppCards(r.booking)) {
      sets.push('#ag.#uid = :true');
      values[':true'] = true;
    } else removes.push('#ag.#uid');
    // A pod filtered again replaces its own booking, if that booking is still exactly the one read.
    const guards = ['attribute_exists(#v)', r.replacing ? '#b.#uid = :replacing' : 'attribute_not_exists(#b.#uid)', '#rgv = :rgv'];
    if (r.replacing) values[':replacing'] = this.codec.bookingText(r.replacing);
    r.claims.forEach((claim: StoredClaim, i) => {
      const card = `#cu.#g${i}`;
      names[`#g${i}`] = claim.uuid;
      Object.assign(values, {
        [`:ds${i}`]: claim.slots,
        [`:dm${i}`]: claim.mem,
        [`:dc${i}`]: claim.cores,
        [`:ms${i}`]: claim.maxSlotsBefore,
        [`:mm${i}`]: claim.maxMemBefore,
        [`:mc${i}`]: claim.maxCoresBefore,
      });
      sets.push(`${card}.#s = ${card}.#s + :ds${i}`, `${card}.#m = ${card}.#m + :dm${i}`, `${card}.#c = ${card}.#c + :dc${i}`);
      guards.push(`${card}.#s <= :ms${i}`, `${card}.#m <= :mm${i}`, `${card}.#c <= :mc${i}`);
      if (claim.exclusive) {
        values[`:ex${i}`] = claim.slotsHeldBefore;
        guards.push(`${card}.#s = :ex${i}`);
      }
    });
    return {
      TableName: this.table,
      Key: nodeKey(r.node),
      UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
      ConditionExpression: guards.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ...WRITE_RETURNS,
    };
  }

  reserve(reservation: Reservation): Promise<NodeWrite> {
    return this.write(reservation.node, this.reserveParams(reservation));
  }

  replaceBookingParams(node: string, uid: string, booking: Booking, expected: Booking, endLock = false): UpdateCommandInput {
    const appCards = holdsAppCards(booking);
    const sets = ['#b.#uid = :booking', '#v = #v + :one', ...(appCards ? ['#ag.#uid = :true'] : [])];
    const removes = [...(appCards ? [] : ['#ag.#uid']), ...(endLock ? ['#lk'] : [])];
    return {
      TableName: this.table,
      Key: nodeKey(node),
      UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
      // lockEndsWithBooking (lib/control/ledger.ts), in DynamoDB's words.
      ConditionExpression: `#b.#uid = :expected${endLock ? ' AND #lk.#u = :uid AND size(#lk.#w) = :none' : ''}`,
      ExpressionAttributeNames: {
        '#b': NodeAttr.bookings,
        '#uid': uid,
        '#v': NodeAttr.version,
        '#ag': NodeAttr.appCards,
        ...(endLock ? { '#lk': NodeAttr.lock, '#u': LockAttr.holderUid, '#w': LockAttr.waiters } : {}),
      },
      ExpressionAttributeValues: {
        ':booking': this.codec.bookingText(booking),
        ':expected': this.codec.bookingText(expected),
        ':one': 1,
        ...(appCards ? { ':true': true } : {}),
        ...(endLock ? { ':uid': uid, ':none': 0 } : {}),
      },
      ...WRITE_RETURNS,
    };
  }

  replaceBooking(node: string, uid: string, booking: Booking, expected: Booking, endLock = false): Promise<NodeWrite> {
    return this.write(node, this.replaceBookingParams(node, uid, booking, expected, endLock));
  }

  // ---- node locks --------------------------------------------------------------------------------

  /** Not `lockHeldByOther` (lib/control/ledger.ts), in DynamoDB's words, and only for a pod booked with cards in a regular container. */
  acquireLockParams(node: string, lock: NodeLock, nowMs: number): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: nodeKey(node),
      UpdateExpression: 'SET #lk = :lock',
      ConditionExpression: '(attribute_not_exists(#lk) OR #lk.#e < :now OR #lk.#u = :uid) AND #ag.#pod = :true',
      ExpressionAttributeNames: { '#lk': NodeAttr.lock, '#e': LockAttr.expiresAt, '#u': LockAttr.holderUid, '#ag': NodeAttr.appCards, '#pod': lock.holderUid },
      ExpressionAttributeValues: { ':lock': encodeLock(lock), ':now': nowMs, ':uid': lock.holderUid, ':true': true },
      ...WRITE_RETURNS,
    };
  }

  acquireLock(node: string, lock: NodeLock, nowMs: number): Promise<NodeWrite> {
    return this.write(node, this.acquireLockParams(node, lock, nowMs));
  }

  replaceLockParams(node: string, lock: NodeLock, stale: NodeLock): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: nodeKey(node),
      UpdateExpression: 'SET #lk = :lock',
      ConditionExpression: '#lk.#u = :staleUid AND #lk.#s = :staleSince',
      ExpressionAttributeNames: { '#lk': NodeAttr.lock, '#u': LockAttr.holderUid, '#s': LockAttr.since },
      ExpressionAttributeValues: { ':lock': encodeLock(lock), ':staleUid': stale.holderUid, ':staleSince': stale.sinceMs },
      ...WRITE_RETURNS,
    };
  }

  replaceLock(node: string, lock: NodeLock, stale: NodeLock): Promise<NodeWrite> {
    return this.write(node, this.replaceLockParams(node, lock, stale));
  }

  releaseLockParams(node: string, holderUid: string): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: nodeKey(node),
      UpdateExpression: 'REMOVE #lk',
      ConditionExpression: '#lk.#u = :uid',
      ExpressionAttributeNames: { '#lk': NodeAttr.lock, '#u': LockAttr.holderUid },
      ExpressionAttributeValues: { ':uid': holderUid },
      // The lock as it was: its waiters are nudged.
      ...WRITE_RETURNS,
      ReturnValues: 'ALL_OLD',
    };
  }

  async releaseLock(node: string, holderUid: string): Promise<LockRelease> {
    const write = await this.write(node, this.releaseLockParams(node, holderUid));
    if (!write.ok) return write;
    const { lock: released, ...after } = write.node;
    return released ? { ok: true, node: after, released } : { ok: false, current: after };
  }

  markLockMirroredParams(node: string, holderUid: string): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: nodeKey(node),
      UpdateExpression: 'SET #lk.#m = :true',
      ConditionExpression: '#lk.#u = :uid',
      ExpressionAttributeNames: { '#lk': NodeAttr.lock, '#u': LockAttr.holderUid, '#m': LockAttr.mirrored },
      ExpressionAttributeValues: { ':uid': holderUid, ':true': true },
      ...WRITE_RETURNS,
    };
  }

  markLockMirrored(node: string, holderUid: string): Promise<NodeWrite> {
    return this.write(node, this.markLockMirroredParams(node, holderUid));
  }

  addLockWaiterParams(node: string, holderUid: string, waiterUid: string, waiter: string): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: nodeKey(node),
      UpdateExpression: 'SET #lk.#w.#waiter = :waiter',
      ConditionExpression: '#lk.#u = :uid',
      ExpressionAttributeNames: { '#lk': NodeAttr.lock, '#u': LockAttr.holderUid, '#w': LockAttr.waiters, '#waiter': waiterUid },
      ExpressionAttributeValues: { ':uid': holderUid, ':waiter': waiter },
      ...WRITE_RETURNS,
    };
  }

  addLockWaiter(node: string, holderUid: string, waiterUid: string, waiter: string): Promise<NodeWrite> {
    return this.write(node, this.addLockWaiterParams(node, holderUid, waiterUid, waiter));
  }

  private async write(node: string, params: UpdateCommandInput): Promise<NodeWrite> {
    try {
      const out = await send(this.doc, this.stats, 'UpdateItem', params, this.writeUnitsOf(node));
      return { ok: true, node: this.decoded(node, (out.Attributes ?? {}) as Item) };
    } catch (err) {
      if (!isConditionFailed(err)) throw err;
      const stored = err instanceof DynamoServiceError ? err.item : undefined;
      return stored ? { ok: false, current: this.decoded(node, stored) } : { ok: false };
    }
  }

  private decoded(name: string, item: Item): NodeLedger {
    this.sizes.set(name, approximateItemBytes(item));
    return this.codec.decode(name, item);
  }

  private writeUnitsOf(node: string): number {
    return Math.max(1, Math.ceil((this.sizes.get(node) ?? 0) / 1024));
  }

  // ---- journal -----------------------------------------------------------------------------------

  readJournalParams(afterSeq: number, consistent: boolean, startKey?: Record<string, unknown>): QueryCommandInput {
    return {
      TableName: this.table,
      KeyConditionExpression: '#pk = :pk AND #sk > :after',
      ExpressionAttributeNames: { '#pk': KeyAttr.partition, '#sk': KeyAttr.sort },
      ExpressionAttributeValues: { ':pk': JOURNAL_PARTITION, ':after': journalSortKey(afterSeq) },
      ConsistentRead: consistent,
      ReturnConsumedCapacity: 'TOTAL',
      ...(startKey ? { ExclusiveStartKey: startKey } : {}),
    };
  }

  async readJournal(afterSeq: number, options: ReadOptions): Promise<JournalEntry[]> {
    const entries: JournalEntry[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const params = this.readJournalParams(afterSeq, options.consistent, startKey);
      const out = await send(this.doc, this.stats, 'Query', params);
      for (const item of (out.Items ?? []) as Item[]) entries.push(decodeJournalEntry(item));
      startKey = out.LastEvaluatedKey;
    } while (startKey !== undefined);
    const last = entries[entries.length - 1];
    if (last) this.journalSeen = Math.max(this.journalSeen, last.seq);
    return entries;
  }

  journalHeadParams(): QueryCommandInput {
    return {
      TableName: this.table,
      KeyConditionExpression: '#pk = :pk',
      ExpressionAttributeNames: { '#pk': KeyAttr.partition },
      ExpressionAttributeValues: { ':pk': JOURNAL_PARTITION },
      ScanIndexForward: false,
      Limit: 1,
      ConsistentRead: true,
      ReturnConsumedCapacity: 'TOTAL',
    };
  }

  async journalHead(): Promise<number> {
    const out = await send(this.doc, this.stats, 'Query', this.journalHeadParams());
    const newest = out.Items?.[0];
    const head = newest ? journalSeqOf(newest) : 0;
    this.journalSeen = Math.max(this.journalSeen, head);
    return head;
  }

  appendJournalParams(entry: JournalEntry): PutCommandInput {
    return {
      TableName: this.table,
      Item: encodeJournalEntry(entry),
      ConditionExpression: 'attribute_not_exists(#pk)',
      ExpressionAttributeNames: { '#pk': KeyAttr.partition },
      ReturnConsumedCapacity: 'TOTAL',
    };
  }

  /** Takes the next number by writing it; a writer that lost the number to another reads the head and tries after it. */
  async appendJournal(entry: Omit<JournalEntry, 'seq' | 'unreadable'>): Promise<number> {
    let seq = this.journalSeen + 1;
    for (let round = 0; round < JOURNAL_APPEND_ROUNDS; round++) {
      try {
        await send(this.doc, this.stats, 'PutItem', this.appendJournalParams({ ...entry, seq }));
        this.journalSeen = Math.max(this.journalSeen, seq);
        return seq;
      } catch (err) {
        if (!isConditionFailed(err)) throw err;
        seq = (await this.journalHead()) + 1;
      }
    }
    throw new StoreUnavailableError('could not append to the change journal: too many concurrent writers');
  }

  // ---- quotas ------------------------------------------------------------------------------------

  async readQuota(namespace: string): Promise<QuotaLedger | undefined> {
    const items = await this.batchGet([quotaKey(namespace)], true);
    const item = items[0];
    if (!item) return undefined;
    const quota = decodeQuota(item);
    return 'unreadable' in quota ? undefined : quota;
  }

  putQuotaParams(namespace: string, quota: QuotaLedger, expectedVersion: number | null): PutCommandInput {
    return {
      TableName: this.table,
      Item: encodeQuota(namespace, quota),
      ConditionExpression: expectedVersion === null ? 'attribute_not_exists(#pk)' : '#v = :expected',
      ExpressionAttributeNames: expectedVersion === null ? { '#pk': KeyAttr.partition } : { '#v': QuotaAttr.version },
      ...(expectedVersion === null ? {} : { ExpressionAttributeValues: { ':expected': expectedVersion } }),
      ReturnConsumedCapacity: 'TOTAL',
    };
  }

  async putQuota(namespace: string, quota: QuotaLedger, expectedVersion: number | null): Promise<boolean> {
    try {
      await send(this.doc, this.stats, 'PutItem', this.putQuotaParams(namespace, quota, expectedVersion));
    } catch (err) {
      if (isConditionFailed(err)) return false;
      throw err;
    }
    if (expectedVersion === null) {
      const params: UpdateCommandInput = {
        TableName: this.table,
        Key: QUOTA_DIRECTORY_KEY,
        UpdateExpression: 'ADD #names :names',
        ExpressionAttributeNames: { '#names': DirectoryAttr.names },
        ExpressionAttributeValues: { ':names': new Set([namespace]) },
        ReturnConsumedCapacity: 'TOTAL',
      };
      await send(this.doc, this.stats, 'UpdateItem', params);
    }
    return true;
  }

  async readQuotaNamespaces(): Promise<string[]> {
    const [item] = await this.batchGet([QUOTA_DIRECTORY_KEY], true);
    const set = item?.[DirectoryAttr.names];
    return set instanceof Set ? [...set].filter((n): n is string => typeof n === 'string').sort() : [];
  }
}

/** Writes return the item after them; a refused one returns the item as stored (where the store supports it). */
const WRITE_RETURNS = {
  ReturnValues: 'ALL_NEW',
  ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  ReturnConsumedCapacity: 'TOTAL',
} as const;
