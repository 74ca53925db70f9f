/**
 * Entry point of dist/relay.js, the relay image's one bundle (Dockerfile): `node dist/relay.js` runs the relay against
 * the current cluster credentials; `node dist/relay.js node-agent` (or RELAY_MODE=node-agent) runs the node reporter.
 * It sits above lib/relay and lib/realtime, so that the two share an image without importing each other.
 */
import { errorMessage } from '../errors';
import { loggerFromEnv } from '../logging/processLogger';
import { NodeAgentConfigError } from '../realtime/errors';
import { RelayConfigError } from '../relay/errors';
import { runRelayProcess } from '../relay/main';
import { VERSION } from '../version';

const usage = `Usage:
  relay              the in-cluster relay (extender, watch forwarding, scheduler logs, admission webhook)
  relay node-agent   the node agent (RELAY_MODE=node-agent does the same)
  relay --version    print the version

Configuration comes from the environment; every variable is described in docs/relay.md.`;

const logger = loggerFromEnv(process.env, 'hami-relay');

function wantsNodeAgent(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  return argv.includes('node-agent') || env.RELAY_MODE === 'node-agent';
}

function onShutdown(stop: () => void): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, stop);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(usage);
    return;
  }
  if (argv.includes('--version')) {
    console.log(VERSION);
    return;
  }
  if (wantsNodeAgent(argv, process.env)) {
    // Loaded lazily: the relay itself never needs the node reporter's code.
    const { runNodeAgent } = await import('../realtime/agent');
    const controller = new AbortController();
    onShutdown(() => controller.abort());
    await runNodeAgent({ signal: controller.signal });
    return;
  }
  await runRelayProcess(logger, onShutdown);
}

main().catch((err: unknown) => {
  // Configuration problems are the operator's to fix: printed plainly, every bad variable named.
  if (err instanceof RelayConfigError || err instanceof NodeAgentConfigError) {
    console.error(err.message);
  } else {
    logger.error('RelayFailed', { error: errorMessage(err) });
  }
  process.exit(1);
});
