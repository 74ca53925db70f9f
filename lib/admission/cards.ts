/**
 * What the registered NVIDIA cards can hold at most, from the Node objects the relay's informer sees, read with the
 * engine's own registration rules (`parseNodeRegistration`). The webhook warns about NVIDIA requests beyond it:
 * such a pod can never be scheduled, however the cluster's usage changes, until bigger cards register. Devices of
 * other kinds (AWS Neuron, docs/devices.md) are not cards an NVIDIA request can use, so they are not counted.
 */
import { parseNodeRegistration } from '../engine/registration';
import { DEFAULT_KIND, vendorOf } from '../engine/devices';
import type { EngineConfig, NodeLike } from '../engine/types';

export interface CardCapacity {
  /** Registered nodes and their cards. */
  readonly nodes: number;
  readonly cards: number;
  /** Largest `devmem` of any card, MiB. */
  readonly largestMemoryMiB: number;
  /** Most cards on one node (HAMi's NodeInsufficientDevice bound). */
  readonly mostCardsOnANode: number;
  /** A MIG card serves several instances of one container, so the per-node card count does not bound it. */
  readonly hasMig: boolean;
}

export function cardCapacity(nodes: readonly NodeLike[], config: EngineConfig): CardCapacity {
  let registered = 0;
  let cards = 0;
  let largestMemoryMiB = 0;
  let mostCardsOnANode = 0;
  let hasMig = false;
  for (const node of nodes) {
    const registration = parseNodeRegistration(node, config);
    const devices = registration.registered ? registration.devices.filter((device) => vendorOf(device) === DEFAULT_KIND.vendor) : [];
    if (devices.length === 0) continue;
    registered++;
    cards += devices.length;
    mostCardsOnANode = Math.max(mostCardsOnANode, devices.length);
    for (const device of devices) {
      largestMemoryMiB = Math.max(largestMemoryMiB, device.devmem);
      if (device.mode === 'mig') hasMig = true;
    }
  }
  return { nodes: registered, cards, largestMemoryMiB, mostCardsOnANode, hasMig };
}
