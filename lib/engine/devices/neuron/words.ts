/** AWS Neuron devices in words (../words.ts): whole devices, or NeuronCores (docs/devices.md, "AWS Neuron"). */
import { AWS_NEURON } from './names';
import type { KindWords } from '../wordsOf';

export const neuronWords: KindWords = {
  vendor: AWS_NEURON,
  noun: 'Neuron device',
  describeRequest: (request) => (request.coresreq === 0 ? `asks ${request.nums} Neuron device(s)` : `asks ${request.coresreq} NeuronCore(s)`),
  selectsByType: false,
};
