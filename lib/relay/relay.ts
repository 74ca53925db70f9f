/**
 * Composition root of the relay: builds the clients once and wires extender, watcher, forwarder and
 * the two HTTP listeners. Used by main.ts and by the tests (which inject a logger, a delay and ports).
 */
import type { Server } from 'node:http';
import { AdmissionregistrationV1Api, ApiException, AuthenticationV1Api, AuthorizationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { cardCapacity } from '../admission/cards';
import { walkDecisionTree } from '../diagnostics/decisionTree';
import { KubeClusterReader } from '../kube/clusterReader';
import { nodeSchema, type WireNode } from '../wire/objects';
import type { AppLogger } from '../powertools';
import type { RelayConfig } from './config';
import type { RequestSigner } from '../aws/sigv4';
import { createControlPlaneClient, signerFromConfig } from './controlPlane';
import { realDelay, type DelayFn } from './delay';
import { EventCorrelator } from './eventCorrelator';
import { ClusterEventForwarder } from './forwarder';
import { NodeBindQueue } from './bindQueue';
import { applyEffects } from './effects';
import { createKubeWriter, createNudgePatcher, statusMessage } from './kubeWriter';
import { Nudger } from './nudger';
import { ControlPlaneReachability } from './reachability';
import { cachingReviews } from './reviewCache';
import { PageTokens } from './pageTokens';
import { LogSampler, UnknownTokenGate } from './tokenGate';
import { closeServer, createRelayServer, listen, relayHandler } from './server';
import { coalesced, startTlsListener, type RunningTlsListener } from './tls/listener';
import { SelfManagedWebhookTls, defaultValidity } from './tls/webhookCertificates';
import { ClusterWatcher } from './watcher';
import { AheadDecisions, aheadOptionsFrom } from './aheadDecisions';
import { filesSource, startWebhook, type RunningWebhook, type ServingSource } from './webhook';
import { errorMessage } from '../errors';

export interface StartRelayOptions {
  readonly config: RelayConfig;
  readonly kubeConfig: KubeConfig;
  readonly logger: AppLogger;
  /** Defaults to the signer the config asks for (SigV4, bearer token or none). */
  readonly signer?: RequestSigner;
  /** Waits of the forwarder (batch window, retry backoff). */
  readonly forwarderDelay?: DelayFn;
  /** Waits before restarting a failed informer. */
  readonly watcherDelay?: DelayFn;
  /** Waits out the extender's answer deadline. */
  readonly extenderDelay?: DelayFn;
  /** Waits between the webhook's certificate checks (and its retries). */
  readonly webhookDelay?: DelayFn;
  /** Waits between probes of an unreachable control plane. */
  readonly reachabilityDelay?: DelayFn;
  /** Spaces the nudges (their rate bound). */
  readonly nudgeDelay?: DelayFn;
  /** Decide-ahead's batch window and its filters' bounded wait. */
  readonly aheadDelay?: DelayFn;
  readonly now?: () => Date;
  /** Random bytes (page tokens' nonces, and their key when the user port speaks plain HTTP). */
  readonly randomBytes?: (size: number) => Buffer;
}

export interface RunningRelay {
  /** The plain-HTTP extender's URL; empty with mutual TLS (then `extenderTls.ready()` gives it). */
  readonly extenderUrl: string;
  readonly extenderTls?: RunningTlsListener;
  /** The plain-HTTP user port's URL; empty with HTTPS (then `userTls.ready()` gives it). */
  readonly userUrl: string;
  readonly userTls?: RunningTlsListener;
  readonly watcher: ClusterWatcher;
  readonly forwarder: ClusterEventForwarder;
  /** The admission webhook, unless RELAY_WEBHOOK_TLS=off. */
  readonly webhook?: RunningWebhook;
  readonly nudger: Nudger;
  readonly reachability: ControlPlaneReachability;
  /** Decide-ahead, unless HAMI_DECIDE_AHEAD=false. */
  readonly ahead?: AheadDecisions;
  close(): Promise<void>;
}

/** Refused tokens and limited callers are logged once per this window, with a count (lib/relay/tokenGate.ts). */
const LOG_SAMPLE_WINDOW_MS = 60_000;

export async function startRelay(opts: StartRelayOptions): Promise<RunningRelay> {
  const { config, kubeConfig, logger } = opts;
  const controlPlane = createControlPlaneClient(config.controlPlane.url, opts.signer ?? signerFromConfig(config.controlPlane));
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const writer = createKubeWriter(core, new EventCorrelator(config.eventSourceComponent, opts.now));
  const now = opts.now ?? (() => new Date());

  // Nudges (docs/relay.md, "Nothing lost, nothing stalled"): once the pods are listed and the control plane answers, at start and
  // again after every outage of the control plane.
  let podsListed = false;
  let nudgeDue: string | undefined = 'relay started';
  const nudger = new Nudger({
    schedulerName: config.admission.schedulerName,
    perSecond: config.nudge.perSecond,
    windowMs: config.nudge.windowMs,
    // The watcher is built below; this runs only once it has listed.
    pods: () => watcher.cached('Pod'),
    patch: createNudgePatcher(core),
    logger,
    delay: opts.nudgeDelay ?? realDelay,
    now,
  });
  const maybeNudge = () => {
    if (nudgeDue === undefined || !podsListed || reachability.current() !== 'up') return;
    const reason = nudgeDue;
    nudgeDue = undefined;
    void nudger.nudgeAll(reason);
  };
  const reachability = new ControlPlaneReachability({
    probe: async () => (await controlPlane.get('/healthz', { timeoutMs: 2_000 })).status === 200,
    delay: opts.reachabilityDelay ?? realDelay,
    backoff: config.backoff,
    logger,
    onUp: (before) => {
      // A start round still due covers the outage too.
      if (before === 'down') nudgeDue ??= 'control plane reachable again';
      maybeNudge();
    },
  });
  const report = (answered: boolean, error?: string) => reachability.report(answered, error);

  // Bind hand-over (docs/relay.md): binds wait per node for the lock, told of its end by the batches delivered.
  const bindQueue = config.bindHandOverMs > 0 ? new NodeBindQueue({ holdMs: config.bindHandOverMs, delay: opts.extenderDelay ?? realDelay }) : undefined;
  const forwarder = new ClusterEventForwarder({
    controlPlane,
    logger,
    maxEvents: config.batch.maxEvents,
    backlogEvents: config.batch.backlogEvents,
    maxBytes: config.batch.maxBytes,
    maxDelayMs: config.batch.maxDelayMs,
    backoff: config.backoff,
    requestTimeoutMs: config.extenderDeadlineMs,
    ...(opts.forwarderDelay ? { delay: opts.forwarderDelay } : {}),
    onEffects: async (effects) => {
      await applyEffects(effects, writer, logger, { independent: true });
    },
    onReachability: report,
    ...(bindQueue ? { isUrgent: (event) => bindQueue.watched(event), onDelivered: (events) => bindQueue.delivered(events) } : {}),
  });
  // Decide-ahead (docs/relay.md, "Deciding ahead"): off with HAMI_DECIDE_AHEAD=false, every filter then decided live.
  const ahead = config.ahead.enabled
    ? new AheadDecisions(
        aheadOptionsFrom(config, {
          controlPlane,
          writer,
          claim: createNudgePatcher(core),
          logger,
          now: () => now().getTime(),
          delay: opts.aheadDelay ?? realDelay,
          viewSeq: () => forwarder.viewSeq,
        }),
      )
    : undefined;
  const watcher = new ClusterWatcher({
    kubeConfig,
    core,
    forwarder,
    logger,
    managedResources: config.managedResources,
    backoff: config.backoff,
    watchTimeoutSeconds: config.watchTimeoutSeconds,
    resyncIntervalMs: config.resyncIntervalMs,
    ...(opts.watcherDelay ? { delay: opts.watcherDelay } : {}),
    ...(ahead ? { onPod: (type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: unknown) => ahead.observe(type, obj) } : {}),
    onListed: (kind) => {
      if (kind !== 'Pod' || podsListed) return;
      podsListed = true;
      maybeNudge();
    },
  });
  const deps = {
    extender: {
      controlPlane,
      writer,
      logger,
      deadlineMs: config.extenderDeadlineMs,
      viewSeq: () => forwarder.viewSeq,
      preemption: config.preemption,
      reachability: report,
      ...(ahead ? { ahead } : {}),
      pods: {
        schedulerName: config.admission.schedulerName,
        cached: (namespace: string, name: string) => watcher.cachedObject('Pod', namespace, name),
        read: async (namespace: string, name: string) => {
          try {
            return await core.readNamespacedPod({ namespace, name });
          } catch (err) {
            if (err instanceof ApiException && err.code === 404) return undefined;
            throw new Error(statusMessage(err), { cause: err });
          }
        },
      },
      ...(opts.extenderDelay ? { delay: opts.extenderDelay } : {}),
      ...(bindQueue ? { bindQueue } : {}),
    },
    controlPlane,
    reviews: cachingReviews(
      { authn: kubeConfig.makeApiClient(AuthenticationV1Api), authz: kubeConfig.makeApiClient(AuthorizationV1Api) },
      { ttlMs: config.user.reviewCacheMs, now: () => now().getTime() },
    ),
    // Every replica derives the same key from the user port's TLS key (the Secret they share), so a listing may
    // move between them; with plain HTTP (local runs, tests) the key is this process's own.
    pageTokens: new PageTokens({ sharedSecret: () => userTls?.serving()?.keyPem, ...(opts.randomBytes ? { randomBytes: opts.randomBytes } : {}) }),
    tokenGate: new UnknownTokenGate({
      perClient: { perMinute: config.user.tokenReviews.perClient },
      overall: { perMinute: config.user.tokenReviews.overall },
      now: () => now().getTime(),
    }),
    logSampler: new LogSampler(LOG_SAMPLE_WINDOW_MS, () => now().getTime()),
    logger,
    watcherSynced: () => watcher.status().synced,
    probeTimeoutMs: 2_000,
    schedulerLogTimeoutMs: config.extenderDeadlineMs,
    ...(config.extender.tls !== 'off' ? { extenderListening: () => extenderTls?.listening() === true } : {}),
    diagnose: async (namespace: string, name: string) => {
      const reader = new KubeClusterReader(core);
      try {
        const pod = await reader.getPod(namespace, name);
        const nodeName = pod?.spec?.nodeName;
        const node = nodeName ? await reader.getNode(nodeName) : undefined;
        return walkDecisionTree({ namespace, name }, pod, node, { schedulerName: config.admission.schedulerName, engine: config.admission.engine });
      } catch (err) {
        logger.warn('DiagnosisUnavailable', { namespace, pod: name, error: errorMessage(err) });
        return undefined;
      }
    },
  };
  const sources = tlsSources(config, kubeConfig, core, logger, opts.now);
  // The extender port: mutual TLS (kube-scheduler's client certificate required), or plain HTTP when asked for.
  const plainExtender = config.extender.tls === 'off' ? createRelayServer('extender', deps) : undefined;
  const extenderHandler = relayHandler('extender', deps);
  const extenderTls =
    sources.extender === undefined
      ? undefined
      : startTlsListener({
          logPrefix: 'Extender',
          host: config.host,
          port: config.port,
          source: sources.extender,
          handler: async (req, res) => extenderHandler(req, res),
          logger,
          checkIntervalMs: config.webhook.checkIntervalMs,
          backoff: config.backoff,
          clientAuth: { commonName: config.extender.clientName },
          ...(opts.webhookDelay ? { delay: opts.webhookDelay } : {}),
        });
  // The user port: HTTPS from the same certificate source as the webhook (docs/relay.md, "The console"), or plain
  // HTTP only when RELAY_USER_TLS=off says so.
  const plainUser = config.user.tls === 'off' ? createRelayServer('user', deps) : undefined;
  const userHandler = relayHandler('user', deps);
  const userTls =
    sources.user === undefined
      ? undefined
      : startTlsListener({
          logPrefix: 'User',
          host: config.host,
          port: config.userPort,
          source: sources.user,
          handler: async (req, res) => userHandler(req, res),
          logger,
          checkIntervalMs: config.webhook.checkIntervalMs,
          backoff: config.backoff,
          ...(opts.webhookDelay ? { delay: opts.webhookDelay } : {}),
        });
  const servers: Server[] = [...(plainExtender ? [plainExtender] : []), ...(plainUser ? [plainUser] : [])];
  const extenderUrl = plainExtender ? await listen(plainExtender, config.port, config.host) : '';
  const userUrl = plainUser ? await listen(plainUser, config.userPort, config.host) : '';
  watcher.start();
  reachability.start();
  const webhook = sources.webhook === undefined ? undefined : startWebhook({
    host: config.host,
    port: config.webhook.port,
    source: sources.webhook,
    admission: config.admission,
    capacity: () => {
      const nodes = watcher.cached('Node');
      if (nodes === undefined) return undefined;
      // The informer's objects as the engine reads them; one that is not a Node (no name) registers no card.
      const read = nodes.flatMap((node): WireNode[] => {
        const parsed = nodeSchema.safeParse(node);
        return parsed.success ? [parsed.data] : [];
      });
      return cardCapacity(read, config.admission.engine);
    },
    logger,
    checkIntervalMs: config.webhook.checkIntervalMs,
    backoff: config.backoff,
    ...(opts.webhookDelay ? { delay: opts.webhookDelay } : {}),
  });
  logger.info('RelayStarted', {
    extenderUrl: extenderUrl || `https on port ${config.port} (client certificate required)`,
    userUrl: userUrl || `https on port ${config.userPort}`,
    controlPlane: config.controlPlane.url,
    auth: config.controlPlane.auth,
  });
  return {
    extenderUrl,
    ...(extenderTls ? { extenderTls } : {}),
    userUrl,
    ...(userTls ? { userTls } : {}),
    watcher,
    forwarder,
    ...(webhook ? { webhook } : {}),
    nudger,
    reachability,
    ...(ahead ? { ahead } : {}),
    async close() {
      watcher.stop();
      ahead?.close();
      reachability.stop();
      nudger.stop();
      forwarder.close();
      await Promise.all([...servers.map(closeServer), webhook?.close(), extenderTls?.close(), userTls?.close()]);
    },
  };
}

/**
 * Where the webhook's and the extender's certificates come from: files (cert-manager), or the relay's own CA in a
 * Secret, one instance shared by both listeners (its refreshes coalesced), which also issues kube-scheduler's
 * client certificate when the extender port takes mutual TLS.
 */
function tlsSources(config: RelayConfig, kubeConfig: KubeConfig, core: CoreV1Api, logger: AppLogger, now?: () => Date): { webhook?: ServingSource; extender?: ServingSource; user?: ServingSource } {
  const selfManaged = config.webhook.tls === 'self-managed' || config.extender.tls === 'self-managed' || config.user.tls === 'self-managed';
  let shared: ServingSource | undefined;
  if (selfManaged) {
    const tls = new SelfManagedWebhookTls(
      {
        namespace: config.webhook.namespace,
        secretName: config.webhook.secretName,
        webhookConfigurationName: config.webhook.tls === 'off' ? '' : config.webhook.configurationName,
        serviceName: config.webhook.serviceName,
        ...(config.extender.tls === 'self-managed' ? { client: { secretName: config.extender.clientSecretName, commonName: config.extender.clientName } } : {}),
        ...defaultValidity,
      },
      { core, admission: kubeConfig.makeApiClient(AdmissionregistrationV1Api), logger, now: now ?? (() => new Date()) },
    );
    shared = coalesced(() => tls.refresh());
  }
  const pick = (mode: 'self-managed' | 'files' | 'off', dir: string): ServingSource | undefined => (mode === 'off' ? undefined : mode === 'files' ? filesSource(dir) : shared);
  const webhook = pick(config.webhook.tls, config.webhook.certDir);
  const extender = pick(config.extender.tls, config.extender.certDir);
  const user = pick(config.user.tls, config.user.certDir);
  return { ...(webhook ? { webhook } : {}), ...(extender ? { extender } : {}), ...(user ? { user } : {}) };
}
