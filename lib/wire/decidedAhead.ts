/**
 * Decide-ahead on the wire (docs/relay.md, "Deciding ahead"; docs/api.md §2): the batch route's answer, the mark a
 * decision made ahead leaves on its pod, and the header a filter that could not use one carries. The one definition
 * both sides use; the relay parses answers with these schemas and never casts.
 */
import { z } from 'zod';
import { effectsSchema } from './effects';

/** The batch route: one call, many pods. */
export const DECIDE_AHEAD_PATH = '/filter/ahead';

/** The most pods one batch carries (a batch of 1,000-node decisions stays well within Lambda's time). */
export const MAX_AHEAD_PODS = 100;

/**
 * Set with the HAMi annotations of a decision made ahead: `<node>@<hami.io/vgpu-time>`. It names the decision only
 * while both still hold those values, so a later live filter (which rewrites them) makes it stale by itself. Every
 * relay replica reads decisions from it, through its own pod watch.
 */
export const DECIDED_AHEAD_ANNOTATION = 'hami.io/decided-ahead';

/**
 * Sent with a live /filter when a decision made ahead existed and could not be used: why, in words, for the
 * pod's scheduler log. At most 300 characters are kept.
 */
export const AHEAD_NOTE_HEADER = 'x-hami-ahead-note';
export const MAX_AHEAD_NOTE_CHARS = 300;

/**
 * Sent with a successful /bind/outcome when the relay answered the pod's filter from its decision made ahead: when it
 * did (RFC 3339), for the pod's scheduler log (`bind.filterUsedAhead`).
 */
export const AHEAD_USED_HEADER = 'x-hami-ahead-used';

/**
 * Set by the relay with the decision's annotations: a hash of what the engine read of the pod when it was decided
 * (`podFingerprint` in lib/relay/aheadDecisions.ts), so any replica can tell whether the pod changed since.
 */
export const DECIDED_AHEAD_POD_ANNOTATION = 'hami.io/decided-ahead-pod';

/** Set by the replica about to decide a pod ahead (a patch conditional on the pod's resourceVersion): no other replica decides it too. */
export const AHEAD_CLAIM_VALUE = 'claimed';

/** Set when the claimed pod was decided ahead without a node (no fit, an error): kube-scheduler's filter decides it live. */
export const AHEAD_NONE_VALUE = 'none';

/** kube-scheduler's default queue order (PrioritySort): priority, highest first, then the oldest, then as given. */
export function queueOrder<T>(items: readonly T[], keys: (item: T) => { readonly priority: number; readonly createdMs: number | undefined }): T[] {
  return items
    .map((item, i) => ({ item, i, k: keys(item) }))
    .sort((a, b) => b.k.priority - a.k.priority || (a.k.createdMs ?? Infinity) - (b.k.createdMs ?? Infinity) || a.i - b.i)
    .map(({ item }) => item);
}

export function decidedAheadMark(node: string, vgpuTime: string): string {
  return `${node}@${vgpuTime}`;
}

/** The decision a pod's annotations name, when its mark matches `hami.io/vgpu-node` and `hami.io/vgpu-time`. */
export function markedDecision(annotations: Readonly<Record<string, string>> | undefined): { readonly node: string; readonly timeS: number } | undefined {
  const mark = annotations?.[DECIDED_AHEAD_ANNOTATION];
  const node = annotations?.['hami.io/vgpu-node'];
  const time = annotations?.['hami.io/vgpu-time'];
  if (mark === undefined || node === undefined || time === undefined || !/^\d{1,12}$/.test(time)) return undefined;
  return mark === decidedAheadMark(node, time) ? { node, timeS: Number(time) } : undefined;
}

export const aheadDecisionSchema = z.object({
  uid: z.string(),
  namespace: z.string(),
  name: z.string(),
  /** `fit`: booked on `node`; `noFit`: `failedNodes` says why; `error`: `error`; `skipped`: asks for no managed resource. */
  status: z.enum(['fit', 'noFit', 'error', 'skipped']),
  node: z.string().optional(),
  failedNodes: z.record(z.string(), z.string()).optional(),
  error: z.string().optional(),
  attemptId: z.string().optional(),
  Effects: effectsSchema.default([]),
});

export const aheadAnswerSchema = z.object({
  decisions: z.array(aheadDecisionSchema),
  /** The view the batch was decided on: its last journal entry and when it was read. */
  view: z.object({ seq: z.number(), ageMs: z.number() }),
  /** RFC 3339 time the batch was decided. */
  decidedAt: z.string(),
});

export type AheadDecision = z.infer<typeof aheadDecisionSchema>;
export type AheadAnswer = z.infer<typeof aheadAnswerSchema>;
