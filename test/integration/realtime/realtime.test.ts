/**
 * Issue 6 acceptance, through the local server over HTTP: the real-time GPU check (docs/api.md §8) as
 * kube-scheduler and users see it (FailedNodes, events, scheduler log, hints) and as operators see it
 * (the decision log lines), in each mode, with the per-pod override and with stale or missing data.
 */
import type { LocalServer, startLocalServer as StartLocalServer } from '../../../lib/local/server';
import { card, controlClient, gpuNode, gpuPod, patchedAnnotations } from '../../support/cluster';
import { captureLogLines, manualRuntime, type CapturedLine } from './support';

const NODE = 'gpu-a100';
const CARD = 'GPU-a100-0';
const OTHER_CARD = 'GPU-a100-1';
const GiB = 1024;
const CARD_MIB = 80 * GiB;
const START_MS = Date.parse('2026-05-01T12:00:00Z');

const CHECK_FAILED = 'Real-time memory check failed';
const FALLBACK = 'Failed to get real-time usage, using cached data';
const UPDATED = 'Updated real-time device usage';
const REALTIME_MESSAGES = [CHECK_FAILED, FALLBACK, UPDATED];

interface ReportedCard {
  readonly id: string;
  readonly usedMemMB: number;
}

/** The node reporter's annotation (docs/api.md §4), taken `ageSeconds` before the test clock's start. */
function realtimeAnnotation(ageSeconds: number, cards: readonly ReportedCard[]): string {
  return JSON.stringify({
    time: new Date(START_MS - ageSeconds * 1000).toISOString(),
    devices: cards.map((c) => ({ id: c.id, usedMemMB: c.usedMemMB, totalMemMB: CARD_MIB, utilization: 97, processCount: 3 })),
  });
}

/** 70 GiB of the 80 GiB card taken by processes the scheduler does not manage; the ledger is empty. */
const busyCard = (ageSeconds = 5) => realtimeAnnotation(ageSeconds, [{ id: CARD, usedMemMB: 70 * GiB }]);

const ADMITTED = 'admitted';
const REJECTED = `rejected: 1/1 CardRealtimeInsufficientMemory`;

/** One word for a filter answer on the single node: admitted, or rejected with its FailedNodes reason. */
function outcomeOf(answer: { NodeNames?: string[] | null; FailedNodes?: Record<string, string> | null; Error: string }): string {
  if (answer.Error !== '') return `error: ${answer.Error}`;
  if (answer.NodeNames?.length === 1 && answer.NodeNames[0] === NODE) return ADMITTED;
  return `rejected: ${answer.FailedNodes?.[NODE] ?? 'no reason'}`;
}

function inferencePod(name: string, memMiB: number, annotations: Record<string, string> = {}) {
  return gpuPod(name, [{ name: 'server', gpu: 1, mem: memMiB }], { annotations });
}

describe('real-time GPU check through the local server', () => {
  let server: LocalServer | undefined;
  let runtime: ReturnType<typeof manualRuntime>;
  let logs: ReturnType<typeof captureLogLines>;
  let startLocalServer: typeof StartLocalServer;
  const envBefore = { level: process.env.POWERTOOLS_LOG_LEVEL, dev: process.env.POWERTOOLS_DEV };

  beforeAll(async () => {
    // test/setup-env.ts makes the logger silent, and the Lambda middleware puts back the level the
    // logger was built with on every request: build a fresh one at INFO for these tests, writing
    // through the global console (dev mode) where captureLogLines listens.
    process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
    process.env.POWERTOOLS_DEV = 'true';
    await jest.isolateModulesAsync(async () => {
      ({ startLocalServer } = await import('../../../lib/local/server'));
    });
  });

  afterAll(() => {
    // Assigning undefined would store the string "undefined".
    for (const [key, value] of [['POWERTOOLS_LOG_LEVEL', envBefore.level], ['POWERTOOLS_DEV', envBefore.dev]] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });

  beforeEach(() => {
    runtime = manualRuntime(START_MS);
    logs = captureLogLines();
  });

  afterEach(async () => {
    logs.restore();
    await server?.close();
    server = undefined;
  });

  /** A server with this configuration and one registered node with one or two 80 GiB cards. */
  async function clusterWith(env: Record<string, string>, realtime: string | undefined, cards = [CARD]) {
    server = await startLocalServer({ env: { ...env }, runtime });
    const api = controlClient(server.url);
    const node = gpuNode(
      NODE,
      cards.map((id) => card(id, { devmem: CARD_MIB, type: 'NVIDIA-A100-SXM4-80GB' })),
      realtime === undefined ? {} : { annotations: { 'hami.io/node-nvidia-realtime': realtime } },
    );
    expect((await api.events([{ type: 'ADDED', object: node }])).json).toMatchObject({ accepted: 1, rejected: [] });
    return api;
  }

  const realtimeLines = (): CapturedLine[] => logs.lines().filter((line) => REALTIME_MESSAGES.includes(line.message));

  it('strict mode rejects a 20 GiB request on a card really 70/80 GiB full, and says why everywhere', async () => {
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true', HAMI_REALTIME_CHECK_MODE: 'strict' }, busyCard());
    const pod = inferencePod('llm-20g', 20 * GiB);

    const res = await api.filter(pod, [NODE]);
    expect(res.status).toBe(200);
    expect(res.json.Error).toBe('');
    expect(res.json.NodeNames ?? []).toEqual([]);
    expect(res.json.FailedNodes).toEqual({ [NODE]: '1/1 CardRealtimeInsufficientMemory' });
    expect(res.json.Effects.map((e: { reason: string; message: string }) => [e.reason, e.message])).toEqual([
      ['FilteringFailed', `1 nodes CardRealtimeInsufficientMemory(${NODE})`],
      ['FilteringFailed', 'no available node, 1 nodes do not meet'],
    ]);

    const log = await api.schedulerLog('default', 'llm-20g', '?detail=devices');
    expect(log.status).toBe(200);
    expect(log.json).toMatchObject({ status: 'failed', filter: { status: 'failed', summary: 'no available node, 1 nodes do not meet' } });
    const [container] = log.json.filter.nodes[0].containers;
    expect(container).toMatchObject({ name: 'server', status: 'failed', reason: '1/1 CardRealtimeInsufficientMemory' });
    // The ledger alone would have admitted it: the card shows nothing booked, and the measured figures.
    expect(container.devices).toEqual([
      expect.objectContaining({
        uuid: CARD,
        outcome: 'CardRealtimeInsufficientMemory',
        totalMem: CARD_MIB,
        usedMem: 0,
        requestedMem: 20 * GiB,
        realtimeUsedMem: 70 * GiB,
        realtimeTotalMem: CARD_MIB,
      }),
    ]);
    expect(log.json.hints).toEqual([
      expect.objectContaining({ code: 'CardRealtimeInsufficientMemory', fix: expect.stringContaining('HAMI_REALTIME_CHECK_MODE') }),
    ]);

    expect(realtimeLines()).toEqual([
      expect.objectContaining({
        level: 'WARN',
        message: CHECK_FAILED,
        pod: 'default/llm-20g',
        node: NODE,
        device: CARD,
        requestMemory: 20 * GiB,
        realUsedMemory: 70 * GiB,
        totalMemory: CARD_MIB,
        mode: 'strict',
      }),
    ]);
    expect((await api.devices(NODE)).json.devices[0]).toMatchObject({ usedmem: 0, pods: [] });
  });

  it('warning mode admits the same request and logs the warning with the figures', async () => {
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true', HAMI_REALTIME_CHECK_MODE: 'warning' }, busyCard());
    const pod = inferencePod('llm-20g', 20 * GiB);

    const res = await api.filter(pod, [NODE]);
    expect(res.json.Error).toBe('');
    expect(res.json.NodeNames).toEqual([NODE]);
    expect(patchedAnnotations(res.json)['hami.io/vgpu-devices-allocated']).toBe(`${CARD},NVIDIA,${20 * GiB},0:;`);
    expect(realtimeLines()).toEqual([
      expect.objectContaining({
        level: 'WARN',
        message: CHECK_FAILED,
        pod: 'default/llm-20g',
        node: NODE,
        device: CARD,
        requestMemory: 20 * GiB,
        realUsedMemory: 70 * GiB,
        totalMemory: CARD_MIB,
        mode: 'warning',
      }),
    ]);
    const log = await api.schedulerLog('default', 'llm-20g');
    expect(log.json).toMatchObject({ status: 'pending', filter: { status: 'passed' } });
    expect(log.json.hints).toEqual([]);
    expect((await api.devices(NODE)).json.devices[0]).toMatchObject({ usedmem: 20 * GiB, pods: ['default/llm-20g'] });
  });

  // Real free = 80 GiB - 70 GiB - margin = 10140 MiB with the default 100 MiB margin.
  it.each([
    { margin: undefined, request: 10140, outcome: ADMITTED },
    { margin: undefined, request: 10141, outcome: REJECTED },
    { margin: '0', request: 10240, outcome: ADMITTED },
    { margin: '0', request: 10241, outcome: REJECTED },
    { margin: '2048', request: 8192, outcome: ADMITTED },
    { margin: '2048', request: 8193, outcome: REJECTED },
  ])('strict mode with margin $margin MiB: a $request MiB request is $outcome', async ({ margin, request, outcome }) => {
    const env: Record<string, string> = { HAMI_REALTIME_CHECK: 'true', ...(margin === undefined ? {} : { HAMI_REALTIME_MARGIN_MIB: margin }) };
    const api = await clusterWith(env, busyCard());
    expect(outcomeOf((await api.filter(inferencePod('edge', request), [NODE])).json)).toBe(outcome);
  });

  it('falls back to the ledger once the report is older than the maximum age, and says so', async () => {
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true' }, busyCard(5));
    expect((await api.filter(inferencePod('fresh', 20 * GiB), [NODE])).json.FailedNodes).toEqual({ [NODE]: '1/1 CardRealtimeInsufficientMemory' });

    // The reporter went quiet: 5 s + 56 s is past the default 60 s.
    runtime.advance(56_000);
    logs.restore();
    logs = captureLogLines();
    const res = await api.filter(inferencePod('stale', 20 * GiB), [NODE]);
    expect(res.json.NodeNames).toEqual([NODE]);
    expect(realtimeLines()).toEqual([
      expect.objectContaining({ level: 'INFO', message: FALLBACK, pod: 'default/stale', node: NODE, device: CARD, cachedUsedMemory: 0 }),
    ]);

    // The ledger still applies while the data is stale: 80 - 20 booked leaves less than 70 GiB.
    const tooBig = await api.filter(inferencePod('too-big', 70 * GiB), [NODE]);
    expect(tooBig.json.FailedNodes).toEqual({ [NODE]: '1/1 CardInsufficientMemory' });
  });

  it('honours HAMI_REALTIME_MAX_AGE_SECONDS', async () => {
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true', HAMI_REALTIME_MAX_AGE_SECONDS: '300' }, busyCard(120));
    expect((await api.filter(inferencePod('two-minutes-old', 20 * GiB), [NODE])).json.FailedNodes).toEqual({
      [NODE]: '1/1 CardRealtimeInsufficientMemory',
    });
    runtime.advance(181_000);
    expect((await api.filter(inferencePod('five-minutes-old', 20 * GiB), [NODE])).json.NodeNames).toEqual([NODE]);
    expect(realtimeLines().map((line) => line.message)).toEqual([CHECK_FAILED, FALLBACK]);
  });

  it('falls back to the ledger when the node has no real-time report, and when it lacks the card', async () => {
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true' }, undefined);
    expect((await api.filter(inferencePod('unreported', 20 * GiB), [NODE])).json.NodeNames).toEqual([NODE]);

    const otherCardOnly = realtimeAnnotation(5, [{ id: 'GPU-elsewhere', usedMemMB: 80 * GiB }]);
    const updated = gpuNode(NODE, [card(CARD, { devmem: CARD_MIB })], { rv: '2', annotations: { 'hami.io/node-nvidia-realtime': otherCardOnly } });
    await api.events([{ type: 'MODIFIED', object: updated }]);
    expect((await api.filter(inferencePod('card-unreported', 20 * GiB), [NODE])).json.NodeNames).toEqual([NODE]);

    expect(realtimeLines()).toEqual([
      expect.objectContaining({ message: FALLBACK, pod: 'default/unreported', device: CARD, cachedUsedMemory: 0 }),
      expect.objectContaining({ message: FALLBACK, pod: 'default/card-unreported', device: CARD, cachedUsedMemory: 20 * GiB }),
    ]);
  });

  it('never rejects for want of data: a broken report, then a report withdrawn, fall back to the ledger', async () => {
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true' }, '{"time":');
    expect((await api.filter(inferencePod('broken-report', 20 * GiB), [NODE])).json.NodeNames).toEqual([NODE]);

    await api.events([{ type: 'MODIFIED', object: gpuNode(NODE, [card(CARD, { devmem: CARD_MIB })], { rv: '2', annotations: { 'hami.io/node-nvidia-realtime': busyCard() } }) }]);
    expect(outcomeOf((await api.filter(inferencePod('reported', 20 * GiB), [NODE])).json)).toBe(REJECTED);

    // The reporter is uninstalled and its annotation removed: the old figures must not linger.
    await api.events([{ type: 'MODIFIED', object: gpuNode(NODE, [card(CARD, { devmem: CARD_MIB })], { rv: '3' }) }]);
    expect(outcomeOf((await api.filter(inferencePod('withdrawn', 20 * GiB), [NODE])).json)).toBe(ADMITTED);
    expect(realtimeLines().map((line) => [line.message, line.pod])).toEqual([
      [FALLBACK, 'default/broken-report'],
      [CHECK_FAILED, 'default/reported'],
      [FALLBACK, 'default/withdrawn'],
    ]);
  });

  it('counts what the pod’s earlier containers take on the same card against the real free memory', async () => {
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true' }, busyCard());
    // 6 GiB fits in the 10140 MiB really free, twice does not.
    const one = gpuPod('one-container', [{ name: 'a', gpu: 1, mem: 6 * GiB }]);
    const two = gpuPod('two-containers', [
      { name: 'a', gpu: 1, mem: 6 * GiB },
      { name: 'b', gpu: 1, mem: 6 * GiB },
    ]);
    expect(outcomeOf((await api.filter(two, [NODE])).json)).toBe(REJECTED);
    expect(outcomeOf((await api.filter(one, [NODE])).json)).toBe(ADMITTED);
  });

  it.each([
    { pct: 12, outcome: ADMITTED },
    { pct: 13, outcome: REJECTED },
  ])('checks a gpumem-percentage request ($pct percent of 80 GiB) by the memory it books', async ({ pct, outcome }) => {
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true' }, busyCard());
    const pod = gpuPod('share', [{ name: 'a', gpu: 1, pct }]);
    expect(outcomeOf((await api.filter(pod, [NODE])).json)).toBe(outcome);
  });

  it('refuses a two-card request when only one of the two cards is really free', async () => {
    const report = realtimeAnnotation(5, [
      { id: CARD, usedMemMB: 70 * GiB },
      { id: OTHER_CARD, usedMemMB: 0 },
    ]);
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true' }, report, [CARD, OTHER_CARD]);
    const pod = gpuPod('pair', [{ name: 'trainer', gpu: 2, mem: 20 * GiB }]);
    expect((await api.filter(pod, [NODE])).json.FailedNodes).toEqual({
      [NODE]: '1/2 AllocatedCardsInsufficientRequest, 1/2 CardRealtimeInsufficientMemory',
    });
  });

  it('picks up a new report forwarded for the node', async () => {
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true' }, realtimeAnnotation(5, [{ id: CARD, usedMemMB: 2 * GiB }]));
    expect((await api.filter(inferencePod('before', 20 * GiB), [NODE])).json.NodeNames).toEqual([NODE]);

    const busy = gpuNode(NODE, [card(CARD, { devmem: CARD_MIB })], { rv: '2', annotations: { 'hami.io/node-nvidia-realtime': busyCard(1) } });
    await api.events([{ type: 'MODIFIED', object: busy }]);
    expect((await api.filter(inferencePod('after', 20 * GiB), [NODE])).json.FailedNodes).toEqual({ [NODE]: '1/1 CardRealtimeInsufficientMemory' });
  });

  it.each([
    { check: 'true', mode: 'strict', podOverride: 'false', outcome: ADMITTED, lines: [] },
    { check: 'false', mode: 'strict', podOverride: 'true', outcome: REJECTED, lines: [CHECK_FAILED] },
    { check: 'false', mode: 'strict', podOverride: undefined, outcome: ADMITTED, lines: [] },
    { check: 'false', mode: 'warning', podOverride: 'true', outcome: ADMITTED, lines: [CHECK_FAILED] },
    { check: 'true', mode: 'disabled', podOverride: undefined, outcome: ADMITTED, lines: [] },
    { check: 'true', mode: 'disabled', podOverride: 'true', outcome: ADMITTED, lines: [] },
    // Only "true" and "false" override; anything else leaves the global switch in charge.
    { check: 'true', mode: 'strict', podOverride: 'yes', outcome: REJECTED, lines: [CHECK_FAILED] },
  ])(
    'HAMI_REALTIME_CHECK=$check, mode $mode, pod hami.io/enable-realtime-check=$podOverride: $outcome',
    async ({ check, mode, podOverride, outcome, lines }) => {
      const api = await clusterWith({ HAMI_REALTIME_CHECK: check, HAMI_REALTIME_CHECK_MODE: mode }, busyCard());
      const annotations: Record<string, string> = podOverride === undefined ? {} : { 'hami.io/enable-realtime-check': podOverride };
      expect(outcomeOf((await api.filter(inferencePod('llm-20g', 20 * GiB, annotations), [NODE])).json)).toBe(outcome);
      expect(realtimeLines().map((line) => line.message)).toEqual(lines);
    },
  );

  it('logs the cached and real figures when fresh data is used, at verbosity 5', async () => {
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true', HAMI_LOG_VERBOSITY: '5' }, busyCard());
    expect((await api.filter(inferencePod('small', 4 * GiB), [NODE])).json.NodeNames).toEqual([NODE]);
    expect(realtimeLines()).toEqual([
      expect.objectContaining({
        level: 'INFO',
        message: UPDATED,
        pod: 'default/small',
        device: CARD,
        cachedUsedMemory: 0,
        realUsedMemory: 70 * GiB,
        totalMemory: CARD_MIB,
      }),
    ]);
  });

  it.each([
    { busy: CARD, expected: OTHER_CARD },
    { busy: OTHER_CARD, expected: CARD },
  ])('strict mode steers the request off the card really in use ($busy) onto $expected', async ({ busy, expected }) => {
    const report = realtimeAnnotation(5, [
      { id: busy, usedMemMB: 70 * GiB },
      { id: busy === CARD ? OTHER_CARD : CARD, usedMemMB: 512 },
    ]);
    const api = await clusterWith({ HAMI_REALTIME_CHECK: 'true' }, report, [CARD, OTHER_CARD]);
    const res = await api.filter(inferencePod('steered', 20 * GiB), [NODE]);
    expect(res.json.NodeNames).toEqual([NODE]);
    expect(patchedAnnotations(res.json)['hami.io/vgpu-devices-allocated']).toBe(`${expected},NVIDIA,${20 * GiB},0:;`);
  });
});
