/**
 * The relay's API Gateway client on a node whose clock drifted: a server on loopback plays API Gateway's IAM auth,
 * refusing a signature dated more than 5 minutes from its clock (403, `x-amzn-errortype: InvalidSignatureException`,
 * `{"message":"Signature expired: …"}`) with its own time in `Date`.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseAmzDate } from '../../../lib/aws/clockSkew';
import { sigV4Signer } from '../../../lib/aws/sigv4';
import { bearerSigner, createControlPlaneClient } from '../../../lib/relay/controlPlane';

const MINUTE = 60_000;
const credentials = () => ({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' });
const amzDate = (ms: number) => new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');

describe('control plane client: clock skew', () => {
  let server: Server;
  let baseUrl: string;
  let seen: IncomingHttpHeaders[];
  let handle: (headers: IncomingHttpHeaders, res: ServerResponse) => void;

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        seen.push(req.headers);
        handle(req.headers, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prod`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  beforeEach(() => {
    seen = [];
  });

  /** API Gateway on a clock `serverNow`: a request dated more than 5 minutes off is refused as AWS refuses it. */
  const apiGateway = (serverNow: () => number, refusal: 'header' | 'message' = 'header') => {
    handle = (headers, res) => {
      const now = serverNow();
      const date = new Date(now).toUTCString();
      const signedAt = parseAmzDate(String(headers['x-amz-date']));
      if (Math.abs(signedAt - now) > 5 * MINUTE) {
        // Named either by the header alone or by the message alone (API Gateway sends both).
        const message = refusal === 'message' ? `Signature expired: ${String(headers['x-amz-date'])} is now earlier than ${amzDate(now - 5 * MINUTE)} (${amzDate(now)} - 5 min.)` : 'Forbidden';
        res.writeHead(403, { 'content-type': 'application/json', date, ...(refusal === 'header' ? { 'x-amzn-errortype': 'InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/' } : {}) });
        res.end(JSON.stringify({ message }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', date });
      res.end('{"ok":true}');
    };
  };

  it.each(['header', 'message'] as const)('signs again at once with the server time (refusal named by its %s), and signs later calls right from the start', async (refusal) => {
    // This node's clock runs 20 minutes behind: it is injected, the server keeps the real time.
    apiGateway(() => Date.now(), refusal);
    const client = createControlPlaneClient(baseUrl, sigV4Signer({ region: 'eu-west-1', credentials, now: () => new Date(Date.now() - 20 * MINUTE) }));

    const first = await client.post('/filter', { Pod: {} }, { timeoutMs: 5_000 });
    expect(first).toEqual({ status: 200, body: { ok: true }, text: '{"ok":true}' });
    expect(seen).toHaveLength(2);
    expect(Date.now() - parseAmzDate(String(seen[0]?.['x-amz-date']))).toBeGreaterThan(19 * MINUTE);
    expect(Math.abs(parseAmzDate(String(seen[1]?.['x-amz-date'])) - Date.now())).toBeLessThan(MINUTE);

    const later = await client.get('/healthz', { timeoutMs: 5_000 });
    expect(later.status).toBe(200);
    expect(seen).toHaveLength(3);
    expect(Math.abs(parseAmzDate(String(seen[2]?.['x-amz-date'])) - Date.now())).toBeLessThan(MINUTE);
  });

  it('corrects toward a server 20 minutes ahead of this node', async () => {
    apiGateway(() => Date.now() + 20 * MINUTE);
    const client = createControlPlaneClient(baseUrl, sigV4Signer({ region: 'eu-west-1', credentials }));
    expect((await client.post('/bind', {}, { timeoutMs: 5_000 })).status).toBe(200);
    expect(seen).toHaveLength(2);
    expect(Math.abs(parseAmzDate(String(seen[1]?.['x-amz-date'])) - (Date.now() + 20 * MINUTE))).toBeLessThan(MINUTE);
  });

  it('tries once more only: a second refusal is the answer', async () => {
    // A server whose Date is always 20 minutes past the request's own time.
    handle = (headers, res) => {
      res.writeHead(403, { 'content-type': 'application/json', 'x-amzn-errortype': 'InvalidSignatureException', date: new Date(parseAmzDate(String(headers['x-amz-date'])) + 20 * MINUTE).toUTCString() });
      res.end('{"message":"Signature expired"}');
    };
    const client = createControlPlaneClient(baseUrl, sigV4Signer({ region: 'eu-west-1', credentials }));
    const answer = await client.post('/filter', {}, { timeoutMs: 5_000 });
    expect(answer.status).toBe(403);
    expect(seen).toHaveLength(2);
  });

  it('does not try again when the request time was right (a 403 for another reason)', async () => {
    handle = (_headers, res) => {
      res.writeHead(403, { 'content-type': 'application/json', 'x-amzn-errortype': 'InvalidSignatureException', date: new Date().toUTCString() });
      res.end('{"message":"The request signature we calculated does not match the signature you provided."}');
    };
    const client = createControlPlaneClient(baseUrl, sigV4Signer({ region: 'eu-west-1', credentials }));
    expect((await client.post('/filter', {}, { timeoutMs: 5_000 })).status).toBe(403);
    expect(seen).toHaveLength(1);
  });

  it('never takes an answer other than a 403 for a refusal, whatever it says', async () => {
    handle = (_headers, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-amzn-errortype': 'InvalidSignatureException', date: new Date(Date.now() + 20 * MINUTE).toUTCString() });
      res.end('{"message":"Signature expired: a message the control plane itself returned"}');
    };
    const client = createControlPlaneClient(baseUrl, sigV4Signer({ region: 'eu-west-1', credentials }));
    expect((await client.post('/filter', {}, { timeoutMs: 5_000 })).status).toBe(200);
    expect(seen).toHaveLength(1);
  });

  it('leaves a bearer-token client alone: it has no signing clock', async () => {
    handle = (_headers, res) => {
      res.writeHead(403, { 'content-type': 'application/json', 'x-amzn-errortype': 'InvalidSignatureException', date: new Date(Date.now() + 20 * MINUTE).toUTCString() });
      res.end('{"message":"Signature expired"}');
    };
    const client = createControlPlaneClient(baseUrl, bearerSigner('a-token-of-sorts'));
    expect((await client.post('/filter', {}, { timeoutMs: 5_000 })).status).toBe(403);
    expect(seen).toHaveLength(1);
  });
});
