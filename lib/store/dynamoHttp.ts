/**
 * The DynamoDB client of the adapters: the five data-plane operations they use, spoken directly over DynamoDB's
 * JSON protocol (one signed POST per call, keep-alive connections), with plain JavaScript values in and out.
 *
 * Why not the AWS SDK's client: every decision waits on these calls, and the SDK's middleware stack (endpoint
 * rules, schema serde, retry and auth layers) cost about 0.5 ms of CPU per call here, twice the request itself
 * (docs/state.md, "Store client"). What the SDK gave us is kept, done once per client or on the failure path only:
 * - the endpoint, resolved once by DynamoDB's endpoint rules (./dynamoEndpoint.ts): a custom endpoint, or the
 *   region's partition with its FIPS and dual-stack variants;
 * - SigV4 signing with the SDK's signer and credential chain (../aws/sigv4.ts), dated by a clock corrected from
 *   AWS's clock-skew refusals (../aws/clockSkew.ts): a call refused for a skewed clock is signed again at once, once;
 * - the response checksum (`x-amz-crc32`);
 * - the SDK's standard retry strategy: up to three attempts for throttling, server faults, timeouts and dropped
 *   connections, with full-jitter backoff from a 100 ms base (500 ms for throttling, 20 s at most), drawing on a
 *   per-client quota of 500 tokens (5 a retry, 10 after no answer, refunded by successes) so that a store in trouble
 *   is not hammered: with the quota spent a call fails at once;
 * - numbers a JavaScript number cannot hold exactly are refused both ways (a bigint is written as is).
 * Errors carry DynamoDB's own exception name (`ConditionalCheckFailedException`, …, from the body's `__type` or
 * else the `x-amzn-errortype` header); ./dynamo.ts turns them into domain errors.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { crc32 } from 'node:zlib';
import type {
  BatchGetCommandInput,
  BatchWriteCommandInput,
  PutCommandInput,
  QueryCommandInput,
  UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { AwsClock, errorTypeFromHeader, isClockSkewError } from '../aws/clockSkew';
import { sigV4Signer, type AwsCredentials, type RequestSigner } from '../aws/sigv4';
import { isJsonObject } from '../json';
import type { Sleep } from '../clock';
import { resolveDynamoEndpoint } from './dynamoEndpoint';

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

/** The AWS SDK's throttling errors (@smithy's `THROTTLING_ERROR_CODES`, DynamoDB's among them); HTTP 429 is one too. */
const THROTTLING = new Set([
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'LimitExceededException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
]);

const NO_ANSWER = new Set(['TimeoutError', 'RequestTimeout', 'RequestTimeoutException']);
const CONNECTION_FAILURE = /^(ECONN|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|UND_ERR)/;

function errorCode(err: Error): string | undefined {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

export function isTransientStoreError(err: unknown): boolean {
  if (!(err instanceof Error)) return true;
  if (TRANSIENT.has(err.name)) return true;
  if (err instanceof DynamoServiceError) return err.status >= 500 || err.status === 429;
  const code = errorCode(err);
  return code !== undefined && CONNECTION_FAILURE.test(code);
}

function isThrottling(err: unknown): boolean {
  return err instanceof Error && (THROTTLING.has(err.name) || (err instanceof DynamoServiceError && err.status === 429));
}

/** A call that got no answer: a timeout or a connection that failed or dropped (by shape: Node's errors may come from another realm). */
function gotNoAnswer(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { name, code } = err as { name?: unknown; code?: unknown };
  return (typeof name === 'string' && NO_ANSWER.has(name)) || (typeof code === 'string' && CONNECTION_FAILURE.test(code));
}

export interface DynamoHttpOptions {
  readonly region: string;
  /** dynalite, DynamoDB Local or another compatible endpoint; unset: DynamoDB's endpoint for the region (./dynamoEndpoint.ts). */
  readonly endpoint?: string;
  /** DynamoDB's FIPS endpoint for the region (AWS_USE_FIPS_ENDPOINT). */
  readonly useFipsEndpoint?: boolean;
  /** DynamoDB's dual-stack (IPv4 and IPv6) endpoint for the region (AWS_USE_DUALSTACK_ENDPOINT). */
  readonly useDualStackEndpoint?: boolean;
  readonly credentials: () => AwsCredentials | Promise<AwsCredentials>;
  /** Attempts per call, the first included (3, as the SDK). A retry also needs the quota's tokens. */
  readonly maxAttempts?: number;
  /** No answer within this long: the attempt fails as a timeout (and is tried again). */
  readonly timeoutMs?: number;
  readonly sleep?: Sleep;
  readonly random?: () => number;
  /** The skew-corrected clock calls are signed with (injected in tests); the client's own otherwise. */
  readonly clock?: AwsClock;
}

const DEFAULT_ATTEMPTS = 3;
const DEFAULT_TIMEOUT_MS = 10_000;

// The AWS SDK's standard retry strategy (@smithy/util-retry): its constants and its quota, held per client.
const RETRY_QUOTA = 500;
const RETRY_COST = 5;
const NO_ANSWER_RETRY_COST = 10;
const SUCCESS_REFUND = 1;
const BACKOFF_BASE_MS = 100;
const THROTTLING_BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 20_000;

/** What `post` answers for a call refused because its clock was off: the clock is corrected, sign it again. */
const CLOCK_CORRECTED: unique symbol = Symbol('clock corrected');

export class DynamoHttpClient implements DocumentClient {
  private readonly url: URL;
  private readonly clock: AwsClock;
  private readonly sign: RequestSigner;
  private readonly agent: HttpAgent;
  private readonly maxAttempts: number;
  private readonly timeoutMs: number;
  private readonly sleep: Sleep;
  private readonly random: () => number;
  /** Tokens left for retries: each retry takes some, each success gives some back. */
  private retryTokens = RETRY_QUOTA;

  constructor(options: DynamoHttpOptions) {
    const endpoint = resolveDynamoEndpoint(options);
    this.url = new URL(endpoint.url);
    this.clock = options.clock ?? new AwsClock();
    this.sign = sigV4Signer({ region: endpoint.signingRegion, service: 'dynamodb', credentials: options.credentials, clock: this.clock });
    const agentOptions = { keepAlive: true, maxSockets: 50 };
    this.agent = this.url.protocol === 'https:' ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
    this.maxAttempts = options.maxAttempts ?? DEFAULT_ATTEMPTS;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.random = options.random ?? Math.random;
  }

  async send<O extends DocumentOperation>(operation: O, input: DocumentOperations[O]['input']): Promise<DocumentOperations[O]['output']> {
    const body = JSON.stringify(marshalRequest(operation, input as unknown as Record<string, unknown>));
    let clockCorrected = false;
    /** What the last retry of this call took from the quota (0: none yet). */
    let retryCost = 0;
    for (let retries = 0; ; ) {
      let answer: Record<string, unknown> | typeof CLOCK_CORRECTED;
      try {
        answer = await this.post(operation, body, !clockCorrected);
      } catch (err) {
        if (retries + 1 >= this.maxAttempts || !isTransientStoreError(err)) throw err;
        const cost = gotNoAnswer(err) ? NO_ANSWER_RETRY_COST : RETRY_COST;
        if (this.retryTokens < cost) throw err;
        this.retryTokens -= cost;
        retryCost = cost;
        const base = isThrottling(err) ? THROTTLING_BACKOFF_BASE_MS : BACKOFF_BASE_MS;
        await this.sleep(Math.floor(this.random() * Math.min(BACKOFF_CAP_MS, base * 2 ** retries)));
        retries += 1;
        continue;
      }
      if (answer === CLOCK_CORRECTED) {
        // Once per call, at once, and not counted: the clock was wrong, not the store.
        clockCorrected = true;
        continue;
      }
      this.retryTokens = Math.min(RETRY_QUOTA, this.retryTokens + (retryCost || SUCCESS_REFUND));
      return unmarshalResponse(answer) as DocumentOperations[O]['output'];
    }
  }

  /** Closes the idle connections (tests, shutdown). */
  destroy(): void {
    this.agent.destroy();
  }

  private async post(operation: string, body: string, mayCorrectClock: boolean): Promise<Record<string, unknown> | typeof CLOCK_CORRECTED> {
    const headers = await this.sign({
      method: 'POST',
      url: this.url,
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `DynamoDB_20120810.${operation}` },
      body,
    });
    const answer = await this.exchange(headers, body);
    const { status, checksum, data } = answer;
    if (checksum !== undefined && crc32(data) !== checksum) throw new DynamoServiceError('ChecksumMismatch', `${operation} answer failed its CRC32 check`, status);
    const parsed = parseJson(data);
    if (status === 200 && parsed !== undefined) return parsed;
    const typeHeader = answer.headers['x-amzn-errortype'];
    const err = serviceError(status, parsed, data, typeof typeHeader === 'string' ? typeHeader : undefined);
    if (mayCorrectClock && isClockSkewError(err.name, err.message) && this.clock.correct(answer.headers.date, headers['x-amz-date'])) return CLOCK_CORRECTED;
    throw err;
  }

  private exchange(headers: Record<string, string>, body: string): Promise<{ status: number; checksum: number | undefined; data: Buffer; headers: IncomingHttpHeaders }> {
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
            resolve({ status: res.statusCode ?? 0, checksum: typeof header === 'string' ? Number(header) : undefined, data: Buffer.concat(chunks), headers: res.headers });
          });
        },
      );
      req.setTimeout(this.timeoutMs, () => req.destroy(Object.assign(new Error(`no answer from the store within ${this.timeoutMs} ms`), { name: 'TimeoutError' })));
      req.on('error', reject);
      req.end(body);
    });
  }
}

function parseJson(data: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(data.toString('utf8'));
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":…}` as an error; without a
 * `__type` (or a JSON body), the `x-amzn-errortype` header names it (`ThrottlingException:http://internal.amazon.com/…`).
 */
function serviceError(status: number, parsed: Record<string, unknown> | undefined, data: Buffer, typeHeader: string | undefined): DynamoServiceError {
  const type = typeof parsed?.__type === 'string' ? parsed.__type : '';
  const name = type.slice(type.lastIndexOf('#') + 1) || errorTypeFromHeader(typeHeader) || (status >= 500 ? 'InternalServerError' : `HTTP${status}`);
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
    if (value !== undefined) out[name] = marshalValue(value, name);
  }
  return out;
}

/** `name`: the attribute (or map member) the value is under, for errors. */
function marshalValue(value: unknown, name: string): AttributeValue {
  switch (typeof value) {
    case 'string':
      return { S: value };
    case 'number':
      return { N: numberText(value, name) };
    case 'bigint':
      return { N: value.toString() };
    case 'boolean':
      return { BOOL: value };
    default:
      break;
  }
  if (value === null) return { NULL: true };
  if (value instanceof Uint8Array) return { B: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64') };
  if (Array.isArray(value)) return { L: value.filter((v) => v !== undefined).map((v) => marshalValue(v, name)) };
  if (value instanceof Set) return marshalSet(value, name);
  if (typeof value === 'object' && isPlainObject(value)) return { M: marshalMap(value as DocumentItem) };
  throw new TypeError(`cannot store a value of type ${describe(value)} in attribute ${name}`);
}

/**
 * A number as DynamoDB's text. An integer past 2^53 is refused: it may already be a rounded value (2**53 + 1 is
 * 2**53), and DynamoDB would keep the rounding as if it were exact; such values travel as bigints.
 */
function numberText(value: number, name: string): string {
  if (!Number.isFinite(value)) throw new TypeError(`cannot store the number ${value} in attribute ${name}`);
  if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
    throw new TypeError(`cannot store the number ${value} in attribute ${name}: past the precision of a JavaScript number (Number.MAX_SAFE_INTEGER), pass a bigint`);
  }
  return String(value);
}

function marshalSet(set: Set<unknown>, name: string): AttributeValue {
  const members = [...set];
  if (members.length === 0) throw new TypeError(`cannot store an empty set in attribute ${name}`);
  if (members.every((m) => typeof m === 'string')) return { SS: members };
  if (members.every((m) => typeof m === 'number' || typeof m === 'bigint')) return { NS: members.map((m) => (typeof m === 'number' ? numberText(m, name) : m.toString())) };
  if (members.every((m) => m instanceof Uint8Array)) return { BS: members.map((m) => (marshalValue(m, name) as { B: string }).B) };
  throw new TypeError(`cannot store a set of mixed types in attribute ${name}`);
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
  for (const name in map) out[name] = unmarshalValue(map[name] as AttributeValue, name);
  return out;
}

/** `name`: the attribute (or map member) the value is under, for errors. */
function unmarshalValue(value: AttributeValue, name: string): unknown {
  if (value.S !== undefined) return value.S;
  if (value.N !== undefined) return numberFrom(value.N as string, name);
  if (value.BOOL !== undefined) return value.BOOL;
  if (value.NULL !== undefined) return null;
  if (value.M !== undefined) return unmarshalMap(value.M as Record<string, unknown>);
  if (value.L !== undefined) return (value.L as AttributeValue[]).map((v) => unmarshalValue(v, name));
  if (value.B !== undefined) return Buffer.from(value.B as string, 'base64');
  if (value.SS !== undefined) return new Set(value.SS as string[]);
  if (value.NS !== undefined) return new Set((value.NS as string[]).map((n) => numberFrom(n, name)));
  if (value.BS !== undefined) return new Set((value.BS as string[]).map((b) => Buffer.from(b, 'base64')));
  throw new TypeError(`unknown attribute value type ${Object.keys(value).join(',')} in attribute ${name}`);
}

/**
 * DynamoDB's number text as a JavaScript number. Fractions (1.5) are read as numbers are; an integer past 2^53 that a
 * number cannot hold exactly is refused rather than silently rounded (DynamoDB keeps 38 digits).
 */
function numberFrom(text: string, name: string): number {
  const n = Number(text);
  if (Number.isSafeInteger(n) || !Number.isInteger(n) || holdsExactly(n, text)) return n;
  throw new TypeError(`attribute ${name} holds ${text}, past the precision of a JavaScript number`);
}

/** Whether the decimal `text` is exactly the integer `n` (2^53 is, 2^53 + 1 is not; nor is 2^53 + 0.5). */
function holdsExactly(n: number, text: string): boolean {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (m === null) return false;
  const fraction = m[3] ?? '';
  let digits = (m[2] ?? '') + fraction;
  const exponent = Number(m[4] ?? '0') - fraction.length;
  if (exponent < 0) {
    const cut = Math.max(0, digits.length + exponent);
    if (!/^0*$/.test(digits.slice(cut))) return false;
    digits = digits.slice(0, cut);
  } else {
    digits += '0'.repeat(exponent);
  }
  const magnitude = BigInt(digits === '' ? '0' : digits);
  return (m[1] === '-' ? -magnitude : magnitude) === BigInt(n);
}
