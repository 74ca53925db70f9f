/**
 * The Lambda adapter in normal operation says nothing that is not a problem: with metrics off (the local
 * server's default) there is no per-request "No application metrics to publish" warning, even when requests
 * overlap in one process.
 */
function restore(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

describe('lambda adapter logging', () => {
  it('warns about nothing on ordinary, overlapping requests with metrics off', async () => {
    const lines: string[] = [];
    const spies = (['debug', 'info', 'warn', 'error', 'log'] as const).map((method) => jest.spyOn(console, method).mockImplementation((...args: unknown[]) => lines.push(args.map(String).join(' '))));
    const saved = { level: process.env.POWERTOOLS_LOG_LEVEL, metrics: process.env.POWERTOOLS_METRICS_DISABLED };
    process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    try {
      await jest.isolateModulesAsync(async () => {
        const { lambdaHandler } = await import('../../../lib/http/lambda');
        const { healthzRoute } = await import('../../../lib/http/routes');
        const handler = lambdaHandler(healthzRoute, () => ({}) as never);
        const context = { awsRequestId: 'r', functionName: 'healthz', getRemainingTimeInMillis: () => 1000 } as never;
        const event = { rawPath: '/healthz', headers: {}, requestContext: { http: { method: 'GET' } } } as never;
        const answers = await Promise.all(Array.from({ length: 5 }, () => handler(event, context)));
        expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200]);
      });
    } finally {
      spies.forEach((spy) => spy.mockRestore());
      restore('POWERTOOLS_LOG_LEVEL', saved.level);
      restore('POWERTOOLS_METRICS_DISABLED', saved.metrics);
    }
    expect(lines.filter((line) => /"level":\s*"(WARN|ERROR)"/.test(line))).toEqual([]);
  });
});
