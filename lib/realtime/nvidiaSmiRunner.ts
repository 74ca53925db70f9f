/** Runs the real nvidia-smi binary for the node agent, with a hard timeout. */
import { execFile } from 'node:child_process';
import { NvidiaSmiNotFoundError, NvidiaSmiSpawnError, NvidiaSmiTimeoutError } from './errors';
import type { NvidiaSmiResult } from './reporter';

export interface NvidiaSmiRunnerOptions {
  /** Binary name (looked up on PATH) or absolute path. */
  readonly path: string;
  readonly timeoutMs: number;
  /** Aborting kills a running nvidia-smi (agent shutdown). */
  readonly signal?: AbortSignal;
}

// Eight cards of CSV are a few hundred bytes; the cap only protects against a runaway process.
const MAX_OUTPUT_BYTES = 1024 * 1024;

/** Non-zero exits resolve with their code (the reporter decides); failures to run reject with typed errors. */
export function createNvidiaSmiRunner(options: NvidiaSmiRunnerOptions): (args: readonly string[]) => Promise<NvidiaSmiResult> {
  return (args) =>
    new Promise((resolve, reject) => {
      execFile(
        options.path,
        [...args],
        {
          timeout: options.timeoutMs,
          // A hung nvidia-smi (driver stuck in a GPU reset) ignores SIGTERM.
          killSignal: 'SIGKILL',
          maxBuffer: MAX_OUTPUT_BYTES,
          encoding: 'utf8',
          windowsHide: true,
          ...(options.signal ? { signal: options.signal } : {}),
        },
        (error, stdout, stderr) => {
          if (error === null) {
            resolve({ stdout, stderr, code: 0 });
            return;
          }
          const failure = error as NodeJS.ErrnoException & { killed?: boolean; signal?: NodeJS.Signals | null };
          if (options.signal?.aborted) {
            reject(new NvidiaSmiSpawnError('nvidia-smi stopped: the node agent is shutting down', { cause: error }));
          } else if (failure.code === 'ENOENT') {
            reject(new NvidiaSmiNotFoundError(`nvidia-smi not found at "${options.path}"`, { cause: error }));
          } else if (failure.killed === true || failure.signal === 'SIGKILL') {
            reject(new NvidiaSmiTimeoutError(`nvidia-smi did not finish within ${options.timeoutMs} ms and was killed`, { cause: error }));
          } else if (typeof failure.code === 'number') {
            resolve({ stdout, stderr, code: failure.code });
          } else {
            reject(new NvidiaSmiSpawnError(`nvidia-smi could not be run: ${error.message}`, { cause: error }));
          }
        },
      );
    });
}
