/**
 * What is fixed for one pod while it is decided: its containers and their requests (init containers first), the
 * steering annotations, the policies, the scoring weights, the quota view and the real-time settings. Made by
 * `planPod` (./planPod.ts).
 */
import type { DeviceSelectors, DeviceScoringWeights, GpuPolicy } from './podAnnotations';
import type { NodePolicy } from './types';
import type { ContainerRequest, QuotaView, RealtimeMode } from './types';

export interface PodContainer {
  readonly name: string;
  /** Position in the aligned device list (init containers first). */
  readonly index: number;
  readonly init: boolean;
  readonly request: ContainerRequest | undefined;
  /**
   * The position in `DEVICE_KINDS` of the kind of device the request is for; -1 without a request. A position, not
   * the kind: Fit and the kinds read plans, and the registry of kinds sits above them (./planPod.ts resolves it).
   */
  readonly kindIndex: number;
}

export interface RealtimeSettings {
  readonly mode: Exclude<RealtimeMode, 'disabled'>;
  readonly marginMiB: number;
  readonly maxAgeMs: number;
  readonly nowMs: number;
}

export interface PodPlan {
  readonly namespaceQuota: QuotaView | undefined;
  readonly memoryFactor: number;
  readonly containers: readonly PodContainer[];
  readonly initCount: number;
  /** The pod's annotations (device kinds read their own). */
  readonly annotations: Readonly<Record<string, string>>;
  readonly selectors: DeviceSelectors;
  readonly gpuPolicy: GpuPolicy;
  readonly nodePolicy: NodePolicy;
  readonly weights: DeviceScoringWeights;
  /** Undefined when the real-time check is off for this pod. */
  readonly realtime: RealtimeSettings | undefined;
  /** Whether use/nouse gputype or vgpu-mode constrain cards at all. */
  readonly selectsByType: boolean;
  /** Whether use/nouse gpuuuid constrain cards at all. */
  readonly selectsByUuid: boolean;
  /** Type/mode checks depend only on the card's type and mode strings: cache them per pod. */
  readonly typeCheckCache: Map<string, boolean>;
}
