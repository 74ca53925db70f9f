/**
 * `virtual:console-assets` under jest (jest.config.js maps it here): the same assets the build plugin makes,
 * built from the sources once per test file.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the build helper is a CommonJS script shared with scripts/build.mjs
const { buildConsoleAssets } = require('../../scripts/console-assets.cjs') as {
  buildConsoleAssets(): { path: string; contentType: string; body: string }[];
};

export const assets = buildConsoleAssets();
