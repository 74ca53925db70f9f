/**
 * AWS Neuron requests (docs/devices.md, "AWS Neuron"): `aws.amazon.com/neuron: N` asks for N whole devices,
 * `aws.amazon.com/neuroncore: c` for c NeuronCores, split by Fit per the geometry of the node it tries (HAMi after
 * v2.10; v2.10 splits by the first node's geometry before any node is seen). A container asking both is a device
 * request, as in HAMi. Zero asks for nothing; unreadable values are the quantity rules' (lib/engine/requests.ts).
 */
import { INT32_MAX, quantityAsInt64, toInt32 } from '../../quantity';
import { type ContainerLike, type ContainerRequest, type EngineConfig } from '../../types';
import { AWS_NEURON } from './names';

export function neuronQuantities(config: EngineConfig): { readonly name: string; readonly max: number | undefined }[] {
  return [
    { name: config.neuronResourceName, max: INT32_MAX },
    { name: config.neuronCoreResourceName, max: INT32_MAX },
  ];
}

/**
 * The request: `nums` devices and `coresreq` 0 for whole devices (HAMi's "0 cores = the whole device"), or `nums` 1
 * and `coresreq` c for cores (HAMi's `TotalCoresreq`; Fit works out how many devices they span on each node).
 */
export function neuronRequest(container: ContainerLike, config: EngineConfig): ContainerRequest | undefined {
  const read = (name: string): string | number | undefined => container.resources?.limits?.[name] ?? container.resources?.requests?.[name];
  const devices = read(config.neuronResourceName);
  if (devices !== undefined) {
    const count = toInt32(quantityAsInt64(devices) ?? 0);
    // Beyond int32 the quantity rules refuse the pod before any request is used.
    if (count <= 0) return undefined;
    return { nums: count, type: AWS_NEURON, memreq: 0, mempercentagereq: 0, coresreq: 0 };
  }
  const cores = toInt32(quantityAsInt64(read(config.neuronCoreResourceName)) ?? 0);
  if (cores <= 0) return undefined;
  return { nums: 1, type: AWS_NEURON, memreq: 0, mempercentagereq: 0, coresreq: cores };
}

/** Whether a request asks for whole devices (else for cores). */
export function asksWholeDevices(request: ContainerRequest): boolean {
  return request.coresreq === 0;
}
