/**
 * A kind of device the scheduler places (HAMi's `Devices` interface, docs/hami-parity.md §4 and docs/devices.md):
 * what it is called in requests and annotations, which registered devices are its own, how one container's request
 * reads, which defaults the admission webhook gives it, how one container is fitted on one node, and whether binding
 * takes HAMi's node lock. Each kind is one module under lib/engine/devices; nothing outside it knows the kind's rules.
 */
import type { FitRun } from '../fit';
import type { SelectorAnnotations } from '../podAnnotations';
import type { KindWords } from './wordsOf';
import type { ContainerLike, ContainerRequest, DeviceInfo, EngineConfig, MigPlacement, NodeLike, NodeState, PairScores, PodDevices } from '../types';

/** A node's devices of one kind (HAMi's `GetNodeDevices`), or why it has none that can be scheduled. */
export type KindRegistration =
  | { readonly devices: readonly DeviceInfo[]; readonly cordoned?: readonly string[]; readonly pairScores?: PairScores }
  | { readonly reason: string };

/** What a failure means on the kind's devices, why it usually happens and what to do (lib/diagnostics/hints.ts). */
export interface KindHint {
  readonly meaning: string;
  readonly cause: string;
  readonly fix: string;
}

/** What the admission webhook's configuration gives the kinds' defaults (docs/api.md §7a). */
export interface AdmissionDefaults {
  /** HAMi's `defaultGPUNum`: cards given to a container that asks only for memory or cores (0 = none). */
  readonly defaultGpuNum: number;
}

/** A container as the admission webhook may change it: its resources' limits and requests, by quantity name. */
export interface AdmittedContainer {
  readonly name: string;
  resources?: { limits?: Record<string, string | number>; requests?: Record<string, string | number> };
}

export interface DeviceKind {
  /** HAMi's `CommonWord`: the request type and the vendor of its devices (`NVIDIA`, `AWSNeuron`). */
  readonly vendor: string;
  /** What its devices are called and how its requests read (./words.ts, which the browser carries without the rules). */
  readonly words: KindWords;
  /** The node's devices of this kind; undefined when it has none and nothing to say about it. */
  register(node: NodeLike, config: EngineConfig): KindRegistration | undefined;
  /** Whether Fit of this kind sees a device of the kind (NVIDIA's Fit sees only types containing "nvidia"). */
  fitSees(device: DeviceInfo): boolean;
  /** What the kind works out once per registration (kept with the prepared node, `kindState`), e.g. whether it has MIG cards. */
  prepare?(devices: readonly DeviceInfo[]): unknown;
  /** One container's request of this kind; undefined when it asks for none. */
  request(container: ContainerLike, config: EngineConfig): ContainerRequest | undefined;
  /** The quantities its requests read, with the largest value each may hold (undefined: no bound). */
  quantities(config: EngineConfig): readonly { readonly name: string; readonly max: number | undefined }[];
  /**
   * HAMi's Fit for the current container on `cards` (positions the kind's Fit sees): undefined when it fits, else the
   * reason. `run.input.kindState` holds what `prepare` worked out for the node.
   */
  fit(run: FitRun, cards: Int32Array): string | undefined;
  /**
   * HAMi's `AddResourceUsage` for pick `pick` of a container that fit, before it is booked on the working usage: may
   * rewrite what the pick books (`arena.pickedMem`, `arena.pickedCores`) and take parts of the card (MIG). A text is a
   * failure of the container.
   */
  addResourceUsage?(run: FitRun, pick: number): string | undefined;
  /** The pod annotations that steer which of its devices a pod gets (type, UUID, mode, NUMA), when the kind has them. */
  readonly selectorAnnotations?: SelectorAnnotations;
  /**
   * The hints for the codes and node-level texts the kind's rules give, in its terms, by code or text (the default
   * kind's serve the kinds without their own).
   */
  readonly hints?: Readonly<Record<string, KindHint>>;
  /**
   * HAMi's `MutateAdmission` for one container the admission webhook admits: adds the kind's defaults to
   * `container` (mutating it) and returns undefined, or returns the text refusing the pod. The webhook calls it for
   * the containers that ask for this kind, and the default kind's for those that ask for none (its defaults may make
   * them ask). Absent: the kind's requests are only validated, by the quantity rules (AWS Neuron, as HAMi's).
   */
  admit?(container: AdmittedContainer, config: EngineConfig, defaults: AdmissionDefaults): string | undefined;
  /**
   * The node annotation its device plugin registers its devices in, when it has one: named by the webhook's warning
   * that no node has registered any yet.
   */
  readonly registerAnnotation?: string;
  /** Whether `/bind` takes HAMi's node lock for pods whose regular containers use this kind. */
  readonly locksNode: boolean;
  /** The pod annotation where the kind records the parts of cards a pod holds, when it does (MIG placements). */
  readonly partsAnnotation?: string;
  /** Which parts of cards a booked pod holds, and the cards that cannot be accounted for (fail closed). */
  heldParts?(devices: PodDevices, parts: string | undefined, registered: readonly DeviceInfo[]): { placements: Record<string, MigPlacement[]>; failClosed: string[] };
  /**
   * Whether a booking on this device depends on which part of it is taken (a MIG placement, NeuronCore indexes), not
   * only on how much: such bookings are written under the node's version (docs/state.md, "Guards"), since the
   * store's per-card counters cannot tell two placements apart.
   */
  positional(device: DeviceInfo): boolean;
  /**
   * Whether `usedcores` of this kind's bookings is a bitmask of core indexes (AWS Neuron; HAMi's later
   * `CoreMaskAccounting`), not an amount: one pod's containers on a card then book the OR of their masks, and the
   * masks of different pods, disjoint by Fit, add up to their OR in the ledger's counters.
   */
  readonly coreMask?: boolean;
  /** The pod annotation where the kind's device plugin reads the devices decided (HAMi's encoding, init containers first). */
  readonly allocatedAnnotation: string;
  /**
   * The pod annotations of this kind that only the scheduler writes, beyond the kind-independent ones
   * (`SchedulerOwnedPodAnnotations`, ./index.ts): a pod created carrying one holds a booking nobody made.
   */
  readonly ownedPodAnnotations: readonly string[];
  /**
   * The pod annotations the filter writes for the chosen devices (HAMi's `PatchAnnotations`), beyond the
   * kind-independent `hami.io/vgpu-node` and `hami.io/vgpu-time`. `devices` holds only this kind's containers;
   * `node` is the chosen node as decided on; `requests` are the containers' requests, aligned with `devices`.
   */
  podAnnotations(
    devices: PodDevices,
    node: NodeState,
    context: {
      readonly nowMs: number;
      readonly nodeName: string;
      readonly initCount: number;
      readonly requests: readonly (ContainerRequest | undefined)[];
      readonly config: EngineConfig;
    },
  ): Record<string, string>;
}
