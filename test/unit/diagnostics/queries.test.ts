/**
 * Acceptance: every shipped Logs Insights query reads only fields that our logging functions really
 * emit (captured from the Powertools logger at verbosity 4 and 5), and filters on messages they write.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { logDecision, logEvictionRefused, logLockContention, logPreemption, logRealtime } from '../../../lib/diagnostics/decisionLogs';
import { parseQueryFile, queryFields } from '../../../lib/diagnostics/insightsQuery';
import { setVerbosity } from '../../../lib/powertools';
import { captureLogger, type LogLine } from './capture';
import { record } from './fixtures';
import { decide } from '../../../lib/engine/decide';
import { card, gpu, input, node, pod } from '../engine/fixtures';

/** A MIG card whose one placement is taken by the container's first instance: its second meets CardMigTopologyInfeasible. */
function migEvidence() {
  const profile = { name: '1g.5gb', memoryMB: 4864, core: 14, sliceCount: 1, placements: [{ start: 6, size: 1 }] };
  const migCard = card('GPU-mig', { count: 7, devmem: 40960, devcore: 100, mode: 'mig', migProfiles: [profile] });
  const decision = decide(input(pod([gpu(2, { 'nvidia.com/gpumem': 4000 })]), [node('mig-node', [migCard])]));
  if (decision.kind === 'error') throw new Error(decision.message);
  return decision.evidence;
}

const queryDir = join(__dirname, '..', '..', '..', 'infra', 'cloudwatch');
const queryFiles = readdirSync(queryDir).filter((file) => file.endsWith('.query'));

function emittedLines(): LogLine[] {
  const lines: LogLine[] = [];
  for (const level of [4, 5]) {
    const capture = captureLogger();
    setVerbosity(level);
    try {
      for (const name of ['success', 'nofit', 'bindfail'] as const) {
        const attempt = record(name);
        const ctx = { attemptId: attempt.attemptId, pod: `${attempt.pod.namespace}/${attempt.pod.name}` };
        logDecision(capture.logger, ctx, () => attempt.filter.nodes);
        logRealtime(capture.logger, ctx, [
          { node: 'node2', uuid: 'GPU-a', outcome: 'failed', requestedMem: 4096, realUsedMem: 6144, totalMem: 8192, cachedUsedMem: 0 },
          { node: 'node3', uuid: 'GPU-c', outcome: 'fallback', requestedMem: 4096, cachedUsedMem: 2048 },
          { node: 'node4', uuid: 'GPU-d', outcome: 'passed', requestedMem: 4096, realUsedMem: 2048, totalMem: 81559, cachedUsedMem: 0 },
        ]);
      }
      logDecision(capture.logger, { attemptId: 'm1g00000-0001', pod: 'ml/mig-pod' }, migEvidence);
      logLockContention(capture.logger, { pod: 'default/infer-7c9d', node: 'node3', holder: 'default/other', attemptId: 'b1ndfa11-0003' });
      logPreemption(capture.logger, { attemptId: 'pr33mpt0-0001', pod: 'ml/urgent' }, {
        outcome: 'evicting',
        summary: 'evicting 1 lower-priority pod: ml/batch (priority 0) on node node1 to free GPU-a',
        node: 'node1',
        cards: ['GPU-a'],
        victims: [{ pod: 'ml/batch', uid: 'u1', priority: 0, cards: [{ uuid: 'GPU-a', mem: 12288, cores: 0 }] }],
      });
      logEvictionRefused(capture.logger, { pod: 'ml/urgent', victim: 'ml/db', node: 'node1', disruptionBudget: true, error: "Cannot evict pod as it would violate the pod's disruption budget." });
    } finally {
      setVerbosity(0);
      capture.restore();
    }
    lines.push(...capture.lines);
  }
  return lines;
}

describe('infra/cloudwatch queries', () => {
  const lines = emittedLines();
  const emittedFields = new Set(lines.flatMap((line) => Object.keys(line)));
  const emittedMessages = new Set(lines.map((line) => line.message));

  it('ships at least the five queries the issue asks for, one per file', () => {
    const names = queryFiles.map((file) => file.replace(/\.query$/, ''));
    expect(names).toEqual(
      expect.arrayContaining(['failures-by-reason', 'pod-decisions', 'nodes-most-often-unfit', 'lock-contention', 'realtime-check-failures']),
    );
  });

  it.each(queryFiles)('%s reads only fields our logs emit', (file) => {
    const parsed = parseQueryFile(file, readFileSync(join(queryDir, file), 'utf8'));
    expect(parsed.description).toBeDefined();
    const fields = queryFields(parsed.query);
    expect(fields.length).toBeGreaterThan(0);
    const missing = fields.filter((field) => !field.startsWith('@') && !emittedFields.has(field));
    expect(missing).toEqual([]);
  });

  it.each(queryFiles)('%s filters only on messages our logs emit', (file) => {
    const parsed = parseQueryFile(file, readFileSync(join(queryDir, file), 'utf8'));
    const compared = [...parsed.query.matchAll(/\bmessage\s*=\s*"([^"]*)"/g)].map((match) => match[1]);
    for (const message of compared) expect(emittedMessages).toContain(message);
  });

  it('would catch a query reading a field nobody logs', () => {
    const fields = queryFields('fields node, deviceFreeMemory | filter message = "NodeUnfitPod"');
    expect(fields.filter((field) => !emittedFields.has(field))).toEqual(['deviceFreeMemory']);
  });
});
