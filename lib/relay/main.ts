/**
 * Entry point of dist/relay.js. `node dist/relay.js` runs the relay against the current cluster
 * credentials; `node dist/relay.js node-agent` (or RELAY_MODE=node-agent) runs the node reporter.
 */
import { loggerFromEnv } from '../logging/processLogger';
import { loadRelayConfig } from './config';
import { RelayConfigError } from './errors';
import { loadKubeConfig } from '../kube/kubeconfig';
import { startRelay } from './relay';
import { VERSION } from '../version';
import { errorMessage } from '../errors';

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
  if (wantsNodeAgent(process.argv.slice(2), process.env)) {
    // Loaded lazily: the relay itself never needs the node reporter's code.
    const { runNodeAgent } = await import('../realtime/agent');
    const controller = new AbortController();
    onShutdown(() => controller.abort());
    await runNodeAgent({ signal: controller.signal });
    return;
  }
  const config = loadRelayConfig(process.env);
  const { kubeConfig, source } = loadKubeConfig(process.env);
  logger.info('ClusterCredentials', { source: source.kind, detail: source.detail, server: kubeConfig.getCurrentCluster()?.server });
  const relay = await startRelay({ config, kubeConfig, logger });
  // Printed plainly too, so `npm run relay` shows where it listens.
  if (relay.extenderTls === undefined) console.log(`relay listening: extender ${relay.extenderUrl} (plain HTTP), users ${relay.userUrl}`);
  else {
    console.log(`relay listening: users ${relay.userUrl}`);
    void relay.extenderTls.ready().then((url) => console.log(`extender listening: ${url} (client certificate required)`), () => undefined);
  }
  void relay.webhook?.ready().then((url) => console.log(`admission webhook listening: ${url}/webhook`), () => undefined);
  onShutdown(() => {
    logger.info('RelayStopping');
    void relay.close().then(() => process.exit(0));
  });
}

main().catch((err: unknown) => {
  // Configuration problems are the operator's to fix: printed plainly, every bad variable named.
  if (err instanceof RelayConfigError || (err instanceof Error && err.name === 'NodeAgentConfigError')) {
    console.error(err.message);
  } else {
    logger.error('RelayFailed', { error: errorMessage(err) });
  }
  process.exit(1);
});
