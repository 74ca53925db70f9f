/**
 * The in-cluster processes' logger (relay, node agent): Powertools' Logger, as on the Lambda side, so both write
 * the same JSON lines (constant `message`, structured fields, `level`, `timestamp`, `service`) and one set of
 * Logs Insights queries reads both. Only the Logger package is imported here, never ../powertools: the relay
 * bundle must not carry Powertools' Metrics and Tracer (and with them X-Ray's SDK), which only make sense in Lambda.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { AppLogger } from '../powertools';

export const LogLevels = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'] as const;
export type LogLevel = (typeof LogLevels)[number];

/**
 * Level and service from the environment: `HAMI_LOG_LEVEL` / `HAMI_SERVICE_NAME`, else Powertools' own
 * `POWERTOOLS_LOG_LEVEL` / `POWERTOOLS_SERVICE_NAME`. An unknown level falls back to INFO (`WARNING` means WARN)
 * rather than stopping the process over a typo in its manifest.
 */
export function loggerFromEnv(env: Readonly<Record<string, string | undefined>>, defaultService: string): AppLogger {
  const raw = (env.HAMI_LOG_LEVEL ?? env.POWERTOOLS_LOG_LEVEL ?? 'INFO').trim().toUpperCase();
  const logLevel: LogLevel = (LogLevels as readonly string[]).includes(raw) ? (raw as LogLevel) : raw === 'WARNING' ? 'WARN' : 'INFO';
  const serviceName = (env.HAMI_SERVICE_NAME ?? env.POWERTOOLS_SERVICE_NAME ?? '').trim() || defaultService;
  return new Logger({ serviceName, logLevel });
}
