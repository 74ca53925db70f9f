/**
 * The numbers Fit compares on one card, refilled for every card tried and copied into the evidence. A module of its
 * own, with no imports: every device kind's Fit fills one, and the evidence module cannot be imported by a kind
 * without an import cycle (it reads the device kinds).
 */
export interface CardFigures {
  usedMem: number;
  usedCores: number;
  usedSlots: number;
  requestedMem: number;
  requestedCores: number;
  /** Only when the real-time check measured this card. */
  realtimeUsedMem: number | undefined;
  realtimeTotalMem: number | undefined;
}

/** A zeroed set, for a Fit run to refill. */
export function emptyCardFigures(): CardFigures {
  return { usedMem: 0, usedCores: 0, usedSlots: 0, requestedMem: 0, requestedCores: 0, realtimeUsedMem: undefined, realtimeTotalMem: undefined };
}
