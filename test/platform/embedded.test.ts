import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChangeNotices } from '../../src/db/change-notices.ts';
import { migrateDeploy } from '../../src/db/migrate.ts';
import { nativePostgresBinaries, startNativePostgres } from '../../src/embedded/native-postgres.ts';
import { startEmbeddedDatabase } from '../../src/embedded/database.ts';
import { EmbeddedPortInUseError, forwardNotifications, startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/embedded/pglite.ts';
import { newId } from '../../src/ids.ts';
import { createLogger } from '../../src/log.ts';
import { findFreePort, findTemporalCli, findTemporalTestServer, startTemporalDevServer } from '../../src/embedded/temporal.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bundledCli = path.join(repoRoot, '.tools', 'temporal', 'temporal');
const missingTools = 'Run `bash scripts/ensure-temporal.sh` to download the pinned Temporal binaries into .tools/temporal/';

const tempDirs: string[] = [];
async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(tempDirs.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** `work` with two connections of their own to `url` (two sessions, on a real server), both ended after. */
async function withTwoClients(url: string, work: (a: pg.Client, b: pg.Client) => Promise<void>): Promise<void> {
  const a = new pg.Client({ connectionString: url });
  const b = new pg.Client({ connectionString: url });
  await a.connect();
  await b.connect();
  try {
    await work(a, b);
  } finally {
    await a.end();
    await b.end();
  }
}

/** The rows of one query on a connection of its own to `url`. */
async function rowsOnce(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

async function temporalCli(): Promise<string> {
  const cli = await findTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH });
  if (!cli) throw new Error(`No temporal CLI found. ${missingTools}`);
  return cli;
}

describe('embedded Temporal dev server', () => {
  it('has the pinned binaries in .tools/temporal', async () => {
    expect(existsSync(bundledCli), `${bundledCli} is missing. ${missingTools}`).toBe(true);
    expect(await findTemporalCli({ searchPath: '' })).toBe(bundledCli);
    expect(await findTemporalTestServer(), `temporal-test-server is missing. ${missingTools}`).toBe(
      path.join(repoRoot, '.tools', 'temporal', 'temporal-test-server'),
    );
  });

  it('rejects a TEMPORAL_CLI_PATH that is not an executable', async () => {
    await expect(findTemporalCli({ cliPath: path.join(repoRoot, 'no-such-temporal') })).rejects.toThrow(
      /TEMPORAL_CLI_PATH=.*no-such-temporal is not an executable file/,
    );
  });

  it('starts, answers gRPC with its namespace and Web UI, and stops', async () => {
    const lines: string[] = [];
    const began = Date.now();
    const server = await startTemporalDevServer({
      cliPath: await temporalCli(),
      namespace: 'embedded-test',
      log: (line) => lines.push(line),
    });
    const startupMs = Date.now() - began;
    try {
      expect(server.address).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(server.namespace).toBe('embedded-test');
      const connection = await Connection.connect({ address: server.address });
      try {
        const info = await connection.workflowService.getSystemInfo({});
        expect(info.serverVersion).toMatch(/^\d+\.\d+\.\d+/);
        const described = await connection.workflowService.describeNamespace({ namespace: 'embedded-test' });
        expect(described.namespaceInfo?.name).toBe('embedded-test');
      } finally {
        await connection.close();
      }
      expect(server.uiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const ui = await fetch(server.uiUrl!);
      expect(ui.status).toBe(200);
      expect(lines.some((line) => line.includes('dev server ready'))).toBe(true);
      console.info(`temporal dev server ready in ${startupMs} ms`);
    } finally {
      await server.stop();
    }
    // gRPC's "Failed to connect before the deadline", or the client's "Failed to connect to Temporal server".
    await expect(Connection.connect({ address: server.address, connectTimeout: 1_000 })).rejects.toThrow(/^Failed to connect/);
  });

  it('keeps its namespace and workflows in dataDir across restarts', async () => {
    const cliPath = await temporalCli();
    const dataDir = await tempDir('temporal-embedded-');
    const port = await findFreePort();
    const namespace = 'embedded-persisted';
    const first = await startTemporalDevServer({ cliPath, dataDir, port, uiPort: false, namespace });
    expect(first.uiUrl).toBeUndefined();
    try {
      const connection = await Connection.connect({ address: first.address });
      // No worker polls this queue: the workflow stays running, which is all a restart must keep.
      await new Client({ connection, namespace }).workflow.start('persistedWorkflow', {
        taskQueue: 'embedded-test-no-worker',
        workflowId: 'embedded-persisted-1',
      });
      await connection.close();
    } finally {
      await first.stop();
    }
    expect(existsSync(path.join(dataDir, 'temporal.sqlite'))).toBe(true);

    // The namespace exists in the store by now; start-dev must accept being asked for it again.
    const second = await startTemporalDevServer({ cliPath, dataDir, port, uiPort: false, namespace });
    try {
      const connection = await Connection.connect({ address: second.address });
      const description = await new Client({ connection, namespace }).workflow.getHandle('embedded-persisted-1').describe();
      expect(description.status.name).toBe('RUNNING');
      expect(description.type).toBe('persistedWorkflow');
      await connection.close();
    } finally {
      await second.stop();
    }
  });

  it('refuses a port that another server holds instead of mistaking that server for its own', async () => {
    const cliPath = await temporalCli();
    const running = await startTemporalDevServer({ cliPath, uiPort: false });
    try {
      const port = Number(running.address.split(':')[1]);
      await expect(startTemporalDevServer({ cliPath, port, uiPort: false })).rejects.toThrow(
        /gRPC port 127\.0\.0\.1:\d+ is already in use/,
      );
    } finally {
      await running.stop();
    }
  });

  it('fails with the server output when the server exits during startup', async () => {
    const dataDir = await tempDir('temporal-embedded-');
    // A directory where the SQLite file should be: the server cannot open its store and exits.
    await mkdir(path.join(dataDir, 'temporal.sqlite'));
    const attempt = startTemporalDevServer({ cliPath: await temporalCli(), dataDir, uiPort: false, startTimeoutMs: 15_000 });
    await expect(attempt).rejects.toThrow(/exited before it was ready[\s\S]*server output[\s\S]*unable to open database file/);
  });

  it('gives up after the start timeout with the server output', async () => {
    const dir = await tempDir('temporal-embedded-');
    const silentServer = path.join(dir, 'fake-temporal');
    await writeFile(silentServer, '#!/bin/sh\necho "fake server starting" >&2\nexec sleep 60\n', { mode: 0o755 });
    const began = Date.now();
    const attempt = startTemporalDevServer({ cliPath: silentServer, uiPort: false, startTimeoutMs: 1_500 });
    await expect(attempt).rejects.toThrow(/did not answer gRPC at 127\.0\.0\.1:\d+ within[\s\S]*fake server starting/);
    expect(Date.now() - began).toBeLessThan(10_000);
  });
});

describe("embedded PostgreSQL (this platform's own server, where its binaries are installed)", () => {
  const binDir = nativePostgresBinaries();

  it.skipIf(!binDir)(
    'gives each connection its own session, keeps its data across restarts (a stale lock file too), and refuses a taken port',
    async () => {
      const dataDir = path.join(await tempDir('native-embedded-'), 'postgresql');
      const port = await findFreePort();
      const first = await startNativePostgres({ dataDir, port, binDir: binDir! });
      let lockFile: string | undefined;
      // The superuser's password is the cluster's own, in a file only this user may read.
      const password = (await readFile(`${dataDir}.password`, 'utf8')).trim();
      expect(password).toMatch(/^[\w-]{24}$/);
      expect((await stat(`${dataDir}.password`)).mode & 0o077).toBe(0);
      expect(first.url).toBe(`postgresql://postgres:${password}@127.0.0.1:${port}/postgres?sslmode=disable`);
      await expect(rowsOnce(first.url.replace(password, 'postgres'), 'select 1')).rejects.toThrow(/password authentication failed/);
      try {
        await withTwoClients(first.url, async (a, b) => {
          await a.query('create table native_check (id int primary key, label text not null)');
          // A transaction open on one connection neither blocks nor shows itself to another (PGlite's one session would do both).
          await a.query('begin');
          await a.query("insert into native_check values (1, 'kept')");
          expect((await b.query('select count(*)::int as n from native_check')).rows).toEqual([{ n: 0 }]);
          await a.query('commit');
          expect((await b.query('select label from native_check')).rows).toEqual([{ label: 'kept' }]);
          const heard = new Promise<string | undefined>((resolve) => b.once('notification', (n) => resolve(n.payload)));
          await b.query('listen native_channel');
          await a.query("select pg_notify('native_channel', 'hello')");
          expect(await heard).toBe('hello');
          // Typed, so that npm start reports it instead of falling back to PGlite.
          const taken = startNativePostgres({ dataDir: `${dataDir}-other`, port, binDir: binDir! });
          await expect(taken).rejects.toThrow(/port is in use/);
          await expect(taken).rejects.toBeInstanceOf(EmbeddedPortInUseError);
        });
        lockFile = await readFile(path.join(dataDir, 'postmaster.pid'), 'utf8');
      } finally {
        await first.stop();
      }

      // As a server that did not stop leaves it, naming a pid that another process of the server's
      // user holds now: PostgreSQL alone would refuse to start, taking it for a server still running.
      const other = spawn('sleep', ['60'], process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {});
      const second = await (async () => {
        try {
          await writeFile(path.join(dataDir, 'postmaster.pid'), (lockFile ?? '').replace(/^\d+/, String(other.pid)));
          return await startNativePostgres({ dataDir, port, binDir: binDir! });
        } finally {
          other.kill();
        }
      })();
      try {
        expect(await rowsOnce(second.url, 'select id, label from native_check')).toEqual([{ id: 1, label: 'kept' }]);
      } finally {
        await second.stop();
      }
    },
  );

  it.skipIf(!binDir)(
    "npm start's choice (EMBEDDED_POSTGRES=auto): a cluster that holds data is never left for PGlite's empty database, not even with its binaries gone",
    async () => {
      const dataDir = await tempDir('embedded-choice-');
      const said: string[] = [];
      const options = { choice: 'auto' as const, dataDir, port: await findFreePort(), log: (line: string) => void said.push(line) };
      const native = await startEmbeddedDatabase(options);
      expect(native).toMatchObject({ pglite: false, description: `embedded PostgreSQL in ${path.join(dataDir, 'postgresql')}` });
      await native.stop();
      // As on a machine where the platform's package was left out (npm ci --omit=optional).
      await expect(startEmbeddedDatabase({ ...options, binDir: undefined })).rejects.toThrow(
        /postgresql holds PostgreSQL's data, but there are no PostgreSQL binaries for .*EMBEDDED_POSTGRES=pglite/,
      );
      expect(existsSync(path.join(dataDir, 'postgres'))).toBe(false);
      // A DATA_DIR without data starts PGlite there instead, and says nothing of a failure.
      const fresh = await startEmbeddedDatabase({ ...options, dataDir: await tempDir('embedded-choice-'), binDir: undefined });
      expect(fresh.pglite).toBe(true);
      await fresh.stop();
    },
  );
});

describe('embedded PostgreSQL (PGlite over the wire protocol)', () => {
  it('serves pg clients and keeps its data across restarts', async () => {
    const dataDir = path.join(await tempDir('pglite-embedded-'), 'postgres');
    let began = Date.now();
    const first = await startEmbeddedPostgres({ dataDir, port: 0 });
    const firstStartMs = Date.now() - began;
    expect(first.port).toBeGreaterThan(0);
    expect(first.url).toBe(`postgresql://postgres:postgres@127.0.0.1:${first.port}/postgres?sslmode=disable`);
    try {
      await withTwoClients(first.url, async (a, b) => {
        expect((await a.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
        await a.query('create table embedded_check (id int primary key, label text not null)');
        await a.query('insert into embedded_check values ($1, $2)', [1, 'kept']);
        expect((await b.query('select label from embedded_check where id = 1')).rows).toEqual([{ label: 'kept' }]);
        expect((await b.query('select current_database() as db')).rows).toEqual([{ db: 'postgres' }]);
      });
    } finally {
      await first.stop();
    }

    began = Date.now();
    const second = await startEmbeddedPostgres({ dataDir, port: 0 });
    const restartMs = Date.now() - began;
    try {
      expect(await rowsOnce(second.url, 'select id, label from embedded_check')).toEqual([{ id: 1, label: 'kept' }]);
    } finally {
      await second.stop();
    }
    console.info(`PGlite first start (initdb) ${firstStartMs} ms, restart ${restartMs} ms`);
  });

  it("runs each connection's exchanges whole while many connections query and commit at once", async () => {
    const embedded = await startEmbeddedPostgres({ dataDir: path.join(await tempDir('pglite-embedded-'), 'postgres'), port: 0 });
    const clients = Array.from({ length: 8 }, () => new pg.Client({ connectionString: embedded.url }));
    try {
      await Promise.all(clients.map((client) => client.connect()));
      await clients[0]!.query('create table exchanges_check (client int, n int, primary key (client, n))');
      // Unnamed statements of different shapes (pg's Parse, Bind, Describe, Execute, Sync): one
      // connection's Bind meeting another's Parse would bind the wrong statement or none.
      const answers = await Promise.all(
        clients.map(async (client, c) => {
          const seen: string[] = [];
          for (let n = 0; n < 30; n += 1) {
            if (n % 3 === 0) {
              seen.push(String((await client.query('select $1::int + $2::int + $3::int as sum', [c, n, 1])).rows[0].sum));
            } else if (n % 3 === 1) {
              seen.push((await client.query('select $1::text as label', [`${c}:${n}`])).rows[0].label);
            } else {
              // A transaction holds the session from BEGIN to COMMIT; the others wait, then go on.
              await client.query('begin');
              await client.query('insert into exchanges_check values ($1, $2)', [c, n]);
              seen.push(
                String((await client.query('select count(*)::int as rows from exchanges_check where client = $1', [c])).rows[0].rows),
              );
              await client.query('commit');
            }
          }
          return seen;
        }),
      );
      answers.forEach((seen, c) => {
        const expected = Array.from({ length: 30 }, (_, n) =>
          n % 3 === 0 ? String(c + n + 1) : n % 3 === 1 ? `${c}:${n}` : String((n + 1) / 3),
        );
        expect(seen).toEqual(expected);
      });
      expect((await clients[0]!.query('select count(*)::int as rows from exchanges_check')).rows).toEqual([{ rows: 80 }]);
    } finally {
      await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
      await embedded.stop();
    }
  });

  it('refuses a data directory that is already open and a port that is taken', async () => {
    const dataDir = path.join(await tempDir('pglite-embedded-'), 'postgres');
    const running = await startEmbeddedPostgres({ dataDir, port: 0 });
    try {
      await expect(startEmbeddedPostgres({ dataDir, port: 0 })).rejects.toThrow(/already open in this process/);
      const otherDir = path.join(await tempDir('pglite-embedded-'), 'postgres');
      const taken = startEmbeddedPostgres({ dataDir: otherDir, port: running.port });
      await expect(taken).rejects.toThrow(/cannot listen on 127\.0\.0\.1:\d+: the port is in use/);
      await expect(taken).rejects.toBeInstanceOf(EmbeddedPortInUseError);
      // The failed start released its lock: the directory opens now.
      const other = await startEmbeddedPostgres({ dataDir: otherDir, port: 0 });
      await other.stop();
    } finally {
      await running.stop();
    }
  });
});

/** Milliseconds until `check` holds, polling every 10 ms; fails after `limitMs`. */
async function within(limitMs: number, check: () => boolean | Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > limitMs) throw new Error(`not within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * PGlite runs one session for every connection, so a committed notice comes out on the connection
 * that committed it; src/embedded/pglite.ts forwards it to the connections that LISTEN, as separate
 * sessions of a real server would receive it. The caches of `npm start` depend on it.
 */
describe('LISTEN/NOTIFY on the embedded PostgreSQL', { timeout: 120_000 }, () => {
  let embedded: EmbeddedPostgres;
  const clients: pg.Client[] = [];
  beforeAll(async () => {
    embedded = await startEmbeddedPostgres({ dataDir: path.join(await tempDir('pglite-notify-'), 'postgres'), port: 0 });
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
    await embedded?.stop();
  });

  /** A connection and the notices it has received, as `channel:payload`. */
  async function connection() {
    const client = new pg.Client({ connectionString: embedded.url });
    clients.push(client);
    const heard: string[] = [];
    client.on('notification', (message) => heard.push(`${message.channel}:${message.payload}`));
    await client.connect();
    return { client, heard };
  }

  it('delivers a committed notice to the other connections listening on its channel, and to no one else', async () => {
    const listener = await connection();
    const notifier = await connection();
    const bystander = await connection();
    await listener.client.query('LISTEN orders');
    await bystander.client.query('LISTEN "Other Channel"');

    await notifier.client.query('BEGIN');
    await notifier.client.query(`NOTIFY orders, 'in a transaction'`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(listener.heard).toEqual([]);
    await notifier.client.query('COMMIT');
    await within(2_000, () => listener.heard.length > 0);
    expect(listener.heard).toEqual(['orders:in a transaction']);

    await notifier.client.query('BEGIN');
    await notifier.client.query(`SELECT pg_notify('orders', 'rolled back')`);
    await notifier.client.query('ROLLBACK');
    await notifier.client.query(`SELECT pg_notify('orders', 'after the rollback')`);
    await within(2_000, () => listener.heard.length > 1);
    // One connection's notices arrive in order: the rolled-back one would have come first.
    expect(listener.heard).toEqual(['orders:in a transaction', 'orders:after the rollback']);

    await listener.client.query('UNLISTEN orders');
    await notifier.client.query(`NOTIFY orders, 'unheard'`);
    await notifier.client.query(`SELECT pg_notify('Other Channel', 'marker')`);
    await within(2_000, () => bystander.heard.length > 0);
    // A real server sends a notice to a connection only if it listens; the notifier does not.
    expect({ listener: listener.heard, bystander: bystander.heard, notifier: notifier.heard }).toEqual({
      listener: ['orders:in a transaction', 'orders:after the rollback'],
      bystander: ['Other Channel:marker'],
      notifier: [],
    });
  });

  it('keeps a channel for its other listeners when one UNLISTENs, honours UNLISTEN * and a rolled-back LISTEN, and hears its own notices', async () => {
    const a = await connection();
    const b = await connection();
    const notifier = await connection();
    await a.client.query('LISTEN shared; LISTEN Mine');
    await b.client.query('listen SHARED');
    // The session listens on `never` for the notifier, so only the bookkeeping keeps b from hearing it.
    await notifier.client.query('LISTEN never');
    await b.client.query('BEGIN; LISTEN never; ROLLBACK');
    await a.client.query('UNLISTEN shared');
    await notifier.client.query(`SELECT pg_notify('shared', '1'), pg_notify('never', 'x')`);
    await notifier.client.query(`SELECT pg_notify('mine', '2')`);
    await within(2_000, () => b.heard.length > 0 && a.heard.length > 0);
    await a.client.query(`NOTIFY mine, 'own'`);
    await within(2_000, () => a.heard.length > 1);
    expect({ a: a.heard, b: b.heard, notifier: notifier.heard }).toEqual({
      a: ['mine:2', 'mine:own'],
      b: ['shared:1'],
      notifier: ['never:x'],
    });

    await b.client.query('UNLISTEN *');
    await b.client.query('LISTEN marker');
    await notifier.client.query(`NOTIFY shared, 'after unlisten all'; NOTIFY marker`);
    await within(2_000, () => b.heard.length > 1);
    expect(b.heard).toEqual(['shared:1', 'marker:']);
  });

  it('refuses to start when the pglite-socket internals it relies on are missing', () => {
    expect(() => forwardNotifications({} as never)).toThrow(/cannot forward change notices.*queryQueue\.enqueue.*0\.2\.17/);
  });

  it('proves delivery to ChangeNotices, which hands a trigger-driven change to its subscriber', async () => {
    await migrateDeploy(embedded.url);
    const lines: Array<{ level: string; msg: string }> = [];
    const logger = createLogger('debug', 'test', { write: (line: string) => void lines.push(JSON.parse(line)) });
    const notices = new ChangeNotices(embedded.url, logger);
    const changed: string[] = [];
    notices.subscribe({ tables: new Set(['organisations']), changed: (id, table) => changed.push(`${id} ${table}`), forgetAll: () => {} });
    notices.start();
    try {
      await within(10_000, () => notices.listening);
      const id = newId('organisation');
      const writer = await connection();
      await writer.client.query(
        `INSERT INTO organisations (id, slug, name, "apiVersion", "updatedAt") VALUES ($1, $1, 'Embedded', '2026-01-01', now())`,
        [id],
      );
      await within(2_000, () => changed.length > 0);
      expect(changed).toEqual([`${id} organisations`]);
      expect(writer.heard).toEqual([]);
      expect(notices.listening).toBe(true);
      expect(lines.filter((line) => line.level === 'warn')).toEqual([]);
    } finally {
      await notices.stop();
    }
  });
});
