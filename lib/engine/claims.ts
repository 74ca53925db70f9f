/**
 * The meaning of a `CardClaim`, as every store adapter must enforce it: the in-memory store evaluates this
 * function, the DynamoDB adapter writes the same comparison as a condition expression (lib/store/ledgerStore.ts).
 */
import type { CardClaim, DeviceUsage } from './types';

/**
 * A claim as the store checks it against its stored counters. A pod filtered again replaces its own booking:
 * the stored counters then still hold that booking, so the bounds are raised by what it held and an
 * exclusive card must hold exactly the replaced booking's slots (`slotsHeldBefore`, 0 for a new booking).
 */
export interface StoredClaim extends CardClaim {
  readonly slotsHeldBefore: number;
}

/** Whether a claim may be booked on a card whose booked usage is `before`. */
export function claimAdmits(claim: CardClaim | StoredClaim, before: DeviceUsage): boolean {
  if (before.used > claim.maxSlotsBefore || before.usedmem > claim.maxMemBefore || before.usedcores > claim.maxCoresBefore) return false;
  return !claim.exclusive || before.used === ('slotsHeldBefore' in claim ? claim.slotsHeldBefore : 0);
}
