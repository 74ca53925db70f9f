/**
 * Reading HAMi's failure texts back into codes, so the scheduler log can attach a hint to each and
 * metrics can count them. `"x/y Reason"` pieces follow ParseReason (docs/hami-parity.md §4.3); the other texts
 * are the node-level, bind and filter-error messages we know by shape.
 */
import { parseReason } from '../engine/messages';
import { INVALID_REQUEST_PREFIX } from '../engine/requests';
import { NodeFailure, ReasonCode, type NodeEvidence } from '../engine/types';

/** Keys that have a hint but are not HAMi reason codes: node-level, bind and filter-error texts. */
export const ExtraReasonKey = {
  NodeUnregistered: NodeFailure.Unregistered,
  DeviceTypeNotFound: NodeFailure.DeviceTypeNotFound,
  NodeStateUnreadable: NodeFailure.StateUnreadable,
  NodeBookingLimit: NodeFailure.BookingLimit,
  MigAllocationFailed: NodeFailure.MigAllocationFailed,
  NodeLockContention: 'NodeLockContention',
  InvalidDeviceScoringWeights: 'InvalidDeviceScoringWeights',
  InvalidResourceRequest: 'InvalidResourceRequest',
  FilterError: 'FilterError',
  BindingFailed: 'BindingFailed',
} as const;
export type ExtraReasonKey = (typeof ExtraReasonKey)[keyof typeof ExtraReasonKey];

/** Everything a hint can be looked up by. */
export type ReasonKey = ReasonCode | ExtraReasonKey;

const reasonCodes: ReadonlySet<string> = new Set(Object.values(ReasonCode));
const bareKeys: ReadonlySet<string> = new Set<string>([...reasonCodes, ...Object.values(NodeFailure)]);

export function isReasonCode(text: string): text is ReasonCode {
  return reasonCodes.has(text);
}

/**
 * The hint keys a node or container failure text names, in order of appearance: the codes of its
 * `x/y` pieces, or the text itself when it is a bare code or a known node-level text
 * (`NodeInsufficientDevice`, `node unregistered`, `Device type not found`). Unknown codes are dropped.
 */
export function reasonKeysOf(text: string): ReasonKey[] {
  const keys: ReasonKey[] = [];
  for (const entry of parseReason(text)) {
    if (isReasonCode(entry.reason) && !keys.includes(entry.reason)) keys.push(entry.reason);
  }
  if (keys.length > 0) return keys;
  const bare = text.trim();
  return bareKeys.has(bare) ? [bare as ReasonKey] : [];
}

/** Bind failures: HAMi's lock texts (docs/hami-parity.md §6.2) end in `node lock contention`. */
export function bindFailureKey(summary: string): ReasonKey {
  return /: node lock contention$/.test(summary.trim()) ? ExtraReasonKey.NodeLockContention : ExtraReasonKey.BindingFailed;
}

/** Filter errors (a bad pod, not a bad node): the scoring-weights texts start with the annotation name, bad quantities with INVALID_REQUEST_PREFIX. */
export function filterErrorKey(summary: string): ReasonKey {
  if (summary.startsWith('invalid hami.io/device-scoring-weights annotation')) return ExtraReasonKey.InvalidDeviceScoringWeights;
  if (summary.startsWith(INVALID_REQUEST_PREFIX)) return ExtraReasonKey.InvalidResourceRequest;
  return ExtraReasonKey.FilterError;
}

/**
 * The reasons a failed node shows, once each: its failed containers' codes, or, when no container
 * failed, its node-level text (`node unregistered`). Passed nodes show none.
 */
export function nodeReasonKeys(node: NodeEvidence): ReasonKey[] {
  if (node.status !== 'failed') return [];
  const failed = node.containers.filter((container) => container.status === 'failed');
  const texts = failed.length > 0 ? failed.map((container) => container.reason ?? '') : [node.reason ?? ''];
  return [...new Set(texts.flatMap(reasonKeysOf))];
}

/** How many nodes show each reason, most first; ties keep first appearance. */
export function countNodesByReason(nodes: readonly NodeEvidence[]): [ReasonKey, number][] {
  return countKeys(nodes.map(nodeReasonKeys));
}

/**
 * The same count from the decision's failure text per failed node (HAMi's FailedNodes), which names what
 * `nodeReasonKeys` finds in that node's evidence (a node fails on its first failing container), without building
 * the evidence.
 */
export function countFailedNodesByReason(failedNodes: Readonly<Record<string, string>>): [ReasonKey, number][] {
  return countKeys(Object.values(failedNodes).map(reasonKeysOf));
}

function countKeys(perNode: readonly (readonly ReasonKey[])[]): [ReasonKey, number][] {
  const counts = new Map<ReasonKey, number>();
  for (const keys of perNode) for (const key of new Set(keys)) counts.set(key, (counts.get(key) ?? 0) + 1);
  return [...counts.entries()].sort((a, b) => b[1] - a[1]);
}
