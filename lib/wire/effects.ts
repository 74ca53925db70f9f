/**
 * Effects (docs/api.md §3): the Kubernetes writes the control plane decides and the relay applies, in order. The
 * one definition both sides use: the control plane builds them (../control/effects.ts), the relay parses answers
 * with these schemas (../relay/effects.ts) and never casts.
 */
import { z } from 'zod';

/**
 * HAMi's event reasons (docs/hami-parity.md, "Events"), and ours: a scheduler-owned annotation changed after
 * placement; a pod adopted from its annotations took a card past its capacity (on the pod and on its Node).
 */
export const EVENT_REASONS = [
  'FilteringSucceed',
  'FilteringFailed',
  'BindingSucceed',
  'BindingFailed',
  'SchedulerAnnotationsChanged',
  'AdoptedPastCapacity',
  // GPU-aware preemption (docs/preemption.md): on a victim; on the preemptor (evicting, dry run, an eviction refused).
  'Preempted',
  'Preempting',
  'PreemptionDryRun',
  'PreemptionRefused',
] as const;
export type EventReason = (typeof EVENT_REASONS)[number];

export const EVENT_TYPES = ['Normal', 'Warning'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const podTarget = {
  namespace: z.string().min(1),
  name: z.string().min(1),
  uid: z.string().default(''),
};

/** null deletes a key (JSON merge patch). */
const metadataPatch = z.record(z.string(), z.string().nullable());

export const patchPodAnnotationsSchema = z.object({
  kind: z.literal('PatchPodAnnotations'),
  ...podTarget,
  annotations: metadataPatch,
  labels: metadataPatch.optional(),
});

export const bindPodSchema = z.object({ kind: z.literal('BindPod'), ...podTarget, node: z.string().min(1) });

/**
 * The reason is read as any text, not only EVENT_REASONS: a relay older than its control plane still records the
 * events of reasons added since (the control plane only ever builds EventReason ones).
 */
const eventReason = z.string().min(1);

export const recordEventSchema = z.object({
  kind: z.literal('RecordEvent'),
  ...podTarget,
  type: z.enum(EVENT_TYPES),
  reason: eventReason,
  message: z.string(),
});

/** An Event on a Node: recorded in `default` with the node's name as its uid, as the kubelet records its own. */
export const recordNodeEventSchema = z.object({
  kind: z.literal('RecordNodeEvent'),
  name: z.string().min(1),
  type: z.enum(EVENT_TYPES),
  reason: eventReason,
  message: z.string(),
});

/**
 * HAMi's node lock mirror on the Node's annotations. `ifAnnotations` guards the patch: it applies only while the
 * Node's annotations still hold exactly these values, else there is nothing to do (a lock's end that must not delete
 * the next holder's value: docs/locks.md, "The mirror follows the lock").
 */
export const patchNodeAnnotationsSchema = z.object({
  kind: z.literal('PatchNodeAnnotations'),
  name: z.string().min(1),
  annotations: metadataPatch,
  ifAnnotations: z.record(z.string(), z.string()).optional(),
});

/**
 * Evict a pod through the Eviction API (policy/v1), so PodDisruptionBudgets are honoured, for `preemptor` (GPU-aware
 * preemption, docs/preemption.md). A refusal is reported back to the control plane (`/preemption/refused`).
 */
export const evictPodSchema = z.object({
  kind: z.literal('EvictPod'),
  ...podTarget,
  node: z.string().min(1),
  preemptor: z.object({ namespace: z.string().min(1), name: z.string().min(1), uid: z.string().min(1) }),
});

export const effectSchema = z.discriminatedUnion('kind', [patchPodAnnotationsSchema, bindPodSchema, recordEventSchema, recordNodeEventSchema, patchNodeAnnotationsSchema, evictPodSchema]);
export const effectsSchema = z.array(effectSchema);

export type PatchPodAnnotationsEffect = z.infer<typeof patchPodAnnotationsSchema>;
export type BindPodEffect = z.infer<typeof bindPodSchema>;
export type RecordEventEffect = z.infer<typeof recordEventSchema>;
export type RecordNodeEventEffect = z.infer<typeof recordNodeEventSchema>;
export type PatchNodeAnnotationsEffect = z.infer<typeof patchNodeAnnotationsSchema>;
export type EvictPodEffect = z.infer<typeof evictPodSchema>;
export type Effect = z.infer<typeof effectSchema>;

/**
 * Reads `Effects` from a control-plane answer (any letter case, like the extender keys) and returns the answer
 * without it, ready for kube-scheduler; an Effects list that does not parse is reported, never half applied.
 */
export function splitEffects(answer: unknown): { readonly rest: Record<string, unknown>; readonly effects: Effect[]; readonly invalid?: string } {
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) return { rest: {}, effects: [] };
  const rest: Record<string, unknown> = {};
  let raw: unknown;
  for (const [k, val] of Object.entries(answer)) {
    if (k.toLowerCase() === 'effects') raw = val;
    else rest[k] = val;
  }
  if (raw === undefined || raw === null) return { rest, effects: [] };
  const parsed = effectsSchema.safeParse(raw);
  if (!parsed.success) {
    return { rest, effects: [], invalid: parsed.error.issues.map((i) => `Effects.${i.path.join('.')}: ${i.message}`).join('; ') };
  }
  return { rest, effects: parsed.data };
}
