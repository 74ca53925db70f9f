/** Lock-aware placement in the engine (ours; docs/locks.md): which fitting node a decision takes when some are busy. */
import { decide } from '../../../lib/engine/decide';
import type { NodeAllocations } from '../../../lib/engine/types';
import { cards, gpu, input, node, pod } from './fixtures';

/** Three nodes binpack lists n1, n2, n3 (n3, the most used, last: HAMi's choice). */
function cluster() {
  const used = (name: string, slots: number) => node(name, cards(name, 2), { usage: { [`${name}-0`]: { used: slots, usedmem: slots * 1000, usedcores: slots * 10 } } });
  return [used('n1', 1), used('n2', 2), used('n3', 3)];
}

function choose(busy: Readonly<Record<string, NodeAllocations>>) {
  const decision = decide({ ...input(pod([gpu(1, { 'nvidia.com/gpumem': 1000 })]), cluster()), avoid: (name) => busy[name] });
  if (decision.kind !== 'fit') throw new Error(`no fit: ${decision.kind}`);
  return { node: decision.node, passedOver: decision.passedOver, ...(decision.leastBusy ? { leastBusy: decision.leastBusy } : {}) };
}

describe('lock-aware placement', () => {
  it("takes HAMi's choice when nobody allocates there", () => {
    expect(choose({})).toEqual({ node: 'n3', passedOver: [] });
  });

  it('passes over busy nodes, best listed first, for the first one free', () => {
    expect(choose({ n3: { holder: 'a/x', count: 1 }, n2: { holder: 'a/y', count: 3 } })).toEqual({
      node: 'n1',
      passedOver: [
        { name: 'n3', holder: 'a/x' },
        { name: 'n2', holder: 'a/y' },
      ],
    });
  });

  it('with every node busy, takes the one with the fewest allocations under way, so a burst waits on each node in turn', () => {
    expect(choose({ n3: { holder: 'a/x', count: 2 }, n2: { holder: 'a/y', count: 1 }, n1: { holder: 'a/z', count: 1 } })).toEqual({
      node: 'n2',
      passedOver: [{ name: 'n3', holder: 'a/x' }],
      leastBusy: { allocations: 1 },
    });
    // Equally busy everywhere: HAMi's choice, nothing passed over, and the decision says it is busy too.
    expect(choose({ n3: { holder: 'a/x', count: 1 }, n2: { holder: 'a/y', count: 1 }, n1: { holder: 'a/z', count: 1 } })).toEqual({
      node: 'n3',
      passedOver: [],
      leastBusy: { allocations: 1 },
    });
  });
});
