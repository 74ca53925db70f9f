/**
 * The embedded DynamoDB-compatible store of the local server: dynalite, either in this process or in a
 * child process (which gives the store its own CPU core: dynalite is JavaScript and, under concurrent load,
 * competes with the handlers for the event loop). The child exits when its parent goes away.
 */
import { spawn } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';

export type EmbeddedStoreMode = 'in-process' | 'child-process';

export interface EmbeddedStore {
  readonly endpoint: string;
  stop(): Promise<void>;
}

const CHILD_SOURCE = `
const dynalite = require(process.argv[1]);
const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

export async function startEmbeddedStore(mode: EmbeddedStoreMode): Promise<EmbeddedStore> {
  return mode === 'child-process' ? startChild() : startInProcess();
}

async function startInProcess(): Promise<EmbeddedStore> {
  const server: Server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function startChild(): Promise<EmbeddedStore> {
  const child = spawn(process.execPath, ['-e', CHILD_SOURCE, require.resolve('dynalite')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const line = text.split('\n')[0];
      if (text.includes('\n') && line) resolve(Number(line));
    });
    child.once('exit', (code) => reject(new Error(`embedded store exited with code ${code} before listening`)));
    child.once('error', reject);
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
      }),
  };
}
