/**
 * Topology-aware choice (docs/hami-parity.md §4.2, after the loop): when more cards fit than a container asks for, keep
 * the best connected set by the node's pair scores.
 */
import type { DecisionArena } from './arena';
import type { PreparedNode } from './prepared';

/**
 * More cards fit than requested: one card -> the card least connected to the others (first minimum
 * in pick order); several -> the combination (lexicographic in pick order) with the highest sum of
 * pair scores, first maximum. Missing pairs count 0.
 */
export function chooseByTopology(arena: DecisionArena, node: PreparedNode, pickedCount: number, wanted: number): number[] {
  // Picks are referred to by their index in `arena.picked` (pick order); the result is ascending.
  const uuid = (pick: number): string => node.devices[arena.picked[pick]!]!.id;
  const pair = (a: number, b: number): number => node.pairScores[uuid(a)]?.[uuid(b)] ?? 0;
  if (wanted === 1) {
    let best = 0;
    let bestScore = Infinity;
    for (let card = 0; card < pickedCount; card++) {
      let total = 0;
      for (let other = 0; other < pickedCount; other++) if (uuid(other) !== uuid(card)) total += pair(card, other);
      if (total < bestScore) {
        bestScore = total;
        best = card;
      }
    }
    return [best];
  }
  let best: number[] | undefined;
  let bestScore = -Infinity;
  const current: number[] = [];
  const visit = (start: number): void => {
    if (current.length === wanted) {
      let total = 0;
      for (let i = 0; i < current.length - 1; i++) for (let j = i + 1; j < current.length; j++) total += pair(current[i]!, current[j]!);
      if (total > bestScore) {
        bestScore = total;
        best = [...current];
      }
      return;
    }
    for (let i = start; i <= pickedCount - (wanted - current.length); i++) {
      current.push(i);
      visit(i + 1);
      current.pop();
    }
  };
  visit(0);
  return best ?? Array.from({ length: wanted }, (_, i) => i);
}
