/** The plan of one pod (./plan.ts): read once per decision, from the pod, the configuration and the kinds registered. */
import type { DecideInput } from './decision';
import { deviceKind, kindIndex, podDeviceSelectors } from './devices';
import type { PodContainer, PodPlan } from './plan';
import { gpuPolicyOf, nodePolicyOf, realtimeOverrideOf, type DeviceScoringWeights } from './podAnnotations';
import { podContainerRequests } from './requests';
import type { ContainerRequest } from './types';

export function planPod(input: DecideInput, weights: DeviceScoringWeights): PodPlan {
  const { pod, config } = input;
  const annotations = pod.metadata.annotations ?? {};
  const requests = podContainerRequests(pod, config);
  const containers: PodContainer[] = [];
  const container = (name: string, index: number, init: boolean, request: ContainerRequest | undefined): PodContainer => {
    const kind = request === undefined ? undefined : deviceKind(request.type);
    return { name, index, init, request, kindIndex: kind === undefined ? -1 : kindIndex(kind) };
  };
  (pod.spec?.initContainers ?? []).forEach((c, i) => containers.push(container(c.name, i, true, requests.init[i])));
  const initCount = containers.length;
  (pod.spec?.containers ?? []).forEach((c, i) => containers.push(container(c.name, initCount + i, false, requests.app[i])));
  const selectors = podDeviceSelectors(annotations);
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
