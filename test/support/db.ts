import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { watchStatements } from '../../src/db/client.ts';
import { appOf, type AppRef } from './app.ts';
import { databaseUrl, PG_ADMIN_URL } from './env.ts';

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A fresh database: a copy of the migrated template, or empty when `empty` is set. */
export async function createTestDatabase({ empty = false }: { empty?: boolean } = {}): Promise<TestDatabase> {
  const name = `tks_t_${randomBytes(6).toString('hex')}`;
  await withAdmin((client) =>
    client.query(empty ? `CREATE DATABASE "${name}"` : `CREATE DATABASE "${name}" TEMPLATE "${inject('templateDatabase')}"`),
  );
  return {
    name,
    url: databaseUrl(name),
    drop: () => withAdmin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  };
}

/** Rows of one SQL statement, on a database URL or on a test app's database. */
export async function query<T extends pg.QueryResultRow>(target: string | AppRef, text: string, values: unknown[] = []): Promise<T[]> {
  const url = typeof target === 'string' ? target : (typeof target === 'function' ? target() : target).database.url;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/**
 * The statements the app sends for the request `requestId` from now on, grouped into round trips:
 * statements sent in one turn of the event loop leave in one write and are answered together
 * (src/db/sql.ts's pipeline), and a statement sent after an answer starts the next. Each is its
 * text on one line, cut at 60 characters. `stop` ends the watch.
 */
export function watchRoundTrips(app: AppRef, requestId: string): { turns: string[][]; stop: () => void } {
  const turns: string[][] = [];
  let open = false;
  const stop = watchStatements(appOf(app).runtime.db, ({ text, requestId: id }) => {
    if (id !== requestId) return;
    if (!open) {
      open = true;
      turns.push([]);
      setImmediate(() => (open = false));
    }
    turns.at(-1)!.push(text.replace(/\s+/g, ' ').trim().slice(0, 60));
  });
  return { turns, stop };
}
