/**
 * The one-sentence answer to "why is my pod (not) running?", from a scheduling attempt: what hami-diag prints
 * first, what the scheduler-log listing carries per pod, and what the console shows at the top of a pod page.
 * One rule for all three (docs/api.md §5 `answer`, §10). A pod without a record is answered by the debugging
 * decision tree instead (lib/diagnostics/decisionTree.ts).
 */
import { NVIDIA } from '../engine/types';
import { hintFor } from './hints';
import type { AttemptRecord } from './record';
import { bindFailureKey, countNodesByReason, filterErrorKey } from './reasons';
import { countOf, outcomeLabel, outcomeOf } from './vocabulary';

/** The fields of an attempt the answer reads: the full scheduler log and the listing's summary both have them. */
export interface AnswerInput {
  readonly status: 'succeeded' | 'failed' | 'pending';
  readonly filter: {
    readonly status: 'passed' | 'failed';
    readonly summary: string;
    /** The chosen node when passed. */
    readonly node?: string;
    /** Failed nodes per reason, most first (`countNodesByReason`). */
    readonly reasons: readonly { readonly code: string; readonly nodes: number }[];
    /** Nodes the filter evaluated. */
    readonly evaluated: number;
    /** The device type the pod asked for, when not NVIDIA's: the fix is given in that kind's terms. */
    readonly requestType?: string;
  };
  readonly bind: { readonly status: 'passed' | 'failed' | 'pending'; readonly summary: string; readonly node?: string };
}

export interface Answer {
  /** One sentence, outcome first. */
  readonly sentence: string;
  /** The reason the hint is about (a HAMi reason code or one of ours), when one applies. */
  readonly code?: string;
  /** What to do about it: the hint's fix for `code`. */
  readonly fix?: string;
}

/**
 * How the filter's summary starts while a preemptor waits for its victims to leave (docs/preemption.md): the answer
 * reads it from the summary, which the full scheduler log and the listing's summary both keep.
 */
export const WAITING_FOR_VICTIMS = 'waiting for the pods preempted for it to leave node';

/** The filter's facts the answer reads, from a stored attempt (its evidence unpacked, or the counts the filter wrote). */
export function filterFacts(record: AttemptRecord): AnswerInput['filter'] {
  const { filter } = record;
  const reasons = filter.reasons ?? countNodesByReason(filter.nodes).map(([code, nodes]) => ({ code, nodes }));
  const requestType = requestTypeOf(record);
  return {
    status: filter.status,
    summary: filter.summary,
    ...(filter.node !== undefined ? { node: filter.node } : {}),
    reasons: reasons.map(({ code, nodes }) => ({ code, nodes })),
    evaluated: filter.evaluated ?? filter.nodes.length,
    ...(requestType !== undefined && requestType !== NVIDIA ? { requestType } : {}),
  };
}

/**
 * The device type the pod asked for (one kind per pod): as the filter wrote it, else (records from before it did, and
 * fits) from the containers' requests in the evidence. A record whose counts the filter wrote is never unpacked here.
 */
export function requestTypeOf(record: AttemptRecord): string | undefined {
  const { filter } = record;
  if (filter.requestType !== undefined || filter.reasons !== undefined) return filter.requestType;
  for (const node of filter.nodes) {
    for (const container of node.containers) if (container.request !== undefined) return container.request.type;
  }
  return filter.devices?.flat()[0]?.type;
}

export function answerFor(attempt: AnswerInput): Answer {
  const { filter, bind } = attempt;
  const outcome = outcomeLabel(outcomeOf(attempt));
  if (filter.status === 'failed') {
    const top = filter.reasons[0];
    if (top !== undefined) return withHint(`${outcome}: no node fits. ${noFitCounts(filter.reasons, filter.evaluated)}.`, top.code, filter.requestType);
    if (filter.summary.startsWith(WAITING_FOR_VICTIMS)) return { sentence: `${outcome}: ${filter.summary}.` };
    if (filter.evaluated === 0 && filter.summary.startsWith('no available node')) {
      return { sentence: `${outcome}: the scheduler offered no candidate node to the filter.` };
    }
    return withHint(`${outcome}: the filter refused the pod before trying any node: ${filter.summary}`, filterErrorKey(filter.summary), filter.requestType);
  }
  const node = filter.node ?? bind.node ?? 'its node';
  switch (bind.status) {
    case 'passed':
      return { sentence: `${outcome}: bound to ${bind.node ?? node}.` };
    case 'failed':
      return withHint(`${outcome}: ${node} was chosen, but the pod could not be bound there: ${bind.summary}`, bindFailureKey(bind.summary));
    case 'pending':
      return { sentence: `${outcome}: placed on ${node}; the bind has not been reported yet.` };
  }
}

/** How many reasons after the first the sentence names with their counts; the rest are counted. */
const NAMED_OTHER_REASONS = 2;

/**
 * `All 4 nodes fail with X`, `2 of 4 nodes fail with X; also Y on 1 node and 3 other reasons`. A node may show several
 * reasons, so the counts are never added up or said to cover "the rest"; nodes showing no reason code (passed over,
 * or failing with a text no code matches) are counted only when one reason was seen, where they are exactly the others.
 */
export function noFitCounts(reasons: AnswerInput['filter']['reasons'], evaluated: number): string {
  const [top, ...others] = reasons;
  if (top === undefined) return `${countOf(evaluated, 'node')} evaluated`;
  const head =
    top.nodes >= evaluated
      ? evaluated === 1
        ? `The only node evaluated fails with ${top.code}`
        : `All ${evaluated} nodes fail with ${top.code}`
      : `${top.nodes} of ${countOf(evaluated, 'node')} ${top.nodes === 1 ? 'fails' : 'fail'} with ${top.code}`;
  if (others.length === 0) {
    const rest = evaluated - top.nodes;
    return rest > 0 ? `${head}; the other ${countOf(rest, 'node')} ${rest === 1 ? 'shows' : 'show'} no reason code` : head;
  }
  const named = others.slice(0, NAMED_OTHER_REASONS).map((r) => `${r.code} on ${countOf(r.nodes, 'node')}`);
  const more = others.length - named.length;
  const last = more > 0 ? `${more} other ${more === 1 ? 'reason' : 'reasons'}` : named.pop();
  return `${head}; also ${named.length > 0 ? `${named.join(', ')} and ${last}` : last}`;
}

function withHint(sentence: string, code: string, requestType?: string): Answer {
  const hint = hintFor(code, requestType);
  return hint ? { sentence, code, fix: hint.fix } : { sentence, code };
}
