/**
 * `npm run demo`: the seed examples end to end against the local control plane. The demo plays the
 * relay (forwards the cluster, calls /filter, /bind, /bind/outcome) and HAMi's device plugin (every pod it binds is
 * forwarded allocated, so no lock or unconfirmed reservation is left behind), and then shows what a user sees:
 * the pod's events, as `kubectl describe pod` lists them, and `hami-diag pod` (the CLI itself, run
 * against the local server). Scenario 5 runs the relay's own filter path and decide-ahead instead of playing them.
 * Time and ids are fixed, so every run prints the same text.
 */
import type { Runtime } from '../clock';
import { run as runCli, type CliDeps } from '../cli/run';
import type { Effect } from '../control/effects';
import { startLocalServer } from '../local/server';
import type { AppLogger } from '../powertools';
import { AheadDecisions, aheadOptionsFrom } from '../relay/aheadDecisions';
import { inProcessRelayConfig } from '../relay/config';
import { createControlPlaneClient, signerFromConfig } from '../relay/controlPlane';
import { realDelay } from '../relay/delay';
import { relayBind, relayFilter, type ExtenderDeps } from '../relay/extender';
import { InMemoryPods } from '../relay/inMemoryPods';
import { markedDecision } from '../wire/decidedAhead';
import { demoNodes, demoWorkloads, nodeObject, pendingPod, runningWorkload, withAnnotations, type PodObject } from './cluster';

/** Something the demo expected did not happen: the product misbehaves, and the demo says how. */
export class DemoError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DemoError';
  }
}

export interface DemoOptions {
  /** Colour in the CLI's tables (main passes whether stdout is a terminal). */
  readonly colour?: boolean;
  /** Extra control-plane configuration, as environment variables (e.g. HAMI_NODE_SCHEDULER_POLICY). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Play against a control plane that is already running (`npm start`) instead of an in-process one, so the
   * scheduler logs and node views stay there for curl and hami-diag afterwards. Its clock is its own.
   */
  readonly url?: string;
  /** Bearer token for `url` (the server's HAMI_API_TOKEN). */
  readonly token?: string;
}

type Out = (line: string) => void;

/** The demo clock starts here and moves only when the demo says so. */
const START_MS = Date.UTC(2025, 3, 22, 2, 15, 42);

function demoRuntime(): Runtime & { advance(seconds: number): void } {
  let nowMs = START_MS;
  let ids = 0;
  return {
    clock: { now: () => nowMs },
    // Waiting moves the demo clock on (a bind waiting for a lock waits in demo time, not for real).
    sleep: (ms) => {
      nowMs += ms;
      return new Promise((resolve) => setImmediate(resolve));
    },
    random: () => 0.5,
    newId: () => `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`,
    advance: (seconds) => {
      nowMs += seconds * 1000;
    },
  };
}

interface FilterAnswer {
  readonly NodeNames?: string[] | null;
  readonly FailedNodes?: Record<string, string> | null;
  readonly Error?: string;
  readonly Effects: Effect[];
}

interface BindAnswer {
  readonly Error?: string;
  readonly Effects: Effect[];
}

/** The relay's side of the conversation, over HTTP. */
function relay(baseUrl: string, token: string | undefined) {
  const post = async <T>(path: string, body: unknown): Promise<T> => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
    let res: Response;
    try {
      res = await fetch(`${baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    } catch (err) {
      throw new DemoError(`cannot reach the control plane at ${baseUrl}: ${err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err)}`, { cause: err });
    }
    const text = await res.text();
    if (res.status !== 200) throw new DemoError(`POST ${path} answered ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  };
  return {
    forward: async (type: 'ADDED' | 'MODIFIED', objects: readonly unknown[]): Promise<Effect[]> => {
      const answer = await post<{ accepted: number; rejected: unknown[]; Effects?: Effect[] }>('/cluster/events', { events: objects.map((object) => ({ type, object })) });
      if (answer.rejected.length > 0) throw new DemoError(`cluster events rejected: ${JSON.stringify(answer.rejected)}`);
      return answer.Effects ?? [];
    },
    filter: (pod: PodObject, nodes: readonly string[]) => post<FilterAnswer>('/filter', { Pod: pod, Nodes: null, NodeNames: nodes }),
    bind: (pod: PodObject, node: string) => post<BindAnswer>('/bind', { ...podRef(pod), Node: node }),
    outcome: (pod: PodObject, node: string, error = '') => post<BindAnswer>('/bind/outcome', { ...podRef(pod), Node: node, Error: error }),
  };
}

type Relay = ReturnType<typeof relay>;

const allNodes = demoNodes.map((n) => n.name);

export async function runDemo(out: Out, options: DemoOptions = {}): Promise<void> {
  const runtime = demoRuntime();
  const env = { HAMI_LOG_VERBOSITY: process.env.HAMI_LOG_VERBOSITY ?? '0', ...options.env };
  const server = options.url === undefined ? await startLocalServer({ runtime, env }) : { url: options.url.replace(/\/+$/, ''), close: async () => undefined };
  // A running server keeps its own clock: the demo's fixed clock only moves the in-process one.
  const clock = options.url === undefined ? runtime : { ...runtime, clock: { now: () => Date.now() }, advance: () => undefined };
  try {
    const api = relay(server.url, options.token);
    const hamiDiag = cli(server.url, options.token, clock, options.colour === true);
    await api.forward('ADDED', demoNodes.map(nodeObject));
    await api.forward('ADDED', demoWorkloads.map(runningWorkload));
    const where = options.url === undefined ? 'an in-process control plane (embedded store, gone when the demo ends)' : `the control plane at ${server.url}`;
    out(`hami-explain demo: filling ${where} with ${demoNodes.length} GPU nodes and ${demoWorkloads.length} running GPU pods`);

    clock.advance(60);
    await podFitsTwoNodes(api, hamiDiag, out);
    clock.advance(60);
    await podFitsNowhere(api, hamiDiag, out);
    clock.advance(60);
    const first = await secondPodAvoidsAllocatingNode(api, hamiDiag, out);
    clock.advance(2);
    await bindMeetsLockedNode(api, hamiDiag, out, first);
    clock.advance(60);
    const inProcess = inProcessRelay(api, server.url, options.token, clock, options.env ?? {});
    try {
      await jobDecidedAhead(api, inProcess, hamiDiag, out);
    } finally {
      inProcess.close();
    }
    if (options.url !== undefined) {
      out('');
      out(`The records stay on ${server.url}; for example:`);
      out(`  curl -s ${server.url}/api/v1/namespaces/llm/pods/deepseek-5996b8569d-kgwgx/schedulerlog`);
      out(`  npx hami-diag pod deepseek-5996b8569d-kgwgx -n llm --server ${server.url}`);
    }
  } finally {
    await server.close();
  }
}

/** Scenario 1 (seed: "find fit node(node3), 7 nodes not fit, 2 nodes fit(...)"). */
async function podFitsTwoNodes(api: Relay, hamiDiag: HamiDiag, out: Out): Promise<void> {
  const pod = pendingPod('llm', 'deepseek-5996b8569d-kgwgx', [{ name: 'vllm', gpu: 2, mem: 20480, cores: 100 }], {
    'nvidia.com/use-gputype': 'A100',
    'nvidia.com/numa-bind': 'true',
  });
  heading(out, 1, 'two whole A100 cards on one NUMA node, 10 nodes: only node3 and node4 can host it');
  const filter = await api.filter(pod, allNodes);
  expectNodes(filter, ['node3'], 'scenario 1');
  const bind = await api.bind(pod, 'node3');
  if (bind.Error) throw new DemoError(`scenario 1: bind failed: ${bind.Error}`);
  const outcome = await api.outcome(pod, 'node3');
  // The device plugin allocates the cards and marks the pod: the node lock is released.
  await api.forward('MODIFIED', [allocated(pod, 'node3', filter, bind)]);

  printEvents(out, pod, [...filter.Effects, ...bind.Effects, ...outcome.Effects]);
  await hamiDiag(out, ['pod', 'llm/deepseek-5996b8569d-kgwgx']);
}

/** Scenario 2 (seed: a pod asking 5 cards, "no available node, %d nodes do not meet"). */
async function podFitsNowhere(api: Relay, hamiDiag: HamiDiag, out: Out): Promise<void> {
  const pod = pendingPod('default', 'gpu-pod-default', [{ name: 'ubuntu-container', gpu: 5, mem: 3000, cores: 30 }]);
  heading(out, 2, 'a pod asking 5 cards: no node can host it');
  const filter = await api.filter(pod, allNodes);
  expectNodes(filter, [], 'scenario 2');
  printEvents(out, pod, filter.Effects);
  await hamiDiag(out, ['pod', 'default/gpu-pod-default']);
  out('$ hami-diag pod default/gpu-pod-default --json   (excerpt: the proposal\'s fields, first two nodes)');
  const log = JSON.parse(await hamiDiag(undefined, ['pod', 'default/gpu-pod-default', '--json'])) as {
    status: string;
    filter: { status: string; summary: string; nodes: unknown[] };
    bind: unknown;
  };
  const excerpt = { status: log.status, filter: { ...log.filter, nodes: log.filter.nodes.slice(0, 2) }, bind: log.bind };
  for (const line of JSON.stringify(excerpt, null, 2).split('\n')) out(line);
}

interface Allocating {
  readonly pod: PodObject;
  readonly node: string;
  readonly filter: FilterAnswer;
  readonly bind: BindAnswer;
}

/**
 * Scenario 3 (HAMi's users' most reported pain): two notebooks arrive together. HAMi would send both to the same
 * node, and the second would meet the first one's node lock; lock-aware placement sends it where no allocation is
 * under way, and the scheduler log says which node it passed over and why.
 */
async function secondPodAvoidsAllocatingNode(api: Relay, hamiDiag: HamiDiag, out: Out): Promise<Allocating> {
  const ask = [{ name: 'jupyter', gpu: 1, mem: 8192, cores: 30 }];
  const alice = pendingPod('default', 'notebook-alice', ask);
  const bob = pendingPod('default', 'notebook-bob', ask);
  heading(out, 3, 'two notebooks at once: the second goes where no allocation is under way');
  const filterAlice = await api.filter(alice, allNodes);
  const node = filterAlice.NodeNames?.[0];
  if (node === undefined) throw new DemoError(`scenario 3: no node for notebook-alice: ${JSON.stringify(filterAlice.FailedNodes)}`);
  const bindAlice = await api.bind(alice, node);
  if (bindAlice.Error) throw new DemoError(`scenario 3: the first bind failed: ${bindAlice.Error}`);
  await api.outcome(alice, node);
  const filterBob = await api.filter(bob, allNodes);
  const other = filterBob.NodeNames?.[0];
  if (other === undefined || other === node) throw new DemoError(`scenario 3: expected notebook-bob on another node than ${node}, got ${JSON.stringify(filterBob.NodeNames)}`);
  const bindBob = await api.bind(bob, other);
  if (bindBob.Error) throw new DemoError(`scenario 3: the second bind failed: ${bindBob.Error}`);
  printEvents(out, bob, [...filterBob.Effects, ...bindBob.Effects, ...(await api.outcome(bob, other)).Effects]);
  await hamiDiag(out, ['pod', 'default/notebook-bob']);
  // The device plugin allocates notebook-bob's card, as in a real cluster: its node's lock ends, its booking is confirmed.
  await api.forward('MODIFIED', [allocated(bob, other, filterBob, bindBob)]);
  return { pod: alice, node, filter: filterAlice, bind: bindAlice };
}

/**
 * Scenario 4 (seed: "node ... has been locked within 5m0s"): a pod only the allocating node can take. Its bind
 * waits for the lock (HAMI_BIND_LOCK_WAIT_SECONDS), gives up with HAMi's text, and is nudged the moment the device
 * plugin reports the allocation, so kube-scheduler retries it at once.
 */
async function bindMeetsLockedNode(api: Relay, hamiDiag: HamiDiag, out: Out, first: Allocating): Promise<void> {
  const carol = pendingPod('default', 'notebook-carol', [{ name: 'jupyter', gpu: 1, mem: 8192, cores: 30 }]);
  heading(out, 4, `a notebook only ${first.node} may take (node affinity): its bind waits for the node lock, then is nudged`);
  const filterCarol = await api.filter(carol, [first.node]);
  expectNodes(filterCarol, [first.node], 'scenario 4');
  const bindCarol = await api.bind(carol, first.node);
  if (!bindCarol.Error?.endsWith('node lock contention')) throw new DemoError(`scenario 4: expected lock contention, got ${JSON.stringify(bindCarol.Error)}`);

  printEvents(out, carol, [...filterCarol.Effects, ...bindCarol.Effects]);
  await hamiDiag(out, ['pod', 'default/notebook-carol']);
  await hamiDiag(out, ['node', first.node]);

  // The device plugin finishes alice's allocation; the answer to that event nudges carol, whose retried bind now succeeds.
  const effects = await api.forward('MODIFIED', [allocated(first.pod, first.node, first.filter, first.bind)]);
  const nudged = effects.some((e) => e.kind === 'PatchPodAnnotations' && e.name === 'notebook-carol' && e.annotations['hami.io/requeue'] !== undefined);
  if (!nudged) throw new DemoError(`scenario 4: expected a nudge for notebook-carol, got ${JSON.stringify(effects)}`);
  const retry = await api.bind(carol, first.node);
  if (retry.Error) throw new DemoError(`scenario 4: the retried bind failed: ${retry.Error}`);
  // As the relay does once the Binding is created: the scheduler log then says the pod is bound.
  await api.outcome(carol, first.node);
  out(`The device plugin marks notebook-alice allocated (hami.io/bind-phase: success): the lock ends, and the answer nudges notebook-carol (hami.io/requeue), so kube-scheduler retries it at once; its bind to ${first.node} succeeds.`);
  // The device plugin allocates notebook-carol's card in turn: no node is left locked, every bound pod keeps its cards.
  await api.forward('MODIFIED', [allocated(carol, first.node, filterCarol, retry)]);
  out(`The device plugin then allocates notebook-carol (hami.io/bind-phase: success): its lock on ${first.node} ends too.`);
}

/** The pod as kube-scheduler's bind names it (ExtenderBindingArgs). */
function podRef(pod: PodObject): { PodName: string; PodNamespace: string; PodUID: string } {
  return { PodName: pod.metadata.name, PodNamespace: pod.metadata.namespace, PodUID: pod.metadata.uid };
}

/**
 * The relay's own filter path and decide-ahead (lib/relay/extender.ts, lib/relay/aheadDecisions.ts), configured as the
 * relay configures itself, over the demo's pods held in memory as the API server would hold them
 * (lib/relay/inMemoryPods.ts). Annotated pods reach the control plane as the relay's watch forwards them; Events are
 * kept for `kubectl describe pod`; the relay's log messages are kept, not printed.
 */
function inProcessRelay(api: Relay, url: string, token: string | undefined, runtime: Pick<Runtime, 'clock'>, env: Readonly<Record<string, string>>) {
  const config = inProcessRelayConfig(url, token, env);
  const pods = new InMemoryPods<PodObject>(async (pod) => {
    await api.forward('MODIFIED', [pod]);
  });
  const events: Effect[] = [];
  const writer = pods.writer(async (event) => {
    events.push(event);
  });
  const logged: string[] = [];
  const keep = (message: unknown, ...fields: unknown[]): void => {
    logged.push(`${String(message)} ${JSON.stringify(fields)}`);
  };
  const logger: AppLogger = { debug: keep, info: keep, warn: keep, error: keep };
  const controlPlane = createControlPlaneClient(config.controlPlane.url, signerFromConfig(config.controlPlane));
  // Real delays for the batch's window and a filter's wait for its batch: the demo's clock only dates the decisions.
  const ahead = new AheadDecisions(
    aheadOptionsFrom(config, { controlPlane, writer, claim: (target, annotations) => pods.claim(target, annotations), logger, now: () => runtime.clock.now(), delay: realDelay, viewSeq: () => 0 }),
  );
  pods.informers.push(ahead);
  // The relay's timers do not keep a process alive (a relay's servers do). Played against a running server, the demo
  // has nothing else that would while a batch's window passes, and would end there: it holds the process until closed.
  const hold = setInterval(() => undefined, 60_000);
  const deps: ExtenderDeps = { controlPlane, writer, logger, deadlineMs: config.extenderDeadlineMs, pods: pods.source(config.admission.schedulerName), ahead };
  return {
    pods,
    events,
    logged,
    /** kube-scheduler's filter for the pod, with the nodes its own plugins left, answered by the relay's code. */
    filter: async (pod: PodObject, nodeNames: readonly string[]): Promise<FilterAnswer> => {
      const answer = await relayFilter(JSON.stringify({ Pod: pod, Nodes: null, NodeNames: nodeNames }), deps);
      return { ...(answer as Omit<FilterAnswer, 'Effects'>), Effects: [] };
    },
    /** kube-scheduler's bind, by the relay's code: the control plane's Effects applied here, the outcome reported. */
    bind: (pod: PodObject, node: string) => relayBind(JSON.stringify({ ...podRef(pod), Node: node }), deps),
    close: () => {
      ahead.close();
      clearInterval(hold);
    },
  };
}

type InProcessRelay = ReturnType<typeof inProcessRelay>;

/**
 * Scenario 5 (decide-ahead, docs/relay.md "Deciding ahead"): a Job's pods are created at once. The relay decides them
 * ahead, in one call, before kube-scheduler's queue pops them, and kube-scheduler's filter for the first is answered
 * from its decision with no call to the control plane on its serial path. The second's decided node is tainted before
 * its filter comes: kube-scheduler leaves that node out, the relay decides the pod live, and its scheduler log says why.
 */
async function jobDecidedAhead(api: Relay, relayIn: InProcessRelay, hamiDiag: HamiDiag, out: Out): Promise<void> {
  const ask = [{ name: 'worker', gpu: 1, mem: 16384, cores: 25 }];
  const first = pendingPod('batch', 'summarize-0', ask);
  const second = pendingPod('batch', 'summarize-1', ask);
  heading(out, 5, "a Job's two pods at once: decided ahead, before kube-scheduler asks; one decided node is tainted meanwhile");
  relayIn.pods.create(first);
  relayIn.pods.create(second);
  // kube-scheduler's filter for the first pod waits (bounded) for the batch deciding it, as a filter that comes early does.
  const firstAnswer = await relayIn.filter(held(relayIn, first), allNodes);
  const decided = [first, second].map((pod) => ({ pod, mark: markedDecision(held(relayIn, pod).metadata.annotations) }));
  const missing = decided.find((d) => d.mark === undefined);
  if (missing) throw new DemoError(`scenario 5: ${missing.pod.metadata.name} was not decided ahead: ${relayIn.logged.join('; ')}`);
  const [firstNode, secondNode] = decided.map((d) => d.mark!.node);
  out(`The relay saw both pods created and decided them in one call to the control plane (POST /filter/ahead): summarize-0 on ${firstNode}, summarize-1 on ${secondNode}, booked and annotated (hami.io/decided-ahead) before kube-scheduler asked.`);
  expectNodes(firstAnswer, [firstNode!], 'scenario 5');
  out(`kube-scheduler's filter for summarize-0 (${allNodes.length} nodes): the relay answers [${firstNode}] from the decision at once, with no call to the control plane.`);
  await bindAllocated(api, relayIn, first, firstNode!);
  printEvents(out, first, eventsOf(relayIn, first));
  await hamiDiag(out, ['pod', 'batch/summarize-0']);

  // A taint on the second pod's node: kube-scheduler's TaintToleration plugin leaves it out of the nodes it sends.
  const untainted = allNodes.filter((node) => node !== secondNode);
  const secondAnswer = await relayIn.filter(held(relayIn, second), untainted);
  const liveNode = secondAnswer.NodeNames?.[0];
  if (liveNode === undefined || liveNode === secondNode) throw new DemoError(`scenario 5: expected summarize-1 on another node than ${secondNode}, got ${JSON.stringify(secondAnswer)}`);
  out(`${secondNode} is tainted before kube-scheduler's filter for summarize-1 comes, so kube-scheduler sends the ${untainted.length} other nodes: the relay cannot use the decision, asks the control plane live (which gives the earlier booking back first), and says why; the pod goes to ${liveNode}.`);
  await bindAllocated(api, relayIn, second, liveNode);
  printEvents(out, second, eventsOf(relayIn, second));
  await hamiDiag(out, ['pod', 'batch/summarize-1']);
}

/** The pod as the in-memory API server holds it now (annotations patched by the relay). */
function held(relayIn: InProcessRelay, pod: PodObject): PodObject {
  const now = relayIn.pods.get(pod.metadata.namespace, pod.metadata.name);
  if (now === undefined) throw new DemoError(`scenario 5: ${pod.metadata.name} is not held`);
  return now;
}

/** Binds the pod, reports the Binding made, and has the device plugin allocate it, as the relay forwards that. */
async function bindAllocated(api: Relay, relayIn: InProcessRelay, pod: PodObject, node: string): Promise<void> {
  const bind = await relayIn.bind(pod, node);
  if (bind.Error) throw new DemoError(`scenario 5: the bind of ${pod.metadata.name} to ${node} failed: ${bind.Error}`);
  relayIn.pods.bound(pod.metadata.namespace, pod.metadata.name, node);
  const running = withAnnotations(held(relayIn, pod), { 'hami.io/bind-phase': 'success' }, 'Running', '9');
  await api.forward('MODIFIED', [{ ...running, spec: { ...running.spec, nodeName: node } }]);
}

/** The pod's Events as the relay recorded them, in order. */
function eventsOf(relayIn: InProcessRelay, pod: PodObject): Effect[] {
  return relayIn.events.filter((e) => e.kind === 'RecordEvent' && e.namespace === pod.metadata.namespace && e.name === pod.metadata.name);
}

type HamiDiag = (out: Out | undefined, args: readonly string[]) => Promise<string>;

/** Runs the real hami-diag against the local server; prints its output (with the command) when `out` is given. */
function cli(server: string, token: string | undefined, runtime: Pick<Runtime, 'clock'>, colour: boolean): HamiDiag {
  return async (out, args) => {
    let stdout = '';
    let stderr = '';
    const deps: CliDeps = {
      env: { HAMI_API_URL: server, ...(token ? { HAMI_API_TOKEN: token } : {}) },
      stdout: { write: (text: string) => (stdout += text), isTTY: colour },
      stderr: { write: (text: string) => (stderr += text) },
      cluster: () => ({ kind: 'unavailable', reason: 'the demo has no Kubernetes cluster' }),
      now: () => runtime.clock.now(),
    };
    const code = await runCli(args, deps);
    if (code !== 0) throw new DemoError(`hami-diag ${args.join(' ')} exited ${code}: ${stderr.trim() || stdout.trim()}`);
    if (out) {
      out(`$ hami-diag ${args.join(' ')}`);
      for (const line of stdout.trimEnd().split('\n')) out(line);
      out('');
    }
    return stdout;
  };
}

function heading(out: Out, n: number, title: string): void {
  out('');
  out(`=== Scenario ${n}: ${title} ===`);
  out('');
}

function expectNodes(answer: FilterAnswer, expected: readonly string[], what: string): void {
  const got = answer.NodeNames ?? [];
  if (answer.Error || got.join(',') !== expected.join(',')) {
    throw new DemoError(
      `${what}: expected the filter to choose [${expected.join(', ')}], got [${got.join(', ')}]` +
        `${answer.Error ? `, error "${answer.Error}"` : ''}, failed nodes ${JSON.stringify(answer.FailedNodes ?? {})}`,
    );
  }
}

/**
 * A bound pod as the relay forwards it once HAMi's device plugin allocated its cards: the filter's and the bind's
 * annotations, `hami.io/bind-phase: success`, Running on its node. Seen so, its booking is confirmed (it no longer
 * expires with the reservation TTL) and its node lock ends (docs/api.md §2, "Bind").
 */
function allocated(pod: PodObject, node: string, filter: FilterAnswer, bind: BindAnswer) {
  const bindPatch = bind.Effects.find((e) => e.kind === 'PatchPodAnnotations');
  const annotated = withAnnotations(withAnnotations(pod, patchOf(filter)), bindPatch?.kind === 'PatchPodAnnotations' ? bindPatch.annotations : {});
  const running = withAnnotations(annotated, { 'hami.io/bind-phase': 'success' }, 'Running', '3');
  return { ...running, spec: { ...running.spec, nodeName: node } };
}

function patchOf(answer: FilterAnswer): Readonly<Record<string, string | null>> {
  const patch = answer.Effects.find((e) => e.kind === 'PatchPodAnnotations');
  if (patch?.kind !== 'PatchPodAnnotations') throw new DemoError('the filter answer has no pod annotation patch');
  return patch.annotations;
}

/** The pod's events as `kubectl describe pod` shows them (the Age column left out: the demo's clock is its own). */
function printEvents(out: Out, pod: PodObject, effects: readonly Effect[]): void {
  const events = effects.flatMap((e) => (e.kind === 'RecordEvent' ? [e] : []));
  const rows = [['Type', 'Reason', 'From', 'Message'], ['----', '------', '----', '-------'], ...events.map((e) => [e.type, e.reason, 'hami-scheduler', e.message])];
  const widths = [0, 1, 2].map((c) => Math.max(...rows.map((row) => row[c]?.length ?? 0)));
  out(`$ kubectl describe pod -n ${pod.metadata.namespace} ${pod.metadata.name}`);
  out('...');
  out('Events:');
  for (const row of rows) out(`  ${row.map((cell, c) => (c < 3 ? cell.padEnd((widths[c] ?? 0) + 2) : cell)).join('')}`);
  out('');
}
