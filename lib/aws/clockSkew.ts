/**
 * Clock-skew correction for the requests we sign ourselves (./sigv4.ts), as the AWS SDK does it: AWS refuses a
 * signature dated more than 5 minutes from its own clock, so a node whose clock drifts would fail every call. When
 * an answer is a clock-skew refusal and its `Date` header shows that the request's signing time was off, the clock
 * remembers the offset (server time − local time), the caller signs the call again at once, and every later request
 * is signed with the corrected time. One instance per client: the store client (../store/dynamoHttp.ts) and the
 * relay's API Gateway client (../relay/controlPlane.ts) each own one through their signer.
 */

/** Error types AWS answers a request signed at the wrong time with (the SDK's `CLOCK_SKEW_ERROR_CODES`). */
const CLOCK_SKEW_ERROR_TYPES: ReadonlySet<string> = new Set([
  'AuthFailure',
  'InvalidSignatureException',
  'RequestExpired',
  'RequestInTheFuture',
  'RequestTimeTooSkewed',
  'SignatureDoesNotMatch',
]);

/** API Gateway's IAM auth: `{"message":"Signature expired: … is now earlier than …"}` or `Signature not yet current: …`. */
const SKEW_MESSAGE = /^Signature (expired|not yet current)\b/;

/**
 * A signing time this far from the server's `Date` is a skew worth correcting (the SDK's threshold; AWS refuses
 * past 5 minutes, and `Date` has a resolution of a second).
 */
export const CLOCK_SKEW_THRESHOLD_MS = 4 * 60_000;

/** Whether an error answer may be a clock-skew refusal (its `Date` header then decides: `AwsClock.correct`). */
export function isClockSkewError(type: string | undefined, message: string | undefined): boolean {
  return (type !== undefined && CLOCK_SKEW_ERROR_TYPES.has(type)) || (message !== undefined && SKEW_MESSAGE.test(message));
}

/** The error type of an `x-amzn-errortype` header: `ThrottlingException:http://internal.amazon.com/coral/…` → `ThrottlingException`. */
export function errorTypeFromHeader(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const colon = header.indexOf(':');
  const type = colon === -1 ? header : header.slice(0, colon);
  return type.slice(type.lastIndexOf('#') + 1).trim() || undefined;
}

/** `20250501T100000Z` (SigV4's `x-amz-date`) as epoch milliseconds; NaN when it is not one. */
export function parseAmzDate(value: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) : Number.NaN;
}

/** The time to sign with: the local clock plus what AWS's answers showed it to be off by. */
export class AwsClock {
  private offsetMs = 0;

  /** `localNow`: epoch milliseconds of the local clock (injected in tests). */
  constructor(private readonly localNow: () => number = Date.now) {}

  /** Epoch milliseconds, corrected: one add on the signing path. */
  now(): number {
    return this.localNow() + this.offsetMs;
  }

  /** Server time − local time in milliseconds, as last learnt (0 until a skew was seen). */
  get offset(): number {
    return this.offsetMs;
  }

  /**
   * Learns from a clock-skew refusal: `serverDate` is the answer's `Date` header, `signedAt` the request's
   * `x-amz-date`. True when the request's time was off from the server's by the threshold or more: the offset is
   * now corrected and the request is worth signing again at once (also for a request signed before a concurrent
   * one corrected the offset: its own time was off). False, nothing changed, when the header is missing or
   * unreadable or the request's time was right: the refusal has another cause (wrong keys, say).
   */
  correct(serverDate: string | null | undefined, signedAt: string | undefined): boolean {
    if (!serverDate) return false;
    const server = Date.parse(serverDate);
    if (Number.isNaN(server)) return false;
    const signed = signedAt === undefined ? Number.NaN : parseAmzDate(signedAt);
    const sentAs = Number.isNaN(signed) ? this.now() : signed;
    if (Math.abs(server - sentAs) < CLOCK_SKEW_THRESHOLD_MS) return false;
    this.offsetMs = server - this.localNow();
    return true;
  }
}
