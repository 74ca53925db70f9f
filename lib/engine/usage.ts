/**
 * Usage accounting (docs/hami-parity.md §7.2, 7.3): what a booked pod holds on each card.
 */
import { compareCodeUnits } from './messages';
import type { ContainerDevice, DeviceUsage, PodDevices } from './types';

/** A collapsed per-card booking; `slots` is how many vGPU slots the pod holds on the card. */
export interface CollapsedDevice extends ContainerDevice {
  readonly slots: number;
}

/**
 * HAMi's `CollapseInitContainerUsage`: per (type, UUID), init containers count their peak
 * memory/cores and one slot (they run one after another); app containers sum memory/cores and take
 * one slot per occurrence; the booking is the larger of the two per field, at least one slot.
 * With `initDone` (every init container exited 0) only app containers count.
 * Result sorted by type, then UUID. Types whose cores are a mask of core indexes (`coreMasks`, from
 * `DeviceKind.coreMask`: AWS Neuron) book the OR of the masks instead of the larger of two sums: an init container
 * and an app container on different cores of one device hold both (docs/devices.md, "AWS Neuron").
 */
export function collapsePodUsage(devices: PodDevices, initCount: number, initDone = false, coreMasks: (type: string) => boolean = noCoreMasks): CollapsedDevice[] {
  interface Tally {
    readonly type: string;
    readonly uuid: string;
    idx: number;
    initMem: number;
    initCores: number;
    initSlots: number;
    appMem: number;
    appCores: number;
    appSlots: number;
  }
  const tallies = new Map<string, Tally>();
  devices.forEach((container, position) => {
    const isInit = position < initCount;
    if (isInit && initDone) return;
    for (const device of container) {
      const key = `${device.type}\u0000${device.uuid}`;
      let tally = tallies.get(key);
      if (tally === undefined) {
        tally = { type: device.type, uuid: device.uuid, idx: device.idx, initMem: 0, initCores: 0, initSlots: 0, appMem: 0, appCores: 0, appSlots: 0 };
        tallies.set(key, tally);
      }
      const mask = coreMasks(device.type);
      if (isInit) {
        tally.initMem = Math.max(tally.initMem, device.usedmem);
        tally.initCores = mask ? tally.initCores | device.usedcores : Math.max(tally.initCores, device.usedcores);
        tally.initSlots = 1;
      } else {
        tally.appMem += device.usedmem;
        tally.appCores = mask ? tally.appCores | device.usedcores : tally.appCores + device.usedcores;
        tally.appSlots += 1;
      }
    }
  });
  return [...tallies.values()]
    .sort((a, b) => compareCodeUnits(a.type, b.type) || compareCodeUnits(a.uuid, b.uuid))
    .map((t) => ({
      idx: t.idx,
      uuid: t.uuid,
      type: t.type,
      usedmem: Math.max(t.initMem, t.appMem),
      usedcores: coreMasks(t.type) ? t.initCores | t.appCores : Math.max(t.initCores, t.appCores),
      slots: Math.max(t.initSlots, t.appSlots, 1),
    }));
}

function noCoreMasks(): boolean {
  return false;
}

/**
 * Adds one pod's collapsed booking to a node's usage (docs/hami-parity.md §7.2): `used += max(slots, 1)`,
 * `usedmem += usedmem`, `usedcores += usedcores`. Cards without an entry get one; the engine
 * ignores entries for UUIDs the node did not register.
 */
export function addPodUsage(usage: Record<string, DeviceUsage>, collapsed: readonly (ContainerDevice & { readonly slots?: number })[]): void {
  for (const device of collapsed) {
    const entry = usage[device.uuid] ?? (usage[device.uuid] = { used: 0, usedmem: 0, usedcores: 0 });
    entry.used += Math.max(device.slots ?? 1, 1);
    entry.usedmem += device.usedmem;
    entry.usedcores += device.usedcores;
  }
}
