/**
 * Two-level decision logs (klog-style verbosity, Powertools JSON) and EMF metrics, built from the
 * engine's evidence. Level 4: one line per node. Level 5: one line per card per failed check, with the
 * reason code as the message and the numbers that were compared. Every line carries pod, node and
 * attemptId so concurrent decisions can be separated in CloudWatch Logs Insights.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { ReasonCode, type CardEvidence, type ContainerEvidence, type Decision, type NodeEvidence, type RealtimeNote } from '../engine/types';
import { v } from '../powertools';
import { LogField, LogMessage } from './logMessages';
import type { PreemptionRecord } from './record';
import { countFailedNodesByReason, filterErrorKey } from './reasons';
import { float32Json } from './schedulerLog';

/** The part of the Powertools logger these functions use (tests pass a recorder). */
export interface DecisionLogger {
  info(message: string, attributes: Record<string, unknown>): void;
  warn(message: string, attributes: Record<string, unknown>): void;
}

export interface DecisionContext {
  readonly attemptId: string;
  /** `namespace/name`. */
  readonly pod: string;
}

/** `evidence` is read only when level 4 is on: the evidence objects of a thousand nodes cost about what deciding does. */
export function logDecision(logger: DecisionLogger, ctx: DecisionContext, evidence: () => readonly NodeEvidence[]): void {
  if (!v(4)) return;
  for (const node of evidence()) {
    const base = { pod: ctx.pod, node: node.name, attemptId: ctx.attemptId };
    if (node.status === 'passed') {
      logger.info(LogMessage.NodeFitPod, { ...base, v: 4, score: float32Json(node.score) });
    } else {
      logger.info(LogMessage.NodeUnfitPod, { ...base, v: 4, reason: node.reason ?? containerReasons(node) });
    }
    if (v(5)) for (const container of node.containers) logContainerDetail(logger, base, container);
  }
}

function containerReasons(node: NodeEvidence): string {
  return node.containers
    .filter((container) => container.status === 'failed')
    .map((container) => container.reason ?? '')
    .join('; ');
}

interface LineBase {
  readonly pod: string;
  readonly node: string;
  readonly attemptId: string;
}

function logContainerDetail(logger: DecisionLogger, base: LineBase, container: ContainerEvidence): void {
  const containerBase = { ...base, v: 5, container: container.name };
  if (container.reason === ReasonCode.NodeInsufficientDevice) {
    // HAMi logs this one at V(5) with the request, since no card was tried.
    logger.info(ReasonCode.NodeInsufficientDevice, { ...containerBase, requestDevices: container.request?.nums ?? 0 });
    return;
  }
  for (const card of container.cards) {
    if (card.outcome === 'Fit') continue;
    logger.info(card.outcome, { ...containerBase, ...cardFields(card) });
  }
  if (container.status === 'failed' && container.reason?.includes(ReasonCode.AllocatedCardsInsufficientRequest)) {
    const allocated = container.cards.filter((card) => card.outcome === 'Fit').length;
    logger.info(ReasonCode.AllocatedCardsInsufficientRequest, {
      ...containerBase,
      requestDevices: container.request?.nums ?? 0,
      allocatedDevices: allocated,
    });
  }
}

/** Constant field names: every card line has all of them, whichever check failed. */
function cardFields(card: CardEvidence): Record<string, number | string> {
  const fields: Record<string, number | string> = {
    device: card.uuid,
    deviceIndex: card.index,
    deviceTotalMemory: card.totalMem,
    deviceUsedMemory: card.usedMem,
    requestMemory: card.requestedMem,
    deviceTotalCore: card.totalCores,
    deviceUsedCore: card.usedCores,
    requestCores: card.requestedCores,
    count: card.slots,
    used: card.usedSlots,
  };
  if (card.realtimeUsedMem !== undefined) fields.realUsedMemory = card.realtimeUsedMem;
  if (card.realtimeTotalMem !== undefined) fields.totalMemory = card.realtimeTotalMem;
  return fields;
}

/** Lock contention at bind, for the control plane (always logged: it is rare and actionable). */
export function logLockContention(
  logger: DecisionLogger,
  fields: { readonly pod: string; readonly node: string; readonly holder: string; readonly attemptId: string },
): void {
  logger.warn(LogMessage.NodeLockContention, { pod: fields.pod, node: fields.node, holder: fields.holder, attemptId: fields.attemptId });
}

/** GPU-aware preemption's outcome for a pod (docs/preemption.md): always logged, it is rare and acts on the cluster. */
export function logPreemption(logger: DecisionLogger, ctx: DecisionContext, preemption: PreemptionRecord): void {
  logger.info(LogMessage.Preemption, {
    [LogField.pod]: ctx.pod,
    [LogField.attemptId]: ctx.attemptId,
    [LogField.outcome]: preemption.outcome,
    ...(preemption.node !== undefined ? { [LogField.node]: preemption.node } : {}),
    [LogField.victims]: (preemption.victims ?? []).map((v) => v.pod).join(','),
    [LogField.cards]: (preemption.cards ?? []).join(','),
    [LogField.summary]: preemption.summary,
  });
}

/** A victim's eviction the Eviction API refused (docs/preemption.md). */
export function logEvictionRefused(
  logger: DecisionLogger,
  fields: { readonly pod: string; readonly victim: string; readonly node: string; readonly disruptionBudget: boolean; readonly error: string },
): void {
  logger.warn(LogMessage.EvictionRefused, {
    [LogField.pod]: fields.pod,
    [LogField.victim]: fields.victim,
    [LogField.node]: fields.node,
    [LogField.disruptionBudget]: fields.disruptionBudget,
    [LogField.error]: fields.error,
  });
}

/**
 * Real-time check notes (docs/api.md §8) with HAMi's texts. Refusals and warnings are always logged (warn),
 * fallbacks always (info, the data is missing or stale), successful uses of real-time data at level 5
 * (without the `v` field, which marks decision lines only).
 */
export function logRealtime(logger: DecisionLogger, ctx: DecisionContext, notes: readonly RealtimeNote[]): void {
  for (const note of notes) {
    const base = { pod: ctx.pod, node: note.node, attemptId: ctx.attemptId, device: note.uuid };
    switch (note.outcome) {
      case 'failed':
      case 'warned':
        logger.warn(LogMessage.RealtimeCheckFailed, {
          ...base,
          requestMemory: note.requestedMem,
          realUsedMemory: note.realUsedMem ?? null,
          totalMemory: note.totalMem ?? null,
          mode: note.outcome === 'failed' ? 'strict' : 'warning',
        });
        break;
      case 'fallback':
        logger.info(LogMessage.RealtimeFallback, { ...base, cachedUsedMemory: note.cachedUsedMem });
        break;
      case 'passed':
        if (v(5)) {
          logger.info(LogMessage.RealtimeUpdated, {
            ...base,
            cachedUsedMemory: note.cachedUsedMem,
            realUsedMemory: note.realUsedMem ?? null,
            totalMemory: note.totalMem ?? null,
          });
        }
        break;
    }
  }
}

type MetricUnitValue = (typeof MetricUnit)[keyof typeof MetricUnit];

/** The part of Powertools Metrics these functions use. */
export interface DecisionMetrics {
  addMetric(name: string, unit: MetricUnitValue, value: number): void;
  singleMetric(): { addDimension(name: string, value: string): void; addMetric(name: string, unit: MetricUnitValue, value: number): void };
}

export const MetricName = {
  DecisionLatency: 'DecisionLatency',
  NodesEvaluated: 'NodesEvaluated',
  NodesFit: 'NodesFit',
  NodesUnfit: 'NodesUnfit',
  /** Nodes failing with a reason, dimension `ReasonCode`. */
  Reason: 'Reason',
  FilterErrors: 'FilterErrors',
  LockContention: 'LockContention',
  /** Real-time checks, dimension `Outcome` (passed, failed, warned, fallback). */
  RealtimeCheck: 'RealtimeCheck',
  /** Cards a pod adopted from its annotations took past their capacity (docs/api.md §4, "Adoption"). */
  AdoptedPastCapacity: 'AdoptedPastCapacity',
} as const;

export function recordDecisionMetrics(metrics: DecisionMetrics, decision: Decision, latencyMs: number): void {
  metrics.addMetric(MetricName.DecisionLatency, MetricUnit.Milliseconds, latencyMs);
  if (decision.kind === 'error') {
    metrics.addMetric(MetricName.FilterErrors, MetricUnit.Count, 1);
    recordReason(metrics, filterErrorKey(decision.message), 1);
    return;
  }
  // From the fit count and the failure texts: building a thousand nodes' evidence or fit list costs what deciding does.
  const fit = decision.kind === 'fit' ? decision.fitNodeCount : 0;
  const unfit = Object.keys(decision.failedNodes).length;
  metrics.addMetric(MetricName.NodesEvaluated, MetricUnit.Count, fit + unfit);
  metrics.addMetric(MetricName.NodesFit, MetricUnit.Count, fit);
  metrics.addMetric(MetricName.NodesUnfit, MetricUnit.Count, unfit);
  for (const [key, nodes] of countFailedNodesByReason(decision.failedNodes)) recordReason(metrics, key, nodes);
  const outcomes = new Map<RealtimeNote['outcome'], number>();
  for (const note of decision.realtime) outcomes.set(note.outcome, (outcomes.get(note.outcome) ?? 0) + 1);
  for (const [outcome, count] of outcomes) recordRealtime(metrics, outcome, count);
}

// A single metric per code: its own dimension set, published at once (not mixed with the buffered ones).
function recordReason(metrics: DecisionMetrics, key: string, nodes: number): void {
  const single = metrics.singleMetric();
  single.addDimension('ReasonCode', key);
  single.addMetric(MetricName.Reason, MetricUnit.Count, nodes);
}

export function recordAdoptedPastCapacity(metrics: DecisionMetrics, cards: number): void {
  metrics.addMetric(MetricName.AdoptedPastCapacity, MetricUnit.Count, cards);
}

export function recordLockContention(metrics: DecisionMetrics): void {
  metrics.addMetric(MetricName.LockContention, MetricUnit.Count, 1);
}

export function recordRealtime(metrics: DecisionMetrics, outcome: RealtimeNote['outcome'], count = 1): void {
  const single = metrics.singleMetric();
  single.addDimension('Outcome', outcome);
  single.addMetric(MetricName.RealtimeCheck, MetricUnit.Count, count);
}
