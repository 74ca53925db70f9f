/**
 * A scheduling attempt as the control plane stores it (one item per attempt, DynamoDB TTL), and from
 * which the scheduler log (docs/api.md §5) is rendered. The filter part is the engine's evidence,
 * stored as produced, never recomputed; only a passed filter's HAMi message is written out again from it on
 * read, word for word (lib/store/recordStore.ts).
 */
import type { PackedEvidence } from '../engine/evidence';
import type { NodeEvidence, NodePolicy, PodDevices } from '../engine/types';

export interface PodRef {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

export interface FilterRecord {
  readonly status: 'passed' | 'failed';
  /** HAMi's message: `find fit node(...)…`, `no available node, …`, or the error text. */
  readonly summary: string;
  /** The chosen node when passed. */
  readonly node?: string;
  /**
   * The node policy that listed the fitting nodes in `summary`, set by the filter when passed. With it the stored
   * record leaves the listing out and rebuilds it from the evidence on read (lib/store/recordStore.ts).
   */
  readonly nodePolicy?: NodePolicy;
  readonly score?: number;
  /** Per-reason `FilteringFailed` texts when no node fit. */
  readonly reasonEvents?: readonly string[];
  /** Engine evidence, one entry per candidate node, in candidate order (empty when written packed). */
  readonly nodes: readonly NodeEvidence[];
  /** The same evidence packed, as the filter writes it; the record store turns it back into `nodes` on read. */
  readonly packed?: PackedEvidence;
  /** Devices chosen per container (init first) when passed. */
  readonly devices?: PodDevices;
  /** Nodes evaluated (the candidates), set by the filter: the evidence is written packed. */
  readonly evaluated?: number;
  /** Failed nodes per reason, most first, set by the filter when no node fit (the listing's summary reads them). */
  readonly reasons?: readonly { readonly code: string; readonly nodes: number }[];
  /** The device type the pod asked for, set by the filter when no node fit (hints in that kind's terms). */
  readonly requestType?: string;
  /** Fitting nodes passed over because another allocation was under way on them, and by whom (lock-aware placement). */
  readonly passedOver?: readonly { readonly name: string; readonly holder: string }[];
  /** Every fitting node had an allocation under way: the chosen one had the fewest, this many (lock-aware placement). */
  readonly leastBusy?: { readonly allocations: number };
  /** What the pod narrows its cards to, set by the filter when it does: the pod's side of a mismatch. */
  readonly selectors?: SelectorsRecord;
  /** GPU-aware preemption, when no node fit and the pod may preempt (docs/preemption.md). */
  readonly preemption?: PreemptionRecord;
}

/** One pod a preemption evicts, and what it held on the node. */
export interface PreemptionVictimRecord {
  /** `namespace/name`. */
  readonly pod: string;
  readonly uid: string;
  readonly priority: number;
  /** Its eviction was refused by a PodDisruptionBudget not long ago. */
  readonly violatesPdb?: true;
  readonly cards: readonly { readonly uuid: string; readonly mem: number; readonly cores: number }[];
}

/**
 * What preemption did for a pod no node fit (docs/preemption.md): `evicting` victims for it (their cards held for
 * it until `holdUntil`), `dryRun` (HAMI_PREEMPTION=log: the plan, nothing evicted), `waiting` for earlier victims to
 * leave, `none` (it may not preempt, or evicting every lower-priority pod would not be enough: a filter that found no
 * lower-priority pod of ours on any candidate records no preemption at all), `refused` (every plan would violate a
 * PodDisruptionBudget).
 */
export interface PreemptionRecord {
  readonly outcome: 'evicting' | 'dryRun' | 'waiting' | 'none' | 'refused';
  /** One sentence. */
  readonly summary: string;
  readonly node?: string;
  /** The cards the pod takes there once the victims are gone. */
  readonly cards?: readonly string[];
  readonly victims?: readonly PreemptionVictimRecord[];
  /** Why this plan, against the runner-up. */
  readonly why?: string;
  /** Lower-priority pods a PodDisruptionBudget protects, kept because the pod fits without their cards (`namespace/name`). */
  readonly spared?: readonly string[];
  /** Nodes where preemption would also make the pod fit. */
  readonly alternatives?: number;
  /** RFC 3339: the freed cards are held for the pod until then. */
  readonly holdUntil?: string;
}

/** The pod's card selection (nvidia.com/use-gputype, nouse-gputype, use-gpuuuid, nouse-gpuuuid, vgpu-mode, numa-bind); only what it sets. */
export interface SelectorsRecord {
  readonly useTypes?: readonly string[];
  readonly noUseTypes?: readonly string[];
  readonly useUuids?: readonly string[];
  readonly noUseUuids?: readonly string[];
  readonly vgpuMode?: string;
  readonly numaBind?: true;
}

export interface BindRecord {
  readonly status: 'passed' | 'failed' | 'pending';
  readonly summary: string;
  readonly node?: string;
  /** RFC 3339. */
  readonly time?: string;
  /** RFC 3339: when the relay answered kube-scheduler's filter from the decision made ahead (docs/relay.md, "Deciding ahead"). */
  readonly filterUsedAhead?: string;
}

export interface AttemptRecord {
  readonly pod: PodRef;
  /** Unique per filter call; every log line of the attempt carries it. */
  readonly attemptId: string;
  /** 1 for the pod's first attempt within the retention window. */
  readonly attempt: number;
  /** RFC 3339 time of the filter call. */
  readonly time: string;
  /** How fresh the warm view the decision was made on was (docs/state.md, "Warm view"). */
  readonly view?: { readonly seq: number; readonly ageMs: number };
  readonly filter: FilterRecord;
  readonly bind: BindRecord;
  /** Set when per-card evidence was dropped to fit DynamoDB's item size limit. */
  readonly evidenceTrimmed?: boolean;
  /**
   * Set when the stored evidence could not be unpacked, with the problem: written in a format a later release
   * introduced (this release running again after a rollback), or damaged. The nodes are then empty; the rest of the
   * attempt still reads (lib/store/recordStore.ts, `decodeRecord`).
   */
  readonly evidenceUnreadable?: string;
  /** Decide-ahead (docs/relay.md, "Deciding ahead"): this attempt was made before kube-scheduler asked, or one made so was not used. */
  readonly ahead?: AheadNote;
}

/**
 * `decided`: the relay asked for this decision ahead of kube-scheduler's filter (a batch); `notUsed`: kube-scheduler's
 * filter could not use the decision made ahead, `reason` says why, and this attempt is what the live path decided.
 */
export type AheadNote = { readonly kind: 'decided' } | { readonly kind: 'notUsed'; readonly reason: string };

