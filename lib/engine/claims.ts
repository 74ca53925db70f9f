/**
 * The meaning of a `CardClaim`, as every store adapter must enforce it: the in-memory store evaluates this
 * function, the DynamoDB adapter writes the same comparison as a condition expression.
 */
import type { CardClaim, DeviceUsage } from './types';

/** Whether a claim may be booked on a card whose booked usage is `before`. */
export function claimAdmits(claim: CardClaim, before: DeviceUsage): boolean {
  if (before.used > claim.maxSlotsBefore || before.usedmem > claim.maxMemBefore || before.usedcores > claim.maxCoresBefore) return false;
  return !claim.exclusive || before.used === 0;
}
