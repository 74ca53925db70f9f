/** The skew-corrected signing clock and the readings of AWS's answers it relies on. */
import { AwsClock, CLOCK_SKEW_THRESHOLD_MS, errorTypeFromHeader, isClockSkewError, parseAmzDate } from '../../../lib/aws/clockSkew';
import { sigV4Signer } from '../../../lib/aws/sigv4';

const LOCAL = Date.UTC(2025, 4, 1, 10, 0, 0);
const MINUTE = 60_000;
const httpDate = (ms: number) => new Date(ms).toUTCString();
const amzDate = (ms: number) => new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');

describe('AwsClock', () => {
  it('is the local clock until corrected, then the local clock plus the offset', () => {
    let local = LOCAL;
    const clock = new AwsClock(() => local);
    expect(clock.now()).toBe(LOCAL);
    expect(clock.correct(httpDate(LOCAL + 20 * MINUTE), amzDate(LOCAL))).toBe(true);
    expect(clock.offset).toBe(20 * MINUTE);
    local += 1_000;
    expect(clock.now()).toBe(LOCAL + 20 * MINUTE + 1_000);
  });

  it('corrects only a signing time off by the threshold or more', () => {
    const clock = new AwsClock(() => LOCAL);
    expect(clock.correct(httpDate(LOCAL + CLOCK_SKEW_THRESHOLD_MS - 1_000), amzDate(LOCAL))).toBe(false);
    expect(clock.offset).toBe(0);
    expect(clock.correct(httpDate(LOCAL - CLOCK_SKEW_THRESHOLD_MS), amzDate(LOCAL))).toBe(true);
    expect(clock.offset).toBe(-CLOCK_SKEW_THRESHOLD_MS);
  });

  it('judges by the time the request was signed with: a request signed before a concurrent correction is worth signing again', () => {
    const clock = new AwsClock(() => LOCAL);
    const server = httpDate(LOCAL + 20 * MINUTE);
    expect(clock.correct(server, amzDate(LOCAL))).toBe(true);
    // Another call in flight, signed before the correction, refused the same way.
    expect(clock.correct(server, amzDate(LOCAL))).toBe(true);
    expect(clock.offset).toBe(20 * MINUTE);
    // A call signed with the corrected time and still refused: its time was right.
    expect(clock.correct(server, amzDate(clock.now()))).toBe(false);
  });

  it('ignores a missing or unreadable Date', () => {
    const clock = new AwsClock(() => LOCAL);
    expect(clock.correct(undefined, amzDate(LOCAL))).toBe(false);
    expect(clock.correct(null, amzDate(LOCAL))).toBe(false);
    expect(clock.correct('yesterday-ish', amzDate(LOCAL))).toBe(false);
    expect(clock.offset).toBe(0);
  });

  it('dates the signer\'s requests', async () => {
    const clock = new AwsClock(() => LOCAL);
    const sign = sigV4Signer({ region: 'eu-west-1', credentials: () => ({ accessKeyId: 'a', secretAccessKey: 'b' }), clock });
    expect(sign.clock).toBe(clock);
    const request = { method: 'GET' as const, url: new URL('https://x.example/'), headers: {} };
    expect((await sign(request))['x-amz-date']).toBe('20250501T100000Z');
    clock.correct(httpDate(LOCAL + 20 * MINUTE), amzDate(LOCAL));
    expect((await sign(request))['x-amz-date']).toBe('20250501T102000Z');
  });
});

describe('reading AWS answers', () => {
  it.each([
    ['InvalidSignatureException', undefined, true],
    ['RequestTimeTooSkewed', undefined, true],
    ['RequestExpired', undefined, true],
    ['RequestInTheFuture', undefined, true],
    ['SignatureDoesNotMatch', undefined, true],
    ['AuthFailure', undefined, true],
    [undefined, 'Signature expired: 20250501T100000Z is now earlier than 20250501T101500Z (20250501T102000Z - 5 min.)', true],
    [undefined, 'Signature not yet current: 20250501T102000Z is still later than 20250501T101500Z (20250501T101000Z + 5 min.)', true],
    ['ThrottlingException', 'Rate exceeded', false],
    [undefined, 'Forbidden', false],
  ])('type %s, message %s: clock skew %s', (type, message, skew) => {
    expect(isClockSkewError(type, message)).toBe(skew);
  });

  it('takes the error type of an x-amzn-errortype header before its colon', () => {
    expect(errorTypeFromHeader('ThrottlingException:http://internal.amazon.com/coral/com.amazon.coral.availability/')).toBe('ThrottlingException');
    expect(errorTypeFromHeader('InvalidSignatureException')).toBe('InvalidSignatureException');
    expect(errorTypeFromHeader('com.amazon.coral.service#UnrecognizedClientException:http://internal.amazon.com/')).toBe('UnrecognizedClientException');
    expect(errorTypeFromHeader('')).toBeUndefined();
    expect(errorTypeFromHeader(null)).toBeUndefined();
  });

  it('reads SigV4 dates', () => {
    expect(parseAmzDate('20250501T100000Z')).toBe(LOCAL);
    expect(parseAmzDate('2025-05-01T10:00:00Z')).toBeNaN();
  });
});
