/**
 * GPU-aware preemption (docs/preemption.md): where no node fits a pod, the node where evicting lower-priority pods
 * makes it fit, and which pods. Fit is HAMi's own (./decide), run on the node's usage with the candidate victims'
 * bookings removed: there is no second fit rule. Victims are chosen per node as kube-scheduler's default preemption
 * does (remove every lower-priority candidate, check the pod fits, then reprieve candidates from the most important
 * down, those whose eviction would violate a PodDisruptionBudget first, keeping each one the pod still fits beside),
 * and nodes are compared as it does, adapted to cards (`comparePlans`). Pure: the caller says how a node looks
 * without a set of bookings.
 */
import { decide } from './decide';
import type { EngineConfig, NodeState, PodDevices, PodLike, QuotaView } from './types';

/** What one candidate victim holds on one card. */
export interface HeldCard {
  readonly uuid: string;
  readonly mem: number;
  readonly cores: number;
  readonly slots: number;
}

/** A pod booked on a node, as preemption weighs it. */
export interface BookedPod {
  readonly uid: string;
  /** `namespace/name`. */
  readonly pod: string;
  /** Its priority when it was placed (`spec.priority`). */
  readonly priority: number;
  /**
   * Whether this scheduler placed it and counts it by its own decision (docs/state.md, "Bookings belong to the
   * scheduler"): pods adopted from annotations someone else wrote are never preempted.
   */
  readonly ours: boolean;
  /** Evicting it would violate a PodDisruptionBudget (as last seen: the Eviction API refused it). */
  readonly violatesPdb: boolean;
  /** When it was placed (epoch ms): the earlier of two equal priorities is the more important, as kube-scheduler has it. */
  readonly placedAtMs?: number;
  readonly cards: readonly HeldCard[];
}

export interface PreemptionNode {
  readonly name: string;
  /** Every pod whose booking counts on the node. */
  readonly pods: readonly BookedPod[];
  /** The node as the engine sees it with the bookings of `removed` (uids) taken away. */
  stateWithout(removed: ReadonlySet<string>): NodeState;
}

export interface PreemptionInput {
  readonly pod: PodLike;
  readonly nodes: readonly PreemptionNode[];
  readonly config: EngineConfig;
  readonly nowMs: number;
  readonly quota?: QuotaView;
}

export interface Victim {
  readonly uid: string;
  readonly pod: string;
  readonly priority: number;
  readonly violatesPdb: boolean;
  readonly cards: readonly HeldCard[];
}

export interface PreemptionPlan {
  readonly node: string;
  /** Most important first. */
  readonly victims: readonly Victim[];
  readonly pdbViolations: number;
  readonly highestVictimPriority: number;
  /** GPU memory (MiB) the victims hold on the node. */
  readonly memoryTaken: number;
  /** Lower-priority pods a PodDisruptionBudget protects that stay, the pod fitting without their cards (`namespace/name`). */
  readonly sparedForPdb: readonly string[];
  /** The preemptor's cards once the victims are gone, as Fit chose them (aligned per container, init first). */
  readonly devices: PodDevices;
  /** The parts of cards those take (MIG placements), as the device kind records them. */
  readonly parts?: string;
}

export type PreemptionOutcome =
  | {
      readonly kind: 'plan';
      /** Every node where preemption makes the pod fit, best first; the first is the plan. */
      readonly plans: readonly PreemptionPlan[];
      /** Why the other nodes cannot help. */
      readonly unhelpful: Readonly<Record<string, string>>;
    }
  | { readonly kind: 'none'; readonly reason: string; readonly unhelpful: Readonly<Record<string, string>> };

/** Kubernetes' default priority of a pod without one (no PriorityClass, no global default). */
export const DEFAULT_PRIORITY = 0;

/** A pod's priority as Kubernetes resolved it at admission (`spec.priority`). */
export function priorityOf(pod: PodLike): number {
  return pod.spec?.priority ?? DEFAULT_PRIORITY;
}

/** Whether the pod may preempt others (`spec.preemptionPolicy` is `PreemptLowerPriority` unless `Never`). */
export function mayPreempt(pod: PodLike): boolean {
  return pod.spec?.preemptionPolicy !== 'Never';
}

/** Why a node cannot help, in words the scheduler log shows. */
export const Unhelpful = {
  NoLowerPriority: 'no lower-priority pod of ours holds its cards',
  StillNoFit: 'does not fit even with every lower-priority pod gone',
  FitsAlready: 'fits without evicting anyone',
} as const;

export function planPreemption(input: PreemptionInput): PreemptionOutcome {
  const unhelpful: Record<string, string> = {};
  if (!mayPreempt(input.pod)) return { kind: 'none', reason: 'the pod\'s preemptionPolicy is Never', unhelpful };
  const priority = priorityOf(input.pod);
  const plans: PreemptionPlan[] = [];
  for (const node of input.nodes) {
    const outcome = victimsOn(input, node, priority);
    if (typeof outcome === 'string') unhelpful[node.name] = outcome;
    else plans.push(outcome);
  }
  plans.sort(comparePlans);
  if (plans.length === 0) return { kind: 'none', reason: `no node fits with lower-priority pods evicted (${input.nodes.length} nodes considered)`, unhelpful };
  return { kind: 'plan', plans, unhelpful };
}

/** The better plan first: fewest PDB violations, lowest highest-victim priority, fewest victims, least memory taken, then the node's name. */
export function comparePlans(a: PreemptionPlan, b: PreemptionPlan): number {
  return (
    a.pdbViolations - b.pdbViolations ||
    a.highestVictimPriority - b.highestVictimPriority ||
    a.victims.length - b.victims.length ||
    a.memoryTaken - b.memoryTaken ||
    (a.node < b.node ? -1 : a.node > b.node ? 1 : 0)
  );
}

/** More important first: higher priority, then placed earlier (kube-scheduler's `MoreImportantPod`), then uid for determinism. */
function moreImportant(a: BookedPod, b: BookedPod): number {
  return b.priority - a.priority || (a.placedAtMs ?? Number.MAX_SAFE_INTEGER) - (b.placedAtMs ?? Number.MAX_SAFE_INTEGER) || (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0);
}

/** kube-scheduler's `SelectVictimsOnNode` over cards: the plan on this node, or why there is none. */
function victimsOn(input: PreemptionInput, node: PreemptionNode, priority: number): PreemptionPlan | string {
  const candidates = node.pods.filter((p) => p.ours && p.priority < priority).sort(moreImportant);
  if (candidates.length === 0) return Unhelpful.NoLowerPriority;
  const removed = new Set(candidates.map((p) => p.uid));
  if (fitWithout(input, node, removed) === undefined) return Unhelpful.StillNoFit;
  // Reprieve: PDB-violating candidates first (kube-scheduler keeps as many of them as it can), each in importance order.
  const victims: BookedPod[] = [];
  const spared: string[] = [];
  const order = [...candidates.filter((p) => p.violatesPdb), ...candidates.filter((p) => !p.violatesPdb)];
  for (const candidate of order) {
    removed.delete(candidate.uid);
    if (fitWithout(input, node, removed) === undefined) {
      removed.add(candidate.uid);
      victims.push(candidate);
    } else if (candidate.violatesPdb) spared.push(candidate.pod);
  }
  // Every candidate reprieved: the pod fits here as things are (another decider's booking went meanwhile).
  if (victims.length === 0) return Unhelpful.FitsAlready;
  const fit = fitWithout(input, node, removed)!;
  victims.sort(moreImportant);
  return {
    node: node.name,
    victims: victims.map((v) => ({ uid: v.uid, pod: v.pod, priority: v.priority, violatesPdb: v.violatesPdb, cards: v.cards })),
    pdbViolations: victims.filter((v) => v.violatesPdb).length,
    highestVictimPriority: victims[0]!.priority,
    memoryTaken: victims.reduce((sum, v) => sum + v.cards.reduce((s, c) => s + c.mem, 0), 0),
    sparedForPdb: spared,
    devices: fit.devices,
    ...(fit.parts !== undefined ? { parts: fit.parts } : {}),
  };
}

/** HAMi's Fit of the pod on the node without `removed`: the cards it would take, or undefined when it does not fit. */
function fitWithout(input: PreemptionInput, node: PreemptionNode, removed: ReadonlySet<string>): { devices: PodDevices; parts?: string } | undefined {
  const state = node.stateWithout(removed);
  const decision = decide({
    pod: input.pod,
    candidates: [node.name],
    nodes: { get: (name) => (name === node.name ? state : undefined) },
    ...(input.quota ? { quota: input.quota } : {}),
    config: input.config,
    nowMs: input.nowMs,
  });
  if (decision.kind === 'error') return undefined;
  decision.release();
  if (decision.kind !== 'fit') return undefined;
  return { devices: decision.devices, ...(decision.parts !== undefined ? { parts: decision.parts } : {}) };
}
