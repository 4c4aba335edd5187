import { randomBytes } from 'node:crypto';
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

/** The settings of a test app on `database`: the suite's Temporal, a task queue of its own, `env` over them. */
function testConfig(database: TestDatabase, env: Env): Config {
  return loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `test-${database.name}`,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...env,
  });
}

/** The real API on a free port, over a fresh copy of the migrated database and the real Temporal. */
export async function startTestApp(env: Env = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase());
  const config = testConfig(database, env);
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

export interface AppPair {
  a: TestApp;
  b: TestApp;
  database: TestDatabase;
  stop(): Promise<void>;
}

/**
 * Two API processes' worth of runtime and HTTP server on ONE database (as two replicas behind a
 * load balancer), sharing signing keys so a token of one is good at the other. Limits that must
 * hold across processes are probed by alternating requests between `a` and `b`.
 */
export async function startTwoApps(env: Env = {}): Promise<AppPair> {
  const database = await createTestDatabase();
  const config = testConfig(database, {
    JWT_SIGNING_KEYS: JSON.stringify([{ kid: `pair-${randomBytes(3).toString('hex')}`, secret: randomBytes(32).toString('hex') }]),
    SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    ...env,
  });
  const start = async (): Promise<TestApp> => {
    const runtime = createRuntime(config, { logger: createLogger(config.LOG_LEVEL) });
    const server = await startApi(runtime, 0, '127.0.0.1');
    return { url: server.url, config, runtime, database, server, stop: () => server.stop({ graceMs: 1_000 }) };
  };
  const a = await start();
  const b = await start();
  return {
    a,
    b,
    database,
    async stop() {
      await Promise.allSettled([a.server.stop({ graceMs: 1_000 }), b.server.stop({ graceMs: 1_000 })]);
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
