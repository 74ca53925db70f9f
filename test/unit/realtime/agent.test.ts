import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  isLoopAlive,
  livenessBudgetMs,
  loadNodeAgentConfig,
  NODE_AGENT_STARTED,
  NodeAgentConfigError,
  runNodeAgent,
  startHealthServer,
} from '../../../lib/realtime/agent';
import { NvidiaSmiNotFoundError, NvidiaSmiSpawnError, NvidiaSmiTimeoutError } from '../../../lib/realtime/errors';
import { GPU_QUERY_ARGS } from '../../../lib/realtime/nvidiaSmi';
import { createNvidiaSmiRunner } from '../../../lib/realtime/nvidiaSmiRunner';

const fixtures = join(__dirname, '../../fixtures/nvidia-smi');
const fakeNvidiaSmi = join(fixtures, 'fake-nvidia-smi.sh');
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

describe('loadNodeAgentConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadNodeAgentConfig({ NODE_NAME: 'gpu-node-1' })).toEqual({
      nodeName: 'gpu-node-1',
      intervalSeconds: 5,
      refreshSeconds: 30,
      maxAgeSeconds: 60,
      nvidiaSmiPath: 'nvidia-smi',
      timeoutSeconds: 10,
      maxBackoffSeconds: 60,
      reportProcessCount: true,
      utilizationChangePercent: 10,
      healthPort: 8081,
    });
  });

  it('reads every variable, treating blank ones as unset', () => {
    expect(
      loadNodeAgentConfig({
        NODE_NAME: ' gpu-node-2 ',
        HAMI_NODE_AGENT_INTERVAL_SECONDS: '2',
        HAMI_NODE_AGENT_REFRESH_SECONDS: '20',
        HAMI_REALTIME_MAX_AGE_SECONDS: '45',
        HAMI_NODE_AGENT_NVIDIA_SMI: '/usr/bin/nvidia-smi',
        HAMI_NODE_AGENT_TIMEOUT_SECONDS: '3',
        HAMI_NODE_AGENT_MAX_BACKOFF_SECONDS: '30',
        HAMI_NODE_AGENT_PROCESS_COUNT: 'false',
        HAMI_NODE_AGENT_UTILIZATION_CHANGE: '',
        HAMI_NODE_AGENT_HEALTH_PORT: '0',
      }),
    ).toEqual({
      nodeName: 'gpu-node-2',
      intervalSeconds: 2,
      refreshSeconds: 20,
      maxAgeSeconds: 45,
      nvidiaSmiPath: '/usr/bin/nvidia-smi',
      timeoutSeconds: 3,
      maxBackoffSeconds: 30,
      reportProcessCount: false,
      utilizationChangePercent: 10,
      healthPort: 0,
    });
  });

  it.each([
    ['NODE_NAME', {}],
    ['NODE_NAME', { NODE_NAME: '   ' }],
    ['HAMI_NODE_AGENT_INTERVAL_SECONDS', { HAMI_NODE_AGENT_INTERVAL_SECONDS: 'five' }],
    ['HAMI_NODE_AGENT_INTERVAL_SECONDS', { HAMI_NODE_AGENT_INTERVAL_SECONDS: '0' }],
    ['HAMI_NODE_AGENT_INTERVAL_SECONDS', { HAMI_NODE_AGENT_INTERVAL_SECONDS: '1.5' }],
    ['HAMI_NODE_AGENT_REFRESH_SECONDS', { HAMI_NODE_AGENT_REFRESH_SECONDS: '60' }],
    ['HAMI_NODE_AGENT_REFRESH_SECONDS', { HAMI_NODE_AGENT_REFRESH_SECONDS: '40', HAMI_REALTIME_MAX_AGE_SECONDS: '30' }],
    ['HAMI_NODE_AGENT_INTERVAL_SECONDS', { HAMI_NODE_AGENT_INTERVAL_SECONDS: '40' }],
    ['HAMI_NODE_AGENT_MAX_BACKOFF_SECONDS', { HAMI_NODE_AGENT_MAX_BACKOFF_SECONDS: '2' }],
    ['HAMI_NODE_AGENT_PROCESS_COUNT', { HAMI_NODE_AGENT_PROCESS_COUNT: 'yes' }],
    ['HAMI_NODE_AGENT_UTILIZATION_CHANGE', { HAMI_NODE_AGENT_UTILIZATION_CHANGE: '101' }],
    ['HAMI_NODE_AGENT_HEALTH_PORT', { HAMI_NODE_AGENT_HEALTH_PORT: '70000' }],
  ])('refuses a bad %s with a message naming it', (key, env) => {
    const withNode = 'NODE_NAME' in env || key === 'NODE_NAME' ? env : { NODE_NAME: 'n', ...env };
    let thrown: unknown;
    try {
      loadNodeAgentConfig(withNode);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(NodeAgentConfigError);
    expect((thrown as NodeAgentConfigError).message).toContain(`${key}: `);
    expect((thrown as NodeAgentConfigError).issues.map((i) => i.key)).toEqual([key]);
  });
});

describe('createNvidiaSmiRunner (real processes)', () => {
  it('returns the output of a successful run', async () => {
    const run = createNvidiaSmiRunner({ path: fakeNvidiaSmi, timeoutMs: 10_000 });
    await expect(run(GPU_QUERY_ARGS)).resolves.toEqual({
      stdout: readFileSync(join(fixtures, 'gpu-one-a100-40gb.csv'), 'utf8'),
      stderr: '',
      code: 0,
    });
  });

  it('resolves a non-zero exit with its code and stderr, leaving the verdict to the reporter', async () => {
    const run = createNvidiaSmiRunner({ path: fakeNvidiaSmi, timeoutMs: 10_000 });
    await expect(run(['--bogus'])).resolves.toEqual({
      stdout: '',
      stderr: 'Invalid combination of input arguments: --bogus\n',
      code: 2,
    });
  });

  it('rejects with NvidiaSmiNotFoundError when the binary is missing', async () => {
    const run = createNvidiaSmiRunner({ path: join(fixtures, 'no-such-nvidia-smi'), timeoutMs: 10_000 });
    await expect(run(GPU_QUERY_ARGS)).rejects.toBeInstanceOf(NvidiaSmiNotFoundError);
  });

  it('rejects with NvidiaSmiSpawnError when the file cannot be executed', async () => {
    const run = createNvidiaSmiRunner({ path: join(fixtures, 'README.md'), timeoutMs: 10_000 });
    await expect(run(GPU_QUERY_ARGS)).rejects.toBeInstanceOf(NvidiaSmiSpawnError);
  });

  it('kills a hung nvidia-smi after the timeout', async () => {
    // A real child process is the only way to show the kill happens. The child would sleep far past the
    // test's own timeout, so only the runner's kill can settle this promise, and it settles as a timeout;
    // no assertion on elapsed time, which a busy machine would stretch.
    const run = createNvidiaSmiRunner({ path: '/bin/sleep', timeoutMs: 150 });
    await expect(run(['600'])).rejects.toBeInstanceOf(NvidiaSmiTimeoutError);
  });
});

describe('liveness', () => {
  it('allows a full backoff wait plus three timed-out calls before declaring the loop stuck', () => {
    expect(livenessBudgetMs({ maxBackoffSeconds: 60, intervalSeconds: 5, timeoutSeconds: 10 })).toBe(120_000);
  });

  it.each([
    ['no tick yet, just started', undefined, 1_000, true],
    ['no tick yet, started too long ago', undefined, 121_000, false],
    ['recent tick', 100_000, 150_000, true],
    ['tick exactly at the budget', 100_000, 220_000, true],
    ['tick beyond the budget', 100_000, 220_001, false],
  ])('%s', (_name, lastTickMs, nowMs, expected) => {
    expect(isLoopAlive(lastTickMs, 0, nowMs, 120_000)).toBe(expected);
  });

  it('serves /healthz as 200 while alive and 503 once stalled', async () => {
    let alive = true;
    const server = await startHealthServer(0, () => alive, '127.0.0.1');
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      alive = false;
      expect((await fetch(`${base}/healthz`)).status).toBe(503);
      expect((await fetch(`${base}/other`)).status).toBe(404);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('runNodeAgent', () => {
  it('refuses to start on invalid configuration, naming the variable', async () => {
    await expect(runNodeAgent({ env: { NODE_NAME: 'n', HAMI_NODE_AGENT_REFRESH_SECONDS: '90' }, logger: silent })).rejects.toThrow(
      /HAMI_NODE_AGENT_REFRESH_SECONDS: must be below HAMI_REALTIME_MAX_AGE_SECONDS/,
    );
  });

  it('reads nvidia-smi, patches its own Node, and stops cleanly on SIGTERM', async () => {
    const patches: { node: string; annotations: Readonly<Record<string, string | null>> }[] = [];
    const started: unknown[] = [];
    const sigtermListeners = process.listenerCount('SIGTERM');
    await runNodeAgent({
      env: { NODE_NAME: 'gpu-node-7', HAMI_NODE_AGENT_NVIDIA_SMI: fakeNvidiaSmi, HAMI_NODE_AGENT_HEALTH_PORT: '0' },
      logger: {
        ...silent,
        info: (message: unknown, ..._fields: unknown[]): void => {
          started.push(message);
        },
      },
      patchNode: async (node, annotations) => {
        patches.push({ node, annotations });
        process.emit('SIGTERM');
      },
    });
    expect(started[0]).toBe(NODE_AGENT_STARTED);
    expect(patches).toHaveLength(1);
    expect(patches[0]?.node).toBe('gpu-node-7');
    const value = JSON.parse(patches[0]?.annotations['hami.io/node-nvidia-realtime'] ?? '{}') as { devices: unknown[] };
    expect(value.devices).toEqual([
      { id: 'GPU-8f3c2b1e-5d4a-4e7b-9c21-0a6d3e5f7b92', usedMemMB: 2048, totalMemMB: 40960, utilization: 45, processCount: 1 },
    ]);
    expect(process.listenerCount('SIGTERM')).toBe(sigtermListeners);
  });

  it('stops when the caller aborts', async () => {
    const stop = new AbortController();
    let patched = 0;
    await runNodeAgent({
      signal: stop.signal,
      env: { NODE_NAME: 'gpu-node-8', HAMI_NODE_AGENT_NVIDIA_SMI: fakeNvidiaSmi, HAMI_NODE_AGENT_HEALTH_PORT: '0' },
      logger: silent,
      patchNode: async () => {
        patched += 1;
        stop.abort();
      },
    });
    expect(patched).toBe(1);
  });
});
