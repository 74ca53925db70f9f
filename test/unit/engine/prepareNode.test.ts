import { prepareNode } from '../../../lib/engine/prepareNode';
import { CardFact, CARD_FACTS } from '../../../lib/engine/cardFacts';
import type { NodeRegistration } from '../../../lib/engine/types';
import { cards } from './fixtures';
import type { DeviceInfo } from '../../../lib/engine/types';

function registration(devices: DeviceInfo[], cordoned: string[] = []): Extract<NodeRegistration, { registered: true }> {
  return { registered: true, devices, cordoned, pairScores: {} };
}

describe('prepared nodes of equal cards', () => {
  it('share one block of card facts, so a decision over a fleet of one instance type reads one copy', () => {
    const first = prepareNode(registration(cards('node-a', 8)));
    const second = prepareNode(registration(cards('node-b', 8)));
    expect(second.cardFacts).toBe(first.cardFacts);
    expect(second.cardsByKind).toBe(first.cardsByKind);
  });

  it('keep their own facts where a card differs: health, cordon and size are never taken from another node', () => {
    const healthy = prepareNode(registration(cards('node-c', 8)));
    const sick = prepareNode(registration(cards('node-d', 8).map((card, i) => (i === 3 ? { ...card, health: false } : card))));
    const cordoned = prepareNode(registration(cards('node-e', 8), ['node-e-5']));
    const larger = prepareNode(registration(cards('node-f', 8, { devmem: 81920 })));
    expect(sick.cardFacts).not.toBe(healthy.cardFacts);
    expect(sick.cardFacts[3 * CARD_FACTS + CardFact.healthy]).toBe(0);
    expect(healthy.cardFacts[3 * CARD_FACTS + CardFact.healthy]).toBe(1);
    expect(cordoned.cardFacts[5 * CARD_FACTS + CardFact.cordoned]).toBe(1);
    expect(healthy.cardFacts[5 * CARD_FACTS + CardFact.cordoned]).toBe(0);
    expect(larger.cardFacts[CardFact.devmem]).toBe(81920);
    expect(healthy.cardFacts[CardFact.devmem]).toBe(8192);
  });

  it('tell apart facts that differ only where their hash does not look (a fraction of a MiB)', () => {
    const whole = prepareNode(registration(cards('node-i', 2, { devmem: 8192 })));
    const fraction = prepareNode(registration(cards('node-j', 2, { devmem: 8192.5 })));
    const wholeAgain = prepareNode(registration(cards('node-k', 2, { devmem: 8192 })));
    expect(fraction.cardFacts).not.toBe(whole.cardFacts);
    expect(fraction.cardFacts[CardFact.devmem]).toBe(8192.5);
    expect(wholeAgain.cardFacts).toBe(whole.cardFacts);
  });

  it('book a UUID listed twice at its first position on every node alike', () => {
    const twice = (prefix: string): DeviceInfo[] => {
      const list = cards(prefix, 3);
      return [...list, { ...list[0]!, index: 3 }];
    };
    const a = prepareNode(registration(twice('node-g')));
    const b = prepareNode(registration(twice('node-h')));
    expect(b.cardFacts).toBe(a.cardFacts);
    expect(a.cardFacts[3 * CARD_FACTS + CardFact.bookedAt]).toBe(0);
  });
});
