/**
 * GPU-aware preemption in the control plane (docs/preemption.md): when a filter finds no fit for a pod that may
 * preempt, the engine's plan (lib/engine/preempt.ts) on the ledger; the freed cards held for the preemptor in the same
 * guarded write that marks its victims, so the ledger never promises a card twice; the Effects the relay applies
 * (evictions through the Eviction API, Events); the nudge once the victims are gone; and what a refused eviction
 * undoes.
 */
import { mayPreempt, planPreemption, priorityOf, type BookedPod, type PreemptionNode, type PreemptionPlan } from '../engine/preempt';
import { encodePodDevices } from '../engine/podAnnotations';
import type { PodLike, QuotaView } from '../engine/types';
import { logEvictionRefused } from '../diagnostics/decisionLogs';
import type { PodRef, PreemptionRecord, PreemptionVictimRecord } from '../diagnostics/record';
import { ContentionError } from '../errors';
import type { EvictionRefused, PreemptionMode } from '../wire/preemption';
import type { EvictPodEffect } from '../wire/effects';
import type { ControlDeps } from './deps';
import { nudges, podEvent, type Effect } from './effects';
import { appContainersNeedLock, backoffMs, bookingCounts, cardUsesOf, nextLedger, toNodeState, type Booking, type NodeLedger } from './ledger';

const MAX_WRITE_ROUNDS = 8;

/** A node's bookings as preemption weighs them, and the node without some of them, by the ledger's own rules. */
export function preemptionNodeOf(ledger: NodeLedger, nowMs: number, preemptorUid: string): PreemptionNode {
  const pods: BookedPod[] = [];
  for (const [uid, booking] of Object.entries(ledger.bookings)) {
    if (uid === preemptorUid || !bookingCounts(booking, nowMs)) continue;
    pods.push({
      uid,
      pod: `${booking.namespace}/${booking.name}`,
      priority: booking.priority ?? 0,
      ours: isPreemptible(booking),
      violatesPdb: booking.pdbBlockedUntilMs !== undefined && booking.pdbBlockedUntilMs > nowMs,
      ...(booking.placedAtMs !== undefined ? { placedAtMs: booking.placedAtMs } : {}),
      cards: booking.uses.map((use) => ({ uuid: use.uuid, mem: use.mem, cores: use.cores, slots: use.slots })),
    });
  }
  return {
    name: ledger.name,
    pods,
    stateWithout(removed) {
      const bookings: Record<string, Booking> = {};
      for (const [uid, booking] of Object.entries(ledger.bookings)) if (!removed.has(uid)) bookings[uid] = booking;
      // Without the real-time report: the memory it measures includes the victims', which leaves with them. The
      // preemptor's own filter, once they are gone, applies the real-time check as usual (docs/preemption.md).
      const { realtime: _measured, ...ledgerWithout } = { ...ledger, bookings };
      return toNodeState(ledgerWithout, nowMs, preemptorUid);
    },
  };
}

/**
 * Whether a booking's pod may be a victim: placed by our filter with its priority known (pods adopted from someone
 * else's annotations, or booked before priorities were recorded, are not ours to weigh), confirmed on the node (a
 * pending pod is not preempted: evicting it would delete it), not already leaving, and not itself a preemptor's hold.
 */
function isPreemptible(booking: Booking): boolean {
  return booking.origin === 'decided' && booking.priority !== undefined && booking.state === 'confirmed' && booking.terminating !== true && booking.preempting === undefined;
}

/** Whether the node holds a pod preemption may weigh for a pod of `priority` (the engine decides which leave). */
function holdsLowerPriority(ledger: NodeLedger, priority: number, nowMs: number, preemptorUid: string): boolean {
  for (const [uid, booking] of Object.entries(ledger.bookings)) {
    if (uid !== preemptorUid && isPreemptible(booking) && (booking.priority ?? 0) < priority && bookingCounts(booking, nowMs)) return true;
  }
  return false;
}

/** The pod's hold whose victims have not all left yet: where, and who. */
export interface PendingHold {
  readonly node: string;
  readonly hold: Booking;
  readonly waitingFor: readonly string[];
}

/** The live hold of pod `uid` still waiting for victims, among the nodes it holds bookings on. */
export function pendingHold(ledgers: Iterable<NodeLedger>, uid: string, nowMs: number): PendingHold | undefined {
  for (const ledger of ledgers) {
    const hold = ledger.bookings[uid];
    if (hold?.preempting === undefined || !bookingCounts(hold, nowMs)) continue;
    const waitingFor = victimsLeft(ledger, hold);
    if (waitingFor.length > 0) return { node: ledger.name, hold, waitingFor };
  }
  return undefined;
}

/** The victims of a hold still on the node (`namespace/name`). */
function victimsLeft(ledger: NodeLedger, hold: Booking): string[] {
  const left: string[] = [];
  for (const uid of hold.preempting ?? []) {
    const victim = ledger.bookings[uid];
    if (victim !== undefined && victim.state !== 'gone') left.push(`${victim.namespace}/${victim.name}`);
  }
  return left;
}

/**
 * Nudges for preemptors whose last victim left the node with this write (`before` → `after`), so kube-scheduler
 * tries them again at once instead of after its backoff.
 */
export function preemptorsReady(before: NodeLedger | undefined, after: NodeLedger, nowMs: number): Effect[] {
  const ready: Record<string, string> = {};
  for (const [uid, hold] of Object.entries(after.bookings)) {
    if (hold.preempting === undefined || !bookingCounts(hold, nowMs) || victimsLeft(after, hold).length > 0) continue;
    const earlier = before?.bookings[uid];
    if (earlier?.preempting !== undefined && victimsLeft(before!, earlier).length === 0) continue;
    ready[uid] = `${hold.namespace}/${hold.name}`;
  }
  return nudges(ready, nowMs);
}

export interface PreemptionRequest {
  readonly pod: PodLike;
  readonly podRef: PodRef;
  readonly candidates: readonly string[];
  readonly quota?: QuotaView;
  readonly attemptId: string;
  readonly mode: PreemptionMode;
}

export interface PreemptionAnswer {
  readonly record: PreemptionRecord;
  readonly effects: readonly Effect[];
  /** The node the pod's cards are now held on (its bookings elsewhere are given back). */
  readonly heldOn?: string;
}

/**
 * Preemption for a pod the filter found no node for: undefined when it is off, or when no candidate node holds a
 * lower-priority pod of ours (nothing to weigh). With mode `on`, the best plan's victims
 * are marked and the preemptor's hold written in one write guarded by the node's version (a lost race plans again
 * on the node as stored); with `log`, only the plan.
 */
export async function preemptFor(deps: ControlDeps, req: PreemptionRequest): Promise<PreemptionAnswer | undefined> {
  if (req.mode === 'off') return undefined;
  if (!mayPreempt(req.pod)) return { record: { outcome: 'none', summary: 'no preemption: the pod\'s preemptionPolicy is Never' }, effects: [] };
  const { view, runtime } = deps;
  const uid = req.podRef.uid;
  const priority = priorityOf(req.pod);
  for (let round = 0; round < MAX_WRITE_ROUNDS; round++) {
    const nowMs = runtime.clock.now();
    // Only nodes holding a lower-priority pod of ours can help: the others are not even looked at (most pods that
    // fit nowhere have the default priority, and outrank nobody).
    const nodes: PreemptionNode[] = [];
    for (const name of req.candidates) {
      const ledger = view.get(name);
      if (ledger?.registration?.registered === true && !ledger.deleted && holdsLowerPriority(ledger, priority, nowMs, uid)) nodes.push(preemptionNodeOf(ledger, nowMs, uid));
    }
    // Nothing to weigh: the scheduler log and the logs say nothing of preemption.
    if (nodes.length === 0) return undefined;
    const outcome = planPreemption({ pod: req.pod, nodes, config: deps.config.engine, nowMs, ...(req.quota ? { quota: req.quota } : {}) });
    if (outcome.kind === 'none') return { record: { outcome: 'none', summary: `no preemption: ${outcome.reason}` }, effects: [] };
    const [best, ...others] = outcome.plans as [PreemptionPlan, ...PreemptionPlan[]];
    const record = planRecord(best, others, req.pod);
    if (best.pdbViolations > 0) {
      const refused = best.victims.filter((v) => v.violatesPdb).map((v) => v.pod);
      const summary = `no preemption: every plan evicts a pod whose PodDisruptionBudget refused its eviction (best: node ${best.node}, ${refused.join(', ')}); nothing evicted`;
      return { record: { ...record, outcome: 'refused', summary }, effects: [podEvent(req.podRef, 'Warning', 'PreemptionRefused', summary)] };
    }
    const victimsText = describeVictims(record.victims ?? []);
    if (req.mode === 'log') {
      const summary = `would evict ${victimsText} on node ${best.node} to free ${record.cards!.join(', ')} (HAMI_PREEMPTION=log: nothing evicted)`;
      return { record: { ...record, outcome: 'dryRun', summary }, effects: [podEvent(req.podRef, 'Normal', 'PreemptionDryRun', summary)] };
    }
    const ledger = view.get(best.node)!;
    const untilMs = nowMs + deps.config.preemptionHoldSeconds * 1000;
    const write = await deps.ledger.putNode(nextLedger(ledger, nowMs, { bookings: heldBookings(ledger, best, req, untilMs, nowMs) }), ledger.version);
    if (!write.ok) {
      const current = write.current ?? (await deps.ledger.readNodes([best.node], { consistent: true })).get(best.node);
      if (current) view.accept(current);
      await runtime.sleep(backoffMs(runtime.random(), round));
      continue;
    }
    view.accept(write.node);
    const holdUntil = new Date(untilMs).toISOString();
    const summary = `evicting ${victimsText} on node ${best.node} to free ${record.cards!.join(', ')}; the cards are held for this pod until ${holdUntil}`;
    return { record: { ...record, outcome: 'evicting', summary, holdUntil }, effects: evictionEffects(req.podRef, req.pod, best, summary), heldOn: best.node };
  }
  throw new ContentionError(`could not hold the cards of a preemption for ${req.podRef.namespace}/${req.podRef.name}: the node kept changing`);
}

/** The node's bookings with the victims marked and the preemptor's hold on the cards the plan frees. */
function heldBookings(ledger: NodeLedger, plan: PreemptionPlan, req: PreemptionRequest, untilMs: number, nowMs: number): Record<string, Booking> {
  const bookings: Record<string, Booking> = { ...ledger.bookings };
  const preemptedBy = { uid: req.podRef.uid, pod: `${req.podRef.namespace}/${req.podRef.name}`, atMs: nowMs, untilMs };
  for (const victim of plan.victims) bookings[victim.uid] = { ...bookings[victim.uid]!, preemptedBy };
  const initCount = req.pod.spec?.initContainers?.length ?? 0;
  bookings[req.podRef.uid] = {
    namespace: req.podRef.namespace,
    name: req.podRef.name,
    state: 'reserved',
    devices: encodePodDevices(plan.devices),
    initCount,
    initDone: false,
    uses: cardUsesOf(plan.devices, initCount, false),
    holdsAppCards: appContainersNeedLock(plan.devices, initCount),
    origin: 'decided',
    expiresAtMs: untilMs,
    // No placement time: nothing is allocating for the pod yet, so lock-aware placement does not pass the node over
    // (`allocationInProgress`); the pod's own filter places it later.
    attemptId: req.attemptId,
    priority: priorityOf(req.pod),
    preempting: plan.victims.map((v) => v.uid),
    ...(plan.parts !== undefined ? { parts: plan.parts } : {}),
  };
  return bookings;
}

/** The preemptor's event, then each victim's `Preempted` event and its eviction. */
function evictionEffects(preemptor: PodRef, pod: PodLike, plan: PreemptionPlan, summary: string): Effect[] {
  const effects: Effect[] = [podEvent(preemptor, 'Normal', 'Preempting', summary)];
  for (const victim of plan.victims) {
    const [namespace = '', name = ''] = victim.pod.split('/');
    const target = { namespace, name, uid: victim.uid };
    const cards = victim.cards.map((c) => c.uuid).join(', ');
    effects.push(podEvent(target, 'Normal', 'Preempted', `Preempted by ${preemptor.namespace}/${preemptor.name} (priority ${priorityOf(pod)}) on node ${plan.node}, freeing ${cards}`));
    const evict: EvictPodEffect = { kind: 'EvictPod', ...target, node: plan.node, preemptor };
    effects.push(evict);
  }
  return effects;
}

function describeVictims(victims: readonly PreemptionVictimRecord[]): string {
  const list = victims.map((v) => `${v.pod} (priority ${v.priority})`).join(', ');
  return `${victims.length} lower-priority pod${victims.length === 1 ? '' : 's'}: ${list}`;
}

/** The plan as the scheduler log shows it, with why it beat the runner-up. */
function planRecord(best: PreemptionPlan, others: readonly PreemptionPlan[], pod: PodLike): PreemptionRecord {
  const cards = [...new Set(best.devices.flat().map((d) => d.uuid))];
  const victims: PreemptionVictimRecord[] = best.victims.map((v) => ({
    pod: v.pod,
    uid: v.uid,
    priority: v.priority,
    ...(v.violatesPdb ? { violatesPdb: true as const } : {}),
    cards: v.cards.map((c) => ({ uuid: c.uuid, mem: c.mem, cores: c.cores })),
  }));
  return {
    outcome: 'none',
    summary: '',
    node: best.node,
    cards,
    victims,
    why: whyThisPlan(best, others[0], priorityOf(pod)),
    ...(best.sparedForPdb.length > 0 ? { spared: [...best.sparedForPdb] } : {}),
    alternatives: others.length,
  };
}

/** The first criterion on which the plan beat the runner-up (lib/engine/preempt.ts, `comparePlans`). */
export function whyThisPlan(best: PreemptionPlan, runnerUp: PreemptionPlan | undefined, priority: number): string {
  const own = `every victim has a priority below the pod's ${priority}`;
  if (runnerUp === undefined) return `the only node where evicting lower-priority pods makes the pod fit; ${own}`;
  const criteria: [string, number, number][] = [
    ['fewer PodDisruptionBudget violations', best.pdbViolations, runnerUp.pdbViolations],
    ['a lower highest victim priority', best.highestVictimPriority, runnerUp.highestVictimPriority],
    ['fewer victims', best.victims.length, runnerUp.victims.length],
    ['less GPU memory taken from victims (MiB)', best.memoryTaken, runnerUp.memoryTaken],
  ];
  const decisive = criteria.find(([, a, b]) => a !== b);
  const against = decisive === undefined ? `ties with node ${runnerUp.node} on every criterion; the node name decides` : `${decisive[0]} than node ${runnerUp.node} (${decisive[1]} against ${decisive[2]})`;
  return `${against}; ${own}`;
}

/**
 * The Eviction API refused a victim's eviction: the preemptor's hold on that node is dropped, its victims count again
 * (those already evicted until they are gone), and the refused one is remembered as protected by a
 * PodDisruptionBudget for the hold's time, so the preemptor's next filter plans around it. The answer explains it on
 * the preemptor and nudges it, so that next filter comes at once.
 */
export async function evictionRefused(deps: ControlDeps, report: EvictionRefused): Promise<readonly Effect[]> {
  const { runtime } = deps;
  for (let round = 0; round < MAX_WRITE_ROUNDS; round++) {
    const nowMs = runtime.clock.now();
    const ledger = (await deps.ledger.readNodes([report.node], { consistent: true })).get(report.node);
    if (ledger === undefined) break;
    const bookings: Record<string, Booking> = {};
    for (const [uid, booking] of Object.entries(ledger.bookings)) {
      if (uid === report.preemptor.uid && booking.preempting !== undefined) continue;
      const released = booking.preemptedBy?.uid === report.preemptor.uid ? { ...booking, preemptedBy: undefined } : booking;
      bookings[uid] = uid === report.victim.uid && report.disruptionBudget ? { ...released, pdbBlockedUntilMs: nowMs + deps.config.preemptionHoldSeconds * 1000 } : released;
    }
    const write = await deps.ledger.putNode(nextLedger(ledger, nowMs, { bookings }), ledger.version);
    if (!write.ok) {
      await runtime.sleep(backoffMs(runtime.random(), round));
      continue;
    }
    deps.view.accept(write.node);
    break;
  }
  const victim = `${report.victim.namespace}/${report.victim.name}`;
  logEvictionRefused(deps.logger, { pod: `${report.preemptor.namespace}/${report.preemptor.name}`, victim, node: report.node, disruptionBudget: report.disruptionBudget, error: report.message });
  const message = `eviction of ${victim} on node ${report.node} refused${report.disruptionBudget ? ' by its PodDisruptionBudget' : ''}: ${report.message}; the cards are no longer held, and the next attempt looks for another plan`;
  return [podEvent(report.preemptor, 'Warning', 'PreemptionRefused', message), ...nudges({ [report.preemptor.uid]: `${report.preemptor.namespace}/${report.preemptor.name}` }, runtime.clock.now())];
}
