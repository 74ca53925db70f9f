/**
 * `npm run bench`: the control plane end to end over HTTP (local server, embedded dynalite).
 * N nodes x 8 cards are registered through /cluster/events; C clients then schedule P pods as kube-scheduler
 * and the relay would: /filter with every node name, /bind, /bind/outcome. The device plugin's end of the
 * allocation (bind-phase success) is forwarded in batches as the relay would, which frees the node lock.
 * A bind that meets the lock is retried after a re-filter, as kube-scheduler retries.
 *
 * Flags: --nodes 100 --pods 1000 --concurrency 8. Prints progress lines, then, as the last line, one JSON object:
 * {"filterP50Ms","filterP99Ms","bindP50Ms","bindP99Ms","podsPerSecond","storeCallsPerPod","overAllocations", …}
 */
import { performance } from 'node:perf_hooks';

interface Options {
  readonly nodes: number;
  readonly pods: number;
  readonly concurrency: number;
}

function parseArgs(argv: readonly string[]): Options {
  const options = { nodes: 100, pods: 1000, concurrency: 8 };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i];
    const value = Number(argv[i + 1]);
    const key = flag?.replace(/^--/, '');
    if (key !== 'nodes' && key !== 'pods' && key !== 'concurrency') throw new Error(`unknown flag ${flag}; use --nodes, --pods, --concurrency`);
    if (!Number.isInteger(value) || value <= 0) throw new Error(`${flag} needs a positive integer`);
    options[key] = value;
  }
  return options;
}

const CARDS = 8;
const CARD_MEM = 81920;

function node(name: string, rv: number) {
  const register = Array.from({ length: CARDS }, (_, i) => ({
    id: `GPU-${name}-${i}`,
    index: i,
    count: 10,
    devmem: CARD_MEM,
    devcore: 100,
    type: 'NVIDIA-A100-SXM4-80GB',
    numa: i < 4 ? 0 : 1,
    mode: 'hami-core',
    health: true,
  }));
  return {
    kind: 'Node',
    apiVersion: 'v1',
    metadata: { name, resourceVersion: String(rv), annotations: { 'hami.io/node-nvidia-register': JSON.stringify(register) } },
    status: { allocatable: { 'nvidia.com/gpu': String(CARDS * 10) } },
  };
}

/** Mostly one-container pods, every fifth a two-container pod; a few whole-card-core requests. */
function pod(i: number) {
  const container = (name: string, mem: number, cores: number) => ({
    name,
    resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': String(mem), 'nvidia.com/gpucores': String(cores) } },
  });
  const containers = i % 5 === 0 ? [container('a', 4000, 10), container('b', 2000, 10)] : [container('main', 6000 + (i % 4) * 1000, 15)];
  return {
    metadata: { name: `bench-${i}`, namespace: 'bench', uid: `uid-bench-${i}`, resourceVersion: '1', annotations: {} },
    spec: { containers },
    status: { phase: 'Pending' },
  };
}

/** The pod as the relay forwards it once the device plugin has allocated its cards. */
function podEvent(p: ReturnType<typeof pod>, filterAnswer: Record<string, unknown>, node: string) {
  const patch = (filterAnswer.Effects as { kind: string; annotations?: Record<string, string> }[])[0]?.annotations ?? {};
  return {
    type: 'MODIFIED',
    object: {
      kind: 'Pod',
      apiVersion: 'v1',
      ...p,
      metadata: { ...p.metadata, resourceVersion: '3', annotations: { ...patch, 'hami.io/bind-phase': 'success' } },
      spec: { ...p.spec, nodeName: node },
      status: { phase: 'Running' },
    },
  };
}

async function post(url: string, body: unknown): Promise<{ ms: number; json: Record<string, unknown> }> {
  const started = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await res.json()) as Record<string, unknown>;
  return { ms: performance.now() - started, json };
}

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

const round = (v: number) => Math.round(v * 100) / 100;

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2));
  // Before the observability clients are built: per-request log lines would dominate the timings.
  process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const { startLocalServer } = await import('../lib/local/server');
  const server = await startLocalServer({ env: { ...process.env }, storeMode: 'child-process' });
  // The relay's forwarding goes to a second server on the same store, so each side's store calls are counted apart.
  const ingest = await startLocalServer({ env: { ...process.env }, ddbEndpoint: server.deps.config.ddbEndpoint });
  const { state, records } = server.deps;
  const ingestCalls = () => ingest.deps.state.counter.calls + ingest.deps.records.counter.calls;
  const schedulingCalls = () => state.counter.calls + records.counter.calls;
  const names = Array.from({ length: options.nodes }, (_, i) => `node-${String(i).padStart(5, '0')}`);
  for (let i = 0; i < names.length; i += 200) {
    await post(`${ingest.url}/cluster/events`, { events: names.slice(i, i + 200).map((n) => ({ type: 'ADDED', object: node(n, 1) })) });
  }

  // The relay's forwarder: pod updates batched every 20 ms.
  const pending: { event: unknown; done: () => void }[] = [];
  let forwarding = true;
  const forwarder = (async () => {
    while (forwarding || pending.length > 0) {
      if (pending.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 2));
        continue;
      }
      const batch = pending.splice(0, 100);
      await post(`${ingest.url}/cluster/events`, { events: batch.map((b) => b.event) });
      for (const b of batch) b.done();
    }
  })();

  const filterMs: number[] = [];
  const bindMs: number[] = [];
  let placed = 0;
  let unplaced = 0;
  let lockRetries = 0;
  let gaveUp = 0;
  // Pods waiting to be scheduled; a pod whose bind met the node lock comes back after a backoff, as
  // kube-scheduler requeues it: its defaults, 1 s doubling to 10 s (podInitialBackoffSeconds, podMaxBackoffSeconds).
  const queue: { pod: ReturnType<typeof pod>; attempt: number; notBefore: number }[] = Array.from({ length: options.pods }, (_, i) => ({
    pod: pod(i),
    attempt: 0,
    notBefore: 0,
  }));
  let inFlight = 0;
  process.stdout.write(`bench: ${options.nodes} nodes x ${CARDS} cards, ${options.pods} pods, ${options.concurrency} clients\n`);
  const started = performance.now();
  const callsAtStart = { scheduling: schedulingCalls(), ingest: ingestCalls() };
  const requeue = (item: (typeof queue)[number]) => {
    const attempt = item.attempt + 1;
    if (attempt >= 30) {
      gaveUp += 1;
      return;
    }
    queue.push({ ...item, attempt, notBefore: performance.now() + Math.min(1000 * 2 ** item.attempt, 10_000) });
  };

  const client = async () => {
    for (;;) {
      const now = performance.now();
      const index = queue.findIndex((q) => q.notBefore <= now);
      if (index < 0) {
        if (queue.length === 0 && inFlight === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
      const [item] = queue.splice(index, 1);
      if (!item) continue;
      inFlight += 1;
      const p = item.pod;
      const filter = await post(`${server.url}/filter`, { Pod: p, Nodes: null, NodeNames: names });
      filterMs.push(filter.ms);
      const chosen = (filter.json.NodeNames as string[] | null)?.[0];
      if (!chosen) {
        if (filter.json.Error) requeue(item);
        else unplaced += 1;
        inFlight -= 1;
        continue;
      }
      const bindArgs = { PodName: p.metadata.name, PodNamespace: 'bench', PodUID: p.metadata.uid, Node: chosen };
      const bind = await post(`${server.url}/bind`, bindArgs);
      bindMs.push(bind.ms);
      if (bind.json.Error) {
        lockRetries += 1;
        requeue(item);
        inFlight -= 1;
        continue;
      }
      await post(`${server.url}/bind/outcome`, { ...bindArgs, Error: '' });
      // The device plugin allocates and reports bind-phase success; the relay forwards it (batched).
      await new Promise<void>((resolve) => pending.push({ event: podEvent(p, filter.json, chosen), done: resolve }));
      placed += 1;
      inFlight -= 1;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, client));
  const elapsedS = (performance.now() - started) / 1000;
  forwarding = false;
  await forwarder;
  process.stdout.write(`store calls by operation: state ${JSON.stringify(state.counter.byOperation)}, records ${JSON.stringify(records.counter.byOperation)}\n`);
  const calls = { scheduling: schedulingCalls() - callsAtStart.scheduling, ingest: ingestCalls() - callsAtStart.ingest };

  let overAllocations = 0;
  for (const name of names) {
    const res = await fetch(`${server.url}/api/v1/nodes/${name}/devices`);
    const view = (await res.json()) as { devices: { used: number; count: number; usedmem: number; devmem: number; usedcores: number; devcore: number }[] };
    for (const d of view.devices) if (d.usedmem > d.devmem || d.usedcores > d.devcore || d.used > d.count) overAllocations += 1;
  }
  await ingest.close();
  await server.close();

  process.stdout.write(`placed ${placed}, unplaced ${unplaced}, gave up ${gaveUp}, binds that met the lock ${lockRetries}, ${round(elapsedS)} s\n`);
  const summary = {
    filterP50Ms: round(percentile(filterMs, 50)),
    filterP99Ms: round(percentile(filterMs, 99)),
    bindP50Ms: round(percentile(bindMs, 50)),
    bindP99Ms: round(percentile(bindMs, 99)),
    podsPerSecond: round(placed / elapsedS),
    // Store calls of the scheduling path (filter + bind + bind outcome, retries included) per placed pod.
    storeCallsPerPod: round(calls.scheduling / Math.max(placed, 1)),
    // The same per scheduling attempt (a filter, and the bind and outcome when it passed): retries after
    // the node lock (HAMi's serialisation of binds per node) are what separates the two figures.
    storeCallsPerAttempt: round(calls.scheduling / Math.max(filterMs.length, 1)),
    // Forwarded pod updates, batched as the relay batches them.
    ingestStoreCallsPerPod: round(calls.ingest / Math.max(placed, 1)),
    overAllocations,
    nodes: options.nodes,
    pods: options.pods,
    concurrency: options.concurrency,
    placed,
    gaveUp,
    lockRetries,
  };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
