import { loadEncryptionKey } from '../src/auth/keys.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { createDatabase } from '../src/db/client.ts';
import { createLogger } from '../src/log.ts';
import { TemporalAccess } from '../src/temporal.ts';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { startHoldSweep } from '../src/services/orders.ts';
import { pruneLimits } from '../src/limits/rate-limiter.ts';
import { pruneIdempotencyKeys } from '../src/http/idempotency.ts';
import { runPeriodically } from '../src/db/periodic.ts';
import { createWorker } from './worker.ts';

/**
 * The worker process: `npm run worker`. Any number may run at once against one task queue;
 * Temporal hands each task to one of them. SIGTERM drains in-flight activities, then exits.
 * Each worker also runs the webhook dispatcher's sweep, which starts the delivery workflows an API
 * process recorded but could not start (it crashed, or Temporal was unreachable then).
 */
async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.DATABASE_URL) throw new ConfigError('Invalid configuration: DATABASE_URL is required for the worker');
  const logger = createLogger(config.LOG_LEVEL, 'worker');
  if (!config.SECRETS_ENCRYPTION_KEY) {
    logger.warn('SECRETS_ENCRYPTION_KEY is not set: webhook signing secrets stored by another process cannot be decrypted here');
  }
  const db = createDatabase({ url: config.DATABASE_URL, poolSize: config.DATABASE_POOL_SIZE });
  const { worker, connection } = await createWorker({
    config,
    db,
    logger,
    prebundled: config.NODE_ENV === 'production',
    encryptionKey: loadEncryptionKey(config),
  });
  const temporal = TemporalAccess.fromConfig(config);
  const dispatcher = new WebhookDispatcher(db, temporal, config, logger);
  dispatcher.start();
  // Pending orders whose hold ran out are cancelled and their tickets put back on sale.
  const holds = startHoldSweep({ db, dispatcher, logger });
  // Rate-limit windows and throttles that can no longer refuse anyone, and idempotency keys past
  // their day, are deleted.
  const prune = runPeriodically(db, 'prune', 10 * 60_000, () => Promise.all([pruneLimits(db, logger), pruneIdempotencyKeys(db)]), logger);
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE, namespace: config.TEMPORAL_NAMESPACE, pid: process.pid }, 'worker running');
  await worker.run();
  await prune.stop();
  await holds.stop();
  await dispatcher.stop();
  await Promise.allSettled([temporal?.close(), connection.close()]);
  await db.$disconnect();
  logger.info('worker stopped');
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
