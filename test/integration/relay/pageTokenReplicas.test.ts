/**
 * Two relay replicas behind one Service: a listing begun on one goes on on the other, because both derive the page
 * token key from the user port's TLS key in the Secret they share (self-managed). A relay with another key answers
 * such a token 410 Expired, never a wrong page.
 */
import { request } from 'node:https';
import { useRelayOnFakeControlPlane } from '../../support/relayRig';
import { gatedDelay, recordingLogger } from './harness';

const NAMESPACE = 'hami-system';
// Certificates are checked by the TLS stack against the real clock: the relays start a day earlier.
const T0 = new Date(Date.now() - 86_400_000);
const ALICE = 'alice-token';

const summary = (namespace: string, name: string) => ({ pod: { namespace, name, uid: `u-${name}` }, status: 'pending' });

const rig = useRelayOnFakeControlPlane({
  per: 'test',
  prepare: ({ kube, cp }) => {
    kube.addUser(ALICE, { username: 'alice' });
    kube.grant({ user: 'alice', verb: 'get', resource: 'pods', namespace: 'team-a' });
    // team-a's pods among team-b's, a control-plane page at a time.
    const items = [summary('team-a', 'a1'), summary('team-b', 'b1'), summary('team-a', 'a2'), summary('team-b', 'b2')];
    cp.on('GET', '/api/v1/schedulerlogs', (call) => {
      const from = Number(call.query.continue ?? '0');
      const end = Math.min(items.length, from + Number(call.query.limit));
      return { body: { kind: 'SchedulerLogList', apiVersion: 'v1', metadata: end < items.length ? { continue: String(end) } : {}, items: items.slice(from, end) } };
    });
  },
});

async function startReplica(env: Record<string, string>): Promise<string> {
  const relay = await rig.startRelay({ logger: recordingLogger(), now: () => T0, webhookDelay: gatedDelay().delay, env: { POD_NAMESPACE: NAMESPACE, RELAY_USER_PORT: '0', ...env } });
  return relay.userTls?.ready() ?? relay.userUrl;
}

function caBundle(): string {
  const data = rig.kube.get('Secret', NAMESPACE, 'hami-relay-webhook-tls')?.data as Record<string, string>;
  return Buffer.from(String(data['ca.crt']), 'base64').toString('utf8');
}

function get(url: string, path: string): Promise<{ status: number; body: { items?: { pod: { name: string } }[]; metadata?: { continue?: string }; reason?: string } }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: target.hostname, port: target.port, path, ca: caBundle(), servername: `hami-relay.${NAMESPACE}.svc`, headers: { authorization: `Bearer ${ALICE}` }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as never }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('page tokens across relay replicas', () => {
  it('goes on with a listing on the other replica, which shares the Secret', async () => {
    const first = await startReplica({ RELAY_USER_TLS: 'self-managed' });
    const second = await startReplica({ RELAY_USER_TLS: 'self-managed' });
    const page1 = await get(first, '/api/v1/schedulerlogs?limit=1');
    expect(page1.body.items?.map((i) => i.pod.name)).toEqual(['a1']);
    const page2 = await get(second, `/api/v1/schedulerlogs?limit=1&continue=${page1.body.metadata?.continue ?? ''}`);
    expect(page2.status).toBe(200);
    expect(page2.body.items?.map((i) => i.pod.name)).toEqual(['a2']);
    expect(page2.body.metadata).toEqual({});
  });

  it('answers 410 Expired on a relay whose key is another (a plain-HTTP relay has its own)', async () => {
    const tls = await startReplica({ RELAY_USER_TLS: 'self-managed' });
    const page1 = await get(tls, '/api/v1/schedulerlogs?limit=1');
    const plain = await startReplica({ RELAY_USER_TLS: 'off' });
    const res = await fetch(`${plain}/api/v1/schedulerlogs?limit=1&continue=${page1.body.metadata?.continue ?? ''}`, { headers: { authorization: `Bearer ${ALICE}` } });
    expect(res.status).toBe(410);
    expect(await res.json()).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
  });
});
