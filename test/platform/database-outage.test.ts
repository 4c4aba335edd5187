import { createServer, connect, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { closeDatabase, createDatabase, poolOf } from '../../src/db/client.ts';
import { createTestDatabase, query, type TestDatabase } from '../support/db.ts';
import { createOrganisation, api, graphql, systemRole, type TestOrganisation } from '../support/fixtures.ts';
import { placeOrder, seedCatalogue } from '../support/sales.ts';

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
  await backAgain(as);
});

it('a request with an Idempotency-Key that the outage failed runs when retried with its key once the database is back', async () => {
  const as = { token: org.adminToken, org: org.slug };
  await backAgain(as);
  // The venue's insert waits on a lock held from outside the relay; the outage comes meanwhile.
  await withTableLocked('venues', async (locker) => {
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
    await pastClaimTimeout();
    const retry = await send();
    expect(retry.status, JSON.stringify(retry.body)).toBe(201);
    const { rows } = await locker.query(`SELECT count(*)::int AS n FROM venues WHERE name = 'Through the outage'`);
    expect(rows[0].n).toBe(1);
  });
});

it('a change that committed before the database was lost is not made again by a retry with its key', async () => {
  const as = { token: org.adminToken, org: org.slug };
  await backAgain(as);
  const catalogue = await seedCatalogue(app, org);
  const paid = await placeOrder(app, catalogue.channel, catalogue);
  // The refund commits; reading its answer's customer then waits on a lock held from outside the
  // relay, and the outage comes meanwhile.
  await withTableLocked('customers', async (locker) => {
    const send = () =>
      api(app, 'POST', `/v1/orders/${paid.order.id}/refund`, { ...as, body: {}, headers: { 'idempotency-key': 'refund-1' } });
    const first = send();
    for (let tries = 0; ; tries += 1) {
      const { rows } = await locker.query(
        `SELECT (SELECT status::text FROM orders WHERE id = $1) AS status,
                EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted AND relation = 'customers'::regclass) AS waiting`,
        [paid.order.id],
      );
      if (rows[0].status === 'refunded' && rows[0].waiting) break;
      expect(tries, 'the refund committed and its answer waits for the customer').toBeLessThan(100);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // A moment's outage: the answer's read is lost with its connection, the key's row is stored after.
    link.cut();
    await link.restore();
    const answer = await first;
    expect([answer.status, answer.body.code]).toEqual([500, 'INTERNAL']);
    expect(answer.body.error).toMatch(/may have taken effect/);
    expect(answer.headers.get('retry-after')).toBeNull();
    await locker.query('ROLLBACK');
    await pastClaimTimeout();
    const retry = await send();
    expect([retry.status, retry.headers.get('idempotent-replayed')], JSON.stringify(retry.body)).toEqual([500, 'true']);
    expect(retry.body.error).toBe(answer.body.error);
    const { rows } = await locker.query(
      `SELECT count(*)::int AS n FROM audit_entries WHERE "targetId" = $1 AND action = 'order.refunded'`,
      [paid.order.id],
    );
    expect(rows[0].n).toBe(1);
  });
});

it('a change that failed after committing is answered the same to a retry with its key, not run again', async () => {
  const as = { token: org.adminToken, org: org.slug };
  await backAgain(as);
  // The invitation commits; writing its mail then fails (and the invitation is undone).
  await fromOutside(async (outside) => {
    try {
      await outside.query(`CREATE SEQUENCE mail_attempts`);
      await outside.query(`CREATE FUNCTION refuse_mail() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM nextval('mail_attempts'); RAISE EXCEPTION 'the mail server refuses'; END $$`);
      await outside.query(`CREATE TRIGGER refuse_mail BEFORE INSERT ON outbox_messages FOR EACH ROW
        WHEN (NEW."to" = 'unmailable@outage.test') EXECUTE FUNCTION refuse_mail()`);
      const send = () =>
        api(app, 'POST', '/v1/user-invitations', {
          ...as,
          body: { organisationId: org.organisation.id, email: 'unmailable@outage.test', roleIds: [systemRole(org, 'viewer')] },
          headers: { 'idempotency-key': 'invite-1' },
        });
      const answer = await send();
      expect([answer.status, answer.body.code]).toEqual([500, 'INTERNAL']);
      expect(answer.body.error).toMatch(/may have taken effect/);
      const retry = await send();
      expect([retry.status, retry.headers.get('idempotent-replayed')], JSON.stringify(retry.body)).toEqual([500, 'true']);
      const { rows } = await outside.query(`SELECT CASE WHEN is_called THEN last_value::int ELSE 0 END AS attempts FROM mail_attempts`);
      expect(rows[0].attempts).toBe(1);

      // /graphql says the same, and keeps it under its key.
      const invite = (key: string) =>
        graphql(
          app,
          'mutation($input: CreateInvitationInput!) { createInvitation(input: $input) { invitation { id } } }',
          { input: { organisationId: org.organisation.id, email: 'unmailable@outage.test' } },
          { ...as, headers: { 'idempotency-key': key } },
        );
      const created = await invite('invite-2');
      const [error] = created.body.errors ?? [];
      expect([error?.extensions?.code, error?.message], JSON.stringify(created.body)).toEqual(['INTERNAL', answer.body.error]);
      const createdAgain = await invite('invite-2');
      expect(createdAgain.headers.get('idempotent-replayed')).toBe('true');
      expect(createdAgain.body).toEqual(created.body);
      const mailed = await outside.query(`SELECT last_value::int AS attempts FROM mail_attempts`);
      expect(mailed.rows[0].attempts).toBe(2);

      // A fault before anything was saved gives the key back: the retry runs again.
      await outside.query(`DROP TRIGGER refuse_mail ON outbox_messages`);
      await outside.query(`CREATE TRIGGER refuse_invitation BEFORE INSERT ON invitations FOR EACH ROW
        WHEN (NEW.email = 'unmailable@outage.test') EXECUTE FUNCTION refuse_mail()`);
      const refused = [await invite('invite-3'), await invite('invite-3')];
      expect(refused.map((res) => [res.body.errors?.[0]?.message, res.headers.get('idempotent-replayed')])).toEqual([
        ['An unexpected error occurred.', null],
        ['An unexpected error occurred.', null],
      ]);
      const tried = await outside.query(`SELECT last_value::int AS attempts FROM mail_attempts`);
      expect(tried.rows[0].attempts).toBe(4);
    } finally {
      await outside.query(`DROP TRIGGER IF EXISTS refuse_mail ON outbox_messages`);
      await outside.query(`DROP TRIGGER IF EXISTS refuse_invitation ON invitations`);
    }
  });
});

/** Runs `work` on a connection of its own to the database, straight rather than through the relay. */
async function fromOutside<T>(work: (outside: pg.Client) => Promise<T>): Promise<T> {
  const outside = new pg.Client({ connectionString: database.url });
  await outside.connect();
  try {
    return await work(outside);
  } finally {
    await outside.end();
  }
}

/** `fromOutside` in a transaction holding `table` locked against every other (until `work` rolls back). */
function withTableLocked<T>(table: string, work: (locker: pg.Client) => Promise<T>): Promise<T> {
  return fromOutside(async (locker) => {
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    return work(locker);
  });
}

it('outlives the server ending its idle connections (a failover, an administrator): the next statement opens another', async () => {
  const database = await createTestDatabase();
  const db = createDatabase({ url: database.url, poolSize: 2 });
  try {
    // The hand-written statements' path: the pool is used before Prisma ever connects.
    const pool = poolOf(db);
    await Promise.all([pool.query('SELECT 1'), pool.query('SELECT 1')]);
    const ended = await query<{ ended: boolean }>(
      database.url,
      'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    expect(ended.length).toBeGreaterThan(0);
    // An 'error' of the pool nobody listened to would end this process here (and fail the run).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await pool.query<{ answer: number }>('SELECT 42 AS answer')).rows).toEqual([{ answer: 42 }]);
  } finally {
    await closeDatabase(db);
    await database.drop();
  }
});

/** Longer than the claim timeout (1 s here): a key left claimed would have lapsed by now. */
function pastClaimTimeout(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 1_500));
}

async function backAgain(as: { token: string; org: string }): Promise<void> {
  let status = 0;
  for (let tries = 0; tries < 50 && status !== 200; tries += 1) {
    status = (await api(app, 'GET', '/v1/accounts', as)).status;
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(status).toBe(200);
}
