/**
 * What is fixed for one pod while it is decided: its containers and their requests (init containers first), the
 * steering annotations, the policies, the scoring weights, the quota view and the real-time settings.
 */
import type { DeviceSelectors, DeviceScoringWeights, GpuPolicy, NodePolicy } from './podAnnotations';
import { gpuPolicyOf, nodePolicyOf, parseDeviceSelectors, realtimeOverrideOf } from './podAnnotations';
import { deviceKind, kindIndex, type DeviceKind } from './devices';
import { podContainerRequests } from './requests';
import type { ContainerRequest, DecideInput, QuotaView, RealtimeMode } from './types';

export interface PodContainer {
  readonly name: string;
  /** Position in the aligned device list (init containers first). */
  readonly index: number;
  readonly init: boolean;
  readonly request: ContainerRequest | undefined;
  /** The kind of device the request is for, and its position in `DEVICE_KINDS`; undefined with the request. */
  readonly kind: DeviceKind | undefined;
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

export function planPod(input: DecideInput, weights: DeviceScoringWeights): PodPlan {
  const { pod, config } = input;
  const annotations = pod.metadata.annotations ?? {};
  const requests = podContainerRequests(pod, config);
  const containers: PodContainer[] = [];
  const container = (name: string, index: number, init: boolean, request: ContainerRequest | undefined): PodContainer => {
    const kind = request === undefined ? undefined : deviceKind(request.type);
    return { name, index, init, request, kind, kindIndex: kind === undefined ? -1 : kindIndex(kind) };
  };
  (pod.spec?.initContainers ?? []).forEach((c, i) => containers.push(container(c.name, i, true, requests.init[i])));
  const initCount = containers.length;
  (pod.spec?.containers ?? []).forEach((c, i) => containers.push(container(c.name, initCount + i, false, requests.app[i])));
  const selectors = parseDeviceSelectors(annotations);
  const realtimeOn = realtimeOverrideOf(annotations) ?? config.realtime.enabled;
  const mode = config.realtime.mode;
  return {
    namespaceQuota: input.quota,
    memoryFactor: config.memoryFactor,
    containers,
    initCount,
    annotations,
    selectors,
    gpuPolicy: gpuPolicyOf(annotations, config.gpuSchedulerPolicy, selectors.numaBind),
    nodePolicy: nodePolicyOf(annotations, config.nodeSchedulerPolicy),
    weights,
    realtime:
      realtimeOn && mode !== 'disabled'
        ? { mode, marginMiB: config.realtime.marginMiB, maxAgeMs: config.realtime.maxAgeMs, nowMs: input.nowMs }
        : undefined,
    selectsByType: selectors.useTypes.length > 0 || selectors.noUseTypes.length > 0 || selectors.vgpuMode !== undefined,
    selectsByUuid: selectors.useUuids.size > 0 || selectors.noUseUuids.size > 0,
    typeCheckCache: new Map(),
  };
}
