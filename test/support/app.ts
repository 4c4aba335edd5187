import { afterAll, beforeAll, inject } from 'vitest';
import { loadConfig, type Config } from '../../src/config.ts';
import { startApi } from '../../server/app.ts';
import type { RunningServer } from '../../src/http/server.ts';
import { createLogger, type Logger } from '../../src/log.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';

export interface TestApp {
  url: string;
  config: Config;
  runtime: Runtime;
  database: TestDatabase;
  server: RunningServer;
  stop(): Promise<void>;
}

/**
 * A running test app, or the accessor `useTestApp` answers: every helper of test/support takes
 * either, so a test file passes `app` along without calling it.
 */
export type AppRef = TestApp | (() => TestApp);

export function appOf(ref: AppRef): TestApp {
  return typeof ref === 'function' ? ref() : ref;
}

type Env = Record<string, string>;
export interface TestAppOptions {
  logger?: Logger;
  /** A database to run on instead of a fresh copy of the template (stop() drops it). */
  database?: TestDatabase;
}

/** The real API on a free port, over a fresh copy of the migrated database and the real Temporal. */
export async function startTestApp(env: Env = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase());
  const config = loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `test-${database.name}`,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...env,
  });
  const runtime = createRuntime(config, { logger: options.logger ?? createLogger(config.LOG_LEVEL) });
  const server = await startApi(runtime, 0, '127.0.0.1');
  return {
    url: server.url,
    config,
    runtime,
    database,
    server,
    async stop() {
      await server.stop({ graceMs: 1_000 });
      await database.drop();
    },
  };
}

/**
 * The app of a test file (or of the describe block it is called in): started in beforeAll, stopped
 * in afterAll. Answers an accessor, since the app exists only once beforeAll ran. `env` may be a
 * function for settings known only then (the port of a server another beforeAll started); hooks run
 * in the order they are registered, so register that one first.
 */
export function useTestApp(env: Env | (() => Env | Promise<Env>) = {}, options: TestAppOptions = {}): () => TestApp {
  let app: TestApp | undefined;
  beforeAll(async () => {
    app = await startTestApp(typeof env === 'function' ? await env() : env, options);
  });
  afterAll(async () => {
    await app?.stop();
    app = undefined;
  });
  return () => {
    if (!app) throw new Error('useTestApp: the app runs only between beforeAll and afterAll');
    return app;
  };
}
