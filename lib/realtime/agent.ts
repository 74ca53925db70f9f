/**
 * `relay node-agent`: the DaemonSet process that publishes real GPU usage on its Node as the
 * `hami.io/node-nvidia-realtime` annotation (docs/api.md §4 and §8). The loop itself is createNodeReporter;
 * this file wires it to nvidia-smi, the Kubernetes API, the clock, signals and a liveness endpoint.
 */
import { createServer, type Server } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { loggerFromEnv } from '../logging/processLogger';
import type { AppLogger } from '../powertools';
import { loadNodeAgentConfig, type NodeAgentConfig } from './config';
import { createNvidiaSmiRunner } from './nvidiaSmiRunner';
import { createNodeReporter, type NodeReporterDeps } from './reporter';

export { createNodeReporter, NodeAgentLog } from './reporter';
export type { NodeReporter, NodeReporterDeps, NvidiaSmiResult, ReporterConfig, TickOutcome } from './reporter';
export { loadNodeAgentConfig, defaultNodeAgentSettings, type NodeAgentConfig } from './config';
export { NodeAgentConfigError } from './errors';

export const NODE_AGENT_STARTED = 'Node agent started';
export const NODE_AGENT_CREDENTIALS = 'Node agent cluster credentials';

/** A sleep that resolves early, without throwing, when the signal aborts. */
export async function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal });
  } catch {
    // Aborted: the caller's loop checks the signal.
  }
}

/**
 * Longest quiet time of a healthy loop: a full backoff wait plus both nvidia-smi queries timing out plus
 * a patch timing out, with slack. Beyond it the loop is stuck and the kubelet should restart the pod.
 */
export function livenessBudgetMs(config: Pick<NodeAgentConfig, 'maxBackoffSeconds' | 'intervalSeconds' | 'timeoutSeconds'>): number {
  const waitMs = Math.max(config.maxBackoffSeconds, config.intervalSeconds) * 1000;
  return waitMs + 3 * config.timeoutSeconds * 1000 + 30_000;
}

/** Healthy while the loop has finished a tick (or started) within the budget. */
export function isLoopAlive(lastTickMs: number | undefined, startedMs: number, nowMs: number, budgetMs: number): boolean {
  return nowMs - (lastTickMs ?? startedMs) <= budgetMs;
}

/** Serves `GET /healthz` (200 when `alive()`, 503 otherwise) for the DaemonSet's liveness probe. */
export function startHealthServer(port: number, alive: () => boolean, host = '0.0.0.0'): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method === 'GET' && (req.url === '/healthz' || req.url === '/livez')) {
      const ok = alive();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' });
      res.end(ok ? 'ok' : 'node agent loop stalled');
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

export interface RunNodeAgentOptions {
  /** Stops the agent (in addition to SIGTERM / SIGINT). */
  readonly signal?: AbortSignal;
  /** Defaults to process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly logger?: AppLogger;
  /** Replaces the Kubernetes patcher (tests, or running outside a cluster). */
  readonly patchNode?: NodeReporterDeps['patchNode'];
}

/**
 * Runs until SIGTERM, SIGINT or `opts.signal`. Rejects only at start: invalid configuration
 * (NodeAgentConfigError naming the variable), no cluster credentials, or a health port already in use.
 */
export async function runNodeAgent(opts: RunNodeAgentOptions = {}): Promise<void> {
  const log = opts.logger ?? loggerFromEnv(process.env, 'hami-node-agent');
  const config = loadNodeAgentConfig(opts.env ?? process.env);

  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  const onOuterAbort = (): void => stop.abort();
  opts.signal?.addEventListener('abort', onOuterAbort, { once: true });
  if (opts.signal?.aborted) stop.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);

  let health: Server | undefined;
  try {
    const patchNode = opts.patchNode ?? (await loadKubePatcher(config, log));
    const reporter = createNodeReporter(
      {
        runNvidiaSmi: createNvidiaSmiRunner({ path: config.nvidiaSmiPath, timeoutMs: config.timeoutSeconds * 1000, signal: stop.signal }),
        patchNode,
        now: () => Date.now(),
        sleep: abortableSleep,
        logger: log,
      },
      config,
    );
    const startedMs = Date.now();
    if (config.healthPort !== 0) {
      const budgetMs = livenessBudgetMs(config);
      health = await startHealthServer(config.healthPort, () => isLoopAlive(reporter.lastTickMs(), startedMs, Date.now(), budgetMs));
    }
    log.info(NODE_AGENT_STARTED, { node: config.nodeName, config });
    await reporter.run(stop.signal);
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    opts.signal?.removeEventListener('abort', onOuterAbort);
    if (health) await new Promise<void>((resolve) => health?.close(() => resolve()));
  }
}

async function loadKubePatcher(config: NodeAgentConfig, log: AppLogger): Promise<NodeReporterDeps['patchNode']> {
  // Loaded lazily: client-node is ESM-only and large, and nothing else in this file needs it.
  const [{ loadKubeConfig }, { createKubeNodePatcher }] = await Promise.all([
    import('../kube/kubeconfig'),
    import('./kubeNodePatcher'),
  ]);
  // The relay's explicit choice (kubeconfig file, else the pod's ServiceAccount), never client-node's
  // silent fallback to http://localhost:8080.
  const { kubeConfig, source } = loadKubeConfig(process.env);
  log.info(NODE_AGENT_CREDENTIALS, { source: source.kind, server: kubeConfig.getCurrentCluster()?.server });
  return createKubeNodePatcher(kubeConfig, config.timeoutSeconds * 1000);
}
