/**
 * NeuronCore masks (docs/devices.md, "AWS Neuron"): a device's cores are bits 0…k-1 of an int32, k the node's cores
 * per device; a booking holds the bits of the cores it was given. Pure helpers, shared by Fit, the pod annotations
 * and the diagnostics that show cores as indexes.
 */

/** The most cores per device a mask holds (bit 31 is an int32's sign). */
export const MAX_CORES_PER_DEVICE = 31;

/** The mask of a device with `cores` cores: bits 0…cores-1. */
export function fullMask(cores: number): number {
  return cores >= MAX_CORES_PER_DEVICE ? 0x7fffffff : (1 << cores) - 1;
}

/** How many cores a mask holds (HAMi's `countMaskAvailable`, for non-negative masks). */
export function coreCount(mask: number): number {
  let bits = mask >>> 0;
  let count = 0;
  while (bits !== 0) {
    bits &= bits - 1;
    count++;
  }
  return count;
}

/** The core indexes of a mask, ascending (bit i is core i of the device). */
export function coreIndexes(mask: number): number[] {
  const indexes: number[] = [];
  for (let bit = 0; bit < MAX_CORES_PER_DEVICE; bit++) if ((mask & (1 << bit)) !== 0) indexes.push(bit);
  return indexes;
}

/**
 * The cores booked on a device, as a mask within its own: the ledger adds the masks of bookings, which Fit keeps
 * disjoint, so their sum is their OR. A sum that is not a mask within the device's (overlapping bookings adopted from
 * elsewhere, a hand-edited annotation) cannot be read back into cores: every core counts as used (fail closed).
 */
export function usedMask(usedCores: number, deviceMask: number): number {
  if (usedCores < 0 || (usedCores & ~deviceMask) !== 0 || usedCores > deviceMask) return deviceMask;
  return usedCores;
}

/** A device's cores as indexes: those booked (`usedCores`, read as `usedMask` does) and those free. */
export function splitCores(deviceMask: number, usedCores: number): { used: number[]; free: number[] } {
  const used = usedMask(usedCores, deviceMask);
  return { used: coreIndexes(used), free: coreIndexes(deviceMask & ~used) };
}

/**
 * The lowest run of `count` consecutive free cores (the Neuron runtime takes a contiguous core range), as a mask;
 * undefined when there is none.
 */
export function contiguousCores(deviceMask: number, used: number, count: number): number | undefined {
  if (count <= 0 || count > MAX_CORES_PER_DEVICE) return undefined;
  const run = fullMask(count);
  for (let start = 0; start + count <= MAX_CORES_PER_DEVICE; start++) {
    const mask = run << start;
    if ((mask & deviceMask) === mask && (mask & used) === 0) return mask;
    if (mask > deviceMask) break;
  }
  return undefined;
}
