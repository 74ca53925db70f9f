import { createJsonLogger, loggerFromEnv } from '../../../lib/logging/jsonLogger';

function capture(level: Parameters<typeof createJsonLogger>[0]['level']) {
  const lines: Record<string, unknown>[] = [];
  const logger = createJsonLogger({ service: 'hami-relay', level, write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>), now: () => new Date('2025-05-01T10:00:00Z') });
  return { logger, lines };
}

describe('createJsonLogger', () => {
  it('writes one JSON object per call: constant message, fields, level, time and service', () => {
    const { logger, lines } = capture('DEBUG');
    logger.info('FilterRelayed', { pod: 'team-a/job-0', effects: 2 });
    expect(lines).toEqual([{ pod: 'team-a/job-0', effects: 2, level: 'INFO', message: 'FilterRelayed', timestamp: '2025-05-01T10:00:00.000Z', service: 'hami-relay' }]);
  });

  it('keeps an Error readable, as a field or as an argument', () => {
    const { logger, lines } = capture('DEBUG');
    const err = new TypeError('boom', { cause: new Error('root') });
    logger.error('RelayFailed', { error: err });
    logger.warn('WatchFailed', err);
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line.error).toEqual(expect.objectContaining({ name: 'TypeError', message: 'boom', cause: expect.objectContaining({ message: 'root' }) }));
  });

  it('never lets a field overwrite level, message or time', () => {
    const { logger, lines } = capture('DEBUG');
    logger.warn('Real', { level: 'DEBUG', message: 'forged', timestamp: 'x' });
    expect(lines[0]).toEqual(expect.objectContaining({ level: 'WARN', message: 'Real', timestamp: '2025-05-01T10:00:00.000Z' }));
  });

  it.each([
    ['DEBUG', ['debug', 'info', 'warn', 'error']],
    ['INFO', ['info', 'warn', 'error']],
    ['WARN', ['warn', 'error']],
    ['ERROR', ['error']],
    ['SILENT', []],
  ] as const)('at level %s writes %j', (level, written) => {
    const { logger, lines } = capture(level);
    logger.debug('debug');
    logger.info('info');
    logger.warn('warn');
    logger.error('error');
    expect(lines.map((l) => l.message)).toEqual(written);
  });
});

describe('loggerFromEnv', () => {
  it.each([
    [{ HAMI_LOG_LEVEL: 'warn' }, ['warn']],
    [{ POWERTOOLS_LOG_LEVEL: 'ERROR' }, []],
    [{ HAMI_LOG_LEVEL: 'nonsense' }, ['info', 'warn']],
  ])('reads the level from %j', (env, written) => {
    const lines: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      const logger = loggerFromEnv(env, 'svc');
      logger.debug('debug');
      logger.info('info');
      logger.warn('warn');
    } finally {
      spy.mockRestore();
    }
    expect(lines.map((l) => (JSON.parse(l) as { message: string; service: string }).message)).toEqual(written);
  });
});
