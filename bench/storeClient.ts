/**
 * `npm run bench:store`: the CPU the control plane's own DynamoDB client (lib/store/dynamoHttp.ts) spends per call,
 * beside the AWS SDK's client doing the same calls, against dynalite in a child process (so this process's CPU is the
 * client's alone). Operations: PutItem, a conditional UpdateItem, and a 25-key BatchGetItem, as the adapters send them.
 * Rounds alternate between the two clients so that a machine getting busier mid-run affects both; each round times
 * `CALLS` sequential calls (one at a time, as a filter's path makes them) with process.cpuUsage, after a warm-up.
 * Prints one line per round, then, as the last line, one JSON summary of medians:
 * {"callsPerRound":…,"rounds":…,"ownCpuMsPerCall":{"PutItem":…,…},"sdkCpuMsPerCall":{…},"sdkOverOwn":{…}}
 */
import { performance } from 'node:perf_hooks';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { startEmbeddedStore } from '../lib/local/embeddedStore';
import { DynamoHttpClient } from '../lib/store/dynamoHttp';
import { ensureTables } from '../lib/store/tables';

const CALLS = Number(process.env.BENCH_STORE_CALLS ?? 500);
const ROUNDS = Number(process.env.BENCH_STORE_ROUNDS ?? 5);
const TABLE = 'bench-store';
const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
const region = 'eu-west-1';

type Operation = 'PutItem' | 'UpdateItem' | 'BatchGetItem';
const OPERATIONS: readonly Operation[] = ['PutItem', 'UpdateItem', 'BatchGetItem'];

/** One call of each operation, for one client; `i` varies the keys as a run of pods would. */
interface Caller {
  readonly name: 'own' | 'sdk';
  call(operation: Operation, i: number): Promise<unknown>;
}

const item = (i: number) => ({ pk: `node#n-${i % 50}`, sk: `card#${i % 8}`, used: i % 10, usedmem: (i % 10) * 1000, usedcores: i % 100, pods: ['a/b', 'c/d'] });
const update = (i: number) => ({
  TableName: TABLE,
  Key: { pk: `node#n-${i % 50}`, sk: 'ledger' },
  UpdateExpression: 'SET #v = if_not_exists(#v, :zero) + :one, #m = :m',
  ConditionExpression: 'attribute_not_exists(#v) OR #v < :max',
  ExpressionAttributeNames: { '#v': 'version', '#m': 'memory' },
  ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':max': Number.MAX_SAFE_INTEGER, ':m': i * 3 },
});
const keys = (i: number) => Array.from({ length: 25 }, (_, k) => ({ pk: `node#n-${(i + k) % 50}`, sk: `card#${k % 8}` }));

function ownCaller(endpoint: string): Caller {
  const client = new DynamoHttpClient({ region, endpoint, credentials: () => credentials });
  return {
    name: 'own',
    call(operation, i) {
      if (operation === 'PutItem') return client.send('PutItem', { TableName: TABLE, Item: item(i) });
      if (operation === 'UpdateItem') return client.send('UpdateItem', update(i));
      return client.send('BatchGetItem', { RequestItems: { [TABLE]: { Keys: keys(i), ConsistentRead: true } } });
    },
  };
}

function sdkCaller(endpoint: string): Caller {
  const client = DynamoDBDocumentClient.from(new DynamoDBClient({ region, endpoint, credentials }), { marshallOptions: { removeUndefinedValues: true } });
  return {
    name: 'sdk',
    call(operation, i) {
      if (operation === 'PutItem') return client.send(new PutCommand({ TableName: TABLE, Item: item(i) }));
      if (operation === 'UpdateItem') return client.send(new UpdateCommand(update(i)));
      return client.send(new BatchGetCommand({ RequestItems: { [TABLE]: { Keys: keys(i), ConsistentRead: true } } }));
    },
  };
}

/** CPU milliseconds of this process per call over `CALLS` sequential calls. */
async function cpuPerCall(caller: Caller, operation: Operation, offset: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) await caller.call(operation, offset + i);
  const spent = process.cpuUsage(before);
  return (spent.user + spent.system) / 1000 / CALLS;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};
const round = (value: number, digits = 3): number => Number(value.toFixed(digits));

async function main(): Promise<void> {
  const store = await startEmbeddedStore({ mode: 'child-process' });
  try {
    const admin = new DynamoDBClient({ region, endpoint: store.endpoint, credentials });
    await ensureTables(admin, [TABLE], (ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    const callers = [ownCaller(store.endpoint), sdkCaller(store.endpoint)];
    // Warm-up: connections, JIT, the SDK's lazy initialisation.
    for (const caller of callers) for (const operation of OPERATIONS) for (let i = 0; i < 100; i++) await caller.call(operation, i);
    const samples: Record<'own' | 'sdk', Record<Operation, number[]>> = {
      own: { PutItem: [], UpdateItem: [], BatchGetItem: [] },
      sdk: { PutItem: [], UpdateItem: [], BatchGetItem: [] },
    };
    const started = performance.now();
    for (let r = 0; r < ROUNDS; r++) {
      // Alternate which client goes first, so neither always meets the same state of the store or the machine.
      const order = r % 2 === 0 ? callers : [...callers].reverse();
      for (const caller of order) {
        for (const operation of OPERATIONS) samples[caller.name][operation].push(await cpuPerCall(caller, operation, r * CALLS));
      }
      const line = OPERATIONS.map((op) => `${op} own ${round(samples.own[op].at(-1) ?? 0)} / sdk ${round(samples.sdk[op].at(-1) ?? 0)} ms`).join(', ');
      process.stdout.write(`round ${r + 1}/${ROUNDS}: ${line}\n`);
    }
    const medians = (name: 'own' | 'sdk') => Object.fromEntries(OPERATIONS.map((op) => [op, round(median(samples[name][op]))]));
    const own = medians('own');
    const sdk = medians('sdk');
    const ratio = Object.fromEntries(OPERATIONS.map((op) => [op, round((sdk[op] ?? 0) / Math.max(own[op] ?? 0, 1e-9), 2)]));
    process.stdout.write(
      `${JSON.stringify({ callsPerRound: CALLS, rounds: ROUNDS, seconds: round((performance.now() - started) / 1000, 1), node: process.version, ownCpuMsPerCall: own, sdkCpuMsPerCall: sdk, sdkOverOwn: ratio })}\n`,
    );
  } finally {
    await store.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:store failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
