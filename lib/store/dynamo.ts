/**
 * The DynamoDB client, built once per process, and the single place store failures become domain errors:
 * a failed condition is an expected outcome; throttling, timeouts and server faults are retryable
 * (StoreUnavailableError, 503); requests DynamoDB refuses as invalid are permanent and explained
 * (StoreRejectedError, never "retry"); a missing table, missing permissions or a request we built wrong is a
 * fault of ours (StoreFaultError, 500, not "retry" either).
 */
import { defaultCredentials } from '../aws/sigv4';
import type { Sleep } from '../clock';
import { forEachAtMost } from '../concurrency';
import { StoreFaultError, StoreRejectedError, StoreUnavailableError, errorMessage } from '../errors';
import { DynamoHttpClient, type DocumentClient, type DocumentItem, type DocumentOperation, type DocumentOperations } from './dynamoHttp';

export interface DynamoOptions {
  readonly region: string;
  /**
   * Where the store is: the control plane passes the endpoint its configuration resolved once (lib/config.ts,
   * DDB_ENDPOINT or the AWS SDK's endpoint variables); unset: DynamoDB's endpoint for the region.
   */
  readonly endpoint?: string;
  /** Static credentials for a local endpoint; unset: the SDK's default chain. */
  readonly localCredentials?: boolean;
}

const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

export function createDocumentClient(options: DynamoOptions): DocumentClient {
  return new DynamoHttpClient({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    credentials: options.localCredentials ? () => LOCAL_CREDENTIALS : defaultCredentials(),
  });
}

/** What the store was asked and what it charged, so benchmarks and tests can state what a decision costs. */
export interface StoreStats {
  calls: number;
  /** Calls per operation (GetItem, UpdateItem, …). */
  readonly byOperation: Record<string, number>;
  /** Capacity units as DynamoDB charges them (ConsumedCapacity; refused writes estimated from the item's size). */
  readUnits: number;
  writeUnits: number;
}

export function emptyStats(): StoreStats {
  return { calls: 0, byOperation: {}, readUnits: 0, writeUnits: 0 };
}

const READ_OPERATIONS = new Set<string>(['BatchGetItem', 'Query']);

/**
 * Sends one operation, counting it and the capacity it consumed. `refusedWriteUnits` is what a refused
 * conditional write is billed (DynamoDB reports no capacity on the exception).
 */
export async function send<O extends DocumentOperation>(
  doc: DocumentClient,
  stats: StoreStats,
  operation: O,
  input: DocumentOperations[O]['input'],
  refusedWriteUnits = 1,
): Promise<DocumentOperations[O]['output']> {
  stats.calls += 1;
  stats.byOperation[operation] = (stats.byOperation[operation] ?? 0) + 1;
  try {
    const out = await doc.send(operation, input);
    const consumed = out.ConsumedCapacity;
    const units = Array.isArray(consumed) ? consumed.reduce((sum: number, c) => sum + (c.CapacityUnits ?? 0), 0) : ((consumed as { CapacityUnits?: number } | undefined)?.CapacityUnits ?? 0);
    if (READ_OPERATIONS.has(operation)) stats.readUnits += units;
    else stats.writeUnits += units;
    return out;
  } catch (err) {
    if (isConditionFailed(err)) {
      stats.writeUnits += refusedWriteUnits;
      throw err;
    }
    throw classifyStoreError(operation, err);
  }
}

const BATCH_GET_MAX_KEYS = 100;
const BATCH_GET_MAX_ROUNDS = 6;
const PARALLEL_BATCH_GETS = 8;

/** Every key's item (absent keys have none), in chunks of 100 sent a few at a time; unprocessed keys are fetched again with backoff. */
export async function batchGetAll(
  doc: DocumentClient,
  stats: StoreStats,
  sleep: Sleep,
  table: string,
  keys: readonly DocumentItem[],
  consistent: boolean,
): Promise<DocumentItem[]> {
  const chunks: DocumentItem[][] = [];
  for (let i = 0; i < keys.length; i += BATCH_GET_MAX_KEYS) chunks.push(keys.slice(i, i + BATCH_GET_MAX_KEYS));
  const found: DocumentItem[] = [];
  await forEachAtMost(chunks, PARALLEL_BATCH_GETS, async (chunk) => {
    let request: DocumentOperations['BatchGetItem']['input']['RequestItems'] = { [table]: { Keys: chunk, ConsistentRead: consistent } };
    for (let round = 0; request && Object.keys(request).length > 0; round++) {
      if (round === BATCH_GET_MAX_ROUNDS) throw new StoreUnavailableError('store kept returning unprocessed keys');
      // Keys left over for size are fetched again at once; a second leftover round is throttling: back off.
      if (round > 1) await sleep(20 * 2 ** round);
      const out: DocumentOperations['BatchGetItem']['output'] = await send(doc, stats, 'BatchGetItem', { RequestItems: request, ReturnConsumedCapacity: 'TOTAL' });
      found.push(...(out.Responses?.[table] ?? []));
      request = out.UnprocessedKeys;
    }
  });
  return found;
}

export function isConditionFailed(err: unknown): boolean {
  return err instanceof Error && err.name === 'ConditionalCheckFailedException';
}

const MISCONFIGURED = new Set(['ResourceNotFoundException', 'AccessDeniedException', 'UnrecognizedClientException', 'MissingAuthenticationTokenException', 'InvalidSignatureException']);

/** The domain error for a store failure (network failures and unknown faults are retryable). */
export function classifyStoreError(operation: string, err: unknown): Error {
  const name = err instanceof Error ? err.name : '';
  const message = errorMessage(err);
  if (name === 'ValidationException' || name === 'ItemCollectionSizeLimitExceededException') {
    const tooLarge = explainSizeRefusal(message);
    if (tooLarge !== undefined) return new StoreRejectedError(`the store refused to save it: ${tooLarge}`, { cause: err });
    return new StoreFaultError(`store ${operation} refused a request: ${name}`, { cause: err });
  }
  // A value the store cannot hold is a request we built wrong: no retry mends it.
  if (MISCONFIGURED.has(name) || name === 'SerializationException' || err instanceof TypeError) return new StoreFaultError(`store ${operation} failed: ${name}`, { cause: err });
  // Throttling, server faults, timeouts, dropped connections (./dynamoHttp.ts) and anything unknown are worth a retry; the cause stays in the logs.
  return new StoreUnavailableError(`store ${operation} failed`, { cause: err });
}

/** DynamoDB's size refusals, in words a caller can act on (the raw text stays in the cause); undefined for other refusals. */
function explainSizeRefusal(message: string): string | undefined {
  if (/item size|collection size/i.test(message)) return "the item would exceed DynamoDB's 400 KB item size limit";
  if (/(hash|range|partition|sort)\s*key.*(size|length|long)|key.*exceed/i.test(message)) return "a key would exceed DynamoDB's key size limit (2048 bytes)";
  return undefined;
}
