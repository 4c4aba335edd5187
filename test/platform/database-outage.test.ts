import { createServer, connect, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { createOrganisation, api, type TestOrganisation } from '../support/fixtures.ts';

/**
 * A lost database answers 503 UNAVAILABLE with Retry-After (the request will work once it
 * is back), never 500, and the service answers again as soon as it is back. The outage is real: the
 * API reaches PostgreSQL through a TCP relay of this test, which is cut and restored.
 */

interface Relay {
  url: string;
  cut(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
}

async function relay(targetUrl: string): Promise<Relay> {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = createServer((client) => {
        const upstream = connect(Number(target.port || 5432), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', () => socket.destroy());
          socket.on('close', () => sockets.delete(socket));
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as { port: number }).port;
        resolve();
      });
    });
  await listen();
  const url = new URL(targetUrl);
  url.host = `127.0.0.1:${port}`;
  return {
    url: url.toString(),
    cut() {
      server?.close();
      for (const socket of sockets) socket.destroy();
    },
    restore: listen,
    async close() {
      server?.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

let database: TestDatabase;
let link: Relay;
let app: TestApp;
let org: TestOrganisation;

beforeAll(async () => {
  database = await createTestDatabase();
  link = await relay(database.url);
  app = await startTestApp({ DATABASE_URL: link.url, DATABASE_POOL_SIZE: '2', IDEMPOTENCY_CLAIM_TIMEOUT: '1s' }, { database });
  org = await createOrganisation(app, 'outage');
});
afterAll(async () => {
  await app?.stop();
  await link?.close();
});

it('answers 503 with Retry-After while the database is unreachable, and 200 again once it is back', async () => {
  const as = { token: org.adminToken, org: org.slug };
  expect((await api(app, 'GET', '/v1/accounts', as)).status).toBe(200);

  link.cut();
  const rest = await api(app, 'GET', '/v1/accounts', as);
  expect([rest.status, rest.body.code]).toEqual([503, 'UNAVAILABLE']);
  expect(rest.headers.get('retry-after')).toBe('1');
  const graphql = await api(app, 'POST', '/graphql', { ...as, body: { query: '{ accounts { nodes { id } } }' } });
  expect(graphql.body.errors?.[0]?.extensions?.code).toBe('UNAVAILABLE');
  const ready = await api(app, 'GET', '/readyz');
  expect([ready.status, ready.body.details.checks.database]).toEqual([503, 'failed']);

  await link.restore();
  let status = 0;
  for (let tries = 0; tries < 50 && status !== 200; tries += 1) {
    status = (await api(app, 'GET', '/v1/accounts', as)).status;
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(status).toBe(200);
});

it('a request with an Idempotency-Key that the outage failed runs when retried with its key once the database is back', async () => {
  const as = { token: org.adminToken, org: org.slug };
  let status = 0;
  for (let tries = 0; tries < 50 && status !== 200; tries += 1) {
    status = (await api(app, 'GET', '/v1/accounts', as)).status;
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // The venue's insert waits on a lock held from outside the relay; the outage comes meanwhile.
  const locker = new pg.Client({ connectionString: database.url });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE venues IN ACCESS EXCLUSIVE MODE');
    const send = () =>
      api(app, 'POST', '/v1/venues', {
        ...as,
        body: { accountId: org.account.id, name: 'Through the outage' },
        headers: { 'idempotency-key': 'outage-1' },
      });
    const first = send();
    await new Promise((resolve) => setTimeout(resolve, 500));
    link.cut();
    expect((await first).status).toBeGreaterThanOrEqual(500);
    await locker.query('ROLLBACK');
    await link.restore();
    // Longer than the claim timeout: a key left claimed would have lapsed by now.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const retry = await send();
    expect(retry.status, JSON.stringify(retry.body)).toBe(201);
    const { rows } = await locker.query(`SELECT count(*)::int AS n FROM venues WHERE name = 'Through the outage'`);
    expect(rows[0].n).toBe(1);
  } finally {
    await locker.end();
  }
});
