/**
 * The DynamoDB client, built once per process, and the single place SDK failures become domain errors.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { StoreUnavailableError } from '../errors';

export interface DynamoOptions {
  readonly region: string;
  /** dynalite / DynamoDB Local; unset in AWS. */
  readonly endpoint?: string;
}

export function createDocumentClient(options: DynamoOptions): DynamoDBDocumentClient {
  const client = new DynamoDBClient({
    region: options.region,
    ...(options.endpoint
      ? { endpoint: options.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
    maxAttempts: 3,
  });
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
}

/** Counts calls so benchmarks and tests can state how many round trips a decision costs. */
export interface CallCounter {
  calls: number;
  /** Calls per operation (GetItem, UpdateItem, …). */
  readonly byOperation?: Record<string, number>;
}

/** Sends one command, counting it; a failed condition is an expected outcome, anything else is unavailability. */
export async function send<T>(counter: CallCounter, operation: string, run: () => Promise<T>): Promise<T> {
  counter.calls += 1;
  if (counter.byOperation) counter.byOperation[operation] = (counter.byOperation[operation] ?? 0) + 1;
  try {
    return await run();
  } catch (err) {
    if (isConditionFailed(err)) throw err;
    throw new StoreUnavailableError(`store ${operation} failed`, { cause: err });
  }
}

export function isConditionFailed(err: unknown): boolean {
  return err instanceof Error && err.name === 'ConditionalCheckFailedException';
}
