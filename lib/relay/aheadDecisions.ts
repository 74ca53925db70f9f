/**
 * Deciding ahead (docs/relay.md, "Deciding ahead"): the relay sees every pending pod of our scheduler as it is
 * created, usually well before kube-scheduler's queue pops it. It claims such pods, gathers them into batches (a small
 * window, a bounded size), has the control plane decide each batch in one call (`POST /filter/ahead`), applies the
 * answers' Effects (HAMi's pod annotations) off kube-scheduler's serial path, and keeps each decision. kube-scheduler's
 * filter is then answered from the decision at once when it is still valid, else decided live with the reason sent
 * along (for the pod's scheduler log).
 *
 * Replicas: a pod is decided by the replica whose claim (a patch conditional on the pod's resourceVersion) the API
 * server took; every replica reads the decision from the pod's annotations (its mark and the fingerprint of what was
 * decided on), so a filter sent to any replica can use it, and nothing is applied or booked twice.
 */
import { createHash } from 'node:crypto';
import type { AppLogger } from '../powertools';
import { errorMessage } from '../errors';
import { isJsonObject, objectField, type JsonObject } from '../json';
import { SchedulerOwnedPodAnnotations } from '../engine/devices';
import { isEngineAnnotation } from '../engine/reuse';
import { REQUEUE_ANNOTATION } from '../control/effects';
import { MIN_VIEW_SEQ_HEADER } from '../wire/headers';
import type { Effect } from '../wire/effects';
import {
  AHEAD_CLAIM_VALUE,
  AHEAD_NONE_VALUE,
  aheadAnswerSchema,
  DECIDE_AHEAD_PATH,
  DECIDED_AHEAD_ANNOTATION,
  DECIDED_AHEAD_POD_ANNOTATION,
  markedDecision,
  queueOrder,
  type AheadDecision,
} from '../wire/decidedAhead';
import type { RelayConfig } from './config';
import type { ControlPlaneClient } from './controlPlane';
import type { DelayFn } from './delay';
import { applyEffects, type ClusterWriter } from './effects';
import type { NudgeResult, NudgeTarget } from './nudger';
import { podRequestsManaged, toForwardedObject } from './relevance';
import { forEachAtMost } from '../concurrency';

export interface AheadOptions {
  readonly controlPlane: ControlPlaneClient;
  readonly writer: ClusterWriter;
  /** A merge patch of annotations conditional on the pod's uid and resourceVersion (the nudger's). */
  readonly claim: (target: NudgeTarget, annotations: Readonly<Record<string, string>>) => Promise<NudgeResult>;
  readonly logger: AppLogger;
  readonly schedulerName: string;
  readonly managedResources: readonly string[];
  readonly windowMs: number;
  readonly maxPods: number;
  /** Batches in flight at once (docs/relay.md, "Deciding ahead"): more keep up with several kube-schedulers, at the cost of collisions the guards settle. */
  readonly maxBatches: number;
  /** The ramp: after this long without a batch answered, the control plane is taken as cold again (one batch in flight until it answers). */
  readonly coldAfterMs: number;
  /** How long a filter waits for the batch deciding its pod. */
  readonly waitMs: number;
  /** The control plane's reservation TTL: a decision is used within half of it, so its booking outlives the bind. */
  readonly reservationTtlMs: number;
  readonly requestTimeoutMs: number;
  readonly now: () => number;
  readonly delay: DelayFn;
  /** The journal entry the relay's forwarded cluster events last produced (the batch's view must include it). */
  readonly viewSeq: () => number;
}

/** What the caller wires into decide-ahead; the rest comes from the relay's configuration (`aheadOptionsFrom`). */
export type AheadWiring = Pick<AheadOptions, 'controlPlane' | 'writer' | 'claim' | 'logger' | 'now' | 'delay' | 'viewSeq'>;

/** Decide-ahead's options as the relay's configuration sets them (lib/relay/config.ts), with the caller's wiring. */
export function aheadOptionsFrom(config: Pick<RelayConfig, 'admission' | 'managedResources' | 'ahead' | 'extenderDeadlineMs'>, wiring: AheadWiring): AheadOptions {
  return {
    ...wiring,
    schedulerName: config.admission.schedulerName,
    managedResources: config.managedResources,
    windowMs: config.ahead.windowMs,
    maxPods: config.ahead.maxPods,
    maxBatches: config.ahead.maxBatches,
    coldAfterMs: config.ahead.coldAfterMs,
    waitMs: config.ahead.waitMs,
    reservationTtlMs: config.ahead.reservationTtlMs,
    requestTimeoutMs: config.extenderDeadlineMs,
  };
}

/**
 * What the filter does with a pod: answer `node` at once; decide live (`note`: why a decision made ahead was not used);
 * or answer `retry` as an error, so kube-scheduler tries the pod again after its backoff: another replica is still
 * deciding it, and a live decision now could be overwritten by that replica's when it lands.
 */
export type AheadLookup =
  | { readonly use: string; readonly decidedAt: string }
  | { readonly live: true; readonly note?: string }
  | { readonly retry: string };

type Entry =
  /**
   * Being decided: by this replica (`pod` set), or by the replica whose claim the pod carries (`pod` undefined); `sinceMs`:
   * when this replica claimed the pod, or first saw another's claim; `waitedOut`: a filter waited for it in vain already.
   */
  | { readonly state: 'waiting'; readonly pod: JsonObject | undefined; readonly sinceMs: number; waitedOut?: true; readonly settled: Promise<void>; readonly settle: () => void }
  | { readonly state: 'decided'; readonly node: string; readonly fingerprint: string; readonly atMs: number }
  | { readonly state: 'notUsable'; readonly note: string }
  /** Used by kube-scheduler's filter (`usedAtMs`, when), or not to be used (again). */
  | { readonly state: 'spent'; readonly usedAtMs?: number };

/** Effects of this many pods applied at once after a batch. */
const APPLY_CONCURRENCY = 8;

/**
 * What the engine reads of a pod (its containers' names and resources, its annotations of the engine's domains but
 * the scheduler's own), hashed: a decision holds only while this is unchanged.
 */
export function podFingerprint(pod: unknown): string {
  const spec = objectField(pod, 'spec');
  const containers = [...(Array.isArray(spec.initContainers) ? spec.initContainers : []).map((c) => ['init', c]), ...(Array.isArray(spec.containers) ? spec.containers : []).map((c) => ['app', c])].map(
    ([kind, c]) => [kind, isJsonObject(c) ? c.name : '', sortedJson(objectField(objectField(c, 'resources'), 'limits')), sortedJson(objectField(objectField(c, 'resources'), 'requests'))],
  );
  const annotations = objectField(objectField(pod, 'metadata'), 'annotations');
  const read = Object.keys(annotations)
    .filter((key) => isEngineAnnotation(key) && !IGNORED.has(key))
    .sort()
    .map((key) => [key, annotations[key]]);
  return createHash('sha256').update(JSON.stringify([containers, read])).digest('base64url').slice(0, 22);
}

const IGNORED: ReadonlySet<string> = new Set([...SchedulerOwnedPodAnnotations, DECIDED_AHEAD_ANNOTATION, DECIDED_AHEAD_POD_ANNOTATION, REQUEUE_ANNOTATION]);

function sortedJson(obj: JsonObject): string {
  return JSON.stringify(Object.keys(obj).sort().map((k) => [k, String(obj[k])]));
}

export class AheadDecisions {
  private readonly entries = new Map<string, Entry>();
  private queue: string[] = [];
  private timer: Promise<void> | undefined;
  private inFlight = 0;
  /** When the control plane last answered a batch; undefined before the first answer and after a failed batch (the ramp). */
  private warmAtMs: number | undefined;
  private readonly closing = new AbortController();
  private answered = 0;
  private used = 0;

  constructor(private readonly opts: AheadOptions) {}

  /** Filters answered from a decision made ahead, and filters that asked about a pod at all. */
  stats(): { readonly answeredAhead: number; readonly asked: number } {
    return { answeredAhead: this.used, asked: this.answered };
  }

  close(): void {
    this.closing.abort();
  }

  /** Every Pod event of the watch: pending pods of our scheduler are claimed and queued; decisions are learnt and forgotten. */
  observe(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: unknown): void {
    const metadata = objectField(obj, 'metadata');
    const uid = typeof metadata.uid === 'string' ? metadata.uid : '';
    if (uid === '') return;
    const spec = objectField(obj, 'spec');
    const bound = typeof spec.nodeName === 'string' && spec.nodeName !== '';
    const phase = objectField(obj, 'status').phase;
    if (type === 'DELETED' || bound || metadata.deletionTimestamp != null || (phase !== undefined && phase !== 'Pending')) {
      // Used, bound elsewhere (the live filter gave its booking back), or gone: the control plane releases what it held.
      this.entries.delete(uid);
      return;
    }
    if (spec.schedulerName !== this.opts.schedulerName || !podRequestsManaged(obj, this.opts.managedResources)) return;
    const existing = this.entries.get(uid);
    const annotations = stringRecord(objectField(metadata, 'annotations'));
    const mark = annotations[DECIDED_AHEAD_ANNOTATION];
    if (existing?.state === 'waiting' && existing.pod === undefined) {
      // Another replica's batch: its decision (or its word that there is none) settles the wait.
      if (this.learn(uid, annotations)) existing.settle();
      else if (mark !== undefined && mark !== AHEAD_CLAIM_VALUE) {
        // `none` (or a mark that names nothing now): no decision to wait for. An event without a mark is older news.
        this.entries.set(uid, { state: 'spent' });
        existing.settle();
      }
      return;
    }
    if (existing !== undefined || this.learn(uid, annotations)) return;
    if (mark === AHEAD_CLAIM_VALUE) {
      // Claimed by another replica: a filter sent here waits for its decision rather than deciding the pod twice.
      const { settled, settle } = settlement();
      this.entries.set(uid, { state: 'waiting', pod: undefined, sinceMs: this.opts.now(), settled, settle });
      return;
    }
    // Decided (or given up) by another replica, or filtered live already: not ours to decide.
    if (mark !== undefined || annotations['hami.io/vgpu-node'] !== undefined) return;
    void this.claimAndQueue(uid, obj);
  }

  /** A decision the pod's annotations carry (made by another replica, or by this one before a restart): usable here too. */
  private learn(uid: string, annotations: Readonly<Record<string, string>>): boolean {
    const marked = markedDecision(annotations);
    const fingerprint = annotations[DECIDED_AHEAD_POD_ANNOTATION];
    if (marked === undefined || fingerprint === undefined) return false;
    this.entries.set(uid, { state: 'decided', node: marked.node, fingerprint, atMs: marked.timeS * 1000 });
    return true;
  }

  /** What kube-scheduler's filter for this pod (as the cluster has it) gets, given the nodes it sent. */
  async lookup(pod: JsonObject, nodeNames: readonly string[] | null): Promise<AheadLookup> {
    const uid = String(objectField(pod, 'metadata').uid ?? '');
    this.answered++;
    // Claimed by another replica and not seen here yet (this watch is behind): wait for that decision as well.
    if (!this.entries.has(uid) && stringRecord(objectField(objectField(pod, 'metadata'), 'annotations'))[DECIDED_AHEAD_ANNOTATION] === AHEAD_CLAIM_VALUE) this.observe('MODIFIED', pod);
    let entry = this.entries.get(uid);
    if (entry?.state === 'waiting') {
      // Its batch is on its way: wait for it (bounded) rather than deciding twice; once only, as each wait holds up
      // kube-scheduler's whole queue.
      if (entry.waitedOut !== true) {
        const waited = new AbortController();
        await Promise.race([entry.settled, this.opts.delay(this.opts.waitMs, AbortSignal.any([waited.signal, this.closing.signal]))]);
        waited.abort();
      }
      entry = this.entries.get(uid);
      if (entry?.state === 'waiting') {
        const waitingMs = this.opts.now() - entry.sinceMs;
        if (entry.pod === undefined && waitingMs < this.claimHeldMs() + this.opts.waitMs) {
          // Another replica's batch may still land and write its decision over a live one: kube-scheduler asks again later.
          entry.waitedOut = true;
          return { retry: `pod is being decided ahead by another relay replica (claimed ${Math.round(waitingMs / 1000)} s ago); try again` };
        }
        this.entries.set(uid, { state: 'spent' });
        // This replica's own batch: it will not apply its answer now; other replicas stop waiting for it.
        if (entry.pod !== undefined) void this.giveUp(entry.pod);
        return { live: true, note: `the batch deciding this pod ahead had not answered within ${this.opts.waitMs} ms` };
      }
    }
    if (entry === undefined) {
      // Seen here first through the filter (this replica's watch is behind): the annotations may carry a decision.
      if (!this.learn(uid, stringRecord(objectField(objectField(pod, 'metadata'), 'annotations')))) return { live: true };
      entry = this.entries.get(uid);
      if (entry === undefined) return { live: true };
    }
    if (entry.state === 'spent') return { live: true };
    // Whatever happens now, the decision is not used again: a second filter of the pod is decided live.
    this.entries.set(uid, { state: 'spent' });
    if (entry.state === 'notUsable') return { live: true, note: entry.note };
    if (entry.state === 'waiting') return { live: true };
    const decidedAt = new Date(entry.atMs).toISOString();
    const made = `the decision made ahead at ${decidedAt} (node ${entry.node})`;
    if (podFingerprint(pod) !== entry.fingerprint) return { live: true, note: `${made} was not used: the pod changed since (its resources or annotations)` };
    const ageMs = this.opts.now() - entry.atMs;
    if (ageMs > this.opts.reservationTtlMs / 2) {
      return { live: true, note: `${made} was not used: it is ${Math.round(ageMs / 1000)} s old, past half the reservation TTL (${this.opts.reservationTtlMs / 1000} s)` };
    }
    if (nodeNames === null) return { live: true, note: `${made} was not used: kube-scheduler sent Node objects, not names` };
    if (!nodeNames.includes(entry.node)) {
      return {
        live: true,
        note: `${made} was not used: node ${entry.node} is not among the ${nodeNames.length} nodes kube-scheduler sent (its own filters excluded it since, e.g. a taint, or its sampling left it out)`,
      };
    }
    this.used++;
    this.entries.set(uid, { state: 'spent', usedAtMs: this.opts.now() });
    return { use: entry.node, decidedAt };
  }

  /** When kube-scheduler's filter for the pod was answered from its decision made ahead (RFC 3339), if it was. */
  usedAt(uid: string): string | undefined {
    const entry = this.entries.get(uid);
    return entry?.state === 'spent' && entry.usedAtMs !== undefined ? new Date(entry.usedAtMs).toISOString() : undefined;
  }

  /** Marks the pod as this replica's to decide (409: another replica was first, or the pod changed), then queues it. */
  private async claimAndQueue(uid: string, obj: unknown): Promise<void> {
    const metadata = objectField(obj, 'metadata');
    const { settled, settle } = settlement();
    // Plain JSON, as the control plane reads it (informer lists carry Dates).
    const pod = toForwardedObject('Pod', obj);
    this.entries.set(uid, { state: 'waiting', pod, sinceMs: this.opts.now(), settled, settle });
    const target = { namespace: String(metadata.namespace ?? ''), name: String(metadata.name ?? ''), uid, resourceVersion: String(metadata.resourceVersion ?? '') };
    let claimed: NudgeResult;
    try {
      claimed = await this.opts.claim(target, { [DECIDED_AHEAD_ANNOTATION]: AHEAD_CLAIM_VALUE });
    } catch (err) {
      this.opts.logger.warn('AheadClaimFailed', { pod: `${target.namespace}/${target.name}`, error: errorMessage(err) });
      claimed = 'changed';
    }
    if (claimed !== 'nudged') {
      // Not ours: the filter decides it live (or from another replica's decision, once the watch shows it).
      this.entries.delete(uid);
      settle();
      return;
    }
    this.queue.push(uid);
    if (this.queue.length >= this.opts.maxPods) this.pump();
    else this.timer ??= this.opts.delay(this.opts.windowMs, this.closing.signal).then(() => {
      this.timer = undefined;
      this.pump();
    });
  }

  /**
   * How long after its claim a decision made here may still be written to the pod; past it the answer is dropped. Other
   * replicas wait for a claim this long and `waitMs` more (room for the last write to land), then decide the pod live: a
   * replica that died holding claims delays those pods by that much, no more.
   */
  private claimHeldMs(): number {
    return this.opts.requestTimeoutMs;
  }

  /**
   * The ramp (docs/relay.md, "Deciding ahead"): one batch in flight until the control plane has answered one (it is
   * warm), then up to `maxBatches`: batches sent to a cold one share its cold start, and the first filter of a burst
   * waits longer for its own. A failed batch, or `coldAfterMs` without an answer (its environment may have been reclaimed),
   * starts the ramp again.
   */
  private batchesAllowed(): number {
    const warm = this.warmAtMs !== undefined && this.opts.now() - this.warmAtMs <= this.opts.coldAfterMs;
    return warm ? this.opts.maxBatches : 1;
  }

  /**
   * Up to `batchesAllowed()` batches in flight, each taking the most urgent pods queued (kube-scheduler's order); pods
   * that come while all are out go in the next. Batches decided side by side may meet on a node: the control plane's
   * guarded writes refuse one and it decides again (docs/relay.md, "Deciding ahead").
   */
  private pump(): void {
    while (this.inFlight < this.batchesAllowed() && this.queue.length > 0 && !this.closing.signal.aborted) {
      const waiting = this.queue.flatMap((uid) => {
        const entry = this.entries.get(uid);
        return entry?.state === 'waiting' && entry.pod !== undefined ? [{ uid, entry, pod: entry.pod }] : [];
      });
      const batch = queueOrder(waiting, (w) => queueKeys(w.pod)).slice(0, this.opts.maxPods);
      const taken = new Set(batch.map((w) => w.uid));
      this.queue = this.queue.filter((uid) => !taken.has(uid) && this.entries.get(uid)?.state === 'waiting');
      if (batch.length === 0) continue;
      this.inFlight++;
      void this.decide(batch)
        .catch((err: unknown) => this.opts.logger.warn('AheadBatchFailed', { pods: batch.length, error: errorMessage(err) }))
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }

  private async decide(batch: readonly { readonly uid: string; readonly entry: Extract<Entry, { state: 'waiting' }>; readonly pod: JsonObject }[]): Promise<void> {
    const seq = this.opts.viewSeq();
    const settleAll = (note: string) => {
      for (const { uid, entry, pod } of batch) {
        if (this.entries.get(uid) === entry) {
          this.entries.set(uid, { state: 'notUsable', note });
          void this.giveUp(pod);
        }
        entry.settle();
      }
    };
    let decisions: AheadDecision[];
    try {
      const res = await this.opts.controlPlane.post(
        DECIDE_AHEAD_PATH,
        { pods: batch.map((w) => w.pod) },
        { timeoutMs: this.opts.requestTimeoutMs, headers: seq > 0 ? { [MIN_VIEW_SEQ_HEADER]: String(seq) } : {} },
      );
      if (res.status !== 200) throw new Error(`control plane answered ${DECIDE_AHEAD_PATH} with HTTP ${res.status}: ${res.text.slice(0, 300)}`);
      const parsed = aheadAnswerSchema.safeParse(res.body);
      if (!parsed.success) throw new Error(`control plane's answer to ${DECIDE_AHEAD_PATH} cannot be read: ${parsed.error.issues[0]?.message ?? ''}`);
      decisions = parsed.data.decisions;
    } catch (err) {
      this.warmAtMs = undefined;
      this.opts.logger.warn('AheadBatchFailed', { pods: batch.length, error: errorMessage(err) });
      settleAll(`the batch deciding this pod ahead failed (${errorMessage(err)})`);
      return;
    }
    // Warm: the batches waiting for a slot go now, while this one's Effects are applied.
    this.warmAtMs = this.opts.now();
    this.pump();
    const byUid = new Map(decisions.map((d) => [d.uid, d]));
    let placed = 0;
    await forEachAtMost(batch, APPLY_CONCURRENCY, async ({ uid, entry, pod }) => {
      const decision = byUid.get(uid);
      // A filter stopped waiting and decided the pod live: its annotations are the live decision's, not to be overwritten.
      if (this.entries.get(uid) !== entry) return;
      let outcome: Entry;
      if (this.opts.now() - entry.sinceMs >= this.claimHeldMs()) {
        // Too late: other replicas may have stopped waiting for it (`claimHeldMs`).
        outcome = { state: 'notUsable', note: `the batch deciding this pod ahead answered ${Math.round((this.opts.now() - entry.sinceMs) / 1000)} s after the claim, too late to be used` };
        void this.giveUp(pod);
      } else if (decision === undefined) {
        outcome = { state: 'notUsable', note: 'the batch deciding this pod ahead did not answer for it' };
        void this.giveUp(pod);
      } else outcome = await this.apply(pod, decision);
      if (outcome.state === 'decided') placed++;
      if (this.entries.get(uid) === entry) this.entries.set(uid, outcome);
      entry.settle();
    });
    this.opts.logger.info('PodsDecidedAhead', { pods: batch.length, placed });
  }

  /**
   * Marks this replica's claim on the pod as settled without a decision, so no replica waits for one. Never fails: a
   * patch refused is logged (other replicas' wait for a claim is bounded anyway).
   */
  private async giveUp(pod: JsonObject): Promise<void> {
    const metadata = objectField(pod, 'metadata');
    const ref = { namespace: String(metadata.namespace ?? ''), name: String(metadata.name ?? ''), uid: String(metadata.uid ?? '') };
    await this.opts.writer
      .patchPodMetadata({ kind: 'PatchPodAnnotations', ...ref, annotations: { [DECIDED_AHEAD_ANNOTATION]: AHEAD_NONE_VALUE } })
      .catch((err: unknown) => this.opts.logger.warn('AheadClaimNotReleased', { pod: `${ref.namespace}/${ref.name}`, error: errorMessage(err) }));
  }

  /** Applies a decision's Effects, with the fingerprint of the pod it was made for; what the filter will find. */
  private async apply(pod: JsonObject, decision: AheadDecision): Promise<Entry> {
    const podName = `${decision.namespace}/${decision.name}`;
    if (decision.status !== 'fit' || decision.node === undefined) {
      // Other replicas waiting for this decision learn from the pod that there is none.
      await this.giveUp(pod);
      if (decision.status === 'skipped') return { state: 'spent' };
      if (decision.status === 'noFit') {
        const reasons = Object.keys(decision.failedNodes ?? {}).length;
        return { state: 'notUsable', note: `the decision made ahead found no fit (${reasons} nodes failed); the cluster may have changed since` };
      }
      return { state: 'notUsable', note: `the decision made ahead failed (${decision.error ?? 'no node'})` };
    }
    const fingerprint = podFingerprint(pod);
    const effects: Effect[] = decision.Effects.map((e) =>
      e.kind === 'PatchPodAnnotations' ? { ...e, annotations: { ...e.annotations, [DECIDED_AHEAD_POD_ANNOTATION]: fingerprint } } : e,
    );
    const applied = await applyEffects(effects, this.opts.writer, this.opts.logger);
    if (!applied.ok) {
      // The booking stands until the live filter replaces it or the reservation expires.
      this.opts.logger.warn('AheadDecisionNotApplied', { pod: podName, node: decision.node, error: applied.error });
      return { state: 'notUsable', note: `the decision made ahead (node ${decision.node}) could not be written to the pod (${applied.error})` };
    }
    const patch = effects.find((e) => e.kind === 'PatchPodAnnotations');
    const marked = patch?.kind === 'PatchPodAnnotations' ? markedDecision(stringRecord(patch.annotations)) : undefined;
    return { state: 'decided', node: decision.node, fingerprint, atMs: marked !== undefined ? marked.timeS * 1000 : this.opts.now() };
  }
}

function settlement(): { settled: Promise<void>; settle: () => void } {
  let settle = (): void => undefined;
  const settled = new Promise<void>((resolve) => {
    settle = resolve;
  });
  return { settled, settle };
}

function queueKeys(pod: JsonObject): { priority: number; createdMs: number | undefined } {
  const priority = objectField(pod, 'spec').priority;
  const created = objectField(pod, 'metadata').creationTimestamp;
  const createdMs = typeof created === 'string' ? Date.parse(created) : created instanceof Date ? created.getTime() : undefined;
  return { priority: typeof priority === 'number' ? priority : 0, createdMs: createdMs !== undefined && Number.isFinite(createdMs) ? createdMs : undefined };
}

function stringRecord(obj: Readonly<Record<string, unknown>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(obj)) if (typeof v === 'string') out[k] = v;
  return out;
}
