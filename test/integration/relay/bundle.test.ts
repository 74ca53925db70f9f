/**
 * The relay image ships dist/relay.js alone (Dockerfile). Built here as `npm run build` builds it, copied into
 * an empty directory and run there: it must load every module it needs from itself, never from node_modules,
 * carry no Lambda-only code (Powertools Metrics/Tracer and the X-Ray SDK they bring), and print no runtime warning
 * (a deprecated Node API used by a dependency shows as a `DeprecationWarning` on stderr).
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { VERSION } from '../../../lib/version';

const run = promisify(execFile);
const ROOT = join(__dirname, '../../..');
let buildDir: string;
let lonelyDir: string;
let bundle: string;

/** Runs the copied bundle with nothing but PATH in its environment; resolves exit code and output. */
async function runBundle(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(lonelyDir, 'relay.js'), ...args], { cwd: lonelyDir, env: { PATH: process.env.PATH ?? '', HOME: lonelyDir, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

beforeAll(async () => {
  buildDir = mkdtempSync(join(tmpdir(), 'relay-build-'));
  lonelyDir = mkdtempSync(join(tmpdir(), 'relay-alone-'));
  await run(process.execPath, [join(ROOT, 'scripts/build.mjs'), 'relay'], { cwd: ROOT, env: { ...process.env, HAMI_BUILD_OUTDIR: buildDir } });
  copyFileSync(join(buildDir, 'relay.js'), join(lonelyDir, 'relay.js'));
  bundle = readFileSync(join(lonelyDir, 'relay.js'), 'utf8');
});

afterAll(() => {
  rmSync(buildDir, { recursive: true, force: true });
  rmSync(lonelyDir, { recursive: true, force: true });
});

describe('the standalone relay bundle', () => {
  it('runs with no node_modules anywhere: --version and --help', async () => {
    expect(await runBundle(['--version'])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    expect((await runBundle(['--help'])).stdout).toMatch(/^Usage:\n {2}relay /);
  });

  it('starts far enough to check its configuration and name every bad variable', async () => {
    const result = await runBundle([], { HAMI_CONTROL_PLANE_URL: 'not a url', RELAY_PORT: 'eighty' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('invalid relay configuration');
    expect(result.stderr).toContain('HAMI_CONTROL_PLANE_URL');
    expect(result.stderr).toContain('RELAY_PORT');
  });

  it('reaches the cluster-credentials step with a valid configuration, and logs JSON lines (errors on stderr)', async () => {
    const result = await runBundle([], { HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:9', RELAY_EXTENDER_TLS: 'off', RELAY_USER_TLS: 'off', KUBECONFIG: join(lonelyDir, 'missing') });
    expect(result.code).toBe(1);
    const line = JSON.parse(result.stderr.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
    expect(line).toEqual(expect.objectContaining({ level: 'ERROR', message: 'RelayFailed', service: 'hami-relay' }));
    expect(String(line.error)).toContain('KUBECONFIG names no existing file');
  });

  it('starts, runs its Kubernetes client until a watch fails, stops on SIGTERM, and prints nothing but JSON lines', async () => {
    // A kubeconfig naming a port where nothing listens: the watches start (the whole Kubernetes client loads and
    // sends requests) and fail, so every module the relay uses in a cluster has run once.
    const kubeconfig = join(lonelyDir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:9', 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'u', user: { token: 'not-a-real-token' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    const env = { PATH: process.env.PATH ?? '', HOME: lonelyDir, HAMI_CONTROL_PLANE_URL: 'http://127.0.0.1:9', RELAY_EXTENDER_TLS: 'off', RELAY_USER_TLS: 'off', RELAY_PORT: '0', RELAY_USER_PORT: '0', RELAY_WEBHOOK_PORT: '0', KUBECONFIG: kubeconfig };
    const child = spawn(process.execPath, [join(lonelyDir, 'relay.js')], { cwd: lonelyDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await new Promise<void>((resolve) => {
      const check = () => {
        if (stdout.includes('"RelayStarted"') && stderr.includes('"WatchFailed"')) resolve();
      };
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        check();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        check();
      });
      void exited.then(() => resolve());
    });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stdout).toContain('"RelayStopping"');
    expect(stderr).toContain('"WatchFailed"');
    const notJson = `${stdout}\n${stderr}`
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('{') && !line.startsWith('relay listening:'));
    expect(notJson).toEqual([]);
    expect(stderr).not.toMatch(/DeprecationWarning|ExperimentalWarning|\(node:\d+\)/);
  });

  it('carries no Lambda-only code (Powertools Logger only, no Metrics or Tracer)', () => {
    expect(bundle).not.toMatch(/aws-xray-sdk|AWSXRay|@aws-lambda-powertools\/(metrics|tracer)/);
  });

  it('stays small (all dependencies inlined, minified)', () => {
    expect(bundle.length).toBeLessThan(4 * 1024 * 1024);
  });
});
