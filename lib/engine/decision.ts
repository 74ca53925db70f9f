/**
 * What one decision takes and gives (`decide`, ./decide.ts): the input with the working memory callers keep, and the
 * outcome with its evidence. Apart from ./types.ts, which stays a leaf, because these name the engine's working parts.
 */
import type { DecisionArena } from './arena';
import type { PackedEvidence } from './evidence';
import type { EvaluationMemo } from './reuse';
import type { CardClaim, EngineConfig, NodeAllocations, NodeEvidence, NodePolicy, NodeState, PodDevices, PodLike, QuotaView, RealtimeNote } from './types';

export interface DecideInput {
  readonly pod: PodLike;
  /** Candidate node names in kube-scheduler's order (`NodeNames`, or the names of `Nodes`). */
  readonly candidates: readonly string[];
  /** Known nodes by name; a candidate missing here is `node unregistered`. */
  readonly nodes: { get(name: string): NodeState | undefined };
  /**
   * The candidates' states by position, as `nodes` would give them, where the caller has them already (the control
   * plane's view resolves a candidate list it has seen before by position, without a lookup per name).
   */
  readonly candidateStates?: readonly (NodeState | undefined)[];
  readonly quota?: QuotaView;
  readonly config: EngineConfig;
  /** Epoch milliseconds, for real-time freshness only. */
  readonly nowMs: number;
  /**
   * Lock-aware placement (ours): the allocations under way on a node, or undefined when there are none. Fitting nodes
   * that are busy are passed over, in HAMi's order, while another one fits; when every one is busy, the one with the
   * fewest is taken (HAMi's order among equals), so a burst larger than the nodes that fit waits on each node's
   * allocations in turn rather than piling onto the best one. HAMi's exact choice when absent.
   */
  readonly avoid?: (node: string) => NodeAllocations | undefined;
  /** Working memory to reuse (see ./arena): callers that decide again and again keep one; a fresh one otherwise. */
  readonly arena?: DecisionArena;
  /** Outcomes of earlier decisions to reuse for unchanged node states (see ./reuse); Fit runs on every node without it. */
  readonly memo?: EvaluationMemo;
}

export type Decision =
  | {
      readonly kind: 'fit';
      readonly node: string;
      readonly score: number;
      /** Aligned per container, init first: what goes into the pod annotations. */
      readonly devices: PodDevices;
      /** What booking `devices` on `node` must be guarded by, one entry per card taken. */
      readonly claims: readonly CardClaim[];
      /**
       * Some card is taken by position (a MIG placement, NeuronCore indexes): the per-card counters cannot guard the
       * booking, so it must be written under the node's version (docs/state.md, "Guards").
       */
      readonly bookWholeNode: boolean;
      /** Which parts of cards the pod takes, as its device kind records them (MIG placements); stored with the booking. */
      readonly parts?: string;
      /** The pod annotations the device plugin reads, for the chosen devices (HAMi's `PatchAnnotations`, per kind). */
      readonly podAnnotations: Readonly<Record<string, string>>;
      /** Fitting nodes in HAMi's listing order (binpack ascending, spread descending; ties by name: `listingOrder`). */
      readonly fitNodes: readonly { readonly name: string; readonly score: number }[];
      /** How many nodes fit: `fitNodes.length`, without building the list (built when first read); not enumerable. */
      readonly fitNodeCount: number;
      /** The node policy the pod was placed by (its annotation, else the configured one): it ordered `fitNodes`. */
      readonly nodePolicy: NodePolicy;
      /** Nodes HAMi would have chosen first but another allocation was under way on, and by whom (lock-aware placement). */
      readonly passedOver: readonly { readonly name: string; readonly holder: string }[];
      /**
       * Set when every fitting node had an allocation under way (lock-aware placement): the chosen node had the fewest,
       * `allocations` of them, and the pod's bind will wait for them. The nodes in `passedOver` had more.
       */
      readonly leastBusy?: { readonly allocations: number };
      /** Unfit nodes and why (not returned to kube-scheduler on success, kept for diagnostics). */
      readonly failedNodes: Readonly<Record<string, string>>;
      /** `find fit node(<node>), <n> nodes not fit, <m> nodes fit(<a>:<s>,…)`. */
      readonly message: string;
      readonly evidence: readonly NodeEvidence[];
      readonly realtime: readonly RealtimeNote[];
      /** The evidence packed for storage (not enumerable: JSON and spreads show `evidence`). */
      readonly packEvidence: () => PackedEvidence;
      /** Done with the decision: its rows may go to later decisions once no memo keeps them (not enumerable; see `RowStore`). */
      readonly release: () => void;
    }
  | {
      readonly kind: 'noFit';
      readonly failedNodes: Readonly<Record<string, string>>;
      /** The device type the pod asks for (one kind per pod), so its reasons are explained in that kind's terms. */
      readonly requestType?: string;
      /** `no available node, <n> nodes do not meet`. */
      readonly message: string;
      /** Per-reason `<n> nodes <Reason>(<nodes>)` texts, in HAMi's order. */
      readonly reasonEvents: readonly string[];
      readonly evidence: readonly NodeEvidence[];
      readonly realtime: readonly RealtimeNote[];
      /** The evidence packed for storage (not enumerable: JSON and spreads show `evidence`). */
      readonly packEvidence: () => PackedEvidence;
      /** Done with the decision: its rows may go to later decisions once no memo keeps them (not enumerable; see `RowStore`). */
      readonly release: () => void;
    }
  | {
      /** The pod itself is bad (e.g. invalid `hami.io/device-scoring-weights`): HAMi's error text. */
      readonly kind: 'error';
      readonly message: string;
    };
