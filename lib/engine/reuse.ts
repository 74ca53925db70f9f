/**
 * Node outcomes carried from one decision to the next (ours; HAMi runs Fit on every candidate every time).
 *
 * What Fit records for a node depends only on the node's state and on the pod's plan (./plan.ts) without the
 * real-time check: its requests, container names, the annotations the engine reads, and the namespace quota, under
 * one engine configuration. A caller that keeps node states as unchanged objects while their nodes do not change
 * (the control plane's warm view does) passes one memo to every decision. Per plan, the memo keeps each node's rows
 * from the last decision that saw the node (not only the last decision: kube-scheduler asks about a moving window of
 * nodes in large clusters); a pod of that plan gets them copied for every node whose state is still the same object,
 * and Fit runs only on the nodes that changed or were never seen. A node state must not be mutated after a decision saw
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

/** A node's rows for one plan: the state they were fitted on, the trace they are in, the outcome, and when. */
interface RememberedRows {
  readonly state: NodeState;
  readonly trace: DecisionTrace;
  readonly outcome: RememberedNode;
  /** The plan's decision (its count) that recorded them. */
  readonly decision: number;
}

/** What a plan keeps: its nodes' rows by node name, and how many decisions it has had. */
interface RememberedPlan {
  readonly rows: Map<string, RememberedRows>;
  decisions: number;
}

/** Plans remembered at once: a few pod shapes (a deployment's, a job's) cover most of a burst. */
const REMEMBERED_PLANS = 8;
/**
 * Rows not asked about in this many decisions of their plan are dropped (checked as often, so they go after 32 to
 * 64): a node that left the cluster, or that kube-scheduler no longer sends, would otherwise keep an old decision's
 * whole trace alive.
 */
const KEEP_DECISIONS = 32;

export class EvaluationMemo {
  private config: EngineConfig | undefined;
  /** Per plan; most recently used plan last. */
  private readonly plans = new Map<string, RememberedPlan>();
  /** Nodes whose rows were copied, and nodes Fit ran on, since the memo was made (for tests and measurement). */
  copied = 0;
  evaluated = 0;

  /** What is kept for a plan under this configuration (nothing for a plan not seen yet), now the most recently used. */
  planOf(key: string, config: EngineConfig): RememberedPlan {
    if (config !== this.config) {
      this.plans.clear();
      this.config = config;
    }
    const plan = this.plans.get(key) ?? { rows: new Map<string, RememberedRows>(), decisions: 0 };
    this.plans.delete(key);
    this.plans.set(key, plan);
    if (this.plans.size > REMEMBERED_PLANS) this.plans.delete(this.plans.keys().next().value!);
    return plan;
  }
}

/**
 * The domains of every pod annotation planning and Fit read (./podAnnotations.ts and the device kinds'). The plan's
 * key keeps only these, so pods that differ in other annotations (an Indexed Job's completion index, a workflow
 * step's name) share a plan. The engine's tests build pods whose other annotations cannot be read
 * (test/unit/engine/fixtures.ts): a device kind that reads another domain must be added here.
 */
export const ENGINE_ANNOTATION_DOMAINS: ReadonlySet<string> = new Set(['hami.io', 'nvidia.com', 'aws.amazon.com']);

/** Whether the engine may read this pod annotation (see ENGINE_ANNOTATION_DOMAINS). */
export function isEngineAnnotation(key: string): boolean {
  const slash = key.indexOf('/');
  return slash > 0 && ENGINE_ANNOTATION_DOMAINS.has(key.slice(0, slash));
}

/**
 * The plan as a key; undefined when decisions on it are not reused: the real-time check reads the clock, and a
 * namespace quota with limits changes with every pod placed in the namespace (its decisions would only push the
 * reusable ones out). A quota without limits does not enter Fit.
 */
export function planKey(plan: PodPlan): string | undefined {
  const quota = plan.namespaceQuota;
  if (plan.realtime !== undefined || (quota !== undefined && (quota.memLimit !== undefined || quota.coreLimit !== undefined))) return undefined;
  // Keys first, values of the engine's only: reading the others would be depending on them.
  const annotations = Object.keys(plan.annotations)
    .filter(isEngineAnnotation)
    .sort()
    .map((key) => [key, plan.annotations[key]]);
  return JSON.stringify([plan.containers.map((c) => [c.name, c.init, c.request ?? null]), annotations]);
}

/** One decision's use of a memo: the rows it may copy, and the rows it leaves for the next decisions on its plan. */
export class MemoUse {
  /** The nodes this decision saw, and what it recorded for each (in its own trace). */
  private readonly states: NodeState[] = [];
  private readonly outcomes: RememberedNode[] = [];

  private constructor(
    private readonly memo: EvaluationMemo,
    private readonly plan: RememberedPlan,
  ) {}

  /** Undefined without a memo, or when the plan cannot be reused. */
  static of(memo: EvaluationMemo | undefined, plan: PodPlan, config: EngineConfig): MemoUse | undefined {
    const key = memo === undefined ? undefined : planKey(plan);
    return memo === undefined || key === undefined ? undefined : new MemoUse(memo, memo.planOf(key, config));
  }

  /** The outcome kept for this very node state, its rows copied into `trace` (now its current node). */
  copy(state: NodeState, trace: DecisionTrace): RememberedNode | undefined {
    const kept = this.plan.rows.get(state.name);
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
    const { rows } = this.plan;
    const decision = ++this.plan.decisions;
    this.states.forEach((state, i) => rows.set(state.name, { state, trace, outcome: this.outcomes[i]!, decision }));
    if (decision % KEEP_DECISIONS !== 0) return;
    for (const [name, kept] of rows) if (kept.decision <= decision - KEEP_DECISIONS) rows.delete(name);
  }
}
