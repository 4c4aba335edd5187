import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, customRole, storedPermissions } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createAccount, createOrganisation, createStaffUser, graphql, tag, type TestOrganisation } from '../support/fixtures.ts';

/**
 * One tenant cannot make permission evaluation (run on every request) expensive.
 * Decided caps: permissionsPerRole 200, rolesPerUser 50 (one user, one organisation, all
 * accounts), idsPerRequest 100 (any array of ids in a body or GraphQL argument). A refused limit
 * answers 400 VALIDATION_FAILED with details [{path, message, limit, max}] and changes nothing.
 */

const app = useTestApp();
let org: TestOrganisation;

beforeAll(async () => {
  org = await createOrganisation(app, 'limits');
});

const admin = () => asAdmin(org);
const permissions = (n: number) => Array.from({ length: n }, (_, i) => `resource${i}.read`);

function expectLimit(res: { status: number; body: any }, limit: string, max: number, path?: string) {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
  expect(res.body.details).toEqual(
    expect.arrayContaining([expect.objectContaining({ limit, max, path: path ?? expect.any(String), message: expect.any(String) })]),
  );
}

describe('permissionsPerRole (200)', () => {
  it('refuses a role created with 201 permissions; 200 are accepted', async () => {
    const name = `Wide ${tag()}`;
    const res = await api(app, 'POST', '/v1/roles', { ...admin(), body: { name, permissions: permissions(201) } });
    expectLimit(res, 'permissionsPerRole', 200, 'permissions');
    expect(await query(app, 'SELECT id FROM roles WHERE name = $1', [name])).toEqual([]);

    const ok = await api(app, 'POST', '/v1/roles', { ...admin(), body: { name: `Exactly 200 ${tag()}`, permissions: permissions(200) } });
    expect(ok.status).toBe(201);
  });

  it('refuses a role changed to 10,000 permissions (the /me/permissions stall), leaving it as it was', async () => {
    const role = await customRole(app, org, ['events.read']);
    const res = await api(app, 'PATCH', `/v1/roles/${role.id}`, { ...admin(), body: { permissions: permissions(10_000) } });
    expectLimit(res, 'permissionsPerRole', 200, 'permissions');
    expect(await storedPermissions(app, role.id)).toEqual(['events.read']);
  });

  it('GraphQL createRole answers the same limit as a user error', async () => {
    const res = await graphql(
      app,
      'mutation($input: CreateRoleInput!) { createRole(input: $input) { role { id } userErrors { field code message } } }',
      { input: { name: `GraphQL wide ${tag()}`, permissions: permissions(201) } },
      admin(),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.createRole.role).toBeNull();
    expect(res.body.data.createRole.userErrors).toEqual(
      expect.arrayContaining([
        { field: ['input', 'permissions'], code: 'VALIDATION_FAILED', message: expect.stringMatching(/at most 200 permissions per role/) },
      ]),
    );
  });
});

describe('rolesPerUser (50, across the accounts of one organisation)', () => {
  it('refuses the 51st role of a user by assign, replace and invitation; nothing is added', async () => {
    const second = await createAccount(app, org, `Second ${tag()}`);
    const roles = [];
    for (let i = 0; i < 72; i += 1) roles.push(await customRole(app, org, [`resource${i}.read`], `Many ${tag()} ${i}`));
    const user = await createStaffUser(app, org, [], 'many-roles');
    await app().runtime.db.roleAssignment.createMany({
      data: roles.slice(0, 50).map((role, i) => ({
        id: newId('roleAssignment'),
        organisationId: org.organisation.id,
        userId: user.userId,
        accountId: i < 30 ? org.account.id : second.id,
        roleId: role.id,
      })),
    });
    const count = async () =>
      (await query<{ n: number }>(app, 'SELECT count(*)::int AS n FROM role_assignments WHERE "userId" = $1', [user.userId]))[0]!.n;
    expect(await count()).toBe(50);

    const assign = await api(app, 'POST', '/v1/user-account-roles', {
      ...admin(),
      body: { userId: user.userId, accountId: second.id, roleId: roles[50]!.id },
    });
    expectLimit(assign, 'rolesPerUser', 50);

    const replace = await api(app, 'PUT', '/v1/user-account-roles', {
      ...admin(),
      body: { userId: user.userId, accountId: second.id, roleIds: roles.slice(30, 51).map((r) => r.id) },
    });
    expectLimit(replace, 'rolesPerUser', 50);
    expect(await count()).toBe(50);

    const email = `many-${tag()}@limits.test`;
    const invitation = await api(app, 'POST', '/v1/user-invitations', {
      ...admin(),
      body: { organisationId: org.organisation.id, email, roleIds: roles.slice(0, 51).map((r) => r.id) },
    });
    expectLimit(invitation, 'rolesPerUser', 50);
    expect(await query(app, 'SELECT id FROM users WHERE email = $1', [email])).toEqual([]);
  });
});

describe('idsPerRequest (100)', () => {
  it('refuses 101 event ids in a sales channel (REST body and GraphQL argument); 100 are accepted', async () => {
    const events = Array.from({ length: 101 }, (_, i) => ({
      id: newId('event'),
      organisationId: org.organisation.id,
      accountId: org.account.id,
      name: `Event ${i}`,
      status: 'on_sale' as const,
      timezone: 'Europe/London',
    }));
    await app().runtime.db.event.createMany({ data: events });
    const ids = events.map((e) => e.id);

    const slug = `many-${tag()}`;
    const rest = await api(app, 'POST', '/v1/sales-channels', {
      ...admin(),
      body: { accountId: org.account.id, name: 'Many events', slug, sellsAllEvents: false, eventIds: ids },
    });
    expectLimit(rest, 'idsPerRequest', 100, 'eventIds');
    expect(await query(app, 'SELECT id FROM sales_channels WHERE slug = $1', [slug])).toEqual([]);

    const gql = await graphql(
      app,
      'mutation($input: CreateSalesChannelInput!) { createSalesChannel(input: $input) { salesChannel { id } userErrors { field code message } } }',
      { input: { accountId: org.account.id, name: 'Many events', slug: `gql-${slug}`, sellsAllEvents: false, eventIds: ids } },
      admin(),
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.createSalesChannel.salesChannel).toBeNull();
    const limited = rest.body.details.find((issue: { limit?: string }) => issue.limit === 'idsPerRequest');
    expect(gql.body.data.createSalesChannel.userErrors).toEqual(
      expect.arrayContaining([{ field: ['input', 'eventIds'], code: 'VALIDATION_FAILED', message: limited.message }]),
    );
    expect(await query(app, 'SELECT id FROM sales_channels WHERE slug = $1', [`gql-${slug}`])).toEqual([]);

    const hundred = await api(app, 'POST', '/v1/sales-channels', {
      ...admin(),
      body: { accountId: org.account.id, name: 'Hundred events', slug: `ok-${slug}`, sellsAllEvents: false, eventIds: ids.slice(0, 100) },
    });
    expect(hundred.status).toBe(201);
  });
});
