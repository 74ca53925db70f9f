/**
 * The benchmark's network and store: the delaying proxies, and the store (dynalite) behind the store's proxies,
 * all in one process of their own. In the harness's process every store call would wait for its event loop,
 * which is busy playing kube-scheduler and the relay; a network does not. The store lives here, called in memory,
 * so a store call crosses one socket between processes (the control plane's), as it crosses one network hop on
 * AWS; with the store in a process of its own each call crossed two, and on this small machine every crossing
 * costs both processes CPU (the store's and the proxies' fell from 7.0 to 7.6 ms per pod to 5.4 to 6.0 at 1,000
 * nodes, measured with `npm run bench`).
 *
 * No build target of its own: dist/bench.js runs this role when started with HAMI_BENCH_ROLE=proxy. The harness
 * asks over the IPC channel: open a proxy (its URL comes back), count the calls each proxy has observed, fetch
 * the calls since those counts (in bulk, once a run), close. The process also ends when the harness dies (its
 * stdin ends, the IPC channel closes).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { RequestListener } from 'node:http';
import dynalite from 'dynalite';
import { httpUpstream, inMemoryUpstream, machineTime, startDelayingProxy, type DelayingProxy, type ObservedCall, type Upstream } from './proxy';
import { errorMessage } from '../lib/errors';

export const ROLE_ENV = 'HAMI_BENCH_ROLE';
export const PROXY_ROLE = 'proxy';

/** What a proxy stands in front of: a server at a URL, or this process's store. */
export type ProxyTarget = { readonly url: string } | 'store';

type Ask =
  | { readonly kind: 'open'; readonly target: ProxyTarget; readonly rttMs: number }
  | { readonly kind: 'counts' }
  | { readonly kind: 'calls'; readonly since: readonly number[] }
  | { readonly kind: 'close' };
type Request = Ask & { readonly id: number };

interface Reply {
  readonly id: number;
  readonly error?: string;
  readonly url?: string;
  readonly index?: number;
  readonly counts?: number[];
  readonly calls?: ObservedCall[][];
}

/** A proxy the child opened: `index` names it in `counts()` and `calls()`. */
export interface RemoteProxy {
  readonly url: string;
  readonly index: number;
}

export interface ProxyProcess {
  readonly pid: number | undefined;
  open(target: ProxyTarget, rttMs: number): Promise<RemoteProxy>;
  /** How many calls each proxy has observed so far, by index. */
  counts(): Promise<number[]>;
  /** The calls each proxy observed from `since[index]` on (all of them where `since` has no entry). */
  calls(since: readonly number[]): Promise<ObservedCall[][]>;
  close(): Promise<void>;
}

/** Starts `script` (this bundle) again as the proxies' process. */
export function startProxyProcess(script: string): ProxyProcess {
  const child: ChildProcess = spawn(process.execPath, [script], {
    env: { ...process.env, [ROLE_ENV]: PROXY_ROLE },
    // stdin stays open while the harness lives: its end tells the child the harness is gone.
    stdio: ['pipe', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (reply: Reply) => void; reject: (err: Error) => void }>();
  let nextId = 1;
  let exited = child.exitCode !== null;
  child.on('message', (message: Reply) => {
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (!waiter) return;
    if (message.error !== undefined) waiter.reject(new Error(`proxy process: ${message.error}`));
    else waiter.resolve(message);
  });
  const gone = (why: string) => {
    exited = true;
    for (const waiter of pending.values()) waiter.reject(new Error(`proxy process ${why}`));
    pending.clear();
  };
  child.once('exit', (code) => gone(`exited with code ${code}`));
  // Not started (or not reachable): an 'error' event nobody listens to would end the harness without its report.
  child.on('error', (err) => gone(`failed: ${err.message}`));
  const ask = (request: Ask): Promise<Reply> => {
    if (exited) return Promise.reject(new Error('proxy process has exited'));
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      child.send({ ...request, id }, (err) => {
        if (err && pending.delete(id)) reject(err);
      });
    });
  };
  return {
    pid: child.pid,
    open: async (target, rttMs) => {
      const reply = await ask({ kind: 'open', target, rttMs });
      return { url: reply.url ?? '', index: reply.index ?? -1 };
    },
    counts: async () => (await ask({ kind: 'counts' })).counts ?? [],
    calls: async (since) => (await ask({ kind: 'calls', since })).calls ?? [],
    close: async () => {
      if (exited) return;
      const ended = new Promise<void>((done) => child.once('exit', () => done()));
      await ask({ kind: 'close' }).catch(() => undefined);
      await ended;
    },
  };
}

/** The child's side: serves the harness's requests until it closes them or dies. */
export function serveProxies(): void {
  const proxies: DelayingProxy[] = [];
  let store: RequestListener | undefined;
  const upstream = (target: ProxyTarget): Upstream => {
    if (target !== 'store') return httpUpstream(target.url);
    // One store for every proxy in front of it; it never listens on a port: only the proxies reach it.
    store ??= dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 }).listeners('request')[0] as RequestListener;
    return inMemoryUpstream(store);
  };
  const send = (reply: Reply) => process.send?.(reply);
  const handle = async (request: Request): Promise<Reply> => {
    switch (request.kind) {
      case 'open': {
        // The same clock as the harness's filter windows (see clockMs).
        const proxy = await startDelayingProxy(upstream(request.target), request.rttMs, machineTime);
        proxies.push(proxy);
        return { id: request.id, url: proxy.url, index: proxies.length - 1 };
      }
      case 'counts':
        return { id: request.id, counts: proxies.map((p) => p.calls.length) };
      case 'calls':
        return { id: request.id, calls: proxies.map((p, i) => p.calls.slice(request.since[i] ?? 0)) };
      case 'close':
        await Promise.all(proxies.map((p) => p.close()));
        return { id: request.id };
    }
  };
  process.on('message', (request: Request) => {
    handle(request).then(
      (reply) => {
        if (request.kind !== 'close') send(reply);
        // Exits once the reply is written, so the harness's close() gets its answer.
        else process.send?.(reply, () => process.exit(0));
      },
      (err: unknown) => send({ id: request.id, error: errorMessage(err) }),
    );
  });
  // The harness is gone (killed, crashed): no one to serve.
  process.once('disconnect', () => process.exit(0));
  process.stdin.once('end', () => process.exit(0));
  process.stdin.resume();
}
