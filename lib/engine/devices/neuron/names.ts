/**
 * The pod annotations of AWS Neuron placements (docs/devices.md, "AWS Neuron"), in a module of their own (no imports)
 * so that the list of scheduler-owned annotations can name them without an import cycle.
 */
/** HAMi's `AWSNeuronCommonWord`: the type and vendor of AWS Neuron devices (docs/devices.md, "AWS Neuron"). */
export const AWS_NEURON = 'AWSNeuron';

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
 * The ones only the scheduler writes: the admission webhook and the chart's policy refuse them from anyone else.
 * `NEURON_ALLOCATED` is not among them: the AWS device plugin sets it to "true" once it has allocated.
 */
export const NeuronSchedulerOwned: readonly string[] = [
  NeuronPodAnnotation.DevicesAllocated,
  NeuronPodAnnotation.Ids,
  NeuronPodAnnotation.AllocTime,
  NeuronPodAnnotation.ResourceType,
  NeuronPodAnnotation.PredicateNode,
];
