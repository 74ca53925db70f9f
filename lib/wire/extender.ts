/**
 * kube-scheduler's extender answers (docs/api.md §2): ExtenderFilterResult and ExtenderBindingResult, as the control
 * plane builds them (../control/filter.ts, ../control/bind.ts) and the relay reads them before it passes them on
 * (../relay/extender.ts). Effects travel beside them (./effects.ts, `splitEffects`).
 */
import { z } from 'zod';
import { nodeSchema } from './objects';

const failedNodes = z.record(z.string(), z.string());

/** ExtenderFilterResult with Go's null-for-unset encoding: the control plane sends every key. */
export const filterResultSchema = z.object({
  /** nodeCacheCapable: false (or cluster-autoscaler's simulation): the nodes that passed, as the engine read them. */
  Nodes: z.object({ items: z.array(nodeSchema).readonly() }).nullable(),
  NodeNames: z.array(z.string()).readonly().nullable(),
  FailedNodes: failedNodes.nullable(),
  FailedAndUnresolvableNodes: failedNodes.nullable(),
  Error: z.string(),
});
/** What the control plane builds (nodes as the engine holds them). */
export type FilterResult = z.input<typeof filterResultSchema>;

/**
 * ExtenderBindingResult: an empty Error is a bind that succeeded. `LockHeld` (ours, never passed to kube-scheduler)
 * answers a hand-over bind whose node lock another allocation holds: the relay sends it again when the lock ends.
 */
export const bindingResultSchema = z.object({ Error: z.string(), LockHeld: z.string().optional() });
export type BindingResult = z.input<typeof bindingResultSchema>;

/** Folds top-level keys of any letter case onto the schema's own spelling, dropping the keys it does not know. */
function canonicalKeys(answer: Readonly<Record<string, unknown>>, keys: readonly string[]): Record<string, unknown> {
  const byLowerCase = new Map(keys.map((key) => [key.toLowerCase(), key]));
  const named: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(answer)) {
    const known = byLowerCase.get(key.toLowerCase());
    if (known !== undefined) named[known] = value;
  }
  return named;
}

export type AnswerReading<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

function reading<T>(parsed: z.ZodSafeParseResult<T>, what: string): AnswerReading<T> {
  if (parsed.success) return { ok: true, value: parsed.data };
  const problems = parsed.error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join('.') || '(answer)'}: ${i.message}`)
    .join('; ');
  return { ok: false, error: `control plane sent an invalid ${what}: ${problems}` };
}

/*
 * Answers as the relay reads them: top-level keys in any letter case and absent keys as unset, as kube-scheduler's Go
 * decoder reads them. Keys the schema does not know are dropped; an answer that does not match is an explained error
 * (kube-scheduler retries it), never passed on half read.
 */
const filterAnswerSchema = filterResultSchema.partial();
const bindingAnswerSchema = bindingResultSchema.partial();

export function readFilterResult(answer: Readonly<Record<string, unknown>>): AnswerReading<z.output<typeof filterAnswerSchema>> {
  return reading(filterAnswerSchema.safeParse(canonicalKeys(answer, Object.keys(filterResultSchema.shape))), 'ExtenderFilterResult');
}

export function readBindingResult(answer: Readonly<Record<string, unknown>>): AnswerReading<z.output<typeof bindingAnswerSchema>> {
  return reading(bindingAnswerSchema.safeParse(canonicalKeys(answer, Object.keys(bindingResultSchema.shape))), 'ExtenderBindingResult');
}
