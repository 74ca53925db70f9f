/**
 * Cluster overview (docs/api.md §11): totals in human units, then the nodes, most in need of a look first
 * (lib/console/web/rank.ts), sortable, filtered by node name, card type and free memory, with empty nodes hidden on
 * demand. Two views: one row per node (cards on demand, a node at a time) or every card of every node. Past one
 * page of nodes (a cluster "at scale") it opens on one row per node with empty nodes hidden; the controls say so.
 * All nodes are loaded once (GET /api/v1/nodes, every page); summaries, totals, sorting and filters run over them
 * in memory, and one page of nodes is drawn at a time, so 1,000 nodes x 8 cards stay responsive.
 */
import type { NodeDevicesView } from '../../control/views';
import { listAll } from './api';
import { Outcome } from '../../diagnostics/vocabulary';
import { BAR_LEVELS, badge, h, link, meter, outcomeBadge, replace } from './dom';
import { isSortKey, SORTS, sortNodes, summarise, type NodeSummary, type SortKey } from './rank';
import { amount, coresText, countText, memoryText } from './units';

export const NODES_PER_PAGE = 50;
const MAX_NODES = 20_000;
const MIB_PER_GIB = 1024;

type View = 'compact' | 'cards';

interface Filters {
  name: string;
  type: string;
  /** MiB a card must have free. */
  minFree: number;
  hideEmpty: boolean;
  sort: SortKey;
  view: View;
  page: number;
}

export async function renderOverview(main: HTMLElement): Promise<void> {
  const listed = await listAll<NodeDevicesView>('api/v1/nodes', MAX_NODES);
  const summaries = listed.items.map(summarise);
  const truncated = listed.truncated;
  const atScale = summaries.length > NODES_PER_PAGE;
  const filters: Filters = { name: '', type: '', minFree: 0, hideEmpty: atScale, sort: 'attention', view: atScale ? 'compact' : 'cards', page: 0 };
  const types = [...new Set(summaries.flatMap((s) => s.node.devices.map((d) => d.type)))].sort();
  const expanded = new Set<string>();
  let sorted = sortNodes(summaries, filters.sort);

  const nameInput = h('input', { type: 'search', id: 'filter-name', placeholder: 'node name contains', 'aria-label': 'Filter by node name' });
  const typeSelect = h('select', { id: 'filter-type', 'aria-label': 'Filter by card type' }, h('option', { value: '' }, 'every card type'), types.map((t) => h('option', { value: t }, t)));
  const freeInput = h('input', { type: 'number', id: 'filter-free', min: 0, step: 1, placeholder: '0', 'aria-label': 'Minimum free memory on a card, GiB' });
  const sortSelect = h('select', { id: 'sort' }, Object.entries(SORTS).map(([value, text]) => h('option', { value, selected: value === filters.sort }, text)));
  const viewSelect = h('select', { id: 'view' }, h('option', { value: 'compact', selected: filters.view === 'compact' }, 'One row per node'), h('option', { value: 'cards', selected: filters.view === 'cards' }, 'Every card'));
  const hideEmpty = h('input', { type: 'checkbox', id: 'hide-empty', checked: filters.hideEmpty });
  const list = h('div', { id: 'nodes' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Node pages' });
  const shown = h('p', { class: 'muted', id: 'shown' });

  const draw = () => {
    const matching = sorted.filter((s) => matches(s, filters));
    const hiddenEmpty = filters.hideEmpty ? sorted.filter((s) => s.empty && matches(s, { ...filters, hideEmpty: false })).length : 0;
    const pages = Math.max(1, Math.ceil(matching.length / NODES_PER_PAGE));
    filters.page = Math.min(filters.page, pages - 1);
    const from = filters.page * NODES_PER_PAGE;
    const pageOf = matching.slice(from, from + NODES_PER_PAGE);
    replace(
      shown,
      `${amount(matching.length)} of ${amount(summaries.length)} nodes match`,
      hiddenEmpty > 0 ? ` (${amount(hiddenEmpty)} empty node${hiddenEmpty === 1 ? '' : 's'} hidden)` : '',
      `; showing ${matching.length === 0 ? 0 : from + 1}–${Math.min(from + NODES_PER_PAGE, matching.length)}, ${SORTS[filters.sort].toLowerCase()} first`,
    );
    if (filters.view === 'compact') replace(list, compactTable(pageOf, filters, expanded));
    else replace(list, pageOf.map((s) => nodeSection(s.node, filters)));
    replace(
      pager,
      h('button', { type: 'button', id: 'prev-page', disabled: filters.page === 0 }, 'Previous nodes'),
      h('span', null, ` page ${filters.page + 1} of ${pages} `),
      h('button', { type: 'button', id: 'next-page', disabled: filters.page >= pages - 1 }, 'Next nodes'),
    );
  };
  pager.addEventListener('click', (event) => {
    const id = (event.target as HTMLElement).id;
    if (id === 'prev-page') filters.page--;
    else if (id === 'next-page') filters.page++;
    else return;
    draw();
  });
  // Expanding a node draws its cards under its row in place (the rest of the page stays, focus stays on the button).
  list.addEventListener('click', (event) => {
    const button = (event.target as HTMLElement).closest('button.expand');
    const row = button?.closest('tr[data-node]');
    const name = row?.getAttribute('data-node');
    if (!button || !row || name === null || name === undefined) return;
    const summary = summaries.find((s) => s.node.name === name);
    if (!summary) return;
    if (expanded.delete(name)) {
      const cards = row.nextElementSibling;
      if (cards?.matches('tr.cards-row')) cards.remove();
      button.setAttribute('aria-expanded', 'false');
      replace(button, 'Cards');
    } else {
      expanded.add(name);
      row.after(cardsRow(summary, filters));
      button.setAttribute('aria-expanded', 'true');
      replace(button, 'Hide');
    }
  });
  const onFilter = () => {
    filters.name = nameInput.value.trim();
    filters.type = typeSelect.value;
    filters.minFree = Number(freeInput.value) > 0 ? Number(freeInput.value) * MIB_PER_GIB : 0;
    filters.hideEmpty = hideEmpty.checked;
    filters.view = viewSelect.value === 'cards' ? 'cards' : 'compact';
    if (isSortKey(sortSelect.value) && sortSelect.value !== filters.sort) {
      filters.sort = sortSelect.value;
      sorted = sortNodes(summaries, filters.sort);
    }
    filters.page = 0;
    draw();
  };
  nameInput.addEventListener('input', onFilter);
  freeInput.addEventListener('input', onFilter);
  for (const control of [typeSelect, sortSelect, viewSelect, hideEmpty]) control.addEventListener('change', onFilter);

  replace(
    main,
    h('h1', null, 'Cluster overview'),
    truncated ? h('p', { class: 'warn' }, `Only the first ${amount(MAX_NODES)} nodes are shown.`) : null,
    totals(summaries),
    h(
      'form',
      { class: 'filters', role: 'search' },
      h('label', null, 'Node ', nameInput),
      h('label', null, 'Card type ', typeSelect),
      h('label', null, 'Free memory on a card at least (GiB) ', freeInput),
      h('label', null, 'Sort ', sortSelect),
      h('label', null, 'Show ', viewSelect),
      h('label', null, hideEmpty, ' Hide empty nodes'),
    ),
    legend(),
    shown,
    list,
    pager,
  );
  draw();
}

function matches(s: NodeSummary, f: Filters): boolean {
  if (f.hideEmpty && s.empty) return false;
  if (f.name !== '' && !s.node.name.includes(f.name)) return false;
  if (f.type === '' && f.minFree === 0) return true;
  return s.node.devices.some((d) => (f.type === '' || d.type === f.type) && d.freemem >= f.minFree);
}

function totals(summaries: readonly NodeSummary[]): HTMLElement {
  const sum = (pick: (s: NodeSummary) => number) => summaries.reduce((n, s) => n + pick(s), 0);
  const cards = sum((s) => s.cards);
  const unhealthy = sum((s) => s.unhealthy);
  const overcommitted = sum((s) => s.overcommitted);
  const registered = summaries.filter((s) => s.node.registered).length;
  const locked = summaries.filter((s) => s.lockAgeSeconds !== undefined).length;
  const empty = summaries.filter((s) => s.empty).length;
  const neuron = sum((s) => s.neuron);
  return h(
    'section',
    { class: 'totals', 'aria-label': 'Totals', id: 'totals' },
    h('div', null, h('strong', null, 'Nodes '), `${amount(registered)} registered of ${amount(summaries.length)}`, summaries.length > registered ? h('span', { class: 'bad' }, ` (${amount(summaries.length - registered)} unregistered)`) : null, h('span', { class: 'muted' }, `, ${amount(empty)} empty`)),
    h(
      'div',
      null,
      h('strong', null, 'Cards '),
      amount(cards),
      unhealthy > 0 ? h('span', { class: 'bad' }, ` (${amount(unhealthy)} unhealthy)`) : null,
      overcommitted > 0 ? h('span', { class: 'bad' }, ` (${amount(overcommitted)} over-committed)`) : null,
      locked > 0 ? h('span', { class: 'warn' }, ` · ${amount(locked)} allocation${locked === 1 ? '' : 's'} in progress`) : null,
    ),
    h('div', null, h('strong', null, 'Pods booked '), amount(sum((s) => s.pods))),
    h('div', null, h('strong', null, 'Memory '), meter('total memory', sum((s) => s.memUsed), sum((s) => s.mem), memoryText(sum((s) => s.memUsed), sum((s) => s.mem)))),
    h('div', null, h('strong', null, 'Cores '), meter('total cores', sum((s) => s.coresUsed), sum((s) => s.cores), coresText(sum((s) => s.coresUsed), sum((s) => s.cores), 'cluster'))),
    h('div', null, h('strong', null, 'Slots '), meter('total slots', sum((s) => s.slotsUsed), sum((s) => s.slots), countText(sum((s) => s.slotsUsed), sum((s) => s.slots)))),
    neuron > 0 ? h('div', null, h('strong', null, 'NeuronCores '), meter('total NeuronCores', sum((s) => s.neuronUsed), neuron, countText(sum((s) => s.neuronUsed), neuron))) : null,
  );
}

/** What the bars mean: the colours' thresholds and the units. */
function legend(): HTMLElement {
  const pct = (share: number) => `${share * 100} %`;
  return h(
    'p',
    { class: 'legend muted', id: 'legend' },
    'Bars show the share booked: ',
    h('span', { class: 'swatch' }),
    ` under ${pct(BAR_LEVELS.mid)}, `,
    h('span', { class: 'swatch mid' }),
    ` ${pct(BAR_LEVELS.mid)} to ${pct(BAR_LEVELS.high)}, `,
    h('span', { class: 'swatch high' }),
    ` ${pct(BAR_LEVELS.high)} and more. Memory in GiB (1 GiB = 1,024 MiB); cores in per cent of one card (100 % is a whole card); slots are pods a card takes at once.`,
  );
}

const COMPACT_COLUMNS = ['', 'Node', 'Cards', 'Memory booked', 'Cores booked', 'Slots', 'Pods'];

/** One row per node; a node's cards drawn under its row on demand. */
function compactTable(page: readonly NodeSummary[], f: Filters, expanded: ReadonlySet<string>): HTMLElement {
  const rows = page.flatMap((s) => {
    const open = expanded.has(s.node.name);
    const row = h(
      'tr',
      { 'data-node': s.node.name, class: 'node-row' },
      h('td', null, s.cards > 0 ? h('button', { type: 'button', class: 'expand', 'aria-expanded': String(open), 'aria-label': `Cards of ${s.node.name}` }, open ? 'Hide' : 'Cards') : null),
      h('td', { class: 'node-name' }, h('span', { class: 'name' }, s.node.name), ' ', s.node.registered ? null : badge('unregistered'), nodeFlags(s), s.node.reason !== undefined ? h('div', { class: 'bad reason' }, `Not scheduled: ${s.node.reason}`) : null),
      h('td', { class: 'node-cards' }, cardsText(s)),
      h('td', null, s.mem > 0 ? meter(`memory ${s.node.name}`, s.memUsed, s.mem, memoryText(s.memUsed, s.mem)) : s.neuron > 0 ? meter(`NeuronCores ${s.node.name}`, s.neuronUsed, s.neuron, `${countText(s.neuronUsed, s.neuron)} NeuronCores`) : h('span', { class: 'muted' }, '-')),
      h('td', null, s.cores > 0 ? meter(`cores ${s.node.name}`, s.coresUsed, s.cores, coresText(s.coresUsed, s.cores, 'node')) : h('span', { class: 'muted' }, '-')),
      h('td', { class: 'num', 'data-usage': `slots ${s.node.name}` }, s.slots > 0 ? `${amount(s.slotsUsed)} of ${amount(s.slots)}` : '-'),
      h('td', { class: 'num', 'data-usage': `pods ${s.node.name}` }, amount(s.pods)),
    );
    return open ? [row, cardsRow(s, f)] : [row];
  });
  return h(
    'div',
    { class: 'table-scroll' },
    h(
      'table',
      { id: 'node-table', class: 'compact' },
      h('caption', { class: 'sr-only' }, 'Nodes, one row each'),
      h('thead', null, h('tr', null, COMPACT_COLUMNS.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, rows),
    ),
  );
}

function cardsText(s: NodeSummary): string {
  if (s.cards === 0) return 'no cards registered';
  const types = [...new Set(s.node.devices.map((d) => d.type))];
  return `${s.cards} × ${types.length === 1 ? types[0] : `${types.length} types`}`;
}

/** What needs a look on a node, in words (and the same order as the default sort). */
function nodeFlags(s: NodeSummary): HTMLElement | null {
  const flags = [
    s.overcommitted > 0 ? h('span', { class: 'flag bad', 'data-flag': 'overcommitted' }, `${s.overcommitted} over-committed`) : null,
    s.unhealthy > 0 ? h('span', { class: 'flag bad', 'data-flag': 'unhealthy' }, `${s.unhealthy} unhealthy`) : null,
    (s.node.problems ?? []).length > 0 ? h('span', { class: 'flag bad', 'data-flag': 'unreadable' }, 'state unreadable') : null,
    s.node.lock ? h('span', { class: 'flag warn', 'data-flag': 'lock' }, 'allocation in progress: ', lockHolder(s.node.lock)) : null,
  ].filter((x) => x !== null);
  return flags.length === 0 ? null : h('span', { class: 'flags' }, flags);
}

function cardsRow(s: NodeSummary, f: Filters): HTMLElement {
  return h('tr', { class: 'cards-row', 'data-cards-of': s.node.name }, h('td', { colspan: COMPACT_COLUMNS.length }, nodeNotes(s.node), cardTable(s.node, f)));
}

function nodeNotes(node: NodeDevicesView): (HTMLElement | null)[] {
  return [
    node.reason !== undefined ? h('p', { class: 'bad reason' }, `Not scheduled: ${node.reason}`) : null,
    ...(node.problems ?? []).map((p) => h('p', { class: 'bad' }, `${p.part}: ${p.problem}`)),
    node.realtime ? h('p', { class: 'muted' }, `Real-time usage reported ${node.realtime.ageSeconds}s ago`) : null,
  ];
}

function nodeSection(node: NodeDevicesView, f: Filters): HTMLElement {
  const header = h(
    'h2',
    null,
    node.name,
    ' ',
    node.registered ? badge('registered') : badge('unregistered'),
    node.lock ? h('span', { class: 'lock' }, ` allocation in progress: `, lockHolder(node.lock), ` holds the node lock since ${node.lock.since}`) : null,
  );
  return h('section', { class: 'node', 'data-node': node.name }, header, nodeNotes(node), cardTable(node, f));
}

function cardTable(node: NodeDevicesView, f: Filters): HTMLElement {
  if (node.devices.length === 0) return h('p', { class: 'muted' }, 'no cards registered');
  const rows = node.devices.map((d) =>
    h(
      'tr',
      { 'data-card': d.id, class: (f.type !== '' && d.type !== f.type) || d.freemem < f.minFree ? 'dim' : undefined },
      h('td', null, String(d.index)),
      h('td', { class: 'mono card-id' }, d.id),
      h('td', null, d.type),
      h('td', null, d.health ? 'healthy' : h('span', { class: 'bad' }, 'unhealthy'), d.overcommitted ? h('div', { class: 'bad', 'data-overcommitted': d.id }, `over-committed: ${d.overcommitted.join(', ')}`) : null),
      d.coreIndexes !== undefined
        ? h('td', { class: 'muted' }, 'not booked')
        : h('td', null, meter(`memory ${d.id}`, d.usedmem, d.devmem, memoryText(d.usedmem, d.devmem)), d.realtime ? h('div', { class: 'muted' }, `measured ${memoryText(d.realtime.usedmem, d.realtime.totalmem)}`) : null),
      d.coreIndexes !== undefined
        ? h(
            'td',
            null,
            meter(`NeuronCores ${d.id}`, d.coreIndexes.used.length, d.coreIndexes.used.length + d.coreIndexes.free.length, `${d.coreIndexes.used.length} of ${d.coreIndexes.used.length + d.coreIndexes.free.length} NeuronCores`),
            h('div', { class: 'muted' }, d.coreIndexes.used.length === 0 ? 'all cores free' : `in use: ${d.coreIndexes.used.join(', ')}`),
          )
        : h('td', null, meter(`cores ${d.id}`, d.usedcores, d.devcore, coresText(d.usedcores, d.devcore, 'card'))),
      h('td', { 'data-usage': `slots ${d.id}` }, `${d.used} of ${d.count}`),
      h('td', null, podsOf(d)),
    ),
  );
  return h(
    'table',
    { class: 'cards' },
    h('caption', { class: 'sr-only' }, `Cards of ${node.name}`),
    h('thead', null, h('tr', null, ['#', 'Card', 'Type', 'Health', 'Memory booked', 'Cores booked', 'Slots', 'Pods'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, rows),
  );
}

/**
 * The relay names no pod of a namespace the user may not read (docs/api.md §10): a lock held by one says so, a card
 * counts them (`hiddenPods`).
 */
function lockHolder(lock: { readonly holder?: string }): HTMLElement | string {
  return lock.holder !== undefined ? link(['pods', ...splitPod(lock.holder)], lock.holder) : 'a pod in a namespace you may not read';
}

function podsOf(card: { readonly pods: readonly string[]; readonly hiddenPods?: number; readonly bindFailed?: readonly string[] }): HTMLElement {
  const hidden = card.hiddenPods ?? 0;
  if (card.pods.length === 0 && hidden === 0) return h('span', { class: 'muted' }, 'none');
  return h(
    'ul',
    { class: 'pods' },
    // A pod whose bind failed is still booked until released: marked, so it does not read as running here.
    card.pods.map((p) => h('li', null, link(['pods', ...splitPod(p)], p), card.bindFailed?.includes(p) === true ? [' ', outcomeBadge(Outcome.BindFailed)] : null)),
    hidden > 0 ? h('li', { class: 'muted', 'data-hidden-pods': String(hidden) }, `${hidden} in namespaces you may not read`) : null,
  );
}

/** `namespace/name` into its two parts (a pod name has no slash). */
export function splitPod(ref: string): [string, string] {
  const at = ref.indexOf('/');
  return at < 0 ? ['default', ref] : [ref.slice(0, at), ref.slice(at + 1)];
}
