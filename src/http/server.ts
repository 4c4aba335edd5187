import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Runtime } from '../runtime.ts';

export interface RunningServer {
  server: Server;
  url: string;
  /**
   * A rolling restart's stop: readiness turns false first (runtime.draining) and requests keep being
   * served for `drainMs`, so load balancers take the process out before it stops accepting; then it
   * stops accepting, lets in-flight requests finish (up to `graceMs`) and closes the runtime.
   */
  stop(options?: { graceMs?: number; drainMs?: number }): Promise<void>;
}

/** Serves `handler` (the composed app, server/app.ts) on `port`; stopping closes the runtime too. */
export async function startServer(handler: RequestListener, runtime: Runtime, port: number, host: string): Promise<RunningServer> {
  const server = createServer(handler);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const url = `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${address.port}`;
  let stopping: Promise<void> | undefined;
  return {
    server,
    url,
    stop({ graceMs = 10_000, drainMs = 0 } = {}) {
      stopping ??= (async () => {
        runtime.draining = true;
        if (drainMs > 0) await new Promise((resolve) => setTimeout(resolve, drainMs));
        // Open subscriptions end (their clients reconnect, with Last-Event-ID, to another process).
        void runtime.live.close();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const timer = setTimeout(() => server.closeAllConnections(), graceMs);
        await closed;
        clearTimeout(timer);
        await runtime.close();
      })();
      return stopping;
    },
  };
}
