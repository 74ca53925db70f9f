import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import fc from 'fast-check';
import { SignatureV4 } from '@smithy/signature-v4';
import { sigV4Signer, type AwsCredentials, type OutgoingRequest } from '../../../lib/aws/sigv4';

/**
 * lib/aws/sigv4.ts signs on its own, synchronously. AWS accepts a signature only when every byte of the canonical
 * request matches its own, so the oracle is the AWS SDK's signer (SignatureV4): for any request, the same headers
 * must come out.
 */
type Bytes = string | ArrayBuffer | ArrayBufferView;
const asBytes = (data: Bytes): string | Uint8Array =>
  typeof data === 'string' ? data : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);

/** The hash the SDK's signer is given: its interface (promises), Node's crypto underneath. */
class Sha256 {
  private readonly hash: Hash | Hmac;
  constructor(secret?: Bytes) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', asBytes(secret));
  }
  update(data: Bytes): void {
    this.hash.update(asBytes(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(this.hash.digest());
  }
}

async function sdkSigned(req: OutgoingRequest, credentials: AwsCredentials, region: string, service: string, date: Date): Promise<Record<string, string>> {
  const signer = new SignatureV4({ service, region, credentials, sha256: Sha256 });
  const query: Record<string, string> = {};
  req.url.searchParams.forEach((value, key) => {
    query[key] = value;
  });
  const signed = await signer.sign(
    {
      method: req.method,
      protocol: req.url.protocol,
      hostname: req.url.hostname,
      ...(req.url.port ? { port: Number(req.url.port) } : {}),
      path: req.url.pathname,
      query,
      headers: { ...req.headers, host: req.url.host },
      ...(req.body !== undefined ? { body: req.body } : {}),
    },
    { signingDate: date },
  );
  return signed.headers;
}

const segment = fc.oneof(
  fc.constantFrom('', '.', '..', 'filter', 'a b', 'team-a', "it's(1)*!", '%41', 'ü', '~x_y.z'),
  fc.string({ maxLength: 6 }),
);
const token = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
const headerName = fc.oneof(
  token.map((name) => `x-${name}`),
  fc.constantFrom('content-type', 'Content-Type', 'user-agent', 'x-amzn-trace-id', 'proxy-authorization', 'sec-fetch-mode', 'Expect', 'X-Amz-Target', 'Authorization', 'X-Amz-Date', 'date', 'x-amz-content-sha256'),
);
const headerValue = fc.oneof(fc.constantFrom('  a\tb  ', 'x\r\ny', 'application/json', ' '), fc.string({ maxLength: 12 }).map((v) => v.replace(/[^\x20-\x7e\t]/g, '')));

const requests = fc.record({
  method: fc.constantFrom('GET' as const, 'POST' as const),
  host: fc.constantFrom('dynamodb.eu-west-1.amazonaws.com', 'abc123.execute-api.us-east-1.amazonaws.com', '127.0.0.1:8000', 'localhost:4566'),
  segments: fc.array(segment, { maxLength: 5 }),
  trailingSlash: fc.boolean(),
  query: fc.array(fc.tuple(fc.oneof(token, fc.constantFrom('a b', 'X-Amz-Signature', "k'(*)!", 'ü')), fc.string({ maxLength: 8 })), { maxLength: 4 }),
  headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 6 }),
  body: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
  sessionToken: fc.option(fc.string({ minLength: 1, maxLength: 20 }), { nil: undefined }),
  region: fc.constantFrom('us-east-1', 'eu-west-1', 'cn-north-1', 'local'),
  service: fc.constantFrom('dynamodb', 'execute-api'),
  date: fc.date({ min: new Date('2015-01-01T00:00:00Z'), max: new Date('2035-01-01T00:00:00Z'), noInvalidDate: true }),
});

describe('SigV4 signing (lib/aws/sigv4.ts)', () => {
  it('gives exactly the headers the AWS SDK signer gives, for any request', async () => {
    await fc.assert(
      fc.asyncProperty(requests, async (r) => {
        const url = new URL(`https://${r.host}/${r.segments.map(encodeURIComponent).join('/')}${r.trailingSlash ? '/' : ''}`);
        for (const [key, value] of r.query) url.searchParams.append(key, value);
        const headers = Object.fromEntries(r.headers);
        const req: OutgoingRequest = { method: r.method, url, headers, ...(r.body !== undefined ? { body: r.body } : {}) };
        const credentials: AwsCredentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', ...(r.sessionToken !== undefined ? { sessionToken: r.sessionToken } : {}) };
        const ours = await sigV4Signer({ region: r.region, service: r.service, credentials: () => credentials, now: () => r.date })(req);
        expect(ours).toEqual(await sdkSigned(req, credentials, r.region, r.service, r.date));
      }),
      { numRuns: 400 },
    );
  });

  it('signs at once once it holds the credentials, and asks for them again five minutes before they expire', async () => {
    let nowMs = Date.parse('2026-01-01T00:00:00Z');
    const asked: number[] = [];
    const signer = sigV4Signer({
      region: 'eu-west-1',
      service: 'dynamodb',
      now: () => new Date(nowMs),
      credentials: async () => {
        asked.push(nowMs);
        return { accessKeyId: `AKID${asked.length}`, secretAccessKey: 'secret', sessionToken: 'tok', expiration: new Date(nowMs + 60 * 60_000) };
      },
    });
    const req: OutgoingRequest = { method: 'POST', url: new URL('https://dynamodb.eu-west-1.amazonaws.com/'), headers: {}, body: '{}' };
    const first = signer(req);
    expect(first).toBeInstanceOf(Promise);
    expect((await first).authorization).toContain('Credential=AKID1/');
    nowMs += 54 * 60_000;
    const held = signer(req);
    expect(held).not.toBeInstanceOf(Promise);
    expect((held as Record<string, string>).authorization).toContain('Credential=AKID1/');
    nowMs += 2 * 60_000; // 4 minutes before the expiry: the chain is asked again.
    const renewed = signer(req);
    expect(renewed).toBeInstanceOf(Promise);
    expect((await renewed).authorization).toContain('Credential=AKID2/');
    expect(asked).toHaveLength(2);
  });

  it('keeps credentials without an expiry (static keys) and signs the payload it is given', () => {
    let asked = 0;
    const signer = sigV4Signer({ region: 'local', service: 'dynamodb', now: () => new Date('2026-01-01T00:00:00Z'), credentials: () => (asked++, { accessKeyId: 'local', secretAccessKey: 'local' }) });
    const req: OutgoingRequest = { method: 'POST', url: new URL('http://127.0.0.1:8000/'), headers: { 'x-amz-target': 'DynamoDB_20120810.Query' }, body: '{"TableName":"t"}' };
    return Promise.resolve(signer(req)).then(() => {
      const headers = signer(req) as Record<string, string>;
      expect(asked).toBe(1);
      expect(headers['x-amz-content-sha256']).toBe(createHash('sha256').update('{"TableName":"t"}').digest('hex'));
      expect(headers.host).toBe('127.0.0.1:8000');
      expect(headers['x-amz-security-token']).toBeUndefined();
    });
  });

  it('refuses credentials that are not strings, as the SDK does', async () => {
    const signer = sigV4Signer({ region: 'local', credentials: () => ({ accessKeyId: undefined, secretAccessKey: 's' }) as unknown as AwsCredentials });
    await expect(Promise.resolve().then(() => signer({ method: 'GET', url: new URL('http://h/'), headers: {} }))).rejects.toThrow('Resolved credential object is not valid');
  });
});
