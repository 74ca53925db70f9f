/** The decision engine's public surface: pure functions over plain data (hami-spec 1-5, 7; CONTRACT 8, 9). */
export * from './types';
export { cardScore, decide } from './decide';
export { hasManagedResources, podContainerRequests, containerRequest, PercentageUnset } from './requests';
export type { PodRequests } from './requests';
export {
  CordonAnnotation,
  HandshakeAnnotation,
  PairScoreAnnotation,
  RealtimeAnnotation,
  RegisterAnnotation,
  RegistrationFormatError,
  decodeNodeDevices,
  decodePairScores,
  parseCordon,
  parseGoBool,
  parseNodeRegistration,
  parseRealtimeReport,
} from './registration';
export {
  BindPhase,
  DeviceScoringWeightsError,
  PodAnnotation,
  PodAnnotationFormatError,
  decodePodDevices,
  defaultDeviceScoringWeights,
  deviceScoringWeightsOf,
  encodePodDevices,
  gpuPolicyOf,
  nodePolicyOf,
  parseAnnotationList,
  parseDeviceScoringWeights,
  parseDeviceSelectors,
  realtimeOverrideOf,
} from './podAnnotations';
export type { DeviceScoringWeights, DeviceSelectors, GpuPolicy, NodePolicy } from './podAnnotations';
export { addPodUsage, collapsePodUsage, podUsageTotals } from './usage';
export type { CollapsedDevice } from './usage';
export {
  compareCodeUnits,
  fitNodeMessage,
  formatGoFixed2,
  genReason,
  goQuote,
  noAvailableNodeMessage,
  parseReason,
  reasonEventMessage,
  reasonEvents,
} from './messages';
export type { ParsedReason, ScoredNode } from './messages';
export { quantityAsInt64 } from './quantity';
