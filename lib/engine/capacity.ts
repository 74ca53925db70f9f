/**
 * A card booked past what it has (docs/api.md §9, "over-committed"): more slots than its count, more memory than
 * its devmem, or, where cores are an amount, more cores than its devcore. Decisions never do that (Fit's checks and
 * the store's guards keep every booking within the card); a pod adopted from annotations someone else wrote can
 * (docs/state.md, "Adoption"), as can a card that registers again with less than its pods hold. The one rule for it:
 * Fit refuses such a card (`CardOvercommitted`), cluster events report the adoption that caused it, and the devices
 * view marks the card.
 */

/** What a card holds, in the numbers the rule compares (a `DeviceInfo` is one). */
export interface CardCapacity {
  readonly count: number;
  readonly devmem: number;
  readonly devcore: number;
}

/** The ways a card can be over-committed, as the devices view names them. */
export const CapacityDimension = { Slots: 'slots', Memory: 'memory', Cores: 'cores' } as const;
export type CapacityDimension = (typeof CapacityDimension)[keyof typeof CapacityDimension];

/**
 * Whether usage passes the card's capacity. `coreMask`: the kind books cores as a mask of core indexes (AWS Neuron),
 * which is no amount to compare; its slots (one per core) still are. Plain comparisons, for Fit's hot loop.
 */
export function isOvercommitted(card: CardCapacity, used: number, usedMem: number, usedCores: number, coreMask: boolean): boolean {
  return exceedsCapacity(card.count, card.devmem, card.devcore, used, usedMem, usedCores, coreMask);
}

/** `isOvercommitted` from the card's numbers (Fit reads them from the node's card facts, not the card's object). */
export function exceedsCapacity(count: number, devmem: number, devcore: number, used: number, usedMem: number, usedCores: number, coreMask: boolean): boolean {
  return used > count || usedMem > devmem || (!coreMask && usedCores > devcore);
}

/** The dimensions in which usage passes the card's capacity (empty when it does not): `isOvercommitted`, spelled out. */
export function overcommittedDimensions(card: CardCapacity, used: number, usedMem: number, usedCores: number, coreMask: boolean): CapacityDimension[] {
  const over: CapacityDimension[] = [];
  if (used > card.count) over.push(CapacityDimension.Slots);
  if (usedMem > card.devmem) over.push(CapacityDimension.Memory);
  if (!coreMask && usedCores > card.devcore) over.push(CapacityDimension.Cores);
  return over;
}
