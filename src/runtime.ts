import type { Config } from './config.ts';
import { createDatabase, type Database } from './db/client.ts';
import { createLogger, type Logger } from './log.ts';
import { TemporalAccess } from './temporal.ts';

/** Long-lived parts shared by every request of one API process. */
export interface Runtime {
  config: Config;
  logger: Logger;
  db: Database;
  temporal: TemporalAccess | undefined;
  close(): Promise<void>;
}

export function createRuntime(config: Config, overrides: Partial<Pick<Runtime, 'logger' | 'db'>> = {}): Runtime {
  if (!config.DATABASE_URL) throw new Error('DATABASE_URL is required (scripts/start.ts provides an embedded default)');
  const logger = overrides.logger ?? createLogger(config.LOG_LEVEL);
  const db = overrides.db ?? createDatabase({ url: config.DATABASE_URL, poolSize: config.DATABASE_POOL_SIZE });
  const temporal = TemporalAccess.fromConfig(config);
  return {
    config,
    logger,
    db,
    temporal,
    async close() {
      await Promise.allSettled([db.$disconnect(), temporal?.close()]);
    },
  };
}
