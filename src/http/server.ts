import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Runtime } from '../runtime.ts';
import { createApp } from './app.ts';

export interface RunningServer {
  server: Server;
  url: string;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then closes the runtime. */
  stop(graceMs?: number): Promise<void>;
}

export async function startServer(runtime: Runtime, port: number, host: string): Promise<RunningServer> {
  const { app } = createApp(runtime);
  const server = createServer(app);
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
    stop(graceMs = 10_000) {
      stopping ??= (async () => {
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
