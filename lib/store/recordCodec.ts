/**
 * The records table's codec: its keys, attribute names and item bodies, the one place they live (as ./codec.ts is for
 * the state table); ./recordStore.ts sends what this builds and reads back what it decodes, and ./memory.ts keeps
 * the same bodies. The layout (keys pk/sk, TTL on `expiresAt`):
 *   pk `POD#<ns>/<name>`, sk `A#<epoch ms>#<attemptId>`: one filter attempt, Brotli-compressed JSON (`enc`
 *     `br`; attempts written before Brotli have no `enc` and are gzip'd): the evidence of a thousand nodes is
 *     about 1 KB, far under DynamoDB's 400 KB item limit (a passed filter's HAMi message is left out and rebuilt
 *     from the evidence on read: `encodeRecord`; the tried cards' ids are left out too: ./storedEvidence.ts;
 *     the evaluated nodes' names are stored apart, below);
 *   pk `NAMES#<list key>`, sk `L`: a list of node names the attempts refer to by its key (a hash of the list), Brotli-
 *     compressed JSON. kube-scheduler sends the same names filter after filter, and real node names
 *     (`ip-10-0-12-34.eu-west-1.compute.internal`) were most of a compressed attempt (5.3 KB of 6.2 at 1,000 nodes):
 *     each environment writes a list with the first attempt that names it, and again once a retention period has
 *     passed; it expires two periods after that write, so after every attempt written in between (`NAMES_APART`);
 *   pk `POD#<ns>/<name>`, sk `BIND`: the latest bind outcome (written without a read, so a bind costs
 *     one call); it belongs to the newest attempt made before it.
 *   pk `LOGS#<00..15>` (the namespace's shard), sk `<namespace hash>#<name hash>`: the pod's summary, of its
 *     latest attempt (docs/state.md, "Scheduler-log summaries"), written with the attempt in one BatchWriteItem;
 *     its bind part is updated by the bind outcome. Hashes, not names, so a listing's position names no pod.
 * DynamoDB deletes expired items lazily (dynalite never does), so expired items are treated as absent here.
 */
import { createHash } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync } from 'node:zlib';
import { z } from 'zod';
import { sameItems } from '../arrays';
import type { PackedEvidence } from '../engine/evidence';
import { unpackStoredEvidence, type StoredEvidence } from './storedEvidence';
import { BadRequestError, CorruptItemError, errorMessage } from '../errors';
import { canRebuildSummary, fitMessageFromEvidence, unreadableFitMessage } from '../diagnostics/fitMessage';
import type { AttemptRecord, BindRecord, FilterRecord, PodRef } from '../diagnostics/record';
import type { NodeEvidence } from '../engine/types';
import { shortBind, summarizeAttempt, type AttemptSummary } from '../diagnostics/summary';
import type { PodRecords, RegisteredCards } from '../control/ports';
import type { DocumentItem } from './dynamoHttp';

/** Items above this are stored without per-card evidence rather than rejected by DynamoDB. */
const MAX_RECORD_BYTES = 350 * 1024;

const bindSchema = z.object({
  status: z.enum(['passed', 'failed', 'pending']),
  summary: z.string(),
  node: z.string().optional(),
  time: z.string().optional(),
  filterUsedAhead: z.string().optional(),
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

export function podKey(pod: Pick<PodRef, 'namespace' | 'name'>): string {
  return `POD#${pod.namespace}/${pod.name}`;
}

export function summaryPk(shard: number): string {
  return `LOGS#${String(shard).padStart(2, '0')}`;
}

/** How an attempt's `rec` is compressed; an attempt without `enc` was written gzip'd, before this. */
export const RECORD_ENCODING = 'br';
// Quality 4: a record is written on every decision (on the filter's critical path) and read rarely. Its columns of
// runs compress to a third of what gzip's fastest level gave, for the same CPU (measured when card ids were spelled
// from node names). On random GPU UUIDs quality 2 was as small and faster, one reason the ids are no longer stored
// (docs/state.md).
const BROTLI = { params: { [constants.BROTLI_PARAM_QUALITY]: 4, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT } };

/** How every body of the records table is stored: JSON, Brotli-compressed as `RECORD_ENCODING` says. */
function brotliJson(value: unknown): Buffer {
  return brotliCompressSync(JSON.stringify(value), BROTLI);
}

/**
 * Brotli-compressed JSON; when even that is too large, per-card evidence is dropped (containers and reasons stay).
 * A passed filter's HAMi message is left out when the evidence can give it back: it lists every fitting node with its
 * score (16 KB of a 1,000-node record's 56 KB of JSON), which the evidence holds anyway; `decodeRecord` rebuilds it.
 */
export function encodeRecord(record: AttemptRecord): Uint8Array {
  return compressed(storedForm(record));
}

/** An attempt's body, and the list of node names it refers to by key (where they are stored apart). */
export interface EncodedRecord {
  readonly body: Uint8Array;
  readonly list?: { readonly key: string; readonly names: readonly string[] };
}

/**
 * `encodeRecord` with the packed evidence's node names stored apart (`NAMES_APART`): the body refers to them by the
 * list's key. Where even that body would be too large, the names stay in it (and the per-card evidence goes).
 */
export function encodeRecordApart(record: AttemptRecord, keys: NameListKeys): EncodedRecord {
  const stored = storedForm(record);
  const packed = stored.filter.packed;
  if (packed === undefined || packed.v !== 5 || packed.nodes.name.length === 0) return { body: compressed(stored) };
  const key = keys.keyOf(packed.nodes.name);
  const { name, ...nodes } = packed.nodes;
  const apart: PackedApart = { ...packed, v: NAMES_APART, nodes: { ...nodes, names: key } };
  const body = brotliJson({ ...stored, filter: { ...stored.filter, packed: apart } });
  return body.byteLength <= MAX_RECORD_BYTES ? { body, list: { key, names: name } } : { body: encodeTrimmed(stored) };
}

/**
 * The stored `v` of packed evidence whose node names are in a list item (`NAMES#<key>`), named by `nodes.names`:
 * otherwise the packed evidence of version 5. Not a number, so a release that does not know it reads the attempt
 * with its evidence unreadable (the outcome, node and message still read), not as some other version.
 */
const NAMES_APART = 'v5-names-apart';

type PackedApart = Omit<PackedEvidence, 'v' | 'nodes'> & {
  readonly v: typeof NAMES_APART;
  readonly nodes: Omit<PackedEvidence['nodes'], 'name'> & { readonly names: string };
};

/** The key of a list of node names: a hash of the list, remembered for the list seen last (the same filter after filter). */
export class NameListKeys {
  private last: { readonly names: readonly string[]; readonly key: string } | undefined;

  keyOf(names: readonly string[]): string {
    if (this.last !== undefined && sameItems(this.last.names, names)) return this.last.key;
    const key = createHash('sha256').update(JSON.stringify(names)).digest().subarray(0, 16).toString('base64url');
    // A copy: the caller's array (a decision's) is not ours to keep unchanged.
    this.last = { names: [...names], key };
    return key;
  }
}

const NAME_LIST_PREFIX = 'NAMES#';

export function nameListKey(key: string): { pk: string; sk: string } {
  return { pk: `${NAME_LIST_PREFIX}${key}`, sk: 'L' };
}

function encodeNameList(names: readonly string[]): Uint8Array {
  return brotliJson(names);
}

/** A stored name list, or undefined where it cannot be read (the attempts that refer to it then read without evidence). */
function decodeNameList(raw: unknown, encoding: unknown): readonly string[] | undefined {
  if (!(raw instanceof Uint8Array) || encoding !== RECORD_ENCODING) return undefined;
  try {
    const names: unknown = JSON.parse(brotliDecompressSync(raw).toString('utf8'));
    return Array.isArray(names) && names.every((n) => typeof n === 'string') ? names : undefined;
  } catch {
    return undefined;
  }
}

/** An attempt as stored: its filter's summary may be left for `decodeRecord` to rebuild. */
type StoredRecord = Omit<AttemptRecord, 'filter'> & { readonly filter: Omit<FilterRecord, 'summary'> & { readonly summary?: string | undefined } };

/** An attempt as read from its body: its packed evidence may refer to a name list. */
export type ReadRecord = Omit<StoredRecord, 'filter'> & { readonly filter: Omit<StoredRecord['filter'], 'packed'> & { readonly packed?: StoredEvidence | PackedApart } };

function storedForm(record: AttemptRecord): StoredRecord {
  return canRebuildSummary(record.filter) ? { ...record, filter: { ...record.filter, summary: undefined } } : record;
}

function compressed(stored: StoredRecord): Uint8Array {
  const full = brotliJson(stored);
  return full.byteLength <= MAX_RECORD_BYTES ? full : encodeTrimmed(stored);
}

function encodeTrimmed(record: StoredRecord): Uint8Array {
  const { packed, ...filter } = record.filter;
  const nodes = packed ? unpackStoredEvidence(packed).evidence() : record.filter.nodes;
  const trimmed: StoredRecord = {
    ...record,
    evidenceTrimmed: true,
    filter: { ...filter, nodes: nodes.map((n) => ({ ...n, containers: n.containers.map((c) => ({ ...c, cards: [] })) })) },
  };
  return brotliJson(trimmed);
}

/** A stored attempt (`rec`, compressed as `enc` says), its evidence unpacked into the objects the scheduler log renders. */
export function decodeRecord(raw: unknown, encoding: unknown, registered?: RegisteredCards, lists?: ReadonlyMap<string, readonly string[]>): AttemptRecord {
  return finishRecord(readStoredRecord(raw, encoding), registered, lists);
}

/** A stored attempt's body, decompressed and parsed (its evidence still packed). */
export function readStoredRecord(raw: unknown, encoding: unknown): ReadRecord {
  if (!(raw instanceof Uint8Array)) throw new CorruptItemError('stored attempt has no record body');
  if (encoding !== RECORD_ENCODING && encoding !== undefined) throw new CorruptItemError(`stored attempt has an unknown encoding ${JSON.stringify(encoding)}`);
  try {
    const json = encoding === RECORD_ENCODING ? brotliDecompressSync(raw) : gunzipSync(raw);
    return JSON.parse(json.toString('utf8')) as ReadRecord;
  } catch (err) {
    throw new CorruptItemError('stored attempt record cannot be decoded', { cause: err });
  }
}

/** The key of the name list an attempt's evidence refers to, if it does. */
export function nameListKeyOf(record: ReadRecord): string | undefined {
  const packed = record.filter.packed;
  return packed?.v === NAMES_APART ? packed.nodes.names : undefined;
}

/** An attempt read from its body, its evidence unpacked (with its node names from `lists`, where stored apart). */
export function finishRecord(record: ReadRecord, registered?: RegisteredCards, lists?: ReadonlyMap<string, readonly string[]>): AttemptRecord {
  const { packed: stored, summary, ...filter } = record.filter;
  if (stored) {
    let nodes: readonly NodeEvidence[];
    try {
      nodes = unpackStoredEvidence(withNames(stored, lists), registered).evidence();
    } catch (err) {
      // Only the evidence is lost: the outcome, the node, the bind and the pod's other attempts still read. A later
      // release may pack evidence in a version this one does not know (a rollback while its records live).
      return { ...record, evidenceUnreadable: errorMessage(err), filter: { ...filter, summary: summary ?? unreadableFitMessage(filter), nodes: [] } };
    }
    return { ...record, filter: { ...filter, summary: summary ?? fitMessageFromEvidence(filter, nodes), nodes } };
  }
  return { ...record, filter: { ...filter, summary: summary ?? fitMessageFromEvidence(filter, filter.nodes) } };
}

/** Packed evidence with its node names in it again (version 5), where they were stored apart. */
function withNames(packed: StoredEvidence | PackedApart, lists: ReadonlyMap<string, readonly string[]> | undefined): StoredEvidence {
  if (packed.v !== NAMES_APART) return packed;
  const { names: key, ...nodes } = packed.nodes;
  const names = lists?.get(key);
  if (names === undefined) throw new Error('the node names this attempt refers to are no longer stored');
  return { ...packed, v: 5, nodes: { ...nodes, name: names } };
}

// ---- items: what each request writes and how each read is decoded ------------------------------------------------

/** A pod's bind outcome as read back (its item's expiry dropped). */
export type StoredBind = NonNullable<PodRecords['bind']>;

/** Epoch seconds after which an item written at `timeMs` counts as gone (DynamoDB's TTL deletes it later, dynalite never). */
export function expiryOf(timeMs: number, retentionSeconds: number): number {
  return Math.floor(timeMs / 1000) + retentionSeconds;
}

/** Expired items are treated as absent, whether or not the store has deleted them yet. */
function expired(item: DocumentItem, nowS: number): boolean {
  return typeof item.expiresAt === 'number' && item.expiresAt < nowS;
}

/** One filter attempt's item. */
export function attemptItem(record: AttemptRecord, timeMs: number, body: Uint8Array, expiresAt: number): DocumentItem {
  return {
    pk: podKey(record.pod),
    sk: `A#${String(timeMs).padStart(15, '0')}#${record.attemptId}`,
    rec: body,
    enc: RECORD_ENCODING,
    uid: record.pod.uid,
    time: record.time,
    expiresAt,
  };
}

/** The pod's summary item, of the attempt written with it. */
export function summaryItem(record: AttemptRecord, timeMs: number, expiresAt: number): DocumentItem {
  const key = summaryKey(record.pod.namespace, record.pod.name);
  return { pk: summaryPk(key.shard), sk: key.sk, ...encodeSummary(summarizeAttempt(record, timeMs)), expiresAt };
}

/** A list of node names the attempts refer to by its key. */
export function nameListItem(list: NonNullable<EncodedRecord['list']>, expiresAt: number): DocumentItem {
  return { ...nameListKey(list.key), names: encodeNameList(list.names), enc: RECORD_ENCODING, expiresAt };
}

/** A name list item back into its key and names; undefined when expired or unreadable. */
export function decodeNameListItem(item: DocumentItem, nowS: number): { readonly key: string; readonly names: readonly string[] } | undefined {
  if (expired(item, nowS)) return undefined;
  const names = decodeNameList(item.names, item.enc);
  return names === undefined ? undefined : { key: String(item.pk).slice(NAME_LIST_PREFIX.length), names };
}

/** The pod's bind outcome item (written without a read: one call per bind). */
export function bindItem(pod: PodRef, bind: BindRecord, timeMs: number, expiresAt: number): DocumentItem {
  return { pk: podKey(pod), sk: BIND_SK, ...bind, timeMs, expiresAt };
}

/** The update that replaces the summary's bind part, only while the summary's attempt is not newer than the outcome. */
export function summaryBindUpdate(pod: PodRef, bind: BindRecord, timeMs: number, expiresAt: number) {
  const key = summaryKey(pod.namespace, pod.name);
  return {
    Key: { pk: summaryPk(key.shard), sk: key.sk },
    UpdateExpression: 'SET b = :b, expiresAt = :exp',
    ConditionExpression: 'attribute_exists(pk) AND tms <= :t',
    ExpressionAttributeValues: { ':b': JSON.stringify(shortBind(bind)), ':exp': expiresAt, ':t': timeMs },
  };
}

/** The query of one shard's unexpired summaries from `position` (a namespace's: those of its prefix). */
export function summaryListQuery(position: SummaryPosition, namespace: string | undefined, limit: number, nowS: number) {
  const prefix = namespace === undefined ? undefined : summaryPrefix(namespace);
  return {
    KeyConditionExpression: prefix === undefined ? 'pk = :pk' : 'pk = :pk AND begins_with(sk, :prefix)',
    FilterExpression: 'expiresAt >= :now',
    ExpressionAttributeValues: { ':pk': summaryPk(position.shard), ':now': nowS, ...(prefix !== undefined ? { ':prefix': prefix } : {}) },
    ...(position.sk !== '' ? { ExclusiveStartKey: { pk: summaryPk(position.shard), sk: position.sk } } : {}),
    Limit: limit,
  };
}

/** Where a listing goes on after an item (or the store's last evaluated key) of the shard it reads. */
export function positionAfter(shard: number, item: DocumentItem): SummaryPosition {
  return { shard, sk: String(item.sk) };
}

/** The query of a pod's items, newest first: its bind outcome (`BIND` sorts after every `A#…`) and its attempts. */
export function podItemsQuery(namespace: string, name: string, attempts: number) {
  return {
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': podKey({ namespace, name }) },
    ScanIndexForward: false,
    Limit: attempts + 1,
  };
}

/** A pod's items, newest first, as its bind outcome and up to `attempts` unexpired attempts (their evidence still packed). */
export function decodePodItems(items: readonly DocumentItem[], attempts: number, nowS: number): { readonly bind?: StoredBind; readonly attempts: { readonly record: ReadRecord; readonly timeMs: number }[] } {
  let bind: StoredBind | undefined;
  const kept: DocumentItem[] = [];
  for (const item of items) {
    if (expired(item, nowS)) continue;
    if (item.sk === BIND_SK) {
      const parsed = bindItemSchema.safeParse(item);
      if (!parsed.success) throw new CorruptItemError('stored bind record does not match its schema', { cause: parsed.error });
      const { expiresAt: _expiresAt, ...rest } = parsed.data;
      bind = rest;
    } else if (typeof item.sk === 'string' && item.sk.startsWith('A#') && kept.length < attempts) {
      kept.push(item);
    }
  }
  const found = kept.map((item) => ({ record: readStoredRecord(item.rec, item.enc), timeMs: Number(String(item.sk).split('#')[1]) }));
  return bind ? { bind, attempts: found } : { attempts: found };
}

const BIND_SK = 'BIND';
