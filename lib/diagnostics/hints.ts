/**
 * What each failure means, why it usually happens and what to do, for every reason the scheduler can
 * report. Based on the failure table of HAMi's debugging guide, extended to every code HAMi defines
 * and to our own node-level, bind and real-time texts. Keyed by the exact code or text; a device kind whose
 * checks mean something else by a code (AWS Neuron, docs/devices.md) has its own text for it.
 */
import { AWS_NEURON, ReasonCode } from '../engine/types';
import { ExtraReasonKey, type ReasonKey } from './reasons';

export interface Hint {
  readonly code: ReasonKey;
  readonly meaning: string;
  readonly cause: string;
  readonly fix: string;
}

type HintText = Omit<Hint, 'code'>;

// A Record over the full key union: the compiler refuses to build if a code has no hint.
const hintTexts: Readonly<Record<ReasonKey, HintText>> = {
  [ReasonCode.CardTypeMismatch]: {
    meaning: 'The card is not of a type this container may use.',
    cause:
      'The pod narrows card models with nvidia.com/use-gputype or nvidia.com/nouse-gputype, or nvidia.com/vgpu-mode names a mode the card does not run in.',
    fix: 'Compare those pod annotations with the card types shown by hami-diag node <node>; fix the spelling or remove the restriction, or target nodes with that model.',
  },
  [ReasonCode.CardUuidMismatch]: {
    meaning: 'The card is excluded by the pod’s card UUID selection.',
    cause: 'The pod lists cards with nvidia.com/use-gpuuuid (only these) or nvidia.com/nouse-gpuuuid (never these).',
    fix: 'Check the UUIDs in those annotations against hami-diag node <node>; drop the annotation unless the pod really needs specific cards.',
  },
  [ReasonCode.CardTimeSlicingExhausted]: {
    meaning: 'The card already hosts as many tasks as it may be shared by.',
    cause: 'Every share of the card (the device plugin’s deviceSplitCount) is booked by other pods.',
    fix: 'Wait for pods on the card to finish, raise deviceSplitCount in the device plugin configuration, or add capacity.',
  },
  [ReasonCode.CardComputeUnitsExhausted]: {
    meaning: 'All compute on the card is booked and the container asked for none.',
    cause: 'Other pods hold 100% of the card’s cores; a container without nvidia.com/gpucores is not placed on a fully booked card.',
    fix: 'Set nvidia.com/gpucores explicitly, or wait for the card’s compute to be released.',
  },
  [ReasonCode.CardInsufficientMemory]: {
    meaning: 'The card’s free GPU memory is less than the container requests.',
    cause: 'nvidia.com/gpumem (or gpumem-percentage) is larger than what remains on the card after the memory booked by other pods.',
    fix: 'Lower the memory request, wait for pods on the card to release memory, or use nodes with larger cards (hami-diag node <node> shows free memory per card).',
  },
  [ReasonCode.CardInsufficientCore]: {
    meaning: 'The card’s free compute share is less than the container requests.',
    cause: 'nvidia.com/gpucores plus the cores other pods booked on the card exceed 100%.',
    fix: 'Lower nvidia.com/gpucores, wait for pods on the card to finish, or add cards.',
  },
  [ReasonCode.CardNotHealth]: {
    meaning: 'The card is marked unhealthy.',
    cause: 'The device plugin reported the card unhealthy (driver or XID errors, card lost), or the node’s registration is stale.',
    fix: 'Check the card on the node (nvidia-smi, kernel log) and the device plugin logs; it is used again once reported healthy.',
  },
  [ReasonCode.CardCordoned]: {
    meaning: 'The card is cordoned: the scheduler must not place new work on it.',
    cause: 'The card’s UUID is listed in the node annotation hami.io/device-cordon.',
    fix: 'Remove the UUID from hami.io/device-cordon once the card is fit for use again.',
  },
  [ReasonCode.NumaNotFit]: {
    meaning: 'Not enough suitable cards on a single NUMA node.',
    cause: 'The pod sets nvidia.com/numa-bind, so all its cards must share one NUMA node, and no NUMA node has enough that fit.',
    fix: 'Request fewer cards, drop nvidia.com/numa-bind if locality is not required, or wait for cards on one NUMA node to free up.',
  },
  [ReasonCode.ExclusiveDeviceAllocateConflict]: {
    meaning: 'The container needs the card to itself, but the card is already in use.',
    cause: 'nvidia.com/gpucores: 100 (whole card) or the mutex GPU policy asks for exclusive use, and another pod already holds part of the card.',
    fix: 'Wait for the other pods on the card to finish, schedule onto another node, or request less than 100 cores so the card can be shared.',
  },
  [ReasonCode.CardNotFoundCustomFilterRule]: {
    meaning: 'A vendor-specific placement rule found no place on the card.',
    cause: 'The card’s custom filter (used by MIG-style partitioning) has no free layout for the request.',
    fix: 'Lower the request to a size the card’s partitions offer, or use cards in a non-partitioned mode.',
  },
  [ReasonCode.CardMigTopologyInfeasible]: {
    meaning: 'The MIG card has no free slice combination large enough.',
    cause: 'The card runs in MIG mode and every free placement of a profile with enough memory is taken or does not exist.',
    fix: 'Request a smaller memory size, wait for MIG instances to be released (hami-diag node <node> shows each profile’s free placements and who holds the others), or offer more profiles in the device plugin’s MIG allowlist.',
  },
  [ReasonCode.NodeInsufficientDevice]: {
    meaning: 'The container asks for more cards than the node has at all.',
    cause: 'nvidia.com/gpu is larger than the number of cards of the requested type on the node, whatever their usage.',
    fix: 'Lower nvidia.com/gpu, or run the pod on nodes with more cards (hami-diag node <node> lists them).',
  },
  [ReasonCode.AllocatedCardsInsufficientRequest]: {
    meaning: 'Some cards fit, but fewer than the container asks for.',
    cause: 'Only part of the requested nvidia.com/gpu cards have enough free memory, cores and slots at the same time.',
    fix: 'Request fewer cards or less per card, or wait until enough cards on one node are free.',
  },
  [ReasonCode.NodeUnfitPod]: {
    meaning: 'The node cannot host the pod: at least one container did not fit.',
    cause: 'Usually the per-container reasons explain it; when they do not, the node’s device registration is stale or does not match what the pod asks for.',
    fix: 'Read the container reasons; check the device plugin on the node and its registration with hami-diag node <node>.',
  },
  [ReasonCode.NodeFitPod]: {
    meaning: 'The node can host the pod; its score ranks it against the other fitting nodes.',
    cause: 'Every container found cards. With the binpack node policy the fullest node wins, with spread the emptiest.',
    fix: 'Nothing to fix. To prefer other nodes, change the node policy (hami.io/node-scheduler-policy).',
  },
  [ReasonCode.ResourceQuotaNotFit]: {
    meaning: 'Placing the pod would exceed its namespace’s GPU quota.',
    cause: 'A ResourceQuota sets limits.nvidia.com/gpumem or limits.nvidia.com/gpucores, and the pods already booked in the namespace leave too little.',
    fix: 'Inspect the quota (kubectl describe resourcequota -n <namespace>); raise it, free GPU pods in the namespace, or lower the request.',
  },
  [ReasonCode.CardRealtimeInsufficientMemory]: {
    meaning: 'Memory actually in use on the card, measured on the node, leaves too little for the request.',
    cause: 'Processes that the scheduler does not account for (pods outside HAMi, host processes) use GPU memory; the real-time check (strict mode) keeps a safety margin as well.',
    fix: 'Find the processes with nvidia-smi on the node; lower the request, switch HAMI_REALTIME_CHECK_MODE to warning, or set hami.io/enable-realtime-check: "false" on the pod.',
  },
  [ReasonCode.CardOvercommitted]: {
    meaning: 'The card is booked past its memory, cores or slots, so nothing more is placed on it until it is back within them.',
    cause:
      'A pod the scheduler did not place (scheduled by someone else, or before this scheduler ran) was adopted from its hami.io annotations, which claim what other pods already hold on the card (the AdoptedPastCapacity Warning on the pod and the Node names it); or the card registered again with less than its pods hold.',
    fix: 'Run hami-diag node <node>: it marks the card over-committed and lists its pods. Delete or reschedule the pod the scheduler did not place (or correct the device plugin’s registration). The card takes pods again once its bookings fit it.',
  },
  [ExtraReasonKey.NodeUnregistered]: {
    meaning: 'The scheduler has no usable GPU registration for the node.',
    cause: 'The device plugin is not running on the node or has not reported yet, hami.io/node-nvidia-register is missing or empty, allocatable nvidia.com/gpu is 0, or the relay has not forwarded the node.',
    fix: 'Check the device plugin pod on the node and the node’s hami.io/node-nvidia-register annotation; hami-diag node <node> shows what the scheduler holds.',
  },
  [ExtraReasonKey.NodeStateUnreadable]: {
    meaning: 'What the scheduler stores about the node cannot be decoded, so the node is left out until it is repaired.',
    cause: 'A stored booking or registration of the node does not match the expected format (written by an older version, or edited by hand); the operator log line NodeStateUnreadable carries the raw value.',
    fix: 'Usually repairs itself: the next update of the node or of the pod whose booking is unreadable rewrites it (the relay re-lists every few minutes). Other nodes keep scheduling meanwhile.',
  },
  [ExtraReasonKey.NodeBookingLimit]: {
    meaning: 'The node already holds as many booked pods as one node’s stored state may hold.',
    cause: 'Every counting booking of a node lives in one DynamoDB item; the bound keeps it far below the 400 KB item limit (docs/state.md, "Size").',
    fix: 'Wait for pods on the node to finish, or spread pods over more nodes; raise the bound only with the item size arithmetic in docs/state.md.',
  },
  [ExtraReasonKey.MigAllocationFailed]: {
    meaning: 'A MIG instance the container fitted could not be booked on its card.',
    cause: 'The card’s registered MIG profiles, with the instances this container already took there, hold more memory or compute than the card has left: the device plugin registered profiles that overlap in memory.',
    fix: 'Check the card’s migProfiles in hami.io/node-nvidia-register (hami-diag node <node> lists them) and the device plugin’s MIG configuration; other nodes keep scheduling.',
  },
  [ExtraReasonKey.DeviceTypeNotFound]: {
    meaning: 'The node has no cards of the type the container requests.',
    cause: 'The node registered no devices of that vendor/type, or the request names a type this scheduler does not manage.',
    fix: 'Run the pod on nodes with that device type, or correct the resource name in the pod.',
  },
  [ExtraReasonKey.NodeLockContention]: {
    meaning: 'Another pod is being bound to the node, so the node lock was not granted.',
    cause: 'A bind for another pod took the node lock (hami.io/mutex.lock) less than 5 minutes ago and its device allocation has not finished.',
    fix: 'Usually transient: kube-scheduler retries. If it persists, check the lock holder shown by hami-diag node <node> and the device plugin on that node; the lock expires after 5 minutes.',
  },
  [ExtraReasonKey.InvalidDeviceScoringWeights]: {
    meaning: 'The pod’s hami.io/device-scoring-weights annotation is invalid, so no node was tried.',
    cause: 'The annotation must have exactly slot, core and memory, each once, as non-negative integers, not all zero.',
    fix: 'Fix or remove the annotation, e.g. hami.io/device-scoring-weights: "slot=1,core=1,memory=1".',
  },
  [ExtraReasonKey.InvalidResourceRequest]: {
    meaning: 'A GPU quantity in the pod cannot be scheduled safely, so no node was tried and nothing was booked.',
    cause:
      'A managed resource (nvidia.com/gpu, gpumem, gpumem-percentage or gpucores) is negative, not a whole number, unreadable, or larger than HAMi’s int32 arithmetic holds (gpucores: 4294967196 would count as -100).',
    fix: 'Correct the value named in the summary: whole numbers, memory in MiB, cores as a percentage of one card (at most 100 counts).',
  },
  [ExtraReasonKey.FilterError]: {
    meaning: 'The pod was rejected before any node was evaluated.',
    cause: 'Something in the pod itself (its annotations or resource requests) cannot be scheduled as written.',
    fix: 'Read the filter summary for the exact text and correct the pod.',
  },
  [ExtraReasonKey.BindingFailed]: {
    meaning: 'A node was chosen, but binding the pod to it failed.',
    cause: 'The relay could not patch the pod or create its Binding (API server errors, missing RBAC), or the pod changed or was deleted meanwhile.',
    fix: 'Read the bind summary and the relay logs; kube-scheduler retries the pod.',
  },
};

/** The codes AWS Neuron's Fit reports, in its terms (docs/devices.md, "AWS Neuron"); the others read as for every kind. */
const neuronHintTexts: Readonly<Partial<Record<ReasonKey, HintText>>> = {
  [ReasonCode.CardTypeMismatch]: {
    meaning: 'The device is not an AWS Neuron device.',
    cause: 'A Neuron request met a device of another type; only devices registered from aws.amazon.com/neuron capacity serve it.',
    fix: 'Check the node’s devices with hami-diag node <node>; Neuron pods need trn/inf nodes with the AWS Neuron device plugin.',
  },
  [ReasonCode.CardUuidMismatch]: {
    meaning: 'The Neuron device is excluded by the pod’s device selection.',
    cause: 'The pod lists devices with aws.amazon.com/use-neuron-uuid (only these) or aws.amazon.com/nouse-neuron-uuid (never these), by ids such as <node>-AWSNeuron-<index>.',
    fix: 'Check the ids in those annotations against hami-diag node <node>; drop the annotation unless the pod needs specific devices.',
  },
  [ReasonCode.CardTimeSlicingExhausted]: {
    meaning: 'Every NeuronCore of the device is already given to a pod.',
    cause: 'A Neuron device takes at most one pod per core, and pods hold all of them.',
    fix: 'Wait for pods on the device to finish, or use another node; hami-diag node <node> shows the cores in use per device.',
  },
  [ReasonCode.ExclusiveDeviceAllocateConflict]: {
    meaning: 'The pod wants the Neuron device to itself, but another pod uses part of it.',
    cause: 'The mutex GPU scheduler policy (hami.io/gpu-scheduler-policy: mutex) asks for devices no other pod holds.',
    fix: 'Wait for the other pods on the device to finish, schedule onto another node, or drop the mutex policy.',
  },
  [ReasonCode.CardInsufficientCore]: {
    meaning: 'The device has too few free NeuronCores side by side for the request.',
    cause:
      'The Neuron runtime takes a contiguous range of cores: aws.amazon.com/neuroncore asks more cores than are free next to each other on the device, or aws.amazon.com/neuron (a whole device, and every device of a run) meets a device another pod uses part of.',
    fix: 'Ask fewer cores, wait for pods on the device to finish, or use another node; hami-diag node <node> shows which cores are in use.',
  },
  [ReasonCode.NumaNotFit]: {
    meaning: 'No group of entirely free Neuron devices that AWS’s placement rules accept (HAMi counts it once for the node).',
    cause:
      'Several devices must be free and contiguous by device index: on Inferentia (inf*) any run of free devices; on Trainium (trn*) only 1, 4, 8 or 16 devices, starting at a multiple of that count. A core request spanning devices counts the devices it spans. Each device’s own outcome in the evidence says why it is not free.',
    fix: 'Ask for 1, 4, 8 or 16 devices on Trainium (or cores that fill them), wait for a group to free up, or use a node where one is free.',
  },
  [ReasonCode.NodeInsufficientDevice]: {
    meaning: 'The request spans more Neuron devices than the node has at all.',
    cause: 'aws.amazon.com/neuron is larger than the node’s device count, or aws.amazon.com/neuroncore needs more devices than the node has at its cores per device.',
    fix: 'Ask for less, or run the pod on a larger instance type (hami-diag node <node> lists its devices).',
  },
  [ReasonCode.AllocatedCardsInsufficientRequest]: {
    meaning: 'Some Neuron devices are free, but fewer than the request spans.',
    cause: 'A request for several devices needs each of them entirely free, and the node has fewer free devices than that.',
    fix: 'Ask for fewer devices, or wait until enough devices on one node are free.',
  },
  [ExtraReasonKey.DeviceTypeNotFound]: {
    meaning: 'The node has no AWS Neuron devices.',
    cause: 'The node advertises no aws.amazon.com/neuron capacity (not a trn/inf node, or the AWS Neuron device plugin is not running there).',
    fix: 'Run the pod on trn/inf nodes with the AWS Neuron device plugin; hami-diag node <node> shows what the scheduler holds.',
  },
};

export const hints: readonly Hint[] = Object.entries(hintTexts).map(([code, text]) => ({ code: code as ReasonKey, ...text }));

const hintsByKey: ReadonlyMap<string, Hint> = new Map(hints.map((hint) => [hint.code, hint]));

const neuronHintsByKey: ReadonlyMap<string, Hint> = new Map(Object.entries(neuronHintTexts).map(([code, text]) => [code, { code: code as ReasonKey, ...text }]));

/** The hint for a code or text; for the request type of a device kind with its own words for it, those. */
export function hintFor(key: string, vendor?: string): Hint | undefined {
  return (vendor === AWS_NEURON ? neuronHintsByKey.get(key) : undefined) ?? hintsByKey.get(key);
}
