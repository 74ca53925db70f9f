/**
 * The words for a container's request, a chosen device and a device's cores, shared by `hami-diag` and the web console
 * so both say the same for every device kind (AWS Neuron in NeuronCores, by index: docs/devices.md). Pure, and safe in
 * the browser.
 */
import type { CardEvidenceLog, ContainerLog } from './schedulerLog';

type Chosen = NonNullable<ContainerLog['chosen']>[number];

/** `asks 2 card(s) × 4000 MiB, 30% cores`, `asks 4 Neuron device(s)` or `asks 3 NeuronCore(s)`; empty without a request. */
export function requestPhrase(request: ContainerLog['request']): string {
  if (request === undefined) return '';
  // AWS Neuron: whole devices (cores 0), or a number of NeuronCores.
  if (request.type === 'AWSNeuron') return request.coresreq === 0 ? `asks ${request.nums} Neuron device(s)` : `asks ${request.coresreq} NeuronCore(s)`;
  const memory = request.memreq > 0 ? `${request.memreq} MiB` : request.mempercentagereq !== 101 ? `${request.mempercentagereq}% memory` : 'default memory';
  return `asks ${request.nums} card(s) × ${memory}, ${request.coresreq}% cores`;
}

/** `device 1 inf-AWSNeuron-1, cores 0,1` or `card 0 GPU-a, 4000 MiB, 30% cores`. */
export function chosenPhrase(chosen: Chosen): string {
  return chosen.coreIndexes !== undefined
    ? `device ${chosen.idx} ${chosen.uuid}, cores ${indexList(chosen.coreIndexes)}`
    : `card ${chosen.idx} ${chosen.uuid}, ${chosen.usedmem} MiB, ${chosen.usedcores}% cores`;
}

/** `30/100`, or for cores taken by index `1/3 (used 0; free 1)`. */
export function coresPhrase(used: number, total: number, indexes: CardEvidenceLog['coreIndexes']): string {
  if (indexes === undefined) return `${used}/${total}`;
  return `${used}/${total} (used ${indexList(indexes.used)}; free ${indexList(indexes.free)})`;
}

/** `0,1,2`, or `-` for none. */
export function indexList(indexes: readonly number[]): string {
  return indexes.length === 0 ? '-' : indexes.join(',');
}
