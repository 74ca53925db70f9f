/**
 * Card scores and card order (docs/hami-parity.md §5.2, §5.3): every card a container may use is scored on the working
 * usage, then sorted so that Fit, taking from the end, tries cards in the policy's order.
 */
import type { DecisionArena } from './arena';
import type { DeviceScoringWeights, GpuPolicy } from './podAnnotations';
import { CARD_TABLE_WIDTH, type PreparedNode } from './prepared';
import { PercentageUnset, SCORE_WEIGHT, type ContainerRequest, type DeviceInfo } from './types';

const f32 = Math.fround;

/**
 * `10 × (wSlot×(request+used)/count + wCore×(core+usedcores)/devcore + wMem×(mem+usedmem)/devmem)`
 * in float32, on the working usage. Request terms count only when the card's type is exactly the
 * request type (`NVIDIA`), which real model names never are (docs/hami-parity.md §5.2 quirk).
 */
export function scoreCards(arena: DecisionArena, cards: Int32Array, node: PreparedNode, request: ContainerRequest, weights: DeviceScoringWeights): void {
  // From the node's card table, not its device objects: a decision scores every card of every node, and at thousands
  // of nodes the device objects no longer stay in the processor's cache from one decision to the next.
  const { cardTable, cardTypes } = node;
  for (let i = 0; i < cards.length; i++) {
    const p = cards[i]!;
    const at = p * CARD_TABLE_WIDTH;
    const sameType = cardTypes[p] === request.type;
    arena.cardScore[p] = scoreOf(cardTable[at]!, cardTable[at + 1]!, cardTable[at + 2]!, sameType, arena.used[p]!, arena.usedCores[p]!, arena.usedMem[p]!, request, weights);
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

/** Fills `arena.order` with the given cards in policy order (Fit takes from the end). */
export function orderCards(arena: DecisionArena, cards: Int32Array, node: PreparedNode, policy: GpuPolicy): void {
  const { order } = arena;
  const n = cards.length;
  order.set(cards);
  // Stable insertion sort: Go's sort.Sort for up to 12 elements; kept stable beyond (HAMi's pdqsort
  // may reorder equal cards there).
  for (let i = 1; i < n; i++) {
    const card = order[i]!;
    let j = i - 1;
    while (j >= 0 && sortsBefore(arena, node, policy, card, order[j]!)) {
      order[j + 1] = order[j]!;
      j--;
    }
    order[j + 1] = card;
  }
}

/** Go's `DeviceUsageList.Less` (docs/hami-parity.md §5.3): does card `a` sort before card `b`? */
function sortsBefore(arena: DecisionArena, node: PreparedNode, policy: GpuPolicy, a: number, b: number): boolean {
  const scoreA = arena.cardScore[a]!;
  const scoreB = arena.cardScore[b]!;
  const numaA = node.numa[a]!;
  const numaB = node.numa[b]!;
  switch (policy.kind) {
    case 'chain':
      for (const key of policy.keys) {
        if (key === 'numa' && numaA !== numaB) return numaA < numaB;
        if (key === 'binpack' && scoreA !== scoreB) return scoreA < scoreB;
        if (key === 'spread' && scoreA !== scoreB) return scoreA > scoreB;
      }
      return node.devices[a]!.index < node.devices[b]!.index;
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
