import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/db/migrate.ts';
import { createTestDatabase, query, type TestDatabase } from '../support/db.ts';

const prismaCli = createRequire(import.meta.url).resolve('prisma/build/index.js');

function prisma(args: string[], databaseUrl: string) {
  const result = spawnSync(process.execPath, [prismaCli, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, CHECKPOINT_DISABLE: '1' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

const TABLES = [
  'organisations',
  'accounts',
  'people',
  'password_credentials',
  'users',
  'refresh_tokens',
  'identity_providers',
  'invitations',
  'roles',
  'role_assignments',
  'api_keys',
  'embed_sessions',
  'venues',
  'events',
  'event_occurrences',
  'ticket_types',
  'inventories',
  'sales_channels',
  'sales_channel_events',
  'channel_keys',
  'customers',
  'customer_login_codes',
  'sales_sessions',
  'carts',
  'cart_items',
  'orders',
  'order_line_items',
  'payments',
  'passes',
  'entitlements',
  'redemptions',
  'webhook_endpoints',
  'webhook_events',
  'webhook_deliveries',
  'webhook_attempts',
  'webhook_sequences',
  'outbox_messages',
  'rate_limit_windows',
  'throttles',
  'idempotency_keys',
  'periodic_tasks',
  'webhook_leases',
  'cost_budgets',
  'audit_entries',
  'live_events',
  'live_stream_places',
];

describe('the committed migrations', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase({ empty: true });
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('apply to an empty database and create the whole data model', async () => {
    const deploy = prisma(['migrate', 'deploy'], database.url);
    expect(deploy.output).toContain('successfully applied');
    expect(deploy.status).toBe(0);
    const rows = await query<{ table_name: string }>(
      database.url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'",
    );
    expect(rows.map((r) => r.table_name).sort()).toEqual([...TABLES, '_prisma_migrations'].sort());
    const status = prisma(['migrate', 'status'], database.url);
    expect(status.output).toContain('Database schema is up to date');
  });

  it('match prisma/schema.prisma exactly (no drift between the model and the migrations)', () => {
    const diff = prisma(
      ['migrate', 'diff', '--from-config-datasource', '--to-schema', 'prisma/schema.prisma', '--exit-code'],
      database.url,
    );
    expect(diff.output).toContain('No difference detected');
    expect(diff.status).toBe(0);
  });

  it('enforce the inventory invariant in the database itself', async () => {
    const orgId = 'org_test';
    await query(
      database.url,
      `INSERT INTO organisations (id, slug, name, "apiVersion", "updatedAt") VALUES ($1, 'inv', 'Inv', '2026-06-01', now())`,
      [orgId],
    );
    await query(database.url, `INSERT INTO accounts (id, "organisationId", name, "updatedAt") VALUES ('acc_1', $1, 'A', now())`, [orgId]);
    await query(
      database.url,
      `INSERT INTO events (id, "organisationId", "accountId", name, timezone, "updatedAt") VALUES ('evt_1', $1, 'acc_1', 'E', 'UTC', now())`,
      [orgId],
    );
    await query(
      database.url,
      `INSERT INTO event_occurrences (id, "organisationId", "accountId", "eventId", "startsAt", timezone, "updatedAt") VALUES ('eoc_1', $1, 'acc_1', 'evt_1', now(), 'UTC', now())`,
      [orgId],
    );
    await query(
      database.url,
      `INSERT INTO ticket_types (id, "organisationId", "accountId", "eventId", name, "priceAmount", currency, "updatedAt") VALUES ('tkt_1', $1, 'acc_1', 'evt_1', 'GA', 1000, 'EUR', now())`,
      [orgId],
    );
    await query(
      database.url,
      `INSERT INTO inventories ("organisationId", "ticketTypeId", "occurrenceId", capacity, held, sold, "updatedAt") VALUES ($1, 'tkt_1', 'eoc_1', 2, 1, 1, now())`,
      [orgId],
    );
    await expect(query(database.url, `UPDATE inventories SET held = held + 1 WHERE "ticketTypeId" = 'tkt_1'`)).rejects.toThrow(
      /inventories_counts_check/,
    );
    await expect(
      query(
        database.url,
        `INSERT INTO ticket_types (id, "organisationId", "accountId", "eventId", name, "priceAmount", currency, "updatedAt") VALUES ('tkt_2', $1, 'acc_1', 'evt_1', 'GA', -1, 'EUR', now())`,
        [orgId],
      ),
    ).rejects.toThrow(/ticket_types_money_check/);
  });

  it('`migrate reset` drops everything and re-applies', async () => {
    await query(database.url, 'CREATE TABLE scratch (id int)');
    const reset = prisma(['migrate', 'reset', '--force'], database.url);
    expect(reset.status).toBe(0);
    const scratch = await query(database.url, "SELECT 1 FROM information_schema.tables WHERE table_name = 'scratch'");
    expect(scratch).toEqual([]);
    const organisations = await query<{ count: string }>(database.url, 'SELECT count(*) FROM organisations');
    expect(organisations[0]!.count).toBe('0');
    const applied = await query<{ migration_name: string; finished_at: Date | null }>(
      database.url,
      'SELECT migration_name, finished_at FROM _prisma_migrations',
    );
    expect(applied.length).toBeGreaterThan(0);
    expect(applied.every((row) => row.finished_at !== null)).toBe(true);
  });
});
