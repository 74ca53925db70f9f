/**
 * The chart on every Kubernetes version Chart.yaml admits (1.27 and later) and with a HAMi user's values file, with
 * a real Helm 4 (test/support/chart.ts): objects whose API the cluster lacks are left out and the NOTES say what
 * that costs, kube-scheduler follows the cluster's version unless pinned, and HAMi's keys (resourceName,
 * resourceMem, resourceMemPercentage, resourceCores, resourcePriority, scheduler.kubeScheduler.imageTag,
 * global.imageRegistry, fullnameOverride, nameOverride) reach the objects they map to, or fail naming both keys.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { loadRelayConfig } from '../../../lib/relay/config';
import { CHART, REQUIRED_VALUES, find, helm, parseObjects, type K8sObject } from '../../support/chart';

interface Container { name: string; image: string; env?: { name: string; value?: string }[] }
type PodSpec = { containers: Container[] };
const podSpec = (o: K8sObject) => (o.spec as { template: { spec: PodSpec } }).template.spec;
const images = (objects: readonly K8sObject[]) =>
  objects.filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet').flatMap((o) => podSpec(o).containers.map((c) => c.image));
const policyKinds = (objects: readonly K8sObject[]) =>
  objects.filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy')).map((o) => `${o.kind}/${o.metadata.name}`).sort();

/** `helm template` in hami-system with the required values; throws with Helm's message on failure. */
function render(args: readonly string[]): { objects: K8sObject[]; text: string } {
  const result = helm(['template', 'hami-explain', CHART, '--namespace', 'hami-system', ...REQUIRED_VALUES, ...args]);
  if (result.status !== 0) throw new Error(`helm template failed: ${result.stderr}`);
  return { objects: parseObjects(result.stdout), text: result.stdout };
}

function refused(args: readonly string[]): string {
  const result = helm(['template', 'hami-explain', CHART, '--namespace', 'hami-system', '--kube-version', '1.31.0', ...REQUIRED_VALUES, ...args]);
  expect(result.status).not.toBe(0);
  return result.stderr;
}

interface SchedulerConfig {
  apiVersion: string;
  leaderElection: Record<string, unknown>;
  profiles: Record<string, unknown>[];
  extenders: ({ managedResources: { name: string }[]; tlsConfig?: Record<string, unknown> } & Record<string, unknown>)[];
}
const schedulerConfig = (objects: readonly K8sObject[], name = 'hami-scheduler') =>
  parseAllDocuments(String((find(objects, 'ConfigMap', name).data as Record<string, string>)['config.yaml']))[0]?.toJS() as SchedulerConfig;
const schedulerImage = (objects: readonly K8sObject[], name = 'hami-scheduler') => podSpec(find(objects, 'Deployment', name)).containers[0]?.image;

/** What the relay loads in its pod: its ConfigMap plus the container's literal env. */
function relayEnvironment(objects: readonly K8sObject[], name: string): Record<string, string> {
  const container = podSpec(find(objects, 'Deployment', name)).containers[0] as Container;
  const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? 'hami-system']));
  return { ...(find(objects, 'ConfigMap', name).data as Record<string, string>), ...env };
}

/**
 * The NOTES as `helm install` prints them, for a cluster `helm install --dry-run=client` cannot pretend to be (it has
 * no --kube-version): a copy of the chart renders NOTES.txt as an object's field, `helm template --kube-version`.
 */
function notesFor(args: readonly string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'hami-notes-'));
  try {
    const chart = join(dir, 'hami-explain');
    cpSync(CHART, chart, { recursive: true });
    const notes = readFileSync(join(chart, 'templates/NOTES.txt'), 'utf8');
    writeFileSync(join(chart, 'templates/_notes-harness.tpl'), `{{- define "test.notes" -}}\n${notes}\n{{- end -}}\n`);
    writeFileSync(join(chart, 'templates/notes-harness.yaml'), 'kind: Notes\ntext: {{ include "test.notes" . | toJson }}\n');
    const result = helm(['template', 'hami-explain', chart, '--namespace', 'hami-system', ...REQUIRED_VALUES, ...args, '--show-only', 'templates/notes-harness.yaml']);
    if (result.status !== 0) throw new Error(`helm template failed: ${result.stderr}`);
    return String((parseObjects(result.stdout)[0] as unknown as { text: string }).text);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every kind the chart renders, with the API that serves it in Kubernetes 1.27 (none of them newer). */
const SERVED_SINCE_1_27 = new Set([
  'v1/ServiceAccount', 'v1/ConfigMap', 'v1/Service', 'apps/v1/Deployment', 'apps/v1/DaemonSet', 'policy/v1/PodDisruptionBudget',
  'networking.k8s.io/v1/NetworkPolicy', 'rbac.authorization.k8s.io/v1/ClusterRole', 'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
  'rbac.authorization.k8s.io/v1/Role', 'rbac.authorization.k8s.io/v1/RoleBinding', 'admissionregistration.k8s.io/v1/MutatingWebhookConfiguration',
]);

describe('every Kubernetes version Chart.yaml admits', () => {
  const nodeAgentPolicy = ['ValidatingAdmissionPolicy/hami-node-agent-realtime-annotation-only', 'ValidatingAdmissionPolicyBinding/hami-node-agent-realtime-annotation-only'];
  const ownedPolicy = ['ValidatingAdmissionPolicy/hami-owned-annotations', 'ValidatingAdmissionPolicyBinding/hami-owned-annotations'];

  it.each([
    ['1.27.0', []],
    ['1.29.4', []],
    ['1.30.0', [...nodeAgentPolicy, ...ownedPolicy].sort()],
    ['1.33.1', [...nodeAgentPolicy, ...ownedPolicy].sort()],
  ])('Kubernetes %s: admission policies %j, kube-scheduler of that version with a config it reads', (version, policies) => {
    const { objects } = render(['--kube-version', version]);
    expect(policyKinds(objects)).toEqual(policies);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(expect.arrayContaining(['MutatingWebhookConfiguration/hami-webhook', 'DaemonSet/hami-node-agent', 'Deployment/hami-scheduler']));
    expect(schedulerImage(objects)).toBe(`registry.k8s.io/kube-scheduler:v${version}`);
    // kubescheduler.config.k8s.io/v1 is served by every kube-scheduler since 1.25.
    expect(schedulerConfig(objects).apiVersion).toBe('kubescheduler.config.k8s.io/v1');
  });

  it('the rendering for 1.27 (a client-side `helm template --kube-version`) holds only APIs a 1.27 apiserver serves', () => {
    const { objects, text } = render(['--kube-version', '1.27.0']);
    expect(text).not.toMatch(/kind: ValidatingAdmissionPolicy/);
    expect(objects.filter((o) => o.apiVersion === 'admissionregistration.k8s.io/v1').map((o) => o.kind)).toEqual(['MutatingWebhookConfiguration']);
    expect(objects.map((o) => `${o.apiVersion}/${o.kind}`).filter((k) => !SERVED_SINCE_1_27.has(k))).toEqual([]);
  });

  it("against a cluster, its discovery decides: a 1.29 that serves the v1 policies gets them, a 1.30 that does not, none", () => {
    // --api-versions stands in for discovery: Helm's offline list names no kind, a cluster's names v1/Pod and the rest.
    const served = render(['--kube-version', '1.29.4', '--api-versions', 'v1/Pod', '--api-versions', 'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy']);
    expect(policyKinds(served.objects)).toHaveLength(4);
    const notServed = render(['--kube-version', '1.30.2', '--api-versions', 'v1/Pod']);
    expect(policyKinds(notServed.objects)).toEqual([]);
  });

  it.each([
    ['v1.30.8-eks-2d5f260', 'v1.30.8'],
    ['v1.31.1+k3s1', 'v1.31.1'],
    ['v1.32.3-gke.1234000', 'v1.32.3'],
    ['1.28', 'v1.28.0'],
  ])('kube-scheduler follows the cluster: %s runs %s', (version, tag) => {
    expect(schedulerImage(render(['--kube-version', version]).objects)).toBe(`registry.k8s.io/kube-scheduler:${tag}`);
  });

  it('kube-scheduler is pinned by scheduler.image.tag, or by HAMi\'s scheduler.kubeScheduler.imageTag', () => {
    expect(schedulerImage(render(['--kube-version', '1.30.2', '--set', 'scheduler.image.tag=v1.30.8']).objects)).toBe('registry.k8s.io/kube-scheduler:v1.30.8');
    expect(schedulerImage(render(['--kube-version', '1.30.2', '--set', 'scheduler.kubeScheduler.imageTag=v1.30.9']).objects)).toBe('registry.k8s.io/kube-scheduler:v1.30.9');
    expect(schedulerImage(render(['--kube-version', '1.30.2', '--set', 'scheduler.image.repository=mirror.example.com/k8s/kube-scheduler']).objects)).toBe('mirror.example.com/k8s/kube-scheduler:v1.30.2');
  });

  it.each([
    ['Kubernetes 1.29', ['--kube-version', '1.29.4'], 'WARNING: no ValidatingAdmissionPolicy (Kubernetes v1.29.4 does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy; it needs >= 1.30).'],
    ['nodeAgent.admissionPolicy=false', ['--kube-version', '1.31.0', '--set', 'nodeAgent.admissionPolicy=false'], 'WARNING: no ValidatingAdmissionPolicy (nodeAgent.admissionPolicy=false).'],
  ])('NOTES say what the node agent may write without its policy: %s', (_case, args, warning) => {
    const notes = notesFor(args);
    const agent = notes.slice(notes.indexOf('Node writes by the node agent'));
    expect(agent).toContain('Node writes by the node agent (hami-node-agent, RBAC: patch on every Node):');
    expect(agent).toContain(warning);
    expect(agent).toContain("HAMi's device registration (hami.io/node-nvidia-register) included");
  });

  it('NOTES on 1.27: neither policy, each said once', () => {
    const irsa = ['--set', 'aws.roleArn=arn:aws:iam::111122223333:role/hami-relay'];
    const notes = notesFor(['--kube-version', '1.27.0', ...irsa]);
    expect(notes).toContain('WARNING: no ValidatingAdmissionPolicy (it needs Kubernetes >= 1.30). Only the webhook checks them');
    expect(notes.match(/WARNING/g)).toHaveLength(2);
    expect(notes).toContain("kube-scheduler runs registry.k8s.io/kube-scheduler:v1.27.0, the cluster's version (pin one with scheduler.image.tag).");
    const current = notesFor(['--kube-version', '1.30.0', ...irsa]);
    expect(current).toContain('narrowed by the ValidatingAdmissionPolicy hami-node-agent-realtime-annotation-only');
    expect(current).not.toContain('WARNING');
    expect(notesFor(['--kube-version', '1.30.0', ...irsa, '--set', 'scheduler.kubeScheduler.imageTag=v1.30.8'])).toContain('kube-scheduler runs registry.k8s.io/kube-scheduler:v1.30.8 (pinned).');
  });
});

describe("a HAMi user's values file (infra/helm/examples/hami-values.yaml)", () => {
  const { objects } = render(['--kube-version', 'v1.29.4-eks-2d5f260', '-f', 'infra/helm/examples/hami-values.yaml']);
  const hami = parseAllDocuments(readFileSync(join(CHART, '../examples/hami-values.yaml'), 'utf8'))[0]?.toJS() as Record<string, string>;

  it('names every object after fullnameOverride', () => {
    expect(hami.fullnameOverride).toBe('gpu');
    expect(objects.map((o) => o.metadata.name).filter((n) => !n.startsWith('gpu-'))).toEqual([]);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(expect.arrayContaining([
      'Deployment/gpu-relay', 'Deployment/gpu-scheduler', 'DaemonSet/gpu-node-agent', 'MutatingWebhookConfiguration/gpu-webhook',
    ]));
    // The objects point at each other under the new names.
    expect(schedulerConfig(objects, 'gpu-scheduler').extenders[0]?.urlPrefix).toBe('https://gpu-relay.hami-system.svc:8080');
    expect((find(objects, 'MutatingWebhookConfiguration', 'gpu-webhook').webhooks as { clientConfig: { service: { name: string } } }[])[0]?.clientConfig.service.name).toBe('gpu-relay');
  });

  it("gives the relay HAMi's resource names, and kube-scheduler all five to leave to the extender", () => {
    const config = loadRelayConfig(relayEnvironment(objects, 'gpu-relay'));
    expect(config.admission.engine).toEqual(expect.objectContaining({
      resourceCountName: hami.resourceName,
      resourceMemoryName: hami.resourceMem,
      resourceMemoryPercentageName: hami.resourceMemPercentage,
      resourceCoreName: hami.resourceCores,
    }));
    expect(config.managedResources.slice(0, 4)).toEqual([hami.resourceName, hami.resourceMem, hami.resourceMemPercentage, hami.resourceCores]);
    expect(schedulerConfig(objects, 'gpu-scheduler').extenders[0]?.managedResources.map((r) => r.name)).toEqual([
      'example.com/vgpu', 'example.com/vgpu-memory', 'example.com/vgpu-memory-percentage', 'example.com/vgpu-cores',
      'aws.amazon.com/neuron', 'aws.amazon.com/neuroncore', 'example.com/vgpu-priority',
    ]);
  });

  it('pulls every image from global.imageRegistry, kube-scheduler at the cluster\'s version', () => {
    expect(images(objects).sort()).toEqual([
      'registry.example.com:5000/hami-explain/relay:0.1.0', // the node agent's
      'registry.example.com:5000/hami-explain/relay:0.1.0',
      'registry.example.com:5000/kube-scheduler:v1.29.4',
    ]);
    expect(schedulerImage(objects, 'gpu-scheduler')).toBe('registry.example.com:5000/kube-scheduler:v1.29.4');
  });

  it('with the policies on 1.30, they name the renamed ServiceAccounts', () => {
    const current = render(['--kube-version', '1.30.0', '-f', 'infra/helm/examples/hami-values.yaml']).objects;
    const owned = find(current, 'ValidatingAdmissionPolicy', 'gpu-owned-annotations').spec as { matchConditions: { expression: string }[] };
    expect(owned.matchConditions[0]?.expression).toContain('system:serviceaccount:hami-system:gpu-relay');
    const agent = find(current, 'ValidatingAdmissionPolicy', 'gpu-node-agent-realtime-annotation-only').spec as { matchConditions: { expression: string }[] };
    expect(agent.matchConditions[0]?.expression).toBe('request.userInfo.username == "system:serviceaccount:hami-system:gpu-node-agent"');
  });

  it('replaces a repository\'s registry host, and prefixes one that names none', () => {
    const { objects: mirrored } = render(['--kube-version', '1.31.0', '--set', 'global.imageRegistry=mirror.example.com/hami', '--set', 'image.repository=myorg/relay']);
    expect(images(mirrored).sort()).toEqual(['mirror.example.com/hami/kube-scheduler:v1.31.0', 'mirror.example.com/hami/myorg/relay:0.1.0', 'mirror.example.com/hami/myorg/relay:0.1.0']);
  });
});

describe("HAMi's keys next to ours", () => {
  it('nameOverride names objects as HAMi does: <release>-<name>, or the release name when it contains it', () => {
    expect(find(render(['--kube-version', '1.31.0', '--set', 'nameOverride=vgpu']).objects, 'Deployment', 'hami-explain-vgpu-relay')).toBeDefined();
    expect(find(render(['--kube-version', '1.31.0', '--set', 'nameOverride=explain']).objects, 'Deployment', 'hami-explain-relay')).toBeDefined();
    expect(find(render(['--kube-version', '1.31.0', '--set', 'nameOverride=vgpu', '--set', 'fullnameOverride=gpu']).objects, 'Deployment', 'gpu-relay')).toBeDefined();
  });

  it("a HAMi key at HAMi's default (a full copy of HAMi's values.yaml) leaves ours in force", () => {
    const { objects } = render(['--kube-version', '1.31.0', '--set', 'resourceName=nvidia.com/gpu', '--set', 'resourceNames.count=example.com/vgpu']);
    expect(loadRelayConfig(relayEnvironment(objects, 'hami-relay')).admission.engine.resourceCountName).toBe('example.com/vgpu');
  });

  it('the same value under both keys is accepted', () => {
    const { objects } = render(['--kube-version', '1.31.0', '--set', 'resourceName=example.com/vgpu', '--set', 'resourceNames.count=example.com/vgpu', '--set', 'fullnameOverride=gpu', '--set', 'namePrefix=gpu']);
    expect(loadRelayConfig(relayEnvironment(objects, 'gpu-relay')).admission.engine.resourceCountName).toBe('example.com/vgpu');
  });

  it.each([
    [['--set', 'resourceName=example.com/a', '--set', 'resourceNames.count=example.com/b'], 'resourceName (HAMi\'s key) is "example.com/a" but resourceNames.count is "example.com/b": set only one of them (HAMi\'s key applies when resourceNames.count is left at "nvidia.com/gpu")'],
    [['--set', 'resourcePriority=example.com/p', '--set', 'resourceNames.priority=example.com/q'], 'resourcePriority (HAMi\'s key) is "example.com/p" but resourceNames.priority is "example.com/q"'],
    [['--set', 'fullnameOverride=gpu', '--set', 'namePrefix=acme'], 'fullnameOverride (HAMi\'s key) is "gpu" but namePrefix is "acme"'],
    [['--set', 'scheduler.kubeScheduler.imageTag=v1.30.1', '--set', 'scheduler.image.tag=v1.30.2'], 'scheduler.kubeScheduler.imageTag (HAMi\'s key) is "v1.30.1" but scheduler.image.tag is "v1.30.2"'],
  ])('different values under both keys fail, naming them: %j', (args, message) => {
    expect(refused(args)).toContain(message);
  });

  it.each([
    [['--set', 'resourceName=not a name'], "at '/resourceName'"],
    [['--set', 'global.imageRegistry=https://registry.example.com'], "at '/global/imageRegistry'"],
    [['--set', 'fullnameOverride=GPU_Sched'], "at '/fullnameOverride'"],
    [['--set', 'scheduler.kubeScheduler.image=kube-scheduler'], "additional properties 'image' not allowed"],
    [['--set', 'scheduler.image.tag=v1.30:latest'], "at '/scheduler/image/tag'"],
  ])('the schema checks them: %j', (args, message) => {
    const stderr = refused(args);
    expect(stderr).toContain("values don't meet the specifications of the schema");
    expect(stderr).toContain(message);
  });
});
