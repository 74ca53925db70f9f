/**
 * `npm run demo` end to end (local server, embedded store, the real hami-diag): the seed examples'
 * texts appear where a user looks for them, and the output is the same on every run.
 */
import { run as runCli } from '../../../lib/cli/run';
import { DemoError, runDemo } from '../../../lib/demo/demo';
import { systemRuntime, type Runtime } from '../../../lib/clock';
import { startLocalServer } from '../../../lib/local/server';

async function demoOutput(options: Parameters<typeof runDemo>[1] = {}): Promise<string[]> {
  const lines: string[] = [];
  await runDemo((line) => lines.push(line), options);
  return lines;
}

/** The lines of scenario n, from its heading to the next one. */
function scenario(lines: readonly string[], n: number): string[] {
  const start = lines.findIndex((line) => line.startsWith(`=== Scenario ${n}:`));
  const end = lines.findIndex((line, i) => i > start && line.startsWith('=== Scenario '));
  if (start < 0) throw new Error(`no scenario ${n} in the demo output`);
  const own = lines.slice(start, end < 0 ? undefined : end);
  // The blank line before the next heading is that heading's.
  while (own[own.length - 1] === '') own.pop();
  return own;
}

/** The Events block of `kubectl describe pod`: [type, reason, message] per event. */
function events(lines: readonly string[]): string[][] {
  const start = lines.indexOf('Events:');
  const rows: string[][] = [];
  for (const line of lines.slice(start + 3)) {
    if (line.trim() === '') break;
    const match = /^ {2}(\S+)\s+(\S+)\s+hami-scheduler {2}(.+)$/.exec(line);
    if (!match) throw new Error(`not an event row: ${line}`);
    rows.push([match[1] ?? '', match[2] ?? '', match[3] ?? '']);
  }
  return rows;
}

/** hami-diag's filter table row for a node: [node, status, score, container, result, reason]. */
function nodeRow(lines: readonly string[], node: string): string[] {
  const row = lines.find((line) => line.startsWith(`  ${node} `));
  if (!row) throw new Error(`no row for ${node}`);
  return row.trim().split(/\s{2,}/);
}

describe('npm run demo', () => {
  let lines: string[];

  beforeAll(async () => {
    lines = await demoOutput();
  });

  it('scenario 1: the pod fits node3 and node4 only, with HAMi event texts and one reason per other node', () => {
    const s1 = scenario(lines, 1);
    expect(events(s1)).toEqual([
      ['Normal', 'FilteringSucceed', 'find fit node(node3), 8 nodes not fit, 2 nodes fit(node4:0.50,node3:1.50)'],
      ['Normal', 'BindingSucceed', 'Successfully binding node [node3] to llm/deepseek-5996b8569d-kgwgx'],
    ]);
    expect(s1).toContain('$ hami-diag pod llm/deepseek-5996b8569d-kgwgx');
    expect(s1).toContain('Status    scheduled');
    expect(nodeRow(s1, 'node3')).toEqual(['node3', 'passed', '1.5', 'vllm', 'passed']);
    expect(nodeRow(s1, 'node4')).toEqual(['node4', 'passed', '0.5', 'vllm', 'passed']);
    const failed = ['node1', 'node2', 'node5', 'node6', 'node7', 'node8', 'node9', 'node10'];
    const reasons = failed.map((node) => nodeRow(s1, node));
    expect(reasons.every((row) => row[1] === 'failed')).toBe(true);
    expect(reasons.map((row) => row[row.length - 1])).toEqual([
      '8/8 CardInsufficientMemory',
      '4/4 ExclusiveDeviceAllocateConflict',
      '4/4 CardCordoned',
      '4/4 CardTypeMismatch',
      '1/4 AllocatedCardsInsufficientRequest',
      '4/4 CardTimeSlicingExhausted',
      '1/4 AllocatedCardsInsufficientRequest',
      'node unregistered',
    ]);
    // The reason pieces after the first are continuation lines of the same node.
    expect(s1).toContain(`${' '.repeat(44)}3/4 CardNotHealth`);
    expect(s1).toContain(`${' '.repeat(44)}1/4 NumaNotFit`);
  });

  it('scenario 2: a 5-card pod fits nowhere: FilteringFailed events, NodeInsufficientDevice per node, JSON excerpt', () => {
    const s2 = scenario(lines, 2);
    expect(events(s2)).toEqual([
      ['Warning', 'FilteringFailed', '1 nodes AllocatedCardsInsufficientRequest(node1)'],
      ['Warning', 'FilteringFailed', '1 nodes CardInsufficientCore(node1)'],
      ['Warning', 'FilteringFailed', 'no available node, 10 nodes do not meet'],
    ]);
    expect(s2).toContain('Filter    failed  no available node, 10 nodes do not meet');
    for (const node of ['node2', 'node3', 'node4', 'node5', 'node6', 'node7', 'node8', 'node9']) {
      expect(nodeRow(s2, node)).toEqual([node, 'failed', '-', 'ubuntu-container', 'failed', 'NodeInsufficientDevice']);
    }
    const jsonStart = s2.findIndex((line) => line.startsWith('$ hami-diag pod default/gpu-pod-default --json'));
    const excerpt = JSON.parse(s2.slice(jsonStart + 1).join('\n')) as unknown;
    expect(excerpt).toEqual({
      status: 'failed',
      filter: {
        status: 'failed',
        summary: 'no available node, 10 nodes do not meet',
        nodes: [
          {
            name: 'node1',
            status: 'failed',
            score: 0,
            containers: [{ name: 'ubuntu-container', status: 'failed', reason: '4/8 AllocatedCardsInsufficientRequest, 4/8 CardInsufficientCore' }],
          },
          { name: 'node2', status: 'failed', score: 0, containers: [{ name: 'ubuntu-container', status: 'failed', reason: 'NodeInsufficientDevice' }] },
        ],
      },
      bind: { status: 'pending', summary: 'not attempted: no node passed the filter' },
    });
  });

  it('scenario 3: the second notebook goes where no allocation is under way, and hami-diag says which node it passed over', () => {
    const s3 = scenario(lines, 3);
    expect(events(s3)).toEqual([
      ['Normal', 'FilteringSucceed', expect.stringMatching(/^find fit node\(node3\), 3 nodes not fit, 7 nodes fit\(.*node3:9\.50,node1:16\.12\)$/)],
      ['Normal', 'BindingSucceed', 'Successfully binding node [node3] to default/notebook-bob'],
    ]);
    expect(s3).toContain('          passed over node1: default/notebook-alice is allocating there');
  });

  it('scenario 4: a pod only the allocating node may take waits for the lock, gives up with HAMi text, and is nudged when it ends', () => {
    const s4 = scenario(lines, 4);
    const contention = 'node node1 has been locked within 5m0s: node lock contention';
    expect(events(s4)).toEqual([
      ['Normal', 'FilteringSucceed', 'find fit node(node1), 0 nodes not fit, 1 nodes fit(node1:16.12)'],
      ['Warning', 'BindingFailed', contention],
    ]);
    // The bind waited (HAMI_BIND_LOCK_WAIT_SECONDS, 5 s of demo time) before giving up.
    expect(s4).toContain(`Bind      failed  ${contention}  (node1, 2025-04-22T02:18:48.750Z)`);
    expect(s4).toContain('$ hami-diag node node1');
    expect(s4).toContain('Lock         held by default/notebook-alice since 2025-04-22T02:18:42.000Z, 6s ago');
    expect(s4[s4.length - 2]).toMatch(/nudges notebook-carol \(hami\.io\/requeue\), so kube-scheduler retries it at once; its bind to node1 succeeds\.$/);
    expect(s4[s4.length - 1]).toBe('The device plugin then allocates notebook-carol (hami.io/bind-phase: success): its lock on node1 ends too.');
  });

  it("scenario 5: a Job's pods are decided ahead by the relay's own code; a decision kube-scheduler cannot use is replaced live, and hami-diag says why", () => {
    const s5 = scenario(lines, 5);
    expect(s5).toContain(
      'The relay saw both pods created and decided them in one call to the control plane (POST /filter/ahead): summarize-0 on node1, summarize-1 on node3, booked and annotated (hami.io/decided-ahead) before kube-scheduler asked.',
    );
    expect(s5).toContain("kube-scheduler's filter for summarize-0 (10 nodes): the relay answers [node1] from the decision at once, with no call to the control plane.");
    const first = s5.slice(0, s5.indexOf('$ kubectl describe pod -n batch summarize-1'));
    expect(events(first)).toEqual([
      ['Normal', 'FilteringSucceed', 'find fit node(node1), 4 nodes not fit, 6 nodes fit(node7:0.00,node4:0.50,node2:2.00,node9:6.75,node3:11.00,node1:16.75)'],
      ['Normal', 'BindingSucceed', 'Successfully binding node [node1] to batch/summarize-0'],
    ]);
    // Bound by the relay's code, which told the control plane when the filter used the decision.
    expect(first).toContainEqual(expect.stringMatching(/^Ahead {5}decided ahead, before kube-scheduler's filter asked; its filter was answered from this decision at 2025-04-22T\d\d:\d\d:\d\d\.\d{3}Z$/));
    expect(first).toContain('Status    scheduled');

    const second = s5.slice(s5.indexOf('$ kubectl describe pod -n batch summarize-1'));
    // The decision made ahead (node3) and, after node3's taint, the live one (node1), which replaced its booking.
    expect(events(second).map(([, reason, message]) => `${reason}: ${message}`)).toEqual([
      expect.stringMatching(/^FilteringSucceed: find fit node\(node3\), /),
      expect.stringMatching(/^FilteringSucceed: find fit node\(node1\), 4 nodes not fit, 5 nodes fit\(/),
      'BindingSucceed: Successfully binding node [node1] to batch/summarize-1',
    ]);
    expect(second).toContain(
      'Ahead     decided live: the decision made ahead at 2025-04-22T02:19:48.000Z (node node3) was not used: node node3 is not among the 9 nodes kube-scheduler sent (its own filters excluded it since, e.g. a taint, or its sampling left it out)',
    );
    expect(second).toContain('Bind      passed  Successfully binding node [node1] to batch/summarize-1  (node1, 2025-04-22T02:19:48.750Z)');
  });

  it('names the server it fills in its first line', () => {
    expect(lines[0]).toBe('hami-explain demo: filling an in-process control plane (embedded store, gone when the demo ends) with 10 GPU nodes and 12 running GPU pods');
  });

  it('prints the same text on every run (fixed names, uids, ids and clock)', async () => {
    expect(await demoOutput()).toEqual(lines);
  });

  it('fails with a clear message when the product does not decide as the seeds say', async () => {
    // Under the spread node policy the least used node wins, so scenario 1 no longer lands on node3.
    const run = demoOutput({ env: { HAMI_NODE_SCHEDULER_POLICY: 'spread' } });
    await expect(run).rejects.toThrow(DemoError);
    await expect(run).rejects.toThrow(/^scenario 1: expected the filter to choose \[node3\], got \[node4\]/);
  });
});

describe('npm run demo -- --url (against a running server)', () => {
  const TOKEN = 'demo-server-token';
  let server: Awaited<ReturnType<typeof startLocalServer>>;
  let lines: string[];

  beforeAll(async () => {
    // No lock wait: this server's clock is real, and scenario 4's bind would otherwise wait for the lock in real time.
    server = await startLocalServer({ port: 0, host: '127.0.0.1', token: TOKEN, env: { HAMI_BIND_LOCK_WAIT_SECONDS: '0' } });
    lines = await demoOutput({ url: server.url, token: TOKEN });
  });

  afterAll(async () => {
    await server.close();
  });

  it('plays the same scenarios there and says how to look at the records afterwards', () => {
    expect(events(scenario(lines, 1))).toEqual([
      ['Normal', 'FilteringSucceed', 'find fit node(node3), 8 nodes not fit, 2 nodes fit(node4:0.50,node3:1.50)'],
      ['Normal', 'BindingSucceed', 'Successfully binding node [node3] to llm/deepseek-5996b8569d-kgwgx'],
    ]);
    expect(lines).toContain(`  curl -s ${server.url}/api/v1/namespaces/llm/pods/deepseek-5996b8569d-kgwgx/schedulerlog`);
  });

  it('leaves the records on the server for the documented follow-up calls (curl, hami-diag)', async () => {
    const res = await fetch(`${server.url}/api/v1/namespaces/llm/pods/deepseek-5996b8569d-kgwgx/schedulerlog`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(expect.objectContaining({ status: 'succeeded', filter: expect.objectContaining({ summary: 'find fit node(node3), 8 nodes not fit, 2 nodes fit(node4:0.50,node3:1.50)' }) }));

    let stdout = '';
    const code = await runCli(['pod', 'deepseek-5996b8569d-kgwgx', '-n', 'llm', '--server', server.url], {
      env: { HAMI_API_TOKEN: TOKEN },
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: () => true },
      cluster: () => ({ kind: 'unavailable', reason: 'no cluster in this test' }),
      now: () => Date.now(),
    });
    expect(code).toBe(0);
    expect(stdout).toContain('Filter    passed  find fit node(node3)');
  });

  it('says plainly when nothing listens at the URL', async () => {
    await expect(demoOutput({ url: 'http://127.0.0.1:9' })).rejects.toThrow(/^cannot reach the control plane at http:\/\/127\.0\.0\.1:9: /);
  });
});

/**
 * After `npm run demo -- --url …` the server holds what a real cluster would have left: every pod the demo reports
 * bound was seen with its annotations and `hami.io/bind-phase: success` (as HAMi's device plugin marks it), so no node
 * stays locked ("allocation in progress") and no bound pod leaves its cards when the reservation TTL passes. The
 * server's clock is injected and moved past the TTL.
 */
describe('npm run demo -- --url: the state it leaves on the server', () => {
  const RESERVATION_TTL_SECONDS = 600;
  // From the real time: scenario 5's relay keeps the real clock, as a relay beside this server would, and uses a
  // decision made ahead only while it is young by that clock.
  let nowMs = Date.now();
  const runtime: Runtime = { ...systemRuntime, clock: { now: () => nowMs } };
  const bound = [
    { pod: 'llm/deepseek-5996b8569d-kgwgx', node: 'node3' },
    { pod: 'default/notebook-alice', node: 'node1' },
    { pod: 'default/notebook-bob', node: 'node3' },
    { pod: 'default/notebook-carol', node: 'node1' },
    { pod: 'batch/summarize-0', node: 'node1' },
    { pod: 'batch/summarize-1', node: 'node1' },
  ];
  let server: Awaited<ReturnType<typeof startLocalServer>>;
  let lines: string[];

  interface Devices {
    readonly lock: { readonly holder: string } | null;
    readonly devices: readonly { readonly pods: readonly string[] }[];
  }
  const devicesOf = async (node: string): Promise<Devices> => (await (await fetch(`${server.url}/api/v1/nodes/${node}/devices`)).json()) as Devices;
  const schedulerLog = async (ref: string): Promise<unknown> => {
    const [namespace, name] = ref.split('/');
    return (await fetch(`${server.url}/api/v1/namespaces/${namespace}/pods/${name}/schedulerlog`)).json();
  };

  beforeAll(async () => {
    server = await startLocalServer({ port: 0, host: '127.0.0.1', runtime, env: { HAMI_BIND_LOCK_WAIT_SECONDS: '0', HAMI_RESERVATION_TTL_SECONDS: String(RESERVATION_TTL_SECONDS) } });
    lines = await demoOutput({ url: server.url });
  });

  afterAll(async () => {
    await server.close();
  });

  it('names the server it filled', () => {
    expect(lines[0]).toBe(`hami-explain demo: filling the control plane at ${server.url} with 10 GPU nodes and 12 running GPU pods`);
  });

  it('leaves no node locked: every allocation it started was reported done', async () => {
    const locks = await Promise.all(['node1', 'node2', 'node3', 'node4', 'node9'].map(async (node) => ({ node, lock: (await devicesOf(node)).lock })));
    expect(locks.filter((l) => l.lock !== null)).toEqual([]);
  });

  it('keeps every pod it reports bound on its cards past the reservation TTL, as hami-diag says it is bound', async () => {
    nowMs += (RESERVATION_TTL_SECONDS + 60) * 1000;
    for (const { pod, node } of bound) {
      expect({ pod, log: await schedulerLog(pod) }).toEqual({ pod, log: expect.objectContaining({ status: 'succeeded', bind: expect.objectContaining({ status: 'passed' }) }) });
      const onCards = (await devicesOf(node)).devices.some((card) => card.pods.includes(pod));
      expect({ pod, node, onCards }).toEqual({ pod, node, onCards: true });
    }
  });
});
