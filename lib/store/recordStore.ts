/**
 * The records table's adapter (scheduler-log records; the layout and every attribute name are ./recordCodec.ts): the
 * requests that write and read them, name lists written once per retention period per environment, and batches the
 * store leaves unprocessed sent again.
 */
import type { BatchWriteCommandInput, PutCommandInput, QueryCommandInput, UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import type { Sleep } from '../clock';
import { StoreUnavailableError } from '../errors';
import type { AttemptRecord, BindRecord, PodRef } from '../diagnostics/record';
import type { AttemptSummary } from '../diagnostics/summary';
import type { PodRecords, RecordStorePort, RegisteredCards, SummaryPage, SummaryQuery } from '../control/ports';
import { batchGetAll, emptyStats, isConditionFailed, send, type StoreStats } from './dynamo';
import type { DocumentClient } from './dynamoHttp';
import {
  attemptItem,
  bindItem,
  decodeNameListItem,
  decodePodItems,
  decodeSummary,
  encodeRecordApart,
  expiryOf,
  finishRecord,
  formatPosition,
  nameListItem,
  nameListKey,
  nameListKeyOf,
  NameListKeys,
  parsePosition,
  podItemsQuery,
  positionAfter,
  summaryBindUpdate,
  summaryItem,
  summaryListQuery,
  SUMMARY_SHARDS,
  type EncodedRecord,
  type SummaryPosition,
} from './recordCodec';

/** Rounds of BatchWriteItem for items the store left unprocessed (throttling) before giving up. */
const BATCH_WRITE_MAX_ROUNDS = 5;

/** Name lists this environment remembers having written; past it, it forgets them all (it then writes them again). */
const NAME_LISTS_REMEMBERED = 256;

export class RecordStore implements RecordStorePort {
  /** The name lists this environment wrote, by key, and when: each is written again once a retention period has passed. */
  private readonly listsWritten = new Map<string, number>();
  private readonly keys = new NameListKeys();

  constructor(
    private readonly doc: DocumentClient,
    readonly table: string,
    private readonly retentionSeconds: number,
    readonly stats: StoreStats = emptyStats(),
    private readonly sleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  ) {}

  /**
   * The attempt item and the pod's summary item, in one request; with them the list of node names the attempt refers
   * to, where this environment has not written it within a retention period.
   */
  putAttemptParams(record: AttemptRecord, timeMs: number, encoded: EncodedRecord = encodeRecordApart(record, this.keys), list = this.listToWrite(encoded, timeMs)): BatchWriteCommandInput {
    const expiresAt = expiryOf(timeMs, this.retentionSeconds);
    return {
      RequestItems: {
        [this.table]: [
          { PutRequest: { Item: attemptItem(record, timeMs, encoded.body, expiresAt) } },
          { PutRequest: { Item: summaryItem(record, timeMs, expiresAt) } },
          // A list outlives, by a retention period, every attempt written before this environment writes it again.
          ...(list ? [{ PutRequest: { Item: nameListItem(list, expiresAt + this.retentionSeconds) } }] : []),
        ],
      },
      ReturnConsumedCapacity: 'TOTAL',
    };
  }

  async putAttempt(record: AttemptRecord, timeMs: number): Promise<void> {
    // Compressed on this thread: a filter's environment serves one request at a time, so the thread pool's
    // hand-offs only delayed the record (by about 1 ms at 1,000 nodes, measured with `npm run bench`).
    const encoded = encodeRecordApart(record, this.keys);
    const list = this.listToWrite(encoded, timeMs);
    let request = this.putAttemptParams(record, timeMs, encoded, list).RequestItems;
    for (let round = 0; request && Object.keys(request).length > 0; round++) {
      if (round === BATCH_WRITE_MAX_ROUNDS) throw new StoreUnavailableError('store kept returning unprocessed scheduling records');
      if (round > 0) await this.sleep(20 * 2 ** round);
      const out = await send(this.doc, this.stats, 'BatchWriteItem', { RequestItems: request, ReturnConsumedCapacity: 'TOTAL' });
      request = out.UnprocessedItems;
    }
    if (list !== undefined) {
      if (this.listsWritten.size >= NAME_LISTS_REMEMBERED) this.listsWritten.clear();
      this.listsWritten.set(list.key, timeMs);
    }
  }

  /**
   * The name list that must go with an attempt written at `timeMs`: one this environment has not written within a
   * retention period (the list then outlives every attempt written until it is written again).
   */
  private listToWrite(encoded: EncodedRecord, timeMs: number): EncodedRecord['list'] {
    if (encoded.list === undefined) return undefined;
    const written = this.listsWritten.get(encoded.list.key);
    return written === undefined || timeMs - written >= this.retentionSeconds * 1000 || timeMs < written ? encoded.list : undefined;
  }

  /**
   * Name lists by key, as stored (absent: expired, or never written). Read consistently: a list is written with the
   * first attempt that refers to it, and an eventually consistent read right after could miss it.
   */
  private async readNameLists(keys: readonly string[], nowS: number): Promise<ReadonlyMap<string, readonly string[]>> {
    const lists = new Map<string, readonly string[]>();
    for (const item of await batchGetAll(this.doc, this.stats, this.sleep, this.table, keys.map(nameListKey), true)) {
      const list = decodeNameListItem(item, nowS);
      if (list !== undefined) lists.set(list.key, list.names);
    }
    return lists;
  }

  /** The summary's bind part, replaced only while the summary's attempt is not newer than the outcome. */
  putSummaryBindParams(pod: PodRef, bind: BindRecord, timeMs: number): UpdateCommandInput {
    return { TableName: this.table, ...summaryBindUpdate(pod, bind, timeMs, expiryOf(timeMs, this.retentionSeconds)), ReturnConsumedCapacity: 'TOTAL' };
  }

  putBindParams(pod: PodRef, bind: BindRecord, timeMs: number): PutCommandInput {
    return { TableName: this.table, Item: bindItem(pod, bind, timeMs, expiryOf(timeMs, this.retentionSeconds)), ReturnConsumedCapacity: 'TOTAL' };
  }

  async putBind(pod: PodRef, bind: BindRecord, timeMs: number): Promise<void> {
    const params = this.putBindParams(pod, bind, timeMs);
    const summary = this.putSummaryBindParams(pod, bind, timeMs);
    // Sent together: one round trip. A summary of a newer attempt (or none) refuses the update, as it should.
    await Promise.all([
      send(this.doc, this.stats, 'PutItem', params),
      send(this.doc, this.stats, 'UpdateItem', summary).catch((err: unknown) => {
        if (!isConditionFailed(err)) throw err;
      }),
    ]);
  }

  listParams(position: SummaryPosition, namespace: string | undefined, limit: number, nowMs: number): QueryCommandInput {
    return { TableName: this.table, ...summaryListQuery(position, namespace, limit, Math.floor(nowMs / 1000)), ReturnConsumedCapacity: 'TOTAL' };
  }

  /** Shard after shard (a namespace: its shard alone), each in sort-key order, until `limit` items are found. */
  async listSummaries(query: SummaryQuery): Promise<SummaryPage> {
    let position = parsePosition(query.after, query.namespace);
    const items: AttemptSummary[] = [];
    for (;;) {
      const params = this.listParams(position, query.namespace, query.limit - items.length, query.nowMs);
      const out = await send(this.doc, this.stats, 'Query', params);
      for (const item of out.Items ?? []) {
        items.push(decodeSummary(item));
        position = positionAfter(position.shard, item);
      }
      const last = out.LastEvaluatedKey;
      if (last !== undefined) position = positionAfter(position.shard, last);
      else if (query.namespace === undefined && position.shard + 1 < SUMMARY_SHARDS) position = { shard: position.shard + 1, sk: '' };
      else return { items };
      if (items.length >= query.limit) return { items, next: formatPosition(position) };
    }
  }

  queryPodParams(namespace: string, name: string, attempts: number): QueryCommandInput {
    return { TableName: this.table, ...podItemsQuery(namespace, name, attempts), ReturnConsumedCapacity: 'TOTAL' };
  }

  /** The bind item and up to `attempts` newest unexpired attempts of a pod. */
  async readPod(namespace: string, name: string, attempts: number, nowMs: number, registered?: () => Promise<RegisteredCards>): Promise<PodRecords> {
    const params = this.queryPodParams(namespace, name, attempts);
    const out = await send(this.doc, this.stats, 'Query', params);
    const nowS = Math.floor(nowMs / 1000);
    const { bind, attempts: stored } = decodePodItems(out.Items ?? [], attempts, nowS);
    const listKeys = [...new Set(stored.flatMap(({ record }) => nameListKeyOf(record) ?? []))];
    // The cards' ids and the name lists come from different items: read side by side.
    const [cards, lists] = await Promise.all([
      stored.length > 0 ? registered?.() : undefined,
      listKeys.length > 0 ? this.readNameLists(listKeys, nowS) : undefined,
    ]);
    const found = stored.map(({ record, timeMs }) => ({ record: finishRecord(record, cards, lists), timeMs }));
    return bind ? { attempts: found, bind } : { attempts: found };
  }
}
