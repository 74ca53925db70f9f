/**
 * What each failure means, why it usually happens and what to do, for every reason the scheduler can
 * report. Based on the failure table of HAMi's debugging guide, extended to every code HAMi defines
 * and to our own node-level, bind and real-time texts. Keyed by the exact code or text; a device kind whose
 * checks mean something else by a code (AWS Neuron, docs/devices.md) has its own text for it.
 */
import { DEFAULT_KIND, deviceKind, DEVICE_KINDS } from '../engine/devices';
import { ReasonCode } from '../engine/types';
import { ExtraReasonKey, type ReasonKey } from './reasons';

export interface Hint {
  readonly code: ReasonKey;
  readonly meaning: string;
  readonly cause: string;
  readonly fix: string;
}

type HintText = Omit<Hint, 'code'>;

/**
 * The kind-independent hints; a device kind has its own for the codes its rules give (`DeviceKind.hints`: NVIDIA's
 * resources and annotations, AWS Neuron's terms), and test/unit/diagnostics/reasons.test.ts holds every key to a hint.
 */
const commonHintTexts: Readonly<Partial<Record<ReasonKey, HintText>>> = {
  [ReasonCode.CardTimeSlicingExhausted]: {
    meaning: 'The card already hosts as many tasks as it may be shared by.',
    cause: 'Every share of the card (the device plugin’s deviceSplitCount) is booked by other pods.',
    fix: 'Wait for pods on the card to finish, raise deviceSplitCount in the device plugin configuration, or add capacity.',
  },
  [ReasonCode.CardCordoned]: {
    meaning: 'The card is cordoned: the scheduler must not place new work on it.',
    cause: 'The card’s UUID is listed in the node annotation hami.io/device-cordon.',
    fix: 'Remove the UUID from hami.io/device-cordon once the card is fit for use again.',
  },
  [ReasonCode.CardNotFoundCustomFilterRule]: {
    meaning: 'A vendor-specific placement rule found no place on the card.',
    cause: 'The card’s custom filter (used by MIG-style partitioning) has no free layout for the request.',
    fix: 'Lower the request to a size the card’s partitions offer, or use cards in a non-partitioned mode.',
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
  [ReasonCode.CardOvercommitted]: {
    meaning: 'The card is booked past its memory, cores or slots, so nothing more is placed on it until it is back within them.',
    cause:
      'A pod the scheduler did not place (scheduled by someone else, or before this scheduler ran) was adopted from its hami.io annotations, which claim what other pods already hold on the card (the AdoptedPastCapacity Warning on the pod and the Node names it); or the card registered again with less than its pods hold.',
    fix: 'Run hami-diag node <node>: it marks the card over-committed and lists its pods. Delete or reschedule the pod the scheduler did not place (or correct the device plugin’s registration). The card takes pods again once its bookings fit it.',
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


const asHints = (texts: Readonly<Partial<Record<string, HintText>>>): ReadonlyMap<string, Hint> =>
  new Map(Object.entries(texts).map(([code, text]) => [code, { code: code as ReasonKey, ...text! }]));

const commonByKey = asHints(commonHintTexts);
const byKind = new Map(DEVICE_KINDS.map((kind) => [kind, asHints(kind.hints ?? {})]));

/** Every hint, as a pod of the default kind reads them. */
export const hints: readonly Hint[] = [...commonByKey.values(), ...byKind.get(DEFAULT_KIND)!.values()];

/**
 * The hint for a code or text: for the request type of a device kind with its own words for it, those; else the
 * default kind's (whose codes the others share), else the kind-independent one.
 */
export function hintFor(key: string, vendor?: string): Hint | undefined {
  const kind = vendor === undefined ? undefined : deviceKind(vendor);
  return (kind === undefined ? undefined : byKind.get(kind)?.get(key)) ?? byKind.get(DEFAULT_KIND)!.get(key) ?? commonByKey.get(key);
}
