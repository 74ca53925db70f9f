/**
 * HTTPS on the relay's user port (scheduler logs, listings, the console), with the webhook's certificate machinery:
 * the relay's own CA in a Secret (self-managed). Plain HTTP there only when RELAY_USER_TLS=off.
 */
import { request } from 'node:https';
import { request as plainRequest } from 'node:http';
import { useRelayOnFakeControlPlane } from '../../support/relayRig';
import { gatedDelay, recordingLogger } from './harness';

const NAMESPACE = 'hami-system';
const DAY_MS = 86_400_000;
// Certificates are checked by the TLS stack against the real clock: the relay's starts a day earlier.
const T0 = new Date(Date.now() - DAY_MS);

const rig = useRelayOnFakeControlPlane({
  per: 'test',
  prepare: ({ kube, cp }) => {
    kube.addUser('ops-token', { username: 'ops' });
    kube.grant({ user: 'ops', verb: 'list', resource: 'nodes' });
    cp.on('GET', '/api/v1/nodes', { body: { kind: 'NodeDevicesList', apiVersion: 'v1', metadata: {}, items: [] } });
  },
  relay: () => ({
    logger: recordingLogger(),
    now: () => T0,
    webhookDelay: gatedDelay().delay,
    env: { RELAY_USER_TLS: 'self-managed', POD_NAMESPACE: NAMESPACE, RELAY_USER_PORT: '0' },
  }),
});

function caBundle(): string {
  const data = rig.kube.get('Secret', NAMESPACE, 'hami-relay-webhook-tls')?.data as Record<string, string>;
  return Buffer.from(String(data['ca.crt']), 'base64').toString('utf8');
}

function get(url: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: target.hostname, port: target.port, path, ca: caBundle(), servername: `hami-relay.${NAMESPACE}.svc`, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the user port over HTTPS (self-managed)', () => {
  it('serves probes, the console and the checked routes with a certificate from the relay CA, for the Service name', async () => {
    expect(rig.relay.userUrl).toBe('');
    const url = await rig.relay.userTls!.ready();
    expect(url).toMatch(/^https:\/\//);
    expect((await get(url, '/healthz')).status).toBe(200);
    const page = await get(url, '/');
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect((await get(url, '/api/v1/nodes', { authorization: 'Bearer ops-token' })).status).toBe(200);
    expect((await get(url, '/api/v1/nodes')).status).toBe(401);
  });

  it('answers no plain HTTP on that port', async () => {
    const url = new URL(await rig.relay.userTls!.ready());
    const outcome = await new Promise<string>((resolve) => {
      const req = plainRequest({ host: url.hostname, port: url.port, path: '/healthz', agent: false }, (res) => resolve(`HTTP ${res.statusCode}`));
      req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
      req.end();
    });
    // No plain-HTTP answer at all (any status would mean the port speaks plain HTTP).
    expect(outcome).not.toMatch(/^HTTP /);
  });
});
