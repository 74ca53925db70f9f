import type { Route } from '../../../lib/http/routes';

/**
 * The Lambda adapter in normal operation says nothing that is not a problem: with metrics off (the local
 * server's default) there is no per-request "No application metrics to publish" warning, even when requests
 * overlap in one process.
 */
function restore(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

/**
 * Runs `use` on a freshly loaded adapter (so the one logger reads this log level) with metrics off, and returns every
 * line it printed, as printed.
 */
async function printedLines(logLevel: 'INFO' | 'WARN', use: (adapter: typeof import('../../../lib/http/lambda')) => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const spies = (['debug', 'info', 'warn', 'error', 'log'] as const).map((method) => jest.spyOn(console, method).mockImplementation((...args: unknown[]) => lines.push(args.map(String).join(' '))));
  const saved = { level: process.env.POWERTOOLS_LOG_LEVEL, metrics: process.env.POWERTOOLS_METRICS_DISABLED };
  process.env.POWERTOOLS_LOG_LEVEL = logLevel;
  process.env.POWERTOOLS_METRICS_DISABLED = 'true';
  try {
    await jest.isolateModulesAsync(async () => use(await import('../../../lib/http/lambda')));
  } finally {
    spies.forEach((spy) => spy.mockRestore());
    restore('POWERTOOLS_LOG_LEVEL', saved.level);
    restore('POWERTOOLS_METRICS_DISABLED', saved.metrics);
  }
  return lines;
}

describe('lambda adapter logging', () => {
  it('warns about nothing on ordinary, overlapping requests with metrics off', async () => {
    const lines = await printedLines('WARN', async ({ lambdaHandler }) => {
      const { healthzRoute } = await import('../../../lib/http/routes');
      const handler = lambdaHandler(healthzRoute, () => ({}) as never);
      const context = { awsRequestId: 'r', functionName: 'healthz', getRemainingTimeInMillis: () => 1000 } as never;
      const event = { rawPath: '/healthz', headers: {}, requestContext: { http: { method: 'GET' } } } as never;
      const answers = await Promise.all(Array.from({ length: 5 }, () => handler(event, context)));
      expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200]);
    });
    expect(lines.filter((line) => /"level":\s*"(WARN|ERROR)"/.test(line))).toEqual([]);
  });

  it("keeps each request's keys on its own lines while requests overlap", async () => {
    const printed = await printedLines('INFO', async ({ lambdaHandler }) => {
      const gates = new Map<string, () => void>();
      // The route names its pod, then waits until the test lets it go on: the first request logs after the second.
      const probe: Route = {
        name: 'probe',
        kind: 'api',
        method: 'POST',
        path: '/probe',
        async handle(deps, req, logKeys) {
          logKeys({ pod: req.body });
          await new Promise<void>((resolve) => gates.set(req.body, resolve));
          deps.logger.info('Probe', { seen: req.body });
          return { statusCode: 200, headers: {}, body: '{}' };
        },
      };
      const handler = lambdaHandler(probe, () => ({}) as never);
      const call = (id: string, pod: string) =>
        handler(
          { rawPath: '/probe', body: pod, headers: {}, requestContext: { http: { method: 'POST' } } } as never,
          { awsRequestId: id, functionName: 'probe-fn', getRemainingTimeInMillis: () => 1000 } as never,
        );
      const first = call('request-1', 'ns/one');
      const second = call('request-2', 'ns/two');
      while (gates.size < 2) await Promise.resolve();
      gates.get('ns/two')!();
      await second;
      gates.get('ns/one')!();
      await first;
    });
    const lines = printed.map((text) => JSON.parse(text) as Record<string, unknown>);
    const keysOf = (message: string) =>
      lines.filter((line) => line.message === message).map((line) => [line.function_request_id, line.function_name, line.route, line.pod, line.seen ?? line.status]);
    expect(keysOf('Probe')).toEqual([
      ['request-2', 'probe-fn', 'probe', 'ns/two', 'ns/two'],
      ['request-1', 'probe-fn', 'probe', 'ns/one', 'ns/one'],
    ]);
    expect(keysOf('Request handled')).toEqual([
      ['request-2', 'probe-fn', 'probe', 'ns/two', 200],
      ['request-1', 'probe-fn', 'probe', 'ns/one', 200],
    ]);
  });
});
