/**
 * `/cluster/events` (CONTRACT 4 and 9): Nodes, Pods and ResourceQuotas forwarded by the relay keep the
 * ledger in step with the cluster. Each event is validated on its own; the valid ones are applied to the
 * node entries they touch, one conditional write per changed node, re-applied on a lost race. Idempotent
 * and order-tolerant: an older resourceVersion never overwrites a newer one, deleted pods stay deleted.
 */
import { z } from 'zod';
import { decodePodDevices, PodAnnotation, BindPhase } from '../engine/podAnnotations';
import { quantityAsInt64 } from '../engine/quantity';
import { HandshakeAnnotation, parseNodeRegistration, parseRealtimeReport, RealtimeAnnotation } from '../engine/registration';
import type { PodDevices } from '../engine/types';
import { ContentionError } from '../errors';
import { cardUsesOf, emptyNodeEntry, encodeRegistration, type NodeEntry, type PodEntry, type QuotaItem } from '../store/model';
import { appContainersUseCards, backoffMs, isOlder, nextVersion, nodesHoldingPod, podCounts, seal, TOMBSTONE_TTL_MS } from './ledger';
import type { ControlDeps } from './deps';

const stringMap = z.record(z.string(), z.string());
const quantityMap = z.record(z.string(), z.union([z.string(), z.number()]));

const metadata = z.object({
  name: z.string().min(1),
  namespace: z.string().min(1).optional(),
  uid: z.string().min(1).optional(),
  resourceVersion: z.string().optional(),
  annotations: stringMap.optional(),
  labels: stringMap.optional(),
  deletionTimestamp: z.string().nullish(),
});

const nodeObject = z.object({
  kind: z.literal('Node'),
  apiVersion: z.literal('v1'),
  metadata,
  status: z.object({ allocatable: quantityMap.optional() }).optional(),
});

const container = z.object({
  name: z.string(),
  resources: z.object({ limits: quantityMap.optional(), requests: quantityMap.optional() }).optional(),
});

const podObject = z.object({
  kind: z.literal('Pod'),
  apiVersion: z.literal('v1'),
  // A relist may report a pod that vanished unseen with its name only: DELETED may omit the uid.
  metadata: metadata.extend({ namespace: z.string().min(1), uid: z.string().min(1).optional() }),
  spec: z.object({ initContainers: z.array(container).nullish(), containers: z.array(container).nullish() }).optional(),
  status: z
    .object({
      phase: z.string().optional(),
      initContainerStatuses: z
        .array(z.object({ state: z.object({ terminated: z.object({ exitCode: z.number() }).nullish() }).nullish() }))
        .nullish(),
    })
    .optional(),
});

const quotaObject = z.object({
  kind: z.literal('ResourceQuota'),
  apiVersion: z.literal('v1'),
  metadata: metadata.extend({ namespace: z.string().min(1) }),
  spec: z.object({ hard: quantityMap.optional() }).optional(),
});

const watchEvent = z.object({
  type: z.enum(['ADDED', 'MODIFIED', 'DELETED']),
  object: z.discriminatedUnion('kind', [nodeObject, podObject, quotaObject]),
});
type WatchEvent = z.infer<typeof watchEvent>;
type PodObject = z.infer<typeof podObject>;

export const clusterEventsBody = z.object({ events: z.array(z.unknown()).max(5000) });

export interface ClusterEventsAnswer {
  readonly accepted: number;
  readonly rejected: readonly { readonly index: number; readonly error: string }[];
}

/** Changes one node's entry; returns undefined when nothing changes. Must be safe to re-run on a fresher entry. */
type EntryChange = (entry: NodeEntry | undefined, nowMs: number) => NodeEntry | undefined;

const MAX_WRITE_ROUNDS = 24;

export async function ingestClusterEvents(deps: ControlDeps, events: readonly unknown[]): Promise<ClusterEventsAnswer> {
  const rejected: { index: number; error: string }[] = [];
  const valid: { index: number; event: WatchEvent }[] = [];
  events.forEach((raw, index) => {
    const parsed = watchEvent.safeParse(raw);
    if (parsed.success) valid.push({ index, event: parsed.data });
    else rejected.push({ index, error: describe(parsed.error) });
  });
  if (valid.length === 0) return { accepted: 0, rejected };

  const needsNodes = valid.some(({ event }) => event.object.kind !== 'ResourceQuota');
  const cluster = needsNodes ? await deps.state.readCluster(undefined, true) : { nodes: new Map<string, NodeEntry>(), locks: new Map() };
  const changes = new Map<string, EntryChange[]>();
  const lockReleases: { node: string; uid: string }[] = [];
  const quotaEvents: { type: WatchEvent['type']; quota: z.infer<typeof quotaObject> }[] = [];
  const add = (node: string, change: EntryChange) => {
    const list = changes.get(node) ?? [];
    list.push(change);
    changes.set(node, list);
  };

  for (const { index: at, event } of valid) {
    const object = event.object;
    if (object.kind === 'Node') {
      add(object.metadata.name, nodeChange(deps, event.type, object));
    } else if (object.kind === 'ResourceQuota') {
      quotaEvents.push({ type: event.type, quota: object });
    } else {
      const uids = podUids(event.type, object, cluster.nodes);
      if ('error' in uids) {
        rejected.push({ index: at, error: uids.error });
        continue;
      }
      for (const uid of uids.found) {
        const planned = planPod(event.type, object, uid, cluster.nodes);
        if ('error' in planned) {
          rejected.push({ index: at, error: planned.error });
          break;
        }
        for (const [node, change] of planned.changes) add(node, change);
        for (const node of planned.releaseLocksOn) {
          if (cluster.locks.get(node)?.holderUid === uid) lockReleases.push({ node, uid });
        }
      }
    }
  }

  // Locks first: a finished allocation should free its node at once, whatever the bookings' writes cost.
  for (const { node, uid } of lockReleases) await deps.state.releaseLock(node, uid);
  for (const [node, list] of changes) await writeNode(deps, node, cluster.nodes.get(node), list);
  for (const { type, quota } of quotaEvents) await writeQuota(deps, type, quota);
  rejected.sort((a, b) => a.index - b.index);
  return { accepted: events.length - rejected.length, rejected };
}

async function writeNode(deps: ControlDeps, node: string, known: NodeEntry | undefined, list: readonly EntryChange[]): Promise<void> {
  let current = known;
  for (let round = 0; round < MAX_WRITE_ROUNDS; round++) {
    const nowMs = deps.runtime.clock.now();
    let next: NodeEntry | undefined;
    for (const change of list) next = change(next ?? current, nowMs) ?? next;
    if (!next) return;
    const updates = current ? bookingOnlyUpdates(current, next, nowMs) : undefined;
    if (current && updates) {
      // Usage is unchanged: update the bookings in place rather than racing filters for the whole entry.
      let all = true;
      for (const { uid, booking, expected } of updates) {
        if ((await deps.state.updateBooking(node, uid, booking, expected)) === 'conflict') all = false;
      }
      if (all) return;
    } else if ((await deps.state.putNodeEntry(node, seal(next, nowMs), current ? current.ver : null)) === 'ok') return;
    current = (await deps.state.readNode(node)).entry;
    await deps.runtime.sleep(backoffMs(deps.runtime.random(), round));
  }
  throw new ContentionError(`could not apply cluster events to node ${node}`);
}

/**
 * When `next` differs from `current` only in existing bookings whose card usage is the same, those bookings
 * (to write one by one); otherwise undefined. Expired reservations pruned from `next` do not count.
 */
function bookingOnlyUpdates(current: NodeEntry, next: NodeEntry, nowMs: number): { uid: string; booking: PodEntry; expected: PodEntry }[] | undefined {
  const { pods: currentPods, ver: _cv, cu: _cc, ...currentRest } = current;
  const { pods: nextPods, ver: _nv, cu: _nc, ...nextRest } = next;
  if (!sameJson(currentRest, nextRest)) return undefined;
  const updates: { uid: string; booking: PodEntry; expected: PodEntry }[] = [];
  for (const [uid, booking] of Object.entries(nextPods)) {
    const expected = currentPods[uid];
    if (!expected || !podCounts(expected, nowMs) || !podCounts(booking, nowMs)) return undefined;
    if (sameJson(expected, booking)) continue;
    if (!sameJson(expected.u, booking.u)) return undefined;
    updates.push({ uid, booking, expected });
  }
  for (const [uid, pod] of Object.entries(currentPods)) {
    if (nextPods[uid] === undefined && podCounts(pod, nowMs)) return undefined;
  }
  return updates;
}

function nodeChange(deps: ControlDeps, type: WatchEvent['type'], object: z.infer<typeof nodeObject>): EntryChange {
  const rv = object.metadata.resourceVersion;
  return (entry, nowMs) => {
    const base = entry ?? emptyNodeEntry();
    if (isOlder(rv, base.rv)) return undefined;
    if (type === 'DELETED') {
      if (base.deleted === true) return undefined;
      return { ...nextVersion(base, nowMs), deleted: true, ...(rv ? { rv } : {}), regAt: nowMs, regv: (base.regv ?? 0) + 1 };
    }
    const annotations = object.metadata.annotations ?? {};
    const reg = encodeRegistration(parseNodeRegistration(object, deps.config.engine));
    const realtime = parseRealtimeReport(annotations[RealtimeAnnotation]);
    const allocatableGpu = object.status?.allocatable?.[deps.config.engine.resourceCountName];
    const handshake = annotations[HandshakeAnnotation];
    const facts = {
      reg,
      ...(realtime ? { realtime } : {}),
      ...(allocatableGpu !== undefined ? { allocatableGpu: String(allocatableGpu) } : {}),
      ...(handshake !== undefined ? { handshake } : {}),
    };
    const before = { reg: base.reg, realtime: base.realtime, allocatableGpu: base.allocatableGpu, handshake: base.handshake };
    if (entry && base.deleted !== true && sameJson(before, facts)) return undefined;
    const { realtime: _r, allocatableGpu: _a, handshake: _h, deleted: _d, ...rest } = nextVersion(base, nowMs);
    return { ...rest, ...facts, ...(rv ? { rv } : {}), regAt: nowMs, regv: (base.regv ?? 0) + 1 };
  };
}

/** The pod's uid, or for a DELETED without one, the uids of the live bookings under its namespace/name. */
function podUids(type: WatchEvent['type'], pod: PodObject, nodes: ReadonlyMap<string, NodeEntry>): { found: string[] } | { error: string } {
  if (pod.metadata.uid !== undefined) return { found: [pod.metadata.uid] };
  if (type !== 'DELETED') return { error: 'object.metadata.uid: required for ADDED and MODIFIED pods' };
  const found = new Set<string>();
  for (const entry of nodes.values()) {
    for (const [uid, booking] of Object.entries(entry.pods)) {
      if (booking.st !== 'gone' && booking.ns === pod.metadata.namespace && booking.name === pod.metadata.name) found.add(uid);
    }
  }
  return { found: [...found] };
}

/** Which node entries a pod event changes, and where it may free a lock. */
function planPod(
  type: WatchEvent['type'],
  pod: PodObject,
  uid: string,
  nodes: ReadonlyMap<string, NodeEntry>,
): { changes: [string, EntryChange][]; releaseLocksOn: string[] } | { error: string } {
  const annotations = pod.metadata.annotations ?? {};
  const target = annotations[PodAnnotation.VgpuNode];
  const holders = nodesHoldingPod(nodes, uid);
  const phase = pod.status?.phase;
  const finished = type === 'DELETED' || phase === 'Succeeded' || phase === 'Failed';
  const rv = pod.metadata.resourceVersion;

  if (finished) {
    const affected = new Set(holders);
    if (target) affected.add(target);
    const tombstone = (entry: NodeEntry | undefined, nowMs: number): NodeEntry | undefined => {
      const held = entry?.pods[uid];
      if (!entry || held?.st === 'gone' || (!held && !target)) return undefined;
      const next = nextVersion(entry, nowMs);
      next.pods[uid] = { ns: pod.metadata.namespace, name: pod.metadata.name, st: 'gone', exp: nowMs + TOMBSTONE_TTL_MS, ...(rv ? { rv } : {}) };
      return next;
    };
    return { changes: [...affected].map((node) => [node, tombstone]), releaseLocksOn: [...affected] };
  }

  const bindPhase = annotations[PodAnnotation.BindPhase];
  const releaseLocksOn = bindPhase === BindPhase.Success || bindPhase === BindPhase.Failed ? holders : [];
  const allocated = annotations[PodAnnotation.DevicesAllocated];
  if (!target || allocated === undefined) return { changes: [], releaseLocksOn };

  let devices: PodDevices;
  try {
    devices = decodePodDevices(allocated);
  } catch (err) {
    return { error: `pod ${pod.metadata.namespace}/${pod.metadata.name}: ${PodAnnotation.DevicesAllocated}: ${(err as Error).message}` };
  }
  const initCount = pod.spec?.initContainers?.length ?? 0;
  const initDone = initContainersSucceeded(pod, initCount);
  const confirmed: Omit<PodEntry, 'attemptId'> = {
    ns: pod.metadata.namespace,
    name: pod.metadata.name,
    st: 'confirmed',
    dev: allocated,
    init: initCount,
    ...(initDone ? { initDone } : {}),
    u: cardUsesOf(devices, initCount, initDone),
    appGpu: appContainersUseCards(devices, initCount),
    ...(rv ? { rv } : {}),
    ...(phase ? { phase } : {}),
    ...(pod.metadata.deletionTimestamp ? { terminating: true } : {}),
    ...(bindPhase ? { bindPhase } : {}),
  };
  const confirm: EntryChange = (entry, nowMs) => {
    const base = entry ?? emptyNodeEntry();
    const held = base.pods[uid];
    if (held?.st === 'gone' || isOlder(rv, held?.rv)) return undefined;
    const next: PodEntry = { ...confirmed, ...(held?.attemptId ? { attemptId: held.attemptId } : {}) };
    if (held && sameJson(held, next)) return undefined;
    const out = nextVersion(base, nowMs);
    out.pods[uid] = next;
    return out;
  };
  const moveAway: EntryChange = (entry, nowMs) => {
    const held = entry?.pods[uid];
    if (!entry || !held || held.st === 'gone') return undefined;
    const out = nextVersion(entry, nowMs);
    delete out.pods[uid];
    return out;
  };
  const changes: [string, EntryChange][] = [[target, confirm]];
  for (const node of holders) if (node !== target) changes.push([node, moveAway]);
  return { changes, releaseLocksOn };
}

function initContainersSucceeded(pod: PodObject, initCount: number): boolean {
  const statuses = pod.status?.initContainerStatuses ?? [];
  return initCount > 0 && statuses.length === initCount && statuses.every((s) => s.state?.terminated?.exitCode === 0);
}

async function writeQuota(deps: ControlDeps, type: WatchEvent['type'], quota: z.infer<typeof quotaObject>): Promise<void> {
  const ns = quota.metadata.namespace;
  const hard = quota.spec?.hard ?? {};
  const mem = quantityAsInt64(hard[`limits.${deps.config.engine.resourceMemoryName}`]);
  const cores = quantityAsInt64(hard[`limits.${deps.config.engine.resourceCoreName}`]);
  const rv = quota.metadata.resourceVersion;
  const deleted = type === 'DELETED';
  for (let round = 0; round < MAX_WRITE_ROUNDS; round++) {
    const current = await deps.state.readQuota(ns);
    const existing = current?.quotas[quota.metadata.name];
    if (existing && isOlder(rv, existing.rv)) return;
    const entry = deleted
      ? { deleted: true, ...(rv ? { rv } : {}) }
      : { ...(mem !== undefined ? { mem } : {}), ...(cores !== undefined ? { cores } : {}), ...(rv ? { rv } : {}) };
    if (existing && sameJson(existing, entry)) return;
    const next: QuotaItem = { ver: (current?.ver ?? 0) + 1, quotas: { ...(current?.quotas ?? {}), [quota.metadata.name]: entry } };
    if ((await deps.state.putQuota(ns, next, current ? current.ver : null)) === 'ok') return;
    await deps.runtime.sleep(backoffMs(deps.runtime.random(), round));
  }
  throw new ContentionError(`could not apply quota ${ns}/${quota.metadata.name}`);
}

/** Equality of stored and fresh facts; key order may differ after a round trip through DynamoDB. */
function sameJson(a: unknown, b: unknown): boolean {
  return stableJson(a) === stableJson(b);
}

function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

function describe(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : 'event'}: ${i.message}`)
    .join('; ');
}
