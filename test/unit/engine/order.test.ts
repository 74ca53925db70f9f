/**
 * The card order (lib/engine/order.ts) is worked out only as far as Fit reads it. Whatever is read, and in whatever
 * amount, must be the order of a stable sort by HAMi's `DeviceUsageList.Less` (docs/hami-parity.md §5.3): here against
 * Array.prototype.sort (stable) with each policy's keys written out, on cards whose scores and NUMA nodes tie often.
 */
import fc from 'fast-check';
import { DecisionArena } from '../../../lib/engine/arena';
import { cardInOrder, startCardOrder } from '../../../lib/engine/order';
import { gpuPolicyOf } from '../../../lib/engine/podAnnotations';
import { prepareNode } from '../../../lib/engine/prepareNode';
import { card } from './fixtures';

interface Card {
  readonly score: number;
  readonly numa: number;
  readonly used: number;
}

/** Each policy's `Less` as sort keys, from HAMi's rules; the stable sort keeps registration order among equals. */
const POLICIES: readonly { annotation: string; numaBind: boolean; less: (a: Card & { index: number }, b: Card & { index: number }) => number }[] = [
  { annotation: 'spread', numaBind: false, less: (a, b) => b.score - a.score || a.numa - b.numa },
  { annotation: 'binpack', numaBind: false, less: (a, b) => a.score - b.score || a.numa - b.numa },
  { annotation: 'spread', numaBind: true, less: (a, b) => a.numa - b.numa || b.score - a.score },
  { annotation: 'binpack', numaBind: true, less: (a, b) => b.numa - a.numa || a.score - b.score },
  { annotation: 'mutex', numaBind: false, less: (a, b) => b.used - a.used || a.numa - b.numa },
  { annotation: 'numa,binpack', numaBind: false, less: (a, b) => a.numa - b.numa || a.score - b.score || a.index - b.index },
];

const cardsArb = fc.array(fc.record({ score: fc.integer({ min: 0, max: 3 }), numa: fc.integer({ min: 0, max: 1 }), used: fc.integer({ min: 0, max: 2 }) }), { minLength: 1, maxLength: 12 });

describe('card order, worked out as far as it is read', () => {
  it.each(POLICIES.map((policy) => [`${policy.annotation}${policy.numaBind ? ' + numa-bind' : ''}`, policy] as const))('%s: every position read is the stable sort’s', (_label, policy) => {
    const gpuPolicy = gpuPolicyOf({}, policy.annotation, policy.numaBind);
    const arena = new DecisionArena();
    fc.assert(
      fc.property(cardsArb, fc.integer({ min: 1, max: 12 }), (figures, firstReads) => {
        const n = figures.length;
        // Registered in reverse index order, so that registration order and card index differ.
        const node = prepareNode({ registered: true, devices: figures.map((f, i) => card(`c${i}`, { index: n - 1 - i, numa: f.numa })), cordoned: [], pairScores: {} });
        arena.ensure(n);
        figures.forEach((f, p) => {
          arena.cardScore[p] = f.score;
          arena.used[p] = f.used;
        });
        const expected = figures
          .map((f, p) => ({ ...f, index: n - 1 - p, p }))
          .sort(policy.less)
          .map((c) => c.p);
        const positions = Int32Array.from(figures.keys());
        startCardOrder(arena, positions, node);
        // Fit reads from the end and may stop early; a later read goes on from there.
        const read: number[] = [];
        for (let i = n - 1; i >= Math.max(0, n - firstReads); i--) read.unshift(cardInOrder(arena, gpuPolicy, i));
        expect(read).toEqual(expected.slice(n - read.length));
        for (let i = n - 1; i >= 0; i--) expect(cardInOrder(arena, gpuPolicy, i)).toBe(expected[i]);
      }),
      { numRuns: 300 },
    );
  });
});
