/**
 * Texts exactly as HAMi writes them (docs/hami-parity.md §4.3, 5.5): reason strings, filter messages and
 * Go's `%.2f` / `%q` formatting.
 */
import type { NodePolicy } from './types';

/**
 * Go's `fmt` `%.2f`: the exact binary value rounded to two decimals, exact halves to even.
 * JS `toFixed(2)` agrees everywhere except on exact halves, where it rounds away from zero
 * (`2.625` -> `2.63`, Go `2.62`). A double's third decimal is an exact half only when the value
 * is an odd multiple of 1/8 (docs/hami-parity.md §5.6), which is what we test for.
 */
export function formatGoFixed2(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf';
  const isExactHalf = Number.isInteger(value * 8) && !Number.isInteger(value * 4);
  if (!isExactHalf) return value.toFixed(2);
  const magnitude = Math.abs(value);
  let hundredths = Math.floor(magnitude * 100);
  if (hundredths % 2 === 1) hundredths += 1;
  const whole = Math.floor(hundredths / 100);
  const cents = String(hundredths % 100).padStart(2, '0');
  const sign = value < 0 ? '-' : '';
  return `${sign}${whole}.${cents}`;
}

/** Go's `strconv.Quote` (`%q`) for the texts HAMi formats with it. */
export function goQuote(text: string): string {
  let out = '"';
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case '\\':
        out += '\\\\';
        continue;
      case '\n':
        out += '\\n';
        continue;
      case '\r':
        out += '\\r';
        continue;
      case '\t':
        out += '\\t';
        continue;
      case '\x07':
        out += '\\a';
        continue;
      case '\b':
        out += '\\b';
        continue;
      case '\f':
        out += '\\f';
        continue;
      case '\v':
        out += '\\v';
        continue;
    }
    if (code < 0x20 || code === 0x7f) {
      out += `\\x${code.toString(16).padStart(2, '0')}`;
    } else if (code >= 0x80 && code < 0xa0) {
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    } else if (code >= 0xd800 && code <= 0xdfff) {
      // A lone surrogate is not valid UTF-8; Go renders the replacement character's escape.
      out += '\\ufffd';
    } else {
      out += ch;
    }
  }
  return `${out}"`;
}

/**
 * HAMi's `GenReason`: `"<count>/<cards> <Reason>"` per reason, sorted as plain strings (so
 * `10/12 X` sorts before `2/12 Y`), joined with `", "`.
 */
export function genReason(counts: ReadonlyMap<string, number>, cards: number): string {
  const entries: string[] = [];
  for (const [reason, count] of counts) entries.push(`${count}/${cards} ${reason}`);
  entries.sort(compareCodeUnits);
  return entries.join(', ');
}

export interface ParsedReason {
  readonly count: number;
  readonly cards: number;
  readonly reason: string;
}

/**
 * HAMi's `ParseReason`: splits on `", "` and scans `%d/%d %s`; pieces that do not scan
 * (`NodeInsufficientDevice`, `node unregistered`) are skipped.
 */
export function parseReason(text: string): ParsedReason[] {
  const parsed: ParsedReason[] = [];
  for (const piece of text.split(', ')) {
    const match = /^\s*([+-]?\d+)\/([+-]?\d+)\s+(\S+)/.exec(piece);
    if (!match) continue;
    parsed.push({ count: Number(match[1]), cards: Number(match[2]), reason: match[3] ?? '' });
  }
  return parsed;
}

export interface ScoredNode {
  readonly name: string;
  readonly score: number;
}

/** Fitting nodes as a decision collects them: names and scores side by side, no object per node. */
export interface ScoredNodes {
  readonly names: readonly string[];
  readonly scores: readonly number[];
}

/**
 * HAMi's listing order of fitting nodes: binpack ascending by score, spread descending; equal scores by node name so
 * the choice is deterministic (docs/api.md §9). HAMi takes the last node listed. The stored decision record rebuilds
 * its fit message with this order (lib/store/recordStore.ts), so it must stay the one the decision used.
 */
function compareListed(spread: boolean, aScore: number, aName: string, bScore: number, bName: string): number {
  if (aScore === bScore) return aName < bName ? -1 : aName > bName ? 1 : 0;
  // The difference's sign only: a comparator returning a fractional number makes the sort box it, once per comparison.
  // NaN (not compared as less or greater) counts as equal, as the sort treats a NaN result.
  const difference = spread ? bScore - aScore : aScore - bScore;
  return difference > 0 ? 1 : difference < 0 ? -1 : 0;
}

/** `compareListed` for nodes as objects. */
export function listingOrder(policy: NodePolicy): (a: ScoredNode, b: ScoredNode) => number {
  const spread = policy === 'spread';
  return (a, b) => compareListed(spread, a.score, a.name, b.score, b.name);
}

/** The positions of `nodes` in listing order (`compareListed`). */
export function listingPositions(policy: NodePolicy, nodes: ScoredNodes): number[] {
  const spread = policy === 'spread';
  const { names, scores } = nodes;
  const positions = names.map((_, i) => i);
  return positions.sort((i, j) => compareListed(spread, scores[i]!, names[i]!, scores[j]!, names[j]!));
}

/**
 * The position `listingPositions` lists last (the node HAMi takes), found without sorting; among equal entries (a name
 * sent twice) the later one, as the stable sort leaves them. `undefined` where a NaN score leaves the order to the sort.
 */
export function lastListedPosition(policy: NodePolicy, nodes: ScoredNodes): number | undefined {
  const spread = policy === 'spread';
  const { names, scores } = nodes;
  let last: number | undefined;
  for (let i = 0; i < names.length; i++) {
    if (Number.isNaN(scores[i])) return undefined;
    if (last === undefined || compareListed(spread, scores[i]!, names[i]!, scores[last]!, names[last]!) >= 0) last = i;
  }
  return last;
}

/** `find fit node(<node>), <not fit> nodes not fit, <fit> nodes fit(<a>:<s>,…)` (docs/hami-parity.md §5.5). */
export function fitNodeMessage(node: string, candidateCount: number, fitNodes: readonly ScoredNode[]): string {
  return fitMessage(node, candidateCount, { names: fitNodes.map((n) => n.name), scores: fitNodes.map((n) => n.score) }, fitNodes.map((_, i) => i));
}

/** `fitNodeMessage` for nodes side by side, listed in the order `positions` gives. */
export function fitMessage(node: string, candidateCount: number, nodes: ScoredNodes, positions: readonly number[]): string {
  // Nodes in the same state share a score: each distinct score is formatted once (thousands of nodes, a few scores).
  const formatted = new Map<number, string>();
  const scoreText = (score: number): string => {
    let text = formatted.get(score);
    if (text === undefined) formatted.set(score, (text = formatGoFixed2(score)));
    return text;
  };
  const listed = positions.map((i) => `${nodes.names[i]!}:${scoreText(nodes.scores[i]!)}`).join(',');
  return `find fit node(${node}), ${candidateCount - positions.length} nodes not fit, ${positions.length} nodes fit(${listed})`;
}

/** `no available node, <n> nodes do not meet`, n = number of candidates. */
export function noAvailableNodeMessage(candidateCount: number): string {
  return `no available node, ${candidateCount} nodes do not meet`;
}

/** The per-reason `FilteringFailed` event text `<n> nodes <Reason>(<sorted nodes>)`. */
export function reasonEventMessage(reason: string, nodes: readonly string[]): string {
  const sorted = [...nodes].sort(compareCodeUnits);
  return `${sorted.length} nodes ${reason}(${sorted.join(',')})`;
}

/**
 * Per-reason failure events for an unfit pod: one per reason code parsed from the nodes' reason
 * strings. HAMi walks a Go map (random order); we list reasons in name order so the text is stable.
 */
export function reasonEvents(failedNodes: Readonly<Record<string, string>>): string[] {
  const nodesByReason = new Map<string, string[]>();
  for (const [node, text] of Object.entries(failedNodes)) {
    for (const { reason } of parseReason(text)) {
      const nodes = nodesByReason.get(reason);
      if (nodes === undefined) nodesByReason.set(reason, [node]);
      else if (!nodes.includes(node)) nodes.push(node);
    }
  }
  return [...nodesByReason.keys()].sort(compareCodeUnits).map((reason) => reasonEventMessage(reason, nodesByReason.get(reason) ?? []));
}

/** Go's `sort.Strings` order for the ASCII texts involved (byte order, not locale order). */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Go's `strconv.ParseBool`. */
export function parseGoBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return undefined;
}
