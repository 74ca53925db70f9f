/**
 * `npm run demo`: the seed examples end to end against an in-process local control plane, or with
 * `npm run demo -- --url http://127.0.0.1:8080 [--token T]` against one already running (`npm start`), where
 * the records stay for curl and hami-diag afterwards.
 */
import { parseArgs } from 'node:util';
import { errorMessage } from '../errors';

// A module, not a script: its names stay its own.
export {};

// Set before the server's observability clients are built (they read the environment at import):
// Powertools' info lines would drown the demo's output. Set them yourself to see the decision logs.
process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

async function main(): Promise<void> {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { url: { type: 'string' }, token: { type: 'string' } }, strict: true });
  const token = values.token ?? process.env.HAMI_API_TOKEN;
  const { runDemo } = await import('./demo');
  await runDemo((line) => process.stdout.write(`${line}\n`), {
    colour: process.stdout.isTTY === true && !process.env.NO_COLOR,
    ...(values.url !== undefined ? { url: values.url } : {}),
    ...(token !== undefined && token !== '' ? { token } : {}),
  });
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    const message = errorMessage(err);
    process.stderr.write(`demo failed: ${message}\n`);
    process.exit(1);
  },
);
