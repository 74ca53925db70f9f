/**
 * The codes AWS Neuron's Fit reports, in its terms (docs/devices.md, "AWS Neuron"); the others read as for the default
 * kind (lib/diagnostics/hints.ts).
 */
import { NodeFailure, ReasonCode } from '../../types';
import type { KindHint } from '../kind';

export const neuronHints: Readonly<Record<string, KindHint>> = {
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
  [NodeFailure.DeviceTypeNotFound]: {
    meaning: 'The node has no AWS Neuron devices.',
    cause: 'The node advertises no aws.amazon.com/neuron capacity (not a trn/inf node, or the AWS Neuron device plugin is not running there).',
    fix: 'Run the pod on trn/inf nodes with the AWS Neuron device plugin; hami-diag node <node> shows what the scheduler holds.',
  },
};
