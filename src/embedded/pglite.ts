// The embedded PostgreSQL used when DATABASE_URL is unset: PGlite (PostgreSQL 18 in WebAssembly,
// in this process) served over the wire protocol by pglite-socket, so `pg` and Prisma's
// adapter-pg talk to it exactly as to a real server. Zero install, fit for local use only.
//
// What differs from a real server (each was checked against pglite 0.5.14 / pglite-socket 0.2.17):
// - There is ONE database. The user, password and database name in the URL are ignored: every
//   connection lands in `postgres` as `postgres`, so the URL names the `postgres` database.
//   CREATE DATABASE succeeds but nothing can connect to the new database. Prisma commands that
//   use a shadow database (`migrate dev`, `migrate reset`, `migrate diff --from-migrations`) would
//   run it on the main database: against the embedded server use `migrate deploy` only.
// - All connections share ONE session. Queries are serialised; while one connection has a
//   transaction open the others wait for it to end (code that awaits a query on another
//   connection from inside a transaction deadlocks). SET and prepared-statement names are shared
//   too, so don't give PrismaPg a `statementNameGenerator` (two pool connections preparing the
//   same name fail with "prepared statement ... already exists").
// - A connection beyond `maxConnections` is closed at once ("Connection terminated
//   unexpectedly" in pg). The default leaves room for several pg pools (pg's default max is 10).
// - Two PGlite instances on one directory would both write to it without noticing each other,
//   so the directory is guarded by a lock file next to it (<dataDir>.lock, holding the pid).
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { unlinkSync } from 'node:fs';
import { mkdir, open, readFile, rm } from 'node:fs/promises';
import path from 'node:path';

type EmbeddedLog = (msg: string) => void;

export interface EmbeddedPostgresOptions {
  /** PGlite's data directory (created when missing); the data survives restarts. */
  dataDir: string;
  /** TCP port on 127.0.0.1; default 5433 (beside a real server's 5432); 0 picks a free one. */
  port?: number | undefined;
  /** Simultaneous client connections accepted (default 100). */
  maxConnections?: number | undefined;
  log?: EmbeddedLog | undefined;
}

export interface EmbeddedPostgres {
  /** A pg / adapter-pg connection string for the single `postgres` database. */
  url: string;
  port: number;
  stop(): Promise<void>;
}

export const EMBEDDED_POSTGRES_DEFAULT_PORT = 5433;
const HOST = '127.0.0.1';

const lockedHere = new Set<string>();

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function acquireLock(dataDir: string): Promise<string> {
  const lockFile = `${dataDir}.lock`;
  if (lockedHere.has(lockFile)) {
    throw new Error(`The embedded PostgreSQL data directory ${dataDir} is already open in this process`);
  }
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(lockFile, 'wx');
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      lockedHere.add(lockFile);
      return lockFile;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
      const holder = Number((await readFile(lockFile, 'utf8').catch(() => '')).trim());
      // Our own pid in the file is stale (a container restarted with the same pid): the set above
      // knows every directory this process really has open.
      if (holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw new Error(
          `The embedded PostgreSQL data directory ${dataDir} is in use by process ${holder} ` +
            `(lock file ${lockFile}). Stop that process, or give this one its own DATA_DIR or a DATABASE_URL.`,
          { cause: err },
        );
      }
      await rm(lockFile, { force: true });
    }
  }
}

function releaseLockSync(lockFile: string): void {
  lockedHere.delete(lockFile);
  try {
    unlinkSync(lockFile);
  } catch {
    // already gone
  }
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const log = opts.log ?? (() => {});
  const dataDir = path.resolve(opts.dataDir);
  const requestedPort = opts.port ?? EMBEDDED_POSTGRES_DEFAULT_PORT;
  const started = Date.now();

  await mkdir(path.dirname(dataDir), { recursive: true });
  const lockFile = await acquireLock(dataDir);
  const releaseOnExit = () => releaseLockSync(lockFile);
  process.once('exit', releaseOnExit);

  let db: PGlite | undefined;
  let server: PGLiteSocketServer | undefined;
  try {
    db = new PGlite({ dataDir });
    await db.waitReady;
    server = new PGLiteSocketServer({
      db,
      host: HOST,
      port: requestedPort,
      maxConnections: opts.maxConnections ?? 100,
    });
    server.addEventListener('error', (event) => {
      const detail = (event as CustomEvent<unknown>).detail;
      log(`embedded postgres: ${detail instanceof Error ? detail.message : String(detail)}`);
    });
    try {
      await server.start();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
        throw new Error(
          `The embedded PostgreSQL cannot listen on ${HOST}:${requestedPort}: the port is in use ` +
            `(another instance of the service? pass port 0 for a free port, or set DATABASE_URL)`,
          { cause: err },
        );
      }
      throw err;
    }
  } catch (err) {
    await db?.close().catch(() => {});
    process.removeListener('exit', releaseOnExit);
    releaseLockSync(lockFile);
    throw err;
  }

  // getServerConn() reports the port actually bound, which matters for port 0.
  const port = Number(server.getServerConn().split(':').pop());
  const url = `postgresql://postgres:postgres@${HOST}:${port}/postgres?sslmode=disable`;
  log(`embedded postgres: PGlite ${dataDir} serving ${HOST}:${port} (ready in ${Date.now() - started} ms)`);

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      try {
        await server.stop();
        // The socket handlers roll back an open transaction while detaching; let them finish first.
        await new Promise((resolve) => setImmediate(resolve));
        await db.close();
      } finally {
        process.removeListener('exit', releaseOnExit);
        releaseLockSync(lockFile);
      }
    })());

  return { url, port, stop };
}
