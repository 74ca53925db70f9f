/**
 * The pod request matrix (docs/hami-parity.md §1.3: init containers first, then app containers), each container's
 * request read by its device kind (./devices), and the one rule set for quantities that cannot be scheduled safely
 * (docs/api.md §9, "Quantities"): the filter, the admission webhook and the diagnostics all use `podRequestProblems`.
 */
import { DEVICE_KINDS } from './devices';
import { readQuantity } from './quantity';
import type { ContainerLike, ContainerRequest, EngineConfig, PodLike } from './types';

export { PercentageUnset } from './types';

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

/** The container's request, by the first device kind it asks for (one kind per container: see `podRequestProblems`). */
export function containerRequest(container: ContainerLike, config: EngineConfig): ContainerRequest | undefined {
  for (const kind of DEVICE_KINDS) {
    const request = kind.request(container, config);
    if (request !== undefined) return request;
  }
  return undefined;
}

/** Every resource name the scheduler manages (each device kind's quantities, in the kinds' order). */
export function managedResourceNames(config: EngineConfig): string[] {
  return DEVICE_KINDS.flatMap((kind) => kind.quantities(config).map((q) => q.name));
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
  const limits = DEVICE_KINDS.flatMap((kind) => kind.quantities(config).map((q): [string, number | undefined] => [q.name, q.max]));
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  // One kind of device per pod: each kind's device plugin reads its own annotations, written for the whole pod.
  const kindsAsked = DEVICE_KINDS.filter((kind) => containers.some((container) => kind.request(container, config) !== undefined));
  if (kindsAsked.length > 1) {
    const asking = containers.find((container) => kindsAsked[1]!.request(container, config) !== undefined)!;
    const names = kindsAsked.map((kind) => kind.quantities(config)[0]?.name ?? kind.vendor);
    problems.push({ container: asking.name, resource: names.join(' and '), value: 'both', problem: 'ask for two kinds of device in one pod; a pod may use one kind' });
  }
  for (const container of containers) {
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
