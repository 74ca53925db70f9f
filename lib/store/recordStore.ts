/**
 * Scheduling records for the scheduler log (records table, keys pk/sk, TTL on `expiresAt`).
 *   pk `POD#<ns>/<name>`, sk `A#<epoch ms>#<attemptId>`: one filter attempt, gzip'd JSON (evidence of
 *     a thousand nodes stays well under DynamoDB's 400 KB item limit);
 *   pk `POD#<ns>/<name>`, sk `BIND`: the latest bind outcome (written without a read, so a bind costs
 *     one call); it belongs to the newest attempt made before it.
 * DynamoDB deletes expired items lazily (dynalite never does), so expired items are treated as absent here.
 */
import { promisify } from 'node:util';
import { constants, gunzipSync, gzip, gzipSync } from 'node:zlib';
import { PutCommand, QueryCommand, type PutCommandInput, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { z } from 'zod';
import { DecisionTrace } from '../engine/evidence';
import { CorruptItemError } from '../errors';
import type { AttemptRecord, BindRecord, PodRef } from '../diagnostics/record';
import type { PodRecords, RecordStorePort } from '../control/ports';
import { emptyStats, send, type StoreStats } from './dynamo';

/** Items above this are stored without per-card evidence rather than rejected by DynamoDB. */
const MAX_RECORD_BYTES = 350 * 1024;

const bindItemSchema = z.object({
  status: z.enum(['passed', 'failed', 'pending']),
  summary: z.string(),
  node: z.string().optional(),
  time: z.string().optional(),
  timeMs: z.number(),
  expiresAt: z.number(),
});

type StoredBind = NonNullable<PodRecords['bind']>;

export class RecordStore implements RecordStorePort {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly table: string,
    private readonly retentionSeconds: number,
    readonly stats: StoreStats = emptyStats(),
  ) {}

  putAttemptParams(record: AttemptRecord, timeMs: number, encoded: Uint8Array = encodeRecord(record)): PutCommandInput {
    return {
      TableName: this.table,
      Item: {
        pk: podKey(record.pod),
        sk: `A#${String(timeMs).padStart(15, '0')}#${record.attemptId}`,
        rec: encoded,
        uid: record.pod.uid,
        time: record.time,
        expiresAt: Math.floor(timeMs / 1000) + this.retentionSeconds,
      },
      ReturnConsumedCapacity: 'TOTAL',
    };
  }

  async putAttempt(record: AttemptRecord, timeMs: number): Promise<void> {
    // Compression runs in Node's thread pool, so the event loop keeps serving meanwhile.
    const params = this.putAttemptParams(record, timeMs, await encodeRecordAsync(record));
    await send(this.stats, 'PutItem', () => this.doc.send(new PutCommand(params)));
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
    await send(this.stats, 'PutItem', () => this.doc.send(new PutCommand(params)));
  }

  queryPodParams(namespace: string, name: string, attempts: number): QueryCommandInput {
    return {
      TableName: this.table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `POD#${namespace}/${name}` },
      ScanIndexForward: false,
      // BIND sorts after every A#… key, so it comes first in descending order.
      Limit: attempts + 1,
      ReturnConsumedCapacity: 'TOTAL',
    };
  }

  /** The bind item and up to `attempts` newest unexpired attempts of a pod. */
  async readPod(namespace: string, name: string, attempts: number, nowMs: number): Promise<PodRecords> {
    const params = this.queryPodParams(namespace, name, attempts);
    const out = await send(this.stats, 'Query', () => this.doc.send(new QueryCommand(params)));
    const nowS = Math.floor(nowMs / 1000);
    let bind: StoredBind | undefined;
    const found: { record: AttemptRecord; timeMs: number }[] = [];
    for (const item of out.Items ?? []) {
      if (typeof item.expiresAt === 'number' && item.expiresAt < nowS) continue;
      if (item.sk === 'BIND') {
        const parsed = bindItemSchema.safeParse(item);
        if (!parsed.success) throw new CorruptItemError('stored bind record does not match its schema', { cause: parsed.error });
        const { expiresAt: _expiresAt, ...rest } = parsed.data;
        bind = rest;
      } else if (typeof item.sk === 'string' && item.sk.startsWith('A#') && found.length < attempts) {
        found.push({ record: decodeRecord(item.rec), timeMs: Number(item.sk.split('#')[1]) });
      }
    }
    return bind ? { attempts: found, bind } : { attempts: found };
  }
}

function podKey(pod: PodRef): string {
  return `POD#${pod.namespace}/${pod.name}`;
}

/** gzip'd JSON; when even that is too large, per-card evidence is dropped (containers and reasons stay). */
// Fastest level: records are written on every decision and read rarely; size is far from the limit.
const GZIP = { level: constants.Z_BEST_SPEED };

export function encodeRecord(record: AttemptRecord): Uint8Array {
  const full = gzipSync(JSON.stringify(record), GZIP);
  return full.byteLength <= MAX_RECORD_BYTES ? full : encodeTrimmed(record);
}

/** `encodeRecord`, with the compression in Node's thread pool so the event loop keeps serving. */
export async function encodeRecordAsync(record: AttemptRecord): Promise<Uint8Array> {
  const full = await gzipAsync(JSON.stringify(record), GZIP);
  return full.byteLength <= MAX_RECORD_BYTES ? full : encodeTrimmed(record);
}

const gzipAsync = promisify(gzip);

function encodeTrimmed(record: AttemptRecord): Uint8Array {
  const { packed, ...filter } = record.filter;
  const nodes = packed ? DecisionTrace.unpack(packed).evidence() : record.filter.nodes;
  const trimmed: AttemptRecord = {
    ...record,
    evidenceTrimmed: true,
    filter: { ...filter, nodes: nodes.map((n) => ({ ...n, containers: n.containers.map((c) => ({ ...c, cards: [] })) })) },
  };
  return gzipSync(JSON.stringify(trimmed), GZIP);
}

/** A stored attempt, its evidence unpacked into the objects the scheduler log renders. */
export function decodeRecord(raw: unknown): AttemptRecord {
  if (!(raw instanceof Uint8Array)) throw new CorruptItemError('stored attempt has no record body');
  let record: AttemptRecord;
  try {
    record = JSON.parse(gunzipSync(raw).toString('utf8')) as AttemptRecord;
  } catch (err) {
    throw new CorruptItemError('stored attempt record cannot be decoded', { cause: err });
  }
  const { packed, ...filter } = record.filter;
  if (!packed) return record;
  try {
    return { ...record, filter: { ...filter, nodes: DecisionTrace.unpack(packed).evidence() } };
  } catch (err) {
    throw new CorruptItemError('stored attempt evidence cannot be unpacked', { cause: err });
  }
}
