/**
 * The words every user-facing output says a scheduling outcome with: the one-sentence answer (lib/diagnostics/answer.ts),
 * the console's badges, `hami-diag`'s STATUS column. Decided here once so that no page puts a "failed" badge beside
 * "Pending: no node fits…". The API's `status` fields keep the Scheduler Log proposal's values (docs/api.md §9); these
 * are the words shown for them. Pure, and safe in the browser.
 */

/** What happened to the pod, as a user reads it. */
export const Outcome = {
  /** Bound to a node. */
  Scheduled: 'scheduled',
  /** No node fits (or the filter refused the pod): it waits, and kube-scheduler tries it again. */
  Pending: 'pending',
  /** A node was chosen; the bind has not been reported yet. */
  Binding: 'binding',
  /** A node was chosen, but binding the pod there failed; kube-scheduler tries it again. */
  BindFailed: 'bind failed',
} as const;
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

/** Every outcome word, in the order a filter lists them. */
export const OUTCOMES: readonly Outcome[] = [Outcome.Scheduled, Outcome.Pending, Outcome.Binding, Outcome.BindFailed];

/** The statuses an outcome is read from: those of the filter and of the bind (the overall status alone cannot tell a failed filter from a failed bind). */
export interface OutcomeInput {
  readonly filter: { readonly status: 'passed' | 'failed' | string };
  readonly bind: { readonly status: 'passed' | 'failed' | 'pending' | string };
}

export function outcomeOf(attempt: OutcomeInput): Outcome {
  if (attempt.filter.status === 'failed') return Outcome.Pending;
  switch (attempt.bind.status) {
    case 'passed':
      return Outcome.Scheduled;
    case 'failed':
      return Outcome.BindFailed;
    default:
      return Outcome.Binding;
  }
}

/** The word starting a sentence: `Pending`, `Bind failed`. */
export function outcomeLabel(outcome: Outcome): string {
  return sentenceStart(outcome);
}

/** A phrase as the start of a sentence: its first letter capitalised. */
export function sentenceStart(phrase: string): string {
  return `${phrase.charAt(0).toUpperCase()}${phrase.slice(1)}`;
}

/** good / warn / bad, for colours: only a failed bind is an error the user sees; a pending pod waits. */
export function outcomeTone(outcome: Outcome): 'good' | 'warn' | 'bad' {
  return outcome === Outcome.Scheduled ? 'good' : outcome === Outcome.BindFailed ? 'bad' : 'warn';
}

/** A CSS class name for the outcome (`bind-failed`). */
export function outcomeClass(outcome: Outcome): string {
  return outcome.replace(/ /g, '-');
}

/**
 * How fresh the cluster state behind a decision was, in user words (`decided on the cluster state as of 0.1 s
 * before`); the change-journal entry and milliseconds stay in the JSON and in `--detail` output.
 */
export function viewAgePhrase(ageMs: number): string {
  const seconds = Math.max(0, ageMs) / 1000;
  const shown = seconds < 10 ? seconds.toFixed(1) : String(Math.round(seconds));
  return `decided on the cluster state as of ${shown} s before`;
}

/**
 * Decide-ahead in user words (docs/relay.md, "Deciding ahead"): an attempt made before kube-scheduler asked (and when
 * its filter used it: `usedAt`, the bind's `filterUsedAhead`), or a live one after a decision made ahead that its filter
 * could not use, and why.
 */
export function aheadPhrase(ahead: { readonly kind: 'decided' } | { readonly kind: 'notUsed'; readonly reason: string }, usedAt?: string): string {
  if (ahead.kind === 'notUsed') return `decided live: ${ahead.reason}`;
  const decided = "decided ahead, before kube-scheduler's filter asked";
  return usedAt === undefined ? decided : `${decided}; its filter was answered from this decision at ${usedAt}`;
}

/** Lock-aware placement in user words (docs/locks.md): a node passed over, and who was allocating there (if the reader may know). */
export function passedOverPhrase(passed: { readonly name: string; readonly holder?: string | undefined }): string {
  return `passed over ${passed.name}: ${passed.holder ?? 'a pod in a namespace you may not read'} is allocating there`;
}

/** Lock-aware placement when every fitting node was busy: the chosen one had the fewest allocations under way. */
export function leastBusyPhrase(leastBusy: { readonly allocations: number }): string {
  return `every node that fits had an allocation under way: this one had the fewest (${leastBusy.allocations}), and the pod's bind waits for ${leastBusy.allocations === 1 ? 'it' : 'them'}`;
}

/** `1 node`, `4 nodes`. */
export function countOf(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
