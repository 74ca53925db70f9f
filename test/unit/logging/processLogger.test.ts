/**
 * The relay's and node agent's logger writes Powertools' JSON lines to the process's own streams (stdout for
 * DEBUG and INFO, stderr for WARN and ERROR), at the level the environment names.
 */
import { loggerFromEnv } from '../../../lib/logging/processLogger';

type Line = Record<string, unknown> & { message: string; level: string; service: string };

/** Builds the logger as a process does (not in Powertools' dev mode, which the test setup turns on) and records its lines. */
function capture(env: Readonly<Record<string, string | undefined>>, service = 'hami-relay') {
  const lines: Line[] = [];
  const record = (chunk: unknown): boolean => {
    for (const text of String(chunk).split('\n')) if (text.trim() !== '') lines.push(JSON.parse(text) as Line);
    return true;
  };
  const stdout = jest.spyOn(process.stdout, 'write').mockImplementation(record);
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(record);
  const devMode = process.env.POWERTOOLS_DEV;
  delete process.env.POWERTOOLS_DEV;
  const logger = loggerFromEnv(env, service);
  if (devMode !== undefined) process.env.POWERTOOLS_DEV = devMode;
  const restore = () => {
    stdout.mockRestore();
    stderr.mockRestore();
  };
  return { logger, lines, restore };
}

describe('loggerFromEnv', () => {
  it('writes one JSON object per call: constant message, fields, level, time and service', () => {
    const { logger, lines, restore } = capture({});
    try {
      logger.info('FilterRelayed', { pod: 'team-a/job-0', effects: 2 });
    } finally {
      restore();
    }
    expect(lines).toEqual([expect.objectContaining({ pod: 'team-a/job-0', effects: 2, level: 'INFO', message: 'FilterRelayed', service: 'hami-relay' })]);
    expect(Date.parse(String(lines[0]?.timestamp))).not.toBeNaN();
  });

  it('keeps an Error readable, as a field or as an argument', () => {
    const { logger, lines, restore } = capture({});
    try {
      const err = new TypeError('boom', { cause: new Error('root') });
      logger.error('RelayFailed', { error: err });
      logger.warn('WatchFailed', err);
    } finally {
      restore();
    }
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line.error).toEqual(expect.objectContaining({ name: 'TypeError', message: 'boom', cause: expect.objectContaining({ message: 'root' }) }));
      expect(JSON.stringify((line.error as { stack: unknown }).stack)).toContain('TypeError: boom');
    }
  });

  it('never lets a field overwrite the level or the message', () => {
    const { logger, lines, restore } = capture({});
    try {
      logger.warn('Real', { level: 'DEBUG', message: 'forged', pod: 'a/b' });
    } finally {
      restore();
    }
    expect(lines.filter((l) => l.message === 'forged' || l.level === 'DEBUG')).toEqual([]);
    expect(lines.find((l) => l.message === 'Real')).toEqual(expect.objectContaining({ level: 'WARN', pod: 'a/b' }));
  });

  it.each([
    [{}, ['info', 'warn', 'error']],
    [{ HAMI_LOG_LEVEL: 'debug' }, ['debug', 'info', 'warn', 'error']],
    [{ HAMI_LOG_LEVEL: 'warn' }, ['warn', 'error']],
    [{ HAMI_LOG_LEVEL: 'WARNING' }, ['warn', 'error']],
    [{ POWERTOOLS_LOG_LEVEL: 'ERROR' }, ['error']],
    [{ HAMI_LOG_LEVEL: 'ERROR', POWERTOOLS_LOG_LEVEL: 'DEBUG' }, ['error']],
    [{ HAMI_LOG_LEVEL: 'silent' }, []],
    [{ HAMI_LOG_LEVEL: 'nonsense' }, ['info', 'warn', 'error']],
  ])('reads the level from %j', (env, written) => {
    const { logger, lines, restore } = capture(env);
    try {
      logger.debug('debug');
      logger.info('info');
      logger.warn('warn');
      logger.error('error');
    } finally {
      restore();
    }
    expect(lines.map((l) => l.message)).toEqual(written);
  });

  it('names the service from HAMI_SERVICE_NAME, then POWERTOOLS_SERVICE_NAME, then the default', () => {
    const names = [{ HAMI_SERVICE_NAME: 'relay-a', POWERTOOLS_SERVICE_NAME: 'x' }, { POWERTOOLS_SERVICE_NAME: 'relay-b' }, { HAMI_SERVICE_NAME: '  ' }].map((env) => {
      const { logger, lines, restore } = capture(env, 'hami-node-agent');
      try {
        logger.info('Started');
      } finally {
        restore();
      }
      return lines[0]?.service;
    });
    expect(names).toEqual(['relay-a', 'relay-b', 'hami-node-agent']);
  });
});
