/**
 * NVIDIA GPUs shared by HAMi-core (docs/hami-parity.md): registered by HAMi's device plugin in
 * `hami.io/node-nvidia-register`, requested with `nvidia.com/gpu`, `nvidia.com/gpumem`, `nvidia.com/gpumem-percentage`
 * and `nvidia.com/gpucores`, fitted card by card with HAMi's checks.
 */
import { fitContainer, type FitRun } from '../../fit';
import { containerRequest } from '../../requests';
import { NVIDIA, type DeviceInfo } from '../../types';
import type { DeviceKind } from '../kind';

export const nvidia: DeviceKind = {
  vendor: NVIDIA,
  fitSees: (device: DeviceInfo) => device.type.toLowerCase().includes('nvidia'),
  request: containerRequest,
  countsDevices: () => true,
  fit: (run: FitRun, cards: Int32Array) => fitContainer(run, cards),
  locksNode: true,
};
