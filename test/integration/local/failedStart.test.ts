/**
 * A local server that cannot start (a configuration it refuses, a port already taken) stops the embedded store it
 * started for itself: nothing is left listening, so the process that asked (a test run, `npm start`) can exit.
 */
import { createServer, type Server } from 'node:net';
import * as embeddedStore from '../../../lib/local/embeddedStore';
import { startLocalServer } from '../../../lib/local/server';

/** The embedded stores the server starts, as it starts them. */
function watchEmbeddedStores(): embeddedStore.EmbeddedStore[] {
  const started: embeddedStore.EmbeddedStore[] = [];
  const original = embeddedStore.startEmbeddedStore;
  jest.spyOn(embeddedStore, 'startEmbeddedStore').mockImplementation(async (options) => {
    const store = await original(options);
    started.push(store);
    return store;
  });
  return started;
}

/** Whether anything accepts connections at the store's endpoint. */
async function accepts(endpoint: string): Promise<boolean> {
  return fetch(endpoint, { method: 'POST', body: '{}' }).then(
    () => true,
    () => false,
  );
}

describe('a local server that fails to start', () => {
  afterEach(() => jest.restoreAllMocks());

  it('refuses a token too short to guard the API, and stops the store it started', async () => {
    const started = watchEmbeddedStores();
    await expect(startLocalServer({ token: 'short', env: {} })).rejects.toThrow(/HAMI_API_TOKEN/);
    expect(started).toHaveLength(1);
    expect(await accepts(started[0]!.endpoint)).toBe(false);
  });

  it('cannot listen on a port in use, and stops the store it started', async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const started = watchEmbeddedStores();
      await expect(startLocalServer({ port, env: {} })).rejects.toThrow(/EADDRINUSE/);
      expect(started).toHaveLength(1);
      expect(await accepts(started[0]!.endpoint)).toBe(false);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });

  it('serves when it can: the same store answers while the server runs (the check above can tell)', async () => {
    const started = watchEmbeddedStores();
    const server = await startLocalServer({ env: {} });
    try {
      expect(await accepts(started[0]!.endpoint)).toBe(true);
    } finally {
      await server.close();
    }
  });
});
