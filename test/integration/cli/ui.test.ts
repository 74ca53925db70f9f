/**
 * `kubectl hami ui`: a loopback port that forwards to the relay's user port through kube-apiserver's service
 * proxy with the kubeconfig's own credentials, so the console works without anyone pasting a token.
 */
import { request as httpRequest } from 'node:http';
import { startLocalServer, type LocalServer } from '../../../lib/local/server';
import type { RunningRelay } from '../../../lib/relay/relay';
import { parseUiArgs, startUi, type RunningUi } from '../../../lib/cli/ui';
import { card, controlClient, gpuNode } from '../../support/cluster';
import { startFakeKube, type FakeKube } from '../../support/fakeKube';
import { eventually, recordingLogger, startTestRelay } from '../relay/harness';

let kube: FakeKube;
let server: LocalServer;
let relay: RunningRelay;
let logger: ReturnType<typeof recordingLogger>;
const uis: RunningUi[] = [];

const RELAY = { relayNamespace: 'hami-system', relayService: 'hami-relay', relayPort: 8081, relayScheme: 'http' as const, port: 0 };

beforeAll(async () => {
  kube = await startFakeKube({ requiredToken: 'relay-token' });
  kube.addUser('alice-kubeconfig-token', { username: 'alice' });
  kube.addUser('bob-kubeconfig-token', { username: 'bob' });
  kube.grant({ user: 'alice', verb: 'get', resource: 'services/proxy', namespace: 'hami-system' });
  kube.grant({ user: 'alice', verb: 'list', resource: 'nodes' });
  server = await startLocalServer({ env: {} });
  // The relay forwards the cluster's Nodes (and drops what its complete list lacks): the node lives in the fake API.
  kube.create('Node', gpuNode('node1', [card('GPU-1')]));
  logger = recordingLogger();
  relay = await startTestRelay(kube, server.url, { logger, env: { HAMI_API_TOKEN: '', HAMI_CONTROL_PLANE_AUTH: 'none' } });
  kube.serveService('hami-system', 'http:hami-relay:8081', relay.userUrl);
  await eventually(async () => {
    if ((await controlClient(server.url).devices('node1')).status !== 200) throw new Error('node1 not forwarded yet');
  });
});

afterAll(async () => {
  await Promise.all(uis.map((ui) => ui.close()));
  await relay.close();
  await server.close();
  await kube.close();
});

async function ui(token: string): Promise<RunningUi> {
  const running = await startUi(kube.kubeConfig(token), RELAY);
  uis.push(running);
  return running;
}

describe('kubectl hami ui', () => {
  it('serves the console and the checked routes on loopback as the kubeconfig user, with no token from the browser', async () => {
    const alice = await ui('alice-kubeconfig-token');
    expect(alice.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(alice.forwardsToken).toBe(true);
    const page = await fetch(alice.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const nodes = await fetch(`${alice.url}api/v1/nodes`);
    expect(nodes.status).toBe(200);
    expect(((await nodes.json()) as { items: { name: string }[] }).items.map((n) => n.name)).toEqual(['node1']);
    // The API server's proxy consumed Authorization; the relay reviewed the forwarded token and logged no token.
    expect(kube.requests.filter((r) => r.path.endsWith('/tokenreviews')).map((r) => (r.body as { spec: { token: string } }).spec.token)).toContain('alice-kubeconfig-token');
    expect(logger.text()).not.toContain('alice-kubeconfig-token');
  });

  it("answers a user whose kubeconfig may not use the relay's service proxy with the API server's 403", async () => {
    const bob = await ui('bob-kubeconfig-token');
    const res = await fetch(`${bob.url}api/v1/nodes`);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { message: string }).message).toContain('cannot get resource "services/proxy"');
  });

  it('refuses requests for another host name (DNS rebinding) and anything but reads', async () => {
    const alice = await ui('alice-kubeconfig-token');
    const port = new URL(alice.url).port;
    const rebound = await new Promise<number>((resolve, reject) => {
      // fetch() sets Host from the URL; a raw request can claim another.
      const req = httpRequest({ host: '127.0.0.1', port, path: '/', headers: { host: `evil.example:${port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    expect(rebound).toBe(403);
    expect((await fetch(`${alice.url}api/v1/nodes`, { method: 'POST' })).status).toBe(405);
  });

  it('forwards nothing outside the relay service proxy: paths climbing out with dot segments are refused', async () => {
    const alice = await ui('alice-kubeconfig-token');
    const port = new URL(alice.url).port;
    const status = (path: string) =>
      new Promise<number>((resolve, reject) => {
        // fetch() removes dot segments before sending; a raw request keeps them.
        const req = httpRequest({ host: '127.0.0.1', port, path }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    const seen = kube.requests.length;
    expect(await status('/../../../../../api/v1/namespaces/kube-system/secrets')).toBe(400);
    expect(await status('/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/api/v1/nodes')).toBe(400);
    expect(kube.requests.slice(seen)).toEqual([]);
    // Still inside: forwarded as before.
    expect(await status('/api/v1/nodes')).toBe(200);
  });

  it('parses its flags', () => {
    expect(parseUiArgs([])).toEqual({ port: 0, relayNamespace: 'hami-system', relayService: 'hami-relay', relayPort: 8081, relayScheme: 'https', openBrowser: true, kube: {} });
    expect(parseUiArgs(['--context', 'prod', '--kubeconfig', '/k'])).toMatchObject({ kube: { context: 'prod', kubeconfig: '/k' } });
    expect(parseUiArgs(['--port', '8001', '--relay-scheme', 'http', '--no-browser'])).toMatchObject({ port: 8001, relayScheme: 'http', openBrowser: false });
    expect(() => parseUiArgs(['--relay-scheme', 'ftp'])).toThrow(/--relay-scheme must be https or http/);
    expect(() => parseUiArgs(['--colour'])).toThrow(/see kubectl hami ui --help/);
    expect(() => parseUiArgs(['--colour'], 'hami-diag')).toThrow(/see hami-diag ui --help/);
  });
});
