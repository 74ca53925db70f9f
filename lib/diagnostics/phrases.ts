/**
 * The words for a container's request, a chosen device and a device's cores, shared by `hami-diag` and the web console
 * so both say the same for every device kind (AWS Neuron in NeuronCores, by index: docs/devices.md). Pure, and safe in
 * the browser.
 */
import type { CardEvidenceLog, ContainerLog, PreemptionLog, SchedulerLog, SelectorsLog } from './schedulerLog';

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

/**
 * What the pod asks for, one line per container with a GPU request (`main asks 1 card(s) × 4000 MiB, 30% cores`): the
 * same on every node tried, so read from the first node that carries requests (`?detail=devices`). Empty without.
 */
export function podRequestPhrases(nodes: readonly { readonly containers: readonly ContainerLog[] }[]): string[] {
  const node = nodes.find((n) => n.containers.some((c) => c.request !== undefined));
  if (node === undefined) return [];
  return node.containers.flatMap((c) => (c.request === undefined ? [] : [`${c.init ? `${c.name} (init)` : c.name} ${requestPhrase(c.request)}`]));
}

/**
 * Both sides of a card refused for not being what the pod selects: `card type NVIDIA-T4; the pod asks for A100`,
 * `card GPU-1; the pod excludes it`, `card on NUMA node 1; the pod asks for all its cards on one NUMA node`. The card's
 * side comes from the evidence (`type`, `mode`, `numa` where the registration is still the one decided on), the pod's
 * from its recorded selection; a side not known is left out. Empty for other outcomes, or when neither side is known.
 */
export function mismatchPhrase(card: CardEvidenceLog, selectors: SelectorsLog | undefined, request: ContainerLog['request']): string {
  const sides: string[] = [];
  switch (card.outcome) {
    case 'CardTypeMismatch':
      if (request !== undefined && request.type !== 'NVIDIA') {
        sides.push(card.type !== undefined ? `device type ${card.type}` : 'a device of another type', `the pod asks for ${request.type} devices`);
        break;
      }
      if (card.type !== undefined) sides.push(`card type ${card.type}${selectors?.vgpuMode !== undefined && card.mode !== undefined ? `, mode ${card.mode}` : ''}`);
      if (selectors?.useTypes) sides.push(`the pod asks for ${selectors.useTypes.join(' or ')}`);
      if (selectors?.noUseTypes) sides.push(`the pod excludes ${selectors.noUseTypes.join(', ')}`);
      if (selectors?.vgpuMode !== undefined) sides.push(`the pod asks for mode ${selectors.vgpuMode}`);
      break;
    case 'CardUuidMismatch':
      if (card.uuid !== '') sides.push(`card ${card.uuid}`);
      if (selectors?.useUuids) sides.push(`the pod asks only for ${selectors.useUuids.join(', ')}`);
      if (selectors?.noUseUuids) sides.push(selectors.noUseUuids.includes(card.uuid) ? 'the pod excludes it' : `the pod excludes ${selectors.noUseUuids.join(', ')}`);
      break;
    case 'NumaNotFit':
      if (card.numa !== undefined) sides.push(`card on NUMA node ${card.numa}`);
      if (selectors?.numaBind) sides.push('the pod asks for all its cards on one NUMA node');
      break;
    default:
      return '';
  }
  return sides.join('; ');
}

/** `NVIDIA card(s)`, `Neuron device(s)`: a device kind's own noun (docs/devices.md). */
function kindNoun(vendor: string, plural: boolean): string {
  const noun = vendor === 'AWSNeuron' ? 'Neuron device' : vendor === 'NVIDIA' ? 'NVIDIA card' : `${vendor} device`;
  return plural ? `${noun}s` : noun;
}

/** `2 Neuron devices not considered: the pod asks for NVIDIA cards`; empty when the node has none of another kind. */
export function otherKindsPhrase(others: readonly { readonly type: string; readonly count: number }[] | undefined, requestType: string | undefined): string {
  if (others === undefined || others.length === 0) return '';
  const counted = others.map((o) => `${o.count} ${kindNoun(o.type, o.count !== 1)}`).join(' and ');
  return `${counted} not considered${requestType === undefined ? '' : `: the pod asks for ${kindNoun(requestType, true)}`}`;
}

/**
 * GPU-aware preemption (docs/preemption.md) in words: the summary, then one line per victim with its priority and what it
 * held, then why this plan. A victim in a namespace the reader may not read is not named (`podHidden`, docs/api.md §10).
 */
export function preemptionPhrases(preemption: PreemptionLog): { readonly summary: string; readonly victims: readonly string[]; readonly why?: string; readonly spared?: string } {
  const victims = (preemption.victims ?? []).map((v) => {
    const who = v.pod ?? 'a pod in a namespace you may not read';
    const held = v.cards.map((c) => `${c.uuid} ${c.mem} MiB${c.cores > 0 ? `, ${c.cores}% cores` : ''}`).join('; ');
    return `${who} (priority ${v.priority}${v.violatesPdb ? ', its PodDisruptionBudget refused an eviction' : ''}) held ${held}`;
  });
  const spared = preemption.spared !== undefined && preemption.spared.length > 0 ? `kept for their PodDisruptionBudget (the pod fits without their cards): ${preemption.spared.join(', ')}` : undefined;
  return { summary: preemption.summary, victims, ...(preemption.why !== undefined ? { why: preemption.why } : {}), ...(spared !== undefined ? { spared } : {}) };
}

/** `Preempted by ml/urgent on node n1 at …`: what a victim's page says first. */
export function preemptedByPhrase(by: NonNullable<SchedulerLog['preemptedBy']>): string {
  return `Preempted by ${by.pod ?? 'a pod in a namespace you may not read'} on node ${by.node} at ${by.time}: evicted to free its GPU cards for a higher-priority pod (docs/preemption.md)`;
}
