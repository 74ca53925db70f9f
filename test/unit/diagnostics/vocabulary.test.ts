import { renderPodsText } from '../../../lib/cli/renderList';
import { renderSchedulerLogText } from '../../../lib/cli/render';
import { hints } from '../../../lib/diagnostics/hints';
import { renderSchedulerLog } from '../../../lib/diagnostics/schedulerLog';
import { renderSummary, summarizeAttempt } from '../../../lib/diagnostics/summary';
import { Outcome, outcomeLabel, outcomeOf, viewAgePhrase } from '../../../lib/diagnostics/vocabulary';
import { bindfailHistory, record } from './fixtures';

const NAMES = ['success', 'nofit', 'bindfail'] as const;

describe('outcomeOf: one word per outcome, from the filter and the bind', () => {
  it.each<[string, { filter: { status: string }; bind: { status: string } }, Outcome]>([
    ['no node fits: the pod waits', { filter: { status: 'failed' }, bind: { status: 'pending' } }, Outcome.Pending],
    ['bound', { filter: { status: 'passed' }, bind: { status: 'passed' } }, Outcome.Scheduled],
    ['placed, bind not reported', { filter: { status: 'passed' }, bind: { status: 'pending' } }, Outcome.Binding],
    ['the bind failed', { filter: { status: 'passed' }, bind: { status: 'failed' } }, Outcome.BindFailed],
  ])('%s', (_case, attempt, expected) => {
    expect(outcomeOf(attempt)).toBe(expected);
  });
});

describe('every output says the same outcome word for the same attempt', () => {
  const attempts = () => [...NAMES.map((name) => record(name)), ...bindfailHistory()];

  it('the answer starts with the word the badge and STATUS column show', () => {
    const seen = new Set<Outcome>();
    for (const attempt of attempts()) {
      const log = renderSchedulerLog(attempt);
      const outcome = outcomeOf(log);
      seen.add(outcome);
      expect(log.answer?.sentence.startsWith(`${outcomeLabel(outcome)}: `)).toBe(true);
      expect(renderSchedulerLogText(log)).toContain(`Status    ${outcome}\n`);
      const summary = renderSummary(summarizeAttempt(attempt, Date.parse(attempt.time)));
      expect(outcomeOf(summary)).toBe(outcome);
      expect(summary.answer.sentence).toBe(log.answer?.sentence);
      expect(renderPodsText([summary], undefined, { nowMs: Date.parse(attempt.time), wide: false })).toContain(` ${outcome} `);
    }
    // The fixtures cover a pending pod, a scheduled one and a failed bind.
    expect([...seen].sort()).toEqual([Outcome.BindFailed, Outcome.Pending, Outcome.Scheduled].sort());
  });

  it('a pod whose filter found no node is never called failed', () => {
    const log = renderSchedulerLog(record('nofit'));
    const header = renderSchedulerLogText(log).split('\n\n')[0]!;
    expect(header).toContain('Status    pending');
    expect(header).not.toMatch(/\bfailed\b/);
  });
});

describe('no Markdown in plain text', () => {
  it('no hint text carries a backtick', () => {
    const texts = hints.flatMap((hint) => [hint.meaning, hint.cause, hint.fix]);
    expect(texts.filter((text) => text.includes('`'))).toEqual([]);
  });

  it.each(NAMES)('no plain-text rendering of the %s fixture carries a backtick', (name) => {
    const latest = record(name);
    const log = renderSchedulerLog(latest, { detail: 'devices', history: name === 'bindfail' ? bindfailHistory() : [] });
    const summary = renderSummary(summarizeAttempt(latest, Date.parse(latest.time)));
    const outputs = [
      renderSchedulerLogText(log),
      renderPodsText([summary], undefined, { nowMs: Date.parse(latest.time), wide: true }),
      log.answer?.sentence ?? '',
      log.answer?.fix ?? '',
      summary.answer.fix ?? '',
    ];
    expect(outputs.filter((text) => text.includes('`'))).toEqual([]);
  });
});

describe('viewAgePhrase: the decision view in user words', () => {
  it.each([
    [107, 'decided on the cluster state as of 0.1 s before'],
    [0, 'decided on the cluster state as of 0.0 s before'],
    [2_450, 'decided on the cluster state as of 2.5 s before'],
    [61_000, 'decided on the cluster state as of 61 s before'],
  ])('%d ms', (ageMs, expected) => {
    expect(viewAgePhrase(ageMs)).toBe(expected);
    expect(viewAgePhrase(ageMs)).not.toMatch(/journal|view|ms/);
  });
});
