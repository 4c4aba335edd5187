import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';
import { logScope } from '../log.ts';

export type Database = PrismaClient;

export interface DatabaseOptions {
  url: string;
  poolSize: number;
  /** False: statements go unnamed (DATABASE_PREPARED_STATEMENTS; connections that share one session). */
  preparedStatements?: boolean;
}

/** The connection pool under each client: Prisma and the hand-written statements of src/db/sql.ts share it. */
const pools = new WeakMap<Database, pg.Pool>();

export function createDatabase({ url, poolSize, preparedStatements = true }: DatabaseOptions): Database {
  // plan_cache_mode: a named (prepared) statement of src/db/sql.ts runs its generic plan from the
  // first execution instead of PostgreSQL planning it again for each of its values, which it kept
  // doing for the sales path's statements (planning was a fifth of PostgreSQL's CPU in the
  // on-sale). Every such statement is tenant-scoped by "organisationId" = $1 and keyed by ids, so
  // the generic plan is the same index path; list reads measured the same either way. Prisma's
  // statements are unnamed, planned once with their values, and unaffected.
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: 10_000,
    options: '-c plan_cache_mode=force_generic_plan',
  });
  pool.on('connect', (client) => countStatements(pool, client, preparedStatements));
  // An idle connection the server ends (a failover, a restart, an administrator) is an 'error' of
  // the pool, which crashes the process where nobody listens; Prisma listens only once it has
  // connected, and the hand-written statements use the pool before that. The pool drops the
  // connection and opens another for the next statement (test/platform/database-outage.test.ts).
  pool.on('error', () => undefined);
  const adapter = new PrismaPg(pool, { disposeExternalPool: true });
  // A transaction waits for a pooled connection as long as any query does (connectionTimeoutMillis),
  // not Prisma's default 2 s: under an on-sale's burst the pool is busy, not broken. Past that the
  // request answers 503 with Retry-After (P2028, src/errors.ts), never 500.
  const db = new PrismaClient({ adapter, transactionOptions: { maxWait: 10_000, timeout: 15_000 } });
  pools.set(db, pool);
  return db;
}

/** A statement a pool sent, and the request (its id, src/log.ts logScope) it was sent for. */
export interface SentStatement {
  text: string;
  /** Its parameters as sent (`npm run bench`'s floor row sends the list statement again with them). */
  values: readonly unknown[] | undefined;
  requestId: string | undefined;
}

const statementWatchers = new WeakMap<pg.Pool, Set<(statement: SentStatement) => void>>();

/**
 * Unnames the statements `client` sends when prepared statements are off, and tells the watchers
 * of `pool` of every statement it sends (Prisma's, src/db/sql.ts's,
 * BEGIN and COMMIT alike): how test/catalogue/graph-connections.test.ts and `npm run bench` count
 * a request's statements. A statement is told in the request it was sent for, as long as the
 * pool had a connection free (a query that waited for one goes out in whichever request freed it).
 */
function countStatements(pool: pg.Pool, client: pg.PoolClient, preparedStatements: boolean): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    if (!preparedStatements && typeof args[0] === 'object' && args[0] !== null && 'name' in args[0]) {
      const { name: _name, ...unnamed } = args[0] as { name?: string };
      args[0] = unnamed;
    }
    const first = args[0] as string | { text?: string; values?: unknown[] };
    const text = typeof first === 'string' ? first : (first.text ?? '');
    const watchers = statementWatchers.get(pool);
    if (watchers?.size) {
      const statement = {
        text,
        values: typeof first === 'string' ? (Array.isArray(args[1]) ? (args[1] as unknown[]) : undefined) : first.values,
        requestId: logScope.getStore()?.requestId,
      };
      for (const watcher of watchers) watcher(statement);
    }
    const sent = query(...args);
    if (text === 'COMMIT') countCommit(sent);
    return sent;
  };
}

/** Counts a COMMIT that committed in the request it was sent for (LogScope.commits). */
function countCommit(sent: unknown): void {
  const scope = logScope.getStore();
  if (!scope || typeof (sent as Promise<unknown> | undefined)?.then !== 'function') return;
  (sent as Promise<{ command?: string } | undefined>).then(
    (result) => {
      if (result?.command === 'COMMIT') scope.commits = (scope.commits ?? 0) + 1;
    },
    () => undefined,
  );
}

/**
 * Transactions the request being served has committed so far: a fault after one of them came
 * after work that may have taken effect.
 */
export function commitsSoFar(): number {
  return logScope.getStore()?.commits ?? 0;
}

/** Calls `watcher` with every statement `db` sends from now on, until the answered function is called. */
export function watchStatements(db: Database, watcher: (statement: SentStatement) => void): () => void {
  const pool = poolOf(db);
  let watchers = statementWatchers.get(pool);
  if (!watchers) statementWatchers.set(pool, (watchers = new Set()));
  watchers.add(watcher);
  return () => watchers.delete(watcher);
}

/** The pool of a client made by createDatabase. */
export function poolOf(db: Database): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('this database client was not made by createDatabase');
  return pool;
}

const asides = new WeakMap<Database, pg.Pool>();
const closed = new WeakSet<Database>();

/**
 * One connection of its own beside `db`'s pool, opened when first asked for and closed after a
 * minute idle (longer than the renewals' interval, so a run of renewals keeps one connection):
 * for statements that keep running work alive (an Idempotency-Key's claim renewal,
 * src/http/idempotency.ts), which must go out while every pooled connection is busy with that very
 * work, waiting on a lock or on each other. Refused once `db` is closed.
 */
export function asideOf(db: Database): pg.Pool {
  if (closed.has(db)) throw new Error('this database client is closed');
  let aside = asides.get(db);
  if (!aside) {
    aside = new pg.Pool({
      connectionString: poolOf(db).options.connectionString,
      max: 1,
      idleTimeoutMillis: 60_000,
      connectionTimeoutMillis: 10_000,
      allowExitOnIdle: true,
    });
    // An idle connection the server ended is dropped and opened again on the next statement.
    aside.on('error', () => undefined);
    asides.set(db, aside);
  }
  return aside;
}

/** Closes `db`: its pool, and the connection aside when one was opened. */
export async function closeDatabase(db: Database): Promise<void> {
  closed.add(db);
  const aside = asides.get(db);
  asides.delete(db);
  await Promise.allSettled([db.$disconnect(), aside?.end()]);
}

/** The error Prisma raises on a unique-constraint violation. */
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && ['P2002', '23505'].includes((error as { code?: unknown }).code as string);
}

/**
 * Readies `db` for a process's first requests. Prisma compiles its query compiler (WebAssembly) at
 * its first query, and that first query runs its code for the first time: ~100-150 ms on two
 * cores, which the first request of a new API process waited for, and with it every request of an
 * on-sale's first burst that met the process then. The API does it before it listens. A database
 * that does not answer within `timeoutMs` is not waited for: requests then meet it as they would
 * have. Answers null once ready, else why not (the error, or that no answer came in time).
 */
export async function warmDatabase(db: Database, timeoutMs: number): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const warm = (async () => {
    await db.$connect();
    // A query of a shape requests send (an organisation by id), for no row: its plan is compiled and run once.
    await db.organisation.findFirst({ where: { id: '' }, select: { id: true } });
    return null;
  })().catch((error: unknown) => (error instanceof Error ? error.message : String(error)));
  const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs)));
  try {
    return await Promise.race([warm, late]);
  } finally {
    clearTimeout(timer);
  }
}
