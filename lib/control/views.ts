/**
 * Read-only views: the scheduler log of a pod (docs/api.md §5) and a node's devices (docs/api.md §9).
 * Both are rendered from what was stored, never recomputed.
 */
import type { AttemptRecord, BindRecord } from '../diagnostics/record';
import { renderSummary, type SchedulerLogSummary } from '../diagnostics/summary';
import { renderSchedulerLog, type RegisteredDevice, type RegisteredDevices, type SchedulerLog } from '../diagnostics/schedulerLog';
import type { NodeDevices } from '../diagnostics/nodeDevices';
import { coresAreMasks, isMig, migPartsView, splitCores, vendorOf } from '../engine/devices';
import { NodeFailure } from '../engine/types';
import { BindPhase } from '../engine/podAnnotations';
import { NotFoundError } from '../errors';
import { bookingCounts, effectiveRegistration, lockIsLive, overcommittedCards, partsHeld, usageOf, type NodeLedger } from './ledger';
import type { PodRecords, RegisteredCards, RegisteredNode } from './ports';
import type { ControlDeps } from './deps';
import { decodeContinue, encodeContinue, MAX_PAGE_BYTES, type ListBody } from './listing';

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
  // Records do not store card ids (lib/engine/evidence.ts): they come from the registrations the warm view holds,
  // brought up to date only when the pod has a record (an unknown pod on a cold environment loads no cluster).
  // A view that cannot be brought up to date costs only ids (shown empty where it holds no node), never the log.
  const registrations = async (): Promise<RegisteredCards> => {
    await deps.view.prepareIfPossible();
    return (node) => registeredCards(deps.view.get(node));
  };
  const stored = await deps.records.readPod(q.namespace, q.name, HISTORY_LIMIT + 1, nowMs, registrations);
  for (const { record } of stored.attempts) {
    if (record.evidenceUnreadable !== undefined) deps.logger.warn('SchedulerLogEvidenceUnreadable', { pod: `${q.namespace}/${q.name}`, attemptId: record.attemptId, error: record.evidenceUnreadable });
  }
  const attempts = numberedAttempts(stored);
  const latest = attempts[0];
  if (!latest) throw new NotFoundError(`no scheduling record for pod ${q.namespace}/${q.name}`, 'pods', q.name);
  const log = renderSchedulerLog(latest, {
    ...(q.detail ? { detail: q.detail, registered: registeredDevicesOf(deps) } : {}),
    ...(q.history ? { history: attempts.slice(1) } : {}),
  });
  // A victim of GPU-aware preemption: its booking (a tombstone once it is gone) says for whom (docs/preemption.md).
  const node = latest.filter.node;
  const preemptedBy = node === undefined ? undefined : deps.view.get(node)?.bookings[latest.pod.uid]?.preemptedBy;
  return preemptedBy === undefined ? log : { ...log, preemptedBy: { pod: preemptedBy.pod, node: node!, time: new Date(preemptedBy.atMs).toISOString() } };
}

/**
 * A node's devices by id, from the registration the card ids are read from: an id is only filled in while the node's
 * registration is the one the decision saw (lib/engine/evidence.ts), so a card found here is the card as decided on.
 */
function registeredDevicesOf(deps: ControlDeps): RegisteredDevices {
  const byNode = new Map<string, ReadonlyMap<string, RegisteredDevice>>();
  return (nodeName) => {
    let devices = byNode.get(nodeName);
    if (devices === undefined) {
      const registration = deps.view.get(nodeName)?.registration;
      devices = new Map(registration?.registered === true ? registration.devices.map((d) => [d.id, { type: d.type, mode: d.mode, numa: d.numa, vendor: vendorOf(d) }]) : []);
      byNode.set(nodeName, devices);
    }
    return devices;
  };
}

/** A node's registration now, by version and cards by position (a deleted node's last registration included). */
function registeredCards(node: NodeLedger | undefined): RegisteredNode | undefined {
  return node?.registration?.registered === true ? { registrationVersion: node.registrationVersion, cards: node.registration.devices } : undefined;
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
        ? {
            status: stored.bind.status,
            summary: stored.bind.summary,
            ...(stored.bind.node ? { node: stored.bind.node } : {}),
            ...(stored.bind.time ? { time: stored.bind.time } : {}),
            ...(stored.bind.filterUsedAhead ? { filterUsedAhead: stored.bind.filterUsedAhead } : {}),
          }
        : record.bind;
    return { ...record, attempt: total - i, bind };
  });
}

/** docs/api.md §9's node devices body, plus what an operator needs to judge the node's health and lock. */
export interface NodeDevicesView extends NodeDevices {
  readonly handshake: { readonly value: string | null; readonly state: string };
  /** RFC 3339 of the last registration change the relay forwarded, and its age. */
  readonly registrationUpdated: string | null;
  readonly registrationAgeSeconds: number | null;
  readonly realtime: { readonly time: string; readonly ageSeconds: number } | null;
  readonly devices: (NodeDevices['devices'][number] & {
    readonly freemem: number;
    /** What the node agent measured on the card (docs/realtime.md), where it reported. */
    readonly realtime?: { readonly usedmem: number; readonly totalmem: number; readonly utilization?: number };
  })[];
  readonly lock: (NonNullable<NodeDevices['lock']> & { readonly ageSeconds: number; readonly expires: string }) | null;
  /** Parts of the node's stored state that cannot be decoded (the node is not scheduled until repaired). */
  readonly problems?: readonly { readonly part: string; readonly problem: string }[];
}

export async function readNodeDevices(deps: ControlDeps, node: string): Promise<NodeDevicesView> {
  const found = (await deps.ledger.readNodes([node], { consistent: false })).get(node);
  if (!found) throw new NotFoundError(`node ${node} has not been reported by the relay`, 'nodes', node);
  return renderNodeDevices(found, deps.runtime.clock.now(), deps.config.engine.resourceCountName);
}

export function renderNodeDevices(node: NodeLedger, nowMs: number, countResource: string): NodeDevicesView {
  const { name, lock } = node;
  const unreadable = node.unreadable?.filter((part) => part.blocking) ?? [];
  const registration =
    unreadable.length > 0 ? { registered: false as const, reason: NodeFailure.StateUnreadable } : effectiveRegistration(node);
  const usage = usageOf(node, nowMs);
  const holders = new Map<string, string[]>();
  // Pods still booked whose bind failed (hami.io/bind-phase: failed): shown as such beside the card, never as running.
  const bindFailed = new Map<string, string[]>();
  for (const booking of Object.values(node.bookings)) {
    if (!bookingCounts(booking, nowMs)) continue;
    for (const use of booking.uses) {
      const list = holders.get(use.uuid) ?? [];
      list.push(`${booking.namespace}/${booking.name}`);
      holders.set(use.uuid, list);
      if (booking.bindPhase === BindPhase.Failed) bindFailed.set(use.uuid, [...(bindFailed.get(use.uuid) ?? []), `${booking.namespace}/${booking.name}`]);
    }
  }
  const held = registration.registered ? partsHeld(node, registration.devices, nowMs) : { parts: [], failClosed: [] };
  const failClosed = new Set(held.failClosed);
  const overcommitted = new Map(registration.registered ? overcommittedCards(registration.devices, usage).map((card) => [card.uuid, card.over]) : []);
  const ageSeconds = (ms: number) => Math.max(0, Math.round((nowMs - ms) / 1000));
  const liveLock = lockIsLive(lock, nowMs) ? lock : undefined;
  return {
    name,
    registered: registration.registered,
    ...(registration.registered ? {} : { reason: registration.reason }),
    ...(unreadable.length > 0 ? { problems: unreadable.map(({ part, problem }) => ({ part, problem })) } : {}),
    allocatable: node.allocatableGpu !== undefined ? { [countResource]: node.allocatableGpu } : {},
    handshake: {
      value: node.handshake ?? null,
      // Device plugins since HAMi v2.8 write no handshake; health follows the registration and allocatable.
      state: node.handshake === undefined ? 'absent (normal for HAMi >= v2.8)' : node.handshake.split('_')[0] ?? node.handshake,
    },
    registrationUpdated: node.registeredAtMs !== undefined ? new Date(node.registeredAtMs).toISOString() : null,
    registrationAgeSeconds: node.registeredAtMs !== undefined ? ageSeconds(node.registeredAtMs) : null,
    realtime: node.realtime ? { time: new Date(node.realtime.timeMs).toISOString(), ageSeconds: ageSeconds(node.realtime.timeMs) } : null,
    devices: registration.registered
      ? registration.devices.map((d) => {
          const used = usage[d.id] ?? { used: 0, usedmem: 0, usedcores: 0 };
          const measured = node.realtime?.devices[d.id];
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
            ...(bindFailed.has(d.id) ? { bindFailed: (bindFailed.get(d.id) ?? []).sort() } : {}),
            ...(isMig(d) ? { mode: d.mode } : {}),
            ...(failClosed.has(d.id) ? { health: false, unhealthyReason: 'a pod booked on this MIG card holds no placement the scheduler can account for' } : {}),
            ...(overcommitted.has(d.id) ? { overcommitted: [...(overcommitted.get(d.id) ?? [])] } : {}),
            ...(d.migProfiles ? { mig: migPartsView(d.migProfiles, held.parts.filter((part) => part.uuid === d.id)) } : {}),
            ...(measured
              ? { realtime: { usedmem: measured.usedMemMB, totalmem: measured.totalMemMB, ...(measured.utilization !== undefined ? { utilization: measured.utilization } : {}) } }
              : {}),
            ...(d.vendor !== undefined ? { vendor: d.vendor } : {}),
            ...(d.vendor !== undefined && coresAreMasks(d.vendor) ? { coreIndexes: splitCores(d.devcore, used.usedcores) } : {}),
          };
        })
      : [],
    lock: liveLock
      ? {
          holder: liveLock.holder,
          since: new Date(liveLock.sinceMs).toISOString(),
          ageSeconds: ageSeconds(liveLock.sinceMs),
          expires: new Date(liveLock.expiresAtMs).toISOString(),
        }
      : null,
  };
}

export interface ListQuery {
  readonly limit: number;
  readonly continue?: string;
}

/**
 * Every node's devices view, by name, a page at a time (docs/api.md §10): the directory gives the names, the page's
 * nodes are read in batches. A page also ends before it outgrows MAX_PAGE_BYTES.
 */
export async function listNodeDevices(deps: ControlDeps, q: ListQuery): Promise<ListBody<NodeDevicesView>> {
  const after = q.continue === undefined ? undefined : decodeContinue(q.continue, 'nodes', '');
  const names = (await deps.ledger.readDirectory()).filter((name) => after === undefined || name > after);
  const page = names.slice(0, q.limit);
  const nodes = await deps.ledger.readNodes(page, { consistent: false });
  const nowMs = deps.runtime.clock.now();
  const items: NodeDevicesView[] = [];
  let bytes = 0;
  let last: string | undefined;
  for (const name of page) {
    const node = nodes.get(name);
    if (node !== undefined) {
      const view = renderNodeDevices(node, nowMs, deps.config.engine.resourceCountName);
      bytes += JSON.stringify(view).length;
      if (bytes > MAX_PAGE_BYTES && items.length > 0) break;
      items.push(view);
    }
    last = name;
  }
  const consumed = last === undefined ? 0 : names.indexOf(last) + 1;
  const remaining = names.length - consumed;
  return {
    kind: 'NodeDevicesList',
    apiVersion: 'v1',
    metadata: remaining > 0 && last !== undefined ? { continue: encodeContinue('nodes', '', last), remainingItemCount: remaining } : {},
    items,
  };
}

/** The latest attempt of every pod (of one namespace, or all), summarised, a page at a time (docs/api.md §10). */
export async function listSchedulerLogs(deps: ControlDeps, q: ListQuery & { readonly namespace?: string }): Promise<ListBody<SchedulerLogSummary>> {
  const scope = q.namespace ?? '';
  const after = q.continue === undefined ? undefined : decodeContinue(q.continue, 'schedulerlogs', scope);
  const page = await deps.records.listSummaries({
    limit: q.limit,
    nowMs: deps.runtime.clock.now(),
    ...(q.namespace !== undefined ? { namespace: q.namespace } : {}),
    ...(after !== undefined ? { after } : {}),
  });
  return {
    kind: 'SchedulerLogList',
    apiVersion: 'v1',
    metadata: page.next !== undefined ? { continue: encodeContinue('schedulerlogs', scope, page.next) } : {},
    items: page.items.map(renderSummary),
  };
}
