import { ConfigError, loadConfig } from '../src/config.ts';
import { createDatabase } from '../src/db/client.ts';
import { createLogger } from '../src/log.ts';
import { createWorker } from './worker.ts';

/**
 * The worker process: `npm run worker`. Any number may run at once against one task queue;
 * Temporal hands each task to one of them. SIGTERM drains in-flight activities, then exits.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.DATABASE_URL) throw new ConfigError('Invalid configuration: DATABASE_URL is required for the worker');
  const logger = createLogger(config.LOG_LEVEL, 'worker');
  const db = createDatabase({ url: config.DATABASE_URL, poolSize: config.DATABASE_POOL_SIZE });
  const { worker, connection } = await createWorker({
    config,
    db,
    logger,
    prebundled: config.NODE_ENV === 'production',
  });
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE, namespace: config.TEMPORAL_NAMESPACE }, 'worker running');
  await worker.run();
  await connection.close();
  await db.$disconnect();
  logger.info('worker stopped');
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
