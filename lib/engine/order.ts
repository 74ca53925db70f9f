/**
 * Card scores and card order (docs/hami-parity.md §5.2, §5.3): every card a container may use is scored on the working
 * usage, then sorted so that Fit, taking from the end, tries cards in the policy's order.
 */
import type { DecisionArena } from './arena';
import type { DeviceScoringWeights, GpuPolicy } from './podAnnotations';
import { CardFact, CARD_FACTS } from './cardFacts';
import type { PreparedNode } from './prepared';
import { PercentageUnset, SCORE_WEIGHT, type ContainerRequest, type DeviceInfo } from './types';

const f32 = Math.fround;

/**
 * `10 × (wSlot×(request+used)/count + wCore×(core+usedcores)/devcore + wMem×(mem+usedmem)/devmem)`
 * in float32, on the working usage. Request terms count only when the card's type is exactly the
 * request type (`NVIDIA`), which real model names never are (docs/hami-parity.md §5.2 quirk).
 */
export function scoreCards(arena: DecisionArena, cards: Int32Array, node: PreparedNode, request: ContainerRequest, weights: DeviceScoringWeights): void {
  // From the node's card facts, not its device objects (./cardFacts.ts).
  const { cardFacts, cardTypes } = node;
  for (let i = 0; i < cards.length; i++) {
    const p = cards[i]!;
    const at = p * CARD_FACTS;
    const sameType = cardTypes[p] === request.type;
    const count = cardFacts[at + CardFact.count]!;
    const devcore = cardFacts[at + CardFact.devcore]!;
    const devmem = cardFacts[at + CardFact.devmem]!;
    arena.cardScore[p] = scoreOf(count, devcore, devmem, sameType, arena.used[p]!, arena.usedCores[p]!, arena.usedMem[p]!, request, weights);
  }
}

/** One card's score for one container's request (`DeviceListsScore.ComputeScore`). */
export function cardScore(
  device: DeviceInfo,
  used: number,
  usedCores: number,
  usedMem: number,
  request: ContainerRequest,
  weights: DeviceScoringWeights,
): number {
  return scoreOf(device.count, device.devcore, device.devmem, request.type === device.type, used, usedCores, usedMem, request, weights);
}

/** `cardScore` from the card's numbers; `sameType`: the card's type is exactly the request's. */
function scoreOf(
  count: number,
  devcore: number,
  devmem: number,
  sameType: boolean,
  used: number,
  usedCores: number,
  usedMem: number,
  request: ContainerRequest,
  weights: DeviceScoringWeights,
): number {
  if (count === 0 || devcore === 0 || devmem === 0) return 0;
  let slots = 0;
  let cores = 0;
  let mem = 0;
  if (sameType) {
    slots = 1;
    cores = request.coresreq;
    const pct = request.mempercentagereq;
    mem = pct !== 0 && pct !== PercentageUnset ? Math.trunc((devmem * pct) / 100) : request.memreq;
  }
  const slotShare = f32(f32(slots + used) / f32(count));
  const coreShare = f32(f32(cores + usedCores) / f32(devcore));
  const memShare = f32(f32(mem + usedMem) / f32(devmem));
  const weighted = f32(f32(f32(weights.slot) * slotShare) + f32(f32(weights.core) * coreShare));
  return f32(SCORE_WEIGHT * f32(weighted + f32(f32(weights.memory) * memShare)));
}

/**
 * Starts the policy order of `cards` in `arena.order`, worked out only as far as it is read (`cardInOrder`): Fit takes
 * cards from the end and usually stops after the one or two it needs, so most of a full sort of a node's cards went
 * unread (ours; the cards read are exactly those of the full order).
 */
export function startCardOrder(arena: DecisionArena, cards: Int32Array, node: PreparedNode): void {
  const { order, cardNuma, cardIndex } = arena;
  order.set(cards);
  // What the comparisons read, from the node's card facts into the arena once, not once per comparison.
  const facts = node.cardFacts;
  for (let i = 0; i < cards.length; i++) {
    const p = cards[i]!;
    cardNuma[p] = facts[p * CARD_FACTS + CardFact.numa]!;
    cardIndex[p] = facts[p * CARD_FACTS + CardFact.index]!;
  }
  arena.orderedFrom = cards.length;
}

/**
 * The card at `position` of the policy order started by `startCardOrder`: the order of a stable sort by `sortsBefore`
 * (Go's sort.Sort is an insertion sort up to 12 elements, so stable there; kept stable beyond, where HAMi's pdqsort
 * may reorder equal cards). Positions are settled from the end down: each one gets the greatest of the cards not yet
 * settled, the last of equal ones as they stand, and the others keep their order (no swap), which is what a stable
 * sort puts there.
 */
export function cardInOrder(arena: DecisionArena, policy: GpuPolicy, position: number): number {
  const { order } = arena;
  for (let last = arena.orderedFrom - 1; last >= position; last--) {
    let greatest = 0;
    for (let j = 1; j <= last; j++) if (!sortsBefore(arena, policy, order[j]!, order[greatest]!)) greatest = j;
    const card = order[greatest]!;
    for (let j = greatest; j < last; j++) order[j] = order[j + 1]!;
    order[last] = card;
    arena.orderedFrom = last;
  }
  return order[position]!;
}

/** Go's `DeviceUsageList.Less` (docs/hami-parity.md §5.3): does card `a` sort before card `b`? */
function sortsBefore(arena: DecisionArena, policy: GpuPolicy, a: number, b: number): boolean {
  const scoreA = arena.cardScore[a]!;
  const scoreB = arena.cardScore[b]!;
  const numaA = arena.cardNuma[a]!;
  const numaB = arena.cardNuma[b]!;
  switch (policy.kind) {
    case 'chain':
      for (const key of policy.keys) {
        if (key === 'numa' && numaA !== numaB) return numaA < numaB;
        if (key === 'binpack' && scoreA !== scoreB) return scoreA < scoreB;
        if (key === 'spread' && scoreA !== scoreB) return scoreA > scoreB;
      }
      return arena.cardIndex[a]! < arena.cardIndex[b]!;
    case 'mutex': {
      // Busy cards first, idle cards last, so Fit tries idle ones first.
      const usedA = arena.used[a]!;
      const usedB = arena.used[b]!;
      return usedA !== usedB ? usedA > usedB : numaA < numaB;
    }
    case 'binpack':
    case 'spread': {
      const binpack = policy.kind === 'binpack';
      if (policy.numaBind) {
        // Keep NUMA groups contiguous so Fit can collect a same-NUMA run.
        if (numaA !== numaB) return binpack ? numaA > numaB : numaA < numaB;
        return binpack ? scoreA < scoreB : scoreA > scoreB;
      }
      if (scoreA !== scoreB) return binpack ? scoreA < scoreB : scoreA > scoreB;
      return numaA < numaB;
    }
  }
}
