/**
 * NVIDIA GPUs shared by HAMi-core (docs/hami-parity.md): registered by HAMi's device plugin in
 * `hami.io/node-nvidia-register`, requested with `nvidia.com/gpu`, `nvidia.com/gpumem`, `nvidia.com/gpumem-percentage`
 * and `nvidia.com/gpucores`, fitted card by card with HAMi's checks.
 */
import { fitContainer, type FitRun } from '../../fit';
import { encodePodDevices, PodAnnotation } from '../../podAnnotations';
import { registerNvidia } from './registration';
import { nvidiaQuantities, nvidiaRequest } from './requests';
import { NVIDIA, type DeviceInfo, type PodDevices } from '../../types';
import type { DeviceKind } from '../kind';

export const nvidia: DeviceKind = {
  vendor: NVIDIA,
  register: registerNvidia,
  fitSees: (device: DeviceInfo) => device.type.toLowerCase().includes('nvidia'),
  request: nvidiaRequest,
  quantities: nvidiaQuantities,
  countsDevices: () => true,
  fit: (run: FitRun, cards: Int32Array) => fitContainer(run, cards),
  locksNode: true,
  positional: () => false,
  allocatedAnnotation: PodAnnotation.DevicesAllocated,
  // What HAMi-core's device plugin reads: the same devices, to allocate and as allocated (docs/hami-parity.md §3.1).
  podAnnotations: (devices: PodDevices) => {
    const encoded = encodePodDevices(devices);
    return { [PodAnnotation.DevicesToAllocate]: encoded, [PodAnnotation.DevicesAllocated]: encoded };
  },
};
