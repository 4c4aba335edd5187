import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, warmDatabase, watchStatements, type Database } from '../../src/db/client.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { findFreePort } from '../../src/embedded/temporal.ts';
import { spawnProcess } from '../support/process.ts';

/**
 * An API process readies its database client before it listens (server/main.ts): the query
 * compiler's first run happens then, not in the first request. What it must never do is hold the
 * process back from starting when the database does not answer.
 */
describe('warmDatabase', () => {
  let database: TestDatabase;
  const clients: Database[] = [];
  const client = (url: string) => {
    const db = createDatabase({ url, poolSize: 2 });
    clients.push(db);
    return db;
  };
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(clients.map((db) => db.$disconnect().catch(() => undefined)));
    await database?.drop();
  });

  it('runs one query through Prisma against a database that answers, and says so', async () => {
    const db = client(database.url);
    const sent: string[] = [];
    const stop = watchStatements(db, ({ text }) => sent.push(text));
    try {
      expect(await warmDatabase(db, 10_000)).toBeNull();
    } finally {
      stop();
    }
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/FROM "public"\."organisations"/);
  });

  it('gives up on a database that refuses connections, or accepts them and never answers', async () => {
    // A port nothing listens on: refused at once.
    const closedPort = await findFreePort();
    expect(await warmDatabase(client(`postgres://postgres:postgres@127.0.0.1:${closedPort}/postgres`), 10_000)).toMatch(
      /ECONNREFUSED|connect/i,
    );

    // A server that takes the connection and says nothing: the timeout ends the wait.
    const sockets: Socket[] = [];
    const silent: Server = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as { port: number }).port;
      expect(await warmDatabase(client(`postgres://postgres:postgres@127.0.0.1:${port}/postgres`), 300)).toBe('no answer within 300 ms');
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('a client whose warm-up found no database queries it once it is there', async () => {
    // A port that refuses at first, then forwards to the database.
    const port = await findFreePort();
    const db = client(`postgres://postgres:postgres@127.0.0.1:${port}/${database.name}`);
    expect(await warmDatabase(db, 10_000)).not.toBeNull();
    const target = new URL(database.url);
    const proxy = createServer((socket) => {
      const upstream = connect(Number(target.port || 5432), target.hostname);
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(port, '127.0.0.1', resolve));
    try {
      expect(await db.organisation.count()).toBeGreaterThanOrEqual(0);
    } finally {
      await db.$disconnect();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  it('an API process whose database does not answer at start still starts, and says why and that the first requests meet it cold', async () => {
    const [port, databasePort] = await Promise.all([findFreePort(), findFreePort()]);
    const api = spawnProcess(
      ['--import', 'tsx', 'server/main.ts'],
      {
        NODE_ENV: 'test',
        DATABASE_URL: `postgres://postgres:postgres@127.0.0.1:${databasePort}/postgres`,
        TEMPORAL_ADDRESS: '127.0.0.1:1',
        PORT: String(port),
        HOST: '127.0.0.1',
        JWT_SIGNING_KEYS: JSON.stringify([{ kid: 'warm', secret: 'a signing secret for a process with no database' }]),
        SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
        LOG_LEVEL: 'info',
      },
      { command: process.execPath },
    );
    try {
      await api.waitFor(/API listening/, 60_000);
      expect(api.output()).toMatch(/the database was not ready at start/);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    } finally {
      await api.stop();
    }
  }, 90_000);
});
