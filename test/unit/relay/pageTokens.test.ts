/**
 * The user port's continue tokens: sealed with AES-256-GCM under a key every replica derives from the Secret they
 * share; they say nothing of what they wrap, their length depends on nothing hidden, and any change is refused.
 */
import { createHash } from 'node:crypto';
import { BadRequestError } from '../../../lib/errors';
import { PageTokens } from '../../../lib/relay/pageTokens';
import { PageTokenExpiredError } from '../../../lib/relay/errors';

/** Deterministic bytes: a counter, so two tokens never share a nonce and a run is repeatable. */
function countingBytes(): (size: number) => Buffer {
  let n = 0;
  return (size) => Buffer.from(Array.from({ length: size }, () => n++ % 256));
}

const tokens = (secret: string | undefined = 'tls-key-pem') => new PageTokens({ sharedSecret: () => secret, randomBytes: countingBytes() });

/** What the control plane's tokens carry: hashes of namespace and pod name. */
const upstreamToken = (namespace: string, name: string) =>
  Buffer.from(JSON.stringify({ v: 1, k: 'schedulerlogs', s: '', p: `7:${createHash('sha256').update(namespace).digest().subarray(0, 16).toString('base64url')}#${createHash('sha256').update(name).digest().subarray(0, 16).toString('base64url')}` })).toString('base64url');

const refusal = (open: () => unknown): string => {
  try {
    open();
  } catch (err) {
    return `${(err as Error).constructor.name}: ${(err as Error).message}`;
  }
  return 'opened';
};

describe('relay page tokens', () => {
  it('opens what it sealed, for the same list only', () => {
    const pages = tokens();
    const position = { upstream: upstreamToken('team-b', 'secret-pod'), skip: 17, first: 'team-a/a2' };
    const token = pages.seal('schedulerlogs', position);
    expect(pages.open('schedulerlogs', token)).toEqual(position);
    expect(pages.open('nodes', pages.seal('nodes', { skip: 0 }))).toEqual({ skip: 0 });
    expect(refusal(() => pages.open('schedulerlogs/team-a', token))).toBe('BadRequestError: continue token belongs to another list');
  });

  it('shows nothing of what it wraps: no namespace, no name, no hash, not the upstream token', () => {
    const upstream = upstreamToken('team-b', 'secret-pod');
    const token = tokens().seal('schedulerlogs', { upstream, skip: 3, first: 'team-a/a2' });
    const raw = Buffer.from(token, 'base64url');
    const hash = createHash('sha256').update('team-b').digest();
    for (const needle of ['team-b', 'team-a', 'secret-pod', upstream, Buffer.from(upstream, 'base64url').toString('utf8'), 'schedulerlogs']) {
      expect(raw.includes(Buffer.from(needle, 'utf8'))).toBe(false);
      expect(token).not.toContain(needle);
    }
    expect(raw.includes(hash.subarray(0, 8))).toBe(false);
    expect(raw.toString('latin1')).not.toContain(hash.subarray(0, 16).toString('base64url').slice(0, 12));
    expect(token).not.toContain(hash.subarray(0, 16).toString('base64url').slice(0, 12));
  });

  it('has one length whatever the upstream token and the skip, which carry positions among hidden items', () => {
    const pages = tokens();
    const lengths = new Set([
      pages.seal('schedulerlogs', { skip: 0 }).length,
      pages.seal('schedulerlogs', { upstream: 'MTo', skip: 0 }).length,
      pages.seal('schedulerlogs', { upstream: upstreamToken('team-b', 'x'), skip: 999 }).length,
      pages.seal('schedulerlogs', { upstream: 'x'.repeat(384), skip: 65_535 }).length,
    ]);
    expect(lengths.size).toBe(1);
  });

  it('refuses every changed byte: 400 for the sealed part, 410 where the key id no longer names a key held', () => {
    const pages = tokens();
    const raw = Buffer.from(pages.seal('schedulerlogs', { upstream: 'abc', skip: 1 }), 'base64url');
    const outcomes = new Map<string, number>();
    for (let i = 0; i < raw.length; i++) {
      const changed = Buffer.from(raw);
      changed[i] = (changed[i] ?? 0) ^ 0x01;
      const outcome = refusal(() => pages.open('schedulerlogs', changed.toString('base64url')));
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
    expect(Object.fromEntries(outcomes)).toEqual({
      // The version byte, the nonce, the sealed text and the tag.
      'BadRequestError: continue token is not valid: pass the metadata.continue of the previous page unchanged': raw.length - 4,
      // The key id.
      'PageTokenExpiredError: continue token has expired (issued under a key this relay no longer holds): start the listing again without continue': 4,
    });
  });

  it('refuses what is not a token with 400, unread', () => {
    const pages = tokens();
    for (const token of ['', 'not a token', 'abc', '%%%', 'A'.repeat(5000), Buffer.from('{"v":1,"k":"schedulerlogs","s":"","p":"1:"}').toString('base64url')]) {
      expect(() => pages.open('schedulerlogs', token)).toThrow(BadRequestError);
    }
  });

  it('is opened by every replica that shares the secret, and by none other (410 there)', () => {
    const token = tokens('shared').seal('nodes', { upstream: 'n', skip: 0 });
    expect(tokens('shared').open('nodes', token)).toEqual({ upstream: 'n', skip: 0 });
    expect(() => tokens('another').open('nodes', token)).toThrow(PageTokenExpiredError);
    // Plain HTTP: a key of this process only.
    expect(() => tokens(undefined).open('nodes', token)).toThrow(PageTokenExpiredError);
    const own = tokens(undefined);
    expect(own.open('nodes', own.seal('nodes', { skip: 2 }))).toEqual({ skip: 2 });
  });

  it('keeps opening the tokens of the key before a renewal, not of the one before that', () => {
    let secret = 'key-1';
    const pages = new PageTokens({ sharedSecret: () => secret, randomBytes: countingBytes() });
    const first = pages.seal('nodes', { skip: 1 });
    secret = 'key-2';
    const second = pages.seal('nodes', { skip: 2 });
    expect(pages.open('nodes', first)).toEqual({ skip: 1 });
    secret = 'key-3';
    expect(pages.open('nodes', second)).toEqual({ skip: 2 });
    expect(() => pages.open('nodes', first)).toThrow(PageTokenExpiredError);
  });

  it('never seals the same way twice (a fresh nonce per token)', () => {
    const pages = tokens();
    expect(pages.seal('nodes', { skip: 0 })).not.toBe(pages.seal('nodes', { skip: 0 }));
  });
});
