/**
 * Nudges: after the relay (re)starts, and when the control plane answers again after failures, every pod Pending
 * for our scheduler with no node gets the annotation `hami.io/requeue` set to the time. kube-scheduler parks a pod
 * whose extender call failed until an event moves it, or for up to five minutes; an update of the pod itself moves
 * it back to the active queue at once (a Node update does not, for GPU pods). docs/relay.md, "Nothing lost, nothing stalled".
 *
 * Bounded: at most `perSecond` patches per second per replica, and a pod whose `hami.io/requeue` is younger than
 * the window is skipped. Each patch names the uid and the resourceVersion the informer showed, so when two
 * replicas nudge at once the second patch of a pod meets 409 Conflict (the pod was updated, which is all a nudge
 * is for) instead of nudging it twice.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { REQUEUE_ANNOTATION } from '../control/effects';
import type { AppLogger } from '../powertools';
import type { DelayFn } from './delay';
import { objectField } from '../json';
import { errorMessage } from '../errors';

export interface NudgeTarget {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly resourceVersion: string;
}

/** What a nudge patch met: applied; the pod changed or was replaced since the informer saw it (409); gone (404). */
export type NudgeResult = 'nudged' | 'changed' | 'gone';

export interface NudgerOptions {
  readonly schedulerName: string;
  /** Patches per second (this replica); 0 turns nudging off. */
  readonly perSecond: number;
  /** A pod nudged (by anyone) less than this long ago is skipped. */
  readonly windowMs: number;
  /** The Pod informer's cache, or undefined before it has listed. */
  readonly pods: () => readonly KubernetesObject[] | undefined;
  /** Merge-patches the annotation with uid and resourceVersion as preconditions. Throws on other failures. */
  readonly patch: (target: NudgeTarget, annotations: Readonly<Record<string, string>>) => Promise<NudgeResult>;
  readonly logger: AppLogger;
  readonly delay: DelayFn;
  readonly now: () => Date;
}

/**
 * The pods to nudge, pure: for our scheduler, no node, Pending, not being deleted, and not nudged within the
 * window (a requeue time in the future, from a skewed clock, counts as recent).
 */
export function podsToNudge(pods: readonly unknown[], schedulerName: string, nowMs: number, windowMs: number): NudgeTarget[] {
  const targets: NudgeTarget[] = [];
  for (const pod of pods) {
    const metadata = objectField(pod, 'metadata');
    const spec = objectField(pod, 'spec');
    const phase = objectField(pod, 'status').phase ?? 'Pending';
    if (spec.schedulerName !== schedulerName || (typeof spec.nodeName === 'string' && spec.nodeName !== '') || phase !== 'Pending') continue;
    if (metadata.deletionTimestamp !== undefined && metadata.deletionTimestamp !== null) continue;
    const { name, namespace, uid, resourceVersion } = metadata;
    if (typeof name !== 'string' || typeof namespace !== 'string' || typeof uid !== 'string' || typeof resourceVersion !== 'string') continue;
    const last = objectField(metadata, 'annotations')[REQUEUE_ANNOTATION];
    const lastMs = typeof last === 'string' ? Date.parse(last) : Number.NaN;
    if (!Number.isNaN(lastMs) && Math.abs(nowMs - lastMs) < windowMs) continue;
    targets.push({ namespace, name, uid, resourceVersion });
  }
  return targets.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
}

export interface NudgeSummary {
  readonly reason: string;
  readonly candidates: number;
  readonly nudged: number;
  readonly changed: number;
  readonly gone: number;
  readonly failed: number;
}

export class Nudger {
  private running: Promise<void> | undefined;
  /** A reason that arrived while a round ran: one more round follows it. */
  private again: string | undefined;
  private readonly stopping = new AbortController();
  private readonly summaries: NudgeSummary[] = [];

  constructor(private readonly opts: NudgerOptions) {}

  /** Starts a round (or queues one behind the round under way); resolves when no round is left to run. */
  async nudgeAll(reason: string): Promise<void> {
    if (this.opts.perSecond === 0 || this.stopping.signal.aborted) return;
    if (this.running !== undefined) {
      this.again = reason;
      return this.idle();
    }
    this.running = this.rounds(reason).finally(() => {
      this.running = undefined;
    });
    return this.idle();
  }

  async idle(): Promise<void> {
    while (this.running !== undefined) await this.running;
  }

  /** What each finished round did (for tests and the readiness detail). */
  history(): readonly NudgeSummary[] {
    return this.summaries;
  }

  stop(): void {
    this.stopping.abort();
  }

  private async rounds(first: string): Promise<void> {
    for (let reason: string | undefined = first; reason !== undefined && !this.stopping.signal.aborted; ) {
      await this.round(reason);
      reason = this.again;
      this.again = undefined;
    }
  }

  private async round(reason: string): Promise<void> {
    const pods = this.opts.pods();
    if (pods === undefined) {
      this.opts.logger.info('NudgeSkipped', { reason, why: 'the pod informer has not listed yet' });
      return;
    }
    const now = this.opts.now();
    const targets = podsToNudge(pods, this.opts.schedulerName, now.getTime(), this.opts.windowMs);
    const counts = { nudged: 0, changed: 0, gone: 0, failed: 0 };
    const spacingMs = 1000 / this.opts.perSecond;
    for (const [i, target] of targets.entries()) {
      if (this.stopping.signal.aborted) break;
      if (i > 0) await this.opts.delay(spacingMs, this.stopping.signal);
      if (this.stopping.signal.aborted) break;
      try {
        counts[await this.opts.patch(target, { [REQUEUE_ANNOTATION]: this.opts.now().toISOString() })]++;
      } catch (err) {
        counts.failed++;
        this.opts.logger.warn('NudgeFailed', { pod: `${target.namespace}/${target.name}`, error: errorMessage(err) });
      }
    }
    const summary = { reason, candidates: targets.length, ...counts };
    this.summaries.push(summary);
    this.opts.logger.info('PodsNudged', summary);
  }
}
