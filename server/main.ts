import { ConfigError, loadConfig } from '../src/config.ts';
import { startApi } from './app.ts';
import { startMetricsServer } from '../src/http/metrics.ts';
import { createRuntime } from '../src/runtime.ts';
import { startTracing } from '../src/tracing.ts';

/**
 * The API process: `npm run serve`. Stops gracefully on SIGTERM and SIGINT: /readyz answers 503 at
 * once, requests are still served for SHUTDOWN_DRAIN_DELAY (load balancers take the process out),
 * then it stops accepting and exits once in-flight requests are answered.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything that could start a span or a Temporal client (README "Traces").
  const tracing = startTracing(config, 'api');
  const runtime = createRuntime(config);
  const running = await startApi(runtime, config.PORT, config.HOST);
  runtime.logger.info({ url: running.url }, 'API listening');
  if (config.METRICS_PORT !== undefined) await startMetricsServer(config.METRICS_PORT, config.METRICS_HOST, runtime.logger);
  // Starts delivery workflows that a crash or a Temporal outage left unstarted (workers sweep too).
  runtime.dispatcher.start();
  const shutdown = (signal: string) => {
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
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
