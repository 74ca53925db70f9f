/**
 * The in-cluster processes' logger (relay, node agent): one JSON object per line on stdout, a constant
 * `message` and structured fields, the same shape as the Lambda side's Powertools logs so one set of
 * queries reads both. No dependency: the relay bundle must not carry Powertools' Metrics/Tracer (and with
 * them the X-Ray SDK), which only make sense inside Lambda.
 */

/** The logger surface domain code uses; Powertools' Logger has the same four methods. */
export interface StructuredLogger {
  debug(message: string, ...extra: unknown[]): void;
  info(message: string, ...extra: unknown[]): void;
  warn(message: string, ...extra: unknown[]): void;
  error(message: string, ...extra: unknown[]): void;
}

export const LogLevels = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'] as const;
export type LogLevel = (typeof LogLevels)[number];

export interface JsonLoggerOptions {
  readonly service: string;
  readonly level: LogLevel;
  readonly write?: (line: string) => void;
  readonly now?: () => Date;
}

const rank: Readonly<Record<LogLevel, number>> = { DEBUG: 10, INFO: 20, WARN: 30, ERROR: 40, SILENT: 99 };

/** Errors become plain fields (JSON.stringify drops their message and stack otherwise). */
function plain(value: unknown): unknown {
  if (value instanceof Error) {
    const cause = (value as { cause?: unknown }).cause;
    return { name: value.name, message: value.message, ...(value.stack ? { stack: value.stack } : {}), ...(cause !== undefined ? { cause: plain(cause) } : {}) };
  }
  return value;
}

/** Fields from the extra arguments: objects are merged, an Error goes under `error`, anything else under `extra`. */
function fieldsOf(extra: readonly unknown[]): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  const loose: unknown[] = [];
  for (const item of extra) {
    if (item instanceof Error) fields.error = plain(item);
    else if (item !== null && typeof item === 'object' && !Array.isArray(item)) {
      for (const [key, value] of Object.entries(item)) fields[key] = plain(value);
    } else if (item !== undefined) loose.push(item);
  }
  if (loose.length > 0) fields.extra = loose;
  return fields;
}

export function createJsonLogger(opts: JsonLoggerOptions): StructuredLogger {
  const write = opts.write ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const now = opts.now ?? (() => new Date());
  const at =
    (level: Exclude<LogLevel, 'SILENT'>) =>
    (message: string, ...extra: unknown[]): void => {
      if (rank[level] < rank[opts.level]) return;
      // Fixed keys last, so a field can never overwrite the level, message or time.
      write(JSON.stringify({ ...fieldsOf(extra), level, message, timestamp: now().toISOString(), service: opts.service }));
    };
  return { debug: at('DEBUG'), info: at('INFO'), warn: at('WARN'), error: at('ERROR') };
}

/** Level and service from the environment: `HAMI_LOG_LEVEL` / `HAMI_SERVICE_NAME` (the Powertools names are accepted too). */
export function loggerFromEnv(env: Readonly<Record<string, string | undefined>>, defaultService: string): StructuredLogger {
  const raw = (env.HAMI_LOG_LEVEL ?? env.POWERTOOLS_LOG_LEVEL ?? 'INFO').trim().toUpperCase();
  const level = (LogLevels as readonly string[]).includes(raw) ? (raw as LogLevel) : raw === 'WARNING' ? 'WARN' : 'INFO';
  const service = (env.HAMI_SERVICE_NAME ?? env.POWERTOOLS_SERVICE_NAME ?? '').trim() || defaultService;
  return createJsonLogger({ service, level });
}
