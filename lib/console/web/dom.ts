/**
 * Building the page: elements, attributes and text nodes only. Cluster data (pod and node names, annotations,
 * reasons) only ever becomes text (`createTextNode`), never markup; no `innerHTML` anywhere in the console.
 */
import { outcomeClass, type Outcome } from '../../diagnostics/vocabulary';

export type Child = Node | string | number | null | undefined | false;
/** A child, or lists of them nested to any depth. */
export type Children = Child | readonly Children[];

export type Props = Readonly<Record<string, string | number | boolean | undefined>>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props | null = null, ...children: readonly Children[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === false) continue;
    if (/^on/i.test(name) || name === 'style') throw new Error(`attribute ${name} is not set by the console`);
    el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: readonly Children[]): void {
  for (const child of children) {
    if (Array.isArray(child)) append(el, child as readonly Children[]);
    else if (child instanceof Node) el.appendChild(child);
    else if (child !== null && child !== undefined && child !== false) el.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces the element's content. */
export function replace(el: Element, ...children: readonly Children[]): void {
  el.replaceChildren();
  append(el, children);
}

/** A link to a console page; every path segment is encoded, so a name never changes the route. */
export function link(segments: readonly string[], text: Child, props: Props = {}): HTMLAnchorElement {
  return h('a', { href: `#/${segments.map(encodeURIComponent).join('/')}`, ...props }, text);
}

/**
 * A usage bar with its numbers beside it: `used / total unit` (the pod page's evidence). The width is set through
 * the CSSOM, which the Content-Security-Policy allows (it forbids style attributes in markup, never set here).
 */
export function bar(label: string, used: number, total: number, unit: string): HTMLElement {
  return meter(label, used, total, `${used} / ${total}${unit === '' ? '' : ` ${unit}`}`);
}

/** Bar colours by share booked; the overview's legend names the same thresholds. */
export const BAR_LEVELS = { mid: 0.6, high: 0.9 } as const;

/** A usage bar with the text given beside it (human units, lib/console/web/units.ts). */
export function meter(label: string, used: number, total: number, text: string): HTMLElement {
  const share = total > 0 ? Math.min(1, Math.max(0, used / total)) : 0;
  const fill = h('span', { class: `fill${share >= BAR_LEVELS.high ? ' high' : share >= BAR_LEVELS.mid ? ' mid' : ''}` });
  fill.style.width = `${(share * 100).toFixed(1)}%`;
  return h(
    'span',
    { class: 'usage' },
    h('span', { class: 'bar', role: 'img', 'aria-label': `${label}: ${text}` }, fill),
    h('span', { class: 'num', 'data-usage': label }, text),
  );
}

/** A status word in a pill; `cls` colours it (a word with spaces, `bind failed`, passes its class `bind-failed`). */
export function badge(status: string, cls: string = status): HTMLElement {
  return h('span', { class: `badge ${cls}` }, status);
}

/** The outcome word of an attempt (lib/diagnostics/vocabulary.ts) in a pill. */
export function outcomeBadge(outcome: Outcome): HTMLElement {
  return badge(outcome, outcomeClass(outcome));
}
