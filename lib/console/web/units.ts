/**
 * Numbers as people read them (docs/api.md §11): memory in GiB with thousands separators and its share, cores as a
 * share of the card, the node or the cluster. Pure functions, no DOM (test/unit/console/units.test.ts).
 */
const MIB_PER_GIB = 1024;

/** `1,234` / `7.8`: separators always; one decimal below 100, none from 100 up; no trailing `.0`. */
export function amount(value: number): string {
  const digits = Math.abs(value) >= 100 || Number.isInteger(value) ? 0 : 1;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** A share in per cent: `0.7`, `12`, `100`; a non-zero share below 0.1 % reads `< 0.1`, never `0`. */
export function percent(used: number, total: number): string {
  if (total <= 0) return '0';
  const share = (used / total) * 100;
  if (share > 0 && share < 0.1) return '< 0.1';
  return share.toLocaleString('en-US', { maximumFractionDigits: share < 10 ? 1 : 0 });
}

export function gib(mib: number): string {
  return `${amount(mib / MIB_PER_GIB)} GiB`;
}

/** `3,281 GiB of 439,272 GiB (0.7 %)` */
export function memoryText(usedMib: number, totalMib: number): string {
  return `${gib(usedMib)} of ${gib(totalMib)} (${percent(usedMib, totalMib)} %)`;
}

/**
 * HAMi books cores in per cent of one card (`devcore` 100 a card). One card: `10 % of the card`; a node (a table
 * row, kept short): `10 % (0.8 of 8 cards)`; the cluster: `0.9 % of the cluster (76 of 8,000 cards' worth)`.
 */
export function coresText(used: number, total: number, scope: 'card' | 'node' | 'cluster'): string {
  if (scope === 'card') return total === 100 ? `${amount(used)} % of the card` : `${amount(used)} of ${amount(total)} %`;
  if (scope === 'node') return `${percent(used, total)} % (${amount(used / 100)} of ${amount(total / 100)} cards)`;
  return `${percent(used, total)} % of the cluster (${amount(used / 100)} of ${amount(total / 100)} cards' worth)`;
}

/** `12 of 80 (15 %)` */
export function countText(used: number, total: number): string {
  return `${amount(used)} of ${amount(total)} (${percent(used, total)} %)`;
}
