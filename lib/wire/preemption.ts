/**
 * GPU-aware preemption on the wire between the relay and the control plane (docs/preemption.md, docs/api.md §3): the
 * modes, the header by which the relay's mode reaches the filter, and the report of a refused eviction. The one
 * definition both sides use.
 */
import { z } from 'zod';

/** `on`: evict; `log`: decide and explain, evict nothing; `off`: not even decide. */
export const PREEMPTION_MODES = ['on', 'off', 'log'] as const;
export type PreemptionMode = (typeof PREEMPTION_MODES)[number];

/** Sent by the relay with /filter when its own mode (the chart's `preemption.mode`) is not `on`. */
export const PREEMPTION_HEADER = 'x-hami-preemption';

const STRICTNESS: Readonly<Record<PreemptionMode, number>> = { on: 0, log: 1, off: 2 };

/** The stricter of two modes: the control plane's setting and the cluster's (the relay's) both get a say. */
export function stricterMode(a: PreemptionMode, b: PreemptionMode | undefined): PreemptionMode {
  return b !== undefined && STRICTNESS[b] > STRICTNESS[a] ? b : a;
}

/** A header value as a mode; anything else is no requirement. */
export function preemptionModeOf(value: string | undefined): PreemptionMode | undefined {
  const trimmed = value?.trim().toLowerCase();
  return (PREEMPTION_MODES as readonly string[]).includes(trimmed ?? '') ? (trimmed as PreemptionMode) : undefined;
}

const podRef = z.object({ namespace: z.string().min(1), name: z.string().min(1), uid: z.string().min(1) });

/** `POST /preemption/refused`: the Eviction API refused to evict `victim` for `preemptor` (a PodDisruptionBudget, mostly). */
export const evictionRefusedSchema = z.object({
  preemptor: podRef,
  victim: podRef,
  node: z.string().min(1),
  /** The API server's message. */
  message: z.string(),
  /** Whether the refusal names a PodDisruptionBudget (429 with a `DisruptionBudget` cause). */
  disruptionBudget: z.boolean(),
});
export type EvictionRefused = z.infer<typeof evictionRefusedSchema>;

export const EVICTION_REFUSED_PATH = '/preemption/refused';
