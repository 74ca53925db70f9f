/**
 * The scheduler log (docs/api.md §5): a stored scheduling attempt rendered as the Scheduler Log
 * API proposal's JSON, plus our additions (pod identity, attempt, hints, device detail, history).
 * Pure: the record in, the JSON out. The zod schema is what clients (hami-diag) validate against.
 */
import { z } from 'zod';
import { answerFor, filterFacts, requestTypeOf } from './answer';
import { coreCount, coreIndexes, coresAreMasks, splitCores } from '../engine/devices';
import type { CardEvidence, ContainerEvidence, NodeEvidence } from '../engine/types';
import { hintFor, type Hint } from './hints';
import type { AttemptRecord } from './record';
import { bindFailureKey, countNodesByReason, filterErrorKey } from './reasons';

const cardEvidenceSchema = z.object({
  uuid: z.string(),
  index: z.number(),
  outcome: z.string(),
  totalMem: z.number(),
  usedMem: z.number(),
  requestedMem: z.number(),
  freeMem: z.number(),
  totalCores: z.number(),
  usedCores: z.number(),
  requestedCores: z.number(),
  slots: z.number(),
  usedSlots: z.number(),
  realtimeUsedMem: z.number().optional(),
  realtimeTotalMem: z.number().optional(),
  /**
   * AWS Neuron devices: the cores booked and free by index on the device (the core figures above are then counts
   * of cores, not percentages; docs/devices.md, "AWS Neuron").
   */
  coreIndexes: z.object({ used: z.array(z.number()), free: z.array(z.number()) }).optional(),
  /**
   * The card's side of a mismatch: its type, sharing mode and NUMA node, from the registration its id is read from
   * (absent where the id is: the node registered again since the decision).
   */
  type: z.string().optional(),
  mode: z.string().optional(),
  numa: z.number().optional(),
});

/** The pod's card selection (its annotations), when it sets one: the pod's side of a mismatch. */
const selectorsSchema = z.object({
  useTypes: z.array(z.string()).optional(),
  noUseTypes: z.array(z.string()).optional(),
  useUuids: z.array(z.string()).optional(),
  noUseUuids: z.array(z.string()).optional(),
  vgpuMode: z.string().optional(),
  numaBind: z.literal(true).optional(),
});

const chosenDeviceSchema = z.object({
  idx: z.number(),
  uuid: z.string(),
  type: z.string(),
  usedmem: z.number(),
  usedcores: z.number(),
  /** AWS Neuron devices: the cores given, by index on the device (`usedcores` is their mask). */
  coreIndexes: z.array(z.number()).optional(),
});

const containerRequestSchema = z.object({
  nums: z.number(),
  type: z.string(),
  memreq: z.number(),
  mempercentagereq: z.number(),
  coresreq: z.number(),
});

const containerLogSchema = z.object({
  name: z.string(),
  status: z.enum(['passed', 'failed', 'skipped']),
  reason: z.string().optional(),
  /** Present (true) for init containers only. */
  init: z.literal(true).optional(),
  /** `?detail=devices`: what the container asked for per card. */
  request: containerRequestSchema.optional(),
  /** `?detail=devices`: every card tried, in the order tried, with the numbers compared. */
  devices: z.array(cardEvidenceSchema).optional(),
  /** `?detail=devices`: the cards given to the container when it passed. */
  chosen: z.array(chosenDeviceSchema).optional(),
});

const nodeLogSchema = z.object({
  name: z.string(),
  status: z.enum(['passed', 'failed']),
  score: z.number(),
  /** Node-level failure that is not about a container (e.g. `node unregistered`). */
  reason: z.string().optional(),
  containers: z.array(containerLogSchema),
  /**
   * `?detail=devices`: the node's devices of another kind than the pod asks for, which no container tried (one kind per
   * pod), by vendor word; only where the registration is still the one decided on.
   */
  otherKinds: z.array(z.object({ type: z.string(), count: z.number() })).optional(),
});

/** GPU-aware preemption for a pod no node fit (docs/preemption.md; `PreemptionRecord` in ./record.ts). */
const preemptionSchema = z.object({
  outcome: z.enum(['evicting', 'dryRun', 'waiting', 'none', 'refused']),
  summary: z.string(),
  node: z.string().optional(),
  cards: z.array(z.string()).optional(),
  victims: z
    .array(
      z.object({
        /** Through the relay, a victim in a namespace the reader may not read is not named (`podHidden`, docs/api.md §10). */
        pod: z.string().optional(),
        podHidden: z.literal(true).optional(),
        uid: z.string().optional(),
        priority: z.number(),
        violatesPdb: z.literal(true).optional(),
        cards: z.array(z.object({ uuid: z.string(), mem: z.number(), cores: z.number() })),
      }),
    )
    .optional(),
  why: z.string().optional(),
  /** Lower-priority pods a PodDisruptionBudget protects, kept because the pod fits without their cards. */
  spared: z.array(z.string()).optional(),
  alternatives: z.number().optional(),
  holdUntil: z.string().optional(),
});

const hintSchema = z.object({ code: z.string(), meaning: z.string(), cause: z.string(), fix: z.string() });

const attemptLogSchema = z.object({
  status: z.enum(['succeeded', 'failed', 'pending']),
  filter: z.object({
    status: z.enum(['passed', 'failed']),
    summary: z.string(),
    nodes: z.array(nodeLogSchema),
    /**
     * Lock-aware placement: fitting nodes passed over because another pod was allocating on them. Through the relay, a
     * holder in a namespace the reader may not read is not named (`holderHidden` instead, docs/api.md §10).
     */
    passedOver: z.array(z.object({ name: z.string(), holder: z.string().optional(), holderHidden: z.literal(true).optional() })).optional(),
    /** Lock-aware placement: every fitting node had an allocation under way; the chosen one had the fewest, this many. */
    leastBusy: z.object({ allocations: z.number() }).optional(),
    /** Why the evidence is less than the decision saw: its cards dropped for the item size limit, or unreadable. */
    evidenceNote: z.string().optional(),
    selectors: selectorsSchema.optional(),
    preemption: preemptionSchema.optional(),
  }),
  bind: z.object({
    status: z.enum(['passed', 'failed', 'pending']),
    summary: z.string(),
    node: z.string().optional(),
    time: z.string().optional(),
    /** When the relay answered kube-scheduler's filter from the decision made ahead (RFC 3339; docs/relay.md, "Deciding ahead"). */
    filterUsedAhead: z.string().optional(),
  }),
  pod: z.object({ namespace: z.string(), name: z.string(), uid: z.string() }),
  attempt: z.number(),
  attemptId: z.string(),
  time: z.string(),
  /** How fresh the control plane's view was when it decided: the last change-journal entry it had read, and its age. */
  view: z.object({ seq: z.number(), ageMs: z.number() }).optional(),
  /**
   * Decide-ahead (docs/relay.md, "Deciding ahead"): `decided`, this attempt was made before kube-scheduler asked (the
   * relay answers kube-scheduler's filter from it); `notUsed`, kube-scheduler's filter could not use a decision made
   * ahead, `reason` says why, and this attempt is what the live path decided instead.
   */
  ahead: z.discriminatedUnion('kind', [z.object({ kind: z.literal('decided') }), z.object({ kind: z.literal('notUsed'), reason: z.string() })]).optional(),
});

export const answerSchema = z.object({ sentence: z.string(), code: z.string().optional(), fix: z.string().optional() });

export const schedulerLogSchema = attemptLogSchema.extend({
  hints: z.array(hintSchema),
  /** The one-sentence answer, outcome first, with the fix for its reason (lib/diagnostics/answer.ts). */
  answer: answerSchema.optional(),
  /** `?history=true`: earlier attempts, newest first, without hints. */
  history: z.array(attemptLogSchema).optional(),
  /** The pod was evicted by GPU-aware preemption (docs/preemption.md): for whom, on which node, when (RFC 3339). */
  preemptedBy: z.object({ pod: z.string().optional(), podHidden: z.literal(true).optional(), node: z.string(), time: z.string() }).optional(),
});

export type CardEvidenceLog = z.infer<typeof cardEvidenceSchema>;
export type SelectorsLog = z.infer<typeof selectorsSchema>;
export type ContainerLog = z.infer<typeof containerLogSchema>;
export type NodeLog = z.infer<typeof nodeLogSchema>;
export type AttemptLog = z.infer<typeof attemptLogSchema>;
export type SchedulerLog = z.infer<typeof schedulerLogSchema>;
export type PreemptionLog = z.infer<typeof preemptionSchema>;

export interface RenderOptions {
  /** `devices`: add per-container card evidence, requests and chosen cards. */
  readonly detail?: 'devices';
  /** Earlier attempts of the same pod (any order; the latest itself is ignored if present). */
  readonly history?: readonly AttemptRecord[];
  /**
   * With `detail`: a node's registered devices by id (type, mode, NUMA node, vendor word), as the card ids are read
   * from them: a card's side of a mismatch, and the devices of other kinds no container tried.
   */
  readonly registered?: RegisteredDevices;
}

export type RegisteredDevice = { readonly type: string; readonly mode: string; readonly numa: number; readonly vendor: string };
export type RegisteredDevices = (node: string) => ReadonlyMap<string, RegisteredDevice> | undefined;


export function renderSchedulerLog(latest: AttemptRecord, opts: RenderOptions = {}): SchedulerLog {
  const attempt = renderAttempt(latest, opts.detail, opts.registered);
  const answer = answerFor({ status: attempt.status, filter: filterFacts(latest), bind: attempt.bind });
  const log: SchedulerLog = { ...attempt, hints: hintsFor(latest), answer };
  if (opts.history !== undefined) {
    log.history = opts.history
      .filter((earlier) => earlier.attemptId !== latest.attemptId)
      .sort((a, b) => b.attempt - a.attempt || b.time.localeCompare(a.time))
      .map((earlier) => renderAttempt(earlier, opts.detail, opts.registered));
  }
  return log;
}

/** docs/api.md §9: succeeded after a successful bind outcome, failed on a failed filter or bind, else pending. */
export function overallStatus(record: { readonly filter: Pick<AttemptRecord['filter'], 'status'>; readonly bind: Pick<AttemptRecord['bind'], 'status'> }): AttemptLog['status'] {
  if (record.filter.status === 'failed') return 'failed';
  switch (record.bind.status) {
    case 'passed':
      return 'succeeded';
    case 'failed':
      return 'failed';
    case 'pending':
      return 'pending';
  }
}

function renderAttempt(record: AttemptRecord, detail: RenderOptions['detail'], registered?: RegisteredDevices): AttemptLog {
  const requestType = detail === 'devices' && registered !== undefined ? requestTypeOf(record) : undefined;
  const bind: AttemptLog['bind'] = { status: record.bind.status, summary: record.bind.summary };
  if (record.bind.node !== undefined) bind.node = record.bind.node;
  if (record.bind.time !== undefined) bind.time = record.bind.time;
  if (record.bind.filterUsedAhead !== undefined) bind.filterUsedAhead = record.bind.filterUsedAhead;
  return {
    status: overallStatus(record),
    filter: {
      status: record.filter.status,
      summary: record.filter.summary,
      nodes: record.filter.nodes.map((node) => renderNode(node, detail, registered, requestType)),
      ...(record.filter.passedOver && record.filter.passedOver.length > 0 ? { passedOver: record.filter.passedOver.map((p) => ({ name: p.name, holder: p.holder })) } : {}),
      ...(record.filter.leastBusy !== undefined ? { leastBusy: { allocations: record.filter.leastBusy.allocations } } : {}),
      ...evidenceNoteOf(record),
      ...(record.filter.selectors !== undefined ? { selectors: copySelectors(record.filter.selectors) } : {}),
      ...(record.filter.preemption !== undefined ? { preemption: structuredClone(record.filter.preemption) as PreemptionLog } : {}),
    },
    bind,
    pod: { namespace: record.pod.namespace, name: record.pod.name, uid: record.pod.uid },
    attempt: record.attempt,
    attemptId: record.attemptId,
    time: record.time,
    ...(record.view ? { view: { seq: record.view.seq, ageMs: record.view.ageMs } } : {}),
    ...(record.ahead ? { ahead: record.ahead.kind === 'decided' ? { kind: 'decided' as const } : { kind: 'notUsed' as const, reason: record.ahead.reason } } : {}),
  };
}

function evidenceNoteOf(record: AttemptRecord): { evidenceNote?: string } {
  if (record.evidenceUnreadable !== undefined) return { evidenceNote: `the nodes' evidence cannot be read (${record.evidenceUnreadable}): written by a later release, or damaged` };
  if (record.evidenceTrimmed === true) return { evidenceNote: "the cards tried were dropped to fit the store's item size limit" };
  return {};
}

function copySelectors(selectors: NonNullable<AttemptRecord['filter']['selectors']>): SelectorsLog {
  return {
    ...(selectors.useTypes ? { useTypes: [...selectors.useTypes] } : {}),
    ...(selectors.noUseTypes ? { noUseTypes: [...selectors.noUseTypes] } : {}),
    ...(selectors.useUuids ? { useUuids: [...selectors.useUuids] } : {}),
    ...(selectors.noUseUuids ? { noUseUuids: [...selectors.noUseUuids] } : {}),
    ...(selectors.vgpuMode !== undefined ? { vgpuMode: selectors.vgpuMode } : {}),
    ...(selectors.numaBind ? { numaBind: true as const } : {}),
  };
}

function renderNode(node: NodeEvidence, detail: RenderOptions['detail'], registered?: RegisteredDevices, requestType?: string): NodeLog {
  const score = float32Json(node.score);
  const containerFailed = node.containers.some((container) => container.status === 'failed');
  if (node.status === 'failed' && !containerFailed) {
    // docs/api.md §9: a failure that is not about a container is the node's own, with no containers.
    return { name: node.name, status: node.status, score, reason: node.reason ?? '', containers: [] };
  }
  const devices = registered?.(node.name);
  const log: NodeLog = { name: node.name, status: node.status, score, containers: node.containers.map((c) => renderContainer(c, detail, (uuid) => (uuid === '' ? undefined : devices?.get(uuid)))) };
  const others = otherKindsOf(node, devices, requestType);
  if (others.length > 0) log.otherKinds = others;
  return log;
}

/**
 * Devices of the node not of the pod's kind that no container tried, counted by vendor word. Only where a card
 * the evidence names is found in `devices`: its id is read only while the node's registration is the decision's.
 */
function otherKindsOf(node: NodeEvidence, devices: ReadonlyMap<string, RegisteredDevice> | undefined, requestType: string | undefined): NonNullable<NodeLog['otherKinds']> {
  if (devices === undefined || requestType === undefined) return [];
  const tried = new Set(node.containers.flatMap((c) => c.cards.map((card) => card.uuid)));
  if (![...tried].some((uuid) => uuid !== '' && devices.has(uuid))) return [];
  const counts = new Map<string, number>();
  for (const [id, device] of devices) if (device.vendor !== requestType && !tried.has(id)) counts.set(device.vendor, (counts.get(device.vendor) ?? 0) + 1);
  return [...counts].map(([type, count]) => ({ type, count }));
}

function renderContainer(container: ContainerEvidence, detail: RenderOptions['detail'], infoOf: (uuid: string) => RegisteredDevice | undefined): ContainerLog {
  // A container without a GPU request trivially passes; the proposal has only passed/failed (+ skipped).
  const status = container.status === 'noRequest' ? 'passed' : container.status;
  const out: ContainerLog = { name: container.name, status };
  if (container.status === 'failed') out.reason = container.reason ?? '';
  if (container.init) out.init = true;
  if (detail === 'devices') {
    const cores = container.request !== undefined && coresAreMasks(container.request.type);
    if (container.request !== undefined) out.request = { ...container.request };
    out.devices = container.cards.map((card) => {
      const info = infoOf(card.uuid);
      return { ...(cores ? maskedCoresCard(card) : { ...card }), ...(info ? { type: info.type, mode: info.mode, numa: info.numa } : {}) };
    });
    if (container.devices !== undefined) out.chosen = container.devices.map((device) => (cores ? { ...device, coreIndexes: coreIndexes(device.usedcores) } : { ...device }));
  }
  return out;
}

/** The evidence of a device whose cores are a mask (AWS Neuron) with its cores as counts and indexes (the engine compares masks). */
function maskedCoresCard(card: CardEvidence): CardEvidenceLog {
  const cores = splitCores(card.totalCores, card.usedCores);
  return { ...card, totalCores: coreCount(card.totalCores), usedCores: cores.used.length, coreIndexes: cores };
}

/**
 * Scores are float32 (docs/hami-parity.md §5.6). Go's JSON encoder writes a float32 with the fewest digits that
 * read back to the same float32 (2.35, not 2.3499999046325684); we do the same.
 */
export function float32Json(value: number): number {
  if (!Number.isFinite(value) || Math.fround(value) !== value) return value;
  for (let digits = 1; digits <= 9; digits++) {
    const candidate = Number(value.toPrecision(digits));
    if (Math.fround(candidate) === value) return candidate;
  }
  return value;
}

/** One hint per reason seen: node reasons by how many nodes show them (most first), then bind/filter. */
function hintsFor(record: AttemptRecord): Hint[] {
  const keys = countNodesByReason(record.filter.nodes).map(([key]) => key);
  const summary = record.filter.summary;
  // A failed filter with no node evaluated is a bad pod (an error text), unless there were no candidates.
  if (record.filter.status === 'failed' && record.filter.nodes.length === 0 && !summary.startsWith('no available node')) {
    keys.push(filterErrorKey(summary));
  }
  if (record.bind.status === 'failed') keys.push(bindFailureKey(record.bind.summary));
  const vendor = requestTypeOf(record);
  // Keys of a node-level and of a container-level reason can name the same code (NodeInsufficientDevice): one hint.
  const seen = new Set<string>();
  return keys.flatMap((key) => {
    const hint = hintFor(key, vendor);
    if (!hint || seen.has(hint.code)) return [];
    seen.add(hint.code);
    return [{ ...hint }];
  });
}

/** docs/api.md §5: the body of a 404 for a pod with no scheduling record. */
export function notFoundStatus(namespace: string, name: string): NotFoundStatus {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `no scheduling record for pod ${namespace}/${name}`,
    reason: 'NotFound',
    details: { name, kind: 'pods' },
    code: 404,
  };
}

export interface NotFoundStatus {
  readonly kind: 'Status';
  readonly apiVersion: 'v1';
  readonly metadata: Record<string, never>;
  readonly status: 'Failure';
  readonly message: string;
  readonly reason: 'NotFound';
  readonly details: { readonly name: string; readonly kind: string };
  readonly code: 404;
}

/** What a client accepts as a Kubernetes Status body (any error status, not only 404). */
export const statusBodySchema = z.object({
  kind: z.literal('Status'),
  status: z.string().optional(),
  message: z.string().optional(),
  reason: z.string().optional(),
  code: z.number().optional(),
});
