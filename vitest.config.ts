import { defineConfig } from 'vitest/config';

export default defineConfig({
  // Node resolves `graphql` to its CommonJS build for every package; Vite would pick index.mjs for
  // our files only, giving two copies of graphql ("from another module or realm").
  resolve: { alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }] },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'rest-compat/**/*.test.ts', 'workflows/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    // Concurrent tests at once in a file (only test/platform/access-matrix.test.ts runs its cells concurrently).
    maxConcurrency: 16,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
