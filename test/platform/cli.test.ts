import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../src/db/migrate.ts';
import { CURRENT_VERSION } from '../../src/versions.ts';
import { createTestDatabase, query, type TestDatabase } from '../support/db.ts';

const TSX = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx');

function cli(args: string[], env: Record<string, string>) {
  const result = spawnSync(TSX, ['src/cli/main.ts', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

describe('npm run cli -- bootstrap', () => {
  const args = [
    'bootstrap',
    '--org-slug',
    'acme',
    '--org-name',
    'Acme Tickets',
    '--email',
    'Owner@Acme.test',
    '--password',
    'long enough pw',
  ];

  it('creates the organisation, its system roles, an account and an administrator, and prints their ids', async () => {
    const result = cli(args, { DATABASE_URL: database.url });
    expect(result.stderr).not.toMatch(/error/i);
    expect(result.status).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed.organisation).toMatchObject({
      id: expect.stringMatching(/^org_/),
      slug: 'acme',
      name: 'Acme Tickets',
      apiVersion: CURRENT_VERSION,
    });
    expect(printed.account.id).toMatch(/^acc_/);
    expect(printed.user).toMatchObject({ id: expect.stringMatching(/^usr_/), email: 'owner@acme.test' });
    expect(printed.roles.map((r: { systemKey: string }) => r.systemKey).sort()).toEqual([
      'account_admin',
      'event_manager',
      'organisation_admin',
      'viewer',
    ]);

    const [org] = await query(database.url, 'SELECT * FROM organisations WHERE id = $1', [printed.organisation.id]);
    expect(org).toMatchObject({ slug: 'acme', name: 'Acme Tickets' });
    const roles = await query<{ isSystemRole: boolean; permissions: string[]; id: string }>(
      database.url,
      'SELECT * FROM roles WHERE "organisationId" = $1',
      [printed.organisation.id],
    );
    expect(roles).toHaveLength(4);
    expect(roles.every((r) => r.isSystemRole)).toBe(true);
    const [user] = await query<{ personId: string; status: string }>(database.url, 'SELECT * FROM users WHERE id = $1', [printed.user.id]);
    expect(user!.status).toBe('active');
    const [credential] = await query<{ passwordHash: string }>(
      database.url,
      'SELECT "passwordHash" FROM password_credentials WHERE "personId" = $1',
      [user!.personId],
    );
    expect(credential!.passwordHash).toMatch(/^\$argon2id\$/);
    expect(credential!.passwordHash).not.toContain('long enough pw');
    const assignments = await query<{ roleId: string; accountId: string }>(
      database.url,
      'SELECT * FROM role_assignments WHERE "userId" = $1',
      [printed.user.id],
    );
    const adminRole = roles.find((r) => r.permissions.includes('*.*:all'))!;
    expect(assignments).toEqual([expect.objectContaining({ roleId: adminRole.id, accountId: printed.account.id })]);
  });

  it('refuses the same slug a second time with a clear message, changing nothing', async () => {
    const before = await query<{ count: string }>(database.url, 'SELECT count(*) FROM roles');
    const result = cli(args, { DATABASE_URL: database.url });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('An organisation with slug "acme" already exists.');
    expect(result.stdout).toBe('');
    const after = await query<{ count: string }>(database.url, 'SELECT count(*) FROM roles');
    expect(after[0]!.count).toBe(before[0]!.count);
  });

  it('answers bad arguments with exit code 2 and a message naming them', () => {
    const missing = cli(['bootstrap', '--org-slug', 'x'], { DATABASE_URL: database.url });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('missing --org-name, --email, --password');

    const invalid = cli(['bootstrap', '--org-slug', 'Not A Slug', '--org-name', 'X', '--email', 'nope', '--password', 'short'], {
      DATABASE_URL: database.url,
    });
    expect(invalid.status).toBe(2);
    expect(invalid.stderr).toContain('--org-slug');
    expect(invalid.stderr).toContain('--email');
    expect(invalid.stderr).toContain('--password: at least 8 characters');

    const unknownFlag = cli(['bootstrap', '--frobnicate'], { DATABASE_URL: database.url });
    expect(unknownFlag.status).toBe(2);
    expect(unknownFlag.stderr).toContain('--frobnicate');

    const unknownCommand = cli(['frobnicate'], { DATABASE_URL: database.url });
    expect(unknownCommand.status).toBe(2);
    expect(unknownCommand.stderr).toContain('Unknown command "frobnicate"');
  });
});

describe('npm run cli -- migrate and mail list', () => {
  it('migrate is a no-op on an up-to-date database', () => {
    const result = cli(['migrate'], { DATABASE_URL: database.url });
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ migrated: true });
  });

  it('mail list prints the outbox as JSON, filtered by recipient', async () => {
    await query(
      database.url,
      `INSERT INTO outbox_messages (id, "to", subject, text) VALUES ('msg_1', 'a@x.test', 'Hi A', 'a'), ('msg_2', 'b@x.test', 'Hi B', 'b')`,
    );
    const result = cli(['mail', 'list', '--to', 'A@x.test'], { DATABASE_URL: database.url });
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([expect.objectContaining({ id: 'msg_1', to: 'a@x.test', subject: 'Hi A' })]);
  });
});
