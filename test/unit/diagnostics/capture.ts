/**
 * Real Powertools output, captured: a Logger and Metrics built as production builds them, with the
 * console they write to (global console under POWERTOOLS_DEV) spied on.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';

export type LogLine = Record<string, unknown> & { message: string; level: string };

export function captureLogger(): { logger: Logger; lines: LogLine[]; restore: () => void } {
  const lines: LogLine[] = [];
  const record = (...args: unknown[]) => {
    lines.push(JSON.parse(String(args[0])) as LogLine);
  };
  const spies = (['debug', 'info', 'warn', 'error', 'log'] as const).map((method) =>
    jest.spyOn(console, method).mockImplementation(record),
  );
  const logger = new Logger({ serviceName: 'hami-scheduler', logLevel: 'DEBUG' });
  return { logger, lines, restore: () => spies.forEach((spy) => spy.mockRestore()) };
}

export interface EmfDocument {
  _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] };
  [key: string]: unknown;
}

export function captureMetrics(): { metrics: Metrics; documents: EmfDocument[]; restore: () => void } {
  const previous = process.env.POWERTOOLS_METRICS_DISABLED;
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  const documents: EmfDocument[] = [];
  const spy = jest.spyOn(console, 'log').mockImplementation((text: unknown) => {
    documents.push(JSON.parse(String(text)) as EmfDocument);
  });
  const metrics = new Metrics({ serviceName: 'hami-scheduler', namespace: 'HamiScheduler' });
  return {
    metrics,
    documents,
    restore: () => {
      spy.mockRestore();
      process.env.POWERTOOLS_METRICS_DISABLED = previous;
    },
  };
}
