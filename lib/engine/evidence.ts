/**
 * Per-card evidence of one decision, packed.
 *
 * A decision tries up to every card of every candidate (40,000 cards for 5,000 nodes of 8). One
 * object per tried card, all alive until the decision returns, made the time grow faster than the
 * node count: the garbage collector copies and promotes whatever is still alive. So Fit appends one
 * row of numbers per tried card to a growable Float64Array (one per decision), and a container's
 * `cards` become `CardEvidence` objects only when something reads them (logs, records, tests), once
 * per container, then cached. The public shape (`ContainerEvidence.cards`) does not change: `cards`
 * is an own enumerable property, so property reads, spreads and `JSON.stringify` all see it.
 */
import { ReasonCode } from './types';
import type { CardEvidence, ContainerEvidence, DeviceInfo } from './types';

export type CardOutcome = ReasonCode | 'Fit';

/** The numbers one check compared on one card, as Fit saw them when it tried the card. */
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

/** Outcomes stored as their position here. */
const OUTCOMES: readonly CardOutcome[] = ['Fit', ...Object.values(ReasonCode)];
const outcomeCode = new Map<CardOutcome, number>(OUTCOMES.map((outcome, code) => [outcome, code]));

/** Column offsets within a row. Float64 holds every figure exactly (int32 usage, MiB, NaN = absent). */
const Column = {
  /** Position of the card in the node's device list. */
  position: 0,
  outcome: 1,
  usedMem: 2,
  usedCores: 3,
  usedSlots: 4,
  requestedMem: 5,
  requestedCores: 6,
  realtimeUsedMem: 7,
  realtimeTotalMem: 8,
} as const;
const ROW_WIDTH = 9;
const INITIAL_ROWS = 256;

/** The tried cards of one decision, in the order Fit tried them. */
export class CardEvidenceSlab {
  private rows = new Float64Array(INITIAL_ROWS * ROW_WIDTH);
  private count = 0;

  /** Rows so far; the next `add` gets this row number. */
  get length(): number {
    return this.count;
  }

  add(position: number, outcome: CardOutcome, figures: CardFigures): void {
    if ((this.count + 1) * ROW_WIDTH > this.rows.length) this.grow();
    const at = this.count * ROW_WIDTH;
    const { rows } = this;
    rows[at + Column.position] = position;
    rows[at + Column.outcome] = outcomeCode.get(outcome)!;
    rows[at + Column.usedMem] = figures.usedMem;
    rows[at + Column.usedCores] = figures.usedCores;
    rows[at + Column.usedSlots] = figures.usedSlots;
    rows[at + Column.requestedMem] = figures.requestedMem;
    rows[at + Column.requestedCores] = figures.requestedCores;
    rows[at + Column.realtimeUsedMem] = figures.realtimeUsedMem ?? NaN;
    rows[at + Column.realtimeTotalMem] = figures.realtimeTotalMem ?? NaN;
    this.count += 1;
  }

  /** Rows `first … first+count-1` as evidence objects; `devices` is the node's device list. */
  cards(first: number, count: number, devices: readonly DeviceInfo[]): CardEvidence[] {
    const cards: CardEvidence[] = [];
    for (let row = first; row < first + count; row++) cards.push(this.card(row, devices));
    return cards;
  }

  private card(row: number, devices: readonly DeviceInfo[]): CardEvidence {
    const at = row * ROW_WIDTH;
    const { rows } = this;
    const device = devices[rows[at + Column.position]!]!;
    const usedMem = rows[at + Column.usedMem]!;
    // Same keys in the same order as always: the scheduler log and stored records serialise them.
    const card: { -readonly [K in keyof CardEvidence]: CardEvidence[K] } = {
      uuid: device.id,
      index: device.index,
      outcome: OUTCOMES[rows[at + Column.outcome]!]!,
      totalMem: device.devmem,
      usedMem,
      requestedMem: rows[at + Column.requestedMem]!,
      freeMem: device.devmem - usedMem,
      totalCores: device.devcore,
      usedCores: rows[at + Column.usedCores]!,
      requestedCores: rows[at + Column.requestedCores]!,
      slots: device.count,
      usedSlots: rows[at + Column.usedSlots]!,
    };
    const realtimeUsedMem = rows[at + Column.realtimeUsedMem]!;
    const realtimeTotalMem = rows[at + Column.realtimeTotalMem]!;
    if (!Number.isNaN(realtimeUsedMem) && !Number.isNaN(realtimeTotalMem)) {
      card.realtimeUsedMem = realtimeUsedMem;
      card.realtimeTotalMem = realtimeTotalMem;
    }
    return card;
  }

  private grow(): void {
    const rows = new Float64Array(this.rows.length * 2);
    rows.set(this.rows);
    this.rows = rows;
  }
}

/** A container's evidence without its cards (they come from the slab). */
export type ContainerFields = Omit<ContainerEvidence, 'cards'>;

/**
 * Completes `fields` (mutated and returned) with `cards`: slab rows `first … first+count-1`, built on
 * first read and cached. An own enumerable accessor, so `JSON.stringify`, `{ ...container }` and
 * structural equality see it exactly like a plain array property.
 */
export function withSlabCards(
  fields: ContainerFields,
  slab: CardEvidenceSlab,
  first: number,
  count: number,
  devices: readonly DeviceInfo[],
): ContainerEvidence {
  let cards: readonly CardEvidence[] | undefined;
  Object.defineProperty(fields, 'cards', {
    enumerable: true,
    configurable: true,
    get: (): readonly CardEvidence[] => (cards ??= slab.cards(first, count, devices)),
  });
  return fields as ContainerEvidence;
}
