/**
 * The user port reuses a TokenReview or SubjectAccessReview answer for a few seconds, per token and per question,
 * and never reuses a review that failed.
 */
import type { V1SubjectAccessReview, V1TokenReview } from '@kubernetes/client-node';
import { cachingReviews } from '../../../lib/relay/reviewCache';
import type { ReviewApis } from '../../../lib/relay/userAuth';

interface Counting {
  readonly apis: ReviewApis;
  readonly tokens: string[];
  readonly questions: string[];
  /** The next review of either kind throws. */
  failNext: boolean;
}

function counting(): Counting {
  const self: Counting = {
    tokens: [],
    questions: [],
    failNext: false,
    apis: {
      authn: {
        createTokenReview: async ({ body }) => {
          if (self.failNext) {
            self.failNext = false;
            throw new Error('apiserver unavailable');
          }
          self.tokens.push(body.spec.token ?? '');
          return { ...body, status: { authenticated: body.spec.token === 'good', user: { username: 'alice' } } } as V1TokenReview;
        },
      },
      authz: {
        createSubjectAccessReview: async ({ body }) => {
          self.questions.push(`${body.spec.user}:${body.spec.resourceAttributes?.namespace ?? '*'}`);
          return { ...body, status: { allowed: body.spec.resourceAttributes?.namespace === 'team-a' } } as V1SubjectAccessReview;
        },
      },
    },
  };
  return self;
}

const tokenReview = (token: string) => ({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } } });
const accessReview = (namespace: string) => ({
  body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: 'alice', resourceAttributes: { namespace, verb: 'get', resource: 'pods' } } },
});

describe('relay user port: review answers reused for a few seconds', () => {
  it('asks kube-apiserver once per token and per question within the time, and again after it', async () => {
    const api = counting();
    const clock = { now: 1_000_000 };
    const reviews = cachingReviews(api.apis, { ttlMs: 10_000, now: () => clock.now });
    expect((await reviews.authn.createTokenReview(tokenReview('good'))).status?.authenticated).toBe(true);
    expect((await reviews.authn.createTokenReview(tokenReview('good'))).status?.authenticated).toBe(true);
    expect((await reviews.authn.createTokenReview(tokenReview('bad'))).status?.authenticated).toBe(false);
    expect((await reviews.authz.createSubjectAccessReview(accessReview('team-a'))).status?.allowed).toBe(true);
    expect((await reviews.authz.createSubjectAccessReview(accessReview('team-b'))).status?.allowed).toBe(false);
    expect((await reviews.authz.createSubjectAccessReview(accessReview('team-a'))).status?.allowed).toBe(true);
    expect(api.tokens).toEqual(['good', 'bad']);
    expect(api.questions).toEqual(['alice:team-a', 'alice:team-b']);
    clock.now += 10_000;
    await reviews.authn.createTokenReview(tokenReview('good'));
    await reviews.authz.createSubjectAccessReview(accessReview('team-a'));
    expect(api.tokens).toEqual(['good', 'bad', 'good']);
    expect(api.questions).toEqual(['alice:team-a', 'alice:team-b', 'alice:team-a']);
  });

  it('shares a review asked twice at once, and forgets one that failed', async () => {
    const api = counting();
    const reviews = cachingReviews(api.apis, { ttlMs: 10_000, now: () => 0 });
    await Promise.all([reviews.authz.createSubjectAccessReview(accessReview('team-a')), reviews.authz.createSubjectAccessReview(accessReview('team-a'))]);
    expect(api.questions).toEqual(['alice:team-a']);
    api.failNext = true;
    await expect(reviews.authn.createTokenReview(tokenReview('good'))).rejects.toThrow('apiserver unavailable');
    expect((await reviews.authn.createTokenReview(tokenReview('good'))).status?.authenticated).toBe(true);
    expect(api.tokens).toEqual(['good']);
  });

  it('keeps at most the given number of answers, dropping the oldest, and keeps none with a time of 0', async () => {
    const api = counting();
    const reviews = cachingReviews(api.apis, { ttlMs: 10_000, now: () => 0, maxEntries: 2 });
    for (const namespace of ['n1', 'n2', 'n3', 'n1']) await reviews.authz.createSubjectAccessReview(accessReview(namespace));
    expect(api.questions).toEqual(['alice:n1', 'alice:n2', 'alice:n3', 'alice:n1']);
    const uncached = counting();
    const direct = cachingReviews(uncached.apis, { ttlMs: 0, now: () => 0 });
    await direct.authn.createTokenReview(tokenReview('good'));
    await direct.authn.createTokenReview(tokenReview('good'));
    expect(uncached.tokens).toEqual(['good', 'good']);
  });
});
