/**
 * The decision engine's vocabulary: plain data in, plain data out, no I/O.
 * Everything here mirrors HAMi v2.10 (docs/hami-parity.md); the section numbers in comments point there.
 */

/** Reason codes, exact strings as HAMi writes them (docs/hami-parity.md §4.2; HAMi's pkg/device/common/common.go). */
export const ReasonCode = {
  CardTypeMismatch: 'CardTypeMismatch',
  CardUuidMismatch: 'CardUuidMismatch',
  CardTimeSlicingExhausted: 'CardTimeSlicingExhausted',
  CardComputeUnitsExhausted: 'CardComputeUnitsExhausted',
  CardInsufficientMemory: 'CardInsufficientMemory',
  CardInsufficientCore: 'CardInsufficientCore',
  CardNotHealth: 'CardNotHealth',
  CardCordoned: 'CardCordoned',
  NumaNotFit: 'NumaNotFit',
  ExclusiveDeviceAllocateConflict: 'ExclusiveDeviceAllocateConflict',
  CardNotFoundCustomFilterRule: 'CardNotFoundCustomFilterRule',
  CardMigTopologyInfeasible: 'CardMigTopologyInfeasible',
  NodeInsufficientDevice: 'NodeInsufficientDevice',
  AllocatedCardsInsufficientRequest: 'AllocatedCardsInsufficientRequest',
  NodeUnfitPod: 'NodeUnfitPod',
  NodeFitPod: 'NodeFitPod',
  ResourceQuotaNotFit: 'ResourceQuotaNotFit',
  /** Our addition (docs/api.md §8): real GPU memory, measured on the node, is short. */
  CardRealtimeInsufficientMemory: 'CardRealtimeInsufficientMemory',
  /**
   * Our addition (docs/api.md §9): the card is booked past its memory, cores or slots (a pod adopted from annotations
   * someone else wrote, lib/engine/capacity.ts); nothing more goes on it until it is back within them. Last: records
   * keep outcomes by position in this object (lib/engine/evidence.ts).
   */
  CardOvercommitted: 'CardOvercommitted',
} as const;
export type ReasonCode = (typeof ReasonCode)[keyof typeof ReasonCode];

/** Node-level failure texts that are not `x/y Reason` strings (docs/hami-parity.md §4.4, 5.5, 7.2). */
export const NodeFailure = {
  Unregistered: 'node unregistered',
  DeviceTypeNotFound: 'Device type not found',
  /** Ours: what the control plane stores about the node cannot be decoded (the raw value is in the operator log). */
  StateUnreadable: 'node state unreadable',
  /** Ours: the node holds as many bookings as one node's stored state may (docs/state.md, "Size"). */
  BookingLimit: 'node at its limit of booked pods',
  /** HAMi's `AddResourceUsage` error: a MIG instance that cannot be placed or would hold more than its card has left. */
  MigAllocationFailed: 'MIG profile and placement allocation failed',
} as const;

/** Where a MIG instance sits on its card: `size` slices from `start` (NVML's placement). */
export interface MigPlacement {
  readonly start: number;
  readonly size: number;
}

/** A MIG profile a card offers (HAMi v2.10 dynamic MIG, docs/devices.md): its memory, cores and legal placements. */
export interface MigProfile {
  readonly name: string;
  readonly memoryMB: number;
  readonly core: number;
  readonly sliceCount: number;
  readonly placements: readonly MigPlacement[];
}

/** One registered card, from `hami.io/node-nvidia-register` (docs/hami-parity.md §2.2 / 2.3). */
export interface DeviceInfo {
  readonly id: string;
  readonly index: number;
  readonly count: number;
  readonly devmem: number;
  readonly devcore: number;
  readonly type: string;
  readonly numa: number;
  readonly mode: string;
  readonly health: boolean;
  /** The device kind's vendor word (lib/engine/devices); absent: NVIDIA, registered by HAMi's device plugin. */
  readonly vendor?: string;
  /** MIG profiles, on a card in `mig` mode. */
  readonly migProfiles?: readonly MigProfile[];
  /**
   * The node's instance type (label `node.kubernetes.io/instance-type`) where the kind's rules depend on it
   * (AWS Neuron's contiguity, docs/devices.md "AWS Neuron"); HAMi's `custominfo.AWSNodeType`.
   */
  readonly nodeType?: string;
}

/** `hami.io/node-nvidia-score`: uuid -> (uuid -> pair score). Missing pairs count 0. */
export type PairScores = Readonly<Record<string, Readonly<Record<string, number>>>>;

/** What the engine knows about a node's registration, parsed from its annotations and status. */
export type NodeRegistration =
  | {
      readonly registered: true;
      readonly devices: readonly DeviceInfo[];
      /** `hami.io/device-cordon` UUIDs. */
      readonly cordoned: readonly string[];
      readonly pairScores: PairScores;
    }
  | { readonly registered: false; /** Human-readable, e.g. "annos not found hami.io/node-nvidia-register". */ readonly reason: string };

/** Booked usage of one card (docs/hami-parity.md §7.2). */
export interface DeviceUsage {
  used: number;
  usedmem: number;
  usedcores: number;
}

/** Real GPU usage reported by the node reporter (`hami.io/node-nvidia-realtime`, docs/api.md §4 and §8). */
export interface RealtimeDeviceUsage {
  readonly usedMemMB: number;
  readonly totalMemMB: number;
  readonly utilization?: number;
  readonly processCount?: number;
}
export interface RealtimeReport {
  /** Epoch milliseconds of the report's `time`. */
  readonly timeMs: number;
  readonly devices: Readonly<Record<string, RealtimeDeviceUsage>>;
}

/** A candidate node as the engine sees it: registration plus the booked usage per card UUID. */
export interface NodeState {
  readonly name: string;
  readonly registration: NodeRegistration;
  /**
   * Which registration this is (the ledger's version, bumped by every change of it). Not used to decide: records
   * keep it so that a reader can tell whether the node's cards are still those (lib/engine/evidence.ts).
   */
  readonly registrationVersion?: number;
  /** Usage per card UUID; cards absent here are idle. Unknown UUIDs are ignored. */
  readonly usage: Readonly<Record<string, DeviceUsage>>;
  readonly realtime?: RealtimeReport;
  /** A node-level failure known before any card is tried (a `NodeFailure` text): the node fails with it. */
  readonly unschedulable?: string;
  /**
   * `usage` aligned with `registration.devices`, for callers that keep node states across decisions: the engine then
   * reads one array instead of looking every card up by UUID. Card p's `used`, `usedmem` and `usedcores` are entries
   * `p * USAGE_WIDTH + UsageColumn.…`, int32 (saturated, ./quantity.ts): one block of memory per node.
   */
  readonly usageByPosition?: Int32Array;
  /** Parts of cards held by bookings, per card UUID (MIG placements in use). */
  readonly placementsInUse?: Readonly<Record<string, readonly MigPlacement[]>>;
  /**
   * Cards no pod may be placed on, because what their bookings hold cannot be accounted for (a MIG card booked
   * without a placement: HAMi's fail-closed rule); Fit sees them as not healthy.
   */
  readonly failClosed?: readonly string[];
}

/** Allocations under way on a node, for lock-aware placement (ours; lib/control/ledger.ts `allocationsOn` counts them). */
export interface NodeAllocations {
  /** `namespace/name` of the lock's holder, else of the first pod placed there whose allocation has not ended. */
  readonly holder: string;
  /** How many are under way: the device plugin allocates them one after another. */
  readonly count: number;
}

/** Columns of `NodeState.usageByPosition`, `USAGE_WIDTH` numbers per card. */
export const UsageColumn = { used: 0, mem: 1, cores: 2 } as const;
export const USAGE_WIDTH = 3;

/** `util.Weight` in HAMi's score formulas (card scores in ./order.ts, the node score in ./prepared.ts). */
export const SCORE_WEIGHT = 10;

/** How nodes are ordered (HAMi's node scheduler policy, docs/hami-parity.md §5). */
export type NodePolicy = 'binpack' | 'spread';

/** `MemPercentagereq` sentinel meaning "no percentage given". */
export const PercentageUnset = 101;

/** `ContainerDeviceRequest` (docs/hami-parity.md §1.2). `mempercentagereq` 101 means "unset". */
export interface ContainerRequest {
  readonly nums: number;
  readonly type: string;
  readonly memreq: number;
  readonly mempercentagereq: number;
  readonly coresreq: number;
}

/** One card given to one container (`ContainerDevice`, docs/hami-parity.md §3.3). */
export interface ContainerDevice {
  readonly idx: number;
  readonly uuid: string;
  readonly type: string;
  readonly usedmem: number;
  readonly usedcores: number;
}

/** Devices per container, init containers first, then app containers (aligned; empty = no GPU). */
export type PodDevices = readonly (readonly ContainerDevice[])[];

/** The pod fields the engine reads (Kubernetes JSON, camelCase). */
export interface PodLike {
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly annotations?: Readonly<Record<string, string>>;
    readonly labels?: Readonly<Record<string, string>>;
  };
  readonly spec?: {
    readonly initContainers?: readonly ContainerLike[];
    readonly containers?: readonly ContainerLike[];
    /** Resolved by Kubernetes at admission from the PriorityClass; read by preemption only (./preempt.ts). */
    readonly priority?: number;
    /** `PreemptLowerPriority` (Kubernetes' default) or `Never`. */
    readonly preemptionPolicy?: string;
  };
}
export interface ContainerLike {
  readonly name: string;
  readonly resources?: {
    readonly limits?: Readonly<Record<string, string | number>>;
    readonly requests?: Readonly<Record<string, string | number>>;
  };
}

/** The node fields the engine reads. */
export interface NodeLike {
  readonly metadata: {
    readonly name: string;
    readonly annotations?: Readonly<Record<string, string>>;
    readonly labels?: Readonly<Record<string, string>>;
  };
  readonly status?: {
    readonly allocatable?: Readonly<Record<string, string | number>>;
    /** Device kinds registered from capacity (AWS Neuron) read it here. */
    readonly capacity?: Readonly<Record<string, string | number>>;
  };
}

export type RealtimeMode = 'strict' | 'warning' | 'disabled';

export interface EngineConfig {
  readonly resourceCountName: string;
  readonly resourceMemoryName: string;
  readonly resourceMemoryPercentageName: string;
  readonly resourceCoreName: string;
  /** AWS Neuron: whole devices (docs/devices.md, "AWS Neuron"). */
  readonly neuronResourceName: string;
  /** AWS Neuron: NeuronCores. */
  readonly neuronCoreResourceName: string;
  readonly defaultMemory: number;
  readonly defaultCores: number;
  readonly memoryFactor: number;
  /** `binpack` (HAMi default) or `spread`. */
  readonly nodeSchedulerPolicy: string;
  /** `spread` (HAMi default), `binpack`, `topology-aware`, `mutex`, `numa` or a comma chain. */
  readonly gpuSchedulerPolicy: string;
  readonly realtime: {
    readonly enabled: boolean;
    readonly mode: RealtimeMode;
    readonly marginMiB: number;
    /** Reports older than this are stale: fall back to the ledger. */
    readonly maxAgeMs: number;
  };
}

/** Namespace quota (docs/hami-parity.md §7.4): limits from ResourceQuota `spec.hard`, usage from booked pods. */
export interface QuotaView {
  readonly memLimit?: number;
  readonly coreLimit?: number;
  readonly usedMem: number;
  readonly usedCores: number;
}

/** What one card showed when a container was tried on it. Numbers are those compared. */
export interface CardEvidence {
  readonly uuid: string;
  readonly index: number;
  /** The failed check's code, or `Fit` when the card was taken. */
  readonly outcome: ReasonCode | 'Fit';
  readonly totalMem: number;
  readonly usedMem: number;
  readonly requestedMem: number;
  readonly freeMem: number;
  readonly totalCores: number;
  readonly usedCores: number;
  readonly requestedCores: number;
  readonly slots: number;
  readonly usedSlots: number;
  /** Real-time figures when the real-time check ran on this card. */
  readonly realtimeUsedMem?: number;
  readonly realtimeTotalMem?: number;
}

export type ContainerStatus = 'passed' | 'failed' | 'skipped' | 'noRequest';

export interface ContainerEvidence {
  readonly name: string;
  /** Position in the aligned device list (init containers first). */
  readonly index: number;
  readonly init: boolean;
  readonly status: ContainerStatus;
  /** HAMi's reason string for a failed container (`"1/8 CardInsufficientMemory, …"` or a bare code). */
  readonly reason?: string;
  readonly request?: ContainerRequest;
  /** Cards chosen for this container when it passed. */
  readonly devices?: readonly ContainerDevice[];
  /** Cards in the order they were tried (last-to-first of the policy order); untried cards are absent. */
  readonly cards: readonly CardEvidence[];
}

export interface NodeEvidence {
  readonly name: string;
  readonly status: 'passed' | 'failed';
  /** Node score (float32), 0 when failed. */
  readonly score: number;
  /** FailedNodes value for a failed node (aggregated reason or node-level text). */
  readonly reason?: string;
  readonly containers: readonly ContainerEvidence[];
}

/** Real-time check notes, for warning-mode logs and metrics (issue 6). */
export interface RealtimeNote {
  readonly node: string;
  readonly uuid: string;
  readonly outcome: 'passed' | 'failed' | 'warned' | 'fallback';
  readonly requestedMem: number;
  readonly realUsedMem?: number;
  readonly totalMem?: number;
  readonly cachedUsedMem: number;
}

/**
 * What the store must guard when it books the chosen node, per card (docs/state.md, "Guards"): the pod adds
 * `slots`, `mem` and `cores` to the card's booked usage (HAMi's collapsed form, the ledger's), and the
 * decision holds only while that usage, before the pod, is at most `max…Before` (and, when `exclusive`, no
 * slot of the card is booked at all). The engine derives the bounds from the very checks that let each card
 * through, so the store enforces the engine's rules, never its own.
 */
export interface CardClaim {
  readonly uuid: string;
  readonly slots: number;
  readonly mem: number;
  readonly cores: number;
  readonly maxSlotsBefore: number;
  readonly maxMemBefore: number;
  readonly maxCoresBefore: number;
  readonly exclusive: boolean;
}
