import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrateDeploy, REPO_ROOT } from '../src/db/migrate.ts';
import { ENSURE_TEMPORAL_HINT, findTemporalCli, startTemporalDevServer } from '../src/embedded/temporal.ts';
import { databaseUrl, PG_ADMIN_URL } from './support/env.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string;
    temporalAddress: string;
  }
}

interface Prepared {
  templateDatabase: string;
  temporal: Awaited<ReturnType<typeof startTemporalDevServer>>;
  users: number;
}

/** Shared by the projects of one run (vitest.config.ts), which each call the setup in this process. */
const shared = globalThis as typeof globalThis & { ticketingTestSetup?: Promise<Prepared> };

/**
 * Once per run: a migrated template database (named by a hash of the migrations, so it is reused
 * while they do not change) that each test file copies in ~0.1 s, and a real Temporal dev server.
 * Each project of the run (vitest.config.ts) is handed the same ones; the last to finish stops
 * the server.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  shared.ticketingTestSetup ??= prepare();
  const prepared = await shared.ticketingTestSetup;
  prepared.users += 1;
  project.provide('templateDatabase', prepared.templateDatabase);
  project.provide('temporalAddress', prepared.temporal.address);
  return async () => {
    prepared.users -= 1;
    if (prepared.users > 0) return;
    shared.ticketingTestSetup = undefined;
    await prepared.temporal.stop();
  };
}

async function prepare(): Promise<Prepared> {
  const templateDatabase = `tks_template_${migrationsHash()}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [templateDatabase]);
    if (!rowCount) {
      // Only a half-built copy of this very template is dropped: other templates and test databases
      // may belong to a run of another checkout on the same server (one with other migrations).
      await admin.query(`DROP DATABASE IF EXISTS "${templateDatabase}_building" WITH (FORCE)`);
      await admin.query(`CREATE DATABASE "${templateDatabase}_building"`);
      await migrateDeploy(databaseUrl(`${templateDatabase}_building`));
      await admin.query(`ALTER DATABASE "${templateDatabase}_building" RENAME TO "${templateDatabase}"`);
    }
  } finally {
    await admin.end();
  }

  const cliPath = await findTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH });
  if (!cliPath) throw new Error(`No temporal CLI for the test suite: ${ENSURE_TEMPORAL_HINT}`);
  const temporal = await startTemporalDevServer({ cliPath, uiPort: false });
  return { templateDatabase, temporal, users: 0 };
}

function migrationsHash(): string {
  const dir = path.join(REPO_ROOT, 'prisma', 'migrations');
  const hash = createHash('sha256');
  for (const entry of readdirSync(dir).sort()) {
    if (entry.endsWith('.toml')) continue;
    hash.update(entry);
    hash.update(readFileSync(path.join(dir, entry, 'migration.sql')));
  }
  return hash.digest('hex').slice(0, 12);
}
