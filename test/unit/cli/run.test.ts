/**
 * hami-diag end to end against a real local HTTP server serving captured scheduler logs; the cluster
 * is the captured cluster.json through the ClusterReader port.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { notFoundStatus, renderSchedulerLog } from '../../../lib/diagnostics/schedulerLog';
import type { AttemptRecord } from '../../../lib/diagnostics/record';
import { run, type CliDeps } from '../../../lib/cli/run';
import type { ClusterAccess } from '../../../lib/diagnostics/decisionTree';
import { VERSION } from '../../../lib/version';
import { fixtureCluster, fixtureDir, readFixture, record } from './golden';

const token = 's3cr3t-token-value';

interface Seen {
  url: string;
  authorization: string | undefined;
}

function handler(seen: Seen[], status?: number) {
  return (req: IncomingMessage, res: ServerResponse) => {
    seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
    const send = (code: number, body: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    if (status !== undefined) return send(status, { kind: 'Status', status: 'Failure', message: 'boom', code: status });
    if (req.headers.authorization !== `Bearer ${token}`) return send(401, { kind: 'Status', status: 'Failure', reason: 'Unauthorized', code: 401 });
    const url = new URL(req.url ?? '/', 'http://x');
    const pod = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/schedulerlog$/.exec(url.pathname);
    if (pod) {
      const byName: Record<string, 'success' | 'nofit' | 'bindfail'> = { 'gpu-pod': 'success', 'trainer-5gpu': 'nofit', 'infer-7c9d': 'bindfail' };
      const name = byName[decodeURIComponent(pod[2] ?? '')];
      if (name === 'success' && url.searchParams.get('broken') === null && decodeURIComponent(pod[1] ?? '') === 'weird') return send(200, { status: 'nope' });
      if (!name) return send(404, notFoundStatus(decodeURIComponent(pod[1] ?? ''), decodeURIComponent(pod[2] ?? '')));
      const history = url.searchParams.get('history') === 'true' && name === 'bindfail' ? readFixture<AttemptRecord[]>('bindfail.history.json') : undefined;
      const detail = url.searchParams.get('detail') === 'devices' ? 'devices' : undefined;
      return send(200, renderSchedulerLog(record(name), { ...(detail ? { detail } : {}), ...(history ? { history } : {}) }));
    }
    if (url.pathname === '/api/v1/nodes/node3/devices') return send(200, readFileSync(join(fixtureDir, 'node3.devices.json'), 'utf8'));
    if (url.pathname.startsWith('/api/v1/nodes/')) return send(404, { kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404, message: 'node ghost-node is not known to the scheduler' });
    return send(200, 'not json at all');
  };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function hamiDiag(argv: string[], overrides: Partial<CliDeps> & { isTTY?: boolean } = {}): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  const cluster: () => ClusterAccess = () => ({ kind: 'ready', reader: fixtureCluster() });
  const code = await run(argv, {
    env: {},
    stdout: { write: (text: string) => (stdout += text), isTTY: overrides.isTTY ?? false },
    stderr: { write: (text: string) => (stderr += text) },
    cluster,
    now: () => Date.parse('2026-08-21T16:45:05Z'),
    timeoutMs: 2000,
    ...overrides,
  });
  return { code, stdout, stderr };
}

/** A scheduler API for the describe block it is called in: started before its tests, `seen` emptied before each. */
function schedulerApi(): { readonly seen: Seen[]; readonly url: string } {
  const seen: Seen[] = [];
  const server = createServer(handler(seen));
  let url = '';
  beforeAll(async () => {
    url = await listen(server);
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    seen.length = 0;
  });
  return {
    seen,
    get url() {
      return url;
    },
  };
}

describe('hami-diag against a scheduler API', () => {
  const api = schedulerApi();
  const seen = api.seen;

  it('renders the scheduler log table, sending the token as a bearer header', async () => {
    const out = await hamiDiag(['pod', 'default/gpu-pod', '--server', api.url, '--token', token]);
    expect(out).toEqual({ code: 0, stdout: readFileSync(join(fixtureDir, 'success.txt'), 'utf8'), stderr: '' });
    expect(seen).toEqual([{ url: '/api/v1/namespaces/default/pods/gpu-pod/schedulerlog', authorization: `Bearer ${token}` }]);
  });

  it('takes server and token from HAMI_API_URL and HAMI_API_TOKEN, and asks for detail and history', async () => {
    const out = await hamiDiag(['pod', 'default/infer-7c9d', '--detail', '--history'], { env: { HAMI_API_URL: api.url, HAMI_API_TOKEN: token } });
    expect(out.code).toBe(0);
    expect(seen[0]?.url).toBe('/api/v1/namespaces/default/pods/infer-7c9d/schedulerlog?detail=devices&history=true');
    expect(out.stdout).toContain('Earlier attempts');
    expect(out.stdout).toContain('Cards     node3 / infer');
  });

  it('prints the API JSON with --json', async () => {
    const out = await hamiDiag(['pod', 'ml/trainer-5gpu', '--json', '--server', api.url, '--token', token]);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual(JSON.parse(JSON.stringify(renderSchedulerLog(record('nofit')))));
  });

  it('colours on a TTY unless NO_COLOR is set', async () => {
    const argv = ['pod', 'ml/trainer-5gpu', '--server', api.url, '--token', token];
    expect((await hamiDiag(argv, { isTTY: true })).stdout).toContain('\u001b[31mfailed');
    expect((await hamiDiag(argv, { isTTY: true, env: { NO_COLOR: '1' } })).stdout).not.toContain('\u001b[');
    expect((await hamiDiag(argv, { isTTY: false })).stdout).not.toContain('\u001b[');
  });

  it('walks the decision tree for a pod without a record (exit 1)', async () => {
    const out = await hamiDiag(['pod', 'default/wrong-scheduler', '--server', api.url, '--token', token]);
    expect(out).toEqual({ code: 1, stdout: readFileSync(join(fixtureDir, 'unknown-wrong-scheduler.txt'), 'utf8'), stderr: '' });
  });

  it('honours --scheduler-name when walking the tree', async () => {
    const out = await hamiDiag(['pod', 'default/wrong-scheduler', '--scheduler-name', 'default-scheduler', '--server', api.url, '--token', token]);
    expect(out.stdout).toContain('Branch   never-filtered');
  });

  it('walks the tree with the resource names of its environment, as the control plane reads them', async () => {
    const args = ['pod', 'default/waiting', '--server', api.url, '--token', token];
    expect((await hamiDiag(args)).stdout).toContain('Branch   never-filtered');
    const custom = await hamiDiag(args, { env: { HAMI_RESOURCE_COUNT_NAME: 'example.com/vgpu' } });
    expect(custom.stdout).toContain('Does it request managed GPU resources?  no (none of example.com/vgpu, ');
    expect(custom.stdout).toContain('Branch   no-managed-resources');
    const invalid = await hamiDiag(args, { env: { HAMI_MEMORY_FACTOR: 'many' } });
    expect(invalid.stdout).toContain("Cannot walk the debugging decision tree: the environment's scheduler settings are invalid: HAMI_MEMORY_FACTOR: must be an integer");
  });

  it('says why the tree cannot be walked without a kubeconfig', async () => {
    const out = await hamiDiag(['pod', 'default/waiting', '--server', api.url, '--token', token], {
      cluster: () => ({ kind: 'unavailable', reason: 'no kubeconfig found (KUBECONFIG is unset and ~/.kube/config does not exist)' }),
    });
    expect(out.code).toBe(1);
    expect(out.stdout).toBe(
      'No scheduling record for pod default/waiting.\nCannot walk the debugging decision tree: no kubeconfig found (KUBECONFIG is unset and ~/.kube/config does not exist)\n',
    );
  });

  it('reports a failing cluster read instead of crashing', async () => {
    const out = await hamiDiag(['pod', 'default/waiting', '--server', api.url, '--token', token], {
      cluster: () => ({
        kind: 'ready',
        reader: { getPod: () => Promise.reject(new Error('reading pod default/waiting: the Kubernetes API answered 403')), getNode: async () => undefined },
      }),
    });
    expect(out.stdout).toContain('Cannot walk the debugging decision tree: reading the cluster failed: reading pod default/waiting: the Kubernetes API answered 403');
  });

  it('renders node devices, and exits 1 for an unknown node', async () => {
    const out = await hamiDiag(['node', 'node3', '--server', api.url, '--token', token]);
    expect(out).toEqual({ code: 0, stdout: readFileSync(join(fixtureDir, 'node3.devices.txt'), 'utf8'), stderr: '' });
    expect(await hamiDiag(['node', 'ghost-node', '--server', api.url, '--token', token])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'hami-diag: node ghost-node is not known to the scheduler\n',
    });
  });

  it('refuses a wrong token in one line, exit 2, never printing the token', async () => {
    const out = await hamiDiag(['pod', 'default/gpu-pod', '--server', api.url, '--token', 'wrong-token-xyz']);
    expect(out).toEqual({ code: 2, stdout: '', stderr: 'hami-diag: the scheduler API refused the token (401)\n' });
    const missing = await hamiDiag(['pod', 'default/gpu-pod', '--server', api.url]);
    expect(missing.stderr).toBe('hami-diag: the scheduler API requires a token (401): pass --token or set HAMI_API_TOKEN\n');
  });

  it('rejects an answer that is not a scheduler log', async () => {
    const out = await hamiDiag(['pod', 'weird/gpu-pod', '--server', api.url, '--token', token]);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/^hami-diag: unexpected answer from the scheduler API at http:\/\/127\.0\.0\.1:\d+ at status: .+\n$/);
  });
});

describe('hami-diag transport and server errors', () => {
  it('names the URL and the cause when the API is unreachable (exit 2)', async () => {
    const closed = createServer();
    const url = await listen(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const out = await hamiDiag(['pod', 'default/gpu-pod', '--server', url, '--token', token]);
    expect(out).toEqual({ code: 2, stdout: '', stderr: `hami-diag: cannot reach the scheduler API at ${url}: connection refused (ECONNREFUSED)\n` });
  });

  it('gives up after the timeout on a server that never answers', async () => {
    const silent = createServer(() => undefined);
    const url = await listen(silent);
    try {
      const out = await hamiDiag(['node', 'node3', '--server', url], { timeoutMs: 50 });
      expect(out).toEqual({ code: 2, stdout: '', stderr: `hami-diag: cannot reach the scheduler API at ${url}: no answer within 0.05s\n` });
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('shows the Status message of a server error and hides URL credentials', async () => {
    const seen: Seen[] = [];
    const failing = createServer(handler(seen, 500));
    const url = await listen(failing);
    try {
      const withCredentials = url.replace('http://', 'http://admin:hunter2@');
      const out = await hamiDiag(['pod', 'default/gpu-pod', '--server', `${withCredentials}/prod`, '--token', token]);
      expect(out.stderr).toBe(`hami-diag: the scheduler API at ${url}/prod answered 500: boom\n`);
      expect(seen[0]?.url).toBe('/prod/api/v1/namespaces/default/pods/gpu-pod/schedulerlog');
      expect(out.stderr).not.toContain('hunter2');
      expect(out.stderr).not.toContain(token);
    } finally {
      await new Promise<void>((resolve) => failing.close(() => resolve()));
    }
  });
});

describe('hami-diag command line', () => {
  it.each([
    [['pod', ''], 'hami-diag: pod needs a name, e.g. hami-diag pod gpu-pod -n default\n'],
    [['pod', 'x', '-A'], 'hami-diag: -A lists the pods of every namespace: give no pod name with it (hami-diag pod -A)\n'],
    [['pod', '-A', '-n', 'ml'], 'hami-diag: -A lists every namespace and -n one: give one of them\n'],
    [['pod', '--history'], 'hami-diag: --detail and --history apply to one pod, e.g. hami-diag pod gpu-pod -n default --detail\n'],
    [['pod', 'a/b', '--relay-port', '8081', '--server', 'http://127.0.0.1:1'], 'hami-diag: --relay-port applies through the Kubernetes API, not with --server or HAMI_API_URL\n'],
    [['pod', 'a/b', '--context', 'prod', '--token', 't'], "hami-diag: --token goes with --server; through the Kubernetes API your kubeconfig's credentials are used\n"],
    [['pod', 'ml/a', '-n', 'team'], 'hami-diag: the namespace is given twice: "ml/" and -n team\n'],
    [['pod', 'a/b/c'], 'hami-diag: "a/b/c" is not a pod name; use <name> -n <namespace> or <namespace>/<name>\n'],
    [['pod', 'a', '-o', 'xml'], 'hami-diag: --output must be json, yaml, wide or text (got "xml")\n'],
    [['node', 'n1', '-n', 'ml'], 'hami-diag: nodes have no namespace; -n and -A apply to pod only\n'],
    [['node', '-A'], 'hami-diag: nodes have no namespace; -n and -A apply to pod only\n'],
    [['node', 'n1', '--history'], 'hami-diag: --detail and --history apply to pod only\n'],
    [['frobnicate', 'x'], 'hami-diag: unknown command "frobnicate"; use pod, node or ui (see hami-diag --help)\n'],
    [['pod', 'a/b', 'extra'], 'hami-diag: unexpected argument "extra"\n'],
    [['pod', 'a/b', '--server', 'ftp://x'], 'hami-diag: --server must be http:// or https:// (got ftp:)\n'],
    [['pod', 'a/b', '--server', 'not a url'], 'hami-diag: --server must be a URL such as http://127.0.0.1:8080 (got "not a url")\n'],
  ])('%j', async (argv, stderr) => {
    expect(await hamiDiag(argv)).toEqual({ code: 2, stdout: '', stderr });
  });

  it('rejects unknown options', async () => {
    const out = await hamiDiag(['pod', 'a/b', '--colour']);
    expect(out.code).toBe(2);
    expect(out.stderr).toBe("hami-diag: Unknown option '--colour'; see hami-diag --help\n");
  });

  it('prints usage for --help and with no arguments', async () => {
    for (const argv of [['--help'], []]) {
      const out = await hamiDiag(argv);
      expect(out.code).toBe(0);
      expect(out.stdout).toMatch(/^Usage:\n {2}hami-diag pod <name> \[-n <namespace>\]/);
      expect(out.stdout).toContain('The same program is also kubectl hami: kubectl hami pod <name> -n <namespace>');
    }
  });

  it('prints its version', async () => {
    expect(await hamiDiag(['--version'])).toEqual({ code: 0, stdout: `hami-diag ${VERSION}\n`, stderr: '' });
  });
});

describe('hami-diag follows kubectl habits', () => {
  const api = schedulerApi();
  const seen = api.seen;

  it.each([
    ['-n', ['pod', 'trainer-5gpu', '-n', 'ml'], undefined, 'ml'],
    ['--namespace=', ['pod', 'trainer-5gpu', '--namespace=ml'], undefined, 'ml'],
    ['the kubeconfig context namespace', ['pod', 'trainer-5gpu'], 'ml', 'ml'],
    ['"default" without -n or context namespace', ['pod', 'trainer-5gpu'], undefined, 'default'],
    ['namespace/name', ['pod', 'ml/trainer-5gpu'], 'other', 'ml'],
  ])('takes the namespace from %s', async (_case, argv, contextNamespace, namespace) => {
    const out = await hamiDiag([...argv, '--server', api.url, '--token', token], { contextNamespace: () => contextNamespace });
    expect(seen[0]?.url).toBe(`/api/v1/namespaces/${namespace}/pods/trainer-5gpu/schedulerlog`);
    expect(out.code).toBe(0);
  });

  it('never reads the kubeconfig when the namespace is given', async () => {
    const contextNamespace = jest.fn(() => 'ml');
    await hamiDiag(['pod', 'trainer-5gpu', '-n', 'ml', '--server', api.url, '--token', token], { contextNamespace });
    expect(contextNamespace).not.toHaveBeenCalled();
  });

  it('-o json prints every field the API returns, also ones this version does not know', async () => {
    const extra = createServer((_req, res) => {
      const body = JSON.parse(readFileSync(join(fixtureDir, 'node3.devices.json'), 'utf8')) as Record<string, unknown>;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ...body, addedLater: { by: 'a newer control plane' } }));
    });
    const extraUrl = await listen(extra);
    try {
      const out = await hamiDiag(['node', 'node3', '-o', 'json', '--server', extraUrl]);
      expect(out.code).toBe(0);
      expect(JSON.parse(out.stdout)).toEqual(expect.objectContaining({ name: 'node3', addedLater: { by: 'a newer control plane' } }));
    } finally {
      await new Promise<void>((resolve) => extra.close(() => resolve()));
    }
  });
});
