import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { NodePatchError } from '../../../lib/realtime/errors';
import { createKubeNodePatcher } from '../../../lib/realtime/kubeNodePatcher';

interface Seen {
  method?: string;
  url?: string;
  contentType?: string;
  authorization?: string;
  body: string;
}

/** A stand-in API server: records the request and answers with the given handler. */
async function fakeApiServer(answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; kc: KubeConfig; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      seen.push({
        method: req.method,
        url: req.url,
        contentType: req.headers['content-type'],
        authorization: req.headers.authorization,
        body,
      });
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
    users: [{ name: 'agent', token: 'sa-token' }],
    contexts: [{ name: 'test', cluster: 'test', user: 'agent' }],
    currentContext: 'test',
  });
  return { server, kc, seen };
}

const close = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

describe('createKubeNodePatcher', () => {
  it('sends a JSON merge patch of the annotations to the Node, with the agent as field manager', async () => {
    const { server, kc, seen } = await fakeApiServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'gpu-node-1' } }));
    });
    try {
      const patch = createKubeNodePatcher(kc, 5_000);
      await patch('gpu-node-1', { 'hami.io/node-nvidia-realtime': '{"time":"2025-03-14T09:00:00.000Z","devices":[]}' });
      expect(seen).toEqual([
        {
          method: 'PATCH',
          url: '/api/v1/nodes/gpu-node-1?fieldManager=hami-node-agent',
          contentType: 'application/merge-patch+json',
          authorization: 'Bearer sa-token',
          body: JSON.stringify({
            metadata: { annotations: { 'hami.io/node-nvidia-realtime': '{"time":"2025-03-14T09:00:00.000Z","devices":[]}' } },
          }),
        },
      ]);
    } finally {
      await close(server);
    }
  });

  it('turns an API refusal into NodePatchError carrying the HTTP status', async () => {
    const { server, kc } = await fakeApiServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', status: 'Failure', reason: 'Forbidden', code: 403 }));
    });
    try {
      const patch = createKubeNodePatcher(kc, 5_000);
      const failure = await patch('gpu-node-1', { a: 'b' }).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(NodePatchError);
      expect(failure).toMatchObject({ statusCode: 403 });
    } finally {
      await close(server);
    }
  });

  it('gives up on an API server that never answers', async () => {
    // The server holds the request open; a short real timeout shows the loop cannot be frozen by it.
    const { server, kc } = await fakeApiServer(() => undefined);
    try {
      const patch = createKubeNodePatcher(kc, 150);
      const failure = await patch('gpu-node-1', { a: 'b' }).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(NodePatchError);
      expect((failure as NodePatchError).message).toMatch(/timed out after 150 ms/);
    } finally {
      await close(server);
    }
  });
});
