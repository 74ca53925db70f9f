/**
 * The relay's process (docs/relay.md): configuration from the environment, the cluster's credentials, the listeners,
 * what it prints when they are up, and a clean close on shutdown. Started by the relay image's entry point
 * (lib/entry/relayImage.ts), which also runs the node agent.
 */
import type { AppLogger } from '../powertools';
import { loadRelayConfig } from './config';
import { loadKubeConfig } from '../kube/kubeconfig';
import { startRelay } from './relay';

export async function runRelayProcess(logger: AppLogger, onShutdown: (stop: () => void) => void): Promise<void> {
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
