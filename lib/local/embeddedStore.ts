/**
 * The embedded DynamoDB-compatible store of the local server: dynalite, either in this process or in a
 * child process (which gives the store its own CPU core: dynalite is JavaScript and, under concurrent load,
 * competes with the handlers for the event loop). The child exits when its parent goes away. With a data
 * directory dynalite keeps its tables in LevelDB there, so state survives a restart (even a kill -9: LevelDB
 * logs every write before answering).
 */
import { spawn } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import dynalite from 'dynalite';

export type EmbeddedStoreMode = 'in-process' | 'child-process';

export interface EmbeddedStore {
  readonly endpoint: string;
  /** The process serving it (this one, in-process). */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

const CHILD_SOURCE = `
const dynalite = require(process.argv[1]);
const path = process.argv[2] || undefined;
const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, ...(path ? { path } : {}) });
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

/** A previous store process may still hold the directory's lock for a moment after its parent was killed. */
const LOCK_RETRIES = 50;

export async function startEmbeddedStore(mode: EmbeddedStoreMode, dataDir?: string, sleep: (ms: number) => Promise<void> = realSleep): Promise<EmbeddedStore> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  for (let attempt = 0; ; attempt++) {
    try {
      return mode === 'child-process' ? await startChild(dataDir) : await startInProcess(dataDir);
    } catch (err) {
      if (attempt >= LOCK_RETRIES || !(err instanceof Error) || !/lock/i.test(err.message)) throw err;
      await sleep(100);
    }
  }
}

async function startInProcess(dataDir: string | undefined): Promise<EmbeddedStore> {
  const server: Server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, ...(dataDir ? { path: dataDir } : {}) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    pid: process.pid,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function startChild(dataDir: string | undefined): Promise<EmbeddedStore> {
  const child = spawn(process.execPath, ['-e', CHILD_SOURCE, require.resolve('dynalite'), dataDir ?? ''], { stdio: ['pipe', 'pipe', 'pipe'] });
  let errors = '';
  child.stderr.on('data', (chunk: Buffer) => {
    errors += chunk.toString();
    process.stderr.write(chunk);
  });
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const line = text.split('\n')[0];
      if (text.includes('\n') && line) resolve(Number(line));
    });
    child.once('exit', (code) => reject(new Error(`embedded store exited with code ${code} before listening${errors ? `: ${errors.trim().split('\n').slice(-3).join(' ')}` : ''}`)));
    child.once('error', reject);
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    pid: child.pid,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin.end();
      }),
  };
}

function realSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
