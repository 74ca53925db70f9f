/**
 * The mutating admission webhook's decision (docs/api.md §7a), pure: AdmissionReview v1 JSON and a view of
 * the registered cards in, the AdmissionReview answer out. HAMi v2.10's webhook rules and texts, in HAMi's
 * order, plus ours: what the webhook cannot read (a body nested deeper than MAX_REVIEW_DEPTH, a pod that does not
 * match its schema) is denied, never admitted unchecked; forged scheduler annotations are denied, even on a pod
 * labelled to skip the webhook; unreadable quantities are denied with the filter's own text (the engine's
 * `podRequestProblems`, one rule set); and a request no registered card can ever hold is admitted with a warning.
 * The relay serves it over TLS (lib/relay/webhook.ts).
 */
import { z } from 'zod';
import { errorMessage } from '../errors';
import { isJsonObject, nestingExceeds } from '../json';
import { DEFAULT_KIND, deviceKind, SchedulerOwnedPodAnnotations, type AdmissionDefaults, type DeviceKind } from '../engine/devices';
import { containerRequest, describeQuantityProblems, hasManagedResources, podRequestProblems } from '../engine/requests';
import { type EngineConfig, type PodLike } from '../engine/types';
import type { CardCapacity } from './cards';
import { jsonPatch, type JsonPatchOperation } from './jsonPatch';
import { containerSchema as wireContainerSchema, podSchema as wirePodSchema } from '../wire/objects';

/**
 * Label on a namespace or pod that opts out of defaulting and routing (also in the MutatingWebhookConfiguration's
 * selectors). A labelled pod that reaches the webhook still gets the forged-annotation check, and nothing else.
 */
export const WEBHOOK_IGNORE_LABEL = 'hami.io/webhook';
export const WEBHOOK_IGNORE_VALUE = 'ignore';
export const DEFAULT_SCHEDULER = 'default-scheduler';
/**
 * Deepest nesting of objects and arrays an AdmissionReview may have. A pod's deepest path (managedFields, affinity)
 * is a few dozen levels, the review adds two; anything deeper is refused before any code walks it recursively.
 */
export const MAX_REVIEW_DEPTH = 100;

/** The webhook's configuration: the engine's, the scheduler's name, and what the kinds' defaults read (`defaultGpuNum`). */
export interface AdmissionSettings extends AdmissionDefaults {
  readonly engine: EngineConfig;
  /** The kube-scheduler profile that calls the extender; GPU pods get it. */
  readonly schedulerName: string;
}

/** HAMi's texts, and ours, in one place (a kind's refusals of its own quantities are the kind's: `DeviceKind.admit`). */
export const AdmissionText = {
  noContainers: 'pod has no containers',
  otherScheduler: 'pod already has different scheduler assigned',
  privileged: (container: string) => `container ${container} is privileged`,
  nodeAssigned: 'pod has node assigned',
  tooDeep: (limit: number) => `the webhook cannot read this request: it nests objects more than ${limit} levels deep, which no pod does; the webhook refuses what it cannot check`,
  unreadable: (where: string, problem: string) => `the webhook cannot read this pod (${where}: ${problem}); the webhook refuses what it cannot check`,
  failed: (error: string) => `the webhook could not check this pod (${error}); the webhook refuses what it cannot check`,
  forged: (keys: readonly string[]) =>
    `pod carries ${keys.join(', ')}: only the scheduler sets ${keys.length === 1 ? 'this annotation' : 'these annotations'} (a pod cannot be created with a device booking); remove ${keys.length === 1 ? 'it' : 'them'}`,
  noCards: (annotation: string | undefined) =>
    `no node has registered GPUs yet${annotation === undefined ? '' : ` (annotation ${annotation})`}: the pod stays Pending until one does`,
  tooManyCards: (container: string, nums: number, resource: string, most: number) =>
    `container ${JSON.stringify(container)} asks for ${nums} cards (${resource}) but no registered node has more than ${most}: the pod cannot be scheduled`,
  tooMuchMemory: (container: string, mib: number, resource: string, largest: number) =>
    `container ${JSON.stringify(container)} asks for ${mib} MiB of GPU memory (${resource}) but the largest registered card has ${largest} MiB: the pod cannot be scheduled`,
} as const;

/** The engine's container (lib/wire/objects.ts) and what HAMi's webhook reads beyond it. */
const containerSchema = wireContainerSchema.extend({
  securityContext: z.object({ privileged: z.boolean().optional() }).loose().nullable().optional(),
});
/**
 * The engine's Pod (lib/wire/objects.ts) as a CREATE carries it: a generateName may stand for the name, and the
 * spec says which scheduler and node it names.
 */
const podSchema = wirePodSchema.extend({
  metadata: wirePodSchema.shape.metadata.extend({ name: z.string().optional(), generateName: z.string().optional(), namespace: z.string().optional() }).default({}),
  spec: z.object({
    schedulerName: z.string().optional(),
    nodeName: z.string().optional(),
    containers: z.array(containerSchema).default([]),
    initContainers: z.array(containerSchema).optional(),
  }),
});
type Pod = z.infer<typeof podSchema>;

const reviewSchema = z.object({
  apiVersion: z.literal('admission.k8s.io/v1'),
  kind: z.literal('AdmissionReview'),
  request: z
    .object({
      uid: z.string().min(1),
      kind: z.object({ group: z.string(), version: z.string(), kind: z.string() }).loose(),
      operation: z.string(),
      namespace: z.string().optional(),
      object: z.unknown().optional(),
    })
    .loose(),
});

export type AdmissionDecision =
  | { readonly allowed: true; readonly patch: readonly JsonPatchOperation[]; readonly warnings: readonly string[] }
  | { readonly allowed: false; readonly code: 400 | 403; readonly message: string };

export interface AdmissionResponse {
  readonly apiVersion: 'admission.k8s.io/v1';
  readonly kind: 'AdmissionReview';
  readonly response: {
    readonly uid: string;
    readonly allowed: boolean;
    readonly status?: { readonly code: number; readonly reason: string; readonly message: string };
    readonly patchType?: 'JSONPatch';
    readonly patch?: string;
    readonly warnings?: readonly string[];
  };
}

/** Who the review is about, for the log: only what the review says as strings. */
export interface AdmissionSubject {
  readonly namespace?: string;
  readonly pod?: string;
}

export type AdmissionOutcome =
  | { readonly kind: 'answer'; readonly review: AdmissionResponse; readonly decision: AdmissionDecision; readonly subject: AdmissionSubject }
  | { readonly kind: 'badRequest'; readonly message: string };

const allow = (patch: readonly JsonPatchOperation[] = [], warnings: readonly string[] = []): AdmissionDecision => ({ allowed: true, patch, warnings });
const deny = (message: string, code: 400 | 403 = 403): AdmissionDecision => ({ allowed: false, code, message });

/**
 * Answers one AdmissionReview; `badRequest` when the body is not a v1 AdmissionReview at all. Fails closed: a review
 * nested deeper than MAX_REVIEW_DEPTH, a pod it cannot read, or a check that throws is denied with a message.
 */
export function reviewAdmission(body: unknown, settings: AdmissionSettings, capacity: CardCapacity | undefined): AdmissionOutcome {
  // Measured first, without recursion: what follows (the clone, the patch, the log line) walks the pod recursively.
  const tooDeep = nestingExceeds(body, MAX_REVIEW_DEPTH);
  // Safe at any depth: the schema stops at the review's own fields (the pod is `unknown`, other keys kept as they are).
  const parsed = reviewSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { kind: 'badRequest', message: `not an admission.k8s.io/v1 AdmissionReview: ${issue?.path.join('.') || '(body)'}: ${issue?.message ?? 'invalid'}` };
  }
  const request = parsed.data.request;
  const isPodCreate = request.kind.group === '' && request.kind.kind === 'Pod' && request.operation === 'CREATE';
  const decision = tooDeep ? deny(AdmissionText.tooDeep(MAX_REVIEW_DEPTH), 400) : isPodCreate ? checkedPod(request.object, request.namespace, settings, capacity) : allow();
  return { kind: 'answer', decision, review: toResponse(request.uid, decision), subject: subjectOf(request) };
}

function checkedPod(raw: unknown, namespace: string | undefined, settings: AdmissionSettings, capacity: CardCapacity | undefined): AdmissionDecision {
  try {
    return decidePod(raw, namespace, settings, capacity);
  } catch (err) {
    return deny(AdmissionText.failed(errorMessage(err)), 400);
  }
}

function subjectOf(request: { readonly namespace?: string; readonly name?: unknown; readonly object?: unknown }): AdmissionSubject {
  const metadata = isJsonObject(request.object) && isJsonObject(request.object.metadata) ? request.object.metadata : {};
  // A pod created with generateName comes with an empty name.
  const pod = [request.name, metadata.name, metadata.generateName].find((v): v is string => typeof v === 'string' && v !== '');
  return { ...(request.namespace !== undefined ? { namespace: request.namespace } : {}), ...(pod !== undefined ? { pod } : {}) };
}

function toResponse(uid: string, decision: AdmissionDecision): AdmissionResponse {
  if (!decision.allowed) {
    const reason = decision.code === 400 ? 'BadRequest' : 'Forbidden';
    return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: false, status: { code: decision.code, reason, message: decision.message } } };
  }
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: {
      uid,
      allowed: true,
      ...(decision.patch.length > 0 ? { patchType: 'JSONPatch' as const, patch: Buffer.from(JSON.stringify(decision.patch)).toString('base64') } : {}),
      ...(decision.warnings.length > 0 ? { warnings: decision.warnings } : {}),
    },
  };
}

/**
 * The rules for one pod CREATE, in HAMi's order with ours where they belong. Call it on a review within
 * MAX_REVIEW_DEPTH (reviewAdmission does).
 */
export function decidePod(raw: unknown, namespace: string | undefined, settings: AdmissionSettings, capacity: CardCapacity | undefined): AdmissionDecision {
  const parsed = podSchema.safeParse(raw);
  // The API server sends only valid pods: one this webhook cannot read is refused, not admitted unchecked.
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return deny(AdmissionText.unreadable(issue?.path.join('.') || '(pod)', issue?.message ?? 'invalid'), 400);
  }
  const pod = parsed.data;

  // Ours, beyond HAMi v2.10 (HAMi's later #3042): checked whatever scheduler the pod names, and whatever its labels
  // (where the chart's ValidatingAdmissionPolicy is absent, labelled pods come here for this check alone).
  const forged = Object.keys(pod.metadata.annotations ?? {}).filter((key) => SchedulerOwnedPodAnnotations.includes(key)).sort();
  if (forged.length > 0) return deny(AdmissionText.forged(forged));
  // The opt-out skips defaulting and routing only.
  if (pod.metadata.labels?.[WEBHOOK_IGNORE_LABEL] === WEBHOOK_IGNORE_VALUE) return allow();

  if (pod.spec.containers.length === 0) return deny(AdmissionText.noContainers);
  const scheduler = pod.spec.schedulerName ?? '';
  if (scheduler !== '' && scheduler !== DEFAULT_SCHEDULER && scheduler !== settings.schedulerName) return allow();

  // Ours: quantities the filter could not read are refused now, with the filter's words.
  const engine = settings.engine;
  const problems = podRequestProblems(asPodLike(pod, namespace), engine);
  if (problems.length > 0) return deny(describeQuantityProblems(problems), 400);

  const mutated = structuredClone(raw) as Pod;
  const containers = [...(mutated.spec.initContainers ?? []), ...mutated.spec.containers];
  for (const container of containers) {
    // Each kind's defaults are its own: a container asking for a kind without them (AWS Neuron) is only validated,
    // as HAMi's Neuron MutateAdmission does (docs/devices.md, "AWS Neuron").
    const refused = admittingKind(container, engine)?.admit?.(container, engine, settings);
    if (refused !== undefined) return deny(refused, 400);
  }
  if (!hasManagedResources(asPodLike(mutated, namespace), engine)) return allow(jsonPatch(raw, mutated));

  const privileged = containers.find((c) => c.securityContext?.privileged === true);
  if (privileged !== undefined) return deny(AdmissionText.privileged(privileged.name));
  if ((pod.spec.nodeName ?? '') !== '') return deny(AdmissionText.nodeAssigned);
  mutated.spec.schedulerName = settings.schedulerName;

  return allow(jsonPatch(raw, mutated), capacity === undefined ? [] : neverFits(mutated, settings, capacity));
}

/** The kind whose defaults the container gets: the kind it asks for, the default kind's when it asks for none. */
function admittingKind(container: z.infer<typeof containerSchema>, engine: EngineConfig): DeviceKind | undefined {
  const type = containerRequest(container, engine)?.type;
  return type === undefined ? DEFAULT_KIND : deviceKind(type);
}

/** Warnings for requests beyond every registered card: the pod is admitted, and told why it will stay Pending. */
function neverFits(pod: Pod, settings: AdmissionSettings, capacity: CardCapacity): string[] {
  const engine = settings.engine;
  const asked = [...(pod.spec.initContainers ?? []), ...pod.spec.containers]
    .map((c) => ({ name: c.name, request: containerRequest(c, engine) }))
    // The registered cards are the default kind's, and bound its requests only (see ./cards).
    .filter((x) => x.request?.type === DEFAULT_KIND.vendor);
  if (asked.length === 0) return [];
  if (capacity.cards === 0) return [AdmissionText.noCards(DEFAULT_KIND.registerAnnotation)];
  const warnings: string[] = [];
  for (const { name, request } of asked) {
    if (request === undefined) continue;
    if (!capacity.hasMig && request.nums > capacity.mostCardsOnANode) {
      warnings.push(AdmissionText.tooManyCards(name, request.nums, engine.resourceCountName, capacity.mostCardsOnANode));
    }
    if (request.memreq > capacity.largestMemoryMiB) {
      warnings.push(AdmissionText.tooMuchMemory(name, request.memreq, engine.resourceMemoryName, capacity.largestMemoryMiB));
    }
  }
  return warnings;
}

function asPodLike(pod: Pod, namespace: string | undefined): PodLike {
  return {
    metadata: { name: pod.metadata.name ?? pod.metadata.generateName ?? '', ...(namespace !== undefined ? { namespace } : {}), ...(pod.metadata.annotations ? { annotations: pod.metadata.annotations } : {}) },
    spec: { containers: pod.spec.containers, ...(pod.spec.initContainers ? { initContainers: pod.spec.initContainers } : {}) },
  };
}
