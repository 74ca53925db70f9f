/** Unit and integration suites run together under `npm test`; see README for the split. */
module.exports = {
  testEnvironment: 'node',
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  cacheDirectory: '<rootDir>/.jest-cache',
  transform: { '^.+\\.[tj]s$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: false }] },
  // ESM-only packages: @middy/* (v5+), @kubernetes/client-node and its dependencies.
  transformIgnorePatterns: ['/node_modules/(?!(@middy|@kubernetes/client-node|openid-client|oauth4webapi|jose)/)'],
  setupFiles: ['<rootDir>/test/setup-env.ts'],
  // The console's assets are made by an esbuild plugin in builds; tests build the same from the sources.
  moduleNameMapper: { '^virtual:console-assets$': '<rootDir>/test/support/consoleAssets.ts' },
  testTimeout: 30000,
};
