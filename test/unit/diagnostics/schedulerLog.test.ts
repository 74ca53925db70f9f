import { hintFor } from '../../../lib/diagnostics/hints';
import type { AttemptRecord } from '../../../lib/diagnostics/record';
import {
  float32Json,
  notFoundStatus,
  overallStatus,
  renderSchedulerLog,
  schedulerLogSchema,
  type SchedulerLog,
} from '../../../lib/diagnostics/schedulerLog';
import { bindfailHistory, readFixture, record } from './fixtures';

/** The expected files list hint codes only; the texts are checked against hints.ts separately. */
function withHintCodes(log: SchedulerLog): unknown {
  return { ...log, hints: log.hints.map((hint) => hint.code) };
}

describe('renderSchedulerLog', () => {
  it.each(['success', 'nofit', 'bindfail'] as const)('renders the %s attempt exactly as docs/api.md §5', (name) => {
    const log = renderSchedulerLog(record(name));
    expect(withHintCodes(log)).toEqual(readFixture(`${name}.json`));
    expect(JSON.parse(JSON.stringify(log))).toEqual(log);
  });

  it('keeps the docs/api.md example texts: "x/y Reason" per container and the success summary', () => {
    const log = renderSchedulerLog(record('success'));
    expect(log.filter.summary).toBe('find fit node(node3), 2 nodes not fit, 1 nodes fit(node3:2.35)');
    expect(log.filter.nodes[0]?.containers[0]?.reason).toBe(
      '1/8 ExclusiveDeviceAllocateConflict, 2/8 CardInsufficientCore, 2/8 NumaNotFit, 3/8 CardInsufficientMemory',
    );
    expect(JSON.stringify(log)).toContain('"score":2.35');
  });

  it('attaches the full hint text for each code seen', () => {
    const log = renderSchedulerLog(record('bindfail'));
    expect(log.hints).toEqual([hintFor('NodeLockContention')]);
    expect(log.hints[0]?.fix).toMatch(/lock/);
  });

  it('validates against its own schema, with detail and history', () => {
    const log = renderSchedulerLog(record('bindfail'), { detail: 'devices', history: bindfailHistory() });
    expect(schedulerLogSchema.parse(log)).toEqual(log);
  });

  it('adds per-card evidence, request and chosen cards with ?detail=devices', () => {
    const log = renderSchedulerLog(record('success'), { detail: 'devices' });
    const failed = log.filter.nodes[0]?.containers[0];
    expect(failed?.devices).toHaveLength(8);
    expect(failed?.devices?.filter((card) => card.outcome === 'CardInsufficientMemory')).toHaveLength(3);
    expect(failed?.devices?.[0]).toMatchObject({ outcome: 'ExclusiveDeviceAllocateConflict', usedSlots: 1, totalMem: 46080 });
    expect(failed?.request).toEqual({ nums: 1, type: 'NVIDIA', memreq: 3000, mempercentagereq: 101, coresreq: 30 });
    expect(failed?.chosen).toBeUndefined();
    const passed = log.filter.nodes[2]?.containers[0];
    expect(passed?.chosen).toEqual([{ idx: 1, uuid: 'GPU-00000100-aaaa-bbbb-cccc-000000000100', type: 'NVIDIA', usedmem: 3000, usedcores: 30 }]);
    expect(renderSchedulerLog(record('success')).filter.nodes[0]?.containers[0]).not.toHaveProperty('devices');
  });

  it('says why the evidence is less than the decision saw: cards dropped for the item size limit, or unreadable', () => {
    const trimmed = renderSchedulerLog({ ...record('success'), evidenceTrimmed: true });
    expect(trimmed.filter.evidenceNote).toBe("the cards tried were dropped to fit the store's item size limit");
    const unreadable = renderSchedulerLog({ ...record('success'), evidenceUnreadable: 'packed evidence of unknown version 9', filter: { ...record('success').filter, nodes: [] } });
    expect(unreadable.filter.evidenceNote).toBe("the nodes' evidence cannot be read (packed evidence of unknown version 9): written by a later release, or damaged");
    expect(schedulerLogSchema.parse(unreadable)).toEqual(unreadable);
    expect(renderSchedulerLog(record('success')).filter).not.toHaveProperty('evidenceNote');
  });

  it('lists earlier attempts newest first, without hints, skipping the latest itself', () => {
    const latest = record('bindfail');
    const log = renderSchedulerLog(latest, { history: [...bindfailHistory(), latest] });
    expect(log.history?.map((attempt) => [attempt.attempt, attempt.status, attempt.filter.summary])).toEqual([
      [2, 'failed', 'invalid hami.io/device-scoring-weights annotation "slot=1,core=1": expected slot, core, and memory weights'],
      [1, 'failed', 'no available node, 1 nodes do not meet'],
    ]);
    expect(log.history?.some((attempt) => 'hints' in attempt)).toBe(false);
    expect(renderSchedulerLog(latest)).not.toHaveProperty('history');
  });

  it('marks init containers and shows containers without a request as passed', () => {
    const base = record('success');
    const node = base.filter.nodes[2];
    if (!node) throw new Error('fixture changed');
    const withInit: AttemptRecord = {
      ...base,
      filter: {
        ...base.filter,
        nodes: [
          {
            ...node,
            containers: [
              { name: 'setup', index: 0, init: true, status: 'noRequest', cards: [] },
              ...node.containers.map((c) => ({ ...c, index: 1 })),
            ],
          },
        ],
      },
    };
    expect(renderSchedulerLog(withInit).filter.nodes[0]?.containers).toEqual([
      { name: 'setup', status: 'passed', init: true },
      { name: 'c1', status: 'passed' },
    ]);
  });

  it('hints the scoring-weights fix for a filter error, and nothing for an empty candidate list', () => {
    const [, invalidWeights] = bindfailHistory();
    if (!invalidWeights) throw new Error('fixture changed');
    expect(renderSchedulerLog(invalidWeights).hints.map((h) => h.code)).toEqual(['InvalidDeviceScoringWeights']);
    const otherError = { ...invalidWeights, filter: { ...invalidWeights.filter, summary: 'something else' } };
    expect(renderSchedulerLog(otherError).hints.map((h) => h.code)).toEqual(['FilterError']);
    const noCandidates = { ...invalidWeights, filter: { ...invalidWeights.filter, summary: 'no available node, 0 nodes do not meet' } };
    expect(renderSchedulerLog(noCandidates).hints).toEqual([]);
  });

  it('hints a generic bind failure that is not lock contention', () => {
    const base = record('bindfail');
    const failed = { ...base, bind: { ...base.bind, summary: 'pods "infer-7c9d" is forbidden: cannot create binding' } };
    expect(renderSchedulerLog(failed).hints.map((h) => h.code)).toEqual(['BindingFailed']);
  });
});

describe('overallStatus (docs/api.md §9)', () => {
  const base = record('bindfail');
  it.each([
    ['passed', 'passed', 'succeeded'],
    ['passed', 'failed', 'failed'],
    ['passed', 'pending', 'pending'],
    ['failed', 'pending', 'failed'],
    ['failed', 'passed', 'failed'],
  ] as const)('filter %s + bind %s -> %s', (filter, bind, expected) => {
    const attempt: AttemptRecord = { ...base, filter: { ...base.filter, status: filter }, bind: { ...base.bind, status: bind } };
    expect(overallStatus(attempt)).toBe(expected);
  });
});

describe('float32Json', () => {
  it.each([
    [Math.fround(2.35), 2.35],
    [Math.fround(0.98), 0.98],
    [Math.fround(0.65), 0.65],
    [Math.fround(7.5), 7.5],
    [0, 0],
    [Math.fround(1 / 3), 0.33333334],
    [0.1, 0.1], // not a float32: left as is
  ])('%p -> %p', (input, expected) => {
    expect(float32Json(input)).toBe(expected);
  });
});

describe('notFoundStatus', () => {
  it('is a Kubernetes Status body with code 404 and reason NotFound', () => {
    expect(notFoundStatus('ml', 'ghost')).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'no scheduling record for pod ml/ghost',
      reason: 'NotFound',
      details: { name: 'ghost', kind: 'pods' },
      code: 404,
    });
  });
});
