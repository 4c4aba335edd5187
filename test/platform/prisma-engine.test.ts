// The real Prisma CLI, driven through prisma/engine/schema-engine.mjs (the Wasm schema engine
// behind PRISMA_SCHEMA_ENGINE_BINARY), against a real PostgreSQL. Each test gets a fresh
// database and a temporary project: the fixture schema and migrations, a copy of the repo's
// prisma.config.ts, and symlinks to node_modules and prisma/engine, so the config resolves the
// engine exactly as it does in the repo.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, copyFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const FIXTURES = join(REPO, 'test', 'fixtures', 'prisma-engine');
const PRISMA_CLI = join(REPO, 'node_modules', 'prisma', 'build', 'index.js');
const ADMIN_URL = process.env.TEST_PG_ADMIN_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
const ADVISORY_LOCK_KEY = 72707369;
const TIMEOUT = { timeout: 60_000 };

const BASE_MIGRATIONS = ['20260101000000_init', '20260102000000_organisation_name_check', '20260103000000_normalise_organisation_name'];
const PENDING_MIGRATION = '20260104000000_organisation_slug';
const BROKEN_MIGRATION = '20260105000000_broken';

const createdDatabases = new Set<string>();
const createdDirectories = new Set<string>();

afterAll(async () => {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    for (const name of createdDatabases) {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
  for (const dir of createdDirectories) await rm(dir, { recursive: true, force: true });
}, 60_000);

// ---------------------------------------------------------------------------------------------
// Databases

function databaseUrl(name: string, password?: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  if (password !== undefined) url.password = password;
  return url.toString();
}

/** A database name for this run; created by the CLI (or createDatabase), dropped in afterAll. */
function newDatabaseName(label: string): string {
  const name = `prisma_engine_test_${label}_${randomBytes(4).toString('hex')}`;
  createdDatabases.add(name);
  return name;
}

async function createDatabase(label: string): Promise<string> {
  const name = newDatabaseName(label);
  await withClient(ADMIN_URL, (client) => client.query(`CREATE DATABASE "${name}"`));
  return databaseUrl(name);
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function query<T extends pg.QueryResultRow = Record<string, unknown>>(
  url: string,
  sql: string,
  values: unknown[] = [],
): Promise<T[]> {
  return withClient(url, async (client) => (await client.query<T>(sql, values)).rows);
}

async function tableNames(url: string): Promise<string[]> {
  const rows = await query<{ name: string }>(
    url,
    `SELECT table_schema || '.' || table_name AS name FROM information_schema.tables
     WHERE table_schema NOT IN ('pg_catalog', 'information_schema')`,
  );
  return rows.map((row) => row.name).sort();
}

async function shadowDatabaseNames(): Promise<string[]> {
  const rows = await query<{ datname: string }>(
    ADMIN_URL,
    `SELECT datname FROM pg_database WHERE datname LIKE 'prisma_migrate_shadow_db_%' ORDER BY 1`,
  );
  return rows.map((row) => row.datname);
}

async function appliedMigrations(url: string) {
  return query<{
    migration_name: string;
    checksum: string;
    finished_at: Date | null;
    rolled_back_at: Date | null;
    applied_steps_count: number;
  }>(
    url,
    `SELECT migration_name, checksum, finished_at, rolled_back_at, applied_steps_count
     FROM _prisma_migrations ORDER BY migration_name`,
  );
}

async function exists(url: string, relation: string): Promise<boolean> {
  const [row] = await query<{ oid: string | null }>(url, 'SELECT to_regclass($1)::text AS oid', [relation]);
  return row?.oid !== null && row?.oid !== undefined;
}

// ---------------------------------------------------------------------------------------------
// Projects and the CLI

interface Project {
  dir: string;
}

async function createProject(options: { schema?: string; migrations?: string[] } = {}): Promise<Project> {
  const dir = await mkdtemp(join(tmpdir(), 'prisma-engine-test-'));
  createdDirectories.add(dir);
  await symlink(join(REPO, 'node_modules'), join(dir, 'node_modules'), 'dir');
  await mkdir(join(dir, 'prisma', 'migrations'), { recursive: true });
  await symlink(join(REPO, 'prisma', 'engine'), join(dir, 'prisma', 'engine'), 'dir');
  await copyFile(join(REPO, 'prisma.config.ts'), join(dir, 'prisma.config.ts'));
  await useSchema({ dir }, options.schema ?? 'schema.prisma');
  await copyFile(join(FIXTURES, 'migrations', 'migration_lock.toml'), join(dir, 'prisma', 'migrations', 'migration_lock.toml'));
  for (const name of options.migrations ?? BASE_MIGRATIONS) await addMigration({ dir }, name);
  return { dir };
}

async function useSchema(project: Project, fixture: string): Promise<void> {
  await copyFile(join(FIXTURES, fixture), join(project.dir, 'prisma', 'schema.prisma'));
}

async function addMigration(project: Project, name: string): Promise<void> {
  const source = ['migrations', 'pending', 'broken'].map((folder) => join(FIXTURES, folder, name)).find((path) => existsSync(path));
  if (!source) throw new Error(`no fixture migration ${name}`);
  await cp(source, join(project.dir, 'prisma', 'migrations', name), { recursive: true });
}

async function migrationDirectories(project: Project): Promise<string[]> {
  const entries = await readdir(join(project.dir, 'prisma', 'migrations'), { withFileTypes: true });
  return entries
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  output: string;
}

interface CliOptions {
  databaseUrl?: string;
  shadowDatabaseUrl?: string;
}

function prisma(project: Project, args: string[], options: CliOptions = {}): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // The copied prisma.config.ts must be the one choosing the engine, and only this test's
  // database may be reachable.
  delete env.PRISMA_SCHEMA_ENGINE_BINARY;
  delete env.DATABASE_URL;
  delete env.SHADOW_DATABASE_URL;
  if (options.databaseUrl) env.DATABASE_URL = options.databaseUrl;
  if (options.shadowDatabaseUrl) env.SHADOW_DATABASE_URL = options.shadowDatabaseUrl;
  Object.assign(env, { CHECKPOINT_DISABLE: '1', PRISMA_HIDE_UPDATE_MESSAGE: '1', NO_COLOR: '1', FORCE_COLOR: '0' });

  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [PRISMA_CLI, ...args], { cwd: project.dir, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code, stdout, stderr, output: `${stdout}\n${stderr}` }));
  });
}

/** Runs a CLI command that must succeed, showing its output when it does not. */
async function prismaOk(project: Project, args: string[], options: CliOptions = {}): Promise<CliResult> {
  const result = await prisma(project, args, options);
  expect(result.code, `prisma ${args.join(' ')}\n${result.output}`).toBe(0);
  return result;
}

// ---------------------------------------------------------------------------------------------

describe('Prisma CLI through the Wasm schema engine', () => {
  it('migrate deploy applies the migrations to an empty database and records their checksums', TIMEOUT, async () => {
    const url = await createDatabase('deploy');
    const project = await createProject();

    const deploy = await prismaOk(project, ['migrate', 'deploy'], { databaseUrl: url });
    expect(deploy.stdout).toContain('The following migration(s) have been applied');

    const applied = await appliedMigrations(url);
    expect(applied.map((row) => row.migration_name)).toEqual(BASE_MIGRATIONS);
    for (const row of applied) {
      const script = await readFile(join(FIXTURES, 'migrations', row.migration_name, 'migration.sql'), 'utf8');
      expect(row.checksum).toBe(sha256(script));
      expect(row.finished_at).not.toBeNull();
      expect(row.rolled_back_at).toBeNull();
      expect(row.applied_steps_count).toBe(1);
    }
    expect(await exists(url, '"Organisation"')).toBe(true);

    const status = await prismaOk(project, ['migrate', 'status'], { databaseUrl: url });
    expect(status.stdout).toContain('Database schema is up to date!');
  });

  it('works inside the schema named by ?schema= in the URL', TIMEOUT, async () => {
    const url = new URL(await createDatabase('schema'));
    url.searchParams.set('schema', 'tenant');
    const project = await createProject();

    await prismaOk(project, ['migrate', 'deploy'], { databaseUrl: url.toString() });

    const tables = await tableNames(url.toString());
    expect(tables).toEqual(['tenant.Organisation', 'tenant._prisma_migrations']);
    const status = await prismaOk(project, ['migrate', 'status'], { databaseUrl: url.toString() });
    expect(status.stdout).toContain('Database schema is up to date!');
  });

  it('migrate reset --force drops everything and applies the migrations again', TIMEOUT, async () => {
    const url = await createDatabase('reset');
    const project = await createProject();
    await prismaOk(project, ['migrate', 'deploy'], { databaseUrl: url });
    await query(url, `INSERT INTO "Organisation" ("name") VALUES ('Before reset')`);
    await query(url, 'CREATE TABLE "Stray" ("id" INTEGER)');

    await prismaOk(project, ['migrate', 'reset', '--force'], { databaseUrl: url });

    expect(await exists(url, '"Stray"')).toBe(false);
    expect(await query(url, 'SELECT * FROM "Organisation"')).toEqual([]);
    const applied = await appliedMigrations(url);
    expect(applied.map((row) => row.migration_name)).toEqual(BASE_MIGRATIONS);
    expect(applied.every((row) => row.finished_at !== null)).toBe(true);
    const [row] = await query<{ name: string }>(url, `INSERT INTO "Organisation" ("name") VALUES ('  After reset  ') RETURNING "name"`);
    expect(row?.name).toBe('After reset');
  });

  it('migrate dev applies a pending migration, then creates and applies one for the schema change', TIMEOUT, async () => {
    // No database yet: the CLI asks the engine (`cli can-connect-to-database`, then
    // `cli create-database`) to create it.
    const url = databaseUrl(newDatabaseName('dev'));
    const project = await createProject();
    const deploy = await prismaOk(project, ['migrate', 'deploy'], { databaseUrl: url });
    expect(deploy.stdout).toMatch(/PostgreSQL database prisma_engine_test_dev_\w+ created/);

    // A teammate's migration arrives together with their schema change, and we add our own.
    await addMigration(project, PENDING_MIGRATION);
    await useSchema(project, 'schema-next.prisma');

    const dev = await prismaOk(project, ['migrate', 'dev', '--name', 'add_account'], { databaseUrl: url });
    expect(dev.stdout).toContain(PENDING_MIGRATION);
    expect(dev.stdout).toContain('have been created and applied from new schema changes');

    const created = (await migrationDirectories(project)).filter((name) => name.endsWith('_add_account'));
    expect(created).toHaveLength(1);
    expect(created[0]).toMatch(/^\d{14}_add_account$/);
    const script = await readFile(join(project.dir, 'prisma', 'migrations', created[0]!, 'migration.sql'), 'utf8');
    expect(script).toContain('CREATE TABLE "Account"');
    expect(script).not.toContain('"slug"'); // already in the pending migration

    const applied = await appliedMigrations(url);
    expect(applied.map((row) => row.migration_name)).toEqual([...BASE_MIGRATIONS, PENDING_MIGRATION, created[0]]);
    expect(applied.every((row) => row.finished_at !== null)).toBe(true);
    expect(await exists(url, '"Account"')).toBe(true);

    const again = await prismaOk(project, ['migrate', 'dev', '--name', 'nothing'], { databaseUrl: url });
    expect(again.stdout).toContain('Already in sync');
    expect((await migrationDirectories(project)).length).toBe(BASE_MIGRATIONS.length + 2);
  });

  it('applies a migration with $$-quoted plpgsql bodies, and db execute runs such scripts whole', TIMEOUT, async () => {
    const url = await createDatabase('dollar');
    const project = await createProject();
    await prismaOk(project, ['migrate', 'deploy'], { databaseUrl: url });

    const [inserted] = await query<{ name: string }>(url, `INSERT INTO "Organisation" ("name") VALUES ('  Acme  ') RETURNING "name"`);
    expect(inserted?.name).toBe('Acme'); // the trigger function ran
    const [count] = await query<{ total: string }>(url, 'SELECT organisation_count() AS total');
    expect(count?.total).toBe('1');

    const scriptPath = join(project.dir, 'script.sql');
    await writeFile(
      scriptPath,
      `CREATE FUNCTION organisation_names() RETURNS text LANGUAGE plpgsql AS $$
       DECLARE result text;
       BEGIN
         SELECT string_agg("name", ',') INTO result FROM "Organisation";
         RETURN result;
       END;
       $$;`,
    );
    await prismaOk(project, ['db', 'execute', '--file', scriptPath], { databaseUrl: url });
    const [names] = await query<{ names: string }>(url, 'SELECT organisation_names() AS names');
    expect(names?.names).toBe('Acme');
  });

  it('a failing migration leaves nothing behind and is reported as failed', TIMEOUT, async () => {
    const url = await createDatabase('failed');
    // Without the $$ migration, so that only atomicity decides the outcome.
    const before = BASE_MIGRATIONS.slice(0, 1);
    const project = await createProject({ migrations: [...before, BROKEN_MIGRATION] });

    const deploy = await prisma(project, ['migrate', 'deploy'], { databaseUrl: url });
    expect(deploy.code).not.toBe(0);
    // The statement before the error ran in the same transaction and was rolled back.
    expect(await exists(url, '"Leftover"')).toBe(false);
    expect(deploy.output).toContain('P3018');
    expect(deploy.output).toContain(BROKEN_MIGRATION);
    expect(deploy.output).toContain('syntax error');
    const applied = await appliedMigrations(url);
    expect(applied.map((row) => row.migration_name)).toEqual([...before, BROKEN_MIGRATION]);
    const broken = applied.find((row) => row.migration_name === BROKEN_MIGRATION);
    expect(broken?.finished_at).toBeNull();
    expect(broken?.rolled_back_at).toBeNull();

    const status = await prisma(project, ['migrate', 'status'], { databaseUrl: url });
    expect(status.code).not.toBe(0);
    expect(status.output).toMatch(/Following migrations? have failed/);
    expect(status.output).toContain(BROKEN_MIGRATION);
  });

  describe('the shadow database never touches the main database', () => {
    async function migratedWithSentinel(label: string) {
      const url = await createDatabase(label);
      const project = await createProject({ migrations: [...BASE_MIGRATIONS, PENDING_MIGRATION] });
      await prismaOk(project, ['migrate', 'deploy'], { databaseUrl: url });
      await query(url, `INSERT INTO "Organisation" ("name", "slug") VALUES ('Sentinel', 'sentinel')`);
      await useSchema(project, 'schema-next.prisma');
      return { url, project, tablesBefore: await tableNames(url) };
    }

    async function expectSentinelIntact(url: string) {
      expect(await query(url, 'SELECT "name", "slug" FROM "Organisation"')).toEqual([{ name: 'Sentinel', slug: 'sentinel' }]);
    }

    it('with a temporary shadow database (no SHADOW_DATABASE_URL)', TIMEOUT, async () => {
      const { url, project, tablesBefore } = await migratedWithSentinel('shadow_tmp');
      const shadowDatabasesBefore = await shadowDatabaseNames();

      await prismaOk(project, ['migrate', 'dev', '--name', 'add_account'], { databaseUrl: url });

      await expectSentinelIntact(url);
      // Only the new migration's table appeared: replaying the history (the shadow database's
      // job) would have failed on, or duplicated, the main database's objects.
      expect(await tableNames(url)).toEqual([...tablesBefore, 'public.Account'].sort());
      expect((await appliedMigrations(url)).length).toBe(BASE_MIGRATIONS.length + 2);
      expect(await shadowDatabaseNames()).toEqual(shadowDatabasesBefore); // dropped afterwards
    });

    it('with SHADOW_DATABASE_URL, which is emptied and used instead', TIMEOUT, async () => {
      const { url, project, tablesBefore } = await migratedWithSentinel('shadow_cfg');
      const shadowUrl = await createDatabase('shadow_cfg_shadow');
      await query(shadowUrl, 'CREATE TABLE "Junk" ("id" INTEGER)');

      await prismaOk(project, ['migrate', 'dev', '--name', 'add_account'], {
        databaseUrl: url,
        shadowDatabaseUrl: shadowUrl,
      });

      await expectSentinelIntact(url);
      expect(await tableNames(url)).toEqual([...tablesBefore, 'public.Account'].sort());
      // The history was replayed in the shadow database (and never recorded there).
      expect(await exists(shadowUrl, '"Junk"')).toBe(false);
      expect(await exists(shadowUrl, '"Organisation"')).toBe(true);
      expect(await exists(shadowUrl, '_prisma_migrations')).toBe(false);
    });

    it('refuses a SHADOW_DATABASE_URL that is the main database', TIMEOUT, async () => {
      const { url, project, tablesBefore } = await migratedWithSentinel('shadow_same');
      const migrationsBefore = await migrationDirectories(project);

      const dev = await prisma(project, ['migrate', 'dev', '--name', 'add_account'], {
        databaseUrl: url,
        shadowDatabaseUrl: url,
      });

      expect(dev.code).not.toBe(0);
      expect(dev.output).toContain('same as the main database');
      await expectSentinelIntact(url);
      expect(await tableNames(url)).toEqual(tablesBefore);
      expect(await migrationDirectories(project)).toEqual(migrationsBefore);
    });
  });

  it('describes a database with CHECK constraints ("char" catalogue columns) without crashing', TIMEOUT, async () => {
    const url = await createDatabase('check');
    const project = await createProject();
    await prismaOk(project, ['migrate', 'deploy'], { databaseUrl: url });
    const [constraint] = await query<{ contype: string }>(
      url,
      `SELECT contype FROM pg_constraint WHERE conname = 'Organisation_name_not_blank'`,
    );
    expect(constraint?.contype).toBe('c');

    const pull = await prismaOk(project, ['db', 'pull', '--print'], { databaseUrl: url });
    expect(pull.stdout).toContain('model Organisation');
    expect(pull.output).toContain('Organisation_name_not_blank'); // listed as unsupported

    const fromDatabase = await prismaOk(
      project,
      ['migrate', 'diff', '--from-config-datasource', '--to-schema', 'prisma/schema.prisma', '--exit-code'],
      { databaseUrl: url },
    );
    expect(fromDatabase.stdout).toContain('No difference detected');

    const fromMigrations = await prismaOk(
      project,
      ['migrate', 'diff', '--from-migrations', 'prisma/migrations', '--to-schema', 'prisma/schema.prisma', '--script'],
      { databaseUrl: url },
    );
    expect(fromMigrations.stdout).toContain('This is an empty migration.');

    await useSchema(project, 'schema-next.prisma');
    const toNext = await prismaOk(
      project,
      ['migrate', 'diff', '--from-config-datasource', '--to-schema', 'prisma/schema.prisma', '--script'],
      { databaseUrl: url },
    );
    expect(toNext.stdout).toContain('CREATE TABLE "Account"');
  });

  it('prisma generate works without DATABASE_URL', TIMEOUT, async () => {
    const project = await createProject();
    const generate = await prismaOk(project, ['generate']);
    expect(generate.stdout).toContain('Generated Prisma Client');
    expect(existsSync(join(project.dir, 'generated', 'prisma', 'client.ts'))).toBe(true);
  });

  it('waits for the migration advisory lock held by another session', TIMEOUT, async () => {
    const url = await createDatabase('lock');
    const project = await createProject();
    await prismaOk(project, ['migrate', 'deploy'], { databaseUrl: url });
    await addMigration(project, PENDING_MIGRATION);

    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock($1)', [ADVISORY_LOCK_KEY]);
      const deploy = prisma(project, ['migrate', 'deploy'], { databaseUrl: url });
      // The CLI takes a few seconds to start (more on a busy machine): wait until it waits.
      let waiting: Array<{ count: string }> = [];
      for (let tries = 0; tries < 120 && waiting[0]?.count !== '1'; tries += 1) {
        await new Promise((resolveDelay) => setTimeout(resolveDelay, 250));
        waiting = await query<{ count: string }>(
          url,
          `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`,
          [ADVISORY_LOCK_KEY],
        );
      }
      expect(waiting[0]?.count).toBe('1');
      expect((await appliedMigrations(url)).map((row) => row.migration_name)).not.toContain(PENDING_MIGRATION);

      await holder.query('SELECT pg_advisory_unlock($1)', [ADVISORY_LOCK_KEY]);
      const result = await deploy;
      expect(result.code, result.output).toBe(0);
      expect((await appliedMigrations(url)).map((row) => row.migration_name)).toContain(PENDING_MIGRATION);
    } finally {
      await holder.end();
    }
  });

  it('reports connection failures with Prisma error codes and without the password', TIMEOUT, async () => {
    const project = await createProject();
    const password = `not-the-password-${randomBytes(4).toString('hex')}`;

    const badPassword = await prisma(project, ['migrate', 'status'], {
      databaseUrl: databaseUrl('postgres', password),
    });
    expect(badPassword.code).not.toBe(0);
    expect(badPassword.output).toContain('P1000');
    expect(badPassword.output).not.toContain(password);

    const unreachable = new URL(databaseUrl('postgres', password));
    unreachable.port = '1';
    const noServer = await prisma(project, ['migrate', 'status'], { databaseUrl: unreachable.toString() });
    expect(noServer.code).not.toBe(0);
    expect(noServer.output).toContain('P1001');
    expect(noServer.output).not.toContain(password);
  });
});
