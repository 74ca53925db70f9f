/**
 * The state table adapter: node entries, node locks and namespace quotas (layout in ./model.ts).
 * Each operation has a pure `…Params` builder (asserted by unit tests) and a thin send step.
 */
import { BatchGetCommand, GetCommand, UpdateCommand, type BatchGetCommandInput, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CorruptItemError, StoreUnavailableError } from '../errors';
import type { Sleep } from '../clock';
import { isConditionFailed, send, type CallCounter } from './dynamo';
import {
  LOCK_PREFIX,
  NODE_PREFIX,
  decodeBooking,
  encodeBooking,
  holdsAppCards,
  lockSchema,
  storedNodeEntrySchema,
  quotaItemSchema,
  quotaKey,
  shardKey,
  shardOf,
  type NodeEntry,
  type NodeLock,
  type PodEntry,
  type QuotaItem,
  type SealedNodeEntry,
  type StoredNodeEntry,
} from './model';

/** What one card takes from a fast reservation, and the most its counters may hold before it. */
export interface CardClaim {
  readonly uuid: string;
  readonly slots: number;
  readonly mem: number;
  readonly cores: number;
  readonly maxSlotsBefore: number;
  readonly maxMemBefore: number;
  readonly maxCoresBefore: number;
  /** The pod needs the card to itself (whole-card cores or the mutex policy): no other slot may be in use. */
  readonly exclusive: boolean;
  /** Slots of this card the pod's own replaced booking held (0 for a new booking). */
  readonly slotsHeldBefore: number;
}

export interface ClusterSnapshot {
  /** Every node entry, by node name. */
  readonly nodes: Map<string, NodeEntry>;
  readonly locks: Map<string, NodeLock>;
  /** The quota item of the namespace asked for, if any. */
  readonly quota?: QuotaItem;
}

export type WriteOutcome = 'ok' | 'conflict';

const BATCH_GET_MAX_ROUNDS = 5;

export class StateStore {
  readonly counter: CallCounter = { calls: 0, byOperation: {} };

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly table: string,
    readonly shards: number,
    private readonly sleep: Sleep,
  ) {}

  shardOf(node: string): number {
    return shardOf(node, this.shards);
  }

  // ---- reads -------------------------------------------------------------------------------------

  readClusterParams(namespace: string | undefined, consistent: boolean): BatchGetCommandInput {
    const keys = Array.from({ length: this.shards }, (_, i) => shardKey(i));
    if (namespace !== undefined) keys.push(quotaKey(namespace));
    return { RequestItems: { [this.table]: { Keys: keys, ConsistentRead: consistent } } };
  }

  /** All shards (and a namespace's quota) in one BatchGetItem; unprocessed keys are retried a few times. */
  async readCluster(namespace?: string, consistent = false): Promise<ClusterSnapshot> {
    let request = this.readClusterParams(namespace, consistent).RequestItems;
    const items: Record<string, unknown>[] = [];
    for (let round = 0; request && Object.keys(request).length > 0; round++) {
      if (round === BATCH_GET_MAX_ROUNDS) throw new StoreUnavailableError('store kept returning unprocessed keys');
      // Keys left over for size are fetched again at once; a second leftover round is throttling: back off.
      if (round > 1) await this.sleep(20 * 2 ** round);
      const out = await send(this.counter, 'BatchGetItem', () => this.doc.send(new BatchGetCommand({ RequestItems: request })));
      items.push(...((out.Responses?.[this.table] ?? []) as Record<string, unknown>[]));
      request = out.UnprocessedKeys;
    }
    const snapshot: ClusterSnapshot = { nodes: new Map(), locks: new Map() };
    let quota: QuotaItem | undefined;
    for (const item of items) {
      if (typeof item.pk === 'string' && item.pk.startsWith('QUOTA#')) quota = parseQuota(item);
      else collectShard(item, snapshot);
    }
    return quota ? { ...snapshot, quota } : snapshot;
  }

  readNodeParams(node: string, consistent: boolean) {
    return {
      TableName: this.table,
      Key: shardKey(this.shardOf(node)),
      ProjectionExpression: '#n, #l',
      ExpressionAttributeNames: { '#n': NODE_PREFIX + node, '#l': LOCK_PREFIX + node },
      ConsistentRead: consistent,
    };
  }

  /** One node's entry and lock (strongly consistent by default: used after a lost race). */
  async readNode(node: string, consistent = true): Promise<{ entry?: NodeEntry; lock?: NodeLock }> {
    const out = await send(this.counter, 'GetItem', () => this.doc.send(new GetCommand(this.readNodeParams(node, consistent))));
    const item = out.Item ?? {};
    const rawEntry = item[NODE_PREFIX + node];
    const rawLock = item[LOCK_PREFIX + node];
    return {
      ...(rawEntry !== undefined ? { entry: parseEntry(node, rawEntry) } : {}),
      ...(rawLock !== undefined ? { lock: parseLock(node, rawLock) } : {}),
    };
  }

  // ---- node entries ------------------------------------------------------------------------------

  /** Replace a node entry if it is still at `expectedVer` (null: only if the node has no entry yet). */
  putNodeEntryParams(node: string, entry: SealedNodeEntry, expectedVer: number | null): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: shardKey(this.shardOf(node)),
      UpdateExpression: 'SET #n = :entry',
      ConditionExpression: expectedVer === null ? 'attribute_not_exists(#n)' : '#n.#ver = :expected',
      ExpressionAttributeNames: { '#n': NODE_PREFIX + node, ...(expectedVer === null ? {} : { '#ver': 'ver' }) },
      ExpressionAttributeValues: { ':entry': storedForm(entry), ...(expectedVer === null ? {} : { ':expected': expectedVer }) },
    };
  }

  async putNodeEntry(node: string, entry: SealedNodeEntry, expectedVer: number | null): Promise<WriteOutcome> {
    return this.conditional('UpdateItem', this.putNodeEntryParams(node, entry, expectedVer));
  }

  /**
   * Book a pod by adding to the cards' counters, guarded by their capacity rather than by the entry's
   * version: concurrent filters on one node both succeed when both fit, and the guard refuses the one
   * that would over-allocate. The version still moves, so whole-entry writers see the change.
   */
  reserveParams(node: string, uid: string, booking: PodEntry, regv: number, claims: readonly CardClaim[], replacing?: PodEntry): UpdateCommandInput {
    const names: Record<string, string> = {
      '#n': NODE_PREFIX + node,
      '#pods': 'pods',
      '#pod': uid,
      '#ver': 'ver',
      '#regv': 'regv',
      '#ag': 'ag',
      '#cu': 'cu',
      '#s': 's',
      '#m': 'm',
      '#c': 'c',
    };
    const values: Record<string, unknown> = { ':booking': encodeBooking(booking), ':one': 1, ':regv': regv };
    const sets = ['#n.#pods.#pod = :booking', '#n.#ver = #n.#ver + :one'];
    const removes: string[] = [];
    if (holdsAppCards(booking)) {
      sets.push('#n.#ag.#pod = :true');
      values[':true'] = true;
    } else removes.push('#n.#ag.#pod');
    // A pod filtered again replaces its own booking, if that booking is still exactly the one read.
    const guards = [replacing ? '#n.#pods.#pod = :replacing' : 'attribute_not_exists(#n.#pods.#pod)', '#n.#regv = :regv'];
    if (replacing) values[':replacing'] = encodeBooking(replacing);
    claims.forEach((claim, i) => {
      const card = `#n.#cu.#g${i}`;
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
      Key: shardKey(this.shardOf(node)),
      UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
      ConditionExpression: guards.join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    };
  }

  /**
   * Replace one booking whose usage is unchanged (a reservation confirmed, a phase or bind-phase update)
   * if it is still exactly what was read: no version guard on the whole entry, so it does not race filters.
   */
  updateBookingParams(node: string, uid: string, booking: PodEntry, expected: PodEntry): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: shardKey(this.shardOf(node)),
      UpdateExpression: `SET #n.#pods.#pod = :booking, #n.#ver = #n.#ver + :one${holdsAppCards(booking) ? ', #n.#ag.#pod = :true' : ' REMOVE #n.#ag.#pod'}`,
      ConditionExpression: '#n.#pods.#pod = :expected',
      ExpressionAttributeNames: { '#n': NODE_PREFIX + node, '#pods': 'pods', '#pod': uid, '#ver': 'ver', '#ag': 'ag' },
      ExpressionAttributeValues: {
        ':booking': encodeBooking(booking),
        ':expected': encodeBooking(expected),
        ':one': 1,
        ...(holdsAppCards(booking) ? { ':true': true } : {}),
      },
    };
  }

  async updateBooking(node: string, uid: string, booking: PodEntry, expected: PodEntry): Promise<WriteOutcome> {
    return this.conditional('UpdateItem', this.updateBookingParams(node, uid, booking, expected));
  }

  async reserve(node: string, uid: string, booking: PodEntry, regv: number, claims: readonly CardClaim[], replacing?: PodEntry): Promise<WriteOutcome> {
    return this.conditional('UpdateItem', this.reserveParams(node, uid, booking, regv, claims, replacing));
  }

  // ---- node locks --------------------------------------------------------------------------------

  /**
   * Take the lock when it is absent, expired, or already this pod's (re-entrant, as HAMi), and only while
   * the pod is booked on the node with a regular container holding cards (else the caller looks closer).
   */
  acquireLockParams(node: string, lock: NodeLock, nowMs: number, podUid: string): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: shardKey(this.shardOf(node)),
      UpdateExpression: 'SET #l = :lock',
      ConditionExpression: '(attribute_not_exists(#l) OR #l.#exp < :now OR #l.#uid = :uid) AND #n.#ag.#pod = :true',
      ExpressionAttributeNames: {
        '#l': LOCK_PREFIX + node,
        '#exp': 'expiresAt',
        '#uid': 'holderUid',
        '#n': NODE_PREFIX + node,
        '#ag': 'ag',
        '#pod': podUid,
      },
      ExpressionAttributeValues: { ':lock': lock, ':now': nowMs, ':uid': lock.holderUid, ':true': true },
    };
  }

  async acquireLock(node: string, lock: NodeLock, nowMs: number, podUid: string): Promise<WriteOutcome> {
    return this.conditional('UpdateItem', this.acquireLockParams(node, lock, nowMs, podUid));
  }

  /** Take over a lock whose holder is gone: only if it is still exactly the lock we judged stale. */
  replaceLockParams(node: string, lock: NodeLock, stale: NodeLock): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: shardKey(this.shardOf(node)),
      UpdateExpression: 'SET #l = :lock',
      ConditionExpression: '#l.#uid = :staleUid AND #l.#since = :staleSince',
      ExpressionAttributeNames: { '#l': LOCK_PREFIX + node, '#uid': 'holderUid', '#since': 'since' },
      ExpressionAttributeValues: { ':lock': lock, ':staleUid': stale.holderUid, ':staleSince': stale.since },
    };
  }

  async replaceLock(node: string, lock: NodeLock, stale: NodeLock): Promise<WriteOutcome> {
    return this.conditional('UpdateItem', this.replaceLockParams(node, lock, stale));
  }

  /** Release only if this pod holds the lock (HAMi's owner-checked release). */
  releaseLockParams(node: string, holderUid: string): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: shardKey(this.shardOf(node)),
      UpdateExpression: 'REMOVE #l',
      ConditionExpression: '#l.#uid = :uid',
      ExpressionAttributeNames: { '#l': LOCK_PREFIX + node, '#uid': 'holderUid' },
      ExpressionAttributeValues: { ':uid': holderUid },
    };
  }

  async releaseLock(node: string, holderUid: string): Promise<WriteOutcome> {
    return this.conditional('UpdateItem', this.releaseLockParams(node, holderUid));
  }

  // ---- quotas ------------------------------------------------------------------------------------

  putQuotaParams(namespace: string, item: QuotaItem, expectedVer: number | null): UpdateCommandInput {
    return {
      TableName: this.table,
      Key: quotaKey(namespace),
      UpdateExpression: 'SET #ver = :ver, #quotas = :quotas',
      ConditionExpression: expectedVer === null ? 'attribute_not_exists(#ver)' : '#ver = :expected',
      ExpressionAttributeNames: { '#ver': 'ver', '#quotas': 'quotas' },
      ExpressionAttributeValues: { ':ver': item.ver, ':quotas': item.quotas, ...(expectedVer === null ? {} : { ':expected': expectedVer }) },
    };
  }

  async putQuota(namespace: string, item: QuotaItem, expectedVer: number | null): Promise<WriteOutcome> {
    return this.conditional('UpdateItem', this.putQuotaParams(namespace, item, expectedVer));
  }

  async readQuota(namespace: string): Promise<QuotaItem | undefined> {
    const out = await send(this.counter, 'GetItem', () =>
      this.doc.send(new GetCommand({ TableName: this.table, Key: quotaKey(namespace), ConsistentRead: true })),
    );
    return out.Item ? parseQuota(out.Item) : undefined;
  }

  private async conditional(operation: string, params: UpdateCommandInput): Promise<WriteOutcome> {
    try {
      await send(this.counter, operation, () => this.doc.send(new UpdateCommand(params)));
      return 'ok';
    } catch (err) {
      if (isConditionFailed(err)) return 'conflict';
      throw err;
    }
  }
}

function collectShard(item: Record<string, unknown>, into: { nodes: Map<string, NodeEntry>; locks: Map<string, NodeLock> }): void {
  for (const [attr, value] of Object.entries(item)) {
    if (attr.startsWith(NODE_PREFIX)) {
      const node = attr.slice(NODE_PREFIX.length);
      into.nodes.set(node, parseEntry(node, value));
    } else if (attr.startsWith(LOCK_PREFIX)) {
      const node = attr.slice(LOCK_PREFIX.length);
      into.locks.set(node, parseLock(node, value));
    }
  }
}

function parseEntry(node: string, raw: unknown): NodeEntry {
  const parsed = storedNodeEntrySchema.safeParse(raw);
  if (!parsed.success) throw new CorruptItemError(`stored entry of node ${node} does not match its schema`, { cause: parsed.error });
  const { ag: _ag, pods, ...rest } = parsed.data;
  const decoded: Record<string, PodEntry> = {};
  try {
    for (const [uid, text] of Object.entries(pods)) decoded[uid] = decodeBooking(text);
  } catch (err) {
    throw new CorruptItemError(`a stored booking of node ${node} cannot be read`, { cause: err });
  }
  return { ...rest, pods: decoded };
}

/** The stored form of a whole entry: bookings as text, and the lock guard's `ag` map. */
export function toStoredEntry(entry: NodeEntry): StoredNodeEntry {
  const pods: Record<string, string> = {};
  const ag: Record<string, boolean> = {};
  for (const [uid, booking] of Object.entries(entry.pods)) {
    pods[uid] = encodeBooking(booking);
    if (holdsAppCards(booking)) ag[uid] = true;
  }
  return { ...entry, pods, ag };
}

function parseLock(node: string, raw: unknown): NodeLock {
  const parsed = lockSchema.safeParse(raw);
  if (!parsed.success) throw new CorruptItemError(`stored lock of node ${node} does not match its schema`, { cause: parsed.error });
  return parsed.data;
}

function parseQuota(raw: unknown): QuotaItem {
  const parsed = quotaItemSchema.safeParse(raw);
  if (!parsed.success) throw new CorruptItemError('stored quota item does not match its schema', { cause: parsed.error });
  return parsed.data;
}

function storedForm(entry: SealedNodeEntry): StoredNodeEntry {
  const { __sealed: _sealed, ...plain } = entry;
  return toStoredEntry(plain);
}
