/**
 * The store client against AWS's edge cases, played by an HTTP server on loopback: a node whose clock drifted (a
 * clock-skew refusal dated by the server's `Date`), throttling (the SDK's backoff bases and its retry quota), an
 * error named only by the `x-amzn-errortype` header, and numbers past a JavaScript number's precision.
 * The delays asked of the injected sleep are recorded, never slept.
 */
import type { ServerResponse } from 'node:http';
import { parseAmzDate } from '../../../lib/aws/clockSkew';
import { classifyStoreError, isConditionFailed } from '../../../lib/store/dynamo';
import { DynamoHttpClient, DynamoServiceError, unmarshalMap, type DynamoHttpOptions } from '../../../lib/store/dynamoHttp';
import { StoreFaultError, StoreUnavailableError } from '../../../lib/errors';
import { answerDynamo as json, startFakeDynamo, type DynamoCall as Received, type FakeDynamo } from '../../support/fakeDynamo';

type Handler = (req: Received, res: ServerResponse) => void;

const MINUTE = 60_000;
const QUERY = { TableName: 't', KeyConditionExpression: 'pk = :p', ExpressionAttributeValues: { ':p': 'a' } };

const throttled = (res: ServerResponse) => json(res, 400, { __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException', message: 'Rate of requests exceeds the allowed throughput.' });

describe('DynamoHttpClient against AWS edge cases', () => {
  let server: FakeDynamo;
  let endpoint: string;
  let handle: Handler;
  let received: Received[];
  let slept: number[];
  const clients: DynamoHttpClient[] = [];

  beforeAll(async () => {
    server = await startFakeDynamo((seen, res) => {
      received.push(seen);
      handle(seen, res);
    });
    endpoint = server.endpoint;
  });

  afterAll(() => server.close());

  beforeEach(() => {
    received = [];
    slept = [];
    handle = (_req, res) => json(res, 200, {});
  });

  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
  });

  const client = (options: Partial<DynamoHttpOptions> = {}) => {
    const c = new DynamoHttpClient({
      region: 'eu-west-1',
      endpoint,
      credentials: () => ({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' }),
      timeoutMs: 5_000,
      sleep: async (ms) => {
        slept.push(ms);
      },
      random: () => 0.5,
      ...options,
    });
    clients.push(c);
    return c;
  };

  describe('clock skew', () => {
    /** DynamoDB with a clock 20 minutes ahead of this machine's: a request dated more than 5 minutes off is refused. */
    const serverAhead = (skewMs: number, refusal: (res: ServerResponse, date: string) => void) => {
      const offsets: number[] = [];
      handle = (req, res) => {
        const serverNow = Date.now() + skewMs;
        const date = new Date(serverNow).toUTCString();
        const offset = parseAmzDate(String(req.headers['x-amz-date'])) - serverNow;
        offsets.push(offset);
        if (Math.abs(offset) > 5 * MINUTE) refusal(res, date);
        else json(res, 200, { Items: [] }, { date });
      };
      return offsets;
    };

    it.each([
      ['InvalidSignatureException', 'Signature expired: 20250501T100000Z is now earlier than 20250501T101500Z (20250501T102000Z - 5 min.)'],
      ['RequestTimeTooSkewed', 'The difference between the request time and the server time is too large.'],
      ['RequestExpired', 'Request has expired.'],
      ['SignatureDoesNotMatch', 'Signature not yet current: 20250501T102000Z is still later than 20250501T101500Z (20250501T101000Z + 5 min.)'],
    ])('signs again at once with the server time after a %s refusal, and signs later calls right from the start', async (type, message) => {
      const offsets = serverAhead(20 * MINUTE, (res, date) => json(res, 400, { __type: `com.amazon.coral.service#${type}`, message }, { date }));
      const c = client();

      await expect(c.send('Query', QUERY)).resolves.toEqual({ Items: [] });
      expect(offsets).toHaveLength(2);
      expect(offsets[0]).toBeLessThan(-19 * MINUTE);
      expect(Math.abs(offsets[1] ?? Infinity)).toBeLessThan(MINUTE);
      expect(slept).toEqual([]);

      await expect(c.send('Query', QUERY)).resolves.toEqual({ Items: [] });
      expect(offsets).toHaveLength(3);
      expect(Math.abs(offsets[2] ?? Infinity)).toBeLessThan(MINUTE);
    });

    it('corrects a clock that runs ahead of the server as well', async () => {
      const offsets = serverAhead(-20 * MINUTE, (res, date) => json(res, 400, { __type: 'com.amazon.coral.service#InvalidSignatureException', message: 'Signature not yet current' }, { date }));
      const c = client();
      await expect(c.send('Query', QUERY)).resolves.toEqual({ Items: [] });
      expect(offsets).toHaveLength(2);
      expect(offsets[0]).toBeGreaterThan(19 * MINUTE);
      expect(Math.abs(offsets[1] ?? Infinity)).toBeLessThan(MINUTE);
    });

    it('takes the error type from the x-amzn-errortype header for a skew refusal too', async () => {
      const offsets = serverAhead(20 * MINUTE, (res, date) => json(res, 400, { message: 'Signature expired' }, { date, 'x-amzn-errortype': 'InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/' }));
      await expect(client().send('Query', QUERY)).resolves.toEqual({ Items: [] });
      expect(offsets).toHaveLength(2);
    });

    it('tries only once more: a server whose Date keeps moving away refuses the second try, and that refusal is the answer', async () => {
      let served = 0;
      handle = (req, res) => {
        served += 1;
        // Always 20 minutes past whatever the request said, so the corrected signature is refused again.
        const date = new Date(parseAmzDate(String(req.headers['x-amz-date'])) + 20 * MINUTE).toUTCString();
        json(res, 400, { __type: 'com.amazon.coral.service#InvalidSignatureException', message: 'Signature expired' }, { date });
      };
      const err = await client().send('Query', QUERY).catch((e: unknown) => e);
      expect(served).toBe(2);
      expect(err).toBeInstanceOf(DynamoServiceError);
      expect(err).toMatchObject({ name: 'InvalidSignatureException', status: 400 });
      expect(classifyStoreError('Query', err)).toBeInstanceOf(StoreFaultError);
    });

    it('does not try again when the request time was right: the signature is wrong for another reason', async () => {
      handle = (_req, res) =>
        json(res, 400, { __type: 'com.amazon.coral.service#InvalidSignatureException', message: 'The request signature we calculated does not match the signature you provided.' }, { date: new Date().toUTCString() });
      const err = await client().send('Query', QUERY).catch((e: unknown) => e);
      expect(received).toHaveLength(1);
      expect(err).toMatchObject({ name: 'InvalidSignatureException' });
    });

    it('does not correct the clock from an error that is not about time, whatever its Date', async () => {
      handle = (_req, res) =>
        json(res, 400, { __type: 'com.amazon.coral.validate#ValidationException', message: 'One or more parameter values were invalid' }, { date: new Date(Date.now() + 20 * MINUTE).toUTCString() });
      const c = client();
      await c.send('Query', QUERY).catch(() => undefined);
      handle = (_req, res) => json(res, 200, {});
      await c.send('Query', QUERY);
      expect(received).toHaveLength(2);
      expect(Math.abs(parseAmzDate(String(received[1]?.headers['x-amz-date'])) - Date.now())).toBeLessThan(MINUTE);
    });
  });

  describe('retries', () => {
    it('backs off from a 500 ms base for throttling and 100 ms for a server fault, doubling per retry, with full jitter', async () => {
      const answers: ((res: ServerResponse) => void)[] = [throttled, throttled, (res) => json(res, 200, { Items: [] })];
      handle = (_req, res) => answers.shift()?.(res);
      const c = client();
      await expect(c.send('Query', QUERY)).resolves.toEqual({ Items: [] });
      expect(slept).toEqual([250, 500]);

      slept = [];
      answers.push((res) => json(res, 500, { __type: 'com.amazon.coral.service#InternalFailure' }), (res) => json(res, 500, '{}'), (res) => json(res, 200, {}));
      await c.send('Query', QUERY);
      expect(slept).toEqual([50, 100]);
    });

    it('stops after three attempts by default, with the last error', async () => {
      handle = (_req, res) => throttled(res);
      const err = await client().send('Query', QUERY).catch((e: unknown) => e);
      expect(received).toHaveLength(3);
      expect(slept).toEqual([250, 500]);
      expect(err).toMatchObject({ name: 'ThrottlingException', status: 400 });
      expect(classifyStoreError('Query', err)).toBeInstanceOf(StoreUnavailableError);
    });

    it('takes an HTTP 429 for throttling, whatever the body', async () => {
      const answers: ((res: ServerResponse) => void)[] = [(res) => json(res, 429, 'Too Many Requests'), (res) => json(res, 200, {})];
      handle = (_req, res) => answers.shift()?.(res);
      await client().send('Query', QUERY);
      expect(received).toHaveLength(2);
      expect(slept).toEqual([250]);
    });

    it('caps a delay at 20 s', async () => {
      handle = (_req, res) => throttled(res);
      await client({ maxAttempts: 10, random: () => 0.999 }).send('Query', QUERY).catch(() => undefined);
      expect(slept).toEqual([499, 999, 1998, 3996, 7992, 15984, 19980, 19980, 19980]);
    });

    it('draws on a quota of 500 tokens, 5 a retry: once it is spent a call fails at once; successes earn tokens back', async () => {
      handle = (_req, res) => throttled(res);
      const c = client({ maxAttempts: 1_000 });
      const first = await c.send('Query', QUERY).catch((e: unknown) => e);
      expect(first).toMatchObject({ name: 'ThrottlingException' });
      expect(received).toHaveLength(101);
      expect(slept).toHaveLength(100);

      received = [];
      slept = [];
      const spent = await c.send('Query', QUERY).catch((e: unknown) => e);
      expect(spent).toMatchObject({ name: 'ThrottlingException' });
      expect(received).toHaveLength(1);
      expect(slept).toEqual([]);

      // Five successes earn one token each: enough for one retry.
      handle = (_req, res) => json(res, 200, {});
      for (let i = 0; i < 5; i++) await c.send('Query', QUERY);
      received = [];
      handle = (_req, res) => throttled(res);
      await c.send('Query', QUERY).catch(() => undefined);
      expect(received).toHaveLength(2);
      expect(slept).toEqual([250]);

      // The quota is the client's: a new client has its own.
      received = [];
      await client({ maxAttempts: 3 }).send('Query', QUERY).catch(() => undefined);
      expect(received).toHaveLength(3);
    });

    it('charges 10 tokens for a retry after no answer (a dropped connection)', async () => {
      handle = () => server.dropConnections();
      const err = await client({ maxAttempts: 1_000 }).send('Query', QUERY).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'ECONNRESET' });
      expect(received).toHaveLength(51);
      expect(slept).toHaveLength(50);
    });
  });

  describe('the error type from the x-amzn-errortype header', () => {
    it('names a refused condition, which stays the expected outcome it is', async () => {
      handle = (_req, res) => json(res, 400, { message: 'The conditional request failed' }, { 'x-amzn-errortype': 'ConditionalCheckFailedException:http://internal.amazon.com/coral/com.amazonaws.dynamodb.v20120810/' });
      const err = await client().send('PutItem', { TableName: 't', Item: { pk: 'a' }, ConditionExpression: 'attribute_not_exists(pk)' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DynamoServiceError);
      expect(err).toMatchObject({ name: 'ConditionalCheckFailedException', message: 'The conditional request failed', status: 400 });
      expect(isConditionFailed(err)).toBe(true);
      expect(received).toHaveLength(1);
    });

    it('names throttling behind a body that is not JSON, which is then tried again from the throttling base', async () => {
      const answers: ((res: ServerResponse) => void)[] = [
        (res) => {
          res.writeHead(400, { 'content-type': 'text/html', 'x-amzn-errortype': 'ThrottlingException:http://internal.amazon.com/coral/com.amazon.coral.availability/' });
          res.end('<html><body>Slow down</body></html>');
        },
        (res) => json(res, 200, { Items: [] }),
      ];
      handle = (_req, res) => answers.shift()?.(res);
      await expect(client().send('Query', QUERY)).resolves.toEqual({ Items: [] });
      expect(received).toHaveLength(2);
      expect(slept).toEqual([250]);
    });

    it('prefers the body __type when both are there', async () => {
      handle = (_req, res) => json(res, 400, { __type: 'com.amazon.coral.validate#ValidationException', message: 'bad' }, { 'x-amzn-errortype': 'SomethingElse:http://internal.amazon.com/' });
      await expect(client().send('Query', QUERY)).rejects.toMatchObject({ name: 'ValidationException' });
    });
  });

  describe('numbers past 2^53', () => {
    it('refuses a stored number a JavaScript number cannot hold, naming the attribute', async () => {
      handle = (_req, res) => json(res, 200, { Items: [{ pk: { S: 'a' }, counter: { N: '9007199254740993' } }] });
      const err = await client().send('Query', QUERY).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TypeError);
      expect((err as Error).message).toBe('attribute counter holds 9007199254740993, past the precision of a JavaScript number');
      expect(classifyStoreError('Query', err)).toBeInstanceOf(StoreFaultError);
      expect(received).toHaveLength(1);
    });

    it('reads numbers a JavaScript number holds exactly: fractions, 2^53 itself, large powers of ten', async () => {
      const stored = { a: { N: '1.5' }, b: { N: '9007199254740992' }, c: { N: '-9007199254740991' }, d: { N: '100000000000000000000' }, e: { N: '0.1' }, s: { NS: ['1', '2.5'] } };
      handle = (_req, res) => json(res, 200, { Items: [stored] });
      const out = await client().send('Query', QUERY);
      expect(out.Items).toEqual([{ a: 1.5, b: 2 ** 53, c: -(2 ** 53 - 1), d: 1e20, e: 0.1, s: new Set([1, 2.5]) }]);
    });

    it.each([
      ['-9007199254740993', 'n'],
      ['9007199254740993.5', 'n'],
      ['12345678901234567890123456789012345678', 'n'],
    ])('refuses %s', (text, name) => {
      expect(() => unmarshalMap({ [name]: { N: text } })).toThrow(`attribute ${name} holds ${text}, past the precision of a JavaScript number`);
    });

    it('refuses such a number inside a map, a list or a number set, naming where it is', () => {
      expect(() => unmarshalMap({ outer: { M: { inner: { N: '9007199254740993' } } } })).toThrow('attribute inner holds 9007199254740993');
      expect(() => unmarshalMap({ list: { L: [{ N: '1' }, { N: '9007199254740993' }] } })).toThrow('attribute list holds 9007199254740993');
      expect(() => unmarshalMap({ set: { NS: ['1', '9007199254740993'] } })).toThrow('attribute set holds 9007199254740993');
    });

    it('refuses to write an integer number past 2^53, before sending, and writes a bigint exactly', async () => {
      const c = client();
      const refused = await c.send('PutItem', { TableName: 't', Item: { pk: 'a', big: 2 ** 53 + 2 } }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(TypeError);
      expect((refused as Error).message).toContain('attribute big');
      expect((refused as Error).message).toContain('past the precision of a JavaScript number');
      const inSet = await c.send('PutItem', { TableName: 't', Item: { pk: 'a', ns: new Set([1, 2 ** 60]) } }).catch((e: unknown) => e);
      expect(inSet).toBeInstanceOf(TypeError);
      expect(received).toHaveLength(0);

      await c.send('PutItem', { TableName: 't', Item: { pk: 'a', big: 2n ** 60n, safe: Number.MAX_SAFE_INTEGER, half: 1.5, ns: new Set([1, 2n ** 60n]) } });
      expect(received[0]?.body.Item).toEqual({ pk: { S: 'a' }, big: { N: '1152921504606846976' }, safe: { N: '9007199254740991' }, half: { N: '1.5' }, ns: { NS: ['1', '1152921504606846976'] } });
    });
  });
});
