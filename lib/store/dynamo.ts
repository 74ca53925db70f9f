/**
 * The DynamoDB client, built once per process, and the single place SDK failures become domain errors:
 * a failed condition is an expected outcome; throttling, timeouts and server faults are retryable
 * (StoreUnavailableError, 503); requests DynamoDB refuses as invalid are permanent and explained
 * (StoreRejectedError, never "retry"); a missing table, missing permissions or a request we built wrong is a
 * fault of ours (StoreFaultError, 500, not "retry" either).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { StoreFaultError, StoreRejectedError, StoreUnavailableError } from '../errors';

export interface DynamoOptions {
  readonly region: string;
  /** dynalite / DynamoDB Local / another compatible endpoint; unset in AWS. */
  readonly endpoint?: string;
  /** Static credentials for a local endpoint; unset: the SDK's default chain. */
  readonly localCredentials?: boolean;
}

export function createDocumentClient(options: DynamoOptions): DynamoDBDocumentClient {
  const client = new DynamoDBClient({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    ...(options.localCredentials ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
    maxAttempts: 3,
  });
  // We give the SDK no logger, yet its logger middleware still copies every request and answer through the
  // sensitive-data filter for a logger that discards them: pure CPU on each call, dropped.
  client.middlewareStack.remove('loggerMiddleware');
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
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

const READ_OPERATIONS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan']);

interface Consumed {
  readonly ConsumedCapacity?: { readonly CapacityUnits?: number } | readonly { readonly CapacityUnits?: number }[];
}

/**
 * Sends one command, counting it and the capacity it consumed. `refusedWriteUnits` is what a refused
 * conditional write is billed (DynamoDB reports no capacity on the exception).
 */
export async function send<T>(stats: StoreStats, operation: string, run: () => Promise<T>, refusedWriteUnits = 1): Promise<T> {
  stats.calls += 1;
  stats.byOperation[operation] = (stats.byOperation[operation] ?? 0) + 1;
  try {
    const out = await run();
    const consumed = (out as Consumed).ConsumedCapacity;
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

export function isConditionFailed(err: unknown): boolean {
  return err instanceof Error && err.name === 'ConditionalCheckFailedException';
}

const RETRYABLE = new Set([
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
]);
const MISCONFIGURED = new Set(['ResourceNotFoundException', 'AccessDeniedException', 'UnrecognizedClientException', 'MissingAuthenticationTokenException', 'InvalidSignatureException']);

/** The domain error for an SDK failure (network failures and unknown faults are retryable). */
export function classifyStoreError(operation: string, err: unknown): Error {
  const name = err instanceof Error ? err.name : '';
  const message = err instanceof Error ? err.message : String(err);
  if (name === 'ValidationException' || name === 'ItemCollectionSizeLimitExceededException') {
    const tooLarge = explainSizeRefusal(message);
    if (tooLarge !== undefined) return new StoreRejectedError(`the store refused to save it: ${tooLarge}`, { cause: err });
    return new StoreFaultError(`store ${operation} refused a request: ${name}`, { cause: err });
  }
  if (MISCONFIGURED.has(name) || name === 'SerializationException') return new StoreFaultError(`store ${operation} failed: ${name}`, { cause: err });
  if (RETRYABLE.has(name) || !(err instanceof Error) || isNetworkError(err)) return new StoreUnavailableError(`store ${operation} failed`, { cause: err });
  // Anything else the SDK raises (unknown 5xx included) is treated as transient; the cause stays in the logs.
  return new StoreUnavailableError(`store ${operation} failed`, { cause: err });
}

function isNetworkError(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && /^(ECONN|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|UND_ERR)/.test(code);
}

/** DynamoDB's size refusals, in words a caller can act on (the raw text stays in the cause); undefined for other refusals. */
function explainSizeRefusal(message: string): string | undefined {
  if (/item size|collection size/i.test(message)) return "the item would exceed DynamoDB's 400 KB item size limit";
  if (/(hash|range|partition|sort)\s*key.*(size|length|long)|key.*exceed/i.test(message)) return "a key would exceed DynamoDB's key size limit (2048 bytes)";
  return undefined;
}
