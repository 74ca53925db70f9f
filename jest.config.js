/** Unit and integration suites run together under `npm test`; see README for the split. */
module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  cacheDirectory: '<rootDir>/.jest-cache',
  transform: { '^.+\\.[tj]s$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }] },
  // ESM-only packages: @middy/* (v5+), @kubernetes/client-node (v1+) and its ESM-only dependencies.
  transformIgnorePatterns: ['/node_modules/(?!(@middy|@kubernetes/client-node|openid-client|oauth4webapi|jose|socks-proxy-agent|agent-base)/)'],
  setupFiles: ['<rootDir>/test/setup-env.ts'],
  // The console's assets are made by an esbuild plugin in builds; tests build the same from the sources.
  moduleNameMapper: {
    '^virtual:console-assets$': '<rootDir>/test/support/consoleAssets.ts',
    // middy 7's packages export only an `import` condition, which Jest's CommonJS resolver does not try; its file is
    // transformed like the other ESM-only packages above (esbuild resolves the condition itself in the bundles).
    '^@middy/([a-z-]+)$': '<rootDir>/node_modules/@middy/$1/index.js',
  },
  testTimeout: 30000,
};
