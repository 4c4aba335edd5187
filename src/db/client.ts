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
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 10_000 });
  const adapter = new PrismaPg(pool, { disposeExternalPool: true });
  const db = new PrismaClient({ adapter });
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
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'P2002';
}
