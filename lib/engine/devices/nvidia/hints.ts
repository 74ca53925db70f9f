/**
 * What each failure means on an NVIDIA card, why it usually happens and what to do (lib/diagnostics/hints.ts gives them
 * with the kind-independent ones): HAMi's resources and annotations for NVIDIA, MIG, nvidia-smi.
 */
import { NodeFailure, ReasonCode } from '../../types';
import type { KindHint } from '../kind';

export const nvidiaHints: Readonly<Record<string, KindHint>> = {
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
  [NodeFailure.Unregistered]: {
    meaning: 'The scheduler has no usable GPU registration for the node.',
    cause: 'The device plugin is not running on the node or has not reported yet, hami.io/node-nvidia-register is missing or empty, allocatable nvidia.com/gpu is 0, or the relay has not forwarded the node.',
    fix: 'Check the device plugin pod on the node and the node’s hami.io/node-nvidia-register annotation; hami-diag node <node> shows what the scheduler holds.',
  },
  [NodeFailure.MigAllocationFailed]: {
    meaning: 'A MIG instance the container fitted could not be booked on its card.',
    cause: 'The card’s registered MIG profiles, with the instances this container already took there, hold more memory or compute than the card has left: the device plugin registered profiles that overlap in memory.',
    fix: 'Check the card’s migProfiles in hami.io/node-nvidia-register (hami-diag node <node> lists them) and the device plugin’s MIG configuration; other nodes keep scheduling.',
  },
  // ExtraReasonKey.InvalidResourceRequest (lib/diagnostics/reasons.ts): the pod's quantities, read as NVIDIA's.
  InvalidResourceRequest: {
    meaning: 'A GPU quantity in the pod cannot be scheduled safely, so no node was tried and nothing was booked.',
    cause:
      'A managed resource (nvidia.com/gpu, gpumem, gpumem-percentage or gpucores) is negative, not a whole number, unreadable, or larger than HAMi’s int32 arithmetic holds (gpucores: 4294967196 would count as -100).',
    fix: 'Correct the value named in the summary: whole numbers, memory in MiB, cores as a percentage of one card (at most 100 counts).',
  },
};
