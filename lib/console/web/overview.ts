/**
 * Cluster overview: every node and card, usage as bars with the numbers beside them, pods per card, locks,
 * real-time readings, unregistered nodes with their reasons, totals; filtered by node name, card type and free
 * memory. All nodes are loaded once (GET /api/v1/nodes, every page); totals and filters run over them in memory,
 * and one page of nodes is drawn at a time, so 1,000 nodes x 8 cards stay responsive.
 */
import type { NodeDevicesView } from '../../control/views';
import { listAll } from './api';
import { badge, bar, h, link, replace } from './dom';

export const NODES_PER_PAGE = 50;
const MAX_NODES = 20_000;

interface Filters {
  name: string;
  type: string;
  minFree: number;
  page: number;
}

export async function renderOverview(main: HTMLElement): Promise<void> {
  const listed = await listAll<NodeDevicesView>('api/v1/nodes', MAX_NODES);
  // node2 before node10: names sorted as a person reads them.
  const nodes = listed.items.sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }));
  const truncated = listed.truncated;
  const filters: Filters = { name: '', type: '', minFree: 0, page: 0 };
  const types = [...new Set(nodes.flatMap((n) => n.devices.map((d) => d.type)))].sort();

  const nameInput = h('input', { type: 'search', id: 'filter-name', placeholder: 'node name contains', 'aria-label': 'Filter by node name' });
  const typeSelect = h('select', { id: 'filter-type', 'aria-label': 'Filter by card type' }, h('option', { value: '' }, 'every card type'), types.map((t) => h('option', { value: t }, t)));
  const freeInput = h('input', { type: 'number', id: 'filter-free', min: 0, step: 1024, placeholder: '0', 'aria-label': 'Minimum free memory on a card, MiB' });
  const list = h('div', { id: 'nodes' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Node pages' });
  const shown = h('p', { class: 'muted', id: 'shown' });

  const draw = () => {
    const matching = nodes.filter((n) => matches(n, filters));
    const pages = Math.max(1, Math.ceil(matching.length / NODES_PER_PAGE));
    filters.page = Math.min(filters.page, pages - 1);
    const from = filters.page * NODES_PER_PAGE;
    replace(shown, `${matching.length} of ${nodes.length} nodes match; showing ${matching.length === 0 ? 0 : from + 1}–${Math.min(from + NODES_PER_PAGE, matching.length)}`);
    replace(list, matching.slice(from, from + NODES_PER_PAGE).map((n) => nodeSection(n, filters)));
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
  const onFilter = () => {
    filters.name = nameInput.value.trim();
    filters.type = typeSelect.value;
    filters.minFree = Number(freeInput.value) > 0 ? Number(freeInput.value) : 0;
    filters.page = 0;
    draw();
  };
  nameInput.addEventListener('input', onFilter);
  typeSelect.addEventListener('change', onFilter);
  freeInput.addEventListener('input', onFilter);

  replace(
    main,
    h('h1', null, 'Cluster overview'),
    truncated ? h('p', { class: 'warn' }, `Only the first ${MAX_NODES} nodes are shown.`) : null,
    totals(nodes),
    h('form', { class: 'filters', role: 'search' }, h('label', null, 'Node ', nameInput), h('label', null, 'Card type ', typeSelect), h('label', null, 'Free memory at least (MiB) ', freeInput)),
    shown,
    list,
    pager,
  );
  draw();
}

function matches(node: NodeDevicesView, f: Filters): boolean {
  if (f.name !== '' && !node.name.includes(f.name)) return false;
  if (f.type === '' && f.minFree === 0) return true;
  return node.devices.some((d) => (f.type === '' || d.type === f.type) && d.freemem >= f.minFree);
}

function totals(nodes: readonly NodeDevicesView[]): HTMLElement {
  let cards = 0;
  let mem = 0;
  let memUsed = 0;
  let cores = 0;
  let coresUsed = 0;
  let slots = 0;
  let slotsUsed = 0;
  let unhealthy = 0;
  let overcommitted = 0;
  let neuronCores = 0;
  let neuronCoresUsed = 0;
  for (const node of nodes) {
    for (const d of node.devices) {
      cards++;
      slots += d.count;
      slotsUsed += d.used;
      if (!d.health) unhealthy++;
      if (d.overcommitted) overcommitted++;
      // Cores taken by index (AWS Neuron) are masks, not percentages, and such devices book no memory: counted apart.
      if (d.coreIndexes !== undefined) {
        neuronCores += d.coreIndexes.used.length + d.coreIndexes.free.length;
        neuronCoresUsed += d.coreIndexes.used.length;
        continue;
      }
      mem += d.devmem;
      memUsed += d.usedmem;
      cores += d.devcore;
      coresUsed += d.usedcores;
    }
  }
  const registered = nodes.filter((n) => n.registered).length;
  const locked = nodes.filter((n) => n.lock !== null).length;
  return h(
    'section',
    { class: 'totals', 'aria-label': 'Totals', id: 'totals' },
    h('div', null, h('strong', null, 'Nodes '), `${registered} registered of ${nodes.length}`, nodes.length > registered ? h('span', { class: 'bad' }, ` (${nodes.length - registered} unregistered)`) : null),
    h('div', null, h('strong', null, 'Cards '), `${cards}`, unhealthy > 0 ? h('span', { class: 'bad' }, ` (${unhealthy} unhealthy)`) : null, overcommitted > 0 ? h('span', { class: 'bad' }, ` (${overcommitted} over-committed)`) : null, locked > 0 ? h('span', { class: 'warn' }, ` · ${locked} allocation${locked === 1 ? '' : 's'} in progress`) : null),
    h('div', null, h('strong', null, 'Memory '), bar('total memory', memUsed, mem, 'MiB')),
    h('div', null, h('strong', null, 'Cores '), bar('total cores', coresUsed, cores, '%')),
    h('div', null, h('strong', null, 'Slots '), bar('total slots', slotsUsed, slots, '')),
    neuronCores > 0 ? h('div', null, h('strong', null, 'NeuronCores '), bar('total NeuronCores', neuronCoresUsed, neuronCores, '')) : null,
  );
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
  const notes = [
    node.reason !== undefined ? h('p', { class: 'bad reason' }, `Not scheduled: ${node.reason}`) : null,
    ...(node.problems ?? []).map((p) => h('p', { class: 'bad' }, `${p.part}: ${p.problem}`)),
    node.realtime ? h('p', { class: 'muted' }, `Real-time usage reported ${node.realtime.ageSeconds}s ago`) : null,
  ];
  if (node.devices.length === 0) return h('section', { class: 'node', 'data-node': node.name }, header, notes, h('p', { class: 'muted' }, 'no cards registered'));
  const rows = node.devices.map((d) =>
    h(
      'tr',
      { 'data-card': d.id, class: (f.type !== '' && d.type !== f.type) || d.freemem < f.minFree ? 'dim' : undefined },
      h('td', null, String(d.index)),
      h('td', { class: 'mono' }, d.id),
      h('td', null, d.type),
      h('td', null, d.health ? 'healthy' : h('span', { class: 'bad' }, 'unhealthy'), d.overcommitted ? h('div', { class: 'bad', 'data-overcommitted': d.id }, `over-committed: ${d.overcommitted.join(', ')}`) : null),
      d.coreIndexes !== undefined
        ? h('td', { class: 'muted' }, 'not booked')
        : h('td', null, bar(`memory ${d.id}`, d.usedmem, d.devmem, 'MiB'), d.realtime ? h('div', { class: 'muted' }, `measured ${d.realtime.usedmem} / ${d.realtime.totalmem} MiB`) : null),
      d.coreIndexes !== undefined
        ? h(
            'td',
            null,
            bar(`NeuronCores ${d.id}`, d.coreIndexes.used.length, d.coreIndexes.used.length + d.coreIndexes.free.length, 'NeuronCores'),
            h('div', { class: 'muted' }, d.coreIndexes.used.length === 0 ? 'all cores free' : `in use: ${d.coreIndexes.used.join(', ')}`),
          )
        : h('td', null, bar(`cores ${d.id}`, d.usedcores, d.devcore, '%')),
      h('td', { 'data-usage': `slots ${d.id}` }, `${d.used} / ${d.count}`),
      h('td', null, podsOf(d)),
    ),
  );
  return h(
    'section',
    { class: 'node', 'data-node': node.name },
    header,
    notes,
    h(
      'table',
      null,
      h('caption', { class: 'sr-only' }, `Cards of ${node.name}`),
      h('thead', null, h('tr', null, ['#', 'Card', 'Type', 'Health', 'Memory used / total', 'Cores used / total', 'Slots used / count', 'Pods'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, rows),
    ),
  );
}

/** `namespace/name` into its two parts (a pod name has no slash). */
/**
 * The relay names no pod of a namespace the user may not read (docs/api.md §10): a lock held by one says so, a card
 * counts them (`hiddenPods`).
 */
function lockHolder(lock: { readonly holder?: string }): HTMLElement | string {
  return lock.holder !== undefined ? link(['pods', ...splitPod(lock.holder)], lock.holder) : 'a pod in a namespace you may not read';
}

function podsOf(card: { readonly pods: readonly string[]; readonly hiddenPods?: number }): HTMLElement {
  const hidden = card.hiddenPods ?? 0;
  if (card.pods.length === 0 && hidden === 0) return h('span', { class: 'muted' }, 'none');
  return h(
    'ul',
    { class: 'pods' },
    card.pods.map((p) => h('li', null, link(['pods', ...splitPod(p)], p))),
    hidden > 0 ? h('li', { class: 'muted', 'data-hidden-pods': String(hidden) }, `${hidden} in namespaces you may not read`) : null,
  );
}

export function splitPod(ref: string): [string, string] {
  const at = ref.indexOf('/');
  return at < 0 ? ['default', ref] : [ref.slice(0, at), ref.slice(at + 1)];
}
