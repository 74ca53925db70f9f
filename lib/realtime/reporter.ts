/**
 * The node agent's loop, free of I/O: reads the GPUs through an injected nvidia-smi runner, writes the
 * `hami.io/node-nvidia-realtime` annotation through an injected patcher, and waits through an injected
 * sleep. It never throws: every failure becomes a structured log line and a longer wait, because a
 * crashing DaemonSet pod would only turn a GPU problem into a restart storm.
 */
import type { AppLogger } from '../powertools';
import type { NodeAgentConfig } from './config';
import {
  NodePatchError,
  NvidiaSmiExitError,
  NvidiaSmiNotFoundError,
  NvidiaSmiSpawnError,
  NvidiaSmiTimeoutError,
} from './errors';
import {
  buildRealtimeAnnotation,
  COMPUTE_APPS_QUERY_ARGS,
  GPU_QUERY_ARGS,
  NvidiaSmiOutputError,
  parseComputeApps,
  parseGpuQuery,
  serializeRealtimeAnnotation,
  type CardReadError,
  type ComputeApp,
  type RealtimeAnnotationDevice,
} from './nvidiaSmi';
import { REALTIME_ANNOTATION } from '../wire/realtime';

export interface NvidiaSmiResult {
  readonly stdout: string;
  readonly stderr: string;
  /** Exit code; non-zero means the reading failed. */
  readonly code: number;
}

export interface NodeReporterDeps {
  /** Runs nvidia-smi with these arguments. Rejects with the typed errors of ./errors when it cannot run. */
  runNvidiaSmi(args: readonly string[]): Promise<NvidiaSmiResult>;
  /** JSON merge patch of the Node's annotations (null deletes a key). */
  patchNode(name: string, annotations: Readonly<Record<string, string | null>>): Promise<void>;
  /** Epoch milliseconds. */
  now(): number;
  /** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  logger: AppLogger;
}

export type ReporterConfig = Pick<
  NodeAgentConfig,
  'nodeName' | 'intervalSeconds' | 'refreshSeconds' | 'maxBackoffSeconds' | 'reportProcessCount' | 'utilizationChangePercent'
>;

/** Why a GPU reading failed, as logged in the `reason` field. */
export type ReadFailureReason = 'notFound' | 'timeout' | 'spawnFailed' | 'exitCode' | 'badOutput' | 'unexpected';

export type TickOutcome =
  | { readonly kind: 'published'; readonly reason: 'first' | 'changed' | 'refresh'; readonly value: string }
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'readFailed'; readonly reason: ReadFailureReason }
  | { readonly kind: 'patchFailed' };

export interface NodeReporter {
  /** One reading and, when due, one patch. Never rejects. */
  tick(): Promise<TickOutcome>;
  /** Ticks until `signal` aborts, then resolves. Never rejects. */
  run(signal: AbortSignal): Promise<void>;
  /** Epoch ms at which the last tick finished (undefined before the first), for the liveness probe. */
  lastTickMs(): number | undefined;
  /** Milliseconds the loop waits before the next tick, given the failures so far. */
  nextDelayMs(): number;
}

// Log messages are constants (searchable in CloudWatch / kubectl logs); details go in fields.
export const NodeAgentLog = {
  readFailed: 'Failed to read GPUs with nvidia-smi',
  processesFailed: 'Failed to read GPU compute processes, reporting without process counts',
  processesRecovered: 'GPU compute processes readable again',
  cardLeftOut: 'GPU card left out of the real-time report',
  noCards: 'No GPUs reported by nvidia-smi',
  published: 'Published real-time GPU usage',
  patchFailed: 'Failed to patch node real-time annotation',
  recovered: 'Real-time GPU reporting recovered',
  unexpected: 'Unexpected node agent error',
  stopped: 'Node agent stopped',
} as const;

function classifyReadFailure(err: unknown): ReadFailureReason {
  if (err instanceof NvidiaSmiNotFoundError) return 'notFound';
  if (err instanceof NvidiaSmiTimeoutError) return 'timeout';
  if (err instanceof NvidiaSmiSpawnError) return 'spawnFailed';
  if (err instanceof NvidiaSmiExitError) return 'exitCode';
  if (err instanceof NvidiaSmiOutputError) return 'badOutput';
  return 'unexpected';
}

function firstLine(text: string): string {
  const line = text.split(/\r?\n/).find((l) => l.trim() !== '') ?? '';
  return line.trim().slice(0, 300);
}

async function runChecked(deps: NodeReporterDeps, args: readonly string[]): Promise<string> {
  const result = await deps.runNvidiaSmi(args);
  if (result.code !== 0) {
    const detail = firstLine(result.stderr) || firstLine(result.stdout);
    throw new NvidiaSmiExitError(`nvidia-smi exited with code ${result.code}`, result.code, detail);
  }
  return result.stdout;
}

/** True when `next` differs from what was last published enough to be worth a patch. */
export function devicesChanged(
  published: readonly RealtimeAnnotationDevice[],
  next: readonly RealtimeAnnotationDevice[],
  utilizationChangePercent: number,
): boolean {
  if (published.length !== next.length) return true;
  return next.some((device, i) => {
    const before = published[i];
    if (before === undefined) return true;
    if (before.id !== device.id || before.usedMemMB !== device.usedMemMB || before.totalMemMB !== device.totalMemMB) return true;
    if (before.processCount !== device.processCount) return true;
    if (before.utilization === undefined || device.utilization === undefined) return before.utilization !== device.utilization;
    // Utilization moves every second on a busy card; small moves wait for the refresh instead of patching the Node.
    const moved = Math.abs(before.utilization - device.utilization);
    return moved > 0 && moved >= utilizationChangePercent;
  });
}

function cardErrorsKey(errors: readonly CardReadError[]): string {
  return errors.map((e) => `${e.uuid}|${e.field}|${e.value}`).join(';');
}

export function createNodeReporter(deps: NodeReporterDeps, config: ReporterConfig): NodeReporter {
  const { logger } = deps;
  const node = config.nodeName;
  let published: { devices: readonly RealtimeAnnotationDevice[]; atMs: number } | undefined;
  let consecutiveFailures = 0;
  let processQueryFailing = false;
  let lastCardErrors = '';
  let reportedNoCards = false;
  let lastTick: number | undefined;

  function nextDelayMs(): number {
    const intervalMs = config.intervalSeconds * 1000;
    if (consecutiveFailures === 0) return intervalMs;
    // Doubling per failure, capped: a broken driver is not hammered every few seconds, a blip recovers fast.
    const exponent = Math.min(consecutiveFailures, 20);
    return Math.min(intervalMs * 2 ** exponent, Math.max(config.maxBackoffSeconds * 1000, intervalMs));
  }

  function noteFailure(): void {
    consecutiveFailures += 1;
  }

  function noteSuccess(): void {
    if (consecutiveFailures > 0) logger.info(NodeAgentLog.recovered, { node, failedAttempts: consecutiveFailures });
    consecutiveFailures = 0;
  }

  async function readProcesses(): Promise<ComputeApp[] | undefined> {
    if (!config.reportProcessCount) return undefined;
    try {
      const apps = parseComputeApps(await runChecked(deps, COMPUTE_APPS_QUERY_ARGS));
      if (processQueryFailing) logger.info(NodeAgentLog.processesRecovered, { node });
      processQueryFailing = false;
      return apps;
    } catch (err) {
      // Memory figures are what the check needs; a failed process query only costs processCount.
      if (!processQueryFailing) logger.warn(NodeAgentLog.processesFailed, { node, reason: classifyReadFailure(err), error: err });
      processQueryFailing = true;
      return undefined;
    }
  }

  function reportCardErrors(errors: readonly CardReadError[]): void {
    const key = cardErrorsKey(errors);
    if (key === lastCardErrors) return; // Logged once per distinct set, not every few seconds.
    lastCardErrors = key;
    for (const e of errors) {
      logger.warn(NodeAgentLog.cardLeftOut, {
        node,
        device: e.uuid,
        index: e.index,
        field: e.field,
        value: e.value,
        error: e.message,
      });
    }
  }

  async function tick(): Promise<TickOutcome> {
    let reading: ReturnType<typeof parseGpuQuery>;
    try {
      reading = parseGpuQuery(await runChecked(deps, GPU_QUERY_ARGS));
    } catch (err) {
      noteFailure();
      const reason = classifyReadFailure(err);
      logger.warn(NodeAgentLog.readFailed, {
        node,
        reason,
        error: err,
        ...(err instanceof NvidiaSmiExitError ? { exitCode: err.exitCode, detail: err.detail } : {}),
        ...(err instanceof NvidiaSmiOutputError ? { line: err.line } : {}),
        consecutiveFailures,
        retryInSeconds: nextDelayMs() / 1000,
      });
      return { kind: 'readFailed', reason };
    }
    reportCardErrors(reading.errors);
    const noCards = reading.cards.length === 0 && reading.errors.length === 0;
    if (noCards && !reportedNoCards) logger.warn(NodeAgentLog.noCards, { node });
    reportedNoCards = noCards;

    const apps = reading.cards.length > 0 ? await readProcesses() : [];
    const nowMs = deps.now();
    const annotation = buildRealtimeAnnotation(reading.cards, apps, nowMs);
    let reason: 'first' | 'changed' | 'refresh' | undefined;
    if (published === undefined) reason = 'first';
    else if (devicesChanged(published.devices, annotation.devices, config.utilizationChangePercent)) reason = 'changed';
    else if (nowMs - published.atMs >= config.refreshSeconds * 1000) reason = 'refresh';
    if (reason === undefined) {
      noteSuccess();
      return { kind: 'unchanged' };
    }

    const value = serializeRealtimeAnnotation(annotation);
    try {
      await deps.patchNode(node, { [REALTIME_ANNOTATION]: value });
    } catch (err) {
      noteFailure();
      logger.warn(NodeAgentLog.patchFailed, {
        node,
        error: err,
        ...(err instanceof NodePatchError && err.statusCode !== undefined ? { statusCode: err.statusCode } : {}),
        consecutiveFailures,
        retryInSeconds: nextDelayMs() / 1000,
      });
      return { kind: 'patchFailed' };
    }
    published = { devices: annotation.devices, atMs: nowMs };
    noteSuccess();
    logger.debug(NodeAgentLog.published, { node, reason, devices: annotation.devices.length });
    return { kind: 'published', reason, value };
  }

  async function safeTick(): Promise<void> {
    try {
      await tick();
    } catch (err) {
      // tick() handles every dependency failure itself; this only guards against bugs (e.g. a throwing logger).
      noteFailure();
      try {
        logger.error(NodeAgentLog.unexpected, { node, error: err });
      } catch {
        // Nothing left to report to.
      }
    }
    lastTick = deps.now();
  }

  async function run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await safeTick();
      if (signal.aborted) break;
      try {
        await deps.sleep(nextDelayMs(), signal);
      } catch {
        // A sleep that rejects on abort is as good as one that resolves; the loop condition decides.
      }
    }
    logger.info(NodeAgentLog.stopped, { node });
  }

  return { tick, run, lastTickMs: () => lastTick, nextDelayMs };
}
