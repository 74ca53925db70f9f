/** Every device kind the scheduler places, and how a registered device finds its kind. */
import { NO_SELECTORS, parseDeviceSelectors, SchedulerOwnedCommonPodAnnotations, type DeviceSelectors } from '../podAnnotations';
import type { DeviceInfo, EngineConfig } from '../types';
import type { DeviceKind } from './kind';
import { neuron } from './neuron';
import { nvidia } from './nvidia';

export type { AdmissionDefaults, DeviceKind } from './kind';
// Core masks (`DeviceKind.coreMask`) as counts and indexes, for views of devices that book cores by index.
export { coreCount, coreIndexes, splitCores } from './neuron/masks';
// A MIG card's profiles and instances, for the devices view.
export { isMig, migPartsView } from './nvidia/mig';

export const DEVICE_KINDS: readonly DeviceKind[] = [nvidia, neuron];

/** The kind of a device registered without a vendor word (what HAMi's register annotation holds): the first, NVIDIA. */
export const DEFAULT_KIND: DeviceKind = DEVICE_KINDS[0]!;

/** A registered device's vendor word, the default kind's when it has none. */
export function vendorOf(device: Pick<DeviceInfo, 'vendor'>): string {
  return device.vendor ?? DEFAULT_KIND.vendor;
}

/**
 * Pod annotations only the scheduler writes (filter and bind) and the device plugins trust. A pod created carrying
 * one holds a booking nobody made (a forged allocation); the admission webhook denies it.
 */
export const SchedulerOwnedPodAnnotations: readonly string[] = [...SchedulerOwnedCommonPodAnnotations, ...DEVICE_KINDS.flatMap((kind) => kind.ownedPodAnnotations)];

const byVendor = new Map<string, DeviceKind>(DEVICE_KINDS.map((kind) => [kind.vendor, kind]));
const indexes = new Map<DeviceKind, number>(DEVICE_KINDS.map((kind, i) => [kind, i]));

/** The kind's position in `DEVICE_KINDS` (per-kind arrays are indexed by it). */
export function kindIndex(kind: DeviceKind): number {
  return indexes.get(kind)!;
}

/** The kind with this vendor word (a request's `type`). */
export function deviceKind(vendor: string): DeviceKind | undefined {
  return byVendor.get(vendor);
}

/**
 * The devices a pod holds by its annotations: the first kind whose allocated annotation it carries (a pod uses one
 * kind), in HAMi's encoding, with the parts of cards the kind records (MIG placements) when there are.
 */
export function allocatedDevicesOf(
  annotations: Readonly<Record<string, string>>,
): { readonly annotation: string; readonly text: string; readonly parts?: string } | undefined {
  for (const kind of DEVICE_KINDS) {
    const text = annotations[kind.allocatedAnnotation];
    if (text === undefined) continue;
    const parts = kind.partsAnnotation === undefined ? undefined : annotations[kind.partsAnnotation];
    return parts === undefined ? { annotation: kind.allocatedAnnotation, text } : { annotation: kind.allocatedAnnotation, text, parts };
  }
  return undefined;
}

/** A registered device's kind: its `vendor`, NVIDIA when absent (what HAMi's register annotation holds). */
export function deviceKindOf(device: DeviceInfo): DeviceKind | undefined {
  return byVendor.get(vendorOf(device));
}

/** Whether devices of this request type book cores as a mask of core indexes (`DeviceKind.coreMask`). */
export function coresAreMasks(type: string): boolean {
  return byVendor.get(type)?.coreMask === true;
}

/**
 * The steering constraints a pod sets (docs/hami-parity.md §3.4), read from the annotations of every kind that has
 * them and joined: a pod asks for one kind, whose Fit applies them.
 */
export function podDeviceSelectors(annotations: Readonly<Record<string, string>>): DeviceSelectors {
  let joined = NO_SELECTORS;
  for (const kind of DEVICE_KINDS) {
    if (kind.selectorAnnotations === undefined) continue;
    const own = parseDeviceSelectors(annotations, kind.selectorAnnotations);
    const vgpuMode = joined.vgpuMode ?? own.vgpuMode;
    joined = {
      useTypes: [...joined.useTypes, ...own.useTypes],
      noUseTypes: [...joined.noUseTypes, ...own.noUseTypes],
      useUuids: new Set([...joined.useUuids, ...own.useUuids]),
      noUseUuids: new Set([...joined.noUseUuids, ...own.noUseUuids]),
      ...(vgpuMode !== undefined ? { vgpuMode } : {}),
      numaBind: joined.numaBind || own.numaBind,
    };
  }
  return joined;
}

/** Every quantity the kinds' requests read, kind by kind (`DeviceKind.quantities`): the resources the scheduler manages. */
export function managedQuantityNames(config: EngineConfig): string[] {
  return DEVICE_KINDS.flatMap((kind) => kind.quantities(config).map((quantity) => quantity.name));
}
