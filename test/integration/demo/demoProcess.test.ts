/**
 * `npm run demo -- --url …` as its own process, as a user runs it against `npm start`: it plays every scenario to the
 * end and exits 0. In-process tests cannot see a demo that stops early: their test runner keeps the process alive.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { startLocalServer } from '../../../lib/local/server';
import { bundled } from '../../support/bundle';

function runDemoProcess(entry: string, url: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [entry, '--url', url], {
      env: { ...process.env, NODE_PATH: resolve(__dirname, '../../../node_modules'), NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', fail);
    child.once('exit', (code) => done({ code, stdout, stderr }));
  });
}

describe('npm run demo -- --url (its own process)', () => {
  let server: Awaited<ReturnType<typeof startLocalServer>>;

  beforeAll(async () => {
    // No lock wait: scenario 4's bind would otherwise wait for the lock in real time.
    server = await startLocalServer({ port: 0, host: '127.0.0.1', env: { HAMI_BIND_LOCK_WAIT_SECONDS: '0' } });
  });

  afterAll(async () => {
    await server.close();
  });

  it('plays every scenario to its end, the decided-ahead Job included, and exits 0', async () => {
    const entry = await bundled('lib/demo/main.ts');
    const { code, stdout, stderr } = await runDemoProcess(entry, server.url);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toContain('$ hami-diag pod batch/summarize-1');
    expect(stdout).toMatch(/Ahead {5}decided live: the decision made ahead at \S+ \(node node3\) was not used: node node3 is not among the 9 nodes/);
    expect(stdout.trimEnd().split('\n').pop()).toBe(`  npx hami-diag pod deepseek-5996b8569d-kgwgx -n llm --server ${server.url}`);
  }, 60_000);
});
