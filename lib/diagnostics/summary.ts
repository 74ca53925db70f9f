/**
 * The scheduler-log listing (docs/api.md §10): one summary per pod, of its latest attempt, stored beside the
 * attempt record in the same write (docs/state.md, "Scheduler-log summaries") so that a namespace lists without
 * reading any record. Pure: the record in, the summary out; the stores call `summarizeAttempt`, the routes
 * `renderSummary`.
 */
import { answerFor, filterFacts, type Answer, type AnswerInput } from './answer';
import { overallStatus } from './schedulerLog';
import type { AttemptRecord, BindRecord, PodRef } from './record';

/** Filter summaries are HAMi's texts, which list every fitting node; the listing keeps the start. */
export const MAX_SUMMARY_TEXT = 300;

/** What the store keeps per pod: the latest attempt's filter outcome and the bind outcome that belongs to it. */
export interface AttemptSummary {
  readonly pod: PodRef;
  readonly attemptId: string;
  /** RFC 3339 of the filter call. */
  readonly time: string;
  /** The same, epoch ms: a bind outcome belongs to this attempt when it is not older. */
  readonly timeMs: number;
  readonly filter: AnswerInput['filter'];
  readonly bind: BindRecord;
}

/** One item of `GET .../schedulerlogs`. */
export interface SchedulerLogSummary extends Omit<AttemptSummary, 'timeMs'> {
  readonly status: 'succeeded' | 'failed' | 'pending';
  readonly answer: Answer;
}

export function summarizeAttempt(record: AttemptRecord, timeMs: number): AttemptSummary {
  const filter = filterFacts(record);
  return {
    pod: { namespace: record.pod.namespace, name: record.pod.name, uid: record.pod.uid },
    attemptId: record.attemptId,
    time: record.time,
    timeMs,
    filter: { ...filter, summary: shorten(filter.summary) },
    bind: shortBind(record.bind),
  };
}

/** The bind outcome as the summary keeps it (its text shortened like the filter's). */
export function shortBind(bind: BindRecord): BindRecord {
  return { ...bind, summary: shorten(bind.summary) };
}

export function renderSummary(stored: AttemptSummary): SchedulerLogSummary {
  const { timeMs: _timeMs, ...rest } = stored;
  const status = overallStatus(stored);
  return { ...rest, status, answer: answerFor({ status, filter: stored.filter, bind: stored.bind }) };
}

function shorten(text: string): string {
  return text.length <= MAX_SUMMARY_TEXT ? text : `${text.slice(0, MAX_SUMMARY_TEXT - 1)}…`;
}
