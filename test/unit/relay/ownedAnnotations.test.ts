/**
 * Bookings belong to the scheduler: the rendered chart's ValidatingAdmissionPolicy, its CEL evaluated on real
 * AdmissionReview v1 requests (test/support/cel.mjs runs a CEL implementation as kube-apiserver would: match
 * conditions, variables in order, validations, messageExpression); and, where the chart renders no policy (Kubernetes
 * older than 1.30), the webhook's selector and decision that take its place at creation.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { reviewAdmission } from '../../../lib/admission/review';
import { REQUEUE_ANNOTATION } from '../../../lib/control/effects';
import { defaultEngineConfig } from '../../../lib/config';
import { SchedulerOwnedPodAnnotations } from '../../../lib/engine/devices';
import { ROOT, renderChart, type K8sObject } from '../../support/chart';

interface CelOutcome {
  matched: boolean;
  denied: { message: string; reason: string }[];
  variables: Record<string, unknown>;
}

const RELAY = 'system:serviceaccount:hami-system:hami-relay';
const DEVICE_PLUGIN = 'system:serviceaccount:kube-system:hami-device-plugin';

function policyOf(objects: readonly K8sObject[]): K8sObject | undefined {
  return objects.find((o) => o.kind === 'ValidatingAdmissionPolicy' && o.metadata.name === 'hami-owned-annotations');
}

const booked = {
  'hami.io/vgpu-node': 'node-1',
  'hami.io/vgpu-devices-to-allocate': 'GPU-0,NVIDIA,3000,30:;',
  'hami.io/vgpu-devices-allocated': 'GPU-0,NVIDIA,3000,30:;',
  'hami.io/bind-phase': 'allocating',
  'team/owner': 'alice',
};

const OPT_OUT = { 'hami.io/webhook': 'ignore' };

function pod(annotations: Record<string, string>, labels: Record<string, string>) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'train-0', namespace: 'team-a', uid: 'u-1', annotations, labels },
    spec: { schedulerName: 'hami-scheduler', nodeName: 'node-1', containers: [{ name: 'main', image: 'cuda:12', resources: { limits: { 'nvidia.com/gpu': '1' } } }] },
  };
}

/** An AdmissionReview v1 for a pod, as kube-apiserver sends it: a CREATE has no old object (null). */
function admissionReview(operation: 'CREATE' | 'UPDATE', username: string, object: ReturnType<typeof pod>, oldObject: ReturnType<typeof pod> | null) {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'r-1',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace: 'team-a',
      name: 'train-0',
      operation,
      userInfo: { username, groups: ['system:authenticated'] },
      object,
      oldObject,
    },
  };
}

function creation(username: string, annotations: Record<string, string>, labels: Record<string, string> = {}) {
  return admissionReview('CREATE', username, pod(annotations, labels), null);
}

function review(username: string, oldAnnotations: Record<string, string>, newAnnotations: Record<string, string>, labels: Record<string, string> = {}) {
  return admissionReview('UPDATE', username, pod(newAnnotations, labels), pod(oldAnnotations, labels));
}

function admit(policy: K8sObject, body: ReturnType<typeof review> | ReturnType<typeof creation>): CelOutcome {
  const { object, oldObject, ...request } = body.request;
  const input = JSON.stringify({ policy, request, object, oldObject });
  return JSON.parse(execFileSync(process.execPath, [join(ROOT, 'test/support/cel.mjs')], { input, encoding: 'utf8' })) as CelOutcome;
}

const rendered = renderChart();
const policy = policyOf(rendered) as K8sObject;

describe('the scheduler-owned annotations policy', () => {
  // Issue 46: CREATE too (it was UPDATE only, and the webhook that checked creations skips labelled pods).
  it('is rendered by default and bound with Deny, for pod CREATEs and UPDATEs', () => {
    expect(policy).toBeDefined();
    const binding = rendered.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding' && o.metadata.name === policy.metadata.name);
    expect(binding?.spec).toEqual({ policyName: policy.metadata.name, validationActions: ['Deny'] });
    expect((policy.spec as { matchConstraints: unknown }).matchConstraints).toEqual({ resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['pods'] }] });
    expect((policy.spec as { failurePolicy: string }).failurePolicy).toBe('Fail');
  });

  it("protects exactly the engine's scheduler-owned annotations plus the relay's nudge annotation", () => {
    const out = admit(policy, review('alice', {}, {}));
    expect((out.variables.owned as string[]).sort()).toEqual([...SchedulerOwnedPodAnnotations, REQUEUE_ANNOTATION].sort());
  });

  it.each([
    ['rewrites the allocation', { ...booked, 'hami.io/vgpu-devices-allocated': 'GPU-0,NVIDIA,1,0:;' }, ['hami.io/vgpu-devices-allocated']],
    ['removes the node', Object.fromEntries(Object.entries(booked).filter(([k]) => k !== 'hami.io/vgpu-node')), ['hami.io/vgpu-node']],
    ['sets the bind phase and a nudge', { ...booked, 'hami.io/bind-phase': 'success', 'hami.io/requeue': '2026-03-01T10:00:00Z' }, ['hami.io/bind-phase', 'hami.io/requeue']],
  ])('denies a pod owner who %s, saying who may change them', (_label, after, keys) => {
    const out = admit(policy, review('alice@example.com', booked, after));
    expect(out.matched).toBe(true);
    expect(out.denied).toHaveLength(1);
    const [denial] = out.denied;
    expect(denial?.reason).toBe('Forbidden');
    expect(denial?.message).toBe(
      `the annotation${keys.length === 1 ? ' ' : 's '}${keys.join(', ')} belong${keys.length === 1 ? 's' : ''} to the scheduler: only ${RELAY}, ${DEVICE_PLUGIN} may change ${keys.length === 1 ? 'it' : 'them'} (the booking the device plugin allocates from); alice@example.com may not`,
    );
  });

  it('lets a pod owner change anything else', () => {
    const out = admit(policy, review('alice@example.com', booked, { ...booked, 'team/owner': 'bob', 'prometheus.io/scrape': 'true' }, { tier: 'gold' }));
    expect(out.denied).toEqual([]);
  });

  it('lets the stock AWS Neuron device plugin mark its allocation done, and nobody but the scheduler rewrite the AWS placement', () => {
    const awsPlugin = 'system:serviceaccount:kube-system:neuron-device-plugin';
    const placed = {
      'hami.io/vgpu-node': 'trn-1',
      'hami.io/aws-neuron-devices-allocated': 'trn-1-AWSNeuron-0,AWSNeuron,0,3:;',
      AWS_NEURON_IDS: '0',
      NEURON_ALLOC_TIME: '1700000000000000000',
      NEURON_ALLOCATED: 'false',
      'aws.amazon.com/predicate-node': 'trn-1',
    };
    expect(admit(policy, review(awsPlugin, placed, { ...placed, NEURON_ALLOCATED: 'true' })).denied).toEqual([]);
    const rewritten = admit(policy, review(awsPlugin, placed, { ...placed, AWS_NEURON_IDS: '1', 'aws.amazon.com/predicate-node': 'trn-2' }));
    expect(rewritten.denied[0]?.message).toMatch(/^the annotations AWS_NEURON_IDS, aws.amazon.com\/predicate-node belong to the scheduler/);
  });

  it.each([
    ['the relay', RELAY],
    ["HAMi's device plugin", DEVICE_PLUGIN],
  ])('does not apply to %s', (_label, username) => {
    const out = admit(policy, review(username, booked, { ...booked, 'hami.io/bind-phase': 'success' }));
    expect(out).toEqual({ matched: false, denied: [], variables: {} });
  });

  it.each([
    ['a pod owner', 'alice@example.com'],
    ["HAMi's device plugin (it may change a booking, never create one)", DEVICE_PLUGIN],
  ])('refuses %s a pod created with a booking, labelled hami.io/webhook: ignore or not, saying who may', (_label, username) => {
    const forged = { 'hami.io/vgpu-node': 'node-1', 'hami.io/vgpu-devices-allocated': 'GPU-victim,NVIDIA,16384,100:;', 'hami.io/bind-phase': 'success', 'team/owner': 'alice' };
    for (const labels of [OPT_OUT, {}]) {
      const out = admit(policy, creation(username, forged, labels));
      expect(out.matched).toBe(true);
      expect(out.denied).toEqual([
        {
          reason: 'Forbidden',
          message: `a pod cannot be created with the annotations hami.io/vgpu-node, hami.io/vgpu-devices-allocated, hami.io/bind-phase: they belong to the scheduler (the booking the device plugin allocates from) and only ${RELAY} may set them; ${username} may not`,
        },
      ]);
    }
    expect(admit(policy, creation(username, { 'hami.io/requeue': '2026-03-01T10:00:00Z' })).denied[0]?.message).toBe(
      `a pod cannot be created with the annotation hami.io/requeue: it belongs to the scheduler (the booking the device plugin allocates from) and only ${RELAY} may set it; ${username} may not`,
    );
  });

  it('lets anyone create a pod without a booking, and does not apply to the relay', () => {
    const out = admit(policy, creation('alice@example.com', { 'team/owner': 'alice', NEURON_ALLOCATED: 'false', 'nvidia.com/use-gputype': 'A100' }, OPT_OUT));
    expect(out).toEqual(expect.objectContaining({ matched: true, denied: [] }));
    expect(out.variables.changed).toEqual([]);
    expect(admit(policy, creation(RELAY, booked)).matched).toBe(false);
  });

  it('admits the extra service accounts configured, and renders nothing when off', () => {
    const extra = 'system:serviceaccount:ops:rescheduler';
    const withExtra = policyOf(renderChart(['--set', `ownedAnnotations.extraServiceAccounts[0]=${extra}`])) as K8sObject;
    expect(admit(withExtra, review(extra, booked, {})).matched).toBe(false);
    expect(admit(withExtra, creation(extra, booked)).denied[0]?.message).toContain(`only ${RELAY} may set them; ${extra} may not`);
    expect(admit(withExtra, review('mallory', booked, {})).denied[0]?.message).toContain(`only ${RELAY}, ${DEVICE_PLUGIN}, ${extra} may change them`);
    expect(policyOf(renderChart(['--set', 'ownedAnnotations.enforce=off']))).toBeUndefined();
  });
});

/** Whether a label selector (matchLabels, matchExpressions) selects `labels`, as kube-apiserver evaluates it. */
function selects(selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] } | undefined, labels: Record<string, string>): boolean {
  if (selector === undefined) return true;
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return byLabel && (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    switch (operator) {
      case 'In': return key in labels && values.includes(labels[key] as string);
      case 'NotIn': return !(key in labels) || !values.includes(labels[key] as string);
      case 'Exists': return key in labels;
      case 'DoesNotExist': return !(key in labels);
      default: throw new Error(`unknown operator ${operator}`);
    }
  });
}

describe('where the cluster cannot enforce the policy (Kubernetes < 1.30), the webhook refuses forged bookings at creation', () => {
  type Webhook = { objectSelector?: Parameters<typeof selects>[0] };
  const webhookOf = (objects: readonly K8sObject[]) => (objects.find((o) => o.kind === 'MutatingWebhookConfiguration')?.webhooks as Webhook[])[0] as Webhook;
  const settings = { engine: defaultEngineConfig, schedulerName: 'hami-scheduler', defaultGpuNum: 1 };
  const forged = { 'hami.io/vgpu-node': 'node-1', 'hami.io/vgpu-devices-allocated': 'GPU-victim,NVIDIA,16384,100:;' };

  it.each([
    ['Kubernetes 1.29', ['--kube-version', '1.29.0']],
    ['ownedAnnotations.enforce=off', ['--set', 'ownedAnnotations.enforce=off']],
  ])('%s: no policy, and a labelled pod is sent to the webhook, which denies its booking and only that', (_case, args) => {
    const objects = renderChart(args);
    expect(policyOf(objects)).toBeUndefined();
    const webhook = webhookOf(objects);
    expect(selects(webhook.objectSelector, OPT_OUT)).toBe(true);

    const outcome = reviewAdmission(creation('alice@example.com', forged, OPT_OUT), settings, undefined);
    expect(outcome.kind === 'answer' && outcome.review.response).toEqual({
      uid: 'r-1',
      allowed: false,
      status: { code: 403, reason: 'Forbidden', message: expect.stringContaining('pod carries hami.io/vgpu-devices-allocated, hami.io/vgpu-node: only the scheduler sets these annotations') },
    });
    // Without a booking the labelled pod is left as it is: no defaults, no routing.
    const clean = reviewAdmission(creation('alice@example.com', {}, OPT_OUT), settings, undefined);
    expect(clean.kind === 'answer' && clean.review.response).toEqual({ uid: 'r-1', allowed: true });
  });

  it('Kubernetes 1.30: the policy is rendered, and the webhook keeps labelled pods away (the policy checks them)', () => {
    const objects = renderChart(['--kube-version', '1.30.0']);
    expect(policyOf(objects)).toBeDefined();
    expect(selects(webhookOf(objects).objectSelector, OPT_OUT)).toBe(false);
    expect(selects(webhookOf(objects).objectSelector, { app: 'train' })).toBe(true);
  });
});
