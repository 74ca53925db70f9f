/** `npm start` as its own process: the real entry point, bundled as the npm script builds it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { bundled } from './bundle';

export interface Started {
  readonly child: ChildProcess;
  readonly url: string;
  readonly firstLine: string;
}

export async function startNpmStart(env: Record<string, string>): Promise<Started> {
  const entry = await bundled('lib/local/main.ts');
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, PORT: '0', POWERTOOLS_LOG_LEVEL: 'ERROR', NODE_PATH: resolve(__dirname, '../../node_modules'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let errors = '';
  child.stderr!.on('data', (chunk: Buffer) => (errors += chunk.toString()));
  const firstLine = await new Promise<string>((resolveLine, reject) => {
    let text = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolveLine(text.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${errors}`)));
  });
  const url = /listening on (http:\/\/\S+)/.exec(firstLine)?.[1];
  if (!url) throw new Error(`no address in: ${firstLine}`);
  return { child, url, firstLine };
}

export function killHard(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    child.once('exit', () => done());
    child.kill('SIGKILL');
  });
}
