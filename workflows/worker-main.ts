import v8 from 'node:v8';
import { loadEncryptionKey } from '../src/auth/keys.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { createDatabase } from '../src/db/client.ts';
import { createLogger } from '../src/log.ts';
import { TemporalAccess } from '../src/temporal.ts';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { ensureSearchAttributes } from '../src/webhooks/starts.ts';
import { startHoldSweep } from '../src/services/sales/hold-sweep.ts';
import { pruneLimits } from '../src/limits/rate-limiter.ts';
import { pruneIdempotencyKeys } from '../src/http/idempotency.ts';
import { pruneAuditEntries } from '../src/services/audit.ts';
import { runPeriodically } from '../src/db/periodic.ts';
import { startMetricsServer } from '../src/http/metrics.ts';
import { observeDatabase } from '../src/metrics.ts';
import { createWorker } from './worker.ts';
import { startTracing } from '../src/tracing.ts';

/**
 * The worker process: `npm run worker`. Any number may run at once against one task queue;
 * Temporal hands each task to one of them. SIGTERM drains in-flight activities, then exits.
 * Each worker also offers to run the webhook dispatcher's sweep (once per period across processes),
 * which starts the batches an API process recorded but could not start (it crashed, or Temporal was
 * unreachable then) and those put back for want of a slot, and prunes old delivery history.
 */
/**
 * Memory (bench/webhooks.ts prints each worker's RSS): the Prisma client's query compiler is
 * WebAssembly, which V8 would compile a second time with its optimising tier (about 30 MB) for the
 * few queries a worker sends through it; and the workflow thread, created after this, gets a young
 * generation of 2 MB semi-spaces instead of 16. Set before the first query and before the worker.
 */
v8.setFlagsFromString('--liftoff-only');
v8.setFlagsFromString('--max-semi-space-size=2');

async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.DATABASE_URL) throw new ConfigError('Invalid configuration: DATABASE_URL is required for the worker');
  const logger = createLogger(config.LOG_LEVEL, 'worker');
  // The Temporal runtime begins the worker's shutdown on the first SIGINT or SIGTERM and then stops
  // listening. Ctrl+C in a terminal reaches this process and, a moment later, `npm start`'s SIGTERM
  // too: without a listener of ours that second signal would end the process mid-drain. Before the
  // worker exists there is nothing to drain, and a signal ends the process at once.
  let workerExists = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (workerExists) return;
      logger.info({ signal }, 'worker stopped before it ran');
      process.exit(0);
    });
  }
  if (!config.SECRETS_ENCRYPTION_KEY) {
    logger.warn('SECRETS_ENCRYPTION_KEY is not set: webhook signing secrets stored by another process cannot be decrypted here');
  }
  const tracing = await startTracing(config, 'worker');
  const db = createDatabase({
    url: config.DATABASE_URL,
    poolSize: config.DATABASE_POOL_SIZE,
    preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
  });
  // The database is checked (and the client's engine loaded, a few hundred ms of CPU) before the
  // worker says it runs, not in its first sweep or task: a worker that blocks its event loop that
  // long when SIGTERM arrives is killed by tsx's launcher instead of draining.
  await db.$queryRaw`SELECT 1`;
  observeDatabase(db, { backlog: true });
  if (config.METRICS_PORT !== undefined) await startMetricsServer(config.METRICS_PORT, config.METRICS_HOST, logger);
  const { worker, connection } = await createWorker({
    config,
    db,
    logger,
    prebundled: config.NODE_ENV === 'production',
    encryptionKey: loadEncryptionKey(config),
  });
  workerExists = true;
  // Operators find deliveries by search attribute; registering it needs operator rights on the
  // namespace, which a deployment may not give workers (then it is done in the deployment's setup).
  await ensureSearchAttributes(connection, config.TEMPORAL_NAMESPACE).then(
    (added) => added.length > 0 && logger.info({ added }, 'webhook search attributes registered'),
    (error: unknown) => logger.warn({ err: error }, 'webhook search attributes could not be checked or registered'),
  );
  const temporal = TemporalAccess.fromConfig(config);
  const dispatcher = new WebhookDispatcher(db, temporal, config, logger, { prune: true });
  dispatcher.start();
  // Pending orders whose hold ran out are cancelled and their tickets put back on sale.
  const holds = startHoldSweep({ db, dispatcher, logger });
  // Rate-limit windows and throttles that can no longer refuse anyone, idempotency keys past
  // their day, and audit entries past AUDIT_RETENTION_DAYS are deleted.
  const prune = runPeriodically(
    db,
    'prune',
    10 * 60_000,
    () => Promise.all([pruneLimits(db, logger), pruneIdempotencyKeys(db), pruneAuditEntries(db, config.AUDIT_RETENTION_DAYS)]),
    logger,
  );
  logger.info({ taskQueue: config.TEMPORAL_TASK_QUEUE, namespace: config.TEMPORAL_NAMESPACE, pid: process.pid }, 'worker running');
  await worker.run();
  await prune.stop();
  await holds.stop();
  await dispatcher.stop();
  await Promise.allSettled([temporal?.close(), connection.close()]);
  await db.$disconnect();
  await tracing?.shutdown();
  logger.info('worker stopped');
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
