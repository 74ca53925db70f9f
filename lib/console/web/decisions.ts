/**
 * Recent scheduling decisions: the latest attempt of every pod the user may read (GET /api/v1/schedulerlogs, or
 * one namespace's), newest first, filtered by namespace, outcome and reason code, a page at a time. Every pod
 * is a link to its page.
 */
import type { SchedulerLogSummary } from '../../diagnostics/summary';
import { listAll } from './api';
import { OUTCOMES, outcomeOf } from '../../diagnostics/vocabulary';
import { h, link, outcomeBadge, replace } from './dom';

const PER_PAGE = 100;
const MAX_ITEMS = 10_000;

export interface DecisionFilters {
  readonly namespace: string;
  readonly outcome: string;
  readonly reason: string;
}

export async function renderDecisions(main: HTMLElement, query: URLSearchParams): Promise<void> {
  const initial: DecisionFilters = { namespace: query.get('namespace') ?? '', outcome: query.get('outcome') ?? '', reason: query.get('reason') ?? '' };
  // A namespace named up front is listed alone (a user with rights in one namespace only lists that one).
  const path = initial.namespace !== '' ? `api/v1/namespaces/${encodeURIComponent(initial.namespace)}/schedulerlogs` : 'api/v1/schedulerlogs';
  const { items, truncated } = await listAll<SchedulerLogSummary>(path, MAX_ITEMS);
  const all = [...items].sort((a, b) => b.time.localeCompare(a.time) || a.pod.name.localeCompare(b.pod.name));
  const namespaces = [...new Set(all.map((i) => i.pod.namespace))].sort();
  const reasons = [...new Set(all.flatMap((i) => i.filter.reasons.map((r) => r.code).concat(i.answer.code ?? [])))].sort();
  let page = 0;

  const nsSelect = select('filter-namespace', 'Namespace', 'every namespace', namespaces, initial.namespace);
  const outcomeSelect = select('filter-outcome', 'Outcome', 'every outcome', OUTCOMES, initial.outcome);
  const reasonSelect = select('filter-reason', 'Reason code', 'every reason', reasons, initial.reason);
  const table = h('tbody');
  const shown = h('p', { class: 'muted', id: 'shown' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Decision pages' });

  const draw = () => {
    const f = { namespace: nsSelect.value, outcome: outcomeSelect.value, reason: reasonSelect.value };
    const matching = all.filter((i) => (f.namespace === '' || i.pod.namespace === f.namespace) && (f.outcome === '' || outcomeOf(i) === f.outcome) && (f.reason === '' || i.answer.code === f.reason || i.filter.reasons.some((r) => r.code === f.reason)));
    const pages = Math.max(1, Math.ceil(matching.length / PER_PAGE));
    page = Math.min(page, pages - 1);
    replace(shown, `${matching.length} of ${all.length} pods match`);
    replace(
      table,
      matching.slice(page * PER_PAGE, (page + 1) * PER_PAGE).map((i) =>
        h(
          'tr',
          { 'data-pod': `${i.pod.namespace}/${i.pod.name}` },
          h('td', { class: 'mono col-time' }, i.time),
          h('td', { class: 'col-namespace' }, i.pod.namespace),
          h('td', { class: 'col-pod' }, link(['pods', i.pod.namespace, i.pod.name], i.pod.name)),
          h('td', { class: 'col-outcome' }, outcomeBadge(outcomeOf(i))),
          h('td', { class: 'col-reason' }, i.answer.code ?? i.filter.reasons[0]?.code ?? ''),
          h('td', { class: 'col-answer' }, i.answer.sentence),
        ),
      ),
    );
    replace(
      pager,
      h('button', { type: 'button', id: 'prev-page', disabled: page === 0 }, 'Previous'),
      h('span', null, ` page ${page + 1} of ${pages} `),
      h('button', { type: 'button', id: 'next-page', disabled: page >= pages - 1 }, 'Next'),
    );
  };
  pager.addEventListener('click', (event) => {
    const id = (event.target as HTMLElement).id;
    if (id === 'prev-page') page--;
    else if (id === 'next-page') page++;
    else return;
    draw();
  });
  for (const s of [nsSelect, outcomeSelect, reasonSelect]) {
    s.addEventListener('change', () => {
      page = 0;
      draw();
    });
  }
  replace(
    main,
    h('h1', null, 'Scheduling decisions'),
    h('p', { class: 'muted' }, 'The latest attempt of each pod whose scheduler log you may read (kept 24 hours by default).'),
    truncated ? h('p', { class: 'warn' }, `Only the first ${MAX_ITEMS} pods are shown.`) : null,
    h('form', { class: 'filters', role: 'search' }, nsSelect.parentElement, outcomeSelect.parentElement, reasonSelect.parentElement),
    shown,
    // Wider than the window, the table scrolls sideways rather than break a timestamp or a reason code mid-word.
    h(
      'div',
      { class: 'table-scroll' },
      h(
        'table',
        { id: 'decisions' },
        h('thead', null, h('tr', null, ['Time', 'Namespace', 'Pod', 'Outcome', 'Reason', 'Answer'].map((c) => h('th', { scope: 'col', class: `col-${c.toLowerCase()}` }, c)))),
        table,
      ),
    ),
    pager,
  );
  draw();
}

function select(id: string, label: string, any: string, values: readonly string[], selected: string): HTMLSelectElement {
  const el = h('select', { id }, h('option', { value: '' }, any), values.map((v) => h('option', { value: v, selected: v === selected }, v)));
  if (selected !== '' && !values.includes(selected)) el.append(h('option', { value: selected, selected: true }, selected));
  h('label', null, `${label} `, el);
  return el;
}
