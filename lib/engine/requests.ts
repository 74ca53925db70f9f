/**
 * Per-container NVIDIA requests from limits/requests (docs/hami-parity.md §1.2), the pod request matrix
 * (1.3: init containers first, then app containers), and the one rule set for quantities that cannot be
 * scheduled safely (docs/api.md, "Quantities"): the filter, the admission webhook and the diagnostics all
 * use `podRequestProblems`.
 */
import { INT32_MAX, quantityAsInt64, readQuantity, toInt32 } from './quantity';
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

/**
 * Whether the scheduler must look at the pod: some container asks for at least one card (HAMi's rule), or
 * some managed quantity cannot be read, so the pod gets an explanation instead of silently passing as a pod
 * without GPUs.
 */
export function hasManagedResources(pod: PodLike, config: EngineConfig): boolean {
  const { init, app } = podContainerRequests(pod, config);
  return init.some((r) => r !== undefined) || app.some((r) => r !== undefined) || podRequestProblems(pod, config).length > 0;
}

/** One managed quantity that cannot be scheduled safely, and why, in words for the pod's owner. */
export interface QuantityProblem {
  readonly container: string;
  readonly resource: string;
  readonly value: string;
  readonly problem: string;
}

/** The text that starts every answer about bad quantities (the scheduler log's hint keys on it). */
export const INVALID_REQUEST_PREFIX = 'invalid GPU resource request';

/**
 * Every managed quantity of the pod that is negative, not a whole number, unreadable, or beyond what HAMi's
 * int32 arithmetic holds (it would wrap: `gpucores: 4294967196` is -100 to HAMi). Checked in limits and in
 * requests, init containers first. HAMi's own clamps stay: a percentage above 100 means 100, cores above
 * 100 mean 100.
 */
export function podRequestProblems(pod: PodLike, config: EngineConfig): QuantityProblem[] {
  const problems: QuantityProblem[] = [];
  const memoryMax = Math.floor(INT32_MAX / Math.max(config.memoryFactor, 1));
  // The percentage has no upper bound here: HAMi clamps it to 100 before it reaches int32.
  const limits: [string, number | undefined][] = [
    [config.resourceCountName, INT32_MAX],
    [config.resourceMemoryName, memoryMax],
    [config.resourceMemoryPercentageName, undefined],
    [config.resourceCoreName, INT32_MAX],
  ];
  for (const container of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const values of [container.resources?.limits, container.resources?.requests]) {
      for (const [resource, max] of limits) {
        const value = values?.[resource];
        if (value === undefined) continue;
        const problem = quantityProblem(value, max);
        if (problem !== undefined && !problems.some((p) => p.container === container.name && p.resource === resource)) {
          problems.push({ container: container.name, resource, value: String(value), problem });
        }
      }
    }
  }
  return problems;
}

function quantityProblem(value: string | number, max: number | undefined): string | undefined {
  const reading = readQuantity(value);
  const tooLarge = max === undefined ? 'is too large to read as a whole number' : `is larger than ${max} (HAMi computes it in int32)`;
  switch (reading.kind) {
    case 'invalid':
      return 'is not a Kubernetes quantity';
    case 'fraction':
      return 'is not a whole number';
    case 'overflow':
      return tooLarge;
    case 'integer':
      if (reading.value < 0n) return 'is negative';
      if (max !== undefined && reading.value > BigInt(max)) return tooLarge;
      return undefined;
  }
}

/** The filter's and the webhook's answer for bad quantities: every problem, container by container. */
export function describeQuantityProblems(problems: readonly QuantityProblem[]): string {
  const shown = problems.slice(0, 8).map((p) => `container ${JSON.stringify(p.container)}: ${p.resource} ${JSON.stringify(clip(p.value))} ${p.problem}`);
  const more = problems.length > shown.length ? `; and ${problems.length - shown.length} more` : '';
  return `${INVALID_REQUEST_PREFIX}: ${shown.join('; ')}${more}`;
}

function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 61)}...` : text;
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
