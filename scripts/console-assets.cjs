'use strict';
// The web console's assets (docs/api.md §11): lib/console/web/app.ts bundled for the browser by esbuild, with the
// page and the stylesheet beside it. The servers import them as the module `virtual:console-assets`, which this
// plugin makes at build time, so `npm start` and the standalone relay carry them without any file at run time.
// Tests get the same module through jest's moduleNameMapper (test/support/consoleAssets.ts).
const { buildSync } = require('esbuild');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');
const WEB = path.join(ROOT, 'lib', 'console', 'web');

/** [{ path, contentType, body }] for `/` (the page), `/console.js` and `/console.css`. */
function buildConsoleAssets() {
  const out = buildSync({
    entryPoints: [path.join(WEB, 'app.ts')],
    bundle: true,
    write: false,
    platform: 'browser',
    format: 'iife',
    target: ['chrome100', 'firefox100', 'safari15'],
    minify: true,
    legalComments: 'none',
    logLevel: 'error',
  });
  const script = out.outputFiles[0].text;
  return [
    { path: '/', contentType: 'text/html; charset=utf-8', body: fs.readFileSync(path.join(WEB, 'index.html'), 'utf8') },
    { path: '/console.js', contentType: 'text/javascript; charset=utf-8', body: script },
    { path: '/console.css', contentType: 'text/css; charset=utf-8', body: fs.readFileSync(path.join(WEB, 'console.css'), 'utf8') },
  ];
}

/** esbuild plugin: `import { assets } from 'virtual:console-assets'` gets the assets, built now. */
function consoleAssetsPlugin() {
  return {
    name: 'console-assets',
    setup(build) {
      build.onResolve({ filter: /^virtual:console-assets$/ }, () => ({ path: 'console-assets', namespace: 'console-assets' }));
      build.onLoad({ filter: /.*/, namespace: 'console-assets' }, () => ({
        contents: `module.exports = { assets: ${JSON.stringify(buildConsoleAssets())} };`,
        loader: 'js',
        watchFiles: fs.readdirSync(WEB).map((f) => path.join(WEB, f)),
      }));
    },
  };
}

module.exports = { buildConsoleAssets, consoleAssetsPlugin };
