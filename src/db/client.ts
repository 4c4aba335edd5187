import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../generated/prisma/client.ts';

export type Database = PrismaClient;

export interface DatabaseOptions {
  url: string;
  poolSize: number;
}

/** The connection pool under each client: Prisma and the hand-written statements of src/db/sql.ts share it. */
const pools = new WeakMap<Database, pg.Pool>();

export function createDatabase({ url, poolSize }: DatabaseOptions): Database {
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
  const adapter = new PrismaPg(pool, { disposeExternalPool: true });
  // A transaction waits for a pooled connection as long as any query does (connectionTimeoutMillis),
  // not Prisma's default 2 s: under an on-sale's burst the pool is busy, not broken. Past that the
  // request answers 503 with Retry-After (P2028, src/errors.ts), never 500.
  const db = new PrismaClient({ adapter, transactionOptions: { maxWait: 10_000, timeout: 15_000 } });
  pools.set(db, pool);
  return db;
}

/** The pool of a client made by createDatabase. */
export function poolOf(db: Database): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('this database client was not made by createDatabase');
  return pool;
}

/** The error Prisma raises on a unique-constraint violation. */
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && ['P2002', '23505'].includes((error as { code?: unknown }).code as string);
}
