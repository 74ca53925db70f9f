import {
  logDecision,
  logLockContention,
  logRealtime,
  recordDecisionMetrics,
  recordLockContention,
  recordRealtime,
} from '../../../lib/diagnostics/decisionLogs';
import type { NodeEvidence, RealtimeNote } from '../../../lib/engine/types';
import type { Decision } from '../../../lib/engine/decision';
import { setVerbosity } from '../../../lib/powertools';
import { captureLogger, captureMetrics, type LogLine } from './capture';
import { record } from './fixtures';

const ctx = { attemptId: 'f00dcafe-0002', pod: 'ml/trainer-5gpu' };
const standardKeys = ['level', 'message', 'timestamp', 'service', 'sampling_rate'];

function logAt(level: number, evidence = record('nofit').filter.nodes): LogLine[] {
  const capture = captureLogger();
  setVerbosity(level);
  try {
    logDecision(capture.logger, ctx, () => evidence);
  } finally {
    setVerbosity(0);
    capture.restore();
  }
  return capture.lines;
}

function fieldsOf(line: LogLine): Record<string, unknown> {
  return Object.fromEntries(Object.entries(line).filter(([key]) => !standardKeys.includes(key)));
}

describe('logDecision', () => {
  it.each([0, 3])('writes nothing at verbosity %i', (level) => {
    expect(logAt(level)).toEqual([]);
  });

  it.each([0, 3])('does not build the evidence at verbosity %i (it costs what deciding does)', (level) => {
    const capture = captureLogger();
    setVerbosity(level);
    let built = 0;
    try {
      logDecision(capture.logger, ctx, () => {
        built += 1;
        return record('nofit').filter.nodes;
      });
    } finally {
      setVerbosity(0);
      capture.restore();
    }
    expect(built).toBe(0);
  });

  it('writes one line per node at verbosity 4, with the aggregated reason', () => {
    const lines = logAt(4);
    expect(lines.map((line) => [line.level, line.message, fieldsOf(line)])).toEqual([
      ['INFO', 'NodeUnfitPod', { pod: 'ml/trainer-5gpu', node: 'node1', attemptId: 'f00dcafe-0002', v: 4, reason: 'NodeInsufficientDevice' }],
      [
        'INFO',
        'NodeUnfitPod',
        {
          pod: 'ml/trainer-5gpu',
          node: 'node2',
          attemptId: 'f00dcafe-0002',
          v: 4,
          reason: '2/8 CardInsufficientCore, 3/8 AllocatedCardsInsufficientRequest, 3/8 CardInsufficientMemory',
        },
      ],
      ['INFO', 'NodeUnfitPod', { pod: 'ml/trainer-5gpu', node: 'node3', attemptId: 'f00dcafe-0002', v: 4, reason: '1/2 CardInsufficientMemory, 1/2 CardNotHealth' }],
      ['INFO', 'NodeUnfitPod', { pod: 'ml/trainer-5gpu', node: 'node4', attemptId: 'f00dcafe-0002', v: 4, reason: 'node unregistered' }],
    ]);
  });

  it('logs a fitting node with its float32 score as HAMi prints it', () => {
    const lines = logAt(4, record('success').filter.nodes);
    expect(lines.find((line) => line.message === 'NodeFitPod')).toMatchObject({ node: 'node3', score: 2.35, v: 4 });
  });

  it('adds one line per card per failed check at verbosity 5, with the compared numbers', () => {
    const detail = logAt(5).filter((line) => line.v === 5);
    expect(detail.map((line) => `${String(line.node)} ${String(line.container)} ${line.message}`)).toEqual([
      'node1 trainer NodeInsufficientDevice',
      'node2 trainer CardInsufficientMemory',
      'node2 trainer CardInsufficientMemory',
      'node2 trainer CardInsufficientMemory',
      'node2 trainer CardInsufficientCore',
      'node2 trainer CardInsufficientCore',
      'node2 trainer AllocatedCardsInsufficientRequest',
      'node3 loader CardInsufficientMemory',
      'node3 loader CardNotHealth',
    ]);
    expect(fieldsOf(detail[1] as LogLine)).toEqual({
      pod: 'ml/trainer-5gpu',
      node: 'node2',
      attemptId: 'f00dcafe-0002',
      v: 5,
      container: 'trainer',
      device: 'GPU-00000304-aaaa-bbbb-cccc-000000000304',
      deviceIndex: 4,
      deviceTotalMemory: 46080,
      deviceUsedMemory: 44000,
      requestMemory: 3000,
      deviceTotalCore: 100,
      deviceUsedCore: 10,
      requestCores: 30,
      count: 10,
      used: 2,
    });
    expect(fieldsOf(detail[0] as LogLine)).toMatchObject({ requestDevices: 5 });
    expect(fieldsOf(detail[6] as LogLine)).toMatchObject({ requestDevices: 5, allocatedDevices: 3 });
  });

  it('keeps every line attributable: pod, node and attemptId on all of them', () => {
    for (const line of logAt(5)) expect(line).toEqual(expect.objectContaining({ pod: ctx.pod, attemptId: ctx.attemptId, node: expect.any(String) }));
  });
});

const notes: RealtimeNote[] = [
  { node: 'node2', uuid: 'GPU-a', outcome: 'failed', requestedMem: 4096, realUsedMem: 6144, totalMem: 8192, cachedUsedMem: 0 },
  { node: 'node2', uuid: 'GPU-b', outcome: 'warned', requestedMem: 4096, realUsedMem: 7000, totalMem: 8192, cachedUsedMem: 1000 },
  { node: 'node3', uuid: 'GPU-c', outcome: 'fallback', requestedMem: 4096, cachedUsedMem: 2048 },
  { node: 'node4', uuid: 'GPU-d', outcome: 'passed', requestedMem: 4096, realUsedMem: 2048, totalMem: 81559, cachedUsedMem: 0 },
];

describe('logRealtime and logLockContention', () => {
  function capture(level: number, act: (logger: Parameters<typeof logRealtime>[0]) => void): LogLine[] {
    const c = captureLogger();
    setVerbosity(level);
    try {
      act(c.logger);
    } finally {
      setVerbosity(0);
      c.restore();
    }
    return c.lines;
  }

  it("uses HAMi's real-time texts; refusals and fallbacks whatever the verbosity", () => {
    const lines = capture(0, (logger) => logRealtime(logger, ctx, notes));
    expect(lines.map((line) => [line.level, line.message, line.device, line.mode])).toEqual([
      ['WARN', 'Real-time memory check failed', 'GPU-a', 'strict'],
      ['WARN', 'Real-time memory check failed', 'GPU-b', 'warning'],
      ['INFO', 'Failed to get real-time usage, using cached data', 'GPU-c', undefined],
    ]);
    expect(fieldsOf(lines[0] as LogLine)).toEqual({
      pod: 'ml/trainer-5gpu',
      node: 'node2',
      attemptId: 'f00dcafe-0002',
      device: 'GPU-a',
      requestMemory: 4096,
      realUsedMemory: 6144,
      totalMemory: 8192,
      mode: 'strict',
    });
  });

  it('logs successful real-time reads at verbosity 5 only', () => {
    const lines = capture(5, (logger) => logRealtime(logger, ctx, notes));
    expect(lines.find((line) => line.message === 'Updated real-time device usage')).toMatchObject({
      node: 'node4',
      device: 'GPU-d',
      realUsedMemory: 2048,
      cachedUsedMemory: 0,
    });
  });

  it('logs lock contention with the holder', () => {
    const lines = capture(0, (logger) => logLockContention(logger, { pod: 'default/b', node: 'node3', holder: 'default/a', attemptId: 'x1' }));
    expect(lines.map((line) => [line.level, line.message, fieldsOf(line)])).toEqual([
      ['WARN', 'NodeLockContention', { pod: 'default/b', node: 'node3', holder: 'default/a', attemptId: 'x1' }],
    ]);
  });
});

describe('decision metrics (EMF)', () => {
  function emit(act: (metrics: Parameters<typeof recordDecisionMetrics>[0]) => void) {
    const capture = captureMetrics();
    try {
      act(capture.metrics);
      capture.metrics.publishStoredMetrics();
    } finally {
      capture.restore();
    }
    return capture.documents;
  }
  const valueOf = (documents: ReturnType<typeof emit>, name: string, dimension?: [string, string]) =>
    documents
      .filter((doc) => name in doc && (dimension === undefined || doc[dimension[0]] === dimension[1]))
      .map((doc) => doc[name]);

  const notPacked = (): never => {
    throw new Error('metrics never pack evidence');
  };
  /** HAMi's FailedNodes of a recorded decision: each failed node's text. */
  const failedNodesOf = (nodes: readonly NodeEvidence[]) => Object.fromEntries(nodes.filter((n) => n.status === 'failed').map((n) => [n.name, n.reason ?? '']));
  /** Metrics count without building the evidence (its objects cost what deciding does). */
  const unread = (): never => {
    throw new Error('metrics never read the evidence');
  };

  it('records latency, node counts and one Reason metric per code', () => {
    const nofit = record('nofit');
    const decision: Decision = {
      kind: 'noFit',
      failedNodes: failedNodesOf(nofit.filter.nodes),
      message: nofit.filter.summary,
      reasonEvents: [],
      get evidence() {
        return unread();
      },
      realtime: notes,
      packEvidence: notPacked,
      release: () => undefined,
    };
    const documents = emit((metrics) => recordDecisionMetrics(metrics, decision, 12.5));
    expect(valueOf(documents, 'DecisionLatency')).toEqual([12.5]);
    expect(valueOf(documents, 'NodesEvaluated')).toEqual([4]);
    expect(valueOf(documents, 'NodesFit')).toEqual([0]);
    expect(valueOf(documents, 'NodesUnfit')).toEqual([4]);
    const reasons = Object.fromEntries(documents.filter((doc) => 'Reason' in doc).map((doc) => [doc.ReasonCode, doc.Reason]));
    expect(reasons).toEqual({
      CardInsufficientMemory: 2,
      NodeInsufficientDevice: 1,
      CardInsufficientCore: 1,
      AllocatedCardsInsufficientRequest: 1,
      CardNotHealth: 1,
      'node unregistered': 1,
    });
    const reasonDoc = documents.find((doc) => doc.ReasonCode === 'CardInsufficientMemory');
    expect(reasonDoc?._aws.CloudWatchMetrics[0]).toEqual({
      Namespace: 'HamiScheduler',
      Dimensions: [['service', 'ReasonCode']],
      Metrics: [{ Name: 'Reason', Unit: 'Count' }],
    });
    expect(valueOf(documents, 'RealtimeCheck', ['Outcome', 'failed'])).toEqual([1]);
    expect(valueOf(documents, 'RealtimeCheck', ['Outcome', 'fallback'])).toEqual([1]);
  });

  it('counts fits on success and a filter error as its own reason', () => {
    const success = record('success');
    const fit: Decision = {
      kind: 'fit',
      node: 'node3',
      score: 2.35,
      devices: [],
      claims: [],
      bookWholeNode: false,
      podAnnotations: {},
      packEvidence: notPacked,
      release: () => undefined,
      get fitNodes(): never {
        throw new Error('the metrics built the fitting nodes list to count it');
      },
      fitNodeCount: 1,
      nodePolicy: 'binpack',
      passedOver: [],
      failedNodes: failedNodesOf(success.filter.nodes),
      message: success.filter.summary,
      get evidence() {
        return unread();
      },
      realtime: [],
    };
    const documents = emit((metrics) => {
      recordDecisionMetrics(metrics, fit, 3);
      recordDecisionMetrics(metrics, { kind: 'error', message: 'invalid hami.io/device-scoring-weights annotation "": expected key=value entries' }, 1);
    });
    expect(valueOf(documents, 'NodesFit')).toEqual([1]);
    expect(valueOf(documents, 'NodesUnfit')).toEqual([2]);
    expect(valueOf(documents, 'FilterErrors')).toEqual([1]);
    expect(valueOf(documents, 'Reason', ['ReasonCode', 'InvalidDeviceScoringWeights'])).toEqual([1]);
    expect(valueOf(documents, 'DecisionLatency')).toEqual([[3, 1]]);
  });

  it('records lock contention and real-time outcomes', () => {
    const documents = emit((metrics) => {
      recordLockContention(metrics);
      recordLockContention(metrics);
      recordRealtime(metrics, 'warned', 3);
    });
    expect(valueOf(documents, 'LockContention')).toEqual([[1, 1]]);
    expect(valueOf(documents, 'RealtimeCheck', ['Outcome', 'warned'])).toEqual([3]);
  });
});
