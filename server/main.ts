import cluster from 'node:cluster';
import { setFlagsFromString } from 'node:v8';
import { ConfigError, loadConfig, type Config } from '../src/config.ts';
import { startApi } from './app.ts';
import { startMetricsServer } from '../src/http/metrics.ts';
import { createRuntime } from '../src/runtime.ts';
import { warmDatabase } from '../src/db/client.ts';
import { startTracing } from '../src/tracing.ts';
import { createLogger } from '../src/log.ts';
import { apiMallocEnvFrom } from '../src/malloc-env.ts';

/**
 * The API process: `npm run serve`. Stops gracefully on SIGTERM and SIGINT: /readyz answers 503 at
 * once, requests are still served for SHUTDOWN_DRAIN_DELAY (load balancers take the process out),
 * then it stops accepting and exits once in-flight requests are answered.
 *
 * With API_PROCESSES > 1 this process is a primary that forks that many API processes sharing
 * PORT (node:cluster hands connections out in turn), forks again any that dies unasked, and on
 * SIGTERM/SIGINT passes the signal on and exits once all of them have. Everything the processes
 * must agree on lives in PostgreSQL (docs/operating.md "Many processes, one service"), so they are replicas like any other.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  if (cluster.isPrimary && config.API_PROCESSES > 1) return primary(config);
  // V8 reads this factor each time it sets the heap's next limit, so setting it now applies it from
  // the first full collection on.
  if (config.API_HEAP_GROWTH_PERCENT > 0) setFlagsFromString(`--heap-growing-percent=${config.API_HEAP_GROWTH_PERCENT}`);
  // Before anything that could start a span or a Temporal client (docs/operating.md "Traces").
  const tracing = await startTracing(config, 'api');
  const runtime = createRuntime(config);
  const notReady = await warmDatabase(runtime.db, 5_000);
  if (notReady) runtime.logger.warn({ reason: notReady }, 'the database was not ready at start: the first requests meet it cold');
  const running = await startApi(runtime, config.PORT, config.HOST);
  runtime.logger.info({ url: running.url, pid: process.pid }, 'API listening');
  if (config.METRICS_PORT !== undefined) {
    // One scrape target per process: the n-th forked process (from 0) adds n to the port.
    const index = Number(process.env.API_PROCESS_INDEX ?? 0);
    const port = config.METRICS_PORT === 0 ? 0 : config.METRICS_PORT + index;
    await startMetricsServer(port, config.METRICS_HOST, runtime.logger);
  }
  // Starts delivery workflows that a crash or a Temporal outage left unstarted (workers sweep too).
  runtime.dispatcher.start();
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    runtime.logger.info({ signal, drainMs: config.SHUTDOWN_DRAIN_DELAY }, 'shutting down: not ready, finishing requests');
    running
      .stop({ drainMs: config.SHUTDOWN_DRAIN_DELAY, graceMs: 30_000 })
      .then(() => tracing?.shutdown())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          runtime.logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

function primary(config: Config): void {
  const logger = createLogger(config.LOG_LEVEL, 'api-primary');
  let stopping = false;
  let alive = 0;
  const fork = (index: number) => {
    // cluster.fork adds these to this process's environment.
    const child = cluster.fork({ ...apiMallocEnvFrom(process.env), API_PROCESS_INDEX: String(index) });
    alive += 1;
    child.once('exit', (code, signal) => {
      alive -= 1;
      if (stopping) {
        if (alive === 0) process.exit(0);
        return;
      }
      logger.error({ pid: child.process.pid, code, signal }, 'API process died; forking another');
      // A process that dies at once (a bad configuration) would otherwise be forked in a tight loop.
      setTimeout(() => fork(index), 1_000).unref();
    });
  };
  for (let index = 0; index < config.API_PROCESSES; index += 1) fork(index);
  logger.info({ processes: config.API_PROCESSES, pid: process.pid }, 'API primary forked its processes');
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping the API processes');
    if (alive === 0) process.exit(0);
    // A terminal's Ctrl-C reaches every process of the group already; a process ignores repeats.
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
