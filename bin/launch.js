'use strict';
// Shared launcher of hami-diag and the kubectl plugin: runs dist/hami-diag.js, building it first with the
// project's esbuild when it is missing or older than the sources (so it works right after `npm ci`, no build step).
// Installed from a packed tarball there are no sources: the bundle it ships runs as it is.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const BUNDLE = path.join(ROOT, 'dist', 'hami-diag.js');

function newestSource(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

function stale() {
  if (!fs.existsSync(BUNDLE)) return true;
  // Installed from a packed tarball (npm pack ships the built bundle, not lib/): the bundle is what there is.
  if (!fs.existsSync(path.join(ROOT, 'lib')) || !fs.existsSync(path.join(ROOT, 'scripts', 'build.mjs'))) return false;
  const built = fs.statSync(BUNDLE).mtimeMs;
  const inputs = [path.join(ROOT, 'package.json'), path.join(ROOT, 'scripts', 'build.mjs')].map((f) => fs.statSync(f).mtimeMs);
  return Math.max(newestSource(path.join(ROOT, 'lib')), ...inputs) > built;
}

function build(program) {
  if (!fs.existsSync(path.join(ROOT, 'scripts', 'build.mjs'))) {
    process.stderr.write(`${program}: ${path.relative(ROOT, BUNDLE)} is missing from this installation and there are no sources to build it from; reinstall from a tarball made by \`npm pack\` (which builds it)\n`);
    process.exit(2);
  }
  // Built beside the bundle and renamed into place: a second invocation running at the same time never loads half a file.
  const outdir = fs.mkdtempSync(path.join(ROOT, 'dist', '.build-'));
  try {
    const result = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs'), 'hami-diag'], {
      cwd: ROOT,
      env: { ...process.env, HAMI_BUILD_OUTDIR: outdir },
      encoding: 'utf8',
    });
    if (result.status !== 0) {
      const why = /Cannot find (package|module) 'esbuild'/.test(result.stderr) ? 'esbuild is not installed; run `npm ci` (with dev dependencies)' : result.stderr.trim();
      process.stderr.write(`${program}: cannot build ${path.relative(ROOT, BUNDLE)}: ${why}\n`);
      process.exit(2);
    }
    fs.renameSync(path.join(outdir, 'hami-diag.js'), BUNDLE);
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

module.exports = function launch(program) {
  fs.mkdirSync(path.dirname(BUNDLE), { recursive: true });
  if (stale()) build(program);
  require(BUNDLE);
};
