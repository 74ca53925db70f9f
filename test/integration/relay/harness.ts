/**
 * Test doubles for relay tests: a fake control plane (the other component, over real HTTP) that
 * records calls and returns canned contract answers, a recording logger, a controllable delay, and a
 * helper that starts the relay against the fake API server.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppLogger } from '../../../lib/powertools';
import { loadRelayConfig, type RelayConfig } from '../../../lib/relay/config';
import type { DelayFn } from '../../../lib/relay/delay';
import { startRelay, type RunningRelay } from '../../../lib/relay/relay';
import type { FakeKube } from '../../support/fakeKube';

export interface RecordedCall {
  readonly method: string;
  readonly path: string;
  readonly query: Record<string, string>;
  readonly authorization: string | undefined;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: unknown;
}

/** An answer: status + JSON body, or 'hang' (never answers). */
export type CannedAnswer = { readonly status?: number; readonly body: unknown } | 'hang';
export type Responder = (call: RecordedCall) => CannedAnswer;

export interface FakeControlPlane {
  readonly url: string;
  readonly calls: RecordedCall[];
  on(method: string, path: string, responder: Responder | CannedAnswer): void;
  callsTo(path: string): RecordedCall[];
  /** Resolves once `count` calls to `path` have arrived (at once if they already have): no polling, no clock. */
  arrived(path: string, count?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeControlPlane(): Promise<FakeControlPlane> {
  const calls: RecordedCall[] = [];
  const routes = new Map<string, Responder>();
  routes.set('GET /healthz', () => ({ body: { status: 'ok' } }));
  routes.set('POST /cluster/events', (call) => {
    const events = (call.body as { events?: unknown[] } | undefined)?.events ?? [];
    return { body: { accepted: events.length, rejected: [] } };
  });
  const hanging = new Set<ServerResponse>();
  const waiters: { path: string; count: number; resolve: () => void }[] = [];
  const wake = () => {
    for (const w of [...waiters]) {
      if (calls.filter((c) => c.path === w.path).length < w.count) continue;
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://cp');
      const text = Buffer.concat(chunks).toString('utf8');
      const call: RecordedCall = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams.entries()),
        authorization: req.headers.authorization,
        headers: req.headers,
        body: text === '' ? undefined : JSON.parse(text),
      };
      calls.push(call);
      wake();
      const responder = routes.get(`${call.method} ${call.path}`) ?? (/^\/api\/v1\/namespaces\/.+\/schedulerlog$/.test(call.path) ? routes.get('GET schedulerlog') : undefined);
      const answer: CannedAnswer = responder ? responder(call) : { status: 404, body: { kind: 'Status', status: 'Failure', reason: 'NotFound', code: 404, message: 'no route' } };
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      const out = JSON.stringify(answer.body);
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json' });
      res.end(out);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    on(method, path, responder) {
      routes.set(`${method} ${path}`, typeof responder === 'function' ? responder : () => responder);
    },
    callsTo: (path) => calls.filter((c) => c.path === path),
    arrived: (path, count = 1) =>
      new Promise<void>((resolve) => {
        waiters.push({ path, count, resolve });
        wake();
      }),
    async close() {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface LogLine {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: unknown[];
}

/** Records every log call at every level, so tests can assert on content (e.g. no token anywhere). */
export function recordingLogger(): AppLogger & { lines: LogLine[]; text(): string } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (message: unknown, ...fields: unknown[]): void => {
      lines.push({ level, message: String(message), fields });
    };
  return {
    lines,
    text: () => JSON.stringify(lines),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  } as AppLogger & { lines: LogLine[]; text(): string };
}

/** A delay the test releases by hand; records every requested duration. */
export function gatedDelay(): { delay: DelayFn; requested: number[]; release(): void; waiting(): number } {
  const requested: number[] = [];
  let waiters: (() => void)[] = [];
  return {
    requested,
    delay: (ms, signal) =>
      new Promise<void>((resolve) => {
        requested.push(ms);
        waiters.push(resolve);
        signal?.addEventListener('abort', () => resolve(), { once: true });
      }),
    release() {
      const now = waiters;
      waiters = [];
      for (const w of now) w();
    },
    waiting: () => waiters.length,
  };
}

export const noDelay: DelayFn = async () => undefined;

/** A delay that never ends unless aborted: what a test uses for waits it never wants to pass. */
export const foreverDelay: DelayFn = (_ms, signal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    signal?.addEventListener('abort', () => resolve(), { once: true });
  });

/**
 * Polls `check` (real HTTP is asynchronous) until it passes. `timeoutMs` only bounds how long a test waits for
 * something that never comes (a failure); it is generous so a busy machine never turns a pass into a failure.
 */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

export function relayConfig(controlPlaneUrl: string, env: Record<string, string> = {}): RelayConfig {
  return loadRelayConfig({
    HAMI_CONTROL_PLANE_URL: controlPlaneUrl,
    HAMI_API_TOKEN: 'cp-secret-token',
    RELAY_HOST: '127.0.0.1',
    RELAY_EXTENDER_TLS: 'off',
    RELAY_USER_TLS: 'off',
    RELAY_PORT: '0',
    RELAY_USER_PORT: '0',
    RELAY_BATCH_MAX_DELAY_MS: '0',
    RELAY_RESYNC_INTERVAL_MS: '3600000',
    // Nudges patch pending pods at start; tests about them turn them on.
    RELAY_NUDGE_PER_SECOND: '0',
    // Today's path: the relay suites test filters decided live; decide-ahead's own suite turns it on.
    HAMI_DECIDE_AHEAD: 'false',
    ...env,
  });
}

export interface TestRelayOptions {
  env?: Record<string, string>;
  logger?: AppLogger;
  watcherDelay?: DelayFn;
  forwarderDelay?: DelayFn;
  extenderDelay?: DelayFn;
  webhookDelay?: DelayFn;
  /** Between probes of an unreachable control plane; by default the second probe never comes. */
  reachabilityDelay?: DelayFn;
  /** Between nudges; none by default. */
  nudgeDelay?: DelayFn;
  now?: () => Date;
}

export async function startTestRelay(kube: FakeKube, controlPlaneUrl: string, opts: TestRelayOptions = {}): Promise<RunningRelay> {
  return startRelay({
    config: relayConfig(controlPlaneUrl, opts.env),
    kubeConfig: kube.kubeConfig(),
    logger: opts.logger ?? recordingLogger(),
    forwarderDelay: opts.forwarderDelay ?? noDelay,
    watcherDelay: opts.watcherDelay ?? noDelay,
    reachabilityDelay: opts.reachabilityDelay ?? foreverDelay,
    nudgeDelay: opts.nudgeDelay ?? noDelay,
    ...(opts.extenderDelay ? { extenderDelay: opts.extenderDelay } : {}),
    ...(opts.webhookDelay ? { webhookDelay: opts.webhookDelay } : {}),
    ...(opts.now ? { now: opts.now } : {}),
  });
}

export async function postJson(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

export function gpuPod(name: string, namespace = 'team-a', extra: { annotations?: Record<string, string>; nodeName?: string } = {}): Record<string, unknown> {
  return {
    metadata: { name, namespace, annotations: { ...(extra.annotations ?? {}) }, managedFields: [{ manager: 'kubectl', operation: 'Apply' }] },
    spec: {
      schedulerName: 'hami-scheduler',
      ...(extra.nodeName ? { nodeName: extra.nodeName } : {}),
      containers: [{ name: 'main', image: 'cuda:12', resources: { limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '3000' } } }],
    },
    status: { phase: 'Pending' },
  };
}

export function plainPod(name: string, namespace = 'team-a'): Record<string, unknown> {
  return { metadata: { name, namespace }, spec: { containers: [{ name: 'web', image: 'nginx' }] }, status: { phase: 'Pending' } };
}

export const REGISTER = JSON.stringify([
  { id: 'GPU-0', count: 10, devmem: 8192, devcore: 100, type: 'NVIDIA-A100', numa: 0, health: true, index: 0, mode: 'hami-core' },
]);

export function gpuNode(name: string, register = REGISTER): Record<string, unknown> {
  return {
    metadata: { name, labels: { 'kubernetes.io/hostname': name, gpu: 'on' }, annotations: { 'hami.io/node-nvidia-register': register } },
    status: { allocatable: { cpu: '16', 'nvidia.com/gpu': '10' }, conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: '2025-05-01T10:00:00Z' }] },
  };
}
