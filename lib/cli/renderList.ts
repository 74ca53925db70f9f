/**
 * `pod` without a name and `node` without a name: one row per pod (its latest attempt) or per node, as `kubectl get`
 * prints them; `-o wide` adds columns. Pure: the listing's items in, the text out.
 */
import { z } from 'zod';
import type { NodeDevices } from '../diagnostics/nodeDevices';
import { formatAge } from './render';
import { outcomeOf, outcomeTone } from '../diagnostics/vocabulary';
import { plain, statusTone, table, type Cell, type Styler } from './style';

/** The fields of a `SchedulerLogList` item (lib/diagnostics/summary.ts) the table shows; the rest is kept for -o json. */
export const summaryRowSchema = z.object({
  pod: z.object({ namespace: z.string(), name: z.string() }),
  attemptId: z.string(),
  time: z.string(),
  status: z.string(),
  filter: z.object({ status: z.string(), summary: z.string(), node: z.string().optional() }),
  bind: z.object({ status: z.string(), summary: z.string(), node: z.string().optional() }),
  answer: z.object({ sentence: z.string(), code: z.string().optional() }).optional(),
});

export type SummaryRow = z.infer<typeof summaryRowSchema>;

export interface ListRenderOptions {
  readonly style?: Styler;
  /** Epoch milliseconds, for the AGE column. */
  readonly nowMs: number;
  readonly wide: boolean;
}

/** `namespace` set: the rows of that namespace (no NAMESPACE column, as kubectl prints one namespace). */
export function renderPodsText(rows: readonly SummaryRow[], namespace: string | undefined, opts: ListRenderOptions): string {
  const style = opts.style ?? plain;
  if (rows.length === 0) return namespace === undefined ? 'No scheduling records found.\n' : `No scheduling records found in ${namespace} namespace.\n`;
  const header = [...(namespace === undefined ? ['NAMESPACE'] : []), 'NAME', 'STATUS', 'NODE', 'AGE', ...(opts.wide ? ['REASON', 'ATTEMPT'] : []), 'ANSWER'];
  const cells = rows.map((row): Cell[] => [
    ...(namespace === undefined ? [{ text: row.pod.namespace }] : []),
    { text: row.pod.name },
    { text: outcomeOf(row), tone: outcomeTone(outcomeOf(row)) },
    { text: row.bind.node ?? row.filter.node ?? '-' },
    { text: age(row.time, opts.nowMs) },
    ...(opts.wide ? [{ text: row.answer?.code ?? '-' }, { text: row.attemptId }] : []),
    { text: row.answer?.sentence ?? row.filter.summary },
  ]);
  return `${table(header, cells, style, '').join('\n')}\n`;
}

export function renderNodesText(nodes: readonly NodeDevices[], opts: ListRenderOptions): string {
  const style = opts.style ?? plain;
  if (nodes.length === 0) return 'No nodes reported by the scheduler.\n';
  const header = ['NAME', 'REGISTERED', 'CARDS', 'MEM USED/TOTAL (MiB)', 'CORES USED/TOTAL', 'PODS', 'LOCK', ...(opts.wide ? ['TYPES', 'UNHEALTHY', 'REASON'] : [])];
  const cells = nodes.map((node): Cell[] => {
    const sum = (pick: (d: NodeDevices['devices'][number]) => number) => node.devices.reduce((total, device) => total + pick(device), 0);
    const pods = new Set(node.devices.flatMap((device) => device.pods));
    const registered = node.registered ? 'yes' : 'no';
    return [
      { text: node.name },
      { text: registered, tone: statusTone(registered) },
      { text: String(node.devices.length) },
      { text: `${sum((d) => d.usedmem)}/${sum((d) => d.devmem)}` },
      { text: `${sum((d) => d.usedcores)}/${sum((d) => d.devcore)}` },
      { text: String(pods.size) },
      { text: node.lock === null ? 'free' : `held by ${node.lock.holder}`, ...(node.lock === null ? {} : { tone: 'warn' as const }) },
      ...(opts.wide
        ? [
            { text: [...new Set(node.devices.map((d) => d.type))].join(',') || '-' },
            { text: String(node.devices.filter((d) => !d.health).length) },
            { text: node.reason ?? '-' },
          ]
        : []),
    ];
  });
  return `${table(header, cells, style, '').join('\n')}\n`;
}

function age(time: string, nowMs: number): string {
  const at = Date.parse(time);
  return Number.isNaN(at) ? '-' : formatAge(nowMs - at);
}
