/**
 * The admission webhook served by the relay, end to end against the fake API server: TLS bootstrap with the
 * relay's own CA (Secret created, caBundle patched, certificate served and verified for the Service's name),
 * a second replica adopting the same Secret, the caBundle healed after a reset, renewal before expiry, and
 * cert-manager's mounted files; then real AdmissionReview v1 requests over that TLS.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import type { RunningRelay } from '../../../lib/relay/relay';
import { createCertificateAuthority, issueCertificate, signedBy, splitPemBundle } from '../../../lib/relay/tls/certificates';
import { decodeAdmissionPatch } from '../../support/jsonPatch';
import { useRelayOnFakeControlPlane } from '../../support/relayRig';
import { eventually, gatedDelay, gpuNode, recordingLogger, type TestRelayOptions } from './harness';

const NAMESPACE = 'hami-system';
const SERVICE_NAME = `hami-relay.${NAMESPACE}.svc`;
const SECRET = 'hami-relay-webhook-tls';
const DAY_MS = 86_400_000;
// The relay's clock is injected; it starts a day before the real one because the TLS client that checks the
// served certificates validates them against the real clock.
const T0 = new Date(Date.now() - DAY_MS);

const selfManagedEnv = { RELAY_WEBHOOK_TLS: 'self-managed', POD_NAMESPACE: NAMESPACE, RELAY_WEBHOOK_PORT: '0' };

function webhookConfiguration(caBundle = ''): Record<string, unknown> {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'hami-webhook' },
    webhooks: [
      {
        name: 'vgpu.hami.io',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Ignore',
        timeoutSeconds: 10,
        clientConfig: { service: { name: 'hami-relay', namespace: NAMESPACE, path: '/webhook', port: 443 }, ...(caBundle ? { caBundle } : {}) },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
      },
    ],
  };
}

const decode = (b64: unknown) => Buffer.from(String(b64), 'base64').toString('utf8');
const secretData = () => rig.kube.get('Secret', NAMESPACE, SECRET)?.data as Record<string, string> | undefined;
const caBundle = () => ((rig.kube.get('MutatingWebhookConfiguration', undefined, 'hami-webhook')?.webhooks as { clientConfig: { caBundle?: string } }[])[0]?.clientConfig.caBundle ?? '');

/** POSTs over TLS trusting only `ca` and verifying the certificate against the Service's DNS name; a string is sent as it is. */
function postTls(url: string, ca: string, body: unknown): Promise<{ status: number; body: Record<string, unknown>; peer: X509Certificate }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: target.hostname, port: target.port, path: '/webhook', method: 'POST', ca, servername: SERVICE_NAME, headers: { 'content-type': 'application/json' }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const peer = new X509Certificate((res.socket as TLSSocket).getPeerCertificate().raw);
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>, peer });
        });
      },
    );
    req.on('error', reject);
    req.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
}

function podReview(limits: Record<string, string>, uid = 'req-1'): Record<string, unknown> {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace: 'ml',
      operation: 'CREATE',
      userInfo: { username: 'alice' },
      object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'train', namespace: 'ml' }, spec: { containers: [{ name: 'main', image: 'cuda:12', resources: { limits } }] } },
    },
  };
}

const rig = useRelayOnFakeControlPlane({
  per: 'test',
  prepare: ({ kube }) => {
    kube.create('MutatingWebhookConfiguration', webhookConfiguration());
    kube.create('Node', gpuNode('node-1'));
  },
});

function start(env: Record<string, string>, extra: TestRelayOptions = {}): Promise<RunningRelay> {
  return rig.startRelay({ logger: recordingLogger(), ...extra, env: { ...env, ...(extra.env ?? {}) } });
}

describe('self-managed TLS', () => {
  it('creates its CA and serving certificate in a Secret, patches the caBundle, and serves the certificate', async () => {
    // Act
    const relay = await start(selfManagedEnv, { webhookDelay: gatedDelay().delay, now: () => T0 });
    const url = await relay.webhook!.ready();

    // Assess: the Secret
    const data = secretData();
    expect(rig.kube.get('Secret', NAMESPACE, SECRET)?.type).toBe('kubernetes.io/tls');
    expect(Object.keys(data ?? {}).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    const caPem = decode(data?.['ca.crt']);
    const certPem = decode(data?.['tls.crt']);
    expect(signedBy(certPem, caPem)).toBe(true);
    const cert = new X509Certificate(certPem);
    expect(cert.subjectAltName).toBe(`DNS:hami-relay, DNS:hami-relay.${NAMESPACE}, DNS:${SERVICE_NAME}, DNS:${SERVICE_NAME}.cluster.local`);
    expect(new X509Certificate(caPem).ca).toBe(true);

    // the caBundle
    expect(decode(caBundle())).toBe(caPem);

    // the served certificate, verified by a client that trusts only the caBundle
    const answer = await postTls(url, decode(caBundle()), podReview({ 'nvidia.com/gpu': '1' }));
    expect(answer.peer.fingerprint256).toBe(cert.fingerprint256);
    expect(answer.status).toBe(200);
  });

  it('a second replica adopts the Secret the first created instead of making its own', async () => {
    const first = await start(selfManagedEnv, { webhookDelay: gatedDelay().delay, now: () => T0 });
    await first.webhook!.ready();
    const second = await start(selfManagedEnv, { webhookDelay: gatedDelay().delay, now: () => T0 });
    const url = await second.webhook!.ready();

    expect(rig.kube.writes().filter((w) => w.method === 'POST' && w.path.endsWith('/secrets'))).toHaveLength(1);
    expect(second.webhook!.serving()?.certPem).toBe(first.webhook!.serving()?.certPem);
    const answer = await postTls(url, decode(caBundle()), podReview({ 'nvidia.com/gpu': '1' }));
    expect(answer.status).toBe(200);
  });

  it('puts the caBundle back when something (a Helm upgrade) resets it', async () => {
    const check = gatedDelay();
    const relay = await start(selfManagedEnv, { webhookDelay: check.delay, now: () => T0 });
    await relay.webhook!.ready();
    const good = caBundle();
    rig.kube.update('MutatingWebhookConfiguration', webhookConfiguration());
    expect(caBundle()).toBe('');

    check.release();
    await eventually(() => expect(check.requested).toHaveLength(2));

    expect(caBundle()).toBe(good);
  });

  it('renews the serving certificate before it expires, with the same CA, and serves the new one without a restart', async () => {
    // Issued 345 days ago (valid 365 days): 340 days later it is due for renewal (30 days before expiry).
    const issued = new Date(Date.now() - 345 * DAY_MS);
    let now = issued;
    const check = gatedDelay();
    const relay = await start(selfManagedEnv, { webhookDelay: check.delay, now: () => now });
    const url = await relay.webhook!.ready();
    const before = decode(secretData()?.['tls.crt']);
    const ca = decode(secretData()?.['ca.crt']);

    now = new Date(issued.getTime() + 340 * DAY_MS);
    check.release();
    await eventually(() => expect(check.requested).toHaveLength(2));

    const after = decode(secretData()?.['tls.crt']);
    expect(after).not.toBe(before);
    expect(decode(secretData()?.['ca.crt'])).toBe(ca);
    expect(signedBy(after, ca)).toBe(true);
    expect(Date.parse(new X509Certificate(after).validTo)).toBeGreaterThan(now.getTime() + 300 * DAY_MS);
    const answer = await postTls(url, ca, podReview({ 'nvidia.com/gpu': '1' }));
    expect(answer.peer.fingerprint256).toBe(new X509Certificate(after).fingerprint256);
  });

  it('starts a new CA before the old one runs out, trusting both while the old one is valid', async () => {
    let now = T0;
    const check = gatedDelay();
    const relay = await start(selfManagedEnv, { webhookDelay: check.delay, now: () => now });
    await relay.webhook!.ready();
    const oldCa = decode(secretData()?.['ca.crt']);

    now = new Date(T0.getTime() + (3650 - 390) * DAY_MS);
    check.release();
    await eventually(() => expect(check.requested).toHaveLength(2));

    const bundle = splitPemBundle(decode(secretData()?.['ca.crt']));
    expect(bundle).toHaveLength(2);
    expect(bundle[1]).toBe(oldCa);
    expect(signedBy(decode(secretData()?.['tls.crt']), bundle[0] ?? '')).toBe(true);
    expect(decode(caBundle())).toBe(bundle.join(''));
  });

  it('retries with backoff while the API server refuses, and serves once it accepts', async () => {
    rig.kube.failNext('GET', /\/secrets\//, 500, 1);
    const check = gatedDelay();
    const relay = await start(selfManagedEnv, { webhookDelay: check.delay, now: () => T0, env: { RELAY_BACKOFF_INITIAL_MS: '250' } });
    await eventually(() => expect(check.requested).toEqual([250]));
    check.release();
    await relay.webhook!.ready();
    expect(secretData()).toBeDefined();
  });
});

describe('listening', () => {
  it('retries when its port is taken, and listens once it is free', async () => {
    const blocker = createNetServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    const check = gatedDelay();
    const logger = recordingLogger();
    const relay = await start({ ...selfManagedEnv, RELAY_WEBHOOK_PORT: String(port) }, { webhookDelay: check.delay, now: () => T0, logger, env: { RELAY_BACKOFF_INITIAL_MS: '250' } });
    await eventually(() => expect(check.requested).toEqual([250]));
    expect(logger.lines.map((l) => l.message)).toContain('WebhookCertificateUnavailable');

    await new Promise<void>((resolve) => blocker.close(() => resolve()));
    check.release();

    expect(await relay.webhook!.ready()).toBe(`https://127.0.0.1:${port}`);
  });
});

describe('certificates from files (cert-manager)', () => {
  it('serves the mounted certificate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'webhook-tls-'));
    try {
      const ca = await createCertificateAuthority({ commonName: 'cert-manager CA', validDays: 30, now: new Date() });
      const serving = await issueCertificate(ca, { commonName: SERVICE_NAME, dnsNames: [SERVICE_NAME], usage: 'server', validDays: 30, now: new Date() });
      writeFileSync(join(dir, 'tls.crt'), serving.certPem);
      writeFileSync(join(dir, 'tls.key'), serving.keyPem);
      writeFileSync(join(dir, 'ca.crt'), ca.certPem);
      const relay = await start({ RELAY_WEBHOOK_TLS: 'files', RELAY_WEBHOOK_CERT_DIR: dir, RELAY_WEBHOOK_PORT: '0' }, { webhookDelay: gatedDelay().delay });
      const url = await relay.webhook!.ready();
      const answer = await postTls(url, ca.certPem, podReview({ 'nvidia.com/gpu': '1' }));
      expect(answer.peer.fingerprint256).toBe(new X509Certificate(serving.certPem).fingerprint256);
      expect(rig.kube.get('Secret', NAMESPACE, SECRET)).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('AdmissionReview over TLS', () => {
  it('mutates a GPU pod and warns about memory no registered card has, from the Node informer', async () => {
    const relay = await start(selfManagedEnv, { webhookDelay: gatedDelay().delay, now: () => T0 });
    const url = await relay.webhook!.ready();
    await eventually(() => expect(relay.watcher.status().synced).toBe(true));

    const fits = await postTls(url, decode(caBundle()), podReview({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '4000' }, 'uid-fits'));
    const tooBig = await postTls(url, decode(caBundle()), podReview({ 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '9000' }, 'uid-big'));

    const fitsResponse = fits.body.response as { uid: string; allowed: boolean; patch?: string; patchType?: string; warnings?: string[] };
    expect(fitsResponse).toEqual(expect.objectContaining({ uid: 'uid-fits', allowed: true }));
    expect(fitsResponse.warnings).toBeUndefined();
    expect(decodeAdmissionPatch(fitsResponse)).toEqual([{ op: 'add', path: '/spec/schedulerName', value: 'hami-scheduler' }]);
    expect((tooBig.body.response as { warnings?: string[] }).warnings).toEqual([
      'container "main" asks for 9000 MiB of GPU memory (nvidia.com/gpumem) but the largest registered card has 8192 MiB: the pod cannot be scheduled',
    ]);
  });

  it('denies with the text the API server shows the user', async () => {
    const relay = await start(selfManagedEnv, { webhookDelay: gatedDelay().delay, now: () => T0 });
    const url = await relay.webhook!.ready();
    const answer = await postTls(url, decode(caBundle()), podReview({ 'nvidia.com/gpu': '1', 'nvidia.com/gpucores': 'half' }));
    expect(answer.body.response).toEqual({
      uid: 'req-1',
      allowed: false,
      status: { code: 400, reason: 'BadRequest', message: 'invalid GPU resource request: container "main": nvidia.com/gpucores "half" is not a Kubernetes quantity' },
    });
  });

  describe('fails closed on what it cannot read: HTTP 200 with a denial, never a 500 that failurePolicy Ignore would admit', () => {
    /** The review's JSON text around `object` (text: JSON.stringify would overflow on the deep one, as the relay once did). */
    const withObject = (object: string, uid: string) => {
      const review = podReview({}, uid);
      return JSON.stringify({ ...review, request: { ...(review.request as Record<string, unknown>), object: '<object>' } }).replace('"<object>"', object);
    };
    const nested = `${'{"x":'.repeat(4999)}{}${'}'.repeat(4999)}`;

    it.each([
      [
        'a pod that does not match its schema',
        withObject(JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'train' }, spec: { containers: [{ image: 'cuda:12' }] } }), 'uid-schema'),
        'the webhook cannot read this pod (spec.containers.0.name: Invalid input: expected string, received undefined); the webhook refuses what it cannot check',
      ],
      [
        'a pod nested 5,000 levels deep',
        withObject(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"train","namespace":${nested}},"spec":{"containers":[{"name":"main","image":"cuda:12","env":${nested}}]}}`, 'uid-deep'),
        'the webhook cannot read this request: it nests objects more than 100 levels deep, which no pod does; the webhook refuses what it cannot check',
      ],
    ])('denies %s', async (_case, body, message) => {
      const logger = recordingLogger();
      const relay = await start(selfManagedEnv, { webhookDelay: gatedDelay().delay, now: () => T0, logger });
      const url = await relay.webhook!.ready();

      const answer = await postTls(url, decode(caBundle()), body);

      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: { uid: (JSON.parse(body) as { request: { uid: string } }).request.uid, allowed: false, status: { code: 400, reason: 'BadRequest', message } },
      });
      expect(logger.lines.find((l) => l.message === 'AdmissionReviewed')?.fields).toEqual([expect.objectContaining({ namespace: 'ml', pod: 'train', allowed: false, reason: message })]);
      // The log line holds strings only, whatever the pod nests.
      expect(() => logger.text()).not.toThrow();
    });
  });

  it('denies a pod labelled hami.io/webhook: ignore that carries a booking (sent here where the cluster has no policy)', async () => {
    const relay = await start(selfManagedEnv, { webhookDelay: gatedDelay().delay, now: () => T0 });
    const url = await relay.webhook!.ready();
    const review = podReview({ 'nvidia.com/gpu': '1' }, 'uid-labelled');
    const request = review.request as { object: { metadata: Record<string, unknown>; spec: Record<string, unknown> } };
    request.object.metadata.labels = { 'hami.io/webhook': 'ignore' };
    request.object.metadata.annotations = { 'hami.io/vgpu-node': 'node-1', 'hami.io/vgpu-devices-allocated': 'GPU-victim,NVIDIA,16384,100:;' };
    request.object.spec.nodeName = 'node-1';

    const answer = await postTls(url, decode(caBundle()), review);

    expect(answer.status).toBe(200);
    expect(answer.body.response).toEqual({ uid: 'uid-labelled', allowed: false, status: expect.objectContaining({ code: 403, message: expect.stringContaining('pod carries hami.io/vgpu-devices-allocated, hami.io/vgpu-node') }) });
  });

  it('answers 400 to a body that is not an AdmissionReview (the API server then applies failurePolicy Ignore)', async () => {
    const relay = await start(selfManagedEnv, { webhookDelay: gatedDelay().delay, now: () => T0 });
    const url = await relay.webhook!.ready();
    const answer = await postTls(url, decode(caBundle()), { hello: 'world' });
    expect(answer.status).toBe(400);
    expect(String(answer.body.message)).toMatch(/^not an admission\.k8s\.io\/v1 AdmissionReview/);
  });
});
