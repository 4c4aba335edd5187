import { inject } from 'vitest';
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

/** The real API on a free port, over a fresh copy of the migrated database and the real Temporal. */
export async function startTestApp(env: Record<string, string> = {}, options: { logger?: Logger; database?: TestDatabase } = {}): Promise<TestApp> {
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
