/** The node agent's objects in infra/k8s (rendered from the Helm chart with default values). */
import { defaultNodeAgentSettings, loadNodeAgentConfig } from '../../../lib/realtime/config';
import { renderedManifests } from '../../support/chart';

interface K8sObject {
  kind: string;
  metadata: { name: string; namespace?: string };
  [key: string]: unknown;
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string } };
}
interface Container {
  args?: string[];
  env?: EnvVar[];
  ports?: { name: string; containerPort: number }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
}
interface PodSpec {
  serviceAccountName?: string;
  hostPID?: boolean;
  nodeSelector?: Record<string, string>;
  tolerations?: { key?: string }[];
  containers: Container[];
}

const rendered = renderedManifests().map((m) => m.object as unknown as K8sObject & { apiVersion: string; metadata: { labels?: Record<string, string> } });
const agentObjects = rendered.filter((o) => o.metadata.labels?.['app.kubernetes.io/name'] === 'hami-node-agent');
const objects = agentObjects.filter((o) => !o.apiVersion.startsWith('admissionregistration.'));
const byKind = (kind: string): K8sObject => {
  const found = objects.filter((o) => o.kind === kind);
  expect(found).toHaveLength(1);
  return found[0] as K8sObject;
};
const podSpec = (): PodSpec => (byKind('DaemonSet').spec as { template: { spec: PodSpec } }).template.spec;
const container = (): Container => {
  const spec = podSpec();
  expect(spec.containers).toHaveLength(1);
  return spec.containers[0] as Container;
};
const envOf = (c: Container): Record<string, string | undefined> =>
  Object.fromEntries((c.env ?? []).filter((e) => e.value !== undefined).map((e) => [e.name, e.value]));

describe('infra/k8s: the node agent', () => {
  it('holds exactly a ServiceAccount, ClusterRole, ClusterRoleBinding and DaemonSet in the project namespace', () => {
    const namespace = rendered.find((o) => o.kind === 'Namespace');
    expect(namespace?.kind).toBe('Namespace');
    expect(objects.map((o) => o.kind).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding', 'DaemonSet', 'ServiceAccount']);
    expect(byKind('ServiceAccount').metadata.namespace).toBe(namespace?.metadata.name);
    expect(byKind('DaemonSet').metadata.namespace).toBe(namespace?.metadata.name);
  });

  it('runs the image and command of the relay Deployment', () => {
    type Runnable = { image?: string; command?: string[] };
    const relay = rendered.find((o) => o.kind === 'Deployment' && o.metadata.name === 'hami-relay');
    const relayContainer = (relay?.spec as { template: { spec: { containers: Runnable[] } } } | undefined)?.template.spec.containers[0];
    expect(relayContainer?.image).toEqual(expect.any(String));
    const agent = container() as Container & Runnable;
    expect(agent.image).toBe(relayContainer?.image);
    expect(agent.command).toEqual(relayContainer?.command);
  });

  it('grants only patch on nodes, bound to the agent ServiceAccount the DaemonSet uses', () => {
    expect(byKind('ClusterRole').rules).toEqual([{ apiGroups: [''], resources: ['nodes'], verbs: ['patch'] }]);
    const binding = byKind('ClusterRoleBinding') as unknown as {
      roleRef: { kind: string; name: string };
      subjects: { kind: string; name: string; namespace: string }[];
    };
    expect(binding.roleRef).toMatchObject({ kind: 'ClusterRole', name: byKind('ClusterRole').metadata.name });
    const sa = byKind('ServiceAccount').metadata;
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: sa.name, namespace: sa.namespace }]);
    expect(podSpec().serviceAccountName).toBe(byKind('ServiceAccount').metadata.name);
  });

  it('runs the relay image in node-agent mode with the node name from the downward API', () => {
    const c = container();
    expect(c.args).toEqual(['node-agent']);
    expect(c.env?.find((e) => e.name === 'NODE_NAME')?.valueFrom).toEqual({ fieldRef: { fieldPath: 'spec.nodeName' } });
    expect(envOf(c).NVIDIA_VISIBLE_DEVICES).toBe('all');
  });

  it('targets GPU nodes and never requests a GPU (which would take a vGPU slot)', () => {
    expect(podSpec().nodeSelector).toMatchObject({ gpu: 'on' });
    expect(podSpec().tolerations?.map((t) => t.key)).toContain('nvidia.com/gpu');
    const resources = container().resources ?? {};
    const names = [...Object.keys(resources.requests ?? {}), ...Object.keys(resources.limits ?? {})];
    expect(names.filter((n) => n.startsWith('nvidia.com/'))).toEqual([]);
    expect(resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(resources.limits).toMatchObject({ memory: expect.any(String) });
  });

  it('sets environment the agent accepts, probing the port it listens on', () => {
    const c = container();
    const config = loadNodeAgentConfig({ ...envOf(c), NODE_NAME: 'gpu-node-1' });
    expect(config.refreshSeconds).toBeLessThan(config.maxAgeSeconds);
    const port = c.ports?.find((p) => p.name === c.livenessProbe?.httpGet?.port);
    expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(port?.containerPort).toBe(config.healthPort);
    expect(config.healthPort).toBe(defaultNodeAgentSettings.healthPort);
  });

  it('shares the host PID namespace exactly when process counts are reported', () => {
    const config = loadNodeAgentConfig({ ...envOf(container()), NODE_NAME: 'gpu-node-1' });
    expect(podSpec().hostPID === true).toBe(config.reportProcessCount);
  });
});

describe('infra/k8s: the node agent admission policy', () => {
  const policyObjects: K8sObject[] = agentObjects.filter((o) => o.apiVersion.startsWith('admissionregistration.'));
  it('binds a Deny policy that applies only to the agent ServiceAccount', () => {
    expect(policyObjects.map((o) => o.kind)).toEqual(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    const [policy, binding] = policyObjects as [K8sObject, K8sObject];
    expect(binding.spec).toEqual({ policyName: policy.metadata.name, validationActions: ['Deny'] });
    const sa = byKind('ServiceAccount').metadata;
    const conditions = (policy.spec as { matchConditions: { expression: string }[] }).matchConditions;
    expect(conditions.map((m) => m.expression)).toEqual([
      `request.userInfo.username == "system:serviceaccount:${sa.namespace}:${sa.name}"`,
    ]);
  });

  it('lets the agent change only the real-time annotation', () => {
    const [policy] = policyObjects as [K8sObject];
    const variables = (policy.spec as { variables: { name: string; expression: string }[] }).variables;
    expect(variables.find((v) => v.name === 'realtimeKey')?.expression).toBe('"hami.io/node-nvidia-realtime"');
  });
});
