/**
 * A kind of device the scheduler places (HAMi's `Devices` interface, docs/hami-parity.md §4 and docs/devices.md):
 * what it is called in requests and annotations, which registered devices are its own, how one container's request
 * reads, how one container is fitted on one node, and whether binding takes HAMi's node lock. Each kind is one
 * module under lib/engine/devices; nothing outside it knows the kind's rules.
 */
import type { FitRun } from '../fit';
import type { PreparedNode } from '../prepared';
import type { ContainerLike, ContainerRequest, DeviceInfo, EngineConfig } from '../types';

export interface DeviceKind {
  /** HAMi's `CommonWord`: the request type and the vendor of its devices (`NVIDIA`, `AWSNeuron`). */
  readonly vendor: string;
  /** Whether Fit of this kind sees a device of the kind (NVIDIA's Fit sees only types containing "nvidia"). */
  fitSees(device: DeviceInfo): boolean;
  /** One container's request of this kind; undefined when it asks for none. */
  request(container: ContainerLike, config: EngineConfig): ContainerRequest | undefined;
  /**
   * Whether asking for more devices than the node has of this kind fails the container at once with
   * `NodeInsufficientDevice` (HAMi's pre-check; not for requests that several instances of one card may serve).
   */
  countsDevices(node: PreparedNode, request: ContainerRequest, annotations: Readonly<Record<string, string>>): boolean;
  /** HAMi's Fit for the current container on `cards` (positions the kind's Fit sees): undefined when it fits, else the reason. */
  fit(run: FitRun, cards: Int32Array): string | undefined;
  /** Whether `/bind` takes HAMi's node lock for pods whose regular containers use this kind. */
  readonly locksNode: boolean;
}
