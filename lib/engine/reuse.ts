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
import { RowStore, type DecisionTrace } from './evidence';
import type { PodPlan } from './plan';
import type { EngineConfig, NodeState } from './types';

/**
 * What Fit gave one node: its row in a decision's trace, its score and its failure. The decision refills one of these
 * for every node, so deciding allocates nothing per node for it.
 */
export interface NodeOutcome {
  row: number;
  score: number;
  reason: string | undefined;
}

/**
 * A node's rows for one plan: the state they were fitted on, the trace they are in, the outcome, and when. Updated in
 * place by each decision that sees the node: objects that live from one decision to the next, made anew for every
 * node by every decision, would be promoted and die in the old generation.
 */
interface RememberedRows extends NodeOutcome {
  state: NodeState;
  trace: DecisionTrace;
  /** The plan's decision (its count) that recorded them. */
  decision: number;
}

/**
 * What a memo keeps for one plan: its nodes' rows by node name, and how many decisions it has had. A class, not an
 * object literal: the decision's per-node look-ups read it, and plans made by a literal in a fresh process's first
 * decisions came with several hidden classes, which left those look-ups generic for good (docs/performance.md,
 * "Hidden classes in a fresh process").
 */
class RememberedPlan {
  readonly rows = new Map<string, RememberedRows>();
  decisions = 0;
  /**
   * The candidate list of the plan's last decision and, by position in it, the rows that decision noted: a decision
   * given the very same list (the same array, as the control plane's view passes a list it has seen before) finds each
   * node's rows by position, without a lookup by name. An array must not change once a decision has seen it.
   */
  list: readonly string[] | undefined = undefined;
  byPosition: (RememberedRows | undefined)[] = [];
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
  /** Row storage of traces no longer kept, for the next decisions (`DecisionTrace.hold`, `drop`). */
  readonly rowStore = new RowStore();
  private config: EngineConfig | undefined;
  /** Per plan; most recently used plan last. */
  private readonly plans = new Map<string, RememberedPlan>();
  /** Nodes whose rows were copied, and nodes Fit ran on, since the memo was made (for tests and measurement). */
  copied = 0;
  evaluated = 0;

  /** What is kept for a plan under this configuration (nothing for a plan not seen yet), now the most recently used. */
  planOf(key: string, config: EngineConfig): RememberedPlan {
    if (config !== this.config) {
      for (const plan of this.plans.values()) forget(plan);
      this.plans.clear();
      this.config = config;
    }
    const plan = this.plans.get(key) ?? new RememberedPlan();
    this.plans.delete(key);
    this.plans.set(key, plan);
    if (this.plans.size > REMEMBERED_PLANS) {
      const oldest = this.plans.keys().next().value!;
      forget(this.plans.get(oldest)!);
      this.plans.delete(oldest);
    }
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
  private constructor(
    private readonly memo: EvaluationMemo,
    private readonly plan: RememberedPlan,
    /** This decision's count in its plan. */
    private readonly decision: number,
    /** Whether the plan's last decision had this very candidate list (then `plan.byPosition` is this list's). */
    private readonly sameList: boolean,
  ) {}

  /** Undefined without a memo, or when the plan cannot be reused. */
  static of(memo: EvaluationMemo | undefined, plan: PodPlan, config: EngineConfig, candidates: readonly string[]): MemoUse | undefined {
    const key = memo === undefined ? undefined : planKey(plan);
    if (memo === undefined || key === undefined) return undefined;
    const remembered = memo.planOf(key, config);
    const sameList = remembered.list === candidates;
    if (!sameList) {
      remembered.list = candidates;
      remembered.byPosition = new Array<RememberedRows | undefined>(candidates.length).fill(undefined);
    }
    return new MemoUse(memo, remembered, ++remembered.decisions, sameList);
  }

  /** The rows kept for the node at `position`: by position on the same list (when noted there), else by name. */
  private keptAt(state: NodeState, position: number): RememberedRows | undefined {
    return (this.sameList ? this.plan.byPosition[position] : undefined) ?? this.plan.rows.get(state.name);
  }

  /**
   * Whether an outcome is kept for this very node state: then its rows are copied into `trace` (now its current node),
   * `outcome` is filled, and the kept rows are noted as this decision's (no `note` needed). Rows this decision noted
   * itself (a node listed twice) are fitted again, not copied.
   */
  copy(state: NodeState, position: number, trace: DecisionTrace, outcome: NodeOutcome): boolean {
    const kept = this.keptAt(state, position);
    if (kept === undefined || kept.state !== state || kept.trace === trace) {
      this.memo.evaluated += 1;
      return false;
    }
    this.memo.copied += 1;
    outcome.row = trace.copyNode(kept.trace, kept.row);
    outcome.score = kept.score;
    outcome.reason = kept.reason;
    this.plan.byPosition[position] = kept;
    moveTo(kept, trace);
    kept.row = outcome.row;
    kept.decision = this.decision;
    return true;
  }

  /**
   * What the decision recorded for a node, complete at `outcome.row` of its trace: the node now points at that trace
   * (an older trace goes with its last rows).
   */
  note(state: NodeState, position: number, trace: DecisionTrace, outcome: NodeOutcome): void {
    const kept = this.keptAt(state, position);
    if (kept === undefined) {
      const rows: RememberedRows = { state, trace, row: outcome.row, score: outcome.score, reason: outcome.reason, decision: this.decision };
      trace.hold();
      this.plan.rows.set(state.name, rows);
      this.plan.byPosition[position] = rows;
      return;
    }
    this.plan.byPosition[position] = kept;
    kept.state = state;
    moveTo(kept, trace);
    kept.row = outcome.row;
    kept.score = outcome.score;
    kept.reason = outcome.reason;
    kept.decision = this.decision;
  }

  /** Every candidate noted: every 32 decisions, the rows of nodes not asked about since the last check go. */
  finish(): void {
    const { rows } = this.plan;
    if (this.decision % KEEP_DECISIONS !== 0) return;
    for (const [name, kept] of rows) {
      if (kept.decision > this.decision - KEEP_DECISIONS) continue;
      rows.delete(name);
      kept.trace.drop();
    }
  }
}

/** Kept rows now in `trace`: each kept entry holds the trace its rows are in (see `DecisionTrace.hold`). */
function moveTo(kept: RememberedRows, trace: DecisionTrace): void {
  if (kept.trace === trace) return;
  trace.hold();
  kept.trace.drop();
  kept.trace = trace;
}

/** A plan no longer kept lets go of its traces. */
function forget(plan: RememberedPlan): void {
  for (const kept of plan.rows.values()) kept.trace.drop();
  plan.rows.clear();
  plan.byPosition = [];
  plan.list = undefined;
}
