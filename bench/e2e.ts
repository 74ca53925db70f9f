/**
 * `npm run bench`: the control plane end to end, driven the way kube-scheduler and the relay drive it.
 *
 * Processes, as deployed: a control plane for `/filter` and one for everything else (two Lambda functions, each
 * with its own warm view), the network and the store, and this process, which plays kube-scheduler, the relay and
 * HAMi's device plugin. Delaying proxies sit in front of the store and in front of the control planes
 * (`--store-rtt-ms`, `--gateway-rtt-ms`), so a run can cost what AWS would, and observe every call. They run in
 * one process of their own with the store (dynalite) behind them, called in memory (bench/proxyProcess.ts): in
 * this one each store call would wait for the event loop that plays kube-scheduler and the relay, which a
 * network does not.
 *
 *   kube-scheduler  one filter in flight (its scheduling cycle is serial); binds run asynchronously, at most 16
 *                   at once (a bind's slot ends when the relay has reported its outcome, before the device
 *                   plugin's work); a bind that meets the node lock sends the pod back to the queue with
 *                   kube-scheduler's backoff (1 s doubling to 10 s), unless an update of the pod (a nudge)
 *                   brings it back earlier; the pod is then filtered again.
 *   relay           applies the Effects (the node lock's annotation on the Node, guarded clears, nudges), forwards
 *                   each pod and Node update with the relay's own ClusterEventForwarder (lib/relay/forwarder.ts, at
 *                   its defaults: a batch at 100 events or 200 ms, up to 500 when more wait, one in flight; an event
 *                   that may end a lock goes at once), passes the journal entry its last batch produced to /filter
 *                   (`X-Hami-Min-View-Seq`), and holds binds per node until it sees the lock free (the relay's own
 *                   NodeBindQueue, lib/relay/bindQueue.ts; docs/relay.md, "Bind hand-over").
 *   device plugin   `--plugin-delay-ms` after a bind, reports the allocation (bind-phase success) and deletes the
 *                   node lock's annotation, as HAMi's device plugin does.
 *
 * Before the run the cluster is taken over as the relay's first list does: every node, then
 * `--running-per-card` running pods per card (sorted by node, as the relay replays them); the rate is reported.
 * In the same run the engine alone decides the same pods on the same cluster (what an in-process scheduler
 * like HAMi pays). `firstFilterMs` is the slowest first filter of a filter control plane, which loads the whole
 * view (journal head, node directory, every node): what the first filter of a new Lambda environment pays.
 * `cpuMsPerPod` splits the run's CPU time between the filter's control plane, the other one, the store with the
 * proxies (`storeAndProxies`, one process) and this harness: here they share the machine's cores, on AWS each Lambda
 * environment has its own. `cpuBusy` says how busy those cores were while the pods were placed
 * (bench/cpu.ts): `bench`, the share the bench's processes used; `machine`, the share anything used.
 * `filterStoreCallsMs` shows what the bench itself adds to the filter control plane's store calls, as the proxy sees
 * them: `service`, how long the store took to answer (dynalite's work and its queue, which on AWS is inside DynamoDB's
 * own latency), and `delayOverRtt`, how much longer the proxy's waits took than `--store-rtt-ms` (timers firing late
 * on a busy machine). `filterGatewayCallsMs` (null without `--gateway-rtt-ms`) does the same for the filters on their
 * way through the gateway's proxy: `controlPlane`, how long the filter's control plane took to answer from the proxy's
 * side (its work, its store calls, and the socket between the two processes), and `delayOverRtt`.
 * `filterMeanMs` is what pods per second follow (one filter at a time); `filterTail` says where the slower filters
 * lose their time (bench/proxy.ts, `filterTail`): for the fastest half, the 50th to 90th percentile and the slowest
 * tenth of filters (each control plane's first left out), the mean filter, its booking's turnaround at the store's
 * proxy, the store service of its own calls, and that of the other callers' calls overlapping it (dynalite serves
 * them all on one thread, where DynamoDB serves them side by side).
 * Last line: one JSON object; `{"error": …}` when the run failed (exit code 1, the stack on stderr).
 *
 * `--burst` (docs/locks.md): every pod arrives at once, binpack, and the run is made twice: `lockAware` (our
 * defaults: lock-aware placement, the relay's bind hand-over, nudges) and `hamiExact` (HAMi's behaviour: its exact
 * choice, binds that fail at once on the lock, no hand-over, no nudges); the last line holds both, and a line per
 * mode before it the burst's figures: pods per second, time to all bound, refused binds (kube-scheduler saw an
 * `Error`), over-allocated cards, and the hand-over (a device plugin's report to the next lock on its node) p50/p99.
 *
 * Flags: --nodes 100 --pods 1000 --policy binpack|spread --store-rtt-ms 0 --gateway-rtt-ms 0
 *        --running-per-card 1 --plugin-delay-ms 20 --schedulers 1 --percentage-of-nodes-to-score 100 --node-names short
 *        --burst --filters-only --decide-ahead on|off|both --arrival burst|stream|both --stream-per-second 200
 *        --relay-replicas 1
 *
 * Without `--burst`, kube-scheduler's stand-in filters through the relay's own code (bench/ahead.ts), with
 * decide-ahead off and on, for pods created at once and as a steady stream (docs/performance.md, "Deciding ahead");
 * the last line holds every run and the ratios of pods/s, ahead over live.
 *
 * `--filters-only`: kube-scheduler's stand-in only filters, and no pod is bound: the other control plane, the relay and the
 * device plugin stand-ins stay idle after the take-over, and the store serves the filters' calls alone. Not how a cluster
 * runs (bookings stay reservations, `placed` counts pods booked): it shows what the filter's own path costs on this
 * machine, apart from the work that shares its cores.
 *
 * `--node-names aws` names the nodes as EKS does (`ip-10-0-187-33.eu-west-1.compute.internal`) instead of `node-00042`:
 * long names cost every request and the decision records that name them, where short ones compress to nothing.
 *
 * `--percentage-of-nodes-to-score` is kube-scheduler's setting of that name: it sends the extender only the first
 * feasible nodes it finds, from where its last search stopped (bench/workload.ts). 100, the default here, sends
 * every node; 0 is kube-scheduler's own default (at 1,000 nodes it sends 420 names, at 5,000 nodes 500).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { resolve } from 'node:path';
import { decide } from '../lib/engine/decide';
import { parseNodeRegistration } from '../lib/engine/registration';
import { type DeviceUsage, type NodeState } from '../lib/engine/types';
import { defaultEngineConfig } from '../lib/config';
import { MIN_VIEW_SEQ_HEADER } from '../lib/wire/headers';
import { REQUEUE_ANNOTATION } from '../lib/control/effects';
import { NODE_LOCK_ANNOTATION } from '../lib/control/ledger';
import { NodeBindQueue, type BindTry } from '../lib/relay/bindQueue';
import { ClusterEventForwarder, type ClusterWatchEvent } from '../lib/relay/forwarder';
import type { ControlPlaneClient } from '../lib/relay/controlPlane';
import type { AppLogger } from '../lib/powertools';
import { DEFAULT_BATCH_BACKLOG_EVENTS, DEFAULT_BATCH_MAX_BYTES, DEFAULT_BATCH_MAX_DELAY_MS, DEFAULT_BATCH_MAX_EVENTS } from '../lib/relay/config';
import { realDelay } from '../lib/relay/delay';
import { clockMs, filterTail, isRead, serialRoundTrips, type ObservedCall, type TailGroup } from './proxy';
import { PROXY_ROLE, ROLE_ENV, serveProxies, startProxyProcess, type ProxyTarget, type RemoteProxy } from './proxyProcess';
import { CARD_MEM, CARDS, candidateRotation, cardId, nodeNames, nodeObject, runningPod, workloadPod, type BenchPod, type NodeNameStyle } from './workload';
import { errorMessage } from '../lib/errors';
import { cpuBusy, readCpu, type CpuBusy } from './cpu';
import { RelayUnderTest } from './ahead';

interface Options {
  nodes: number;
  pods: number;
  policy: 'binpack' | 'spread';
  storeRttMs: number;
  gatewayRttMs: number;
  runningPerCard: number;
  pluginDelayMs: number;
  schedulers: number;
  /** kube-scheduler's percentageOfNodesToScore: 100 sends every node; 0 is its adaptive default. */
  percentageOfNodesToScore: number;
  /** `short` (`node-00042`) or `aws` (EC2's private DNS names, as EKS nodes are named: bench/workload.ts). */
  nodeNames: NodeNameStyle;
  burst: boolean;
  /** kube-scheduler's stand-in only filters: no binds, so nothing else runs beside the filters (see the header). */
  filtersOnly: boolean;
  /** Runs of the relay's own filter path with decide-ahead on, off, or both in turn (bench/ahead.ts). */
  decideAhead: 'on' | 'off' | 'both';
  /** How the pods arrive: all at once, a steady stream of `streamPerSecond`, or both in turn. */
  arrival: 'burst' | 'stream' | 'both';
  streamPerSecond: number;
  /** Relay replicas on the relay's filter path: kube-scheduler's filters go to them in turn. */
  relayReplicas: number;
}

/** One run of the relay's filter path: decide-ahead on or off, pods in a burst or a stream. */
interface AheadRun {
  readonly ahead: boolean;
  readonly arrival: 'burst' | 'stream';
}

type Mode = 'default' | 'lockAware' | 'hamiExact';

const FLAGS: Record<string, keyof Options> = {
  '--nodes': 'nodes',
  '--pods': 'pods',
  '--policy': 'policy',
  '--store-rtt-ms': 'storeRttMs',
  '--gateway-rtt-ms': 'gatewayRttMs',
  '--running-per-card': 'runningPerCard',
  '--plugin-delay-ms': 'pluginDelayMs',
  '--schedulers': 'schedulers',
  '--percentage-of-nodes-to-score': 'percentageOfNodesToScore',
  '--node-names': 'nodeNames',
  '--burst': 'burst',
  '--filters-only': 'filtersOnly',
  '--decide-ahead': 'decideAhead',
  '--arrival': 'arrival',
  '--stream-per-second': 'streamPerSecond',
  '--relay-replicas': 'relayReplicas',
};

function parseArgs(argv: readonly string[]): Options {
  const options: Options = { nodes: 100, pods: 1000, policy: 'binpack', storeRttMs: 0, gatewayRttMs: 0, runningPerCard: 1, pluginDelayMs: 20, schedulers: 1, percentageOfNodesToScore: 100, nodeNames: 'short', burst: false, filtersOnly: false, decideAhead: 'both', arrival: 'both', streamPerSecond: 200, relayReplicas: 1 };
  for (let i = 0; i < argv.length; i++) {
    const key = FLAGS[argv[i] ?? ''];
    if (!key) throw new Error(`unknown flag ${argv[i]}; use ${Object.keys(FLAGS).join(', ')}`);
    if (key === 'burst' || key === 'filtersOnly') {
      options[key] = true;
      continue;
    }
    const value = argv[++i] ?? '';
    if (key === 'policy') {
      if (value !== 'binpack' && value !== 'spread') throw new Error('--policy must be binpack or spread');
      options.policy = value;
      continue;
    }
    if (key === 'decideAhead') {
      if (value !== 'on' && value !== 'off' && value !== 'both') throw new Error('--decide-ahead must be on, off or both');
      options.decideAhead = value;
      continue;
    }
    if (key === 'arrival') {
      if (value !== 'burst' && value !== 'stream' && value !== 'both') throw new Error('--arrival must be burst, stream or both');
      options.arrival = value;
      continue;
    }
    if (key === 'nodeNames') {
      if (value !== 'short' && value !== 'aws') throw new Error('--node-names must be short or aws');
      options.nodeNames = value;
      continue;
    }
    const n = Number(value);
    const min = key === 'storeRttMs' || key === 'gatewayRttMs' || key === 'runningPerCard' || key === 'pluginDelayMs' || key === 'percentageOfNodesToScore' ? 0 : 1;
    const max = key === 'percentageOfNodesToScore' ? 100 : Number.MAX_SAFE_INTEGER;
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${argv[i - 1]} needs an integer from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ' up'}`);
    options[key] = n as never;
  }
  if (options.burst && options.filtersOnly) throw new Error('--burst measures binds on the node lock; --filters-only makes none: use one of them');
  return options;
}

const MAX_BINDS_IN_FLIGHT = 16;
const BACKOFF_INITIAL_MS = 1000;
const BACKOFF_MAX_MS = 10_000;
const RELIST_BATCH_EVENTS = 500;

// The proxies' process reads the same clock: their calls' times are compared with the filters' windows.
const now = clockMs;
const keepAlive = new Agent({ keepAlive: true, maxSockets: 64 });
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** `node dist/local.js` against the given store: one Lambda function's environment. */
async function startControlPlane(storeUrl: string, env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  // BENCH_CHILD_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the control planes rather than this process.
  const nodeArgs = (process.env.BENCH_CHILD_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const child = spawn(process.execPath, [...nodeArgs, resolve(__dirname, 'local.js')], {
    env: { ...process.env, ...env, DDB_ENDPOINT: storeUrl, PORT: '0', POWERTOOLS_LOG_LEVEL: 'ERROR', POWERTOOLS_METRICS_DISABLED: 'true', AWS_ACCESS_KEY_ID: '', AWS_PROFILE: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolveUrl, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const found = /listening on (http:\/\/[^\s]+)/.exec(text);
      if (found?.[1]) resolveUrl(found[1]);
    });
    child.once('exit', (code) => reject(new Error(`control plane exited with code ${code}`)));
  });
  return { url, child };
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const { text } = await postForText(url, body, headers);
  return JSON.parse(text) as Record<string, unknown>;
}

/** A POST and its answer's status and text. */
function postForText(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  // node:http with keep-alive rather than fetch: the harness shares the machine's cores with what it measures.
  const payload = JSON.stringify(body);
  return new Promise((resolveAnswer, reject) => {
    const req = httpRequest(url, { method: 'POST', agent: keepAlive, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolveAnswer({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0;
}

const round = (v: number, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits;
const spread = (values: readonly number[]) => ({ p50: round(percentile(values, 50)), p99: round(percentile(values, 99)) });
const roundedGroup = (g: TailGroup): TailGroup => ({
  filters: g.filters,
  meanMs: round(g.meanMs),
  bookingMs: round(g.bookingMs),
  ownStoreServiceMs: round(g.ownStoreServiceMs),
  otherStoreServiceMs: round(g.otherStoreServiceMs),
});

type CpuShare = 'filterControlPlane' | 'otherControlPlane' | 'storeAndProxies' | 'harness';
const roundedBusy = (busy: CpuBusy): CpuBusy => ({ cores: busy.cores, bench: round(busy.bench), machine: round(busy.machine) });

interface Effect {
  readonly kind: string;
  readonly name?: string;
  readonly annotations?: Record<string, string | null>;
  readonly ifAnnotations?: Record<string, string>;
}

/** The relay's bind hand-over hold (RELAY_BIND_HANDOVER_MS by default: three fifths of the 25 s deadline). */
const BIND_HANDOVER_MS = 15_000;

/** What the relay logs of its batches (refusals, retries), on the bench's standard error. */
const relayLog: AppLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (message, ...fields) => void process.stderr.write(`relay: ${String(message)} ${JSON.stringify(fields)}\n`),
  error: (message, ...fields) => void process.stderr.write(`relay: ${String(message)} ${JSON.stringify(fields)}\n`),
};

/**
 * The relay and the API server, as far as the control plane can tell: the Effects it applies, the Node and Pod
 * updates its informers see, forwarded by the relay's own ClusterEventForwarder, and the journal position of the
 * last batch.
 */
class Relay {
  private readonly forwarder: ClusterEventForwarder;
  /** Who waits for an event's delivery (`forward`), by the event (an object forwarded twice is waited for twice). */
  private readonly delivery = new Map<unknown, (() => void)[]>();
  /** The journal position the take-over reached, before any batch of the run. */
  private startSeq = 0;
  private readonly nodeAnnotations = new Map<string, Record<string, string>>();
  private readonly nodeVersions = new Map<string, number>();

  constructor(
    url: string,
    private readonly onNudge: (podName: string) => void,
    /** The relay's per-node bind queue (lib/relay/bindQueue.ts); none for HAMi's behaviour. */
    readonly bindQueue?: NodeBindQueue,
  ) {
    const controlPlane: ControlPlaneClient = {
      post: async (path, body) => {
        const { status, text } = await postForText(`${url}${path}`, body);
        // A batch refused for good is not delivered: nobody waits for its events any more.
        if (status !== 200 && status !== 429 && status < 500) for (const event of (body as { events: unknown[] }).events) this.delivered(event);
        return { status, body: JSON.parse(text) as unknown, text };
      },
      get: async () => ({ status: 404, body: undefined, text: '' }),
    };
    this.forwarder = new ClusterEventForwarder({
      controlPlane,
      logger: relayLog,
      maxEvents: DEFAULT_BATCH_MAX_EVENTS,
      backlogEvents: DEFAULT_BATCH_BACKLOG_EVENTS,
      maxBytes: DEFAULT_BATCH_MAX_BYTES,
      maxDelayMs: DEFAULT_BATCH_MAX_DELAY_MS,
      backoff: { initialMs: BACKOFF_INITIAL_MS, maxMs: BACKOFF_MAX_MS },
      requestTimeoutMs: 25_000,
      onEffects: async (effects) => this.apply(effects as readonly Effect[]),
      ...(bindQueue ? { isUrgent: (event: ClusterWatchEvent) => bindQueue.watched(event) } : {}),
      onDelivered: (events) => {
        bindQueue?.delivered(events);
        for (const event of events) this.delivered(event);
      },
    });
  }

  /** Forwards an event; resolves once the control plane has taken its batch. */
  forward(event: unknown): Promise<void> {
    const delivered = new Promise<void>((done) => this.delivery.set(event, [...(this.delivery.get(event) ?? []), done]));
    this.forwarder.enqueue(event as ClusterWatchEvent);
    return delivered;
  }

  /** The journal entry the last delivered batch produced (or the take-over's, before any). */
  get viewSeq(): number {
    return Math.max(this.startSeq, this.forwarder.viewSeq);
  }

  set viewSeq(seq: number) {
    this.startSeq = seq;
  }

  /** The event's batch was taken (or refused for good): whoever waits for it goes on, once. */
  private delivered(event: unknown): void {
    const waiting = this.delivery.get(event);
    if (waiting === undefined) return;
    this.delivery.delete(event);
    // A copy forwarded again after this one waits for its own batch.
    const [first, ...later] = waiting;
    if (later.length > 0) this.delivery.set(event, later);
    first?.();
  }

  /** Applies Effects as the relay does: Node patches become Node updates its informer forwards; nudges re-queue pods. */
  apply(effects: readonly Effect[]): void {
    for (const effect of effects) {
      if (effect.kind === 'PatchNodeAnnotations' && effect.name) {
        // A guarded patch (the lock's mirror) applies only while the Node still holds those values.
        const current = this.nodeAnnotations.get(effect.name) ?? {};
        if (Object.entries(effect.ifAnnotations ?? {}).some(([key, value]) => current[key] !== value)) continue;
        this.patchNode(effect.name, effect.annotations ?? {});
      }
      else if (effect.kind === 'PatchPodAnnotations' && effect.name && effect.annotations?.[REQUEUE_ANNOTATION]) this.onNudge(effect.name);
    }
  }

  patchNode(name: string, patch: Record<string, string | null>): void {
    const annotations = { ...(this.nodeAnnotations.get(name) ?? {}) };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete annotations[key];
      else annotations[key] = value;
    }
    this.nodeAnnotations.set(name, annotations);
    const rv = (this.nodeVersions.get(name) ?? 1) + 1;
    this.nodeVersions.set(name, rv);
    const node = nodeObject(name, rv);
    void this.forward({ type: 'MODIFIED', object: { ...node, metadata: { ...node.metadata, annotations: { ...node.metadata.annotations, ...annotations } } } });
  }

  nodeAnnotation(name: string, key: string): string | undefined {
    return this.nodeAnnotations.get(name)?.[key];
  }

  /** Waits until everything forwarded was delivered and its Effects applied, then stops the forwarder. */
  async close(): Promise<void> {
    await this.forwarder.idle();
    this.forwarder.close();
  }
}

interface SchedulerResult {
  readonly filterMs: number[];
  readonly filterWindows: [number, number][];
  readonly bindMs: number[];
  /**
   * Per lock taken after a device plugin's report on its node while another pod waited for that node (a bind queued
   * at the relay, or refused there since its last lock): the time from that report to the lock.
   */
  readonly handOverMs: number[];
  placed: number;
  unplaced: number;
  lockRetries: number;
  gaveUp: number;
  lastPlacedAt: number;
}

interface QueuedPod {
  readonly pod: BenchPod;
  attempt: number;
  notBefore: number;
}

/** One kube-scheduler: a serial scheduling cycle, asynchronous binds, the backoff queue. */
async function runScheduler(queue: QueuedPod[], nodeNames: readonly string[], filterUrl: string, otherUrl: string, relay: Relay, options: Options, through?: { relay: RelayUnderTest; scheduler: number }): Promise<SchedulerResult> {
  const via = through?.relay;
  const out: SchedulerResult = { filterMs: [], filterWindows: [], bindMs: [], handOverMs: [], placed: 0, unplaced: 0, lockRetries: 0, gaveUp: 0, lastPlacedAt: 0 };
  const binds = new Set<Promise<void>>();
  const allocations = new Set<Promise<void>>();
  const candidates = candidateRotation(nodeNames, options.percentageOfNodesToScore);
  const requeue = (item: QueuedPod) => {
    if (item.attempt + 1 >= 30) {
      out.gaveUp += 1;
      return;
    }
    item.notBefore = now() + Math.min(BACKOFF_INITIAL_MS * 2 ** item.attempt, BACKOFF_MAX_MS);
    item.attempt += 1;
    queue.push(item);
  };
  /** Per node, when the device plugin last reported an allocation there, while a pod waited, that no lock has followed yet. */
  const reportedAt = new Map<string, number>();
  /** Nodes on which a bind was refused since their last lock (HAMi's behaviour: those pods wait in backoff). */
  const refusedOn = new Set<string>();
  const bind = async (item: QueuedPod, node: string, annotations: Record<string, string>) => {
    const p = item.pod;
    const args = { PodName: p.metadata.name, PodNamespace: p.metadata.namespace, PodUID: p.metadata.uid, Node: node };
    const started = now();
    // What the relay does with one bind: send it (as a hand-over when it queues binds), apply the Effects, report the outcome.
    const attempt = async (handOver: boolean): Promise<BindTry<string>> => {
      const answer = await post(`${otherUrl}/bind`, handOver ? { ...args, HandOver: true } : args);
      if (handOver && typeof answer.LockHeld === 'string') return { outcome: 'held' };
      const effects = (answer.Effects as Effect[] | undefined) ?? [];
      relay.apply(effects);
      if (typeof answer.Error === 'string' && answer.Error !== '') return { outcome: 'done', value: answer.Error };
      const locked = effects.some((e) => e.kind === 'PatchNodeAnnotations' && typeof e.annotations?.[NODE_LOCK_ANNOTATION] === 'string');
      const reported = reportedAt.get(node);
      if (locked) {
        if (reported !== undefined) out.handOverMs.push(now() - reported);
        reportedAt.delete(node);
        refusedOn.delete(node);
      }
      // The relay applied the Effects (the Node's lock annotation, bind-phase allocating, the Binding) and reports the outcome.
      relay.apply(((await post(`${otherUrl}/bind/outcome`, { ...args, Error: '' })).Effects as Effect[] | undefined) ?? []);
      return { outcome: locked ? 'locked' : 'done', value: '' };
    };
    const error = relay.bindQueue
      ? await relay.bindQueue.bind(node, `${p.metadata.namespace}/${p.metadata.name}`, attempt)
      : await attempt(false).then((tried) => (tried.outcome === 'held' ? 'held' : tried.value));
    out.bindMs.push(now() - started);
    if (error !== '') {
      refusedOn.add(node);
      out.lockRetries += 1;
      requeue(item);
      return;
    }
    void relay.forward(podUpdate(p, annotations, node, 'allocating', '3'));
    out.placed += 1;
    out.lastPlacedAt = now();
    via?.bound(p, node);
    // The binding cycle ends here; the device plugin's work is the kubelet's, outside kube-scheduler's slots.
    const allocation: Promise<void> = allocate(p, node, annotations).finally(() => allocations.delete(allocation));
    allocations.add(allocation);
  };
  /** The device plugin allocates a little later, reports success, and releases the Node's lock annotation if it names the pod. */
  const allocate = async (p: BenchPod, node: string, annotations: Record<string, string>) => {
    await sleep(options.pluginDelayMs);
    if ((relay.bindQueue?.waiting(node) ?? 0) > 0 || refusedOn.has(node)) reportedAt.set(node, now());
    if (relay.nodeAnnotation(node, NODE_LOCK_ANNOTATION)?.endsWith(`,${p.metadata.namespace},${p.metadata.name}`)) relay.patchNode(node, { [NODE_LOCK_ANNOTATION]: null });
    await relay.forward(podUpdate(p, annotations, node, 'success', '4'));
  };
  for (;;) {
    const t = now();
    const index = queue.findIndex((q) => q.notBefore <= t);
    if (index < 0) {
      if (queue.length === 0 && binds.size === 0 && allocations.size === 0) break;
      await Promise.race([sleep(5), ...binds, ...allocations]);
      continue;
    }
    while (binds.size >= MAX_BINDS_IN_FLIGHT) await Promise.race(binds);
    const [item] = queue.splice(index, 1);
    if (!item) continue;
    const started = now();
    // Through the relay's own code when it is under test (it applies the Effects itself), else straight to the control plane.
    const answer = through
      ? await through.relay.filter(item.pod, candidates(), through.scheduler)
      : await post(`${filterUrl}/filter`, { Pod: item.pod, Nodes: null, NodeNames: candidates() }, relay.viewSeq > 0 ? { [MIN_VIEW_SEQ_HEADER]: String(relay.viewSeq) } : {});
    const ended = now();
    out.filterMs.push(ended - started);
    out.filterWindows.push([started, ended]);
    const node = (answer.NodeNames as string[] | null)?.[0];
    if (!node) {
      if (typeof answer.Error === 'string' && answer.Error !== '') requeue(item);
      else out.unplaced += 1;
      continue;
    }
    if (options.filtersOnly) {
      out.placed += 1;
      out.lastPlacedAt = now();
      continue;
    }
    let patch: Record<string, string>;
    if (via) patch = via.annotations(item.pod);
    else {
      patch = (answer.Effects as { kind: string; annotations?: Record<string, string> }[]).find((e) => e.kind === 'PatchPodAnnotations')?.annotations ?? {};
      void relay.forward(podUpdate(item.pod, patch, undefined, undefined, '2'));
    }
    const task: Promise<void> = bind(item, node, patch).finally(() => binds.delete(task));
    binds.add(task);
  }
  return out;
}

/** The pod as the relay forwards it after a change. */
function podUpdate(pod: BenchPod, annotations: Record<string, string>, node: string | undefined, bindPhase: string | undefined, rv: string) {
  return {
    type: 'MODIFIED',
    object: {
      kind: 'Pod',
      apiVersion: 'v1',
      ...pod,
      metadata: { ...pod.metadata, resourceVersion: rv, annotations: { ...annotations, ...(bindPhase ? { 'hami.io/bind-phase': bindPhase } : {}) } },
      spec: { ...pod.spec, ...(node ? { nodeName: node } : {}) },
      status: { phase: bindPhase === 'success' ? 'Running' : 'Pending' },
    },
  };
}

/** The engine alone on the same cluster: the median time to decide the workload's pods, in this process. */
function timeEngine(names: readonly string[], options: Options, pods: readonly BenchPod[]): number {
  const config = { ...defaultEngineConfig, nodeSchedulerPolicy: options.policy };
  const nodes = new Map<string, NodeState>();
  for (const name of names) {
    const registration = parseNodeRegistration(nodeObject(name, 1), config);
    const usage: Record<string, DeviceUsage> = {};
    for (let card = 0; card < CARDS; card++) {
      for (let k = 0; k < options.runningPerCard; k++) {
        const u = (usage[cardId(name, card)] ??= { used: 0, usedmem: 0, usedcores: 0 });
        u.used += 1;
        u.usedmem += 8000;
        u.usedcores += 10;
      }
    }
    nodes.set(name, { name, registration, usage });
  }
  // The same node names the filters get, as kube-scheduler would send them to an in-process extender.
  const candidates = candidateRotation(names, options.percentageOfNodesToScore);
  const sample = pods.slice(0, Math.min(pods.length, 300));
  for (const pod of sample.slice(0, 30)) decide({ pod, candidates: candidates(), nodes, config, nowMs: Date.now() });
  const times = sample.map((pod) => {
    const given = candidates();
    const started = now();
    decide({ pod, candidates: given, nodes, config, nowMs: Date.now() });
    return now() - started;
  });
  return percentile(times, 50);
}

const MODE_ENV: Record<Mode, Record<string, string>> = {
  default: {},
  lockAware: { HAMI_LOCK_AWARE: 'true' },
  hamiExact: { HAMI_LOCK_AWARE: 'false', HAMI_BIND_LOCK_WAIT_SECONDS: '0' },
};

async function runOnce(options: Options, mode: Mode, run?: AheadRun): Promise<Record<string, unknown>> {
  const env = { HAMI_NODE_SCHEDULER_POLICY: options.policy, ...MODE_ENV[mode] };
  const proxies = startProxyProcess(__filename);
  const children: ChildProcess[] = [];
  const proxy = (target: ProxyTarget, rtt: number) => proxies.open(target, rtt);
  try {
    // One environment for everything but /filter (bind, outcome, cluster events), one per kube-scheduler for /filter.
    const otherStore = await proxy('store', options.storeRttMs);
    const other = await startControlPlane(otherStore.url, env);
    children.push(other.child);
    // No gateway latency asked: callers reach the control planes directly (a proxy that only relays costs this
    // machine's CPU, which the control planes and the store share). Store calls always pass a proxy: it observes them.
    const gateway = async (url: string): Promise<{ url: string; proxy?: RemoteProxy }> => {
      if (options.gatewayRttMs === 0) return { url };
      const inFront = await proxy({ url }, options.gatewayRttMs);
      return { url: inFront.url, proxy: inFront };
    };
    const otherGateway = await gateway(other.url);
    // Decide-ahead's route is its own function: its own environment, behind the same gateway.
    let aheadUrl: string | undefined;
    if (run?.ahead) {
      const aheadStore = await proxy('store', options.storeRttMs);
      const aheadPlane = await startControlPlane(aheadStore.url, env);
      children.push(aheadPlane.child);
      aheadUrl = (await gateway(aheadPlane.url)).url;
    }
    const filterStores: RemoteProxy[] = [];
    const filterGateways: { url: string; proxy?: RemoteProxy }[] = [];
    for (let s = 0; s < options.schedulers; s++) {
      const filterStore = await proxy('store', options.storeRttMs);
      const filter = await startControlPlane(filterStore.url, env);
      children.push(filter.child);
      filterStores.push(filterStore);
      filterGateways.push(await gateway(filter.url));
    }

    // Whose CPU the run spends (all share this machine's cores; on AWS each Lambda environment has its own).
    const processes: Record<CpuShare, readonly (number | undefined)[]> = {
      filterControlPlane: children.slice(1).map((c) => c.pid),
      otherControlPlane: [other.child.pid],
      storeAndProxies: [proxies.pid],
      harness: [process.pid],
    };

    // Take the cluster over as the relay's first list does: nodes, then running pods sorted by node.
    const names = nodeNames(options.nodes, options.nodeNames);
    const relist: unknown[] = names.map((name) => ({ type: 'ADDED', object: nodeObject(name, 1) }));
    for (const name of names) for (let card = 0; card < CARDS; card++) for (let k = 0; k < options.runningPerCard; k++) relist.push({ type: 'ADDED', object: runningPod(name, card, k) });
    const relistStarted = now();
    let viewSeq = 0;
    for (let i = 0; i < relist.length; i += RELIST_BATCH_EVENTS) {
      const answer = await post(`${otherGateway.url}/cluster/events`, { events: relist.slice(i, i + RELIST_BATCH_EVENTS) });
      if (Array.isArray(answer.rejected) && answer.rejected.length > 0) throw new Error(`relist rejected: ${JSON.stringify(answer.rejected.slice(0, 3))}`);
      if (typeof answer.viewSeq === 'number') viewSeq = answer.viewSeq;
    }
    const relistSeconds = (now() - relistStarted) / 1000;
    process.stdout.write(`bench${mode === 'default' ? '' : ` (${mode})`}: ${options.nodes} nodes x ${CARDS} cards, ${relist.length - options.nodes} running pods taken over in ${round(relistSeconds)} s\n`);

    const workload = Array.from({ length: options.pods }, (_, i) => workloadPod(i));
    const engineP50Ms = timeEngine(names, options, workload);
    const queues = Array.from({ length: options.schedulers }, (): QueuedPod[] => []);
    // A stream: pod i is created (and enters kube-scheduler's queue) i / streamPerSecond seconds after the start.
    const arrivalMs = (i: number) => (run?.arrival === 'stream' ? (i * 1000) / options.streamPerSecond : 0);
    // In creation order (pod i before pod i + 1), whichever kube-scheduler's queue it joins.
    const created = workload.map((pod, i): QueuedPod => ({ pod, attempt: 0, notBefore: arrivalMs(i) }));
    created.forEach((item, i) => queues[i % options.schedulers]!.push(item));
    // A nudge (an update of the pod) brings a pod in backoff back at once; HAMi's stack has none.
    const relay = new Relay(
      otherGateway.url,
      (name) => {
        if (mode === 'hamiExact') return;
        for (const queue of queues) for (const item of queue) if (item.pod.metadata.name === name) item.notBefore = 0;
      },
      // The relay's bind hand-over; HAMi's stack has none.
      mode === 'hamiExact' ? undefined : new NodeBindQueue({ holdMs: BIND_HANDOVER_MS, delay: realDelay }),
    );
    relay.viewSeq = viewSeq;
    const callsBefore = await proxies.counts();
    process.stdout.write(`bench: ${options.pods} pods, policy ${options.policy}, store rtt ${options.storeRttMs} ms, gateway rtt ${options.gatewayRttMs} ms, ${options.schedulers} scheduler(s)\n`);
    // Several kube-schedulers share the relay (its replicas) and decide-ahead's control plane; each keeps its own
    // serial cycle, and its filters reach a filter control plane of their own.
    const underTest =
      run === undefined
        ? undefined
        : new RelayUnderTest(filterGateways.map((g) => g.url), aheadUrl ? { aheadUrl, reservationTtlMs: 600_000 } : undefined, (event) => void relay.forward(event), () => relay.viewSeq, options.relayReplicas);
    const cpuBefore = readCpu(processes, now());
    const started = now();
    const arrivals: NodeJS.Timeout[] = [];
    if (underTest) {
      // Created in order, as a Job's or a Deployment's controller creates them: decide-ahead batches them so.
      for (const q of created) {
        q.notBefore += started;
        const at = q.notBefore - now();
        if (at <= 0) underTest.create(q.pod);
        else arrivals.push(setTimeout(() => underTest.create(q.pod), at));
      }
    }
    const results = await Promise.all(queues.map((queue, s) => runScheduler(queue, names, filterGateways[s]!.url, otherGateway.url, relay, options, underTest && { relay: underTest, scheduler: s })));
    for (const timer of arrivals) clearTimeout(timer);
    underTest?.close();
    const placed = results.reduce((sum, r) => sum + r.placed, 0);
    const elapsedS = (Math.max(...results.map((r) => r.lastPlacedAt)) - started) / 1000;
    await relay.close();
    const cpuAfter = readCpu(processes, now());

    // Every store call of the run, per proxy (fetched once, after the CPU figures), and what the filters' own calls cost.
    const runCalls = await proxies.calls(callsBefore);
    const storeCalls: ObservedCall[] = [otherStore, ...filterStores].flatMap((p) => runCalls[p.index] ?? []);
    const roundTrips = results.flatMap((r, s) => r.filterWindows.map(([from, to]) => serialRoundTrips(runCalls[filterStores[s]?.index ?? -1] ?? [], from, to)));
    const filterStoreCalls = filterStores.flatMap((p) => runCalls[p.index] ?? []);
    const filterGatewayCalls = filterGateways.flatMap((g) => (g.proxy ? (runCalls[g.proxy.index] ?? []) : []));
    const filters = results.reduce((sum, r) => sum + r.filterMs.length, 0);
    const perPod = (v: number) => round(v / Math.max(placed, 1), 1);

    let overAllocations = 0;
    for (const name of names) {
      const res = await fetch(`${other.url}/api/v1/nodes/${name}/devices`);
      const view = (await res.json()) as { devices: { used: number; count: number; usedmem: number; devmem: number; usedcores: number; devcore: number }[] };
      for (const d of view.devices) if (d.usedmem > d.devmem || d.usedcores > d.devcore || d.used > d.count) overAllocations += 1;
    }
    const unplaced = results.reduce((sum, r) => sum + r.unplaced + r.gaveUp, 0);
    const lockRetries = results.reduce((sum, r) => sum + r.lockRetries, 0);
    process.stdout.write(`placed ${placed}, unplaced ${unplaced}, binds that met the lock ${lockRetries}, ${round(elapsedS)} s, ${filters} filters\n`);
    const filterMs = results.flatMap((r) => r.filterMs);
    // Each control plane's first filter loads its view: left out of the tail's account.
    const timedFilters = results.flatMap((r, s) =>
      r.filterMs.slice(1).map((ms, i) => ({ ms, fromMs: r.filterWindows[i + 1]![0], toMs: r.filterWindows[i + 1]![1], controlPlaneCalls: runCalls[filterStores[s]!.index] ?? [] })),
    );
    const tail = filterTail(timedFilters, storeCalls);
    return {
      filterP50Ms: round(percentile(filterMs, 50)),
      filterP99Ms: round(percentile(filterMs, 99)),
      filterMeanMs: round(filterMs.reduce((sum, ms) => sum + ms, 0) / Math.max(filterMs.length, 1)),
      filterTail: { fastestHalf: roundedGroup(tail.fastestHalf), p50To90: roundedGroup(tail.p50To90), slowestTenth: roundedGroup(tail.slowestTenth) },
      // The first filter of each control plane loads its view (what a new Lambda environment's first filter pays).
      firstFilterMs: round(Math.max(...results.map((r) => r.filterMs[0] ?? 0))),
      // No binds (`--filters-only`): null, not a time.
      bindP50Ms: options.filtersOnly ? null : round(percentile(results.flatMap((r) => r.bindMs), 50)),
      // Burst figures (docs/locks.md): until every pod was bound, binds kube-scheduler saw refused, and the time from a
      // device plugin's report to the next lock on its node.
      timeToAllBoundS: round(elapsedS),
      refusedBinds: lockRetries,
      // Null where no pod ever waited for a node's lock (lock-aware placement over many nodes).
      handOvers: results.reduce((sum, r) => sum + r.handOverMs.length, 0),
      handOverMs: results.some((r) => r.handOverMs.length > 0) ? spread(results.flatMap((r) => r.handOverMs)) : null,
      podsPerSecond: round(placed / Math.max(elapsedS, 1e-9), 1),
      engineP50Ms: round(engineP50Ms, 3),
      storeRoundTripsPerFilter: { p50: percentile(roundTrips, 50), p99: percentile(roundTrips, 99) },
      filterStoreCallsMs: {
        service: spread(filterStoreCalls.map((c) => c.serviceMs)),
        delayOverRtt: spread(filterStoreCalls.map((c) => c.delayOverRttMs)),
      },
      filterGatewayCallsMs:
        filterGatewayCalls.length > 0
          ? { controlPlane: spread(filterGatewayCalls.map((c) => c.serviceMs)), delayOverRtt: spread(filterGatewayCalls.map((c) => c.delayOverRttMs)) }
          : null,
      storeReadBytesPerFilter: Math.round(filterStoreCalls.reduce((sum, c) => sum + c.responseBytes, 0) / Math.max(filters, 1)),
      storeWriteBytesPerPod: Math.round(storeCalls.filter((c) => !isRead(c)).reduce((sum, c) => sum + c.requestBytes, 0) / Math.max(placed, 1)),
      capacityUnitsPerPod: { read: perPod(storeCalls.reduce((s, c) => s + c.readUnits, 0)), write: perPod(storeCalls.reduce((s, c) => s + c.writeUnits, 0)) },
      storeCallsPerPod: perPod(storeCalls.length),
      // The same by DynamoDB operation (`UpdateItem`, `Query`, …), to see where a pod's calls go.
      storeCallsPerPodByOperation: callsPerPodByOperation(storeCalls, placed),
      filtersPerPod: round(filters / Math.max(placed, 1), 3),
      lockRetriesPerPod: round(lockRetries / Math.max(placed, 1), 3),
      cpuMsPerPod: cpuAfter && cpuBefore ? Object.fromEntries(Object.entries(cpuAfter.groups).map(([k, ms]) => [k, round((ms - (cpuBefore.groups[k as CpuShare] ?? 0)) / Math.max(placed, 1), 1)])) : null,
      cpuBusy: cpuAfter && cpuBefore ? roundedBusy(cpuBusy(cpuBefore, cpuAfter)) : null,
      overAllocations,
      ingestEventsPerSecond: Math.round(relist.length / relistSeconds),
      nodes: options.nodes,
      pods: options.pods,
      placed,
      unplaced,
      policy: options.policy,
      schedulers: options.schedulers,
      latency: { storeRttMs: options.storeRttMs, gatewayRttMs: options.gatewayRttMs },
      runningPodsPerCard: options.runningPerCard,
      nodeNamesPerFilter: candidateRotation(names, options.percentageOfNodesToScore)().length,
      nodeNameStyle: options.nodeNames,
      filtersOnly: options.filtersOnly,
      cardMemMiB: CARD_MEM,
      ...(run
        ? {
            decideAhead: run.ahead,
            arrival: run.arrival,
            ...(run.arrival === 'stream' ? { streamPerSecond: options.streamPerSecond } : {}),
            // Filters kube-scheduler got answered from a decision made ahead, of all its filters.
            answeredAheadShare: round((underTest?.answeredAhead() ?? 0) / Math.max(filters, 1), 3),
            relayReplicas: options.relayReplicas,
          }
        : {}),
    };
  } finally {
    await Promise.all(children.map((child) => new Promise<void>((done) => (child.exitCode !== null ? done() : (child.once('exit', () => done()), child.kill('SIGTERM'))))));
    await proxies.close();
  }
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  if (!options.burst) {
    // The relay's own filter path, decide-ahead off and on, for each arrival asked (bench/ahead.ts).
    const aheads = options.decideAhead === 'both' ? [false, true] : [options.decideAhead === 'on'];
    const arrivals: AheadRun['arrival'][] = options.arrival === 'both' ? ['burst', 'stream'] : [options.arrival];
    const runs: Record<string, Record<string, unknown>> = {};
    for (const arrival of arrivals) {
      for (const ahead of aheads) {
        const result = await runOnce(options, 'default', { ahead, arrival });
        runs[`${arrival}/${ahead ? 'ahead' : 'live'}`] = result;
        process.stdout.write(
          `${arrival}, decide-ahead ${ahead ? 'on' : 'off'}: ${String(result.podsPerSecond)} pods/s, filter p50 ${String(result.filterP50Ms)} / p99 ${String(result.filterP99Ms)} ms, answered ahead ${String(result.answeredAheadShare)}, over-allocations ${String(result.overAllocations)}, unplaced ${String(result.unplaced)}\n`,
        );
      }
    }
    const ratios = Object.fromEntries(
      arrivals.flatMap((arrival) => {
        const on = runs[`${arrival}/ahead`];
        const off = runs[`${arrival}/live`];
        return on && off ? [[arrival, round((on.podsPerSecond as number) / Math.max(off.podsPerSecond as number, 1e-9), 2)]] : [];
      }),
    );
    process.stdout.write(`${JSON.stringify({ runs, podsPerSecondRatioAheadOverLive: ratios, nodes: options.nodes, pods: options.pods })}\n`);
    return;
  }
  const burst: Options = { ...options, policy: 'binpack' };
  const hamiExact = await runOnce(burst, 'hamiExact');
  const lockAware = await runOnce(burst, 'lockAware');
  const ratio = (lockAware.podsPerSecond as number) / Math.max(hamiExact.podsPerSecond as number, 1e-9);
  // Ratios of one run: the machine's load (shared cores) weighs on both modes alike.
  const handOverP50 = (r: Record<string, unknown>) => (r.handOverMs as { p50: number } | null)?.p50;
  const [exactHandOver, awareHandOver] = [handOverP50(hamiExact), handOverP50(lockAware)];
  const handOverRatio = exactHandOver !== undefined && awareHandOver !== undefined ? round(exactHandOver / Math.max(awareHandOver, 1e-9), 1) : null;
  const summary = (r: Record<string, unknown>) => ({ podsPerSecond: r.podsPerSecond, timeToAllBoundS: r.timeToAllBoundS, refusedBinds: r.refusedBinds, overAllocations: r.overAllocations, handOvers: r.handOvers, handOverMs: r.handOverMs });
  process.stdout.write(`burst hamiExact: ${JSON.stringify(summary(hamiExact))}\nburst lockAware: ${JSON.stringify(summary(lockAware))}\n`);
  process.stdout.write(`${JSON.stringify({ lockAware, hamiExact, podsPerSecondRatio: round(ratio, 1), handOverP50Ratio: handOverRatio, nodes: burst.nodes, pods: burst.pods, pluginDelayMs: burst.pluginDelayMs })}\n`);
}

// The same bundle is the proxies' process (startProxyProcess starts it with this role): no build target of its own.
if (process.env[ROLE_ENV] === PROXY_ROLE) {
  serveProxies();
} else {
  main().catch((err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    // The last line stays JSON, so a script that keeps only it (a matrix of runs) still learns why the run failed.
    process.stdout.write(`${JSON.stringify({ error: errorMessage(err) })}\n`);
    process.exit(1);
  });
}

/** How many calls of each operation a placed pod cost (two decimals), by operation name in order. */
function callsPerPodByOperation(calls: readonly ObservedCall[], placed: number): Record<string, number> {
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.operation, (counts.get(call.operation) ?? 0) + 1);
  return Object.fromEntries([...counts].sort(([a], [b]) => a.localeCompare(b)).map(([operation, count]) => [operation, Math.round((count / Math.max(placed, 1)) * 100) / 100]));
}
