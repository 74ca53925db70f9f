/** The words of one device kind (./words.ts). */
import type { ContainerRequest } from '../types';

export interface KindWords {
  /** The kind's vendor word (`DeviceKind.vendor`). */
  readonly vendor: string;
  /** One device, as its users say it: `NVIDIA card`, `Neuron device`. */
  readonly noun: string;
  /** One container's request: `asks 2 card(s) × 4000 MiB, 30% cores`, `asks 3 NeuronCore(s)`. */
  describeRequest(request: ContainerRequest): string;
  /** Whether pods pick its devices by type and mode annotations, so a type mismatch has the pod's selection as its other side. */
  readonly selectsByType: boolean;
}
