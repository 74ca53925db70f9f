/**
 * Whether the control plane answers, as the relay's own calls see it. Every call reports; the first failure
 * after success starts probing `/healthz` with backoff, and the first answer after failures (a probe's or any
 * call's) is a recovery, which the relay answers with nudges (nudger.ts). At start the state is unknown and a
 * probe runs at once, so "up" is known before the first nudge round.
 */
import type { AppLogger } from '../powertools';
import { backoffMs, type DelayFn } from './delay';

export type Reachability = 'unknown' | 'up' | 'down';

export interface ReachabilityOptions {
  /** True when the control plane answered the probe. */
  readonly probe: () => Promise<boolean>;
  readonly delay: DelayFn;
  readonly backoff: { readonly initialMs: number; readonly maxMs: number };
  readonly logger: AppLogger;
  /** Called on every change to `up`, with the state before it. */
  readonly onUp: (before: 'unknown' | 'down') => void;
}

export class ControlPlaneReachability {
  private state: Reachability = 'unknown';
  private probing = false;
  private readonly stopping = new AbortController();

  constructor(private readonly opts: ReachabilityOptions) {}

  start(): void {
    void this.probeUntilUp();
  }

  stop(): void {
    this.stopping.abort();
  }

  current(): Reachability {
    return this.state;
  }

  /** A call to the control plane answered (`true`) or failed for want of an answer (`false`). */
  report(answered: boolean, error?: string): void {
    if (this.stopping.signal.aborted) return;
    if (answered) {
      this.up();
      return;
    }
    if (this.state !== 'down') {
      this.opts.logger.warn('ControlPlaneUnreachable', { error });
      this.state = 'down';
    }
    void this.probeUntilUp();
  }

  private up(): void {
    const before = this.state;
    if (before === 'up') return;
    this.state = 'up';
    if (before === 'down') this.opts.logger.info('ControlPlaneReachableAgain');
    this.opts.onUp(before);
  }

  private async probeUntilUp(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      for (let attempt = 0; this.state !== 'up' && !this.stopping.signal.aborted; attempt++) {
        if (attempt > 0) await this.opts.delay(backoffMs(attempt - 1, this.opts.backoff.initialMs, this.opts.backoff.maxMs), this.stopping.signal);
        if (this.current() === 'up' || this.stopping.signal.aborted) break;
        let ok = false;
        try {
          ok = await this.opts.probe();
        } catch {
          ok = false;
        }
        if (ok && !this.stopping.signal.aborted) this.up();
      }
    } finally {
      this.probing = false;
    }
  }
}
