/** Pure parts of the relay: config, SigV4 signing, event correlation, relevance rules, Effects parsing. */
import { loadRelayConfig as loadConfigFrom } from '../../../lib/relay/config';
import { sigV4Signer } from '../../../lib/aws/sigv4';
import { bearerSigner, signerFromConfig } from '../../../lib/relay/controlPlane';
import type { RelayConfig } from '../../../lib/relay/config';
import { backoffMs } from '../../../lib/relay/delay';
import { splitEffects } from '../../../lib/wire/effects';
import { RelayConfigError } from '../../../lib/relay/errors';
import { EventCorrelator, AGGREGATE_MAX_EVENTS } from '../../../lib/relay/eventCorrelator';
import { chooseKubeConfigSource, KubeConfigMissingError } from '../../../lib/kube/kubeconfig';
import { ChangeTracker, podMatters, toForwardedObject } from '../../../lib/relay/relevance';
import { bearerToken } from '../../../lib/http/bearer';

const MANAGED = ['nvidia.com/gpu', 'nvidia.com/gpumem', 'nvidia.com/gpumem-percentage', 'nvidia.com/gpucores', 'aws.amazon.com/neuron', 'aws.amazon.com/neuroncore'];

describe('loadRelayConfig', () => {
  // Every call below chooses the extender's and the user port's transports, which have no default.
  const loadRelayConfig = (env: Record<string, string>) => loadConfigFrom({ RELAY_EXTENDER_TLS: 'off', RELAY_USER_TLS: 'off', ...env });

  it('applies defaults and infers token auth from HAMI_API_TOKEN', () => {
    const c = loadRelayConfig({ HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/', HAMI_API_TOKEN: 'secret-token', RELAY_EXTENDER_TLS: 'off' });
    expect(c).toEqual(
      expect.objectContaining({
        // Loopback unless told: a relay started on a workstation does not offer /filter and /bind to the network.
        host: '127.0.0.1',
        port: 8080,
        userPort: 8081,
        extenderDeadlineMs: 25000,
        eventSourceComponent: 'hami-scheduler',
        managedResources: MANAGED,
        controlPlane: { url: 'http://127.0.0.1:8080', auth: 'token', token: 'secret-token' },
        nudge: { perSecond: 10, windowMs: 30_000 },
        extender: { tls: 'off', certDir: '/tls', clientName: 'hami-scheduler', clientSecretName: 'hami-scheduler-extender-tls' },
        // kube-apiserver's delegating authentication and authorization keep answers 10 s too.
        user: { tls: 'off', certDir: '/tls', reviewCacheMs: 10_000, tokenReviews: { perClient: 30, overall: 300 } },
      }),
    );
  });

  it('makes the extender port\'s transport an explicit choice: plain HTTP only when asked for', () => {
    expect(() => loadConfigFrom({ HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/', RELAY_USER_TLS: 'off' })).toThrow(/RELAY_EXTENDER_TLS: must be self-managed, files or off/);
    expect(() => loadConfigFrom({ HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/', RELAY_USER_TLS: 'off', RELAY_EXTENDER_TLS: 'self-managed' })).toThrow(/POD_NAMESPACE/);
    expect(loadConfigFrom({ HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/', RELAY_USER_TLS: 'off', RELAY_EXTENDER_TLS: 'files' }).extender.tls).toBe('files');
  });

  it("makes the user port's transport an explicit choice too: HTTPS from the webhook's machinery, plain HTTP only when asked for", () => {
    expect(() => loadConfigFrom({ HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/', RELAY_EXTENDER_TLS: 'off' })).toThrow(/RELAY_USER_TLS: must be self-managed, files or off/);
    expect(() => loadConfigFrom({ HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/', RELAY_EXTENDER_TLS: 'off', RELAY_USER_TLS: 'self-managed' })).toThrow(/POD_NAMESPACE/);
    expect(loadConfigFrom({ HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/', RELAY_EXTENDER_TLS: 'off', RELAY_USER_TLS: 'files', RELAY_USER_CERT_DIR: '/certs' }).user).toEqual({ tls: 'files', certDir: '/certs', reviewCacheMs: 10_000, tokenReviews: { perClient: 30, overall: 300 } });
    expect(loadConfigFrom({ HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/', RELAY_EXTENDER_TLS: 'off', RELAY_USER_TLS: 'off', RELAY_REVIEW_CACHE_SECONDS: '0' }).user.reviewCacheMs).toBe(0);
    expect(() => loadConfigFrom({ HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/', RELAY_EXTENDER_TLS: 'off', RELAY_USER_TLS: 'off', RELAY_REVIEW_CACHE_SECONDS: '301' })).toThrow(/RELAY_REVIEW_CACHE_SECONDS/);
    expect(loadConfigFrom({ HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/', RELAY_EXTENDER_TLS: 'off', RELAY_USER_TLS: 'off', RELAY_TOKEN_REVIEWS_PER_CLIENT: '5', RELAY_TOKEN_REVIEWS: '50' }).user.tokenReviews).toEqual({ perClient: 5, overall: 50 });
    expect(() => loadConfigFrom({ HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/', RELAY_EXTENDER_TLS: 'off', RELAY_USER_TLS: 'off', RELAY_TOKEN_REVIEWS_PER_CLIENT: '0' })).toThrow(/RELAY_TOKEN_REVIEWS_PER_CLIENT: must be an integer between 1 and 100000/);
  });

  it('sends a backlog of cluster events in larger batches, each under Lambda\'s request limit (docs/relay.md)', () => {
    const url = { HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:8080/' };
    expect(loadRelayConfig(url).batch).toEqual({ maxEvents: 100, backlogEvents: 500, maxBytes: 4 * 1024 * 1024, maxDelayMs: 200 });
    // A batch never carries fewer than fill it: the backlog size follows a larger RELAY_BATCH_MAX_EVENTS unless set.
    expect(loadRelayConfig({ ...url, RELAY_BATCH_MAX_EVENTS: '800' }).batch.backlogEvents).toBe(800);
    expect(loadRelayConfig({ ...url, RELAY_BATCH_MAX_EVENTS: '2', RELAY_BATCH_BACKLOG_EVENTS: '2' }).batch).toEqual(expect.objectContaining({ maxEvents: 2, backlogEvents: 2 }));
    expect(() => loadRelayConfig({ ...url, RELAY_BATCH_MAX_EVENTS: '200', RELAY_BATCH_BACKLOG_EVENTS: '100' })).toThrow(/RELAY_BATCH_BACKLOG_EVENTS: must not be below RELAY_BATCH_MAX_EVENTS/);
    // The control plane takes at most 5,000 events a batch, and Lambda a request of at most 6 MB.
    expect(() => loadRelayConfig({ ...url, RELAY_BATCH_BACKLOG_EVENTS: '5001' })).toThrow(/RELAY_BATCH_BACKLOG_EVENTS: must be an integer between 1 and 5000/);
    expect(() => loadRelayConfig({ ...url, RELAY_BATCH_MAX_EVENTS: '10000' })).toThrow(/RELAY_BATCH_MAX_EVENTS/);
    expect(() => loadRelayConfig({ ...url, RELAY_BATCH_MAX_BYTES: '5000000' })).toThrow(/RELAY_BATCH_MAX_BYTES: must be an integer between 65536 and 4500000/);
    expect(loadRelayConfig({ ...url, RELAY_BATCH_MAX_BYTES: '1048576' }).batch.maxBytes).toBe(1_048_576);
  });

  it('reports every problem at once, naming each variable', () => {
    let error: unknown;
    try {
      loadRelayConfig({ HAMI_CONTROL_PLANE_URL: 'ftp://x', RELAY_PORT: 'eighty', RELAY_BATCH_MAX_EVENTS: '0', HAMI_CONTROL_PLANE_AUTH: 'iam' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(RelayConfigError);
    const problems = (error as RelayConfigError).problems.join('\n');
    for (const key of ['HAMI_CONTROL_PLANE_URL', 'RELAY_PORT', 'RELAY_BATCH_MAX_EVENTS']) expect(problems).toContain(key);
  });

  it('requires a region (not keys: IRSA and Pod Identity supply credentials) for IAM signing, and a token for token auth', () => {
    expect(() => loadRelayConfig({ HAMI_CONTROL_PLANE_URL: 'https://x.example', HAMI_CONTROL_PLANE_AUTH: 'iam' })).toThrow(/AWS_REGION/);
    expect(loadRelayConfig({ HAMI_CONTROL_PLANE_URL: 'https://x.example', HAMI_CONTROL_PLANE_AUTH: 'iam', AWS_REGION: 'eu-west-1' }).controlPlane.auth).toBe('iam');
    expect(loadRelayConfig({ HAMI_CONTROL_PLANE_URL: 'https://x.example', AWS_REGION: 'eu-west-1', AWS_WEB_IDENTITY_TOKEN_FILE: '/var/run/secrets/eks.amazonaws.com/serviceaccount/token' }).controlPlane.auth).toBe('iam');
    expect(() => loadRelayConfig({ HAMI_CONTROL_PLANE_URL: 'https://x.example', HAMI_CONTROL_PLANE_AUTH: 'iam', AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AK' })).toThrow(/AWS_SECRET_ACCESS_KEY/);
    expect(() => loadRelayConfig({ HAMI_CONTROL_PLANE_URL: 'https://x.example', HAMI_CONTROL_PLANE_AUTH: 'token' })).toThrow(/HAMI_API_TOKEN/);
    const iam = loadRelayConfig({ HAMI_CONTROL_PLANE_URL: 'https://x.example', AWS_DEFAULT_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AK', AWS_SECRET_ACCESS_KEY: 'SK' });
    expect(iam.controlPlane).toEqual({ url: 'https://x.example', auth: 'iam', region: 'eu-west-1' });
  });
});

describe('loadRelayConfig: the admission webhook', () => {
  const base = { HAMI_CONTROL_PLANE_URL: 'https://abc.execute-api.eu-west-1.amazonaws.com', HAMI_CONTROL_PLANE_AUTH: 'none', RELAY_EXTENDER_TLS: 'off', RELAY_USER_TLS: 'off' };

  it('is off by default, and takes the engine settings from the control plane\'s own variables', () => {
    const c = loadConfigFrom({ ...base, HAMI_RESOURCE_COUNT_NAME: 'example.com/vgpu', HAMI_DEFAULT_MEMORY: '1024' });
    expect(c.webhook).toEqual(expect.objectContaining({ tls: 'off', port: 8443, secretName: 'hami-relay-webhook-tls', configurationName: 'hami-webhook', serviceName: 'hami-relay', checkIntervalMs: 60_000 }));
    expect(c.admission).toEqual(expect.objectContaining({ schedulerName: 'hami-scheduler', defaultGpuNum: 1 }));
    expect(c.admission.engine).toEqual(expect.objectContaining({ resourceCountName: 'example.com/vgpu', resourceMemoryName: 'nvidia.com/gpumem', defaultMemory: 1024 }));
    expect(c.managedResources).toEqual(['example.com/vgpu', 'nvidia.com/gpumem', 'nvidia.com/gpumem-percentage', 'nvidia.com/gpucores', 'aws.amazon.com/neuron', 'aws.amazon.com/neuroncore']);
    const neuronNamed = loadConfigFrom({ ...base, HAMI_RESOURCE_NEURON_NAME: 'example.com/chip', HAMI_RESOURCE_NEURONCORE_NAME: 'example.com/core' });
    expect(neuronNamed.managedResources.slice(4)).toEqual(['example.com/chip', 'example.com/core']);
    expect(neuronNamed.admission.engine).toEqual(expect.objectContaining({ neuronResourceName: 'example.com/chip', neuronCoreResourceName: 'example.com/core' }));
  });

  it('decides ahead unless HAMI_DECIDE_AHEAD=false, and refuses any other value', () => {
    expect(loadConfigFrom(base).ahead.enabled).toBe(true);
    expect(loadConfigFrom({ ...base, HAMI_DECIDE_AHEAD: 'false' }).ahead.enabled).toBe(false);
    expect(() => loadConfigFrom({ ...base, HAMI_DECIDE_AHEAD: 'off' })).toThrow('HAMI_DECIDE_AHEAD: must be true or false');
  });

  it("holds decisions made ahead for the control plane's reservation TTL (HAMI_RESERVATION_TTL_SECONDS, default 600 s)", () => {
    expect(loadConfigFrom(base).ahead.reservationTtlMs).toBe(600_000);
    expect(loadConfigFrom({ ...base, HAMI_RESERVATION_TTL_SECONDS: '120' }).ahead.reservationTtlMs).toBe(120_000);
  });

  it('takes the control plane as cold again after a minute without a decide-ahead answer unless RELAY_AHEAD_COLD_AFTER_MS says otherwise', () => {
    expect(loadConfigFrom(base).ahead.coldAfterMs).toBe(60_000);
    expect(loadConfigFrom({ ...base, RELAY_AHEAD_COLD_AFTER_MS: '300000' }).ahead.coldAfterMs).toBe(300_000);
    expect(() => loadConfigFrom({ ...base, RELAY_AHEAD_COLD_AFTER_MS: '10' })).toThrow('RELAY_AHEAD_COLD_AFTER_MS: must be an integer between 1000 and 86400000');
  });

  it.each([
    [{ RELAY_WEBHOOK_TLS: 'self-managed' }, 'POD_NAMESPACE'],
    [{ RELAY_WEBHOOK_TLS: 'letsencrypt' }, 'RELAY_WEBHOOK_TLS'],
    [{ RELAY_WEBHOOK_TLS: 'files', RELAY_WEBHOOK_PORT: '8080' }, 'RELAY_WEBHOOK_PORT'],
    [{ HAMI_MEMORY_FACTOR: '0' }, 'HAMI_MEMORY_FACTOR'],
    [{ HAMI_RESERVATION_TTL_SECONDS: '5' }, 'HAMI_RESERVATION_TTL_SECONDS'],
    [{ HAMI_CONTROL_PLANE_URL: 'https://REPLACE-ME.execute-api.eu-west-1.amazonaws.com' }, 'HAMI_CONTROL_PLANE_URL: still holds the placeholder'],
  ])('refuses %j naming %s', (env, named) => {
    expect(() => loadConfigFrom({ ...base, ...env })).toThrow(named);
  });
});

describe('SigV4 signing for API Gateway', () => {
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'session-token-1' };
  const signer = sigV4Signer({ region: 'eu-west-1', credentials: () => credentials, now: () => new Date('2025-05-01T10:00:00Z') });
  const request = (body: string) => ({
    method: 'POST' as const,
    url: new URL('https://abc123.execute-api.eu-west-1.amazonaws.com/prod/filter'),
    headers: { 'content-type': 'application/json' },
    body,
  });

  it('adds an AWS4-HMAC-SHA256 Authorization header scoped to the date, region and execute-api', async () => {
    const headers = await signer(request('{"Pod":{}}'));
    expect(headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20250501\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
    );
    expect(headers['x-amz-date']).toBe('20250501T100000Z');
    expect(headers['x-amz-security-token']).toBe('session-token-1');
    expect(headers['content-type']).toBe('application/json');
  });

  it('computes the signature SigV4 defines (a known answer, the same as the JavaScript SHA-256 of the AWS SDK gives)', async () => {
    const dynamo = sigV4Signer({
      region: 'us-east-1',
      service: 'dynamodb',
      credentials: () => ({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'tok' }),
      now: () => new Date('2015-08-30T12:36:00Z'),
    });
    const headers = await dynamo({
      method: 'POST',
      url: new URL('https://dynamodb.us-east-1.amazonaws.com/'),
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'DynamoDB_20120810.GetItem' },
      body: '{"TableName":"t","Key":{"pk":{"S":"a"}}}',
    });
    expect(headers.authorization).toBe(
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/dynamodb/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token;x-amz-target, Signature=38403a5839c1efcbbff4a4a3ddda168036af0d340514f887b7e3a65f9b50df48',
    );
  });

  it('is deterministic for the same request and changes with the body', async () => {
    const sig = (h: Record<string, string>) => /Signature=([0-9a-f]+)/.exec(h.authorization ?? '')?.[1];
    const a = sig(await signer(request('{"Pod":{}}')));
    const again = sig(await signer(request('{"Pod":{}}')));
    const b = sig(await signer(request('{"Pod":{"x":1}}')));
    expect(a).toBe(again);
    expect(b).not.toBe(a);
  });

  it('signs for IAM with the SDK credential chain (environment keys first)', async () => {
    const saved = { ...process.env };
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'session' });
    try {
      const headers = await signerFromConfig({ url: 'https://api.example.com', auth: 'iam', region: 'eu-west-1' } satisfies RelayConfig['controlPlane'])(request('{}'));
      expect(headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request/);
      expect(headers['x-amz-security-token']).toBe('session');
    } finally {
      process.env = saved;
    }
  });

  it('bearer signing sets the Authorization header', async () => {
    expect((await bearerSigner('tok')(request('')))).toEqual({ 'content-type': 'application/json', authorization: 'Bearer tok' });
  });
});

describe('EventCorrelator (client-go recorder semantics)', () => {
  const base = { namespace: 'team-a', name: 'job-0', uid: 'u1', type: 'Warning' as const, reason: 'FilteringFailed' };
  let clock = new Date('2025-05-01T10:00:00.250Z');
  const correlator = () => new EventCorrelator('hami-scheduler', () => clock);

  it('creates a named, counted event, then patches count and lastTimestamp for the same one', () => {
    clock = new Date('2025-05-01T10:00:00.250Z');
    const c = correlator();
    const first = c.correlate({ ...base, message: 'm1' });
    expect(first.action).toBe('create');
    if (first.action !== 'create') return;
    expect(first.event.metadata.name).toMatch(/^job-0\.[0-9a-f]+$/);
    expect(first.event).toEqual(expect.objectContaining({ count: 1, firstTimestamp: '2025-05-01T10:00:00Z', lastTimestamp: '2025-05-01T10:00:00Z', source: { component: 'hami-scheduler' } }));

    clock = new Date('2025-05-01T10:00:07Z');
    const second = c.correlate({ ...base, message: 'm1' });
    expect(second).toEqual(expect.objectContaining({ action: 'patch', name: first.event.metadata.name, patch: { count: 2, lastTimestamp: '2025-05-01T10:00:07Z', message: 'm1' } }));
  });

  it('keeps different reasons, messages and pods apart', () => {
    const c = correlator();
    const actions = [
      c.correlate({ ...base, message: 'm1' }),
      c.correlate({ ...base, message: 'm2' }),
      c.correlate({ ...base, reason: 'FilteringSucceed', type: 'Normal', message: 'm1' }),
      c.correlate({ ...base, name: 'job-1', message: 'm1' }),
    ].map((x) => x.action);
    expect(actions).toEqual(['create', 'create', 'create', 'create']);
  });

  it(`combines ${AGGREGATE_MAX_EVENTS} or more distinct messages for one object and reason into one event`, () => {
    const c = correlator();
    const results = Array.from({ length: AGGREGATE_MAX_EVENTS + 1 }, (_, i) => c.correlate({ ...base, message: `m${i}` }));
    expect(results[AGGREGATE_MAX_EVENTS - 1]).toEqual(
      expect.objectContaining({ action: 'create', event: expect.objectContaining({ message: `(combined from similar events): m${AGGREGATE_MAX_EVENTS - 1}` }) }),
    );
    expect(results[AGGREGATE_MAX_EVENTS]).toEqual(expect.objectContaining({ action: 'patch', patch: expect.objectContaining({ count: 2, message: `(combined from similar events): m${AGGREGATE_MAX_EVENTS}` }) }));
  });

  it('creates afresh after forget (the earlier event expired on the server)', () => {
    const c = correlator();
    const first = c.correlate({ ...base, message: 'm' });
    c.forget(first.cacheKey);
    expect(c.correlate({ ...base, message: 'm' }).action).toBe('create');
  });
});

describe('relevance rules', () => {
  const pod = (annotations: Record<string, string>, limits: Record<string, string>, init = false) => ({
    metadata: { name: 'p', namespace: 'ns', annotations },
    spec: { [init ? 'initContainers' : 'containers']: [{ name: 'c', resources: { limits } }] },
  });

  it.each([
    ['HAMi placed it', pod({ 'hami.io/vgpu-node': 'n1' }, {}), true],
    ['asks for nvidia.com/gpu', pod({}, { 'nvidia.com/gpu': '1' }), true],
    ['asks for gpumem in an init container', pod({}, { 'nvidia.com/gpumem': '100' }, true), true],
    ['asks for aws.amazon.com/neuron', pod({}, { 'aws.amazon.com/neuron': '1' }), true],
    ['asks for aws.amazon.com/neuroncore in an init container', pod({}, { 'aws.amazon.com/neuroncore': '2' }, true), true],
    ['asks only for cpu', pod({}, { cpu: '1' }), false],
    ['has unrelated annotations', pod({ 'example.com/x': 'y' }, {}), false],
  ])('a pod that %s matters: %s', (_case, p, expected) => {
    expect(podMatters(p, MANAGED)).toBe(expected);
  });

  it('forwards node changes of hami annotations, labels and allocatable, not heartbeats', () => {
    const t = new ChangeTracker('Node', MANAGED);
    const node = (over: Record<string, unknown> = {}) => ({
      metadata: { name: 'n1', labels: { a: '1' }, annotations: { 'hami.io/node-nvidia-register': '[]', 'other/x': '1' }, resourceVersion: '1' },
      status: { allocatable: { 'nvidia.com/gpu': '4' }, conditions: [{ type: 'Ready', lastHeartbeatTime: 't1' }] },
      ...over,
    });
    const decisions = [
      t.decide('ADDED', node()),
      t.decide('MODIFIED', node({ status: { allocatable: { 'nvidia.com/gpu': '4' }, conditions: [{ type: 'Ready', lastHeartbeatTime: 't2' }] } })),
      t.decide('MODIFIED', { ...node(), metadata: { ...node().metadata, annotations: { 'hami.io/node-nvidia-register': '[]', 'other/x': '2' } } }),
      t.decide('MODIFIED', { ...node(), metadata: { ...node().metadata, annotations: { 'hami.io/node-nvidia-register': '[{}]' } } }),
      t.decide('MODIFIED', { ...node(), metadata: { ...node().metadata, labels: { a: '2' } } }),
      t.decide('MODIFIED', node({ status: { allocatable: { 'nvidia.com/gpu': '0' } } })),
      t.decide('MODIFIED', node({ status: { allocatable: { 'nvidia.com/gpu': '0' } } }), true),
      t.decide('DELETED', node()),
    ];
    expect(decisions).toEqual(['forward', 'skip', 'skip', 'forward', 'forward', 'forward', 'forward', 'forward']);
  });

  it('forwards node changes of Neuron capacity and of the instance-type label (AWS Neuron devices come from them)', () => {
    const t = new ChangeTracker('Node', MANAGED);
    const node = (capacity: Record<string, string>, instanceType = 'trn1.32xlarge') => ({
      metadata: { name: 'trn', labels: { 'node.kubernetes.io/instance-type': instanceType }, resourceVersion: '1' },
      status: { capacity, allocatable: { 'aws.amazon.com/neuron': '16' }, conditions: [{ type: 'Ready', lastHeartbeatTime: 't1' }] },
    });
    const decisions = [
      t.decide('ADDED', node({ 'aws.amazon.com/neuron': '16', 'aws.amazon.com/neuroncore': '32' })),
      t.decide('MODIFIED', node({ 'aws.amazon.com/neuron': '16', 'aws.amazon.com/neuroncore': '32' })),
      t.decide('MODIFIED', node({ 'aws.amazon.com/neuron': '16', 'aws.amazon.com/neuroncore': '64' })),
      t.decide('MODIFIED', node({ 'aws.amazon.com/neuron': '16', 'aws.amazon.com/neuroncore': '64' }, 'trn2.48xlarge')),
    ];
    expect(decisions).toEqual(['forward', 'skip', 'forward', 'forward']);
    const forwarded = toForwardedObject('Node', node({ 'aws.amazon.com/neuron': '16', 'aws.amazon.com/neuroncore': '32' }));
    expect(forwarded).toMatchObject({ metadata: { labels: { 'node.kubernetes.io/instance-type': 'trn1.32xlarge' } }, status: { capacity: { 'aws.amazon.com/neuroncore': '32' } } });
  });

  it('forwards the deletion of a GPU pod, not of a plain one', () => {
    const t = new ChangeTracker('Pod', MANAGED);
    expect(t.decide('ADDED', pod({}, { cpu: '1' }))).toBe('skip');
    expect(t.decide('DELETED', pod({}, { cpu: '1' }))).toBe('skip');
    expect(t.decide('ADDED', pod({}, { 'nvidia.com/gpu': '1' }))).toBe('forward');
    expect(t.decide('DELETED', pod({}, { 'nvidia.com/gpu': '1' }))).toBe('forward');
  });

  it('sets kind/apiVersion, drops managedFields and node images, and writes dates as RFC 3339', () => {
    const out = toForwardedObject('Node', {
      metadata: { name: 'n1', managedFields: [{}], creationTimestamp: new Date('2025-05-01T10:00:00Z'), labels: undefined },
      status: { images: [{ names: ['x'] }], allocatable: { cpu: '1' } },
    });
    expect(out).toEqual({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', creationTimestamp: '2025-05-01T10:00:00Z' }, status: { allocatable: { cpu: '1' } } });
  });
});

describe('splitEffects', () => {
  it('removes Effects (any letter case) from the answer and validates them', () => {
    const ok = splitEffects({ NodeNames: ['n1'], effects: [{ kind: 'BindPod', namespace: 'a', name: 'b', uid: 'u', node: 'n1' }] });
    expect(ok).toEqual({ rest: { NodeNames: ['n1'] }, effects: [{ kind: 'BindPod', namespace: 'a', name: 'b', uid: 'u', node: 'n1' }] });
    const bad = splitEffects({ Effects: [{ kind: 'DeleteNode', name: 'x' }] });
    expect(bad.effects).toEqual([]);
    expect(bad.invalid).toMatch(/Effects\.0/);
  });
});

describe('small helpers', () => {
  it.each([
    [0, 100],
    [1, 200],
    [3, 800],
    [10, 5000],
  ])('backoff attempt %i waits %i ms (initial 100, max 5000)', (attempt, ms) => {
    expect(backoffMs(attempt, 100, 5000)).toBe(ms);
  });

  it.each([
    [undefined, undefined],
    ['Bearer abc.def', 'abc.def'],
    ['bearer abc', 'abc'],
    ['Basic abc', undefined],
    ['Bearer ', undefined],
  ])('bearerToken(%p) is %p', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });

  it('chooses KUBECONFIG, then ~/.kube/config, then in-cluster, and never falls back to localhost', () => {
    const exists = (files: string[]) => (p: string) => files.includes(p);
    expect(chooseKubeConfigSource({ KUBECONFIG: '/a/config' }, '/home/u', exists(['/a/config']))).toEqual({ kind: 'kubeconfig', detail: '/a/config' });
    expect(chooseKubeConfigSource({}, '/home/u', exists(['/home/u/.kube/config']))).toEqual({ kind: 'kubeconfig', detail: '/home/u/.kube/config' });
    expect(chooseKubeConfigSource({ KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' }, '/home/u', exists([]))).toEqual({
      kind: 'in-cluster',
      detail: 'https://10.0.0.1:443',
    });
    expect(() => chooseKubeConfigSource({}, '/home/u', exists([]))).toThrow(KubeConfigMissingError);
    expect(() => chooseKubeConfigSource({ KUBECONFIG: '/missing' }, '/home/u', exists([]))).toThrow(/KUBECONFIG names no existing file/);
  });
});
