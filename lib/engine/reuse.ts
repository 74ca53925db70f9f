/**
 * Node outcomes carried from one decision to the next (ours; HAMi runs Fit on every candidate every time).
 *
 * What Fit records for a node depends only on the node's state and on the pod's plan (./plan.ts) without the
 * real-time check: its requests, container names, steering annotations and namespace quota, under one engine
 * configuration. A caller that keeps node states as unchanged objects while their nodes do not change (the control
 * plane's warm view does) passes one memo to every decision; a pod whose plan matches an earlier one then gets that
 * decision's rows copied for every node whose state is the same object, and Fit runs only on the nodes that changed.
 * A node state must not be mutated after a decision saw it. The decision and its evidence are exactly those of a
 * decision without the memo (test/unit/engine/reuse.test.ts checks it on random clusters).
 */
import type { DecisionTrace } from './evidence';
import type { PodPlan } from './plan';
import type { EngineConfig, NodeState } from './types';

/** What Fit gave one node: its row in the remembered trace, and the outcome the decision lists. */
export interface RememberedNode {
  readonly row: number;
  readonly score: number;
  readonly reason: string | undefined;
}

export interface RememberedDecision {
  readonly trace: DecisionTrace;
  readonly nodes: ReadonlyMap<NodeState, RememberedNode>;
}

/** Plans remembered at once: a few pod shapes (a deployment's, a job's) cover most of a burst. */
const REMEMBERED_PLANS = 8;

export class EvaluationMemo {
  private config: EngineConfig | undefined;
  private readonly decisions = new Map<string, RememberedDecision>();
  /** Nodes whose rows were copied, and nodes Fit ran on, since the memo was made (for tests and measurement). */
  copied = 0;
  evaluated = 0;

  /** The last decision for a pod of this plan under this configuration, if any. */
  recall(plan: string, config: EngineConfig): RememberedDecision | undefined {
    if (config !== this.config) {
      this.decisions.clear();
      this.config = config;
    }
    return this.decisions.get(plan);
  }

  remember(plan: string, decision: RememberedDecision): void {
    // Most recently used last: the first one is the one to drop.
    this.decisions.delete(plan);
    this.decisions.set(plan, decision);
    if (this.decisions.size > REMEMBERED_PLANS) this.decisions.delete(this.decisions.keys().next().value!);
  }
}

/**
 * The plan as a key; undefined when decisions on it are not reused: the real-time check reads the clock, and a
 * namespace quota with limits changes with every pod placed in the namespace (its decisions would only push the
 * reusable ones out). A quota without limits does not enter Fit.
 */
export function planKey(plan: PodPlan): string | undefined {
  const quota = plan.namespaceQuota;
  if (plan.realtime !== undefined || (quota !== undefined && (quota.memLimit !== undefined || quota.coreLimit !== undefined))) return undefined;
  return JSON.stringify([plan.containers.map((c) => [c.name, c.init, c.request ?? null]), plan.annotations]);
}

/** One decision's use of a memo: the rows it may copy, and what it leaves for the next decision on its plan. */
export class MemoUse {
  private readonly nodes = new Map<NodeState, RememberedNode>();

  private constructor(
    private readonly memo: EvaluationMemo,
    private readonly key: string,
    private readonly earlier: RememberedDecision | undefined,
  ) {}

  /** Undefined without a memo, or when the plan cannot be reused. */
  static of(memo: EvaluationMemo | undefined, plan: PodPlan, config: EngineConfig): MemoUse | undefined {
    const key = memo === undefined ? undefined : planKey(plan);
    return memo === undefined || key === undefined ? undefined : new MemoUse(memo, key, memo.recall(key, config));
  }

  /** The earlier decision's outcome for this very node state, its rows copied into `trace` (now its current node). */
  copy(state: NodeState, trace: DecisionTrace): RememberedNode | undefined {
    const seen = this.earlier?.nodes.get(state);
    if (this.earlier === undefined || seen === undefined) {
      this.memo.evaluated += 1;
      return undefined;
    }
    this.memo.copied += 1;
    return { row: trace.copyNode(this.earlier.trace, seen.row), score: seen.score, reason: seen.reason };
  }

  note(state: NodeState, outcome: RememberedNode): void {
    this.nodes.set(state, outcome);
  }

  /** Every candidate noted: this decision is the one the next pod of its plan copies from. */
  finish(trace: DecisionTrace): void {
    this.memo.remember(this.key, { trace, nodes: this.nodes });
  }
}
