import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  NodePatchError,
  NvidiaSmiNotFoundError,
  NvidiaSmiSpawnError,
  NvidiaSmiTimeoutError,
} from '../../../lib/realtime/errors';
import type { RealtimeAnnotationDevice } from '../../../lib/realtime/nvidiaSmi';
import { REALTIME_ANNOTATION } from '../../../lib/wire/realtime';
import {
  createNodeReporter,
  devicesChanged,
  NodeAgentLog,
  type NvidiaSmiResult,
  type ReporterConfig,
} from '../../../lib/realtime/reporter';

const fixture = (name: string): string => readFileSync(join(__dirname, '../../fixtures/nvidia-smi', name), 'utf8');
const ok = (stdout: string): NvidiaSmiResult => ({ stdout, stderr: '', code: 0 });
const T0 = Date.parse('2025-03-14T09:00:00.000Z');
const ONE_CARD = 'GPU-8f3c2b1e-5d4a-4e7b-9c21-0a6d3e5f7b92';
const oneCard = (usedMiB: number, util: number): string => `${ONE_CARD}, 0, ${usedMiB}, 40960, ${util}\n`;

/** A result, stdout text, or a rejection (`{ reject }` lets a test reject with a non-Error value). */
type Answer = NvidiaSmiResult | Error | string | { reject: unknown };
interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  fields: Record<string, unknown>;
}

const baseConfig: ReporterConfig = {
  nodeName: 'gpu-node-1',
  intervalSeconds: 5,
  refreshSeconds: 30,
  maxBackoffSeconds: 60,
  reportProcessCount: true,
  utilizationChangePercent: 10,
};

/** A node agent wired to a scripted nvidia-smi, a recording patcher, a fake clock and a fake sleep. */
function harness(config: Partial<ReporterConfig> = {}) {
  let nowMs = T0;
  const gpuAnswers: Answer[] = [];
  const appAnswers: Answer[] = [];
  let gpuDefault: Answer = ok(fixture('gpu-one-a100-40gb.csv'));
  let appsDefault: Answer = ok(fixture('apps-one-a100.csv'));
  const calls: string[][] = [];
  const patches: { atMs: number; node: string; annotations: Readonly<Record<string, string | null>> }[] = [];
  const patchFailures: Error[] = [];
  const sleeps: number[] = [];
  const logs: LogLine[] = [];
  const record =
    (level: LogLine['level']) =>
    (message: unknown, ...extra: unknown[]): void => {
      logs.push({ level, message: String(message), fields: (extra[0] ?? {}) as Record<string, unknown> });
    };
  const answer = async (a: Answer): Promise<NvidiaSmiResult> => {
    if (a instanceof Error) throw a;
    if (typeof a === 'string') return ok(a);
    if ('reject' in a) throw a.reject;
    return a;
  };
  const reporter = createNodeReporter(
    {
      runNvidiaSmi: async (args) => {
        calls.push([...args]);
        const isGpuQuery = args[0]?.startsWith('--query-gpu=') ?? false;
        return answer(isGpuQuery ? (gpuAnswers.shift() ?? gpuDefault) : (appAnswers.shift() ?? appsDefault));
      },
      patchNode: async (node, annotations) => {
        const failure = patchFailures.shift();
        if (failure) throw failure;
        patches.push({ atMs: nowMs, node, annotations });
      },
      now: () => nowMs,
      sleep: async (ms) => {
        sleeps.push(ms);
        nowMs += ms;
      },
      logger: { debug: record('debug'), info: record('info'), warn: record('warn'), error: record('error') },
    },
    { ...baseConfig, ...config },
  );
  /** Runs the loop for `ticks` ticks (aborting during the last sleep). */
  const runTicks = async (ticks: number): Promise<void> => {
    const stop = new AbortController();
    let seen = 0;
    const sleepsBefore = sleeps.length;
    await reporter.run(
      new Proxy(stop.signal, {
        get(target, prop) {
          if (prop === 'aborted') {
            seen = sleeps.length - sleepsBefore;
            return seen >= ticks;
          }
          const value: unknown = Reflect.get(target, prop);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      }),
    );
  };
  return {
    reporter,
    calls,
    patches,
    patchFailures,
    sleeps,
    logs,
    runTicks,
    advance: (ms: number) => {
      nowMs += ms;
    },
    queueGpu: (...a: Answer[]) => gpuAnswers.push(...a),
    queueApps: (...a: Answer[]) => appAnswers.push(...a),
    setGpu: (a: Answer) => {
      gpuDefault = a;
    },
    setApps: (a: Answer) => {
      appsDefault = a;
    },
    published: () => patches.map((p) => JSON.parse(p.annotations[REALTIME_ANNOTATION] ?? 'null') as unknown),
    logsWith: (message: string) => logs.filter((l) => l.message === message),
  };
}

describe('createNodeReporter: publishing', () => {
  it('patches the node annotation with the docs/api.md §4 value on the first reading', async () => {
    const h = harness();
    const outcome = await h.reporter.tick();
    expect(outcome).toMatchObject({ kind: 'published', reason: 'first' });
    expect(h.patches).toHaveLength(1);
    expect(h.patches[0]?.node).toBe('gpu-node-1');
    expect(Object.keys(h.patches[0]?.annotations ?? {})).toEqual(['hami.io/node-nvidia-realtime']);
    expect(h.published()).toEqual([
      {
        time: '2025-03-14T09:00:00.000Z',
        devices: [{ id: ONE_CARD, usedMemMB: 2048, totalMemMB: 40960, utilization: 45, processCount: 1 }],
      },
    ]);
    expect(h.calls).toEqual([
      ['--query-gpu=uuid,index,memory.used,memory.total,utilization.gpu', '--format=csv,noheader,nounits'],
      ['--query-compute-apps=gpu_uuid,pid,used_memory', '--format=csv,noheader,nounits'],
    ]);
  });

  it('does not patch unchanged readings until the refresh period, then refreshes with a new time', async () => {
    const h = harness();
    await h.runTicks(13); // t = 0, 5, ..., 60 s
    expect(h.patches.map((p) => (p.atMs - T0) / 1000)).toEqual([0, 30, 60]);
    expect(h.published().map((v) => (v as { time: string }).time)).toEqual([
      '2025-03-14T09:00:00.000Z',
      '2025-03-14T09:00:30.000Z',
      '2025-03-14T09:01:00.000Z',
    ]);
    expect(h.sleeps.every((ms) => ms === 5000)).toBe(true);
  });

  it('patches at once when memory use changes, and the refresh clock restarts from that patch', async () => {
    const h = harness();
    h.queueGpu(oneCard(2048, 45), oneCard(2048, 45), oneCard(6144, 45));
    h.setGpu(oneCard(6144, 45));
    await h.runTicks(10); // t = 0..45 s
    expect(h.patches.map((p) => (p.atMs - T0) / 1000)).toEqual([0, 10, 40]);
    expect(h.published().map((v) => (v as { devices: RealtimeAnnotationDevice[] }).devices[0]?.usedMemMB)).toEqual([
      2048, 6144, 6144,
    ]);
  });

  it('patches when the process count changes', async () => {
    const h = harness();
    await h.reporter.tick();
    h.setApps(`${ONE_CARD}, 4021, 2040\n${ONE_CARD}, 4022, 8\n`);
    h.advance(5000);
    expect(await h.reporter.tick()).toMatchObject({ kind: 'published', reason: 'changed' });
    expect((h.published()[1] as { devices: RealtimeAnnotationDevice[] }).devices[0]?.processCount).toBe(2);
  });

  it('lets small utilization moves wait for the refresh, but patches large ones', async () => {
    const h = harness();
    h.queueGpu(oneCard(2048, 45), oneCard(2048, 52), oneCard(2048, 38), oneCard(2048, 60));
    await h.runTicks(4);
    expect(h.published().map((v) => (v as { devices: RealtimeAnnotationDevice[] }).devices[0]?.utilization)).toEqual([45, 60]);
  });

  it('publishes an empty device list when nvidia-smi lists no GPUs, and warns once', async () => {
    const h = harness();
    h.setGpu(fixture('gpu-empty.csv'));
    await h.runTicks(8);
    expect(h.published()[0]).toEqual({ time: '2025-03-14T09:00:00.000Z', devices: [] });
    expect(h.logsWith(NodeAgentLog.noCards)).toHaveLength(1);
  });
});

describe('createNodeReporter: cards and processes that cannot be read', () => {
  it('leaves out a card with an error field, logs it once per distinct problem, and reports the rest', async () => {
    const h = harness();
    h.setGpu(fixture('gpu-four-a100-80gb-with-errors.csv'));
    h.setApps(fixture('apps-four-a100-80gb.csv'));
    await h.runTicks(7);
    expect(h.published()[0]).toEqual({
      time: '2025-03-14T09:00:00.000Z',
      devices: [
        { id: 'GPU-a1f0c3d2-1e2b-4c3d-9e4f-5a6b7c8d9e01', usedMemMB: 30721, totalMemMB: 81920, utilization: 55, processCount: 1 },
        { id: 'GPU-c3d2e5f4-3a4d-4e5f-9a6b-7c8d9e0f1a23', usedMemMB: 10240, totalMemMB: 81920, processCount: 1 },
      ],
    });
    const cardLogs = h.logsWith(NodeAgentLog.cardLeftOut);
    expect(cardLogs.map((l) => l.fields.device)).toEqual([
      'GPU-b2e1d4c3-2f3c-4d4e-8f5a-6b7c8d9e0f12',
      'GPU-d4c3f6a5-4b5e-4f6a-8b7c-8d9e0f1a2b34',
    ]);
    expect(cardLogs[0]?.fields).toMatchObject({ node: 'gpu-node-1', field: 'memory.used', value: '[Unknown Error]', index: 1 });
    expect(cardLogs.every((l) => l.level === 'warn')).toBe(true);
  });

  it('reports memory without process counts while the process query fails, warning once, and recovers', async () => {
    const h = harness();
    h.queueApps({ stdout: '', stderr: 'Failed to initialize NVML: Unknown Error', code: 255 }, 'garbage line');
    await h.runTicks(3);
    expect((h.published()[0] as { devices: RealtimeAnnotationDevice[] }).devices[0]).toEqual({
      id: ONE_CARD,
      usedMemMB: 2048,
      totalMemMB: 40960,
      utilization: 45,
    });
    expect(h.logsWith(NodeAgentLog.processesFailed)).toHaveLength(1);
    expect(h.logsWith(NodeAgentLog.processesFailed)[0]?.fields.reason).toBe('exitCode');
    // Third tick: the process list is back, which is a change worth a patch.
    expect(h.patches).toHaveLength(2);
    expect((h.published()[1] as { devices: RealtimeAnnotationDevice[] }).devices[0]?.processCount).toBe(1);
    expect(h.logsWith(NodeAgentLog.processesRecovered)).toHaveLength(1);
  });

  it('does not query processes when process counts are turned off', async () => {
    const h = harness({ reportProcessCount: false });
    await h.reporter.tick();
    expect(h.calls).toHaveLength(1);
    expect((h.published()[0] as { devices: RealtimeAnnotationDevice[] }).devices[0]).not.toHaveProperty('processCount');
  });
});

describe('createNodeReporter: failing nvidia-smi', () => {
  it.each([
    { name: 'missing binary', failure: new NvidiaSmiNotFoundError('nvidia-smi not found at "nvidia-smi"'), reason: 'notFound', extra: {} },
    { name: 'timeout', failure: new NvidiaSmiTimeoutError('nvidia-smi did not finish within 10000 ms'), reason: 'timeout', extra: {} },
    { name: 'spawn failure', failure: new NvidiaSmiSpawnError('nvidia-smi could not be run: EACCES'), reason: 'spawnFailed', extra: {} },
    {
      name: 'driver not loaded (exit 9)',
      failure: { stdout: fixture('gpu-driver-not-loaded.txt'), stderr: '', code: 9 },
      reason: 'exitCode',
      extra: { exitCode: 9, detail: expect.stringContaining("couldn't communicate with the NVIDIA driver") as unknown },
    },
    {
      name: 'non-zero exit with stderr',
      failure: { stdout: '', stderr: '\nFailed to initialize NVML: Driver/library version mismatch\n', code: 18 },
      reason: 'exitCode',
      extra: { exitCode: 18, detail: 'Failed to initialize NVML: Driver/library version mismatch' },
    },
    { name: 'garbage output', failure: fixture('gpu-driver-not-loaded.txt'), reason: 'badOutput', extra: { line: 1 } },
    { name: 'rejection with a non-Error value', failure: { reject: 'boom' }, reason: 'unexpected', extra: {} },
  ])('survives a $name: no patch, a structured warning with reason $reason', async ({ failure, reason, extra }) => {
    const h = harness();
    h.setGpu(failure);
    await expect(h.reporter.tick()).resolves.toEqual({ kind: 'readFailed', reason });
    expect(h.patches).toEqual([]);
    const warning = h.logsWith(NodeAgentLog.readFailed);
    expect(warning).toHaveLength(1);
    expect(warning[0]?.level).toBe('warn');
    expect(warning[0]?.fields).toMatchObject({ node: 'gpu-node-1', reason, consecutiveFailures: 1, retryInSeconds: 10, ...extra });
  });

  it('backs off exponentially up to the cap while nvidia-smi is missing, then recovers at the normal pace', async () => {
    const h = harness();
    h.queueGpu(...Array.from({ length: 6 }, () => new NvidiaSmiNotFoundError('nvidia-smi not found')));
    await h.runTicks(9);
    expect(h.sleeps.map((ms) => ms / 1000)).toEqual([10, 20, 40, 60, 60, 60, 5, 5, 5]);
    expect(h.patches).toHaveLength(1);
    expect(h.logsWith(NodeAgentLog.recovered)).toEqual([
      { level: 'info', message: NodeAgentLog.recovered, fields: { node: 'gpu-node-1', failedAttempts: 6 } },
    ]);
  });

  it('never throws out of run, even when the logger itself throws', async () => {
    const stop = new AbortController();
    let ticks = 0;
    const reporter = createNodeReporter(
      {
        runNvidiaSmi: async () => {
          throw new NvidiaSmiNotFoundError('nvidia-smi not found');
        },
        patchNode: async () => undefined,
        now: () => T0,
        sleep: async () => {
          ticks += 1;
          if (ticks === 3) stop.abort();
        },
        logger: {
          debug: () => undefined,
          info: () => undefined,
          warn: () => {
            throw new Error('log sink down');
          },
          error: () => {
            throw new Error('log sink down');
          },
        },
      },
      baseConfig,
    );
    await expect(reporter.run(stop.signal)).resolves.toBeUndefined();
    expect(ticks).toBe(3);
  });
});

describe('createNodeReporter: failing patches', () => {
  it('logs the status, backs off, and retries the same value even when nothing changed', async () => {
    const h = harness();
    h.patchFailures.push(new NodePatchError('patch of node gpu-node-1 refused with HTTP 403', 403));
    await h.runTicks(3);
    const warning = h.logsWith(NodeAgentLog.patchFailed);
    expect(warning).toHaveLength(1);
    expect(warning[0]?.fields).toMatchObject({ node: 'gpu-node-1', statusCode: 403, consecutiveFailures: 1, retryInSeconds: 10 });
    expect(h.sleeps).toEqual([10000, 5000, 5000]);
    expect(h.patches.map((p) => (p.atMs - T0) / 1000)).toEqual([10]);
  });
});

describe('createNodeReporter: stopping', () => {
  it('does not tick at all when already aborted', async () => {
    const h = harness();
    const stop = new AbortController();
    stop.abort();
    await h.reporter.run(stop.signal);
    expect(h.calls).toEqual([]);
    expect(h.logsWith(NodeAgentLog.stopped)).toHaveLength(1);
  });

  it('stops during a sleep when aborted, whether the sleep resolves or rejects', async () => {
    for (const sleepBehaviour of ['resolve', 'reject'] as const) {
      const stop = new AbortController();
      const patched: string[] = [];
      const reporter = createNodeReporter(
        {
          runNvidiaSmi: async () => ok(oneCard(1, 1)),
          patchNode: async (node) => {
            patched.push(node);
          },
          now: () => T0,
          sleep: (_ms, signal) =>
            new Promise<void>((resolve, reject) => {
              // Only the abort ends this sleep: the test would hang if the loop ignored the signal.
              signal.addEventListener('abort', () => (sleepBehaviour === 'resolve' ? resolve() : reject(new Error('aborted'))));
            }),
          logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
        },
        { ...baseConfig, reportProcessCount: false },
      );
      const running = reporter.run(stop.signal);
      await new Promise((resolve) => setImmediate(resolve));
      stop.abort();
      await expect(running).resolves.toBeUndefined();
      expect(patched).toEqual(['gpu-node-1']);
      expect(reporter.lastTickMs()).toBe(T0);
    }
  });
});

describe('devicesChanged', () => {
  const card = (over: Partial<RealtimeAnnotationDevice> = {}): RealtimeAnnotationDevice => ({
    id: 'GPU-a',
    usedMemMB: 100,
    totalMemMB: 1000,
    utilization: 50,
    processCount: 1,
    ...over,
  });
  it.each([
    ['unchanged: identical', [card()], [card()], 10, false],
    ['changed: used memory', [card()], [card({ usedMemMB: 101 })], 10, true],
    ['changed: total memory', [card()], [card({ totalMemMB: 999 })], 10, true],
    ['changed: process count', [card()], [card({ processCount: 2 })], 10, true],
    ['changed: process count now unknown', [card()], [card({ processCount: undefined })], 10, true],
    ['unchanged: utilization below threshold', [card()], [card({ utilization: 59 })], 10, false],
    ['changed: utilization at threshold', [card()], [card({ utilization: 40 })], 10, true],
    ['changed: any utilization move with threshold 0', [card()], [card({ utilization: 51 })], 0, true],
    ['changed: utilization no longer reported', [card()], [card({ utilization: undefined })], 10, true],
    ['changed: a card disappeared', [card(), card({ id: 'GPU-b' })], [card()], 10, true],
    ['changed: a different card', [card()], [card({ id: 'GPU-b' })], 10, true],
    ['unchanged: both empty', [], [], 10, false],
  ])('%s', (_name, before, after, threshold, expected) => {
    expect(devicesChanged(before, after, threshold)).toBe(expected);
  });
});
