/**
 * Forwards watch events to the control plane's `POST /cluster/events` (CONTRACT section 4) in batches
 * bounded by size and by time, one batch in flight at a time so order is kept, retrying with exponential
 * backoff until the control plane takes them: nothing the relay saw is dropped because of an outage.
 */
import type { AppLogger } from '../powertools';
import type { ControlPlaneClient } from './controlPlane';
import { backoffMs, realDelay, type DelayFn } from './delay';
import { splitEffects, type Effect } from './effects';

export interface ClusterWatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: Record<string, unknown>;
}

export interface ForwarderOptions {
  readonly controlPlane: ControlPlaneClient;
  readonly logger: AppLogger;
  readonly maxEvents: number;
  readonly maxDelayMs: number;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
  readonly requestTimeoutMs: number;
  readonly delay?: DelayFn;
  /** Kubernetes writes the control plane returns for applied events (Warning events); applied best effort. */
  readonly onEffects?: (effects: readonly Effect[]) => Promise<void>;
}

export interface ForwarderStats {
  readonly accepted: number;
  readonly rejected: number;
  readonly failedAttempts: number;
  readonly pending: number;
}

export class ClusterEventForwarder {
  private pending: ClusterWatchEvent[] = [];
  private pump: Promise<void> | undefined;
  private wakeBatch: (() => void) | undefined;
  private readonly closing = new AbortController();
  private readonly delay: DelayFn;
  private accepted = 0;
  private rejected = 0;
  private failedAttempts = 0;
  private seq = 0;

  constructor(private readonly opts: ForwarderOptions) {
    this.delay = opts.delay ?? realDelay;
  }

  enqueue(event: ClusterWatchEvent): void {
    if (this.closing.signal.aborted) return;
    this.pending.push(event);
    if (this.pending.length >= this.opts.maxEvents) this.wakeBatch?.();
    this.pump ??= this.run().finally(() => {
      this.pump = undefined;
    });
  }

  /**
   * The change-journal entry the last delivered batch produced: a decision must be made on a view that includes
   * it, so the extender sends it with each /filter (docs/state.md, "Warm view").
   */
  get viewSeq(): number {
    return this.seq;
  }

  stats(): ForwarderStats {
    return { accepted: this.accepted, rejected: this.rejected, failedAttempts: this.failedAttempts, pending: this.pending.length };
  }

  /** Resolves once everything enqueued so far has been delivered (or the forwarder closed). */
  async idle(): Promise<void> {
    while (this.pump !== undefined) await this.pump;
  }

  /** Stops retrying; undelivered events are dropped (the next relist re-sends the cluster's state). */
  close(): void {
    this.closing.abort();
    this.wakeBatch?.();
  }

  private async run(): Promise<void> {
    const signal = this.closing.signal;
    while (this.pending.length > 0 && !signal.aborted) {
      if (this.pending.length < this.opts.maxEvents && this.opts.maxDelayMs > 0) {
        // Time bound: wait a little for more events, unless the batch fills first.
        const full = new Promise<void>((resolve) => {
          this.wakeBatch = resolve;
        });
        await Promise.race([this.delay(this.opts.maxDelayMs, signal), full]);
        this.wakeBatch = undefined;
      } else {
        // Without a window, still let events enqueued in the same turn (a list's items) share the batch.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      const batch = this.pending.splice(0, this.opts.maxEvents);
      await this.deliver(batch, signal);
    }
  }

  private async deliver(batch: ClusterWatchEvent[], signal: AbortSignal): Promise<void> {
    for (let attempt = 0; !signal.aborted; attempt++) {
      const failure = await this.send(batch);
      if (failure === undefined) return;
      this.failedAttempts++;
      const wait = backoffMs(attempt, this.opts.backoff.initialMs, this.opts.backoff.maxMs);
      this.opts.logger.warn('ClusterEventsRetry', { events: batch.length, attempt: attempt + 1, retryInMs: wait, error: failure });
      await this.delay(wait, signal);
    }
  }

  /** Returns undefined when the batch is done with (delivered, or refused for good), else the retryable error. */
  private async send(batch: ClusterWatchEvent[]): Promise<string | undefined> {
    let res;
    try {
      res = await this.opts.controlPlane.post('/cluster/events', { events: batch }, { timeoutMs: this.opts.requestTimeoutMs });
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
    if (res.status === 429 || res.status >= 500) return `HTTP ${res.status}: ${res.text.slice(0, 300)}`;
    if (res.status !== 200) {
      // The whole batch was refused as malformed; sending it again cannot help.
      this.rejected += batch.length;
      this.opts.logger.error('ClusterEventsRefused', { events: batch.length, status: res.status, body: res.text.slice(0, 300) });
      return undefined;
    }
    const body = res.body as { accepted?: unknown; rejected?: unknown; viewSeq?: unknown } | undefined;
    if (typeof body?.viewSeq === 'number' && Number.isSafeInteger(body.viewSeq)) this.seq = Math.max(this.seq, body.viewSeq);
    const { effects, invalid } = splitEffects(res.body);
    if (invalid !== undefined) this.opts.logger.warn('ClusterEventsEffectsInvalid', { error: invalid });
    if (effects.length > 0 && this.opts.onEffects) await this.opts.onEffects(effects);
    const rejected = Array.isArray(body?.rejected) ? (body.rejected as { index?: unknown; error?: unknown }[]) : [];
    this.accepted += typeof body?.accepted === 'number' ? body.accepted : batch.length - rejected.length;
    this.rejected += rejected.length;
    for (const r of rejected) {
      const ev = typeof r.index === 'number' ? batch[r.index] : undefined;
      const meta = ev?.object.metadata as { name?: string; namespace?: string } | undefined;
      this.opts.logger.warn('ClusterEventRejected', {
        kind: ev?.object.kind,
        object: meta ? `${meta.namespace ?? ''}/${meta.name ?? ''}` : undefined,
        error: r.error,
      });
    }
    return undefined;
  }
}
