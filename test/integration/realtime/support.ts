/** Shared by the real-time integration tests: a controllable runtime and a capture of Powertools log lines. */
import type { Runtime } from '../../../lib/clock';

/** A runtime whose clock only moves when the test says so; retries never wait. */
export function manualRuntime(startMs: number): Runtime & { advance(ms: number): void } {
  let now = startMs;
  let ids = 0;
  return {
    clock: { now: () => now },
    sleep: async () => undefined,
    random: () => 0.5,
    newId: () => `attempt-${++ids}`,
    advance: (ms) => {
      now += ms;
    },
  };
}

export interface CapturedLine {
  readonly level: string;
  readonly message: string;
  readonly [field: string]: unknown;
}

const CONSOLE_METHODS = ['debug', 'info', 'log', 'warn', 'error'] as const;

/**
 * Captures the JSON lines the Powertools logger prints. With POWERTOOLS_DEV (test/setup-env.ts) it
 * writes through the global console, one JSON document per call; anything else printed is ignored.
 */
export function captureLogLines(): { lines(): CapturedLine[]; restore(): void } {
  const printed: unknown[] = [];
  const spies = CONSOLE_METHODS.map((method) =>
    jest.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      printed.push(args[0]);
    }),
  );
  return {
    // In the order printed, whatever the level.
    lines: () => printed.flatMap(parseLine),
    restore: () => spies.forEach((spy) => spy.mockRestore()),
  };
}

function parseLine(printed: unknown): CapturedLine[] {
  if (typeof printed !== 'string') return [];
  try {
    const parsed: unknown = JSON.parse(printed);
    return parsed !== null && typeof parsed === 'object' && 'message' in parsed ? [parsed as CapturedLine] : [];
  } catch {
    return [];
  }
}
