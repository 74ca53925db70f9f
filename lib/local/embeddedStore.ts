/**
 * The embedded DynamoDB-compatible store of the local server: dynalite, either in this process or in a
 * child process (which gives the store its own CPU core: dynalite is JavaScript and, under concurrent load,
 * competes with the handlers for the event loop). The child exits when its parent goes away. With a data
 * directory dynalite keeps its tables in LevelDB there, so state survives a restart (even a kill -9: LevelDB
 * logs every write before answering). One store process at a time can open a directory: a second start waits
 * a few seconds for the first to let go, then fails with `DataDirectoryUnavailableError`.
 */
import { spawn } from 'node:child_process';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import dynalite from 'dynalite';

export type EmbeddedStoreMode = 'in-process' | 'child-process';

/**
 * In memory, in this process or a child; or kept in a data directory, always by a child: dynalite reports a directory
 * LevelDB cannot open only by throwing from its first request, which in this process would end the control plane.
 */
export type EmbeddedStoreOptions = { readonly mode: 'in-process' } | { readonly mode: 'child-process'; readonly dataDir?: string };

export interface EmbeddedStore {
  readonly endpoint: string;
  /** The process serving it (this one, in-process). */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

/** How often, and how long apart, a start tries a data directory that another store process holds. */
export interface DirectoryRetry {
  readonly attempts: number;
  readonly delayMs: number;
  readonly sleep: (ms: number) => Promise<void>;
}

/** The child's exit code when its data directory could not be opened. */
const DIRECTORY_UNUSABLE_EXIT = 3;

/**
 * The child answers its parent with its port once the store has answered a request: until then a failure is the data
 * directory's (LevelDB refused to open it), reported by the exit code alone, since dynalite's own error says nothing of
 * the cause ("Database is closed", "Iterator is not open").
 */
const CHILD_SOURCE = `
const http = require('node:http');
const dynalite = require(process.argv[1]);
const path = process.argv[2] || undefined;
const unusable = () => process.exit(${DIRECTORY_UNUSABLE_EXIT});
process.on('uncaughtException', unusable);
const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0, ...(path ? { path } : {}) });
server.listen(0, '127.0.0.1', () => {
  const port = server.address().port;
  const headers = {
    'content-type': 'application/x-amz-json-1.0',
    'x-amz-target': 'DynamoDB_20120810.ListTables',
    'x-amz-date': '20200101T000000Z',
    authorization: 'AWS4-HMAC-SHA256 Credential=local/20200101/local/dynamodb/aws4_request, SignedHeaders=host, Signature=0',
  };
  const probe = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers }, (res) => {
    res.resume();
    res.on('end', () => {
      if (res.statusCode !== 200) return unusable();
      process.removeListener('uncaughtException', unusable);
      process.stdout.write(port + '\\n');
    });
  });
  probe.on('error', unusable);
  probe.end('{}');
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

/** The data directory could not be opened: another process holds it, or this one cannot read and write it. */
export class DataDirectoryUnavailableError extends Error {
  constructor(readonly dataDir: string) {
    super(
      `the embedded store could not open its data directory ${dataDir}: another process is using it (an npm start with the same HAMI_DATA_DIR still running?), or this process cannot read and write it`,
    );
    this.name = 'DataDirectoryUnavailableError';
  }
}

/** A store killed a moment ago (kill -9 of its parent) may hold the directory's lock until it notices: wait up to 5 s. */
const DEFAULT_RETRY: DirectoryRetry = { attempts: 20, delayMs: 250, sleep: realSleep };

export async function startEmbeddedStore(options: EmbeddedStoreOptions, retry: DirectoryRetry = DEFAULT_RETRY): Promise<EmbeddedStore> {
  if (options.mode === 'in-process') return startInProcess();
  const { dataDir } = options;
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  for (let attempt = 1; ; attempt++) {
    try {
      return await startChild(dataDir);
    } catch (err) {
      if (!(err instanceof DataDirectoryUnavailableError) || attempt >= retry.attempts) throw err;
      await retry.sleep(retry.delayMs);
    }
  }
}

async function startInProcess(): Promise<EmbeddedStore> {
  const server: Server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  // Once stopping, calls still on their way finish; their keep-alive sockets, idle then, would hold the close for the
  // server's keep-alive timeout (5 s): each is closed as its call ends.
  let stopping = false;
  server.on('request', (_req: unknown, res: ServerResponse) => res.once('finish', () => stopping && setImmediate(() => server.closeIdleConnections())));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    pid: process.pid,
    stop: () =>
      new Promise<void>((resolve) => {
        stopping = true;
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
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
    child.once('exit', (code) =>
      reject(
        code === DIRECTORY_UNUSABLE_EXIT && dataDir
          ? new DataDirectoryUnavailableError(dataDir)
          : new Error(`embedded store exited with code ${code} before listening${errors ? `: ${errors.trim().split('\n').slice(-3).join(' ')}` : ''}`),
      ),
    );
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
