import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  bundleWorkflowCode,
  NativeConnection,
  Runtime as TemporalRuntime,
  type RuntimeOptions,
  Worker,
  type LogLevel,
  type Logger as TemporalLogger,
} from '@temporalio/worker';
import { IllegalStateError } from '@temporalio/common';
import { loadEncryptionKey } from '../src/auth/keys.ts';
import type { Config } from '../src/config.ts';
import type { Database } from '../src/db/client.ts';
import type { Logger } from '../src/log.ts';
import { createActivities } from './activities.ts';
import { createRequire } from 'node:module';
import type { Context as ActivityContext } from '@temporalio/activity';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import { activeTracing } from '../src/tracing.ts';

// Beside this file: workflows.ts in the sources, workflows.js in a build (dist/workflows/).
export const WORKFLOWS_PATH = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? './workflows.ts' : './workflows.js', import.meta.url),
);
/** Written by `npm run build:workflows`; a production worker runs this file. */
export const WORKFLOW_BUNDLE_PATH = fileURLToPath(new URL('./bundle/workflows.js', import.meta.url));
/** The same workflows with Temporal's OpenTelemetry interceptors, run when tracing is on (src/tracing.ts). */
export const TRACED_WORKFLOW_BUNDLE_PATH = fileURLToPath(new URL('./bundle/workflows-traced.js', import.meta.url));
/** Bundled into the traced variant only: without tracing, no workflow pays for its interceptors. */
export const TRACING_WORKFLOW_INTERCEPTORS = [
  createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
];

export interface WorkerOptions {
  config: Config;
  db: Database;
  logger: Logger;
  /** Use the pre-built bundle (production) rather than bundling at start (development); config.WORKFLOW_BUNDLE overrides both. */
  prebundled: boolean;
  identity?: string;
  /** Decrypts webhook signing secrets; SECRETS_ENCRYPTION_KEY when absent. */
  encryptionKey?: Buffer;
  /** An existing connection (a test environment's); one to TEMPORAL_ADDRESS is opened when absent. */
  connection?: NativeConnection;
}

/**
 * Installs Temporal's runtime (one per process) with `options`, or keeps the one this process has
 * already: a process that runs several workers one after another (the test suite's, whose files
 * share their processes) installs it once, and the first one's logger stays.
 */
export function installTemporalRuntime(options: RuntimeOptions): void {
  try {
    TemporalRuntime.install(options);
  } catch (error) {
    if (!(error instanceof IllegalStateError)) throw error;
  }
}

/**
 * Slots per worker process. A batch of first attempts is a local activity of its workflow, open as
 * long as its slowest receiver (up to the attempt timeout), and it holds its workflow task
 * meanwhile. Slots (src/webhooks/slots.ts) bound how many attempts one endpoint or organisation
 * has in flight across all workers, so a slow receiver can hold only a bounded number of batches
 * open: size these well above WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION. Retries are local
 * activities of per-delivery workflows. Attempts are I/O, not CPU: bench/webhooks.ts measures what
 * two cores sustain.
 */
export const WORKER_CONCURRENCY = {
  maxConcurrentWorkflowTaskExecutions: 400,
  maxConcurrentWorkflowTaskPolls: 16,
  // Batches and retries start on the normal queue: poll it as much as the sticky one.
  nonStickyToStickyPollRatio: 1,
  maxConcurrentLocalActivityExecutions: 400,
  maxConcurrentActivityTaskExecutions: 100,
} as const;

export async function createWorker({ config, db, logger, prebundled, identity, encryptionKey, connection: given }: WorkerOptions): Promise<{
  worker: Worker;
  connection: NativeConnection;
}> {
  if (!given && !config.TEMPORAL_ADDRESS) throw new Error('TEMPORAL_ADDRESS is required');
  // The process's first worker installs the runtime with its logger; a later one, or one given a
  // connection (which made a runtime already), keeps the runtime there is.
  installTemporalRuntime({ logger: temporalLogger(logger) });
  const connection = given ?? (await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS }));
  const tracing = activeTracing();
  const workflowBundle = config.WORKFLOW_BUNDLE
    ? { codePath: requireBundle(config.WORKFLOW_BUNDLE) }
    : prebundled
      ? { codePath: requireBundle(tracing ? TRACED_WORKFLOW_BUNDLE_PATH : WORKFLOW_BUNDLE_PATH) }
      : { code: await bundleWorkflows(logger, tracing ? TRACING_WORKFLOW_INTERCEPTORS : []) };
  // Tracing: activities continue the workflow's trace; workflow spans leave the sandbox through a sink.
  const traced = tracing
    ? {
        interceptors: {
          activity: [
            (ctx: ActivityContext) => ({
              inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
              outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
            }),
          ],
        },
        sinks: { exporter: makeWorkflowExporter(tracing.processor, tracing.resource) },
      }
    : {};
  const worker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities({ db, logger, config, encryptionKey: encryptionKey ?? loadEncryptionKey(config) }),
    ...WORKER_CONCURRENCY,
    // SIGTERM drains: batches in flight finish their attempts (each bounded by the attempt timeout).
    shutdownGraceTime: config.WEBHOOK_ATTEMPT_TIMEOUT + 30_000,
    ...(identity ? { identity } : {}),
    workflowBundle,
    ...traced,
  });
  return { worker, connection };
}

/**
 * The workflows bundled from the sources (a development worker does it at start; `npm run
 * build:workflows` writes the production bundles). webpack's report of the build, one long
 * multi-line message, and the bundler's other news are build chatter: debug. Its warnings and
 * errors (a failed build) keep their level.
 */
export async function bundleWorkflows(logger: Logger, workflowInterceptorModules: readonly string[] = []): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: WORKFLOWS_PATH,
    workflowInterceptorModules: [...workflowInterceptorModules],
    logger: temporalLogger(logger, (level) => (level === 'INFO' ? 'DEBUG' : level)),
  });
  return code;
}

const PINO_LEVELS = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const;

/** Temporal's logger interface on ours; `levelOf` may move a level (default: kept). */
function temporalLogger(logger: Logger, levelOf: (level: LogLevel) => LogLevel = (level) => level): TemporalLogger {
  const log = (level: LogLevel, message: string, meta?: Record<string, unknown>) =>
    logger[PINO_LEVELS[levelOf(level)]]({ ...meta }, message);
  return {
    log,
    trace: (message, meta) => log('TRACE', message, meta),
    debug: (message, meta) => log('DEBUG', message, meta),
    info: (message, meta) => log('INFO', message, meta),
    warn: (message, meta) => log('WARN', message, meta),
    error: (message, meta) => log('ERROR', message, meta),
  };
}

function requireBundle(path: string): string {
  if (!existsSync(path)) {
    throw new Error(`No workflow bundle at ${path}: run \`npm run build:workflows\` first.`);
  }
  return path;
}
