/**
 * What unknown bearer tokens may cost: token buckets per client and overall, on an injected clock; tokens that
 * authenticated lately pass uncounted; log lines of a flood are sampled.
 */
import { LogSampler, TokenBucket, UnknownTokenGate } from '../../../lib/relay/tokenGate';

const clock = () => {
  const c = { ms: 1_000_000, now: () => c.ms };
  return c;
};

describe('TokenBucket', () => {
  it('holds its capacity, regains per minute continuously, never beyond capacity, and says how long until the next', () => {
    const c = clock();
    const bucket = new TokenBucket(3, 60, c.ms);
    for (let i = 0; i < 3; i++) {
      expect(bucket.waitMs(c.ms)).toBe(0);
      bucket.take(c.ms);
    }
    expect(bucket.waitMs(c.ms)).toBe(1000);
    c.ms += 400;
    expect(bucket.waitMs(c.ms)).toBe(600);
    c.ms += 600;
    expect(bucket.waitMs(c.ms)).toBe(0);
    c.ms += 3_600_000;
    for (let i = 0; i < 3; i++) bucket.take(c.ms);
    expect(bucket.waitMs(c.ms)).toBe(1000);
  });

  it('regains nothing when the clock steps back', () => {
    const bucket = new TokenBucket(1, 60, 10_000);
    bucket.take(10_000);
    expect(bucket.waitMs(5_000)).toBe(1000);
    expect(bucket.waitMs(10_500)).toBe(500);
  });
});

describe('LogSampler', () => {
  it('logs the first line of a window per key, and tells the next line logged how many were left out', () => {
    const c = clock();
    const sampler = new LogSampler(60_000, c.now);
    expect(sampler.sample('TokenRejected')).toBe(0);
    expect(sampler.sample('TokenRejected')).toBeUndefined();
    expect(sampler.sample('TokenRejected')).toBeUndefined();
    expect(sampler.sample('TokenReviewsLimited:client')).toBe(0);
    c.ms += 59_999;
    expect(sampler.sample('TokenRejected')).toBeUndefined();
    c.ms += 1;
    expect(sampler.sample('TokenRejected')).toBe(3);
    expect(sampler.sample('TokenReviewsLimited:client')).toBe(0);
  });
});

describe('UnknownTokenGate', () => {
  const gate = (c: ReturnType<typeof clock>, perClient = 3, overall = 5) => new UnknownTokenGate({ perClient: { perMinute: perClient }, overall: { perMinute: overall }, now: c.now });

  it('admits a client its burst of unknown tokens, then answers how long to wait', () => {
    const c = clock();
    const g = gate(c);
    expect([1, 2, 3].map((i) => g.admit(`random-${i}`, '10.0.0.1'))).toEqual([{ admitted: true }, { admitted: true }, { admitted: true }]);
    expect(g.admit('random-4', '10.0.0.1')).toEqual({ admitted: false, limit: 'client', retryAfterSeconds: 20 });
    c.ms += 20_000;
    expect(g.admit('random-5', '10.0.0.1')).toEqual({ admitted: true });
  });

  it('bounds all clients together too', () => {
    const c = clock();
    const g = gate(c);
    for (let i = 0; i < 3; i++) expect(g.admit(`a-${i}`, '10.0.0.1').admitted).toBe(true);
    for (let i = 0; i < 2; i++) expect(g.admit(`b-${i}`, '10.0.0.2').admitted).toBe(true);
    expect(g.admit('b-2', '10.0.0.2')).toEqual({ admitted: false, limit: 'overall', retryAfterSeconds: 12 });
    // A refused review costs the client nothing.
    c.ms += 12_000;
    expect(g.admit('b-3', '10.0.0.2').admitted).toBe(true);
  });

  it('lets a token that authenticated pass uncounted through a flood, for an hour', () => {
    const c = clock();
    const g = gate(c);
    expect(g.admit('alice', '10.0.0.1').admitted).toBe(true);
    g.authenticated('alice');
    for (let i = 0; i < 10; i++) g.admit(`flood-${i}`, '10.0.0.1');
    expect(g.admit('flood-x', '10.0.0.1').admitted).toBe(false);
    expect(g.admit('alice', '10.0.0.1')).toEqual({ admitted: true });
    c.ms += 3_600_000;
    // An hour on, alice is unknown again (the buckets have refilled meanwhile).
    expect(g.admit('alice', '10.0.0.1')).toEqual({ admitted: true });
    for (let i = 0; i < 2; i++) g.admit(`again-${i}`, '10.0.0.1');
    expect(g.admit('alice', '10.0.0.1').admitted).toBe(false);
  });

  it('remembers a bounded number of clients, forgetting the least recently seen', () => {
    const c = clock();
    const g = new UnknownTokenGate({ perClient: { perMinute: 1 }, overall: { perMinute: 1000 }, now: c.now, maxEntries: 2 });
    expect(g.admit('t1', 'a').admitted).toBe(true);
    expect(g.admit('t2', 'b').admitted).toBe(true);
    expect(g.admit('t3', 'a').admitted).toBe(false);
    // A third client pushes out the least recently seen (b), whose next token is then admitted afresh.
    expect(g.admit('t4', 'c').admitted).toBe(true);
    expect(g.admit('t5', 'a').admitted).toBe(false);
    expect(g.admit('t6', 'b').admitted).toBe(true);
  });
});
