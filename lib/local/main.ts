/** `npm start`: the control plane on http://127.0.0.1:${PORT:-8080} over an embedded store. */

// A module, not a script: its names stay its own.
export {};
import { errorMessage } from '../errors';
import { exitOnSignals } from './shutdown';

// Set before the observability clients are built (they read the environment once, at import).
// The local server logs at info unless told otherwise; EMF metrics only mean something inside Lambda.
process.env.POWERTOOLS_LOG_LEVEL ??= 'INFO';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

async function main(): Promise<void> {
  const { describeStore, runFromEnvironment } = await import('./server');
  const server = await runFromEnvironment();
  process.stdout.write(`hami-explain control plane listening on ${server.url} (${describeStore(server.store)}${process.env.HAMI_API_TOKEN ? '; bearer token required' : ''})\n`);
  process.stdout.write(`web console: open ${server.url}/ in a browser${process.env.HAMI_API_TOKEN ? ' and sign in with HAMI_API_TOKEN' : ''}\n`);
  exitOnSignals(() => server.close());
}

main().catch((err: unknown) => {
  const message = errorMessage(err);
  process.stderr.write(err instanceof Error && err.name === 'ConfigError' ? `${message}\n` : `cannot start the local control plane: ${message}\n`);
  process.exit(1);
});
