/**
 * The extender port over mutual TLS, against the fake API server: the relay issues kube-scheduler's client
 * certificate from its own CA (or reads cert-manager's files), serves /filter and /bind only to a client holding
 * it, and answers anyone else a clear refusal, writing nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import type { RunningRelay } from '../../../lib/relay/relay';
import { createCertificateAuthority, issueCertificate, splitPemBundle } from '../../../lib/relay/tls/certificates';
import { useRelayOnFakeControlPlane } from '../../support/relayRig';
import { eventually, gatedDelay, gpuPod, recordingLogger } from './harness';

const NAMESPACE = 'hami-system';
const SERVER_NAME = `hami-relay.${NAMESPACE}.svc`;
const CLIENT_SECRET = 'hami-scheduler-extender-tls';
const DAY_MS = 86_400_000;
// Certificates are checked by the TLS stack against the real clock: the relay's starts a day earlier.
const T0 = new Date(Date.now() - DAY_MS);

let logger: ReturnType<typeof recordingLogger>;

const rig = useRelayOnFakeControlPlane({
  per: 'test',
  prepare: ({ cp }) => cp.on('POST', '/filter', { body: { NodeNames: ['node-1'], FailedNodes: null, Error: '' } }),
});

beforeEach(() => {
  logger = recordingLogger();
});

interface Client {
  readonly ca: string;
  readonly cert?: string;
  readonly key?: string;
}

function post(url: string, path: string, client: Client, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: target.hostname, port: target.port, path, method: 'POST', ca: client.ca, cert: client.cert, key: client.key, servername: SERVER_NAME, headers: { 'content-type': 'application/json' }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const asClient = (ca: string, pair: { certPem: string; keyPem: string }): Client => ({ ca, cert: pair.certPem, key: pair.keyPem });
const decode = (b64: unknown) => Buffer.from(String(b64), 'base64').toString('utf8');

function schedulerClient(): Client {
  const data = rig.kube.get('Secret', NAMESPACE, CLIENT_SECRET)?.data as Record<string, string>;
  return { ca: decode(data['ca.crt']), cert: decode(data['tls.crt']), key: decode(data['tls.key']) };
}

/** A relay whose extender port takes mutual TLS from its own CA, and that port's URL once it listens. */
async function selfManaged(): Promise<{ relay: RunningRelay; url: string }> {
  const relay = await rig.startRelay({
    logger,
    now: () => T0,
    webhookDelay: gatedDelay().delay,
    env: { RELAY_EXTENDER_TLS: 'self-managed', POD_NAMESPACE: NAMESPACE, RELAY_PORT: '0' },
  });
  expect(relay.extenderUrl).toBe('');
  return { relay, url: await relay.extenderTls!.ready() };
}

describe('mutual TLS on the extender port (self-managed)', () => {
  it("issues kube-scheduler's client certificate into its Secret, from the CA that signs the relay's serving certificate", async () => {
    await selfManaged();
    const client = schedulerClient();
    const cert = new X509Certificate(client.cert!);
    expect(cert.subject).toBe('CN=hami-scheduler');
    expect(cert.keyUsage).toContain('1.3.6.1.5.5.7.3.2');
    const [ca] = splitPemBundle(client.ca);
    expect(cert.verify(new X509Certificate(ca!).publicKey)).toBe(true);
    expect(rig.kube.get('Secret', NAMESPACE, CLIENT_SECRET)?.type).toBe('kubernetes.io/tls');
    expect(logger.lines.map((l) => l.message)).toContain('ExtenderClientCertificateIssued');
  });

  it("serves /filter to kube-scheduler's certificate", async () => {
    const { url } = await selfManaged();
    const p = rig.kube.create('Pod', gpuPod('job-0'));

    const answer = await post(url, '/filter', schedulerClient(), { Pod: p, NodeNames: ['node-1'] });

    expect(answer).toEqual({ status: 200, body: { NodeNames: ['node-1'], FailedNodes: null, Error: '' } });
    expect(rig.cp.callsTo('/filter')).toHaveLength(1);
  });

  it.each([
    ['no client certificate', async (c: Client): Promise<Client> => ({ ca: c.ca }), /^no client certificate was presented/],
    [
      'a certificate from another CA',
      async (c: Client): Promise<Client> => {
        const other = await createCertificateAuthority({ commonName: 'someone else', validDays: 30, now: T0 });
        return asClient(c.ca, await issueCertificate(other, { commonName: 'hami-scheduler', usage: 'client', validDays: 30, now: T0 }));
      },
      /^the client certificate is not issued by the relay's CA/,
    ],
    [
      "the relay CA's certificate for another name",
      async (c: Client): Promise<Client> => {
        const secret = rig.kube.get('Secret', NAMESPACE, 'hami-relay-webhook-tls')?.data as Record<string, string>;
        const ca = { certPem: splitPemBundle(decode(secret['ca.crt']))[0]!, keyPem: decode(secret['ca.key']) };
        return asClient(c.ca, await issueCertificate(ca, { commonName: 'intruder', usage: 'client', validDays: 30, now: T0 }));
      },
      /^the client certificate is for "intruder", not "hami-scheduler"/,
    ],
  ])('refuses a request with %s: 401, a clear message, a log line, nothing forwarded or written', async (_label, clientOf, reason) => {
    const { url } = await selfManaged();
    const p = rig.kube.create('Pod', gpuPod('job-1'));
    const writesBefore = rig.kube.writes().length;

    const filter = await post(url, '/filter', await clientOf(schedulerClient()), { Pod: p, NodeNames: ['node-1'] });
    const bind = await post(url, '/bind', await clientOf(schedulerClient()), { PodName: 'job-1', PodNamespace: 'team-a', PodUID: p.metadata?.uid, Node: 'node-1' });

    for (const answer of [filter, bind]) {
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual(expect.objectContaining({ kind: 'Status', code: 401, reason: 'Unauthorized', message: expect.stringMatching(reason) }));
      expect(String(answer.body.message)).toMatch(/this port serves kube-scheduler only/);
    }
    expect(rig.cp.callsTo('/filter')).toHaveLength(0);
    expect(rig.cp.callsTo('/bind')).toHaveLength(0);
    expect(rig.kube.writes().slice(writesBefore)).toEqual([]);
    expect(logger.lines.filter((l) => l.message === 'ExtenderClientRefused')).toHaveLength(2);
  });

  it('is not ready until the extender port listens, and the probes on the user port say so', async () => {
    const { relay } = await selfManaged();
    await eventually(async () => expect((await fetch(`${relay.userUrl}/readyz`)).status).toBe(200));
    const ready = (await (await fetch(`${relay.userUrl}/readyz`)).json()) as { checks: Record<string, string> };
    expect(ready.checks.extender).toBe('ok');
  });
});

describe('mutual TLS on the extender port (cert-manager files)', () => {
  it("verifies clients against the mounted ca.crt: the scheduler's certificate passes, another CA's does not", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'extender-tls-'));
    try {
      const ca = await createCertificateAuthority({ commonName: 'cert-manager CA', validDays: 30, now: T0 });
      const serving = await issueCertificate(ca, { commonName: SERVER_NAME, dnsNames: [SERVER_NAME], usage: 'server', validDays: 30, now: T0 });
      const scheduler = await issueCertificate(ca, { commonName: 'hami-scheduler', usage: 'client', validDays: 30, now: T0 });
      writeFileSync(join(dir, 'tls.crt'), serving.certPem);
      writeFileSync(join(dir, 'tls.key'), serving.keyPem);
      writeFileSync(join(dir, 'ca.crt'), ca.certPem);
      const relay = await rig.startRelay({ logger, webhookDelay: gatedDelay().delay, env: { RELAY_EXTENDER_TLS: 'files', RELAY_EXTENDER_CERT_DIR: dir, RELAY_PORT: '0' } });
      const url = await relay.extenderTls!.ready();
      const p = rig.kube.create('Pod', gpuPod('job-2'));

      const ok = await post(url, '/filter', asClient(ca.certPem, scheduler), { Pod: p, NodeNames: ['node-1'] });
      const other = await createCertificateAuthority({ commonName: 'other', validDays: 30, now: T0 });
      const refused = await post(url, '/filter', asClient(ca.certPem, await issueCertificate(other, { commonName: 'hami-scheduler', usage: 'client', validDays: 30, now: T0 })), { Pod: p, NodeNames: ['node-1'] });

      expect(ok.status).toBe(200);
      expect(refused.status).toBe(401);
      expect(rig.kube.get('Secret', NAMESPACE, CLIENT_SECRET)).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
