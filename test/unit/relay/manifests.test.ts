/**
 * infra/k8s (rendered from the Helm chart; test/unit/infra/chart.test.ts keeps it current): every manifest parses
 * and matches a schema for its kind (strict where a mistake would break or over-privilege the deployment), RBAC
 * is exactly least privilege, and the scheduler's extender config points at the relay Service.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { DEFAULT_MANAGED_RESOURCES, loadRelayConfig } from '../../../lib/relay/config';
import { renderedManifests } from '../../support/chart';

const DIR = join(__dirname, '../../../infra/k8s');

type Manifest = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } } & Record<string, unknown>;

const name = z.string().regex(/^[a-z0-9]([-a-z0-9.:]*[a-z0-9])?$/);
const labels = z.record(z.string(), z.string());
const meta = (namespaced: boolean) =>
  z.object({ name, namespace: namespaced ? name : z.never().optional(), labels: labels.optional(), annotations: labels.optional() });

const probe = z
  .object({
    httpGet: z.object({ path: z.string().startsWith('/'), port: z.union([z.number().int(), z.string()]), scheme: z.enum(['HTTP', 'HTTPS']).optional() }),
    initialDelaySeconds: z.number().int().optional(),
    periodSeconds: z.number().int().positive().optional(),
    timeoutSeconds: z.number().int().positive().optional(),
    failureThreshold: z.number().int().positive().optional(),
  })
  .strict();
const quantity = z.union([z.string(), z.number()]);
const container = z.object({
  name,
  image: z.string().regex(/^[^:\s]+(:[\w.-]+)$/, 'image must carry an explicit tag'),
  ports: z.array(z.object({ name: z.string().optional(), containerPort: z.number().int(), protocol: z.literal('TCP').optional() }).strict()).optional(),
  livenessProbe: probe,
  // The node agent has no readiness (it serves nothing); the relay's is asserted below.
  readinessProbe: probe.optional(),
  resources: z.object({
    requests: z.object({ cpu: quantity, memory: quantity }).strict(),
    limits: z.object({ cpu: quantity, memory: quantity }).strict(),
  }),
  securityContext: z.object({ allowPrivilegeEscalation: z.literal(false) }).loose(),
});
const podTemplate = z.object({
  metadata: z.object({ labels }),
  spec: z.object({ serviceAccountName: name, containers: z.array(container).min(1) }).loose(),
});
const workloadSpec = z.object({ selector: z.object({ matchLabels: labels }).strict(), template: podTemplate }).loose();
const policyRule = z
  .object({
    apiGroups: z.array(z.string()),
    resources: z.array(z.string()).min(1),
    resourceNames: z.array(z.string()).optional(),
    verbs: z.array(z.enum(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'])).min(1),
  })
  .strict();
const subject = z.object({ kind: z.literal('ServiceAccount'), name, namespace: name }).strict();
const roleRef = z.object({ apiGroup: z.literal('rbac.authorization.k8s.io'), kind: z.enum(['ClusterRole', 'Role']), name }).strict();

const selector = z.object({ matchExpressions: z.array(z.object({ key: z.string(), operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']), values: z.array(z.string()).optional() }).strict()) }).strict();
const schemas: Record<string, z.ZodType> = {
  'v1/Namespace': z.object({ metadata: meta(false) }).loose(),
  'admissionregistration.k8s.io/v1/MutatingWebhookConfiguration': z
    .object({
      metadata: meta(false),
      webhooks: z
        .array(
          z
            .object({
              name: z.string().includes('.'),
              admissionReviewVersions: z.array(z.literal('v1')).length(1),
              sideEffects: z.literal('None'),
              failurePolicy: z.enum(['Ignore', 'Fail']),
              timeoutSeconds: z.number().int().min(1).max(30),
              clientConfig: z.object({ service: z.object({ name, namespace: name, path: z.string(), port: z.number().int() }).strict(), caBundle: z.string().optional() }).strict(),
              rules: z.array(z.object({ apiGroups: z.array(z.string()), apiVersions: z.array(z.string()), operations: z.array(z.string()), resources: z.array(z.string()), scope: z.string() }).strict()),
              namespaceSelector: selector,
              objectSelector: selector,
            })
            .loose(),
        )
        .min(1),
    })
    .loose(),
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy': z.object({ metadata: meta(false), spec: z.object({ failurePolicy: z.literal('Fail') }).loose() }).loose(),
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': z.object({ metadata: meta(false), spec: z.object({ policyName: name, validationActions: z.array(z.literal('Deny')) }).strict() }).loose(),
  'v1/ServiceAccount': z.object({ metadata: meta(true) }).loose(),
  'v1/ConfigMap': z.object({ metadata: meta(true), data: z.record(z.string(), z.string()) }).loose(),
  'v1/Service': z
    .object({
      metadata: meta(true),
      spec: z.object({
        type: z.enum(['ClusterIP']).optional(),
        selector: labels,
        ports: z.array(z.object({ name: z.string(), port: z.number().int(), targetPort: z.union([z.number().int(), z.string()]) }).strict()).min(1),
      }),
    })
    .loose(),
  'apps/v1/Deployment': z.object({ metadata: meta(true), spec: workloadSpec.extend({ replicas: z.number().int().positive() }) }).loose(),
  'apps/v1/DaemonSet': z.object({ metadata: meta(true), spec: workloadSpec }).loose(),
  'policy/v1/PodDisruptionBudget': z
    .object({ metadata: meta(true), spec: z.object({ minAvailable: z.number().int().positive(), selector: z.object({ matchLabels: labels }).strict() }).strict() })
    .loose(),
  'networking.k8s.io/v1/NetworkPolicy': z.object({ metadata: meta(true), spec: z.object({ podSelector: z.object({ matchLabels: labels }) }).loose() }).loose(),
  'rbac.authorization.k8s.io/v1/ClusterRole': z.object({ apiVersion: z.string(), kind: z.string(), metadata: meta(false), rules: z.array(policyRule).min(1) }).strict(),
  'rbac.authorization.k8s.io/v1/Role': z.object({ metadata: meta(true), rules: z.array(policyRule).min(1) }).loose(),
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': z.object({ metadata: meta(false), roleRef, subjects: z.array(subject).min(1) }).loose(),
  'rbac.authorization.k8s.io/v1/RoleBinding': z.object({ metadata: meta(true), roleRef, subjects: z.array(subject).min(1) }).loose(),
};

const kustomization = z
  .object({
    apiVersion: z.literal('kustomize.config.k8s.io/v1beta1'),
    kind: z.literal('Kustomization'),
    resources: z.array(z.string().endsWith('.yaml')).min(1),
  })
  .strict()
  .parse(parseAllDocuments(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8'))[0]?.toJS());

const manifests = renderedManifests().map(({ file, object }) => ({ file, m: object as Manifest }));
const all = manifests.map((x) => x.m);
const find = (kind: string, n: string) => {
  const found = all.find((m) => m.kind === kind && m.metadata.name === n);
  if (!found) throw new Error(`${kind} ${n} missing`);
  return found as Manifest & { spec: Record<string, unknown>; data?: Record<string, string>; rules?: unknown };
};

describe('infra/k8s kustomization', () => {
  it('lists every manifest in the directory, with no kustomize feature newer than kubectl 1.27 needs (no `labels:`)', () => {
    const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(files.sort());
  });

  it.each(manifests.map(({ file, m }) => [`${file}: ${m.kind} ${m.metadata?.name}`, m] as const))('%s matches its schema', (_label, m) => {
    const schema = schemas[`${m.apiVersion}/${m.kind}`];
    expect(schema).toBeDefined();
    const result = schema!.safeParse(m);
    expect(result.success ? [] : result.error.issues).toEqual([]);
  });

  it('has no duplicate objects', () => {
    const keys = all.map((m) => `${m.kind}/${m.metadata.namespace ?? ''}/${m.metadata.name}`);
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe('relay workload', () => {
  const deployment = find('Deployment', 'hami-relay');
  const spec = deployment.spec as z.infer<typeof workloadSpec> & { replicas: number };
  const podLabels = spec.template.metadata.labels;
  const relayContainer = spec.template.spec.containers[0]!;

  it('runs two replicas, protected by a PodDisruptionBudget that selects them', () => {
    expect(spec.replicas).toBe(2);
    expect(Object.entries(spec.selector.matchLabels).every(([k, val]) => podLabels[k] === val)).toBe(true);
    const pdb = find('PodDisruptionBudget', 'hami-relay').spec as { minAvailable: number; selector: { matchLabels: Record<string, string> } };
    expect(pdb.minAvailable).toBeLessThan(spec.replicas);
    expect(Object.entries(pdb.selector.matchLabels).every(([k, val]) => podLabels[k] === val)).toBe(true);
  });

  it('probes /healthz for liveness and /readyz for readiness on a declared port', () => {
    const portNames = (relayContainer.ports ?? []).flatMap((p) => [p.name, p.containerPort]);
    expect(relayContainer.livenessProbe.httpGet.path).toBe('/healthz');
    expect(relayContainer.readinessProbe?.httpGet.path).toBe('/readyz');
    expect(portNames).toContain(relayContainer.livenessProbe.httpGet.port);
    expect(portNames).toContain(relayContainer.readinessProbe?.httpGet.port);
  });

  it('grants the relay exactly the least-privilege rules', () => {
    const rules = (find('ClusterRole', 'hami-relay').rules as z.infer<typeof policyRule>[]).flatMap((r) =>
      r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${g || 'core'}/${res}:${v}`))),
    );
    expect(rules.sort()).toEqual(
      [
        'core/nodes:get', 'core/nodes:list', 'core/nodes:watch', 'core/nodes:patch',
        'core/resourcequotas:get', 'core/resourcequotas:list', 'core/resourcequotas:watch',
        'core/pods:get', 'core/pods:list', 'core/pods:watch', 'core/pods:patch',
        'core/pods/binding:create',
        // GPU-aware preemption evicts through the Eviction API (docs/preemption.md).
        'core/pods/eviction:create',
        'core/events:create', 'core/events:patch',
        'authentication.k8s.io/tokenreviews:create',
        'authorization.k8s.io/subjectaccessreviews:create',
        'admissionregistration.k8s.io/mutatingwebhookconfigurations:get',
        'admissionregistration.k8s.io/mutatingwebhookconfigurations:update',
      ].sort(),
    );
    // The webhook configuration it may change is its own only.
    const webhookRule = (find('ClusterRole', 'hami-relay').rules as z.infer<typeof policyRule>[]).find((r) => r.resources.includes('mutatingwebhookconfigurations'));
    expect(webhookRule?.resourceNames).toEqual([find('MutatingWebhookConfiguration', 'hami-webhook').metadata.name]);
    const binding = find('ClusterRoleBinding', 'hami-relay') as unknown as { roleRef: { name: string }; subjects: { name: string; namespace: string }[] };
    expect(binding.roleRef.name).toBe('hami-relay');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: spec.template.spec.serviceAccountName, namespace: deployment.metadata.namespace }]);
    find('ServiceAccount', spec.template.spec.serviceAccountName);
  });

  it('every binding names a ServiceAccount defined here', () => {
    const accounts = all.filter((m) => m.kind === 'ServiceAccount').map((m) => `${m.metadata.namespace}/${m.metadata.name}`);
    for (const b of all.filter((m) => m.apiVersion.startsWith('rbac.') && m.kind.endsWith('Binding'))) {
      for (const s of (b as unknown as { subjects: { name: string; namespace: string }[] }).subjects) expect(accounts).toContain(`${s.namespace}/${s.name}`);
    }
  });
});

describe('relay configuration', () => {
  it('is accepted by the relay, once the control-plane URL is set', () => {
    const data = find('ConfigMap', 'hami-relay').data ?? {};
    expect(() => loadRelayConfig(data)).toThrow(/HAMI_CONTROL_PLANE_URL: still holds the placeholder/);
    const relayPods = find('Deployment', 'hami-relay').spec as z.infer<typeof workloadSpec>;
    const env = Object.fromEntries(
      ((relayPods.template.spec.containers[0] as unknown as { env: { name: string; value?: string }[] }).env ?? []).map((e) => [e.name, e.value ?? 'hami-system']),
    );
    const config = loadRelayConfig({ ...data, ...env, HAMI_CONTROL_PLANE_URL: 'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com' });
    expect(config.webhook).toEqual(expect.objectContaining({ tls: 'self-managed', port: 8443, namespace: 'hami-system', configurationName: 'hami-webhook', serviceName: 'hami-relay' }));
    // The extender port requires kube-scheduler's client certificate, issued by the relay's own CA.
    expect(config.extender).toEqual({ tls: 'self-managed', certDir: '/tls', clientName: 'hami-scheduler', clientSecretName: 'hami-scheduler-extender-tls' });
    expect(config.nudge).toEqual({ perSecond: 10, windowMs: 30_000 });
    expect(config.controlPlane).toEqual({ url: 'https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com', auth: 'iam', region: 'eu-west-1' });
  });
});

describe('kube-scheduler configuration', () => {
  const configMap = find('ConfigMap', 'hami-scheduler');
  const extenderSchema = z
    .object({
      urlPrefix: z.url(),
      filterVerb: z.literal('filter'),
      bindVerb: z.literal('bind'),
      enableHTTPS: z.boolean().optional(),
      tlsConfig: z.object({ serverName: z.string(), caFile: z.string(), certFile: z.string(), keyFile: z.string() }).strict().optional(),
      nodeCacheCapable: z.literal(true),
      weight: z.number().int().positive().optional(),
      httpTimeout: z.string().regex(/^\d+s$/),
      managedResources: z.array(z.object({ name: z.string(), ignoredByScheduler: z.literal(true) }).strict()),
    })
    .strict();
  const config = z
    .object({
      apiVersion: z.literal('kubescheduler.config.k8s.io/v1'),
      kind: z.literal('KubeSchedulerConfiguration'),
      profiles: z.array(z.object({ schedulerName: z.literal('hami-scheduler') }).loose()).min(1),
      extenders: z.array(extenderSchema).length(1),
    })
    .loose()
    .parse(parseAllDocuments(configMap.data?.['config.yaml'] ?? '')[0]?.toJS());
  const extender = config.extenders[0]!;

  it("manages exactly the GPU resources and HAMi's task priority, ignored by the scheduler, with a 30s timeout", () => {
    expect(extender.managedResources.map((r) => r.name)).toEqual([...DEFAULT_MANAGED_RESOURCES, 'nvidia.com/priority']);
    expect(extender.httpTimeout).toBe('30s');
  });

  it("points urlPrefix at the relay Service's extender port", () => {
    const url = new URL(extender.urlPrefix);
    const service = find('Service', 'hami-relay');
    expect(url.hostname).toMatch(new RegExp(`^${service.metadata.name}\\.${service.metadata.namespace}\\.svc(\\.cluster\\.local)?$`));
    const port = (service.spec.ports as { port: number; targetPort: string | number }[]).find((p) => p.port === Number(url.port));
    expect(port).toBeDefined();
    const relayPods = find('Deployment', 'hami-relay').spec as z.infer<typeof workloadSpec>;
    const containerPort = relayPods.template.spec.containers[0]!.ports?.find((p) => p.name === port!.targetPort || p.containerPort === port!.targetPort);
    const relayEnv = (relayPods.template.spec.containers[0] as unknown as { env: { name: string; value: string }[] }).env;
    expect(String(containerPort?.containerPort)).toBe(relayEnv.find((e) => e.name === 'RELAY_PORT')?.value);
    expect(Object.entries(service.spec.selector as Record<string, string>).every(([k, val]) => relayPods.template.metadata.labels[k] === val)).toBe(true);
  });

  it("speaks TLS to the relay, checks its certificate for the Service's name, and presents the client certificate the relay issues", () => {
    expect(new URL(extender.urlPrefix).protocol).toBe('https:');
    expect(extender.enableHTTPS).toBe(true);
    const tls = extender.tlsConfig!;
    expect(new URL(extender.urlPrefix).hostname).toBe(tls.serverName);
    const spec = find('Deployment', 'hami-scheduler').spec as { template: { spec: { containers: { volumeMounts: { name: string; mountPath: string }[] }[]; volumes: { name: string; secret?: { secretName: string } }[] } } };
    const volume = spec.template.spec.volumes.find((v) => v.secret !== undefined);
    const mount = spec.template.spec.containers[0]!.volumeMounts.find((m) => m.name === volume?.name);
    expect(volume?.secret?.secretName).toBe(find('ConfigMap', 'hami-relay').data?.RELAY_EXTENDER_CLIENT_SECRET);
    expect([tls.caFile, tls.certFile, tls.keyFile]).toEqual([`${mount?.mountPath}/ca.crt`, `${mount?.mountPath}/tls.crt`, `${mount?.mountPath}/tls.key`]);
    // The relay may write that Secret (and only it, besides its own).
    const role = find('Role', 'hami-relay-webhook-tls').rules as { verbs: string[]; resourceNames?: string[] }[];
    expect(role.find((r) => r.verbs.includes('update'))?.resourceNames).toEqual(['hami-relay-webhook-tls', volume?.secret?.secretName]);
  });

  it("keeps the relay's answer deadline below the scheduler's httpTimeout", () => {
    const deadlineMs = Number(find('ConfigMap', 'hami-relay').data?.RELAY_EXTENDER_DEADLINE_MS);
    expect(deadlineMs).toBeGreaterThan(0);
    expect(deadlineMs).toBeLessThan(Number(extender.httpTimeout.slice(0, -1)) * 1000);
  });

  it('runs kube-scheduler with that config file mounted from the ConfigMap', () => {
    const spec = find('Deployment', 'hami-scheduler').spec as { template: { spec: { containers: { command: string[]; volumeMounts: { name: string; mountPath: string }[] }[]; volumes: { name: string; configMap: { name: string } }[] } } };
    const c = spec.template.spec.containers[0]!;
    const configArg = c.command.find((a) => a.startsWith('--config='))?.slice('--config='.length);
    const volume = spec.template.spec.volumes.find((v) => v.configMap.name === configMap.metadata.name);
    const mount = c.volumeMounts.find((m) => m.name === volume?.name);
    expect(configArg).toBe(`${mount?.mountPath}/config.yaml`);
  });
});
