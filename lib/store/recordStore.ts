/**
 * Scheduling records for the scheduler log (records table, keys pk/sk, TTL on `expiresAt`).
 *   pk `POD#<ns>/<name>`, sk `A#<epoch ms>#<attemptId>`: one filter attempt, Brotli-compressed JSON (`enc`
 *     `br`; attempts written before Brotli have no `enc` and are gzip'd): the evidence of a thousand nodes is
 *     about 1.5 KB, far under DynamoDB's 400 KB item limit (a passed filter's HAMi message is left out and rebuilt
 *     from the evidence on read: `encodeRecord`; the tried cards' ids are left out too: lib/engine/evidence.ts);
 *   pk `POD#<ns>/<name>`, sk `BIND`: the latest bind outcome (written without a read, so a bind costs
 *     one call); it belongs to the newest attempt made before it.
 *   pk `LOGS#<00..15>` (the namespace's shard), sk `<namespace hash>#<name hash>`: the pod's summary, of its
 *     latest attempt (docs/state.md, "Scheduler-log summaries"), written with the attempt in one BatchWriteItem;
 *     its bind part is updated by the bind outcome. Hashes, not names, so a listing's position names no pod.
 * DynamoDB deletes expired items lazily (dynalite never does), so expired items are treated as absent here.
 */
import { createHash } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync } from 'node:zlib';
import type { BatchWriteCommandInput, PutCommandInput, QueryCommandInput, UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import type { Sleep } from '../clock';
import { DecisionTrace, type RegisteredCards } from '../engine/evidence';
import { BadRequestError, CorruptItemError, errorMessage, StoreUnavailableError } from '../errors';
import type { AttemptRecord, BindRecord, FilterRecord, PodRef } from '../diagnostics/record';
import { fitNodeMessage, listingOrder } from '../engine/messages';
import type { NodeEvidence } from '../engine/types';
import { shortBind, summarizeAttempt, type AttemptSummary } from '../diagnostics/summary';
import type { PodRecords, RecordStorePort, SummaryPage, SummaryQuery } from '../control/ports';
import { emptyStats, isConditionFailed, send, type StoreStats } from './dynamo';
import type { DocumentClient, DocumentItem } from './dynamoHttp';

/** Items above this are stored without per-card evidence rather than rejected by DynamoDB. */
const MAX_RECORD_BYTES = 350 * 1024;

const bindSchema = z.object({
  status: z.enum(['passed', 'failed', 'pending']),
  summary: z.string(),
  node: z.string().optional(),
  time: z.string().optional(),
});

const bindItemSchema = bindSchema.extend({ timeMs: z.number(), expiresAt: z.number() });

/** The summary item's JSON body (`s`); its bind part (`b`) is stored apart so a bind outcome can replace it alone. */
const summaryBodySchema = z.object({
  pod: z.object({ namespace: z.string(), name: z.string(), uid: z.string() }),
  attemptId: z.string(),
  time: z.string(),
  filter: z.object({
    status: z.enum(['passed', 'failed']),
    summary: z.string(),
    node: z.string().optional(),
    reasons: z.array(z.object({ code: z.string(), nodes: z.number() })),
    evaluated: z.number(),
    requestType: z.string().optional(),
  }),
});

/** How many partitions the summaries are spread over (one per namespace; a list of all reads them in turn). */
export const SUMMARY_SHARDS = 16;
/** Rounds of BatchWriteItem for items the store left unprocessed (throttling) before giving up. */
const BATCH_WRITE_MAX_ROUNDS = 5;

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Where a pod's summary lives: the namespace's shard, and a sort key that groups the namespace. */
export function summaryKey(namespace: string, name: string): { readonly shard: number; readonly sk: string } {
  const ns = digest(namespace);
  return { shard: (ns[0] ?? 0) % SUMMARY_SHARDS, sk: `${namespacePrefix(ns)}${digest(name).subarray(0, 16).toString('base64url')}` };
}

/** The sort-key prefix every summary of the namespace shares. */
export function summaryPrefix(namespace: string): string {
  return namespacePrefix(digest(namespace));
}

function namespacePrefix(nsDigest: Buffer): string {
  return `${nsDigest.subarray(0, 16).toString('base64url')}#`;
}

/** A listing position: `<shard>:<sort key>` (after that item), or `<shard>:` (the start of that shard). */
export interface SummaryPosition {
  readonly shard: number;
  readonly sk: string;
}

export function formatPosition(position: SummaryPosition): string {
  return `${position.shard}:${position.sk}`;
}

/** The position `after`, checked against the list it claims to continue (a namespace's positions stay in its shard and prefix). */
export function parsePosition(after: string | undefined, namespace: string | undefined): SummaryPosition {
  const start = namespace === undefined ? { shard: 0, sk: '' } : { shard: summaryKey(namespace, '').shard, sk: '' };
  if (after === undefined) return start;
  const match = /^(\d{1,2}):([A-Za-z0-9_-]{22}#[A-Za-z0-9_-]{22})?$/.exec(after);
  const shard = Number(match?.[1]);
  if (!match || shard >= SUMMARY_SHARDS) throw new BadRequestError('continue token is not valid for this list');
  const sk = match[2] ?? '';
  if (namespace !== undefined && (shard !== start.shard || (sk !== '' && !sk.startsWith(namespacePrefix(digest(namespace)))))) {
    throw new BadRequestError('continue token belongs to another list');
  }
  return { shard, sk };
}

type StoredSummaryItem = Record<string, unknown>;

/** A stored summary item back into its domain form (CorruptItemError when it does not match). */
export function decodeSummary(item: StoredSummaryItem): AttemptSummary {
  let body: unknown;
  let bind: unknown;
  try {
    body = JSON.parse(String(item.s));
    bind = JSON.parse(String(item.b));
  } catch (err) {
    throw new CorruptItemError('stored scheduler-log summary cannot be decoded', { cause: err });
  }
  const parsedBody = summaryBodySchema.safeParse(body);
  const parsedBind = bindSchema.safeParse(bind);
  if (!parsedBody.success || !parsedBind.success || typeof item.tms !== 'number') throw new CorruptItemError('stored scheduler-log summary does not match its schema');
  return { ...parsedBody.data, timeMs: item.tms, bind: parsedBind.data };
}

/** The summary item's attributes (keys apart). */
export function encodeSummary(summary: AttemptSummary): { s: string; b: string; tms: number } {
  const { bind, timeMs, ...body } = summary;
  return { s: JSON.stringify(body), b: JSON.stringify(bind), tms: timeMs };
}

type StoredBind = NonNullable<PodRecords['bind']>;

export class RecordStore implements RecordStorePort {
  constructor(
    private readonly doc: DocumentClient,
    readonly table: string,
    private readonly retentionSeconds: number,
    readonly stats: StoreStats = emptyStats(),
    private readonly sleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  ) {}

  /** The attempt item and the pod's summary item, in one request. */
  putAttemptParams(record: AttemptRecord, timeMs: number, encoded: Uint8Array = encodeRecord(record)): BatchWriteCommandInput {
    const expiresAt = Math.floor(timeMs / 1000) + this.retentionSeconds;
    const key = summaryKey(record.pod.namespace, record.pod.name);
    return {
      RequestItems: {
        [this.table]: [
          {
            PutRequest: {
              Item: {
                pk: podKey(record.pod),
                sk: `A#${String(timeMs).padStart(15, '0')}#${record.attemptId}`,
                rec: encoded,
                enc: RECORD_ENCODING,
                uid: record.pod.uid,
                time: record.time,
                expiresAt,
              },
            },
          },
          { PutRequest: { Item: { pk: summaryPk(key.shard), sk: key.sk, ...encodeSummary(summarizeAttempt(record, timeMs)), expiresAt } } },
        ],
      },
      ReturnConsumedCapacity: 'TOTAL',
    };
  }

  async putAttempt(record: AttemptRecord, timeMs: number): Promise<void> {
    // Compressed on this thread: a filter's environment serves one request at a time, so the thread pool's
    // hand-offs only delayed the record (by about 1 ms at 1,000 nodes, measured with `npm run bench`).
    const params = this.putAttemptParams(record, timeMs);
    let request = params.RequestItems;
    for (let round = 0; request && Object.keys(request).length > 0; round++) {
      if (round === BATCH_WRITE_MAX_ROUNDS) throw new StoreUnavailableError('store kept returning unprocessed scheduling records');
      if (round > 0) await this.sleep(20 * 2 ** round);
      const out = await send(this.doc, this.stats, 'BatchWriteItem', { RequestItems: request, ReturnConsumedCapacity: 'TOTAL' });
      request = out.UnprocessedItems;
    }
  }

  /** The summary's bind part, replaced only while the summary's attempt is not newer than the outcome. */
  putSummaryBindParams(pod: PodRef, bind: BindRecord, timeMs: number): UpdateCommandInput {
    const key = summaryKey(pod.namespace, pod.name);
    return {
      TableName: this.table,
      Key: { pk: summaryPk(key.shard), sk: key.sk },
      UpdateExpression: 'SET b = :b, expiresAt = :exp',
      ConditionExpression: 'attribute_exists(pk) AND tms <= :t',
      ExpressionAttributeValues: { ':b': JSON.stringify(shortBind(bind)), ':exp': Math.floor(timeMs / 1000) + this.retentionSeconds, ':t': timeMs },
      ReturnConsumedCapacity: 'TOTAL',
    };
  }

  putBindParams(pod: PodRef, bind: BindRecord, timeMs: number): PutCommandInput {
    return {
      TableName: this.table,
      Item: {
        pk: podKey(pod),
        sk: 'BIND',
        ...bind,
        timeMs,
        expiresAt: Math.floor(timeMs / 1000) + this.retentionSeconds,
      },
      ReturnConsumedCapacity: 'TOTAL',
    };
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
    const prefix = namespace === undefined ? undefined : namespacePrefix(digest(namespace));
    return {
      TableName: this.table,
      KeyConditionExpression: prefix === undefined ? 'pk = :pk' : 'pk = :pk AND begins_with(sk, :prefix)',
      FilterExpression: 'expiresAt >= :now',
      ExpressionAttributeValues: { ':pk': summaryPk(position.shard), ':now': Math.floor(nowMs / 1000), ...(prefix !== undefined ? { ':prefix': prefix } : {}) },
      ...(position.sk !== '' ? { ExclusiveStartKey: { pk: summaryPk(position.shard), sk: position.sk } } : {}),
      Limit: limit,
      ReturnConsumedCapacity: 'TOTAL',
    };
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
        position = { shard: position.shard, sk: String(item.sk) };
      }
      const last = out.LastEvaluatedKey;
      if (last !== undefined) position = { shard: position.shard, sk: String(last.sk) };
      else if (query.namespace === undefined && position.shard + 1 < SUMMARY_SHARDS) position = { shard: position.shard + 1, sk: '' };
      else return { items };
      if (items.length >= query.limit) return { items, next: formatPosition(position) };
    }
  }

  queryPodParams(namespace: string, name: string, attempts: number): QueryCommandInput {
    return {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': podKey({ namespace, name }) },
      ScanIndexForward: false,
      // BIND sorts after every A#… key, so it comes first in descending order.
      Limit: attempts + 1,
      ReturnConsumedCapacity: 'TOTAL',
    };
  }

  /** The bind item and up to `attempts` newest unexpired attempts of a pod. */
  async readPod(namespace: string, name: string, attempts: number, nowMs: number, registered?: () => Promise<RegisteredCards>): Promise<PodRecords> {
    const params = this.queryPodParams(namespace, name, attempts);
    const out = await send(this.doc, this.stats, 'Query', params);
    const nowS = Math.floor(nowMs / 1000);
    let bind: StoredBind | undefined;
    const kept: DocumentItem[] = [];
    for (const item of out.Items ?? []) {
      if (typeof item.expiresAt === 'number' && item.expiresAt < nowS) continue;
      if (item.sk === 'BIND') {
        const parsed = bindItemSchema.safeParse(item);
        if (!parsed.success) throw new CorruptItemError('stored bind record does not match its schema', { cause: parsed.error });
        const { expiresAt: _expiresAt, ...rest } = parsed.data;
        bind = rest;
      } else if (typeof item.sk === 'string' && item.sk.startsWith('A#') && kept.length < attempts) {
        kept.push(item);
      }
    }
    const cards = kept.length > 0 ? await registered?.() : undefined;
    const found = kept.map((item) => ({ record: decodeRecord(item.rec, item.enc, cards), timeMs: Number(String(item.sk).split('#')[1]) }));
    return bind ? { attempts: found, bind } : { attempts: found };
  }
}

function podKey(pod: Pick<PodRef, 'namespace' | 'name'>): string {
  return `POD#${pod.namespace}/${pod.name}`;
}

function summaryPk(shard: number): string {
  return `LOGS#${String(shard).padStart(2, '0')}`;
}

/** How an attempt's `rec` is compressed; an attempt without `enc` was written gzip'd, before this. */
export const RECORD_ENCODING = 'br';
// Quality 4: a record is written on every decision (on the filter's critical path) and read rarely. Its columns of
// runs compress to a third of what gzip's fastest level gave, for the same CPU (measured when card ids were spelled
// from node names). On random GPU UUIDs quality 2 was as small and faster, one reason the ids are no longer stored
// (docs/state.md).
const BROTLI = { params: { [constants.BROTLI_PARAM_QUALITY]: 4, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT } };

/**
 * Brotli-compressed JSON; when even that is too large, per-card evidence is dropped (containers and reasons stay).
 * A passed filter's HAMi message is left out when the evidence can give it back: it lists every fitting node with its
 * score (16 KB of a 1,000-node record's 56 KB of JSON), which the evidence holds anyway; `decodeRecord` rebuilds it.
 */
export function encodeRecord(record: AttemptRecord): Uint8Array {
  const stored: StoredRecord = canRebuildSummary(record.filter) ? { ...record, filter: { ...record.filter, summary: undefined } } : record;
  const full = brotliCompressSync(JSON.stringify(stored), BROTLI);
  return full.byteLength <= MAX_RECORD_BYTES ? full : encodeTrimmed(stored);
}

/** An attempt as stored: its filter's summary may be left for `decodeRecord` to rebuild. */
type StoredRecord = Omit<AttemptRecord, 'filter'> & { readonly filter: Omit<FilterRecord, 'summary'> & { readonly summary?: string | undefined } };

/** A passed decision's record, with the policy that listed its fitting nodes and its evidence. */
function canRebuildSummary(filter: FilterRecord): boolean {
  return filter.status === 'passed' && filter.node !== undefined && filter.nodePolicy !== undefined && (filter.packed !== undefined || filter.nodes.length > 0);
}

/** `find fit node(...)…` as the decision wrote it: its fitting nodes, from the evidence, in the order it listed them. */
function fitMessageFromEvidence(filter: Omit<FilterRecord, 'summary'>, nodes: readonly NodeEvidence[]): string {
  if (filter.node === undefined || filter.nodePolicy === undefined) throw new CorruptItemError('stored attempt has no summary');
  const fitting = nodes.filter((n) => n.status === 'passed').map((n) => ({ name: n.name, score: n.score }));
  return fitNodeMessage(filter.node, nodes.length, fitting.sort(listingOrder(filter.nodePolicy)));
}

function encodeTrimmed(record: StoredRecord): Uint8Array {
  const { packed, ...filter } = record.filter;
  const nodes = packed ? DecisionTrace.unpack(packed).evidence() : record.filter.nodes;
  const trimmed: StoredRecord = {
    ...record,
    evidenceTrimmed: true,
    filter: { ...filter, nodes: nodes.map((n) => ({ ...n, containers: n.containers.map((c) => ({ ...c, cards: [] })) })) },
  };
  return brotliCompressSync(JSON.stringify(trimmed), BROTLI);
}

/** A stored attempt (`rec`, compressed as `enc` says), its evidence unpacked into the objects the scheduler log renders. */
export function decodeRecord(raw: unknown, encoding: unknown, registered?: RegisteredCards): AttemptRecord {
  if (!(raw instanceof Uint8Array)) throw new CorruptItemError('stored attempt has no record body');
  if (encoding !== RECORD_ENCODING && encoding !== undefined) throw new CorruptItemError(`stored attempt has an unknown encoding ${JSON.stringify(encoding)}`);
  let record: StoredRecord;
  try {
    const json = encoding === RECORD_ENCODING ? brotliDecompressSync(raw) : gunzipSync(raw);
    record = JSON.parse(json.toString('utf8')) as StoredRecord;
  } catch (err) {
    throw new CorruptItemError('stored attempt record cannot be decoded', { cause: err });
  }
  const { packed, summary, ...filter } = record.filter;
  if (packed) {
    let nodes: readonly NodeEvidence[];
    try {
      nodes = DecisionTrace.unpack(packed, registered).evidence();
    } catch (err) {
      // Only the evidence is lost: the outcome, the node, the bind and the pod's other attempts still read. A later
      // release may pack evidence in a version this one does not know (a rollback while its records live).
      return { ...record, evidenceUnreadable: errorMessage(err), filter: { ...filter, summary: summary ?? unreadableFitMessage(filter), nodes: [] } };
    }
    return { ...record, filter: { ...filter, summary: summary ?? fitMessageFromEvidence(filter, nodes), nodes } };
  }
  return { ...record, filter: { ...filter, summary: summary ?? fitMessageFromEvidence(filter, filter.nodes) } };
}

/** A passed attempt's message when the evidence it is rebuilt from cannot be read: the node HAMi's message names. */
function unreadableFitMessage(filter: Omit<FilterRecord, 'summary'>): string {
  if (filter.node === undefined) throw new CorruptItemError('stored attempt has no summary');
  return `find fit node(${filter.node}); the nodes' evidence cannot be read`;
}
