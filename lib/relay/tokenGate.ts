/**
 * Bounds what unknown bearer tokens cost (docs/relay.md, "Unknown tokens are rate limited"). Every token the relay
 * has no answer for costs a TokenReview, sent under the relay's own identity and so sharing its API rate limit (API
 * Priority and Fairness) with its watches, bindings and events: a flood of random tokens would slow the bindings.
 * So a review of a token that has not authenticated lately is admitted only while two token buckets hold one: the
 * client's (its source address) and everyone's; past them the caller gets 429 with Retry-After and no review is
 * sent. A token that authenticated within the last hour is not counted, so users already signed in are served
 * through a flood (their reviews are reused for seconds anyway, lib/relay/reviewCache.ts). Tokens are kept only
 * as SHA-256 digests. Time is injected; nothing here waits.
 */
import { createHash } from 'node:crypto';

/** A bucket of `capacity` that regains `perMinute` per minute, continuously. */
export class TokenBucket {
  private tokens: number;
  private updatedMs: number;

  constructor(
    private readonly capacity: number,
    private readonly perMinute: number,
    nowMs: number,
  ) {
    this.tokens = capacity;
    this.updatedMs = nowMs;
  }

  /** Milliseconds until one token is there (0: now). */
  waitMs(nowMs: number): number {
    this.refill(nowMs);
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) * 60_000) / this.perMinute);
  }

  take(nowMs: number): void {
    this.refill(nowMs);
    this.tokens = Math.max(0, this.tokens - 1);
  }

  private refill(nowMs: number): void {
    // A clock that steps back regains nothing.
    if (nowMs <= this.updatedMs) return;
    this.tokens = Math.min(this.capacity, this.tokens + ((nowMs - this.updatedMs) * this.perMinute) / 60_000);
    this.updatedMs = nowMs;
  }
}

/**
 * One log line per key and window: the first event of a window is logged, the rest counted; the next line logged
 * says how many were left out (`notLogged`).
 */
export class LogSampler {
  private readonly windows = new Map<string, { startMs: number; skipped: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  /** Undefined: leave this line out. A number: log it, with this many left out since the last one logged. */
  sample(key: string): number | undefined {
    const nowMs = this.now();
    const window = this.windows.get(key);
    if (window !== undefined && nowMs - window.startMs < this.windowMs && nowMs >= window.startMs) {
      window.skipped += 1;
      return undefined;
    }
    this.windows.set(key, { startMs: nowMs, skipped: 0 });
    return window?.skipped ?? 0;
  }
}

export interface BucketSettings {
  /** Reviews at once; regained at this many per minute. */
  readonly perMinute: number;
}

export interface TokenGateOptions {
  readonly perClient: BucketSettings;
  readonly overall: BucketSettings;
  /** Epoch milliseconds. */
  readonly now: () => number;
  /** How long a token that authenticated stays uncounted (default one hour). */
  readonly knownForMs?: number;
  /** Tokens remembered as known, and clients tracked, at most (the oldest go first; default 10,000 each). */
  readonly maxEntries?: number;
}

export type Admission = { readonly admitted: true } | { readonly admitted: false; readonly limit: 'client' | 'overall'; readonly retryAfterSeconds: number };

const HOUR_MS = 3_600_000;
const DEFAULT_MAX_ENTRIES = 10_000;

const digest = (token: string) => createHash('sha256').update(token).digest('base64url');

export class UnknownTokenGate {
  private readonly clients = new Map<string, TokenBucket>();
  private readonly known = new Map<string, number>();
  private readonly overall: TokenBucket;
  private readonly knownForMs: number;
  private readonly maxEntries: number;

  constructor(private readonly options: TokenGateOptions) {
    this.overall = new TokenBucket(options.overall.perMinute, options.overall.perMinute, options.now());
    this.knownForMs = options.knownForMs ?? HOUR_MS;
    this.maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  }

  /** Whether the review of `token`, asked by `client`, may be sent now; when it may and the token is unknown, it is counted. */
  admit(token: string, client: string): Admission {
    const nowMs = this.options.now();
    const knownUntil = this.known.get(digest(token));
    if (knownUntil !== undefined && knownUntil > nowMs) return { admitted: true };
    let bucket = this.clients.get(client);
    if (bucket === undefined) {
      bucket = new TokenBucket(this.options.perClient.perMinute, this.options.perClient.perMinute, nowMs);
      // Bounded: the least recently seen client is forgotten (the overall bucket still holds whoever comes back).
      while (this.clients.size >= this.maxEntries) this.clients.delete(this.clients.keys().next().value!);
    } else {
      this.clients.delete(client);
    }
    // Re-inserted: the map stays least recently seen first.
    this.clients.set(client, bucket);
    const clientWait = bucket.waitMs(nowMs);
    if (clientWait > 0) return { admitted: false, limit: 'client', retryAfterSeconds: Math.ceil(clientWait / 1000) };
    const overallWait = this.overall.waitMs(nowMs);
    if (overallWait > 0) return { admitted: false, limit: 'overall', retryAfterSeconds: Math.ceil(overallWait / 1000) };
    bucket.take(nowMs);
    this.overall.take(nowMs);
    return { admitted: true };
  }

  /** The token authenticated: its reviews are not counted for a while. */
  authenticated(token: string): void {
    const key = digest(token);
    this.known.delete(key);
    this.known.set(key, this.options.now() + this.knownForMs);
    while (this.known.size > this.maxEntries) this.known.delete(this.known.keys().next().value!);
  }
}
