/**
 * Read-only views: the scheduler log of a pod (CONTRACT 5) and a node's devices (CONTRACT 9).
 * Both are rendered from what was stored, never recomputed.
 */
import type { AttemptRecord, BindRecord } from '../diagnostics/record';
import { renderSchedulerLog, type SchedulerLog } from '../diagnostics/schedulerLog';
import type { NodeDevices } from '../diagnostics/nodeDevices';
import { NotFoundError } from '../errors';
import type { NodeEntry, NodeLock } from '../store/model';
import type { PodRecords } from '../store/recordStore';
import { podCounts, toNodeState } from './ledger';
import type { ControlDeps } from './deps';

/** How many earlier attempts `?history=true` shows. */
export const HISTORY_LIMIT = 20;

export interface SchedulerLogQuery {
  readonly namespace: string;
  readonly name: string;
  readonly detail?: 'devices';
  readonly history: boolean;
}

export async function readSchedulerLog(deps: ControlDeps, q: SchedulerLogQuery): Promise<SchedulerLog> {
  const nowMs = deps.runtime.clock.now();
  const stored = await deps.records.readPod(q.namespace, q.name, HISTORY_LIMIT + 1, nowMs);
  const attempts = numberedAttempts(stored);
  const latest = attempts[0];
  if (!latest) throw new NotFoundError(`no scheduling record for pod ${q.namespace}/${q.name}`, 'pods', q.name);
  return renderSchedulerLog(latest, {
    ...(q.detail ? { detail: q.detail } : {}),
    ...(q.history ? { history: attempts.slice(1) } : {}),
  });
}

/**
 * Attempts newest first, numbered from the oldest still retained, each with the bind state that applies
 * to it: the stored bind outcome belongs to the newest attempt made before it.
 */
export function numberedAttempts(stored: PodRecords): AttemptRecord[] {
  const total = stored.attempts.length;
  return stored.attempts.map(({ record, timeMs }, i) => {
    const bind: BindRecord =
      i === 0 && stored.bind && stored.bind.timeMs >= timeMs
        ? { status: stored.bind.status, summary: stored.bind.summary, ...(stored.bind.node ? { node: stored.bind.node } : {}), ...(stored.bind.time ? { time: stored.bind.time } : {}) }
        : record.bind;
    return { ...record, attempt: total - i, bind };
  });
}

/** CONTRACT 9's node devices body, plus what an operator needs to judge the node's health and lock. */
export interface NodeDevicesView extends NodeDevices {
  readonly handshake: { readonly value: string | null; readonly state: string };
  /** RFC 3339 of the last registration change the relay forwarded, and its age. */
  readonly registrationUpdated: string | null;
  readonly registrationAgeSeconds: number | null;
  readonly realtime: { readonly time: string; readonly ageSeconds: number } | null;
  readonly devices: (NodeDevices['devices'][number] & { readonly freemem: number })[];
  readonly lock: (NonNullable<NodeDevices['lock']> & { readonly ageSeconds: number; readonly expires: string }) | null;
}

export async function readNodeDevices(deps: ControlDeps, node: string): Promise<NodeDevicesView> {
  const { entry, lock } = await deps.state.readNode(node, false);
  if (!entry) throw new NotFoundError(`node ${node} has not been reported by the relay`, 'nodes', node);
  return renderNodeDevices(node, entry, lock, deps.runtime.clock.now(), deps.config.engine.resourceCountName);
}

export function renderNodeDevices(name: string, entry: NodeEntry, lock: NodeLock | undefined, nowMs: number, countResource: string): NodeDevicesView {
  const state = toNodeState(name, entry, nowMs);
  const registration = state.registration;
  const holders = new Map<string, string[]>();
  for (const pod of Object.values(entry.pods)) {
    if (!podCounts(pod, nowMs)) continue;
    for (const [uuid] of pod.u ?? []) {
      const list = holders.get(uuid) ?? [];
      list.push(`${pod.ns}/${pod.name}`);
      holders.set(uuid, list);
    }
  }
  const ageSeconds = (ms: number) => Math.max(0, Math.round((nowMs - ms) / 1000));
  const liveLock = lock && lock.expiresAt >= nowMs ? lock : undefined;
  return {
    name,
    registered: registration.registered,
    ...(registration.registered ? {} : { reason: registration.reason }),
    allocatable: entry.allocatableGpu !== undefined ? { [countResource]: entry.allocatableGpu } : {},
    handshake: {
      value: entry.handshake ?? null,
      // Device plugins since HAMi v2.8 write no handshake; health follows the registration and allocatable.
      state: entry.handshake === undefined ? 'absent (normal for HAMi >= v2.8)' : entry.handshake.split('_')[0] ?? entry.handshake,
    },
    registrationUpdated: entry.regAt !== undefined ? new Date(entry.regAt).toISOString() : null,
    registrationAgeSeconds: entry.regAt !== undefined ? ageSeconds(entry.regAt) : null,
    realtime: entry.realtime ? { time: new Date(entry.realtime.timeMs).toISOString(), ageSeconds: ageSeconds(entry.realtime.timeMs) } : null,
    devices: registration.registered
      ? registration.devices.map((d) => {
          const used = state.usage[d.id] ?? { used: 0, usedmem: 0, usedcores: 0 };
          return {
            id: d.id,
            index: d.index,
            type: d.type,
            count: d.count,
            devmem: d.devmem,
            devcore: d.devcore,
            numa: d.numa,
            health: d.health,
            used: used.used,
            usedmem: used.usedmem,
            usedcores: used.usedcores,
            freemem: d.devmem - used.usedmem,
            pods: (holders.get(d.id) ?? []).sort(),
          };
        })
      : [],
    lock: liveLock
      ? {
          holder: liveLock.holder,
          since: new Date(liveLock.since).toISOString(),
          ageSeconds: ageSeconds(liveLock.since),
          expires: new Date(liveLock.expiresAt).toISOString(),
        }
      : null,
  };
}
