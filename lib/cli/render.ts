/**
 * hami-diag's text output: pure functions from API data to the string printed. Golden-tested.
 */
import type { NodeDevices } from '../diagnostics/nodeDevices';
import type { AttemptLog, CardEvidenceLog, ContainerLog, NodeLog, SchedulerLog } from '../diagnostics/schedulerLog';
import { chosenPhrase, coresPhrase, mismatchPhrase, otherKindsPhrase, podRequestPhrases, preemptedByPhrase, preemptionPhrases, requestPhrase } from '../diagnostics/phrases';
import { aheadPhrase, leastBusyPhrase, Outcome, outcomeOf, outcomeTone, passedOverPhrase, viewAgePhrase } from '../diagnostics/vocabulary';
import type { TreeResult } from '../diagnostics/decisionTree';
import { plain, statusTone, table, type Cell, type Styler } from './style';

export interface RenderStyle {
  readonly style?: Styler;
}

export function renderSchedulerLogText(log: SchedulerLog, opts: RenderStyle = {}): string {
  const style = opts.style ?? plain;
  const out: string[] = [];
  out.push(...attemptHeader(log, style), '');
  out.push(...filterSection(log, style));
  out.push('', `${style('strong', 'Bind')}      ${bindLine(log, style)}`);
  const detail = devicesSection(log, style);
  if (detail.length > 0) out.push('', ...detail);
  if (log.hints.length > 0) {
    out.push('', style('strong', 'What it means'));
    for (const hint of log.hints) {
      out.push(`  ${style('strong', hint.code)}: ${hint.meaning}`, `    cause: ${hint.cause}`, `    fix:   ${hint.fix}`);
    }
  }
  if (log.history !== undefined) {
    out.push('', style('strong', 'Earlier attempts'));
    if (log.history.length === 0) out.push('  none');
    for (const earlier of log.history) {
      const outcome = outcomeOf(earlier);
      out.push(`  #${earlier.attempt}  ${earlier.time}  ${style(outcomeTone(outcome), outcome)}  ${attemptSummary(earlier)}`);
    }
  }
  return `${out.join('\n')}\n`;
}

/** A view at least this old is worth a word on the attempt line. */
const STALE_VIEW_MS = 1000;

function attemptHeader(log: SchedulerLog, style: Styler): string[] {
  const outcome = outcomeOf(log);
  const requests = podRequestPhrases(log.filter.nodes);
  return [
    `${style('strong', 'Pod')}       ${log.pod.namespace}/${log.pod.name}  (uid ${log.pod.uid})`,
    // How fresh the view was, as the console says it, when that matters: a second or more (a decision made ahead, say).
    `${style('strong', 'Attempt')}   #${log.attempt} at ${log.time}  (id ${log.attemptId})${log.view && log.view.ageMs >= STALE_VIEW_MS ? `; ${viewAgePhrase(log.view.ageMs)}` : ''}`,
    ...(log.ahead ? [`${style('strong', 'Ahead')}     ${aheadPhrase(log.ahead, log.bind.filterUsedAhead)}`] : []),
    `${style('strong', 'Status')}    ${style(outcomeTone(outcome), outcome)}`,
    // The one-sentence answer (lib/diagnostics/answer.ts), as the console shows it at the top of a pod page.
    ...(log.answer ? [`${style('strong', 'Answer')}    ${log.answer.sentence}`] : []),
    // A victim of GPU-aware preemption says so first (docs/preemption.md).
    ...(log.preemptedBy ? [`${style('strong', 'Victim')}    ${preemptedByPhrase(log.preemptedBy)}`] : []),
    // What the pod asks for, beside the answer, as on the console's pod page (with --detail, where the log carries it).
    ...requests.map((request, i) => `${i === 0 ? style('strong', 'Request') : '       '}   ${request}`),
  ];
}

function filterSection(log: AttemptLog, style: Styler): string[] {
  const lines = [`${style('strong', 'Filter')}    ${style(statusTone(log.filter.status), log.filter.status)}  ${log.filter.summary}`];
  // Lock-aware placement: the nodes HAMi would have taken first, busy with another pod's allocation (docs/locks.md).
  for (const passed of log.filter.passedOver ?? []) lines.push(`          ${passedOverPhrase(passed)}`);
  if (log.filter.leastBusy !== undefined) lines.push(`          ${leastBusyPhrase(log.filter.leastBusy)}`);
  if (log.filter.evidenceNote !== undefined) lines.push(`          ${style('dim', log.filter.evidenceNote)}`);
  if (log.filter.preemption !== undefined) {
    const words = preemptionPhrases(log.filter.preemption);
    lines.push(`${style('strong', 'Preemption')} ${words.summary}`);
    for (const victim of words.victims) lines.push(`          victim ${victim}`);
    if (words.spared !== undefined) lines.push(`          ${words.spared}`);
    if (words.why !== undefined) lines.push(`          why: ${words.why}`);
  }
  if (log.filter.nodes.length === 0) return lines;
  const rows = log.filter.nodes.flatMap((node) => nodeRows(node));
  return [...lines, '', ...table(['NODE', 'STATUS', 'SCORE', 'CONTAINER', 'RESULT', 'REASON'], rows, style)];
}

function nodeRows(node: NodeLog): Cell[][] {
  const nodeCells: Cell[] = [
    { text: node.name },
    { text: node.status, tone: statusTone(node.status) },
    { text: node.status === 'passed' ? String(node.score) : '-' },
  ];
  const blank: Cell[] = [{ text: '' }, { text: '' }, { text: '' }];
  if (node.containers.length === 0) {
    return reasonLines(node.reason ?? '').map((piece, i) => [...(i === 0 ? nodeCells : blank), { text: '-' }, { text: '-' }, { text: piece }]);
  }
  return node.containers.flatMap((container, c) =>
    reasonLines(container.reason ?? '').map((piece, i) => {
      const containerCells: Cell[] =
        i === 0 ? [{ text: containerLabel(container) }, { text: container.status, tone: statusTone(container.status) }] : [{ text: '' }, { text: '' }];
      return [...(c === 0 && i === 0 ? nodeCells : blank), ...containerCells, { text: piece }];
    }),
  );
}

function containerLabel(container: ContainerLog): string {
  return container.init ? `${container.name} (init)` : container.name;
}

/** One `x/y Reason` piece per line, in HAMi's order; other texts stay whole. */
function reasonLines(reason: string): string[] {
  return reason === '' ? [''] : reason.split(', ');
}

function bindLine(log: AttemptLog, style: Styler): string {
  const where = [log.bind.node, log.bind.time].filter((part) => part !== undefined).join(', ');
  const summary = log.bind.summary === '' ? (log.bind.status === 'pending' ? 'not attempted' : '') : log.bind.summary;
  return `${style(statusTone(log.bind.status), log.bind.status)}  ${summary}${where === '' ? '' : `  (${where})`}`.trimEnd();
}

function attemptSummary(attempt: AttemptLog): string {
  if (attempt.filter.status === 'failed') return `filter: ${attempt.filter.summary}`;
  if (attempt.bind.status === 'failed') return `bind: ${attempt.bind.summary}`;
  return attempt.filter.summary;
}

function devicesSection(log: SchedulerLog, style: Styler): string[] {
  const out: string[] = [];
  for (const node of log.filter.nodes) {
    // Devices of another kind than the pod asks for, which no container tried: said, not left out silently.
    const others = otherKindsPhrase(node.otherKinds, node.containers.find((c) => c.request !== undefined)?.request?.type);
    if (others !== '') out.push(`${style('strong', 'Cards')}     ${node.name}: ${others}`);
    for (const container of node.containers) {
      if (container.devices === undefined || (container.devices.length === 0 && container.chosen === undefined)) continue;
      out.push(`${style('strong', 'Cards')}     ${node.name} / ${containerLabel(container)}${requestText(container)}`);
      if (container.devices.length > 0) {
        out.push(
          ...table(
            ['IDX', 'UUID', 'OUTCOME', 'MEM USED/TOTAL', '+REQ', 'CORES USED/TOTAL', '+REQ', 'SLOTS USED/COUNT'],
            container.devices.map((card) => cardRow(card)),
            style,
          ),
        );
      }
      // Both sides of each mismatch the table shows only as a code (lib/diagnostics/phrases.ts), once per text.
      const mismatches = new Map<string, number[]>();
      for (const card of container.devices) {
        const phrase = mismatchPhrase(card, log.filter.selectors, container.request);
        if (phrase !== '') mismatches.set(`${card.outcome}: ${phrase}`, [...(mismatches.get(`${card.outcome}: ${phrase}`) ?? []), card.index]);
      }
      for (const [text, indexes] of mismatches) out.push(`  ${indexes.length === 1 ? 'card' : 'cards'} ${indexes.join(',')} ${text}`);
      for (const chosen of container.chosen ?? []) {
        out.push(`  chosen: ${chosenPhrase(chosen)}`);
      }
    }
  }
  return out;
}

function requestText(container: ContainerLog): string {
  return container.request === undefined ? '' : `: ${requestPhrase(container.request)}`;
}

function cardRow(card: CardEvidenceLog): Cell[] {
  return [
    { text: String(card.index) },
    { text: card.uuid },
    { text: card.outcome, tone: card.outcome === 'Fit' ? 'good' : 'bad' },
    { text: card.coreIndexes !== undefined ? '-' : `${card.usedMem}/${card.totalMem}` },
    { text: card.coreIndexes !== undefined ? '-' : String(card.requestedMem) },
    { text: coresPhrase(card.usedCores, card.totalCores, card.coreIndexes) },
    { text: String(card.requestedCores) },
    { text: `${card.usedSlots}/${card.slots}` },
  ];
}

export interface NodeRenderOptions extends RenderStyle {
  /** Epoch milliseconds, to show how old the lock is. */
  readonly nowMs: number;
}

export function renderNodeDevicesText(view: NodeDevices, opts: NodeRenderOptions): string {
  const style = opts.style ?? plain;
  const out: string[] = [`${style('strong', 'Node')}         ${view.name}`];
  const registered = view.registered ? 'yes' : 'no';
  out.push(`${style('strong', 'Registered')}   ${style(statusTone(registered), registered)}${view.reason ? `  (${view.reason})` : ''}`);
  const allocatable = Object.entries(view.allocatable)
    .filter(([key]) => key.includes('/'))
    .map(([key, value]) => `${key}=${value}`)
    .join(', ');
  out.push(`${style('strong', 'Allocatable')}  ${allocatable === '' ? 'no extended resources' : allocatable}`);
  out.push(`${style('strong', 'Lock')}         ${lockText(view.lock, opts.nowMs, style)}`);
  if (view.devices.length === 0) {
    out.push('', '  no cards registered');
    return `${out.join('\n')}\n`;
  }
  const rows = view.devices.map((device): Cell[] => [
    { text: String(device.index) },
    { text: device.id },
    { text: device.type },
    { text: device.health ? 'ok' : 'unhealthy', tone: device.health ? 'good' : 'bad' },
    { text: String(device.numa) },
    { text: `${device.used}/${device.count}` },
    { text: device.coreIndexes !== undefined ? '-' : `${device.usedmem}/${device.devmem}` },
    { text: device.coreIndexes !== undefined ? '-' : String(device.devmem - device.usedmem) },
    { text: device.coreIndexes === undefined ? `${device.usedcores}/${device.devcore}` : coresPhrase(device.coreIndexes.used.length, device.coreIndexes.used.length + device.coreIndexes.free.length, device.coreIndexes) },
    { text: device.pods.length === 0 ? '-' : device.pods.map((pod) => (device.bindFailed?.includes(pod) ? `${pod} (${Outcome.BindFailed})` : pod)).join(', ') },
  ]);
  out.push('', ...table(['IDX', 'UUID', 'TYPE', 'HEALTH', 'NUMA', 'SLOTS', 'MEM USED/TOTAL', 'MEM FREE', 'CORES USED/TOTAL', 'PODS'], rows, style));
  for (const device of view.devices) {
    if (device.unhealthyReason !== undefined) out.push('', `  ${device.id}: ${style('bad', 'unhealthy')}: ${device.unhealthyReason}`);
    if (device.overcommitted !== undefined) {
      out.push('', `  ${device.id}: ${style('bad', 'over-committed')} (${device.overcommitted.join(', ')}): a pod adopted from its annotations claims more than the card has; no new pod is placed on it until it is back within its capacity`);
    }
    if (device.mig === undefined) continue;
    const profiles = device.mig.profiles.map((p) => `${p.name} (${p.memoryMB} MiB, ${p.core} cores) ${p.free} of ${p.placements} placements free`).join(', ');
    const inUse = device.mig.inUse.map((u) => `slices ${u.start}-${u.start + u.size - 1} ${u.pod}`).join(', ');
    out.push('', `  ${device.id} MIG: ${profiles === '' ? 'no profiles' : profiles}`, `  ${' '.repeat(device.id.length)} in use: ${inUse === '' ? 'none' : inUse}`);
  }
  return `${out.join('\n')}\n`;
}

function lockText(lock: NodeDevices['lock'], nowMs: number, style: Styler): string {
  if (lock === null) return 'free';
  const sinceMs = Date.parse(lock.since);
  const age = Number.isNaN(sinceMs) ? '' : `, ${formatAge(nowMs - sinceMs)} ago`;
  return `${style('warn', 'held')} by ${lock.holder} since ${lock.since}${age}`;
}

/** `1h2m`, `4m5s`, `12s`: enough to judge a 5-minute lock. */
export function formatAge(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  if (h > 0) return `${h}h${m}m`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

export function renderNotFoundText(namespace: string, name: string, tree: TreeResult | { readonly unavailable: string }, opts: RenderStyle = {}): string {
  const style = opts.style ?? plain;
  const out = [`No scheduling record for pod ${namespace}/${name}.`];
  if ('unavailable' in tree) {
    out.push(`Cannot walk the debugging decision tree: ${tree.unavailable}`);
    return `${out.join('\n')}\n`;
  }
  out.push('', style('strong', 'Debugging decision tree'));
  for (const step of tree.steps) {
    out.push(`  ${step.question}  ${style(step.ok ? 'good' : 'bad', step.answer)}`);
  }
  out.push('', `${style('strong', 'Branch')}   ${tree.branch}`, `${style('strong', 'Why')}      ${tree.explanation}`, `${style('strong', 'Next')}     ${tree.advice}`);
  return `${out.join('\n')}\n`;
}
