import pg from 'pg';
import { migrateDeploy } from '../src/db/migrate.ts';
import { databaseUrl, PG_ADMIN_URL } from '../test/support/env.ts';

/** A freshly migrated database `name` on the benchmark's PostgreSQL (TEST_PG_ADMIN_URL or the local server). */
export async function freshDatabase(name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = databaseUrl(name);
  await migrateDeploy(url);
  return url;
}
