import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Runtime as TemporalRuntime, Worker, type LogLevel } from '@temporalio/worker';
import { loadEncryptionKey } from '../src/auth/keys.ts';
import type { Config } from '../src/config.ts';
import type { Database } from '../src/db/client.ts';
import type { Logger } from '../src/log.ts';
import { createActivities } from './activities.ts';

// Beside this file: workflows.ts in the sources, workflows.js in a build (dist/workflows/).
export const WORKFLOWS_PATH = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? './workflows.ts' : './workflows.js', import.meta.url));
/** Written by `npm run build:workflows`; a production worker runs this file. */
export const WORKFLOW_BUNDLE_PATH = fileURLToPath(new URL('./bundle/workflows.js', import.meta.url));

export interface WorkerOptions {
  config: Config;
  db: Database;
  logger: Logger;
  /** Use the pre-built bundle (production) rather than bundling at start (development). */
  prebundled: boolean;
  identity?: string;
  /** Decrypts webhook signing secrets; SECRETS_ENCRYPTION_KEY when absent. */
  encryptionKey?: Buffer;
  /** An existing connection (a test environment's); one to TEMPORAL_ADDRESS is opened when absent. */
  connection?: NativeConnection;
}

let runtimeInstalled = false;

/**
 * Slots per worker process. A delivery attempt is a local activity (workflows/webhook-delivery.ts),
 * which holds its workflow task slot while the receiver answers (up to the attempt timeout), so
 * both pools are sized for many slow receivers at once: attempts are I/O, not CPU. Measured with
 * bench/webhooks.ts: on the embedded dev server the Temporal server, not these slots, is the limit.
 */
export const WORKER_CONCURRENCY = {
  maxConcurrentWorkflowTaskExecutions: 200,
  // A delivery that succeeds at once is one workflow task, always on the normal (not sticky)
  // queue: poll it as much as the sticky one (the default ratio 0.2 left 2 of 10 pollers on it).
  maxConcurrentWorkflowTaskPolls: 16,
  nonStickyToStickyPollRatio: 1,
  maxConcurrentLocalActivityExecutions: 200,
  maxConcurrentActivityTaskExecutions: 100,
} as const;

export async function createWorker({
  config,
  db,
  logger,
  prebundled,
  identity,
  encryptionKey,
  connection: given,
}: WorkerOptions): Promise<{
  worker: Worker;
  connection: NativeConnection;
}> {
  if (!given && !config.TEMPORAL_ADDRESS) throw new Error('TEMPORAL_ADDRESS is required');
  // A given connection means a Temporal runtime exists already (installing one now would throw).
  if (!runtimeInstalled && !given) {
    runtimeInstalled = true;
    TemporalRuntime.install({
      logger: {
        log: (level: LogLevel, message: string, meta?: Record<string, unknown>) =>
          logger[level === 'TRACE' ? 'trace' : (level.toLowerCase() as 'info')]({ ...meta }, message),
        trace: (message, meta) => logger.trace({ ...meta }, message),
        debug: (message, meta) => logger.debug({ ...meta }, message),
        info: (message, meta) => logger.info({ ...meta }, message),
        warn: (message, meta) => logger.warn({ ...meta }, message),
        error: (message, meta) => logger.error({ ...meta }, message),
      },
    });
  }
  const connection = given ?? (await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS }));
  const workflowSource = prebundled ? { workflowBundle: { codePath: requireBundle() } } : { workflowsPath: WORKFLOWS_PATH };
  const worker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities({ db, logger, config, encryptionKey: encryptionKey ?? loadEncryptionKey(config) }),
    ...WORKER_CONCURRENCY,
    ...(identity ? { identity } : {}),
    ...workflowSource,
  });
  return { worker, connection };
}

function requireBundle(): string {
  if (!existsSync(WORKFLOW_BUNDLE_PATH)) {
    throw new Error(`No workflow bundle at ${WORKFLOW_BUNDLE_PATH}: run \`npm run build:workflows\` first.`);
  }
  return WORKFLOW_BUNDLE_PATH;
}
