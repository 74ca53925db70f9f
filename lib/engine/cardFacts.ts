/**
 * A node's cards as numbers: one row of `CARD_FACTS` float64s per card, in registration order, holding everything Fit,
 * scoring, booking and the evidence read of a card on every decision. A module of its own, importing nothing but
 * types: ./prepareNode.ts builds the rows, and Fit, scoring, booking (./prepared.ts) and the evidence (./evidence.ts) read them.
 *
 * Why rows of numbers: a decision reads every card of every candidate. Eight card objects per node, each with its own
 * fields and strings, are sixteen or so cache lines spread over the heap; at thousands of nodes they are no longer in
 * the processor's caches when the next decision comes to them. A node's rows are one block of memory, a cache line per
 * card (docs/performance.md, "Decisions at 5,000 nodes"). Float64: every number exactly as the card's object holds it.
 */
import type { DeviceInfo } from './types';

/** Columns of a card's row. */
export const CardFact = {
  count: 0,
  devcore: 1,
  devmem: 2,
  index: 3,
  numa: 4,
  /** 1 for a healthy card. */
  healthy: 5,
  /** 1 for a card listed in `hami.io/device-cordon`. */
  cordoned: 6,
  /** The position of the first card registered with this card's UUID (itself unless a UUID is listed twice): where booking it goes. */
  bookedAt: 7,
} as const;

/** Numbers per card: one 64-byte cache line. */
export const CARD_FACTS = 8;

/** Writes card `position`'s row; `bookedAt` and `cordoned` are worked out over the whole registration by the caller. */
export function writeCardFacts(facts: Float64Array, position: number, device: DeviceInfo, bookedAt: number, cordoned: boolean): void {
  const at = position * CARD_FACTS;
  facts[at + CardFact.count] = device.count;
  facts[at + CardFact.devcore] = device.devcore;
  facts[at + CardFact.devmem] = device.devmem;
  facts[at + CardFact.index] = device.index;
  facts[at + CardFact.numa] = device.numa;
  facts[at + CardFact.healthy] = device.health ? 1 : 0;
  facts[at + CardFact.cordoned] = cordoned ? 1 : 0;
  facts[at + CardFact.bookedAt] = bookedAt;
}
