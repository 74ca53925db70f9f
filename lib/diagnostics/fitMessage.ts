/**
 * A passed filter's HAMi message (`find fit node(…)`), rebuilt from its evidence: records leave it out, since the
 * evidence holds its every part (lib/store/recordCodec.ts stores and reads them), and this is how it reads again.
 */
import { CorruptItemError } from '../errors';
import { fitNodeMessage, listingOrder } from '../engine/messages';
import type { NodeEvidence } from '../engine/types';
import type { FilterRecord } from './record';

/** A passed decision's record, with the policy that listed its fitting nodes and its evidence. */
export function canRebuildSummary(filter: FilterRecord): boolean {
  return filter.status === 'passed' && filter.node !== undefined && filter.nodePolicy !== undefined && (filter.packed !== undefined || filter.nodes.length > 0);
}

/** `find fit node(...)…` as the decision wrote it: its fitting nodes, from the evidence, in the order it listed them. */
export function fitMessageFromEvidence(filter: Omit<FilterRecord, 'summary'>, nodes: readonly NodeEvidence[]): string {
  if (filter.node === undefined || filter.nodePolicy === undefined) throw new CorruptItemError('stored attempt has no summary');
  const fitting = nodes.filter((n) => n.status === 'passed').map((n) => ({ name: n.name, score: n.score }));
  return fitNodeMessage(filter.node, nodes.length, fitting.sort(listingOrder(filter.nodePolicy)));
}

/** A passed attempt's message when the evidence it is rebuilt from cannot be read: the node HAMi's message names. */
export function unreadableFitMessage(filter: Omit<FilterRecord, 'summary'>): string {
  if (filter.node === undefined) throw new CorruptItemError('stored attempt has no summary');
  return `find fit node(${filter.node}); the nodes' evidence cannot be read`;
}
