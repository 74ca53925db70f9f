/**
 * Per-container NVIDIA requests from limits/requests (hami-spec 1.2) and the pod request matrix
 * (1.3: init containers first, then app containers).
 */
import { INT32_MAX, quantityAsInt64, toInt32 } from './quantity';
import { NVIDIA } from './types';
import type { ContainerLike, ContainerRequest, EngineConfig, PodLike } from './types';

/** `MemPercentagereq` sentinel meaning "no percentage given". */
export const PercentageUnset = 101;

export interface PodRequests {
  readonly init: (ContainerRequest | undefined)[];
  readonly app: (ContainerRequest | undefined)[];
}

export function podContainerRequests(pod: PodLike, config: EngineConfig): PodRequests {
  return {
    init: (pod.spec?.initContainers ?? []).map((c) => containerRequest(c, config)),
    app: (pod.spec?.containers ?? []).map((c) => containerRequest(c, config)),
  };
}

/** A pod "has HAMi resources" iff some container asks for at least one card. */
export function hasManagedResources(pod: PodLike, config: EngineConfig): boolean {
  const { init, app } = podContainerRequests(pod, config);
  return init.some((r) => r !== undefined) || app.some((r) => r !== undefined);
}

/** HAMi's `GenerateResourceRequests`; undefined when the container asks for no card. */
export function containerRequest(container: ContainerLike, config: EngineConfig): ContainerRequest | undefined {
  const read = (name: string): string | number | undefined => container.resources?.limits?.[name] ?? container.resources?.requests?.[name];
  const count = quantityAsInt64(read(config.resourceCountName));
  if (count === undefined) return undefined;
  const nums = toInt32(count);
  if (nums <= 0) return undefined;

  const factor = Math.max(config.memoryFactor, 1);
  let memreq = 0;
  const memoryQuantity = read(config.resourceMemoryName);
  if (memoryQuantity !== undefined) {
    const memory = quantityAsInt64(memoryQuantity);
    // Not a plain int32-sized integer: HAMi rejects the whole request rather than under-allocate.
    if (memory === undefined || memory < 0 || memory > Math.floor(INT32_MAX / factor)) return undefined;
    memreq = memory * factor;
  }

  let percentage = PercentageUnset;
  const percentageValue = quantityAsInt64(read(config.resourceMemoryPercentageName));
  if (percentageValue !== undefined) {
    if (percentageValue > 100) percentage = 100;
    else if (percentageValue > 0) percentage = percentageValue;
  }
  if (percentage === PercentageUnset && memreq === 0) {
    if (config.defaultMemory !== 0) memreq = config.defaultMemory;
    else percentage = 100;
  }

  let coresreq = config.defaultCores;
  const cores = quantityAsInt64(read(config.resourceCoreName));
  if (cores !== undefined) coresreq = toInt32(cores);

  return { nums, type: NVIDIA, memreq, mempercentagereq: percentage, coresreq };
}
