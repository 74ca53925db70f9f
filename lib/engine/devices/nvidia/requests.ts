/**
 * NVIDIA requests from a container's limits and requests: HAMi's `GenerateResourceRequests` (docs/hami-parity.md §1.2),
 * and which quantities it reads (their bounds are HAMi's int32 arithmetic).
 */
import { INT32_MAX, quantityAsInt64, toInt32 } from '../../quantity';
import { PercentageUnset, type ContainerLike, type ContainerRequest, type EngineConfig } from '../../types';
import { NVIDIA } from './names';

/** The quantities NVIDIA requests read, with the largest value each may hold (undefined: HAMi clamps it). */
export function nvidiaQuantities(config: EngineConfig): { readonly name: string; readonly max: number | undefined }[] {
  return [
    { name: config.resourceCountName, max: INT32_MAX },
    { name: config.resourceMemoryName, max: Math.floor(INT32_MAX / Math.max(config.memoryFactor, 1)) },
    // The percentage has no upper bound here: HAMi clamps it to 100 before it reaches int32.
    { name: config.resourceMemoryPercentageName, max: undefined },
    { name: config.resourceCoreName, max: INT32_MAX },
  ];
}

/** HAMi's `GenerateResourceRequests`; undefined when the container asks for no card. */
export function nvidiaRequest(container: ContainerLike, config: EngineConfig): ContainerRequest | undefined {
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
