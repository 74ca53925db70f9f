/**
 * Forwards watch events to the control plane's `POST /cluster/events` (docs/relay.md) in batches bounded by
 * size and by time, one batch in flight at a time so order is kept, retrying with exponential backoff until the
 * control plane takes them: nothing the relay saw is dropped because of an outage. Complete lists (what a
 * finished list or re-list holds) travel in the same queue, behind the events they cover. The Kubernetes writes
 * an answer returns (Effects) are applied in answer order while the next batches go out, a few answers at most.
 */
import type { AppLogger } from '../powertools';
import type { ControlPlaneClient } from './controlPlane';
import { backoffMs, realDelay, type DelayFn } from './delay';
import { splitEffects, type Effect } from '../wire/effects';
import { clusterEventsAnswerSchema, type CompleteList } from '../wire/clusterEvents';
import { errorMessage } from '../errors';

export interface ClusterWatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: Record<string, unknown>;
}

interface QueuedList {
  readonly complete: CompleteList;
  readonly refusedBefore: number;
  /** Its weight as JSON, in bytes (see `ForwarderOptions.maxBytes`). */
  readonly bytes: number;
}
type QueueItem = { readonly event: ClusterWatchEvent; readonly bytes: number } | QueuedList;

export interface ForwarderOptions {
  readonly controlPlane: ControlPlaneClient;
  readonly logger: AppLogger;
  /** A batch goes once this many events wait (or `maxDelayMs` after its first event). */
  readonly maxEvents: number;
  /**
   * The most events one batch carries when more than `maxEvents` wait (a backlog, as in a burst of pods): the control
   * plane takes larger batches for less per event, so a backlog drains sooner (docs/relay.md). At least `maxEvents`.
   */
  readonly backlogEvents: number;
  /**
   * The most a batch's events and complete list may weigh as JSON, in bytes: a Lambda function takes at most 6 MB, and
   * objects are forwarded whole. An event or list heavier than this goes alone.
   */
  readonly maxBytes: number;
  readonly maxDelayMs: number;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
  readonly requestTimeoutMs: number;
  readonly delay?: DelayFn;
  /** Kubernetes writes the control plane returns for applied events (Warning events); applied best effort. */
  readonly onEffects?: (effects: readonly Effect[]) => Promise<void>;
  /** Told after every attempt whether the control plane answered (any status below 500 but 429) or not. */
  readonly onReachability?: (reachable: boolean, error?: string) => void;
  /**
   * Whether an event may end a node lock someone waits for (lib/relay/bindQueue.ts): its batch goes without waiting
   * out the window (docs/relay.md, "Bind hand-over").
   */
  readonly isUrgent?: (event: ClusterWatchEvent) => boolean;
  /** Told of each batch the control plane took (answered 200), in order. */
  readonly onDelivered?: (events: readonly ClusterWatchEvent[]) => void;
}

/** Answers whose Effects may still be under way while the next batch is sent (then the pump waits for the oldest). */
const EFFECTS_IN_FLIGHT = 4;

export interface ForwarderStats {
  readonly accepted: number;
  readonly rejected: number;
  readonly failedAttempts: number;
  readonly pending: number;
}

export class ClusterEventForwarder {
  private pending: QueueItem[] = [];
  private pendingEvents = 0;
  private pendingLists = 0;
  /** Batches the control plane refused for good (4xx): a complete list whose events one of them carried is not sent. */
  private refusedBatches = 0;
  private pump: Promise<void> | undefined;
  /** Effects of delivered answers being applied, oldest first; each starts when the one before it has ended. */
  private effects: Promise<void>[] = [];
  private wakeBatch: (() => void) | undefined;
  private readonly closing = new AbortController();
  private readonly delay: DelayFn;
  private accepted = 0;
  private rejected = 0;
  private failedAttempts = 0;
  private seq = 0;
  /** An urgent event waits in the queue: the next batch goes at once. */
  private urgent = false;

  constructor(private readonly opts: ForwarderOptions) {
    this.delay = opts.delay ?? realDelay;
  }

  enqueue(event: ClusterWatchEvent): void {
    if (this.closing.signal.aborted) return;
    this.pending.push({ event, bytes: jsonBytes(event) });
    this.pendingEvents++;
    if (this.opts.isUrgent?.(event) === true) this.urgent = true;
    if (this.pendingEvents >= this.opts.maxEvents || this.urgent) this.wakeBatch?.();
    this.startPump();
  }

  /**
   * Queues a complete list behind every event enqueued so far (the list's own events included): it closes the
   * batch that carries them, so the control plane has them all before it drops what the list lacks. `mark` is
   * `refusals()` taken before the list's events were enqueued; if a batch is refused for good after that, the
   * list is not sent (a list whose events did not all arrive must not drop anything).
   */
  enqueueComplete(list: CompleteList, mark: number): void {
    if (this.closing.signal.aborted) return;
    this.pending.push({ complete: list, refusedBefore: mark, bytes: jsonBytes(list) });
    this.pendingLists++;
    this.wakeBatch?.();
    this.startPump();
  }

  /** How many batches were refused for good so far (see enqueueComplete). */
  refusals(): number {
    return this.refusedBatches;
  }

  private startPump(): void {
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
    return { accepted: this.accepted, rejected: this.rejected, failedAttempts: this.failedAttempts, pending: this.pendingEvents };
  }

  /** Resolves once everything enqueued so far has been delivered and its Effects applied (or the forwarder closed). */
  async idle(): Promise<void> {
    while (this.pump !== undefined || this.effects.length > 0) {
      await this.pump;
      await Promise.all(this.effects);
    }
  }

  /** Stops retrying; undelivered events are dropped (the next relist re-sends the cluster's state). */
  close(): void {
    this.closing.abort();
    this.wakeBatch?.();
  }

  private async run(): Promise<void> {
    const signal = this.closing.signal;
    while (this.pending.length > 0 && !signal.aborted) {
      // A waiting complete list goes at once: its batch is closed already.
      if (this.pendingEvents < this.opts.maxEvents && this.opts.maxDelayMs > 0 && this.pendingLists === 0 && !this.urgent) {
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
      this.urgent = false;
      const { events, complete } = this.takeBatch();
      await this.deliver(events, complete, signal);
    }
  }

  /**
   * Events in order, up to `backlogEvents` and `maxBytes` (the first item always goes); a complete list ends the batch
   * it falls in, or starts the next one when it would make this one too heavy.
   */
  private takeBatch(): { events: ClusterWatchEvent[]; complete: QueuedList | undefined } {
    const events: ClusterWatchEvent[] = [];
    const most = Math.max(this.opts.maxEvents, this.opts.backlogEvents);
    let taken = 0;
    let bytes = 0;
    let complete: QueuedList | undefined;
    for (const item of this.pending) {
      if (taken > 0 && bytes + item.bytes > this.opts.maxBytes) break;
      if ('complete' in item) {
        taken++;
        complete = item;
        this.pendingLists--;
        break;
      }
      if (events.length >= most) break;
      events.push(item.event);
      bytes += item.bytes;
      taken++;
    }
    this.pending.splice(0, taken);
    this.pendingEvents -= events.length;
    return { events, complete };
  }

  private async deliver(batch: ClusterWatchEvent[], queued: QueuedList | undefined, signal: AbortSignal): Promise<void> {
    let complete = queued?.complete;
    if (queued !== undefined && this.refusedBatches > queued.refusedBefore) {
      this.opts.logger.warn('CompleteListNotSent', { kind: queued.complete.kind, resourceVersion: queued.complete.resourceVersion, reason: 'a batch of its events was refused' });
      complete = undefined;
    }
    if (batch.length === 0 && complete === undefined) return;
    for (let attempt = 0; !signal.aborted; attempt++) {
      const failure = await this.send(batch, complete, attempt > 0);
      if (failure === undefined) return;
      this.failedAttempts++;
      const wait = backoffMs(attempt, this.opts.backoff.initialMs, this.opts.backoff.maxMs);
      this.opts.logger.warn('ClusterEventsRetry', { events: batch.length, attempt: attempt + 1, retryInMs: wait, error: failure });
      await this.delay(wait, signal);
    }
  }

  /**
   * Returns undefined when the batch is done with (delivered, or refused for good), else the retryable error. A
   * batch sent again says so (`resend`): its first answer was lost, and with it what that answer reported.
   */
  private async send(batch: ClusterWatchEvent[], complete: CompleteList | undefined, resend: boolean): Promise<string | undefined> {
    let res;
    try {
      const body = { events: batch, ...(complete !== undefined ? { complete: [complete] } : {}), ...(resend ? { resend: true } : {}) };
      res = await this.opts.controlPlane.post('/cluster/events', body, { timeoutMs: this.opts.requestTimeoutMs });
    } catch (err) {
      const error = errorMessage(err);
      this.opts.onReachability?.(false, error);
      return error;
    }
    if (res.status === 429 || res.status >= 500) {
      this.opts.onReachability?.(false, `HTTP ${res.status}`);
      return `HTTP ${res.status}: ${res.text.slice(0, 300)}`;
    }
    this.opts.onReachability?.(true);
    if (res.status === 200) this.opts.onDelivered?.(batch);
    if (complete !== undefined && res.status === 200) {
      this.opts.logger.info('CompleteListSent', { kind: complete.kind, resourceVersion: complete.resourceVersion, keys: complete.keys.length });
    }
    if (res.status !== 200) {
      // The whole batch was refused as malformed; sending it again cannot help.
      this.refusedBatches++;
      this.rejected += batch.length;
      this.opts.logger.error('ClusterEventsRefused', { events: batch.length, status: res.status, body: res.text.slice(0, 300) });
      return undefined;
    }
    // Effects are read on their own (any letter case, an invalid list reported): the counts and the journal entry
    // still count when only the Effects are off.
    const { rest, effects, invalid } = splitEffects(res.body);
    if (invalid !== undefined) this.opts.logger.warn('ClusterEventsEffectsInvalid', { error: invalid });
    if (effects.length > 0 && this.opts.onEffects) await this.applyInOrder(this.opts.onEffects, effects);
    const answer = clusterEventsAnswerSchema.omit({ Effects: true }).safeParse(rest);
    if (!answer.success) {
      // Delivered (a 200), but the counts cannot be read: counted as all accepted, and said.
      this.accepted += batch.length;
      this.opts.logger.warn('ClusterEventsAnswerInvalid', { error: answer.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
      return undefined;
    }
    const { accepted, rejected, viewSeq } = answer.data;
    if (viewSeq !== undefined && Number.isSafeInteger(viewSeq)) this.seq = Math.max(this.seq, viewSeq);
    this.accepted += accepted;
    this.rejected += rejected.length;
    for (const r of rejected) {
      const ev = batch[r.index];
      const meta = ev?.object.metadata;
      const named = meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>) : undefined;
      this.opts.logger.warn('ClusterEventRejected', {
        kind: ev?.object.kind,
        object: named ? `${String(named.namespace ?? '')}/${String(named.name ?? '')}` : undefined,
        error: r.error,
      });
    }
    return undefined;
  }

  /**
   * Queues an answer's Effects behind the earlier answers' and returns once the pump may go on: at once, unless
   * `EFFECTS_IN_FLIGHT` answers are still being applied (then when the oldest is done). A failure is the applier's
   * to log (Effects are best effort); it does not stop the ones after it.
   */
  private async applyInOrder(apply: (effects: readonly Effect[]) => Promise<void>, effects: readonly Effect[]): Promise<void> {
    const previous = this.effects[this.effects.length - 1] ?? Promise.resolve();
    const applied: Promise<void> = previous
      .then(() => apply(effects))
      .catch((err: unknown) => this.opts.logger.warn('ClusterEventsEffectsFailed', { error: errorMessage(err) }))
      .finally(() => {
        this.effects = this.effects.filter((p) => p !== applied);
      });
    this.effects.push(applied);
    if (this.effects.length > EFFECTS_IN_FLIGHT) await this.effects[0];
  }
}

/** What a value weighs in the batch's JSON, in bytes. */
function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}
