/**
 * hami-diag as a user meets it: right after `npm ci` (no build step: the launcher builds its bundle on first
 * use), and as a kubectl plugin found on the PATH (`kubectl hami ...`, with the pinned kubectl 1.33).
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, symlinkSync, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { VERSION } from '../../../lib/version';
import { ROOT, tool } from '../../support/chart';

const exec = promisify(execFile);

async function runTool(file: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(file, args, { env: { ...env }, encoding: 'utf8' });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('hami-diag without a build step', () => {
  it('builds its bundle on first use in a fresh checkout and runs', async () => {
    // A checkout as `git clone` + `npm ci` leaves it: sources and node_modules, no dist/.
    const checkout = mkdtempSync(join(tmpdir(), 'checkout-'));
    try {
      for (const path of ['bin', 'lib', 'scripts', 'package.json', 'tsconfig.json']) cpSync(join(ROOT, path), join(checkout, path), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'));
      expect(existsSync(join(checkout, 'dist'))).toBe(false);

      const out = await runTool(process.execPath, [join(checkout, 'bin/hami-diag.js'), '--version'], { PATH: process.env.PATH ?? '' });

      expect(out).toEqual({ code: 0, stdout: `hami-diag ${VERSION}\n`, stderr: '' });
      expect(existsSync(join(checkout, 'dist/hami-diag.js'))).toBe(true);
    } finally {
      rmSync(checkout, { recursive: true, force: true });
    }
  });
});

describe('hami-diag installed from a packed tarball or by krew', () => {
  it('runs from bin/ and the bundle alone: no sources, no node_modules, nothing to build', async () => {
    // What infra/krew/hami.yaml installs from the tarball (package/bin/*, package/dist/hami-diag.js), and what
    // `npm install -g` of that tarball leaves beside its runtime dependencies.
    const built = await runTool(process.execPath, [join(ROOT, 'bin/hami-diag.js'), '--version'], { PATH: process.env.PATH ?? '' });
    expect(built.code).toBe(0);
    const installed = mkdtempSync(join(tmpdir(), 'installed-'));
    try {
      cpSync(join(ROOT, 'bin'), join(installed, 'bin'), { recursive: true });
      cpSync(join(ROOT, 'dist/hami-diag.js'), join(installed, 'dist/hami-diag.js'));
      const env = { PATH: process.env.PATH ?? '', HOME: installed, KUBECONFIG: join(installed, 'none') };
      expect(await runTool(process.execPath, [join(installed, 'bin/kubectl-hami'), '--version'], env)).toEqual({ code: 0, stdout: `kubectl hami ${VERSION}\n`, stderr: '' });
      const yaml = await runTool(process.execPath, [join(installed, 'bin/kubectl-hami'), 'pod', '-o', 'yaml', '--server', 'http://127.0.0.1:1'], env);
      expect(yaml).toMatchObject({ code: 2, stderr: expect.stringMatching(/^kubectl hami: cannot reach the scheduler API at http:\/\/127\.0\.0\.1:1: connection refused/) });
      expect(existsSync(join(installed, 'lib'))).toBe(false);
    } finally {
      rmSync(installed, { recursive: true, force: true });
    }
  });
});

describe('kubectl hami', () => {
  let pathDir: string;
  let env: Record<string, string>;
  let kubectl: string;

  beforeAll(() => {
    // What `npm install -g .` (or a symlink into ~/.local/bin) puts on the PATH.
    pathDir = mkdtempSync(join(tmpdir(), 'plugin-path-'));
    symlinkSync(join(ROOT, 'bin/kubectl-hami'), join(pathDir, 'kubectl-hami'));
    kubectl = tool('kubectl');
    env = { PATH: `${pathDir}:${process.env.PATH ?? ''}`, HOME: pathDir, KUBECONFIG: join(pathDir, 'no-kubeconfig') };
  });

  afterAll(() => rmSync(pathDir, { recursive: true, force: true }));

  it('is found by kubectl as a plugin', async () => {
    const out = await runTool(kubectl, ['plugin', 'list', '--name-only'], env);
    expect(out.stdout.split('\n')).toContain('kubectl-hami');
  });

  it('runs as `kubectl hami`, with --version and kubectl-style arguments', async () => {
    expect(await runTool(kubectl, ['hami', '--version'], env)).toEqual({ code: 0, stdout: `kubectl hami ${VERSION}\n`, stderr: '' });
    const help = await runTool(kubectl, ['hami', '--help'], env);
    expect(help.stdout).toMatch(/^Usage:\n {2}kubectl hami pod <name> \[-n <namespace>\]/);
    expect(help.stdout).toContain('through the Kubernetes API (default)');
  });

  it('says `kubectl hami` in its errors: an unknown flag, and no kubeconfig for its default route', async () => {
    expect(await runTool(kubectl, ['hami', 'pod', 'train', '--colour'], env)).toEqual({ code: 2, stdout: '', stderr: "kubectl hami: Unknown option '--colour'; see kubectl hami --help\n" });
    const noKubeconfig = await runTool(kubectl, ['hami', 'pod', 'train', '-n', 'ml'], env);
    expect(noKubeconfig).toEqual({
      code: 2,
      stdout: '',
      stderr: `kubectl hami: cannot reach the relay through the Kubernetes API: KUBECONFIG names no existing file (${join(pathDir, 'no-kubeconfig')}) (or pass --server to ask a server directly)\n`,
    });
  });

  it('passes its exit codes through kubectl: 1 for a pod without a record, 2 for a usage error', async () => {
    const seen: string[] = [];
    const api = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404, message: 'no scheduling record for pod ml/train' }));
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    try {
      const server = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
      const notFound = await runTool(kubectl, ['hami', 'pod', 'train', '-n', 'ml', '-o', 'json', '--server', server], env);
      expect(notFound.code).toBe(1);
      expect(seen).toEqual(['/api/v1/namespaces/ml/pods/train/schedulerlog']);
      expect(JSON.parse(notFound.stdout)).toEqual(expect.objectContaining({ found: false, message: 'no scheduling record for pod ml/train' }));
      const usage = await runTool(kubectl, ['hami', 'pod', 'a/b/c'], env);
      expect(usage.code).toBe(2);
    } finally {
      await new Promise<void>((resolve) => api.close(() => resolve()));
    }
  });
});
