/**
 * HAMi's NVIDIA `MutateAdmission` (docs/api.md §7a): the defaults the admission webhook gives a container, and the
 * percentage it refuses. The webhook (lib/admission/review.ts) calls it through `DeviceKind.admit`.
 */
import { readQuantity } from '../../quantity';
import type { EngineConfig } from '../../types';
import type { AdmissionDefaults, AdmittedContainer } from '../kind';

/** HAMi's text for a memory percentage that is not an integer from 0 to 100. */
export function invalidPercentage(resource: string, value: string, container: string): string {
  return `invalid ${resource} value ${value} in container ${container}: must be an integer between 0 and 100`;
}

/**
 * One container: a percentage above 100 is refused; a container asking for memory or cores without a card count gets
 * `defaultGpuNum` cards; a counted container without cores, asking for a whole card's memory (no memory, or 100 %),
 * gets cores 100 (an exclusive card). Returns a refusal text or undefined; mutates `container`.
 */
export function admitNvidia(container: AdmittedContainer, config: EngineConfig, defaults: AdmissionDefaults): string | undefined {
  const { resourceCountName: count, resourceMemoryName: memory, resourceMemoryPercentageName: percentage, resourceCoreName: cores } = config;
  const resources = (container.resources ??= {});
  const limits = (resources.limits ??= {});
  const requests = resources.requests ?? {};
  const percentageLimit = limits[percentage];
  if (percentageLimit !== undefined) {
    const reading = readQuantity(percentageLimit);
    if (reading.kind !== 'integer' || reading.value > 100n) return invalidPercentage(percentage, String(percentageLimit), container.name);
  }
  if (!(count in limits) && (cores in limits || memory in limits || percentage in limits) && defaults.defaultGpuNum > 0) {
    limits[count] = String(defaults.defaultGpuNum);
  }
  const counted = count in limits || count in requests;
  const coresGiven = cores in limits || cores in requests;
  if (counted && !coresGiven) {
    const percentageValue = limits[percentage] ?? requests[percentage];
    const reading = percentageValue === undefined ? undefined : readQuantity(percentageValue);
    const wholeCard = reading === undefined ? !(memory in limits) && !(memory in requests) : reading.kind === 'integer' && reading.value === 100n;
    if (wholeCard) limits[cores] = '100';
  }
  if (Object.keys(limits).length === 0) delete resources.limits;
  if (Object.keys(resources).length === 0) delete container.resources;
  return undefined;
}
