/**
 * What the overview puts first (docs/api.md §11): one summary per node, and the orders a user can pick. The default,
 * `attention`, puts the nodes that need a look on top: over-committed cards, then unhealthy cards (an unregistered
 * node or unreadable state counts as troubled too), then an allocation in progress (the node lock), then the busiest
 * by booked memory, cores and slots. Pure functions over the nodes' views (test/unit/console/rank.test.ts).
 */
import type { NodeDevicesView } from '../../control/views';

export interface NodeSummary {
  readonly node: NodeDevicesView;
  readonly cards: number;
  readonly overcommitted: number;
  readonly unhealthy: number;
  /** Not registered, or parts of its state unreadable. */
  readonly troubled: boolean;
  /** Seconds the node lock has been held (an allocation in progress); undefined when none. */
  readonly lockAgeSeconds: number | undefined;
  readonly memUsed: number;
  readonly mem: number;
  readonly coresUsed: number;
  readonly cores: number;
  readonly slotsUsed: number;
  readonly slots: number;
  /** NeuronCores (AWS Neuron: cores taken by index, no memory booked), apart from the per-cent cores above. */
  readonly neuronUsed: number;
  readonly neuron: number;
  /** Pods booked on its cards, those the user may not read included. */
  readonly pods: number;
  /** Nothing booked, nothing wrong, nothing in progress: what "hide empty nodes" hides. */
  readonly empty: boolean;
}

export function summarise(node: NodeDevicesView): NodeSummary {
  let overcommitted = 0;
  let unhealthy = 0;
  let memUsed = 0;
  let mem = 0;
  let coresUsed = 0;
  let cores = 0;
  let slotsUsed = 0;
  let slots = 0;
  let pods = 0;
  let neuronUsed = 0;
  let neuron = 0;
  for (const d of node.devices) {
    if (d.overcommitted) overcommitted++;
    if (!d.health) unhealthy++;
    slotsUsed += d.used;
    slots += d.count;
    pods += d.pods.length + ((d as { hiddenPods?: number }).hiddenPods ?? 0);
    // Devices whose cores are masks (AWS Neuron) book no memory and no per-cent cores: counted by slots only.
    if (d.coreIndexes !== undefined) {
      neuronUsed += d.coreIndexes.used.length;
      neuron += d.coreIndexes.used.length + d.coreIndexes.free.length;
      continue;
    }
    memUsed += d.usedmem;
    mem += d.devmem;
    coresUsed += d.usedcores;
    cores += d.devcore;
  }
  const troubled = !node.registered || (node.problems ?? []).length > 0;
  // A lock without its age (an older server) still counts as an allocation in progress.
  const lockAgeSeconds = node.lock !== null ? (node.lock.ageSeconds ?? 0) : undefined;
  const busy = slotsUsed > 0 || memUsed > 0 || coresUsed > 0 || neuronUsed > 0 || pods > 0;
  return {
    node,
    cards: node.devices.length,
    overcommitted,
    unhealthy,
    troubled,
    lockAgeSeconds,
    memUsed,
    mem,
    coresUsed,
    cores,
    slotsUsed,
    slots,
    neuronUsed,
    neuron,
    pods,
    empty: !busy && !troubled && overcommitted === 0 && unhealthy === 0 && lockAgeSeconds === undefined,
  };
}

export const SORTS = {
  attention: 'Needs attention, then busiest',
  usage: 'Most used memory share',
  free: 'Most free memory',
  pending: 'Allocations in progress',
  name: 'Name',
} as const;
export type SortKey = keyof typeof SORTS;

export function isSortKey(value: string): value is SortKey {
  return Object.hasOwn(SORTS, value);
}

const share = (used: number, total: number) => (total > 0 ? used / total : 0);
/** node2 before node10: names as a person reads them. */
const byName = (a: NodeSummary, b: NodeSummary) => a.node.name.localeCompare(b.node.name, 'en', { numeric: true });
/** Busiest first: booked memory share, then cores share, then slots share. */
const byUsage = (a: NodeSummary, b: NodeSummary) =>
  share(b.memUsed, b.mem) - share(a.memUsed, a.mem) || share(b.coresUsed, b.cores) - share(a.coresUsed, a.cores) || share(b.neuronUsed, b.neuron) - share(a.neuronUsed, a.neuron) || share(b.slotsUsed, b.slots) - share(a.slotsUsed, a.slots);
/** Nodes with an allocation in progress first, the oldest lock on top. */
const byPending = (a: NodeSummary, b: NodeSummary) => (b.lockAgeSeconds ?? -1) - (a.lockAgeSeconds ?? -1);

const COMPARATORS: Record<SortKey, (a: NodeSummary, b: NodeSummary) => number> = {
  attention: (a, b) =>
    b.overcommitted - a.overcommitted ||
    b.unhealthy - a.unhealthy ||
    Number(b.troubled) - Number(a.troubled) ||
    Number(b.lockAgeSeconds !== undefined) - Number(a.lockAgeSeconds !== undefined) ||
    byUsage(a, b) ||
    byName(a, b),
  usage: (a, b) => byUsage(a, b) || byName(a, b),
  free: (a, b) => b.mem - b.memUsed - (a.mem - a.memUsed) || byName(a, b),
  pending: (a, b) => byPending(a, b) || byUsage(a, b) || byName(a, b),
  name: byName,
};

/** A new array in the order asked for (the input is not changed). */
export function sortNodes(nodes: readonly NodeSummary[], key: SortKey): NodeSummary[] {
  return [...nodes].sort(COMPARATORS[key]);
}
