/**
 * A delaying HTTP proxy that the benchmark puts in front of the store and in front of the control plane, so
 * a round trip costs what it would on AWS while the product cannot tell. It also observes each request:
 * when it ran, how many bytes went each way, which DynamoDB operation it was and the capacity it consumed.
 *
 * What is behind it is an `Upstream`: another HTTP server (a control plane), or a request listener in this
 * process (the store: a network hands a request to DynamoDB without a second socket hop, and on this small
 * machine each hop between processes costs both of them CPU that the deployment does not spend).
 */
import { EventEmitter } from 'node:events';
import { createServer, request as httpRequest, Agent, type IncomingHttpHeaders, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A forwarded request's answer, as the proxy sends it back. */
export interface UpstreamAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Where the proxy sends what it receives. */
export interface Upstream {
  forward(request: IncomingMessage, body: Buffer): Promise<UpstreamAnswer>;
  close(): void;
}

/** An HTTP server elsewhere, over keep-alive connections. */
export function httpUpstream(target: string): Upstream {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  return {
    forward: (req, body) =>
      new Promise((resolve, reject) => {
        const out = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers, agent }, (response) => {
          readAll(response).then((data) => resolve({ status: response.statusCode ?? 502, headers: response.headers, body: data }), reject);
        });
        out.on('error', reject);
        out.end(body);
      }),
    close: () => agent.destroy(),
  };
}

/**
 * A request listener of this process, called with a request and a response that live in memory. Enough of
 * node's objects for a listener that reads the method, URL, headers and body (`data`, `end`) and answers
 * with `statusCode`, `setHeader` and `end`, as dynalite's does (test/unit/bench/proxy.test.ts). Anything else
 * it touches throws: a bench bug, never a silent difference.
 */
export function inMemoryUpstream(listener: RequestListener): Upstream {
  return {
    forward: (req, body) =>
      new Promise((resolve, reject) => {
        const request = Object.assign(new EventEmitter(), { method: req.method, url: req.url, headers: req.headers });
        const headers: IncomingHttpHeaders = {};
        const response = {
          statusCode: 200,
          setHeader(name: string, value: number | string | readonly string[]) {
            headers[name.toLowerCase()] = Array.isArray(value) ? value.map(String) : String(value);
            return response;
          },
          end(chunk?: string | Buffer) {
            resolve({ status: response.statusCode, headers, body: chunk === undefined ? Buffer.alloc(0) : Buffer.from(chunk) });
            return response;
          },
        };
        try {
          listener(request as unknown as IncomingMessage, response as never);
          if (body.length > 0) request.emit('data', body);
          request.emit('end');
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      }),
    close: () => undefined,
  };
}

export interface ObservedCall {
  readonly startMs: number;
  readonly endMs: number;
  /** `DynamoDB_20120810.UpdateItem` → `UpdateItem`; the path for the control plane. */
  readonly operation: string;
  readonly requestBytes: number;
  readonly responseBytes: number;
  readonly status: number;
  readonly readUnits: number;
  readonly writeUnits: number;
  /** How long what is behind the proxy took to answer (for the store: dynalite's own work and its queue). */
  readonly serviceMs: number;
  /**
   * How much longer the proxy's two waits took than the round trip asked for: its timers firing late, or a little
   * earlier (negative) where rounding to whole milliseconds shortened the second wait.
   */
  readonly delayOverRttMs: number;
}

export interface DelayingProxy {
  readonly url: string;
  readonly calls: ObservedCall[];
  close(): Promise<void>;
}

const READS = new Set(['GetItem', 'BatchGetItem', 'Query', 'Scan']);

/**
 * Milliseconds on the machine's monotonic clock (process.hrtime), which every process on it reads alike: the
 * proxies run in a process of their own, and their calls' times are compared with the harness's filter windows.
 * performance.now() counts from each process's start, and an epoch-based time moves when the wall clock is set.
 */
export function clockMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** What the proxy reads the time from and waits with: the machine's (`machineTime`), or a test's. */
export interface ProxyTime {
  now(): number;
  wait(ms: number): Promise<void>;
}

/**
 * What to ask node's timers for to wait `ms`: they count whole milliseconds (a fraction is dropped, so a timer of 2.5
 * fires after about 2.1 ms here), and rounding to the nearest one keeps the waits right on average.
 */
export function timerMs(ms: number): number {
  return Math.max(0, Math.round(ms));
}

export const machineTime: ProxyTime = {
  now: clockMs,
  wait: (ms) => {
    const asked = timerMs(ms);
    return asked > 0 ? new Promise<void>((resolve) => setTimeout(resolve, asked)) : Promise.resolve();
  },
};

/**
 * `rttMs` is added to every round trip: half on the way in, and on the way out what is left of it after the first
 * wait, so a timer that fired late on the way in (this process also serves the store and other calls) does not
 * lengthen the round trip; only the second wait's lateness remains (`delayOverRttMs`).
 */
export async function startDelayingProxy(upstream: Upstream, rttMs: number, time: ProxyTime = machineTime): Promise<DelayingProxy> {
  const calls: ObservedCall[] = [];
  /** Item sizes seen in answers, by key: a refused conditional write is billed by the stored item's size. */
  const itemBytes = new Map<string, number>();
  const { now, wait } = time;
  const server: Server = createServer((req, res) => {
    void (async () => {
      const startMs = now();
      const body = await readAll(req);
      const waitStartedMs = now();
      await wait(rttMs / 2);
      const forwardedMs = now();
      const answer = await upstream.forward(req, body);
      const answeredMs = now();
      await wait(rttMs - (forwardedMs - waitStartedMs));
      const delayOverRttMs = forwardedMs - waitStartedMs + (now() - answeredMs) - rttMs;
      res.writeHead(answer.status, answer.headers);
      res.end(answer.body);
      const target = String(req.headers['x-amz-target'] ?? '');
      const operation = target.includes('.') ? target.split('.')[1]! : (req.url ?? '').split('?')[0]!;
      const text = target ? answer.body.toString('utf8') : '';
      const key = target ? /"pk":\{"S":"([^"]+)"\}/.exec(body.toString('utf8'))?.[1] : undefined;
      let units = 0;
      for (const match of text.matchAll(/"CapacityUnits":([0-9.]+)/g)) units += Number(match[1]);
      if (key && answer.status === 200 && /"Attributes"|"Item"/.test(text)) itemBytes.set(key, answer.body.length);
      if (answer.status === 400 && text.includes('ConditionalCheckFailed')) units = Math.max(1, Math.ceil((key ? (itemBytes.get(key) ?? 0) : 0) / 1024));
      calls.push({
        startMs,
        endMs: now(),
        operation,
        requestBytes: body.length,
        responseBytes: answer.body.length,
        status: answer.status,
        readUnits: READS.has(operation) ? units : 0,
        writeUnits: READS.has(operation) ? 0 : units,
        serviceMs: answeredMs - forwardedMs,
        delayOverRttMs,
      });
    })().catch(() => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      upstream.close();
    },
  };
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Serial round trips among calls made within a window: overlapping calls (sent together) count once, so the
 * figure is what the caller waited for in sequence.
 */
export function serialRoundTrips(calls: readonly ObservedCall[], fromMs: number, toMs: number): number {
  const inside = calls.filter((c) => c.startMs >= fromMs && c.endMs <= toMs).sort((a, b) => a.startMs - b.startMs);
  let waves = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const call of inside) {
    if (call.startMs >= end) waves += 1;
    end = Math.max(end, call.endMs);
  }
  return waves;
}

export function isRead(call: ObservedCall): boolean {
  return READS.has(call.operation);
}

/** One filter as kube-scheduler's stand-in saw it, and the store calls its control plane made. */
export interface TimedFilter {
  readonly ms: number;
  readonly fromMs: number;
  readonly toMs: number;
  /** Every store call of the filter's control plane (the run's, not only this filter's). */
  readonly controlPlaneCalls: readonly ObservedCall[];
}

/** Means per filter over a group of filters (`filterTail`). */
export interface TailGroup {
  readonly filters: number;
  /** The filter's time at kube-scheduler's side. */
  readonly meanMs: number;
  /** The turnaround of the filter's first write (its booking), at the store's proxy: the round trip and the store's answer. */
  readonly bookingMs: number;
  /** Store service (dynalite's work and queue) of the filter's own calls started in its window. */
  readonly ownStoreServiceMs: number;
  /**
   * Store service of the other callers' calls that overlap the window (the other control plane's binds and ingestion,
   * other schedulers' filters): their whole service, also where part of it fell outside the window.
   */
  readonly otherStoreServiceMs: number;
}

/**
 * Where a run's slow filters lose their time, by group (the fastest half, the 50th to 90th percentile, the slowest
 * tenth). dynalite serves every store call of the run on one thread, so a filter whose window overlaps a burst of
 * the other control plane's writes waits for them; DynamoDB serves them side by side. Pods per second follow the mean
 * filter, not its median: the slowest tenth is what separates the two.
 */
export function filterTail(filters: readonly TimedFilter[], storeCalls: readonly ObservedCall[]): { fastestHalf: TailGroup; p50To90: TailGroup; slowestTenth: TailGroup } {
  const byStart = sortedByStart(storeCalls);
  const longest = byStart.reduce((max, c) => Math.max(max, c.endMs - c.startMs), 0);
  // Per control plane (the filters of one scheduler share its calls): its calls sorted, and as a set.
  const planes = new Map<readonly ObservedCall[], { sorted: readonly ObservedCall[]; all: ReadonlySet<ObservedCall> }>();
  const plane = (calls: readonly ObservedCall[]) => planes.get(calls) ?? planes.set(calls, { sorted: sortedByStart(calls), all: new Set(calls) }).get(calls)!;
  const rows = filters
    .map((f) => {
      const { sorted, all } = plane(f.controlPlaneCalls);
      const own = sorted.slice(firstStartingAt(sorted, f.fromMs), firstStartingAt(sorted, f.toMs));
      const booking = own.find((c) => !isRead(c));
      // Other callers' calls reaching into the window start at most `longest` before it.
      let other = 0;
      for (let i = firstStartingAt(byStart, f.fromMs - longest); i < byStart.length && byStart[i]!.startMs < f.toMs; i++) {
        const call = byStart[i]!;
        if (call.endMs > f.fromMs && !all.has(call)) other += call.serviceMs;
      }
      return { ms: f.ms, bookingMs: booking === undefined ? undefined : booking.endMs - booking.startMs, own: own.reduce((sum, c) => sum + c.serviceMs, 0), other };
    })
    .sort((a, b) => a.ms - b.ms);
  const mean = (values: readonly number[]) => (values.length === 0 ? 0 : values.reduce((sum, v) => sum + v, 0) / values.length);
  const group = (from: number, to: number): TailGroup => {
    const part = rows.slice(from, to);
    return {
      filters: part.length,
      meanMs: mean(part.map((r) => r.ms)),
      bookingMs: mean(part.flatMap((r) => (r.bookingMs === undefined ? [] : [r.bookingMs]))),
      ownStoreServiceMs: mean(part.map((r) => r.own)),
      otherStoreServiceMs: mean(part.map((r) => r.other)),
    };
  };
  const half = Math.floor(rows.length / 2);
  const tenth = Math.floor(rows.length * 0.9);
  return { fastestHalf: group(0, half), p50To90: group(half, tenth), slowestTenth: group(tenth, rows.length) };
}

function sortedByStart(calls: readonly ObservedCall[]): ObservedCall[] {
  return [...calls].sort((a, b) => a.startMs - b.startMs);
}

/** The position of the first call (sorted by start) that starts at or after `ms`. */
function firstStartingAt(sorted: readonly ObservedCall[], ms: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]!.startMs < ms) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
