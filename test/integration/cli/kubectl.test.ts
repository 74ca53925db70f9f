/**
 * `kubectl hami pod|node` as kubectl users ask: the relay's user port through kube-apiserver's service proxy with
 * the kubeconfig's credentials (no --server, no --token), with kubectl's -n, -A, --context, --kubeconfig and -o.
 * The fake API server proxies to a real relay in front of a real local control plane.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { startLocalServer, type LocalServer } from '../../../lib/local/server';
import type { RunningRelay } from '../../../lib/relay/relay';
import { programOf, type Program } from '../../../lib/cli/args';
import { kubeClusterAccess, kubeContextNamespace } from '../../../lib/cli/kubeClusterReader';
import { run } from '../../../lib/cli/run';
import { card, controlClient, gpuNode, gpuPod } from '../../support/cluster';
import { startFakeKube, type FakeKube } from '../../support/fakeKube';
import { eventually, startTestRelay } from '../relay/harness';

let kube: FakeKube;
let server: LocalServer;
let relay: RunningRelay;
let dir: string;
/** Two contexts: `dead` (current, a server nobody listens on) and `fake` (alice on the fake API server, namespace ml). */
let kubeconfig: string;
/** One context, current: alice on the fake API server, no namespace. */
let aliceOnly: string;

const NOW = Date.parse('2030-01-01T00:00:00Z');

function kubeconfigYaml(contexts: { name: string; server: string; token: string; namespace?: string }[], current: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: contexts.map((c) => ({ name: c.name, cluster: { server: c.server, 'insecure-skip-tls-verify': true } })),
    users: contexts.map((c) => ({ name: c.name, user: { token: c.token } })),
    contexts: contexts.map((c) => ({ name: c.name, context: { cluster: c.name, user: c.name, ...(c.namespace ? { namespace: c.namespace } : {}) } })),
    'current-context': current,
  });
}

beforeAll(async () => {
  kube = await startFakeKube({ requiredToken: 'relay-token' });
  kube.addUser('alice-kubeconfig-token', { username: 'alice' });
  kube.grant({ user: 'alice', verb: 'get', resource: 'services/proxy', namespace: 'hami-system' });
  kube.grant({ user: 'alice', verb: 'list', resource: 'nodes' });
  kube.grant({ user: 'alice', verb: 'get', resource: 'pods' });
  server = await startLocalServer({ env: {} });
  kube.create('Node', gpuNode('node1', [card('GPU-1')]));
  relay = await startTestRelay(kube, server.url, { env: { HAMI_API_TOKEN: '', HAMI_CONTROL_PLANE_AUTH: 'none' } });
  // The relay's defaults (`https:hami-relay:8081` in hami-system); the fake proxy reaches the test relay over plain HTTP.
  kube.serveService('hami-system', 'https:hami-relay:8081', relay.userUrl);
  // A relay with RELAY_USER_TLS=off, as --relay-scheme http names it.
  kube.serveService('hami-system', 'http:hami-relay:8081', relay.userUrl);
  const api = controlClient(server.url);
  await eventually(async () => {
    if ((await api.devices('node1')).status !== 200) throw new Error('node1 not forwarded yet');
  });
  // Two scheduling records: one pod that fits (ml/train), one that asks more than the card has (team-b/huge).
  for (const pod of [gpuPod('train', [{ name: 'main', gpu: 1, mem: 1000 }], { namespace: 'ml' }), gpuPod('huge', [{ name: 'main', gpu: 1, mem: 10_000_000 }], { namespace: 'team-b' })]) {
    const answer = await api.filter(pod, ['node1']);
    if (answer.status !== 200) throw new Error(`filter of ${pod.metadata.name} answered ${answer.status}: ${answer.text}`);
  }

  dir = mkdtempSync(join(tmpdir(), 'kubectl-hami-'));
  kubeconfig = join(dir, 'two-contexts.yaml');
  writeFileSync(
    kubeconfig,
    kubeconfigYaml(
      [
        { name: 'dead', server: 'http://127.0.0.1:1', token: 'nobody' },
        { name: 'fake', server: kube.url, token: 'alice-kubeconfig-token', namespace: 'ml' },
      ],
      'dead',
    ),
  );
  aliceOnly = join(dir, 'alice.yaml');
  writeFileSync(aliceOnly, kubeconfigYaml([{ name: 'alice', server: kube.url, token: 'alice-kubeconfig-token' }], 'alice'));
});

afterAll(async () => {
  await relay.close();
  await server.close();
  await kube.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The program as bin/kubectl-hami runs it, with the process's environment replaced by `env`. */
async function kubectlHami(argv: string[], env: Record<string, string> = {}, program: Program = 'kubectl hami') {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    env,
    program,
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    cluster: (selection) => kubeClusterAccess(env, selection),
    contextNamespace: (selection) => kubeContextNamespace(env, selection),
    now: () => NOW,
    timeoutMs: 5000,
  });
  return { code, stdout, stderr };
}


describe('kubectl hami pod through the relay, with the kubeconfig', () => {
  it('prints the scheduler log of pod <name> -n <ns>, asked with the kubeconfig user (no --server, no --token)', async () => {
    const seen = kube.requests.length;
    const out = await kubectlHami(['pod', 'train', '-n', 'ml'], { KUBECONFIG: aliceOnly });
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^Pod {7}ml\/train /);
    expect(out.stdout).toContain('Binding: placed on node1');
    const proxied = kube.requests.slice(seen).map((r) => r.path);
    expect(proxied).toContain('/api/v1/namespaces/hami-system/services/https:hami-relay:8081/proxy/api/v1/namespaces/ml/pods/train/schedulerlog');
    // The relay reviewed alice's own token, forwarded in X-Hami-Authorization past the proxy.
    expect(kube.requests.slice(seen).filter((r) => r.path.endsWith('/tokenreviews')).map((r) => (r.body as { spec: { token: string } }).spec.token)).toContain('alice-kubeconfig-token');
  });

  it('--context picks the second context of the file (its namespace too), --kubeconfig names the file', async () => {
    // The current context is `dead`: asked without --context, nothing answers.
    const current = await kubectlHami(['pod', 'train', '--kubeconfig', kubeconfig]);
    expect(current.code).toBe(2);
    expect(current.stderr).toMatch(/^kubectl hami: cannot reach the relay hami-system\/hami-relay:8081 through http:\/\/127\.0\.0\.1:1: connection refused/);
    const picked = await kubectlHami(['pod', 'train', '--kubeconfig', kubeconfig, '--context', 'fake']);
    expect(picked).toMatchObject({ code: 0, stderr: '' });
    expect(picked.stdout).toMatch(/^Pod {7}ml\/train /);
    // --relay-scheme http reaches a relay serving plain HTTP (its Service port named `http:`).
    const plainHttp = kube.requests.length;
    expect((await kubectlHami(['pod', 'train', '--relay-scheme', 'http', '--kubeconfig', kubeconfig, '--context', 'fake'])).stdout).toMatch(/^Pod {7}ml\/train /);
    expect(kube.requests.slice(plainHttp).map((r) => r.path)).toContain('/api/v1/namespaces/hami-system/services/http:hami-relay:8081/proxy/api/v1/namespaces/ml/pods/train/schedulerlog');
    // The same through KUBECONFIG instead of --kubeconfig.
    expect((await kubectlHami(['pod', 'train', '--context', 'fake'], { KUBECONFIG: kubeconfig })).stdout).toMatch(/^Pod {7}ml\/train /);
    const unknown = await kubectlHami(['pod', 'train', '--kubeconfig', kubeconfig, '--context', 'prod']);
    expect(unknown).toEqual({
      code: 2,
      stdout: '',
      stderr: 'kubectl hami: cannot reach the relay through the Kubernetes API: the kubeconfig has no context "prod" (it has: dead, fake) (or pass --server to ask a server directly)\n',
    });
  });

  it('-A lists the latest attempt of every pod; -n one namespace; -o wide adds columns', async () => {
    const all = await kubectlHami(['pod', '-A'], { KUBECONFIG: aliceOnly });
    expect(all.code).toBe(0);
    const lines = all.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAMESPACE +NAME +STATUS +NODE +AGE +ANSWER$/);
    expect(lines.slice(1).map((line) => line.split(/\s+/).slice(0, 3).join(' ')).sort()).toEqual(['ml train binding', 'team-b huge pending']);
    const one = await kubectlHami(['pod', '-n', 'team-b'], { KUBECONFIG: aliceOnly });
    expect(one.stdout.split('\n')[0]).toMatch(/^NAME +STATUS +NODE +AGE +ANSWER$/);
    expect(one.stdout).toContain('huge');
    expect(one.stdout).not.toContain('train');
    const wide = await kubectlHami(['pod', '-A', '-o', 'wide'], { KUBECONFIG: aliceOnly });
    expect(wide.stdout.split('\n')[0]).toMatch(/^NAMESPACE +NAME +STATUS +NODE +AGE +REASON +ATTEMPT +ANSWER$/);
    expect(wide.stdout).toContain('CardInsufficientMemory');
  });

  it('-o json and -o yaml print the list and the log as the API sends them', async () => {
    const json = await kubectlHami(['pod', '-A', '-o', 'json'], { KUBECONFIG: aliceOnly });
    const list = JSON.parse(json.stdout) as { kind: string; items: { pod: { name: string } }[] };
    expect(list.kind).toBe('SchedulerLogList');
    expect(list.items.map((item) => item.pod.name).sort()).toEqual(['huge', 'train']);
    const yaml = await kubectlHami(['pod', '-A', '-o', 'yaml'], { KUBECONFIG: aliceOnly });
    expect(parseYaml(yaml.stdout)).toEqual(list);
    const log = await kubectlHami(['pod', 'ml/train', '-o', 'yaml'], { KUBECONFIG: aliceOnly });
    const jsonLog = await kubectlHami(['pod', 'ml/train', '-o', 'json'], { KUBECONFIG: aliceOnly });
    expect(parseYaml(log.stdout)).toEqual(JSON.parse(jsonLog.stdout));
    expect(JSON.parse(jsonLog.stdout)).toMatchObject({ pod: { namespace: 'ml', name: 'train' } });
  });

  it('-o wide on one pod shows the per-card evidence (as --detail)', async () => {
    const out = await kubectlHami(['pod', 'huge', '-n', 'team-b', '-o', 'wide'], { KUBECONFIG: aliceOnly });
    expect(out.code).toBe(0);
    expect(out.stdout).toBe((await kubectlHami(['pod', 'huge', '-n', 'team-b', '--detail'], { KUBECONFIG: aliceOnly })).stdout);
    expect(out.stdout).not.toBe((await kubectlHami(['pod', 'huge', '-n', 'team-b'], { KUBECONFIG: aliceOnly })).stdout);
  });

  it('a pod without a record exits 1', async () => {
    const out = await kubectlHami(['pod', 'ghost', '-n', 'ml', '-o', 'json'], { KUBECONFIG: aliceOnly });
    expect(out.code).toBe(1);
    expect(JSON.parse(out.stdout)).toMatchObject({ found: false, message: 'no scheduling record for pod ml/ghost' });
  });
});

describe('kubectl hami node through the relay', () => {
  it('shows one node, lists every node, and says when a node is unknown', async () => {
    const one = await kubectlHami(['node', 'node1'], { KUBECONFIG: aliceOnly });
    expect(one).toMatchObject({ code: 0, stderr: '' });
    expect(one.stdout).toMatch(/^Node {9}node1\n/);
    expect(one.stdout).toContain('GPU-1');
    const list = await kubectlHami(['node'], { KUBECONFIG: aliceOnly });
    expect(list.stdout.split('\n')[0]).toMatch(/^NAME +REGISTERED +CARDS +MEM USED\/TOTAL \(MiB\) +CORES USED\/TOTAL +PODS +LOCK$/);
    expect(list.stdout.split('\n')[1]).toMatch(/^node1 +yes +1 /);
    const wide = await kubectlHami(['node', '-o', 'wide'], { KUBECONFIG: aliceOnly });
    expect(wide.stdout.split('\n')[0]).toMatch(/ TYPES +UNHEALTHY +REASON$/);
    const yaml = await kubectlHami(['node', 'node1', '-o', 'yaml'], { KUBECONFIG: aliceOnly });
    expect(parseYaml(yaml.stdout)).toMatchObject({ name: 'node1', registered: true });
    expect(await kubectlHami(['node', 'ghost'], { KUBECONFIG: aliceOnly })).toEqual({ code: 1, stdout: '', stderr: 'kubectl hami: node ghost has not been reported by the relay\n' });
  });
});

describe('kubectl hami errors', () => {
  it("names the user's missing permission, as the API server says it", async () => {
    kube.addUser('bob-kubeconfig-token', { username: 'bob' });
    const bob = join(dir, 'bob.yaml');
    writeFileSync(bob, kubeconfigYaml([{ name: 'bob', server: kube.url, token: 'bob-kubeconfig-token' }], 'bob'));
    const out = await kubectlHami(['pod', 'train', '-n', 'ml'], { KUBECONFIG: bob });
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/^kubectl hami: the relay hami-system\/hami-relay:8081 through http:\/\/127\.0\.0\.1:\d+ refused your kubeconfig's credentials \(403\): .*cannot get resource "services\/proxy"/);
  });

  it('says kubectl hami in usage errors and help when invoked so, hami-diag when invoked as that', async () => {
    expect(await kubectlHami(['pod', 'train', '--colour'])).toEqual({ code: 2, stdout: '', stderr: "kubectl hami: Unknown option '--colour'; see kubectl hami --help\n" });
    expect(await kubectlHami(['pod', 'train', '--colour'], {}, 'hami-diag')).toEqual({ code: 2, stdout: '', stderr: "hami-diag: Unknown option '--colour'; see hami-diag --help\n" });
    const help = await kubectlHami(['--help']);
    expect(help.stdout).toMatch(/^Usage:\n {2}kubectl hami pod <name> \[-n <namespace>\]/);
    expect(help.stdout).not.toMatch(/^ {2}hami-diag /m);
    expect(await kubectlHami(['pod', 'train'], { KUBECONFIG: join(dir, 'missing.yaml') })).toEqual({
      code: 2,
      stdout: '',
      stderr: `kubectl hami: cannot reach the relay through the Kubernetes API: KUBECONFIG names no existing file (${join(dir, 'missing.yaml')}) (or pass --server to ask a server directly)\n`,
    });
  });

  it("says when the relay's Service is missing or has no endpoints, naming the flags that find it", async () => {
    // kube-apiserver's own 404 for a Service that does not exist (not the relay's 404 for a pod without a record).
    const apiServer = createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'services "hami-relay" not found', reason: 'NotFound', details: { name: 'hami-relay', kind: 'services' }, code: 404 }));
    });
    await new Promise<void>((resolve) => apiServer.listen(0, '127.0.0.1', resolve));
    try {
      const noService = join(dir, 'no-service.yaml');
      writeFileSync(noService, kubeconfigYaml([{ name: 'c', server: `http://127.0.0.1:${(apiServer.address() as AddressInfo).port}`, token: 't' }], 'c'));
      expect(await kubectlHami(['pod', 'train', '-n', 'ml'], { KUBECONFIG: noService })).toEqual({
        code: 2,
        stdout: '',
        stderr: 'kubectl hami: the Kubernetes API found no Service hami-system/hami-relay: is the relay installed there? (--relay-namespace, --relay-service)\n',
      });
    } finally {
      await new Promise<void>((resolve) => apiServer.close(() => resolve()));
    }
    const noEndpoints = await kubectlHami(['pod', 'train', '-n', 'ml', '--relay-service', 'elsewhere'], { KUBECONFIG: aliceOnly });
    expect(noEndpoints.code).toBe(2);
    expect(noEndpoints.stderr).toMatch(/^kubectl hami: the relay hami-system\/elsewhere:8081 through http:\/\/127\.0\.0\.1:\d+ answered 503: no endpoints available/);
  });

  it('hami-diag goes through the Kubernetes API when given --context or --kubeconfig, and to --server otherwise', async () => {
    const viaKube = await kubectlHami(['pod', 'train', '--kubeconfig', kubeconfig, '--context', 'fake'], {}, 'hami-diag');
    expect(viaKube).toMatchObject({ code: 0, stderr: '' });
    expect(viaKube.stdout).toMatch(/^Pod {7}ml\/train /);
    const viaServer = await kubectlHami(['pod', 'train', '-n', 'ml'], { HAMI_API_URL: server.url }, 'hami-diag');
    expect(viaServer.stdout).toBe(viaKube.stdout);
    // `npx hami-diag pod -A` and `node` against npm start's server list as the relay does.
    expect((await kubectlHami(['pod', '-A'], { HAMI_API_URL: server.url }, 'hami-diag')).stdout).toBe((await kubectlHami(['pod', '-A'], { KUBECONFIG: aliceOnly })).stdout);
    expect((await kubectlHami(['node'], { HAMI_API_URL: server.url }, 'hami-diag')).stdout).toMatch(/^NAME .*\nnode1 +yes +1 /);
    // And kubectl hami with --server asks that server, as `npx hami-diag` does.
    expect((await kubectlHami(['pod', 'train', '-n', 'ml', '--server', server.url])).stdout).toBe(viaKube.stdout);
  });

  it('knows its name from the script that started it', () => {
    expect(programOf('/usr/local/bin/kubectl-hami')).toBe('kubectl hami');
    expect(programOf('/home/u/.krew/bin/kubectl-hami')).toBe('kubectl hami');
    expect(programOf('/repo/bin/hami-diag.js')).toBe('hami-diag');
    expect(programOf('/usr/local/bin/hami-diag')).toBe('hami-diag');
    expect(programOf(undefined)).toBe('hami-diag');
  });
});
