/**
 * AWS Neuron devices as the stock AWS Neuron device plugin advertises them (docs/devices.md, "AWS Neuron"): no
 * annotation, only the Node's extended resources. `aws.amazon.com/neuron` counts the devices and
 * `aws.amazon.com/neuroncore` the NeuronCores (names configurable); the cores per device are computed for this node,
 * from this node's figures (HAMi v2.10 keeps the figure of the first node it registers for every node: HAMi #2762).
 * Never throws: figures that cannot describe devices give the reason in words.
 */
import { quantityAsInt64 } from '../../quantity';
import { type DeviceInfo, type EngineConfig, type NodeLike } from '../../types';
import { AWS_NEURON } from './names';
import type { KindRegistration } from '../kind';
import { fullMask, MAX_CORES_PER_DEVICE } from './masks';

/** The node label whose value decides AWS's contiguity rules (trn: aligned groups; inf: any run). */
export const INSTANCE_TYPE_LABEL = 'node.kubernetes.io/instance-type';
/** More devices than any Neuron instance has: a figure beyond it is refused rather than expanded into devices. */
export const MAX_NEURON_DEVICES = 256;

/** `<node>-AWSNeuron-<i>`, HAMi's device id. */
export function neuronDeviceId(node: string, index: number): string {
  return `${node}-${AWS_NEURON}-${index}`;
}

/**
 * The node's Neuron devices, undefined when it advertises none. Capacity is read first, allocatable when the node
 * reports no capacity for the resource (HAMi reads capacity).
 */
export function registerNeuron(node: NodeLike, config: EngineConfig): KindRegistration | undefined {
  const read = (name: string) => node.status?.capacity?.[name] ?? node.status?.allocatable?.[name];
  const countName = config.neuronResourceName;
  const coreName = config.neuronCoreResourceName;
  const countValue = read(countName);
  if (countValue === undefined) return undefined;
  const count = quantityAsInt64(countValue);
  if (count === undefined || count < 0) return { reason: `capacity ${countName} ${JSON.stringify(String(countValue))} is not a number of devices` };
  if (count === 0) return undefined;
  if (count > MAX_NEURON_DEVICES) return { reason: `capacity ${countName} ${count} is more devices than a Neuron instance has (at most ${MAX_NEURON_DEVICES})` };
  const coresValue = read(coreName);
  if (coresValue === undefined) return { reason: `capacity ${coreName} is missing: the cores per ${countName} device are unknown` };
  const cores = quantityAsInt64(coresValue);
  if (cores === undefined || cores <= 0) return { reason: `capacity ${coreName} ${JSON.stringify(String(coresValue))} is not a number of cores` };
  if (cores % count !== 0) return { reason: `capacity ${coreName} ${cores} is not divisible by capacity ${countName} ${count}` };
  const perDevice = cores / count;
  if (perDevice > MAX_CORES_PER_DEVICE) return { reason: `${perDevice} cores per ${countName} device is more than a core mask holds (${MAX_CORES_PER_DEVICE})` };
  const name = node.metadata.name;
  const nodeType = node.metadata.labels?.[INSTANCE_TYPE_LABEL] ?? '';
  const devices: DeviceInfo[] = Array.from({ length: count }, (_, index) => ({
    id: neuronDeviceId(name, index),
    index,
    // HAMi's Count: at most one tenant per core.
    count: perDevice,
    devmem: 0,
    devcore: fullMask(perDevice),
    type: AWS_NEURON,
    numa: 0,
    mode: '',
    health: true,
    vendor: AWS_NEURON,
    nodeType,
  }));
  return { devices };
}
