/**
 * What the chosen Neuron devices look like on the pod (docs/devices.md, "AWS Neuron"): HAMi's device encoding, and the
 * annotations of AWS's neuron-scheduler protocol that the stock AWS Neuron device plugin allocates from.
 */
import { encodePodDevices } from '../../podAnnotations';
import type { ContainerRequest, EngineConfig, NodeState, PodDevices } from '../../types';
import { coreCount, coreIndexes } from './masks';
import { asksWholeDevices } from './requests';

export const NeuronPodAnnotation = {
  /** HAMi's `UUID,AWSNeuron,0,<core mask>:` per device, `;` per container (no `-to-allocate` twin). */
  DevicesAllocated: 'hami.io/aws-neuron-devices-allocated',
  /** Device indexes for device requests, core indexes (`index × cores per device + core`) for core requests. */
  Ids: 'AWS_NEURON_IDS',
  /** When the scheduler decided, in Unix nanoseconds. */
  AllocTime: 'NEURON_ALLOC_TIME',
  /** `"false"` as written; the AWS device plugin sets `"true"` once it has allocated. */
  Allocated: 'NEURON_ALLOCATED',
  /** The core resource name, written for core requests only. */
  ResourceType: 'NEURON_RESOURCE_TYPE',
  /** The chosen node. */
  PredicateNode: 'aws.amazon.com/predicate-node',
} as const;

/**
 * The annotations for one pod's Neuron devices, as HAMi's `PatchAnnotations` writes them: one `AWS_NEURON_IDS` for
 * the whole pod, the ids of every container with devices in container order (init containers first). A container is
 * a device request when its request says so, whether the quantity sits in limits or requests (HAMi v2.10 reads only
 * limits, and writes a request-only `aws.amazon.com/neuron` container's devices as core indexes).
 */
export function neuronPodAnnotations(
  devices: PodDevices,
  node: NodeState,
  context: { readonly nowMs: number; readonly nodeName: string; readonly requests: readonly (ContainerRequest | undefined)[]; readonly config: EngineConfig },
): Record<string, string> {
  const annotations: Record<string, string> = { [NeuronPodAnnotation.DevicesAllocated]: encodePodDevices(devices) };
  const registered = node.registration.registered ? node.registration.devices : [];
  const ids: number[] = [];
  let coresAsked = false;
  devices.forEach((container, c) => {
    const request = context.requests[c];
    const whole = request === undefined || asksWholeDevices(request);
    for (const device of container) {
      if (whole) {
        ids.push(device.idx);
        continue;
      }
      coresAsked = true;
      // Core indexes count across the node's devices, by this node's cores per device.
      const perDevice = coreCount(registered.find((d) => d.id === device.uuid)?.devcore ?? 0);
      for (const core of coreIndexes(device.usedcores)) ids.push(device.idx * perDevice + core);
    }
  });
  if (ids.length === 0) return annotations;
  annotations[NeuronPodAnnotation.Ids] = ids.join(',');
  annotations[NeuronPodAnnotation.AllocTime] = (BigInt(Math.trunc(context.nowMs)) * 1_000_000n).toString();
  annotations[NeuronPodAnnotation.Allocated] = 'false';
  if (coresAsked) annotations[NeuronPodAnnotation.ResourceType] = context.config.neuronCoreResourceName;
  annotations[NeuronPodAnnotation.PredicateNode] = context.nodeName;
  return annotations;
}
