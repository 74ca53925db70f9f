/**
 * `npm run dynamodb-local [-- --port N]`: AWS's DynamoDB Local from the dev dependency, on 127.0.0.1 with telemetry
 * off, in memory, until Ctrl-C; prints the endpoint and the `npm start` line that uses it.
 */

// A module, not a script: its names stay its own.
export {};
import { errorMessage } from '../errors';
import { DYNAMODB_LOCAL_PORT, javaCanLaunch, startDynamoDbLocal } from './dynamoDbLocal';
import { exitOnSignals } from './shutdown';

function portFromArgs(args: readonly string[]): number {
  const at = args.indexOf('--port');
  if (at < 0) return DYNAMODB_LOCAL_PORT;
  const port = Number(args[at + 1]);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`--port must be 0 to 65535, not ${String(args[at + 1])}`);
  return port;
}

async function main(): Promise<void> {
  const port = portFromArgs(process.argv.slice(2));
  if (!javaCanLaunch()) {
    throw new Error('needs java 17 or later with its compiler (a JDK, e.g. Debian\'s openjdk-17-jdk-headless) on the PATH');
  }
  const dynamo = await startDynamoDbLocal({ port, log: (line) => process.stderr.write(`${line}\n`) });
  process.stdout.write(`DynamoDB Local listening on ${dynamo.endpoint} (in memory, this address only, telemetry off; Ctrl-C stops it)\n`);
  process.stdout.write(`run the control plane on it: DDB_ENDPOINT=${dynamo.endpoint} npm start\n`);
  exitOnSignals(() => dynamo.stop());
}

main().catch((err: unknown) => {
  process.stderr.write(`cannot start DynamoDB Local: ${errorMessage(err)}\n`);
  process.exit(1);
});
