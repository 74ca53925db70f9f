/**
 * What the chosen Neuron devices look like on the pod (docs/devices.md, "AWS Neuron"): HAMi's device encoding, and the
 * annotations of AWS's neuron-scheduler protocol that the stock AWS Neuron device plugin allocates from.
 */
import { encodePodDevices } from '../../podAnnotations';
import type { ContainerRequest, EngineConfig, NodeState, PodDevices } from '../../types';
import { coreCount, coreIndexes } from './masks';
import { NeuronPodAnnotation } from './names';
import { asksWholeDevices } from './requests';

export { NeuronPodAnnotation } from './names';


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
