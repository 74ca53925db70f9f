/**
 * One place builds the observability clients; everything else imports them from here.
 * Verbosity follows klog (HAMI_LOG_VERBOSITY 0-5): level 4 is one line per node, level 5 one line per
 * card per failed check. Messages are constants; details go in structured fields.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Tracer } from '@aws-lambda-powertools/tracer';

const serviceName = process.env.POWERTOOLS_SERVICE_NAME ?? 'hami-scheduler';

export const logger = new Logger({ serviceName });
// Metrics' own warnings go through the one logger, so they follow its level like every other line.
export const metrics = new Metrics({ serviceName, namespace: process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'HamiScheduler', logger });
/**
 * The X-Ray tracer, only where tracing is on: loading X-Ray's SDK installs async hooks that tax every promise of
 * the process (about a tenth of a filter's CPU time), traced or not.
 */
export const tracer: Tracer | undefined = envFlag('POWERTOOLS_TRACE_ENABLED', false) ? loadTracer() : undefined;

function loadTracer(): Tracer {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a require, not an import: the module (and X-Ray's hooks) load only when this runs
  const { Tracer: TracerClass } = require('@aws-lambda-powertools/tracer') as typeof import('@aws-lambda-powertools/tracer');
  return new TracerClass({ serviceName });
}

/**
 * Whether metrics are published: Powertools' own rule (POWERTOOLS_METRICS_DISABLED wins, else POWERTOOLS_DEV
 * disables), read once like the clients above.
 */
export const metricsEnabled = !envFlag('POWERTOOLS_METRICS_DISABLED', envFlag('POWERTOOLS_DEV', false));

function envFlag(name: string, fallback: boolean): boolean {
  const raw = process.env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  return raw === 'true' || raw === '1';
}

/** The logger surface domain code may use (narrow, so tests can pass a recorder). */
export type AppLogger = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

function readVerbosity(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return 0;
  const v = Number(raw);
  return Number.isInteger(v) && v >= 0 && v <= 5 ? v : 0;
}

let verbosity = readVerbosity(process.env.HAMI_LOG_VERBOSITY);

/** klog-style gate: `if (v(4)) logger.info('NodeFitPod', {...})`. */
export function v(level: number): boolean {
  return verbosity >= level;
}

/** For tests and the local server's config loader. */
export function setVerbosity(level: number): void {
  verbosity = level;
}
