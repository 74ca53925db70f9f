/**
 * `npm start &` then `kill $!` (the README's way to run the server in the background) stops the server: npm passes
 * the signal to its script, and the script's last step replaces the shell (`exec`), so the signal reaches the
 * server itself instead of a shell that would die and leave the server serving the port and holding its data.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';

const ROOT = join(__dirname, '../../..');

function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}

describe('npm start', () => {
  let npm: ChildProcessWithoutNullStreams | undefined;
  afterEach(() => npm?.kill('SIGKILL'));

  it('serves until npm is sent SIGTERM, then the server has stopped too', async () => {
    npm = spawn('npm', ['start'], { cwd: ROOT, env: { ...process.env, PORT: '0', HAMI_DATA_DIR: '' } });
    const child = npm;
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match?.[1]) resolve(match[1]);
      });
      child.on('exit', (code) => reject(new Error(`npm start exited (${code}) before serving:\n${output}`)));
    });
    expect(await get(`${url}/healthz`)).toBe(200);
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    child.kill('SIGTERM');
    await exited;
    // The port no longer answers: nothing of `npm start` is left serving it.
    await expect(get(`${url}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
  }, 120_000);
});
