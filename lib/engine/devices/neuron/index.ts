/**
 * AWS Neuron (Trainium, Inferentia) devices as HAMi places them for the stock AWS Neuron device plugin
 * (docs/devices.md, "AWS Neuron"): registered from the Node's capacity, requested with `aws.amazon.com/neuron`
 * (whole devices) or `aws.amazon.com/neuroncore` (cores), fitted by HAMi's checks and AWS's contiguity rules, written
 * as AWS's neuron-scheduler annotations. No node lock; bookings take cores by index, so they are written under the
 * node's version.
 */
import type { FitRun } from '../../fit';
import { type DeviceInfo, type NodeState, type PodDevices } from '../../types';
import { AWS_NEURON, NeuronSchedulerOwned } from './names';
import type { DeviceKind } from '../kind';
import { NeuronPodAnnotation, neuronPodAnnotations } from './annotations';
import { neuronFit } from './fit';
import { registerNeuron } from './registration';
import { neuronQuantities, neuronRequest } from './requests';
import { neuronWords } from './words';
import { neuronHints } from './hints';

const AWS_NEURON_LOWER = AWS_NEURON.toLowerCase();

export const neuron: DeviceKind = {
  vendor: AWS_NEURON,
  words: neuronWords,
  hints: neuronHints,
  register: registerNeuron,
  // HAMi's getNodeResources: the devices whose type holds the request's, ignoring case (Fit then checks it with case).
  fitSees: (device: DeviceInfo) => device.type.toLowerCase().includes(AWS_NEURON_LOWER),
  request: neuronRequest,
  quantities: neuronQuantities,
  // Fit counts the devices a request spans on the node it tries (cores by that node's geometry): NodeInsufficientDevice.
  fit: (run: FitRun, cards: Int32Array) => neuronFit(run, cards),
  locksNode: false,
  positional: () => true,
  coreMask: true,
  allocatedAnnotation: NeuronPodAnnotation.DevicesAllocated,
  ownedPodAnnotations: NeuronSchedulerOwned,
  podAnnotations: (devices: PodDevices, node: NodeState, context) => neuronPodAnnotations(devices, node, context),
};
