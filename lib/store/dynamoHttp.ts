/**
 * The DynamoDB client of the adapters: the five data-plane operations they use, spoken directly over DynamoDB's
 * JSON protocol (one signed POST per call, keep-alive connections), with plain JavaScript values in and out.
 *
 * Why not the AWS SDK's client: every decision waits on these calls, and the SDK's middleware stack (endpoint
 * rules, schema serde, retry and auth layers) cost about 0.5 ms of CPU per call here, twice the request itself
 * (docs/state.md, "Store client"). What the SDK gave us is kept: SigV4 signing with the SDK's signer and
 * credential chain (../aws/sigv4.ts), the response checksum (`x-amz-crc32`), and up to three attempts with
 * jittered backoff for throttling, server faults, timeouts and dropped connections. Errors carry DynamoDB's own
 * exception name (`ConditionalCheckFailedException`, …); ./dynamo.ts turns them into domain errors.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { crc32 } from 'node:zlib';
import type {
  BatchGetCommandInput,
  BatchWriteCommandInput,
  PutCommandInput,
  QueryCommandInput,
  UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { sigV4Signer, type AwsCredentials, type RequestSigner } from '../aws/sigv4';
import { isJsonObject } from '../json';
import type { Sleep } from '../clock';

/** An item as the adapters see it: attribute name to plain value (string, number, boolean, null, bytes, list, map, string set). */
export type DocumentItem = Record<string, unknown>;

interface Charged {
  readonly ConsumedCapacity?: { readonly CapacityUnits?: number } | readonly { readonly CapacityUnits?: number }[];
}

/** Each operation's input (the document client's shapes) and output. */
export interface DocumentOperations {
  PutItem: { input: PutCommandInput; output: Charged & { Attributes?: DocumentItem } };
  UpdateItem: { input: UpdateCommandInput; output: Charged & { Attributes?: DocumentItem } };
  Query: { input: QueryCommandInput; output: Charged & { Items?: DocumentItem[]; LastEvaluatedKey?: DocumentItem; Count?: number } };
  BatchGetItem: { input: BatchGetCommandInput; output: Charged & { Responses?: Record<string, DocumentItem[]>; UnprocessedKeys?: BatchGetCommandInput['RequestItems'] } };
  BatchWriteItem: { input: BatchWriteCommandInput; output: Charged & { UnprocessedItems?: BatchWriteCommandInput['RequestItems'] } };
}

export type DocumentOperation = keyof DocumentOperations;

/** What the adapters depend on (tests wrap it to inject faults). */
export interface DocumentClient {
  send<O extends DocumentOperation>(operation: O, input: DocumentOperations[O]['input']): Promise<DocumentOperations[O]['output']>;
}

/** A failure DynamoDB reported, by its exception name; a refused condition may carry the item as stored. */
export class DynamoServiceError extends Error {
  constructor(
    name: string,
    message: string,
    readonly status: number,
    /** `ReturnValuesOnConditionCheckFailure: ALL_OLD`: the item the condition was checked against. */
    readonly item?: DocumentItem,
  ) {
    super(message);
    this.name = name;
  }
}

/** Failures worth another attempt: throttling, server faults, timeouts, dropped connections, a corrupted answer. */
const TRANSIENT = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'TransactionConflictException',
  'LimitExceededException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'ChecksumMismatch',
]);

export function isTransientStoreError(err: unknown): boolean {
  if (!(err instanceof Error)) return true;
  if (TRANSIENT.has(err.name)) return true;
  if (err instanceof DynamoServiceError) return err.status >= 500;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && /^(ECONN|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|UND_ERR)/.test(code);
}

export interface DynamoHttpOptions {
  readonly region: string;
  /** dynalite, DynamoDB Local or another compatible endpoint; unset: DynamoDB's regional endpoint. */
  readonly endpoint?: string;
  readonly credentials: () => AwsCredentials | Promise<AwsCredentials>;
  readonly maxAttempts?: number;
  /** No answer within this long: the attempt fails as a timeout (and is tried again). */
  readonly timeoutMs?: number;
  readonly sleep?: Sleep;
  readonly random?: () => number;
}

const DEFAULT_ATTEMPTS = 3;
const DEFAULT_TIMEOUT_MS = 10_000;
const BACKOFF_BASE_MS = 50;
const BACKOFF_CAP_MS = 2_000;

export class DynamoHttpClient implements DocumentClient {
  private readonly url: URL;
  private readonly sign: RequestSigner;
  private readonly agent: HttpAgent;
  private readonly maxAttempts: number;
  private readonly timeoutMs: number;
  private readonly sleep: Sleep;
  private readonly random: () => number;

  constructor(options: DynamoHttpOptions) {
    this.url = new URL(options.endpoint ?? regionalEndpoint(options.region));
    this.sign = sigV4Signer({ region: options.region, service: 'dynamodb', credentials: options.credentials });
    const agentOptions = { keepAlive: true, maxSockets: 50 };
    this.agent = this.url.protocol === 'https:' ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
    this.maxAttempts = options.maxAttempts ?? DEFAULT_ATTEMPTS;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.random = options.random ?? Math.random;
  }

  async send<O extends DocumentOperation>(operation: O, input: DocumentOperations[O]['input']): Promise<DocumentOperations[O]['output']> {
    const body = JSON.stringify(marshalRequest(operation, input as unknown as Record<string, unknown>));
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await this.post(operation, body);
        return unmarshalResponse(answer) as DocumentOperations[O]['output'];
      } catch (err) {
        if (attempt >= this.maxAttempts || !isTransientStoreError(err)) throw err;
        await this.sleep(this.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt));
      }
    }
  }

  /** Closes the idle connections (tests, shutdown). */
  destroy(): void {
    this.agent.destroy();
  }

  private async post(operation: string, body: string): Promise<Record<string, unknown>> {
    const headers = await this.sign({
      method: 'POST',
      url: this.url,
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `DynamoDB_20120810.${operation}` },
      body,
    });
    const { status, checksum, data } = await this.exchange(headers, body);
    if (checksum !== undefined && crc32(data) !== checksum) throw new DynamoServiceError('ChecksumMismatch', `${operation} answer failed its CRC32 check`, status);
    const parsed = parseJson(data);
    if (status === 200 && parsed !== undefined) return parsed;
    throw serviceError(status, parsed, data);
  }

  private exchange(headers: Record<string, string>, body: string): Promise<{ status: number; checksum: number | undefined; data: Buffer }> {
    const send = this.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        this.url,
        { method: 'POST', agent: this.agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const header = res.headers['x-amz-crc32'];
            resolve({ status: res.statusCode ?? 0, checksum: typeof header === 'string' ? Number(header) : undefined, data: Buffer.concat(chunks) });
          });
        },
      );
      req.setTimeout(this.timeoutMs, () => req.destroy(Object.assign(new Error(`no answer from the store within ${this.timeoutMs} ms`), { name: 'TimeoutError' })));
      req.on('error', reject);
      req.end(body);
    });
  }
}

function regionalEndpoint(region: string): string {
  return `https://dynamodb.${region}.amazonaws.${region.startsWith('cn-') ? 'com.cn' : 'com'}`;
}

function parseJson(data: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(data.toString('utf8'));
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":…}` as an error. */
function serviceError(status: number, parsed: Record<string, unknown> | undefined, data: Buffer): DynamoServiceError {
  const type = typeof parsed?.__type === 'string' ? parsed.__type : '';
  const name = type.split('#').pop() || (status >= 500 ? 'InternalServerError' : `HTTP${status}`);
  const message = typeof parsed?.message === 'string' ? parsed.message : typeof parsed?.Message === 'string' ? parsed.Message : data.toString('utf8').slice(0, 200);
  const item = isJsonObject(parsed?.Item) ? unmarshalMap(parsed.Item) : undefined;
  return new DynamoServiceError(name, message, status, item);
}

// ---- attribute values ----------------------------------------------------------------------------

type AttributeValue = Record<string, unknown>;

/** Request fields that hold an item or key (attribute name to value). */
const MAP_FIELDS = ['Item', 'Key', 'ExpressionAttributeValues', 'ExclusiveStartKey'] as const;

function marshalRequest(operation: DocumentOperation, input: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...input };
  for (const field of MAP_FIELDS) if (input[field] !== undefined) out[field] = marshalMap(input[field] as DocumentItem);
  const requests = input.RequestItems as Record<string, unknown> | undefined;
  if (requests !== undefined) out.RequestItems = operation === 'BatchWriteItem' ? mapBatchWrite(requests, marshalMap) : mapBatchGet(requests, marshalMap);
  return out;
}

function unmarshalResponse(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body };
  for (const field of ['Item', 'Attributes', 'LastEvaluatedKey'] as const) if (isJsonObject(body[field])) out[field] = unmarshalMap(body[field]);
  if (Array.isArray(body.Items)) out.Items = body.Items.map((item) => unmarshalMap(item as Record<string, unknown>));
  const responses = body.Responses as Record<string, unknown[]> | undefined;
  if (responses !== undefined) out.Responses = Object.fromEntries(Object.entries(responses).map(([table, items]) => [table, items.map((item) => unmarshalMap(item as Record<string, unknown>))]));
  if (body.UnprocessedKeys !== undefined) out.UnprocessedKeys = mapBatchGet(body.UnprocessedKeys as Record<string, unknown>, unmarshalMap);
  if (body.UnprocessedItems !== undefined) out.UnprocessedItems = mapBatchWrite(body.UnprocessedItems as Record<string, unknown>, unmarshalMap);
  return out;
}

type MapConverter = (map: Record<string, unknown>) => Record<string, unknown>;

function mapBatchGet(requests: Record<string, unknown>, convert: MapConverter): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(requests).map(([table, request]) => {
      const r = request as { Keys?: unknown[] };
      return [table, { ...r, Keys: (r.Keys ?? []).map((key) => convert(key as Record<string, unknown>)) }];
    }),
  );
}

function mapBatchWrite(requests: Record<string, unknown>, convert: MapConverter): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(requests).map(([table, list]) => [
      table,
      (list as { PutRequest?: { Item: Record<string, unknown> }; DeleteRequest?: { Key: Record<string, unknown> } }[]).map((r) =>
        r.PutRequest ? { PutRequest: { Item: convert(r.PutRequest.Item) } } : { DeleteRequest: { Key: convert(r.DeleteRequest?.Key ?? {}) } },
      ),
    ]),
  );
}

/** Plain values to DynamoDB's attribute values; `undefined` members are left out, as the document client's `removeUndefinedValues` does. */
export function marshalMap(map: DocumentItem): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  // for…in, not Object.entries: items are plain objects, and every call converts each of their maps (no array per key).
  for (const name in map) {
    const value = map[name];
    if (value !== undefined) out[name] = marshalValue(value);
  }
  return out;
}

function marshalValue(value: unknown): AttributeValue {
  switch (typeof value) {
    case 'string':
      return { S: value };
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`cannot store the number ${value}`);
      return { N: String(value) };
    case 'bigint':
      return { N: value.toString() };
    case 'boolean':
      return { BOOL: value };
    default:
      break;
  }
  if (value === null) return { NULL: true };
  if (value instanceof Uint8Array) return { B: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  if (Array.isArray(value)) return { L: value.filter((v) => v !== undefined).map(marshalValue) };
  if (value instanceof Set) return marshalSet(value);
  if (typeof value === 'object' && isPlainObject(value)) return { M: marshalMap(value as DocumentItem) };
  throw new TypeError(`cannot store a value of type ${describe(value)}`);
}

function marshalSet(set: Set<unknown>): AttributeValue {
  const members = [...set];
  if (members.length === 0) throw new TypeError('cannot store an empty set');
  if (members.every((m) => typeof m === 'string')) return { SS: members };
  if (members.every((m) => typeof m === 'number' || typeof m === 'bigint')) return { NS: members.map(String) };
  if (members.every((m) => m instanceof Uint8Array)) return { BS: members.map((m) => (marshalValue(m) as { B: string }).B) };
  throw new TypeError('cannot store a set of mixed types');
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function describe(value: unknown): string {
  return typeof value === 'object' && value !== null ? (value.constructor?.name ?? 'object') : typeof value;
}

/** DynamoDB's attribute values to plain values (numbers as JavaScript numbers, bytes as Buffers, sets as Sets). */
export function unmarshalMap(map: Record<string, unknown>): DocumentItem {
  const out: DocumentItem = {};
  for (const name in map) out[name] = unmarshalValue(map[name] as AttributeValue);
  return out;
}

function unmarshalValue(value: AttributeValue): unknown {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return Number(value.N);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL !== undefined) return null;
  if (value.M !== undefined) return unmarshalMap(value.M as Record<string, unknown>);
  if (value.L !== undefined) return (value.L as AttributeValue[]).map(unmarshalValue);
  if (value.B !== undefined) return Buffer.from(value.B as string, 'base64');
  if (value.SS !== undefined) return new Set(value.SS as string[]);
  if (value.NS !== undefined) return new Set((value.NS as string[]).map(Number));
  if (value.BS !== undefined) return new Set((value.BS as string[]).map((b) => Buffer.from(b, 'base64')));
  throw new TypeError(`unknown attribute value type ${Object.keys(value).join(',')}`);
}
