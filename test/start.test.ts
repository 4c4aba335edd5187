import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../src/embedded/temporal.ts';
import { connectionRefused } from './support/expect.ts';
import { spawnProcess, type Spawned } from './support/process.ts';

async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not true within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * The README's first command with nothing configured: embedded PGlite and Temporal dev server,
 * migrations, the demo organisation, the API and a worker. (It uses the fixed embedded ports
 * 5433, 7233 and 8233, so it fails, saying so, while another `npm start` runs on this machine.)
 */
describe('npm start with the embedded defaults', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tks-start-'));
  let started: Spawned | undefined;
  afterAll(async () => {
    await started?.stop('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts everything, prints the URLs and demo credentials, serves requests, and stops cleanly', async () => {
    const port = await findFreePort();
    started = spawnProcess(['scripts/start.ts'], {
      DATA_DIR: dataDir,
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: '',
      TEMPORAL_ADDRESS: '',
      JWT_SIGNING_KEYS: '',
      SECRETS_ENCRYPTION_KEY: '',
      LOG_LEVEL: 'warn',
    });
    await started.waitFor(/Press Ctrl\+C to stop/, 150_000);
    const output = started.output();
    expect(output).toContain(`GraphQL (GraphiQL in a browser)  http://127.0.0.1:${port}/graphql`);
    expect(output).toContain(`REST compatibility layer         http://127.0.0.1:${port}/v1`);
    expect(output).toMatch(/Temporal Web UI\s+http:\/\/127\.0\.0\.1:8233/);
    const demo = JSON.parse(readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8'));
    expect(output).toContain(`password: ${demo.password}`);

    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { database: 'ok', temporal: 'ok' } });
    const login = await fetch(`http://127.0.0.1:${port}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-org': 'demo' },
      body: JSON.stringify({ email: demo.email, password: demo.password }),
    });
    expect(login.status).toBe(200);
    // The demo shop sells something at once, with the key printed.
    expect(output).toContain(`Demo storefront key              ${demo.storefrontKey}`);
    const listings = await fetch(`http://127.0.0.1:${port}/live/sales/listings`, { headers: { 'x-channel-key': demo.storefrontKey } });
    expect(listings.status).toBe(200);
    const listed = (await listings.json()) as {
      events: Array<{ name: string; ticketTypes: Array<{ onSale: boolean }>; occurrences: unknown[] }>;
    };
    expect(listed.events).toMatchObject([{ name: 'Demo concert', ticketTypes: [{ onSale: true }] }]);
    expect(listed.events[0]!.occurrences).toHaveLength(1);
    const ui = await fetch('http://127.0.0.1:8233/');
    expect(ui.status).toBe(200);

    // Crashes are survived, not spread: a killed worker is restarted while the API keeps answering,
    // and a killed API is restarted while the worker keeps running.
    const pidOf = (name: string) => Number([...started!.output().matchAll(new RegExp(`${name} started \\(pid (\\d+)\\)`, 'g'))].at(-1)![1]);
    const worker = pidOf('worker');
    process.kill(worker, 'SIGKILL');
    await started.waitFor(/worker exited \(SIGKILL\); restarting in 1 s/, 10_000);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    await waitUntil(() => pidOf('worker') !== worker, 30_000);
    const api = pidOf('api');
    const restartedWorker = pidOf('worker');
    process.kill(api, 'SIGKILL');
    await started.waitFor(/api exited \(SIGKILL\); restarting in 1 s/, 10_000);
    await waitUntil(
      async () =>
        pidOf('api') !== api &&
        (await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.ok,
          () => false,
        )),
      60_000,
    );
    expect(() => process.kill(restartedWorker, 0)).not.toThrow();

    expect(await started.stop('SIGTERM')).toBe(0);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toSatisfy(connectionRefused);
  }, 360_000);
});
