/**
 * Log messages and field names shared by every component that writes decision logs, and by the
 * CloudWatch Logs Insights queries in infra/cloudwatch/ (which filter on these exact strings).
 * Messages are constants; details go in the fields. See infra/cloudwatch/README.md for the table.
 */

export const LogMessage = {
  /** v4: a node fits the pod (fields: pod, node, attemptId, score). */
  NodeFitPod: 'NodeFitPod',
  /** v4: a node does not fit (fields: pod, node, attemptId, reason). */
  NodeUnfitPod: 'NodeUnfitPod',
  /** Bind met another pod's node lock (fields: pod, node, holder, attemptId). */
  NodeLockContention: 'NodeLockContention',
  /** Real-time check refused (strict) or would have refused (warning) a card (HAMi's text). */
  RealtimeCheckFailed: 'Real-time memory check failed',
  /** Real-time data missing or stale: the ledger was used instead (HAMi's text). */
  RealtimeFallback: 'Failed to get real-time usage, using cached data',
  /** Real-time data used for a card (HAMi's text). */
  RealtimeUpdated: 'Updated real-time device usage',
  /** GPU-aware preemption for a pod no node fit (fields: pod, attemptId, outcome, node, victims, cards, summary). */
  Preemption: 'Preemption',
  /** The Eviction API refused a victim's eviction (fields: pod, victim, node, disruptionBudget, error). */
  EvictionRefused: 'EvictionRefused',
} as const;
export type LogMessage = (typeof LogMessage)[keyof typeof LogMessage];

/** Field names of the decision log lines; level-5 card lines use the reason code as their message. */
export const LogField = {
  /** `namespace/name`. */
  pod: 'pod',
  node: 'node',
  attemptId: 'attemptId',
  /** Verbosity level of the line (klog V): 4 node lines, 5 card lines. */
  verbosity: 'v',
  score: 'score',
  reason: 'reason',
  container: 'container',
  /** Card UUID. */
  device: 'device',
  deviceIndex: 'deviceIndex',
  deviceTotalMemory: 'deviceTotalMemory',
  deviceUsedMemory: 'deviceUsedMemory',
  requestMemory: 'requestMemory',
  deviceTotalCore: 'deviceTotalCore',
  deviceUsedCore: 'deviceUsedCore',
  requestCores: 'requestCores',
  /** Card slots (time-slicing share count) and slots in use. */
  count: 'count',
  used: 'used',
  requestDevices: 'requestDevices',
  allocatedDevices: 'allocatedDevices',
  holder: 'holder',
  realUsedMemory: 'realUsedMemory',
  totalMemory: 'totalMemory',
  cachedUsedMemory: 'cachedUsedMemory',
  realtimeMode: 'mode',
  /** Preemption: `evicting`, `dryRun`, `waiting`, `none`, `refused` (docs/preemption.md). */
  outcome: 'outcome',
  /** Preemption: the victims (`namespace/name`, comma-separated), the cards the pod takes, the one-sentence summary. */
  victims: 'victims',
  cards: 'cards',
  summary: 'summary',
  /** A refused eviction: the victim, whether a PodDisruptionBudget refused it, the API server's message. */
  victim: 'victim',
  disruptionBudget: 'disruptionBudget',
  error: 'error',
} as const;
export type LogField = (typeof LogField)[keyof typeof LogField];
