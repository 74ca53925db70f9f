/**
 * A pod's page: the whole scheduler log (docs/api.md §5), answer first. Outcome and one-sentence answer with its
 * hint at the top, then the per-node reasons, the per-card evidence, the bind phase, every hint and the attempt
 * history. A pod without a record says so, with the debugging decision tree when the server could walk it.
 */
import { chosenPhrase, coresPhrase, mismatchPhrase, otherKindsPhrase, podRequestPhrases, preemptedByPhrase, preemptionPhrases, requestPhrase } from '../../diagnostics/phrases';
import type { CardEvidenceLog, ContainerLog, SchedulerLog } from '../../diagnostics/schedulerLog';
import { aheadPhrase, leastBusyPhrase, outcomeClass, outcomeOf, passedOverPhrase, sentenceStart, viewAgePhrase } from '../../diagnostics/vocabulary';
import { ApiError, getJson } from './api';
import { badge, bar, h, outcomeBadge, replace } from './dom';

/** What the relay adds to a 404 when it could read the pod (lib/diagnostics/decisionTree.ts). */
interface NotFoundBody {
  readonly message?: string;
  readonly diagnosis?: { readonly steps: readonly { question: string; answer: string; ok: boolean }[]; readonly explanation: string; readonly advice: string };
}

export async function renderPod(main: HTMLElement, namespace: string, name: string): Promise<void> {
  const path = `api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}/schedulerlog?detail=devices&history=true`;
  let log: SchedulerLog;
  try {
    log = await getJson<SchedulerLog>(path);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return renderNoRecord(main, namespace, name, err);
    throw err;
  }
  const hint = log.answer?.code !== undefined ? log.hints.find((x) => x.code === log.answer?.code) : undefined;
  const outcome = outcomeOf(log);
  const requests = podRequestPhrases(log.filter.nodes);
  replace(
    main,
    h('h1', null, `${log.pod.namespace}/${log.pod.name}`),
    h(
      'section',
      { class: `answer ${outcomeClass(outcome)}`, id: 'answer', 'aria-label': 'Answer' },
      h('p', null, outcomeBadge(outcome), ' ', h('span', { id: 'answer-sentence' }, log.answer?.sentence ?? log.filter.summary)),
      // The request, always in view beside the answer (not only in the per-card evidence further down).
      requests.length > 0 ? h('p', { class: 'request', id: 'answer-request' }, h('strong', null, 'Request: '), requests.join('; ')) : null,
      hint
        ? h('div', { class: 'hint', id: 'answer-hint' }, h('p', null, h('strong', null, hint.code), ': ', hint.meaning), h('p', null, h('strong', null, 'Cause: '), hint.cause), h('p', null, h('strong', null, 'Fix: '), hint.fix))
        : null,
    ),
    log.preemptedBy ? h('p', { class: 'warn', id: 'preempted-by' }, preemptedByPhrase(log.preemptedBy)) : null,
    h('p', { class: 'muted' }, `Attempt #${log.attempt} at ${log.time} (id ${log.attemptId}), uid ${log.pod.uid}`, log.view ? `; ${viewAgePhrase(log.view.ageMs)}` : ''),
    log.ahead ? h('p', { class: 'muted', id: 'ahead' }, aheadPhrase(log.ahead, log.bind.filterUsedAhead)) : null,
    h('h2', null, 'Filter'),
    h('p', null, badge(log.filter.status), ' ', log.filter.summary),
    (log.filter.passedOver ?? []).map((p) => h('p', { class: 'warn' }, sentenceStart(passedOverPhrase(p)))),
    log.filter.leastBusy !== undefined ? h('p', { class: 'warn', id: 'least-busy' }, sentenceStart(leastBusyPhrase(log.filter.leastBusy))) : null,
    log.filter.evidenceNote !== undefined ? h('p', { class: 'muted', id: 'evidence-note' }, log.filter.evidenceNote) : null,
    preemptionSection(log),
    nodesTable(log),
    evidence(log),
    h('h2', null, 'Bind'),
    h('p', { id: 'bind' }, badge(log.bind.status), ' ', log.bind.summary === '' ? (log.bind.status === 'pending' ? 'not attempted yet' : '') : log.bind.summary, log.bind.node ? ` (node ${log.bind.node}${log.bind.time ? `, ${log.bind.time}` : ''})` : ''),
    log.hints.length > 0 ? [h('h2', null, 'What it means'), h('dl', { class: 'hints' }, log.hints.map((x) => [h('dt', null, x.code), h('dd', null, x.meaning, h('br'), h('em', null, 'Cause: '), x.cause, h('br'), h('em', null, 'Fix: '), x.fix)]))] : null,
    h('h2', null, 'Attempt history'),
    (log.history ?? []).length === 0
      ? h('p', { class: 'muted' }, 'No earlier attempt.')
      : h('table', { id: 'history' }, h('thead', null, h('tr', null, ['#', 'Time', 'Outcome', 'Summary'].map((c) => h('th', { scope: 'col' }, c)))), h('tbody', null, (log.history ?? []).map((a) => h('tr', null, h('td', null, String(a.attempt)), h('td', { class: 'mono' }, a.time), h('td', null, outcomeBadge(outcomeOf(a))), h('td', null, a.filter.status === 'failed' ? a.filter.summary : a.bind.status === 'failed' ? `bind: ${a.bind.summary}` : a.filter.summary))))),
  );
}

/** GPU-aware preemption for this pod (docs/preemption.md): what it does, each victim and what it held, why this plan. */
function preemptionSection(log: SchedulerLog): HTMLElement | null {
  if (log.filter.preemption === undefined) return null;
  const words = preemptionPhrases(log.filter.preemption);
  return h(
    'section',
    { id: 'preemption', 'aria-label': 'Preemption' },
    h('h3', null, 'Preemption'),
    h('p', null, words.summary),
    words.victims.length > 0 ? h('ul', { id: 'preemption-victims' }, words.victims.map((v) => h('li', null, v))) : null,
    words.spared !== undefined ? h('p', { class: 'muted' }, words.spared) : null,
    words.why !== undefined ? h('p', { class: 'muted' }, h('em', null, 'Why this plan: '), words.why) : null,
  );
}

function nodesTable(log: SchedulerLog): HTMLElement | null {
  if (log.filter.nodes.length === 0) return null;
  const rows = log.filter.nodes.flatMap((node) => {
    const nodeCells = [h('td', null, node.name), h('td', null, badge(node.status)), h('td', null, node.status === 'passed' ? String(node.score) : '-')];
    if (node.containers.length === 0) return [h('tr', { 'data-node': node.name }, nodeCells, h('td', null, '-'), h('td', null, '-'), h('td', { class: 'reason' }, reasonLines(node.reason ?? '')))];
    return node.containers.map((c, i) =>
      h('tr', { 'data-node': node.name }, i === 0 ? nodeCells : [h('td'), h('td'), h('td')], h('td', null, c.init ? `${c.name} (init)` : c.name), h('td', null, badge(c.status)), h('td', { class: 'reason' }, reasonLines(c.reason ?? ''))),
    );
  });
  return h('table', { id: 'nodes' }, h('caption', { class: 'sr-only' }, 'Per-node reasons'), h('thead', null, h('tr', null, ['Node', 'Status', 'Score', 'Container', 'Result', 'Reason'].map((c) => h('th', { scope: 'col' }, c)))), h('tbody', null, rows));
}

/** HAMi's `x/y Reason` pieces, one per line. */
function reasonLines(reason: string): (Node | string)[] {
  return reason.split(', ').flatMap((piece, i) => (i === 0 ? [piece] : [h('br'), piece]));
}

function evidence(log: SchedulerLog): HTMLElement[] {
  const out: HTMLElement[] = [];
  for (const node of log.filter.nodes) {
    // Devices of another kind than the pod asks for, which no container tried: said, not left out silently.
    const others = otherKindsPhrase(node.otherKinds, node.containers.find((c) => c.request !== undefined)?.request?.type);
    if (others !== '') out.push(h('p', { class: 'muted other-kinds', 'data-node': node.name }, `${node.name}: ${others}`));
    for (const c of node.containers) {
      if (c.devices === undefined || c.devices.length === 0) continue;
      const req = c.request;
      out.push(
        h(
          'details',
          { class: 'evidence', 'data-node': node.name },
          h('summary', null, `Cards of ${node.name} tried for ${c.name}`, req ? `: ${requestPhrase(req)}` : ''),
          h(
            'table',
            null,
            h('thead', null, h('tr', null, ['#', 'Card', 'Outcome', 'Memory used / total', '+asked', 'Cores used / total', '+asked', 'Slots'].map((x) => h('th', { scope: 'col' }, x)))),
            h('tbody', null, c.devices.map((d) => h('tr', null, h('td', null, String(d.index)), h('td', { class: 'mono' }, d.uuid), h('td', { class: d.outcome === 'Fit' ? 'good' : 'bad' }, d.outcome, mismatchOf(d, log, req)), d.coreIndexes !== undefined ? h('td', { class: 'muted' }, 'not booked') : h('td', null, bar(`memory ${d.uuid}`, d.usedMem, d.totalMem, 'MiB')), h('td', null, d.coreIndexes !== undefined ? '-' : String(d.requestedMem)), h('td', null, d.coreIndexes !== undefined ? coresPhrase(d.usedCores, d.totalCores, d.coreIndexes) : bar(`cores ${d.uuid}`, d.usedCores, d.totalCores, '%')), h('td', null, String(d.requestedCores)), h('td', null, `${d.usedSlots} / ${d.slots}`)))),
          ),
          (c.chosen ?? []).map((x) => h('p', null, `Chosen: ${chosenPhrase(x)}`)),
        ),
      );
    }
  }
  return out.length === 0 ? [] : [h('h2', null, 'Per-card evidence'), ...out];
}

/** Both sides of a mismatch under the card's outcome (`card type NVIDIA-T4; the pod asks for A100`), when known. */
function mismatchOf(card: CardEvidenceLog, log: SchedulerLog, request: ContainerLog['request']): HTMLElement | null {
  const phrase = mismatchPhrase(card, log.filter.selectors, request);
  return phrase === '' ? null : h('div', { class: 'mismatch' }, phrase);
}

function renderNoRecord(main: HTMLElement, namespace: string, name: string, err: ApiError): void {
  const body = err.body as NotFoundBody | undefined;
  const tree = body?.diagnosis;
  replace(
    main,
    h('h1', null, `${namespace}/${name}`),
    h(
      'section',
      { class: 'answer pending', id: 'answer', 'aria-label': 'Answer' },
      h('p', null, badge('no record'), ' ', h('span', { id: 'answer-sentence' }, tree ? tree.explanation : err.message)),
      tree ? h('div', { class: 'hint', id: 'answer-hint' }, h('p', null, h('strong', null, 'Next: '), tree.advice)) : h('p', { class: 'muted' }, `The scheduler has no record of this pod: it was never filtered, asks for no GPU, or its record expired. Run hami-diag pod ${name} -n ${namespace} to walk the debugging decision tree with your kubeconfig.`),
    ),
    tree ? h('ol', { class: 'tree' }, tree.steps.map((s) => h('li', { class: s.ok ? 'good' : 'bad' }, `${s.question} `, h('strong', null, s.answer)))) : null,
  );
}
