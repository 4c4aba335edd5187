import { configDefaults, defineConfig } from 'vitest/config';
import SlowestFirst from './test/support/sequencer.ts';

const INCLUDE = ['test/**/*.test.ts', 'src/**/*.test.ts', 'rest-compat/**/*.test.ts', 'workflows/**/*.test.ts'];
/**
 * Files that need a process of their own: one declares an API version before the schema and routes
 * are built (test/support/next-version.ts), one prints the schema's SDL, whose order is the order its
 * modules were first imported in, one registers the process's global tracer provider.
 */
const ISOLATED = ['test/platform/versions-fixture.test.ts', 'test/platform/schema-sdl.test.ts', 'test/platform/tracing.test.ts'];

export default defineConfig({
  // Node resolves `graphql` to its CommonJS build for every package; Vite would pick index.mjs for
  // our files only, giving two copies of graphql ("from another module or realm").
  resolve: { alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }] },
  test: {
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    // Concurrent tests at once in a file (only test/platform/access-matrix.test.ts runs its cells concurrently).
    maxConcurrency: 16,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/support/summary-reporter.ts'],
    sequence: { sequencer: SlowestFirst },
    projects: [
      {
        extends: true,
        // Test files share their worker process's modules: importing the service (Prisma's client,
        // the schema, the routes) once per worker rather than once per file took a fifth of the
        // suite's time. What a file starts (apps, databases, workers) it stops itself.
        test: { name: 'shared', include: INCLUDE, exclude: [...configDefaults.exclude, ...ISOLATED], isolate: false },
      },
      { extends: true, test: { name: 'isolated', include: ISOLATED } },
    ],
  },
});
