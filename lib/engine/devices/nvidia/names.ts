/** NVIDIA's names: its request type, and the pod annotations a pod steers its cards by. */
import type { SelectorAnnotations } from '../../podAnnotations';

/** The request type HAMi writes into pod annotations and compares in Fit (constant `NvidiaGPUDevice`). */
export const NVIDIA = 'NVIDIA';

/** The pod annotations a pod steers its NVIDIA cards by (HAMi's nvidia device; docs/hami-parity.md §3.4). */
export const NvidiaSelectorAnnotations: SelectorAnnotations = {
  useTypes: 'nvidia.com/use-gputype',
  noUseTypes: 'nvidia.com/nouse-gputype',
  useUuids: 'nvidia.com/use-gpuuuid',
  noUseUuids: 'nvidia.com/nouse-gpuuuid',
  vgpuMode: 'nvidia.com/vgpu-mode',
  numaBind: 'nvidia.com/numa-bind',
};
