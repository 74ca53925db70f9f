import { amount, coresText, countText, memoryText, percent } from '../../../lib/console/web/units';

describe('the console reads numbers as people do', () => {
  it.each([
    [0, '0'],
    [7.8125, '7.8'],
    [80, '80'],
    [99.96, '100'],
    [3281.25, '3,281'],
    [439272, '439,272'],
  ])('amount(%p) is %p', (value, text) => {
    expect(amount(value)).toBe(text);
  });

  it.each([
    [0, 100, '0'],
    [0, 0, '0'],
    [1, 10_000, '< 0.1'],
    [7, 1000, '0.7'],
    [12.4, 100, '12'],
    [100, 100, '100'],
  ])('percent(%p, %p) is %p', (used, total, text) => {
    expect(percent(used, total)).toBe(text);
  });

  it('writes memory in GiB with separators and its share', () => {
    expect(memoryText(3_360_000, 449_814_000)).toBe('3,281 GiB of 439,271 GiB (0.7 %)');
    expect(memoryText(8000, 81920)).toBe('7.8 GiB of 80 GiB (9.8 %)');
    expect(memoryText(0, 16384)).toBe('0 GiB of 16 GiB (0 %)');
  });

  it('writes cores as a share of the card, the node or the cluster', () => {
    expect(coresText(10, 100, 'card')).toBe('10 % of the card');
    expect(coresText(30, 200, 'card')).toBe('30 of 200 %');
    expect(coresText(80, 800, 'node')).toBe('10 % (0.8 of 8 cards)');
    expect(coresText(7600, 800_000, 'cluster')).toBe("1 % of the cluster (76 of 8,000 cards' worth)");
  });

  it('writes counts with their share', () => {
    expect(countText(3, 4)).toBe('3 of 4 (75 %)');
    expect(countText(8000, 80_000)).toBe('8,000 of 80,000 (10 %)');
  });
});
