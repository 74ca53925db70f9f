/**
 * The local server creates its tables and waits until the store says they are ACTIVE. That wait is the store's own
 * progress, in real time: the server's injected clock (the demo's fixed one) must not move while it waits, or the
 * demo prints other times on a busy machine.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';
import type { Runtime } from '../../../lib/clock';
import { startLocalServer, type LocalServer } from '../../../lib/local/server';

const listen = (server: Server) => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));
const readAll = async (stream: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

describe('local server start-up', () => {
  const store = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  let storeUrl: string;
  /** In front of the store: answers the first DescribeTable of each table with CREATING, as a slow store would. */
  let slowStore: Server;
  let slowUrl: string;
  let local: LocalServer | undefined;

  beforeAll(async () => {
    storeUrl = await listen(store);
    const described = new Set<string>();
    slowStore = createServer((req, res) => {
      void (async () => {
        const body = await readAll(req);
        const target = new URL(storeUrl);
        const answer = await new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }>((resolve, reject) => {
          const out = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
            readAll(r).then((data) => resolve({ status: r.statusCode ?? 502, headers: r.headers, body: data }), reject);
          });
          out.on('error', reject);
          out.end(body);
        });
        let data = answer.body;
        const table = /"TableName":"([^"]+)"/.exec(body.toString())?.[1] ?? '';
        if (String(req.headers['x-amz-target']).endsWith('.DescribeTable') && !described.has(table)) {
          described.add(table);
          data = Buffer.from(data.toString().replace('"TableStatus":"ACTIVE"', '"TableStatus":"CREATING"'));
        }
        const { 'content-length': _length, 'x-amz-crc32': _crc, ...headers } = answer.headers;
        res.writeHead(answer.status, headers);
        res.end(data);
      })();
    });
    slowUrl = await listen(slowStore);
  });

  afterAll(async () => {
    await local?.close();
    await close(slowStore);
    await close(store);
  });

  it('waits for tables in real time, not on its injected clock', async () => {
    let nowMs = 1_700_000_000_000;
    const slept: number[] = [];
    const runtime: Runtime = {
      clock: { now: () => nowMs },
      sleep: (ms) => {
        slept.push(ms);
        nowMs += ms;
        return Promise.resolve();
      },
      random: () => 0.5,
      newId: () => 'id',
    };
    local = await startLocalServer({ ddbEndpoint: slowUrl, runtime, env: {} });
    expect(slept).toEqual([]);
    expect(nowMs).toBe(1_700_000_000_000);
    // The store did answer CREATING first: the server waited for ACTIVE and then serves.
    const answer = await fetch(`${local.url}/api/v1/nodes`);
    expect(answer.status).toBe(200);
  });
});
