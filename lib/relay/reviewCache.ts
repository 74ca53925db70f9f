/**
 * TokenReviews and SubjectAccessReviews remembered for a few seconds (`RELAY_REVIEW_CACHE_SECONDS`, docs/relay.md).
 * The web console asks every few seconds, and the all-namespaces list asks once per namespace on a page; without a
 * cache each of those is a review sent to kube-apiserver. Kubernetes' own delegating authentication and
 * authorization (what aggregated API servers use) keep answers 10 s by default, and so do we: a revoked grant or
 * token is honoured within that time. Tokens are keyed by their SHA-256, never kept. A review that fails (throws)
 * is not kept; identical reviews asked at once share one call.
 */
import { createHash } from 'node:crypto';
import type { ReviewApis } from './userAuth';

export interface ReviewCacheOptions {
  /** How long an answer is reused; 0 sends every review. */
  readonly ttlMs: number;
  /** Epoch milliseconds. */
  readonly now: () => number;
  /** Answers kept at once; the oldest go first (default 4,096). */
  readonly maxEntries?: number;
}

const DEFAULT_MAX_ENTRIES = 4096;

export function cachingReviews(apis: ReviewApis, options: ReviewCacheOptions): ReviewApis {
  if (options.ttlMs <= 0) return apis;
  const answers = new ExpiringAnswers(options.ttlMs, options.now, options.maxEntries ?? DEFAULT_MAX_ENTRIES);
  return {
    authn: {
      createTokenReview: (param) => {
        const spec = param.body.spec;
        const key = `token:${createHash('sha256').update(spec.token ?? '').digest('base64url')}:${JSON.stringify(spec.audiences ?? [])}`;
        return answers.get(key, () => apis.authn.createTokenReview(param));
      },
    },
    authz: {
      createSubjectAccessReview: (param) => answers.get(`access:${JSON.stringify(param.body.spec)}`, () => apis.authz.createSubjectAccessReview(param)),
    },
  };
}

/** Answers by key until they expire; an answer still on its way is shared, one that fails is forgotten. */
class ExpiringAnswers {
  private readonly entries = new Map<string, { readonly expiresAtMs: number; readonly answer: Promise<unknown> }>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly maxEntries: number,
  ) {}

  get<T>(key: string, ask: () => Promise<T>): Promise<T> {
    const nowMs = this.now();
    const kept = this.entries.get(key);
    if (kept !== undefined && kept.expiresAtMs > nowMs) return kept.answer as Promise<T>;
    const answer = ask();
    const entry = { expiresAtMs: nowMs + this.ttlMs, answer };
    // Re-inserted, so the map stays oldest first.
    this.entries.delete(key);
    this.entries.set(key, entry);
    answer.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return answer;
  }
}
