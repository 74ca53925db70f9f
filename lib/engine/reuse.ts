/**
 * Node outcomes carried from one decision to the next (ours; HAMi runs Fit on every candidate every time).
 *
 * What Fit records for a node depends only on the node's state and on the pod's plan (./plan.ts) without the
 * real-time check: its requests, container names, steering annotations and namespace quota, under one engine
 * configuration. A caller that keeps node states as unchanged objects while their nodes do not change (the control
 * plane's warm view does) passes one memo to every decision. Per plan, the memo keeps each node's rows from the last
 * decision that saw the node (not only the last decision: kube-scheduler asks about a moving window of nodes in
 * large clusters); a pod of that plan gets them copied for every node whose state is still the same object, and
 * Fit runs only on the nodes that changed or were never seen. A node state must not be mutated after a decision saw
 * it. The decision and its evidence are exactly those of a decision without the memo (test/unit/engine/reuse.test.ts
 * checks it on random clusters).
 */
import type { DecisionTrace } from './evidence';
import type { PodPlan } from './plan';
import type { EngineConfig, NodeState } from './types';

/** What Fit gave one node: its row in a decision's trace, and the outcome the decision lists. */
export interface RememberedNode {
  readonly row: number;
  readonly score: number;
  readonly reason: string | undefined;
}

/** A node's rows for one plan: the state they were fitted on, the trace they are in, and the outcome. */
interface RememberedRows {
  readonly state: NodeState;
  readonly trace: DecisionTrace;
  readonly outcome: RememberedNode;
}

/** Plans remembered at once: a few pod shapes (a deployment's, a job's) cover most of a burst. */
const REMEMBERED_PLANS = 8;

export class EvaluationMemo {
  private config: EngineConfig | undefined;
  /** Per plan, per node name; most recently used plan last. */
  private readonly plans = new Map<string, Map<string, RememberedRows>>();
  /** Nodes whose rows were copied, and nodes Fit ran on, since the memo was made (for tests and measurement). */
  copied = 0;
  evaluated = 0;

  /** The rows kept for a plan under this configuration (empty for a plan not seen yet), now the most recently used. */
  rowsOf(plan: string, config: EngineConfig): Map<string, RememberedRows> {
    if (config !== this.config) {
      this.plans.clear();
      this.config = config;
    }
    const rows = this.plans.get(plan) ?? new Map<string, RememberedRows>();
    this.plans.delete(plan);
    this.plans.set(plan, rows);
    if (this.plans.size > REMEMBERED_PLANS) this.plans.delete(this.plans.keys().next().value!);
    return rows;
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

/** One decision's use of a memo: the rows it may copy, and the rows it leaves for the next decisions on its plan. */
export class MemoUse {
  /** The nodes this decision saw, and what it recorded for each (in its own trace). */
  private readonly states: NodeState[] = [];
  private readonly outcomes: RememberedNode[] = [];

  private constructor(
    private readonly memo: EvaluationMemo,
    private readonly rows: Map<string, RememberedRows>,
  ) {}

  /** Undefined without a memo, or when the plan cannot be reused. */
  static of(memo: EvaluationMemo | undefined, plan: PodPlan, config: EngineConfig): MemoUse | undefined {
    const key = memo === undefined ? undefined : planKey(plan);
    return memo === undefined || key === undefined ? undefined : new MemoUse(memo, memo.rowsOf(key, config));
  }

  /** The outcome kept for this very node state, its rows copied into `trace` (now its current node). */
  copy(state: NodeState, trace: DecisionTrace): RememberedNode | undefined {
    const kept = this.rows.get(state.name);
    if (kept === undefined || kept.state !== state) {
      this.memo.evaluated += 1;
      return undefined;
    }
    this.memo.copied += 1;
    return { row: trace.copyNode(kept.trace, kept.outcome.row), score: kept.outcome.score, reason: kept.outcome.reason };
  }

  /** What the decision recorded for a node, at `outcome.row` of its trace. */
  note(state: NodeState, outcome: RememberedNode): void {
    this.states.push(state);
    this.outcomes.push(outcome);
  }

  /** Every candidate noted: the nodes this decision saw now point at its trace (older traces go with their last rows). */
  finish(trace: DecisionTrace): void {
    this.states.forEach((state, i) => this.rows.set(state.name, { state, trace, outcome: this.outcomes[i]! }));
  }
}
