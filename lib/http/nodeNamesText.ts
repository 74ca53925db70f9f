/**
 * kube-scheduler's filter body ends with the candidate node names (`…,"NodeNames":["a","b"]}`: Go writes the
 * fields of ExtenderArgs in order, compactly), and where it sends every feasible node that list is the same text on
 * every filter. Parsing and checking a thousand names cost about 0.2 ms of each filter's critical path (measured with
 * `npm run bench`, docs/performance.md); a list whose text is the one checked last is taken again instead, and only
 * the rest of the body is parsed.
 */

const NAMES_MEMBER = ',"NodeNames":[';

export interface SplitBody {
  /** The body without its names: the object's other members, closed. */
  readonly rest: string;
  /** The names' array as it was sent, `[` to `]`. */
  readonly namesText: string;
}

/**
 * Splits a body that ends with its `NodeNames` member, as Go writes it; anything else (spaces, another order) is
 * `undefined` and parsed whole. The split is exact whenever `rest` parses as an object with a member (`{,"NodeNames":…}`
 * would give `{}`): `rest` then ends outside any string at the top level, so the cut member is a top-level one; the
 * names' array holds no `]` (a name cannot), so it ends at the body's last `]`.
 */
export function splitNodeNames(body: string): SplitBody | undefined {
  if (!body.endsWith(']}')) return undefined;
  const at = body.lastIndexOf(NAMES_MEMBER);
  if (at < 0) return undefined;
  const open = at + NAMES_MEMBER.length - 1;
  if (body.indexOf(']', open) !== body.length - 2) return undefined;
  return { rest: `${body.slice(0, at)}}`, namesText: body.slice(open, body.length - 1) };
}

/**
 * The names' text checked last, and the names it held (frozen: every request that sends the same text gets this
 * array). Only texts that parsed and passed the check are kept, so a hit needs neither again.
 */
export class NodeNamesMemo {
  private text: string | undefined;
  private names: readonly string[] | undefined;

  /** The names checked before for exactly this text, if it is the last one seen. */
  reuse(namesText: string): readonly string[] | undefined {
    return namesText === this.text ? this.names : undefined;
  }

  remember(namesText: string, names: readonly string[]): readonly string[] {
    this.text = namesText;
    this.names = Object.freeze([...names]);
    return this.names;
  }
}
