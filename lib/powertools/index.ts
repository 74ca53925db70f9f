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

/** A request's logger: `appendKeys` adds keys to every later line of this request only. */
export interface RequestLogger extends AppLogger {
  appendKeys(keys: Record<string, string>): void;
}

/** What a request's lines name of the invocation (Lambda's context has more). */
export interface InvocationIds {
  readonly awsRequestId: string;
  readonly functionName: string;
}

/**
 * A request's logger: the lines of `root`, each carrying the request's own keys (its request id and function, then
 * what the route adds: pod, node, attempt id). Keys travel with each line rather than living in a logger, so requests
 * that overlap in one process (the local server) never carry each other's, as with a Powertools child logger; but a
 * child is a whole logger per request (its options merged, a console of its own): in `npm run bench` (1,000 nodes,
 * 5 / 8 ms) that took about 0.17 ms off a filter's path before its booking, and about 1 ms of CPU per pod off the
 * two control planes together.
 */
export function requestLogger(root: AppLogger, ids: InvocationIds, keys: Record<string, string>): RequestLogger {
  const own: Record<string, string> = { function_name: ids.functionName, function_request_id: ids.awsRequestId, ...keys };
  // Powertools reads every extra argument in order (an object's keys, an error, a string): the request's keys first,
  // so a line's own fields win. The cast: its parameter type lists objects, or one error or string, never both.
  type Extra = Parameters<AppLogger['info']> extends [unknown, ...infer E] ? E : never;
  const withKeys = (extra: unknown[]): Extra => [own, ...extra] as unknown as Extra;
  return {
    debug: (input, ...extra) => root.debug(input, ...withKeys(extra)),
    info: (input, ...extra) => root.info(input, ...withKeys(extra)),
    warn: (input, ...extra) => root.warn(input, ...withKeys(extra)),
    error: (input, ...extra) => root.error(input, ...withKeys(extra)),
    appendKeys: (more) => {
      Object.assign(own, more);
    },
  };
}

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
