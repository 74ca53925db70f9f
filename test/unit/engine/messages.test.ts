import fc from 'fast-check';
import {
  fitNodeMessage,
  formatGoFixed2,
  genReason,
  goQuote,
  lastListedPosition,
  listingPositions,
  noAvailableNodeMessage,
  parseReason,
  reasonEventMessage,
  reasonEvents,
} from '../../../lib/engine/messages';

describe("Go's %.2f", () => {
  it.each([
    [2.625, '2.62'],
    [0.125, '0.12'],
    [0.375, '0.38'],
    [2.875, '2.88'],
    [15, '15.00'],
    [7.5, '7.50'],
    [0, '0.00'],
    [2.35, '2.35'],
    [Math.fround(2.35), '2.35'],
    [Math.fround(11.75), '11.75'],
    [1.005, '1.00'],
    [-0.125, '-0.12'],
  ])('%p -> %s', (value, text) => {
    expect(formatGoFixed2(value)).toBe(text);
  });
});

describe('goQuote (%q)', () => {
  it.each([
    ['slot=1', '"slot=1"'],
    ['a"b\\c', '"a\\"b\\\\c"'],
    ['tab\there\n', '"tab\\there\\n"'],
    ['\x01', '"\\x01"'],
    ['é', '"é"'],
  ])('%j -> %s', (text, quoted) => {
    expect(goQuote(text)).toBe(quoted);
  });
});

describe('GenReason / ParseReason (docs/hami-parity.md §4.3)', () => {
  it('sorts entries as plain strings and joins with ", "', () => {
    const counts = new Map([
      ['ResourceQuotaNotFit', 3],
      ['AllocatedCardsInsufficientRequest', 1],
    ]);
    expect(genReason(counts, 4)).toBe('1/4 AllocatedCardsInsufficientRequest, 3/4 ResourceQuotaNotFit');
    expect(
      genReason(
        new Map([
          ['CardInsufficientMemory', 2],
          ['CardInsufficientCore', 10],
        ]),
        12,
      ),
    ).toBe('10/12 CardInsufficientCore, 2/12 CardInsufficientMemory');
  });

  it('parses x/y pieces and skips bare codes', () => {
    expect(parseReason('1/8 ExclusiveDeviceAllocateConflict, 2/8 CardInsufficientCore')).toEqual([
      { count: 1, cards: 8, reason: 'ExclusiveDeviceAllocateConflict' },
      { count: 2, cards: 8, reason: 'CardInsufficientCore' },
    ]);
    expect(parseReason('NodeInsufficientDevice')).toEqual([]);
    expect(parseReason('node unregistered')).toEqual([]);
  });
});

describe('filter messages (docs/hami-parity.md §5.5)', () => {
  it('success message lists fitting nodes with %.2f scores', () => {
    expect(
      fitNodeMessage('node3', 3, [
        { name: 'node1', score: 0.125 },
        { name: 'node3', score: 2.35 },
      ]),
    ).toBe('find fit node(node3), 1 nodes not fit, 2 nodes fit(node1:0.12,node3:2.35)');
  });

  it('failure texts', () => {
    expect(noAvailableNodeMessage(3)).toBe('no available node, 3 nodes do not meet');
    expect(reasonEventMessage('CardInsufficientMemory', ['n2', 'n1'])).toBe('2 nodes CardInsufficientMemory(n1,n2)');
  });

  it('per-reason events ignore bare codes and are ordered by reason', () => {
    expect(
      reasonEvents({
        b: '1/2 CardInsufficientMemory, 1/2 CardNotHealth',
        a: '2/2 CardInsufficientMemory',
        c: 'NodeInsufficientDevice',
        d: 'node unregistered',
      }),
    ).toEqual(['2 nodes CardInsufficientMemory(a,b)', '1 nodes CardNotHealth(b)']);
  });
});

describe('the node listed last, found without sorting', () => {
  const scored = fc
    .array(fc.record({ name: fc.constantFrom('n1', 'n2', 'n3', 'n10', 'N2'), score: fc.oneof(fc.constantFrom(0, 1.5, 2, Infinity, -Infinity, NaN), fc.double()) }), { minLength: 1, maxLength: 12 })
    .map((nodes) => ({ names: nodes.map((n) => n.name), scores: nodes.map((n) => n.score) }));

  it('is the position the listing puts last (HAMi takes it), repeated names and equal scores included', () => {
    fc.assert(
      fc.property(scored, fc.constantFrom('spread' as const, 'binpack' as const), (nodes, policy) => {
        const expected = nodes.scores.some(Number.isNaN) ? undefined : listingPositions(policy, nodes).at(-1);
        expect(lastListedPosition(policy, nodes)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });
});
