import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createApiKey, customRole, storedPermissions } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import {
  api,
  createAccount,
  createOrganisation,
  createStaffUser,
  graphql,
  systemRole,
  tag,
  type TestOrganisation,
} from '../support/fixtures.ts';

/**
 * Nobody grants what they do not hold. Every operation that grants rights is
 * tried by a credential that holds the operation's own permission but not the rights it hands out.
 * Refusals: 403 FORBIDDEN for signed-in staff, 404 NOT_FOUND for API keys; nothing changes.
 */

const app = useTestApp();
let org: TestOrganisation;
let second: { id: string };

beforeAll(async () => {
  org = await createOrganisation(app, 'esc');
  second = await createAccount(app, org, 'Second account');
});

const as = (token: string) => ({ token, org: org.slug });
const outcome = (res: { status: number; body: any }) => ({ status: res.status, code: res.body?.code });

async function isOrgAdmin(token: string): Promise<boolean> {
  const res = await api(app, 'GET', '/v1/me/permissions', as(token));
  expect(res.status).toBe(200);
  return res.body.isOrgAdmin;
}

async function assignmentsOf(userId: string) {
  return query<{ roleId: string; accountId: string }>(
    app,
    'SELECT "roleId", "accountId" FROM role_assignments WHERE "userId" = $1 ORDER BY "roleId"',
    [userId],
  );
}

describe('editing a role one holds', () => {
  it('a holder of only roles.write:all cannot PATCH their own role to *.*:all (403, unchanged, not admin afterwards)', async () => {
    const editorRole = await customRole(app, org, ['roles.write:all', 'roles.read:all'], 'Role editors');
    const editor = await createStaffUser(app, org, [{ roleId: editorRole.id, accountId: org.account.id }], 'editor');
    expect(await isOrgAdmin(editor.token)).toBe(false);

    const res = await api(app, 'PATCH', `/v1/roles/${editorRole.id}`, { ...as(editor.token), body: { permissions: ['*.*:all'] } });

    expect(outcome(res)).toEqual({ status: 403, code: 'FORBIDDEN' });
    expect(await storedPermissions(app, editorRole.id)).toEqual(['roles.write:all', 'roles.read:all']);
    expect(await isOrgAdmin(editor.token)).toBe(false);
    expect((await api(app, 'GET', '/v1/user-invitations', as(editor.token))).status).toBe(403);
  });

  it('the same through GraphQL updateRole: FORBIDDEN on the permissions, no role, unchanged', async () => {
    const editorRole = await customRole(app, org, ['roles.write:all', 'roles.read:all']);
    const editor = await createStaffUser(app, org, [{ roleId: editorRole.id, accountId: org.account.id }], 'gqleditor');

    const res = await graphql(
      app,
      'mutation($id: ID!, $input: UpdateRoleInput!) { updateRole(id: $id, input: $input) { role { id permissions } userErrors { field code } } }',
      {
        id: editorRole.id,
        input: { permissions: ['roles.write:all', 'roles.read:all', 'api_keys.write:all', 'role_assignments.write:all'] },
      },
      as(editor.token),
    );

    // A form can mark the permissions it may not hand out.
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.updateRole).toEqual({ role: null, userErrors: [{ field: ['input', 'permissions'], code: 'FORBIDDEN' }] });
    expect(await storedPermissions(app, editorRole.id)).toEqual(['roles.write:all', 'roles.read:all']);
  });
});

describe('creating a role', () => {
  it('refuses permissions the creator does not hold (:all, dynamic, another account), creates none of them', async () => {
    const editorRole = await customRole(app, org, ['roles.write:all', 'roles.read:all']);
    // Reads everything on the first account only (the Viewer role is dynamic: *.read there).
    const editor = await createStaffUser(
      app,
      org,
      [
        { roleId: editorRole.id, accountId: org.account.id },
        { roleId: systemRole(org, 'viewer'), accountId: org.account.id },
      ],
      'creator',
    );
    const attempts = [
      { name: `Everything ${tag()}`, permissions: ['*.*:all'] },
      { name: `Write events ${tag()}`, permissions: ['events.write'] },
      { name: `Read the second account ${tag()}`, permissions: [`events.read:${second.id}`] },
      { name: `Read all accounts ${tag()}`, permissions: ['events.read:all'] },
      { name: `Keys ${tag()}`, permissions: ['roles.read:all', 'api_keys.write:all'] },
    ];
    const answers = [];
    for (const body of attempts) answers.push(outcome(await api(app, 'POST', '/v1/roles', { ...as(editor.token), body })));

    expect(answers).toEqual(attempts.map(() => ({ status: 403, code: 'FORBIDDEN' })));
    const names = attempts.map((a) => a.name);
    expect(await query(app, 'SELECT name FROM roles WHERE name = ANY($1)', [names])).toEqual([]);

    // What the creator holds, it may put in a role: held on every account, or (dynamic) on one.
    const allowed = await api(app, 'POST', '/v1/roles', {
      ...as(editor.token),
      body: { name: `Readers ${tag()}`, permissions: ['roles.read:all', 'events.read', `events.read:${org.account.id}`] },
    });
    expect(allowed.status).toBe(201);
  });
});

describe('an organisation-wide API key with roles.write', () => {
  it("cannot turn another person's role into organisation admin (404, unchanged, the holder is not admin)", async () => {
    const doorRole = await customRole(app, org, ['passes.read'], 'Door staff');
    const holder = await createStaffUser(app, org, [{ roleId: doorRole.id, accountId: org.account.id }], 'door');
    const { key } = await createApiKey(app, org, ['roles.write', 'roles.read']);

    const res = await api(app, 'PATCH', `/v1/roles/${doorRole.id}`, { ...as(key), body: { permissions: ['*.*:all'] } });

    expect(outcome(res)).toEqual({ status: 404, code: 'NOT_FOUND' });
    expect(await storedPermissions(app, doorRole.id)).toEqual(['passes.read']);
    expect(await isOrgAdmin(holder.token)).toBe(false);
  });

  it('cannot create a role with rights beyond its scopes (404)', async () => {
    const { key } = await createApiKey(app, org, ['roles.write', 'roles.read']);
    const name = `Key-made ${tag()}`;
    const res = await api(app, 'POST', '/v1/roles', { ...as(key), body: { name, permissions: ['*.*:all'] } });
    expect(outcome(res)).toEqual({ status: 404, code: 'NOT_FOUND' });
    expect(await query(app, 'SELECT id FROM roles WHERE name = $1', [name])).toEqual([]);
  });
});

describe('a role is judged by its effect on every holder', () => {
  it('a role assigned on an account where the editor may not assign roles cannot be changed, even to rights the editor holds', async () => {
    const boxOffice = await customRole(app, org, ['events.read'], 'Box office (second)');
    const holder = await createStaffUser(app, org, [{ roleId: boxOffice.id, accountId: second.id }], 'boxoffice');
    // Holds the role's old and new permissions everywhere, but may assign roles on the first account only.
    const editorRole = await customRole(app, org, ['roles.write:all', 'roles.read:all', 'events.read:all', 'events.write:all']);
    const assigner = await customRole(app, org, ['role_assignments.write', 'role_assignments.read']);
    const editor = await createStaffUser(
      app,
      org,
      [
        { roleId: editorRole.id, accountId: org.account.id },
        { roleId: assigner.id, accountId: org.account.id },
      ],
      'scoped-editor',
    );

    const res = await api(app, 'PATCH', `/v1/roles/${boxOffice.id}`, {
      ...as(editor.token),
      body: { permissions: ['events.read', 'events.write'] },
    });

    expect(outcome(res)).toEqual({ status: 403, code: 'FORBIDDEN' });
    expect(await storedPermissions(app, boxOffice.id)).toEqual(['events.read']);
    const holderWrites = await api(app, 'GET', '/v1/me/permissions?resource=events&action=write', as(holder.token));
    expect(holderWrites.body.permissions).toEqual([]);
  });

  it("the editor must hold the role's OLD permissions on the holders' accounts too", async () => {
    const sales = await customRole(app, org, ['orders.read'], 'Order readers');
    await createStaffUser(app, org, [{ roleId: sales.id, accountId: org.account.id }], 'orders');
    // May assign roles everywhere and holds events.read everywhere, but not orders.read.
    const editorRole = await customRole(app, org, ['roles.write:all', 'roles.read:all', 'role_assignments.write:all', 'events.read:all']);
    const editor = await createStaffUser(app, org, [{ roleId: editorRole.id, accountId: org.account.id }], 'old-perms');

    const res = await api(app, 'PATCH', `/v1/roles/${sales.id}`, { ...as(editor.token), body: { permissions: ['events.read'] } });

    expect(outcome(res)).toEqual({ status: 403, code: 'FORBIDDEN' });
    expect(await storedPermissions(app, sales.id)).toEqual(['orders.read']);
  });

  it('deleting a role held by others needs the same rights as editing it (403, assignments kept)', async () => {
    const scanners = await customRole(app, org, ['passes.redeem', 'passes.read'], 'Scanners');
    const holder = await createStaffUser(app, org, [{ roleId: scanners.id, accountId: org.account.id }], 'scanner');
    const editorRole = await customRole(app, org, ['roles.write:all', 'roles.read:all']);
    const editor = await createStaffUser(app, org, [{ roleId: editorRole.id, accountId: org.account.id }], 'deleter');

    const res = await api(app, 'DELETE', `/v1/roles/${scanners.id}`, as(editor.token));

    expect(outcome(res)).toEqual({ status: 403, code: 'FORBIDDEN' });
    expect(await assignmentsOf(holder.userId)).toEqual([{ roleId: scanners.id, accountId: org.account.id }]);
    const [role] = await query<{ isDeleted: boolean }>(app, 'SELECT "isDeleted" FROM roles WHERE id = $1', [scanners.id]);
    expect(role!.isDeleted).toBe(false);
  });
});

describe('API keys that assign roles or invite are refused like every missing scope: 404, not 403', () => {
  it('an org-wide key with role_assignments.write cannot assign Organisation admin (404, nothing assigned)', async () => {
    const target = await createStaffUser(app, org, [], 'target');
    const { key } = await createApiKey(app, org, ['role_assignments.write', 'role_assignments.read']);

    const res = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(key),
      body: { userId: target.userId, accountId: org.account.id, roleId: systemRole(org, 'organisation_admin') },
    });

    expect(outcome(res)).toEqual({ status: 404, code: 'NOT_FOUND' });
    expect(await assignmentsOf(target.userId)).toEqual([]);
  });

  it('an org-wide key with invitations.write cannot invite someone as Organisation admin (404, nobody invited)', async () => {
    const { key } = await createApiKey(app, org, ['invitations.write', 'invitations.read']);
    const email = `invitee-${tag()}@esc.test`;

    const res = await api(app, 'POST', '/v1/user-invitations', {
      ...as(key),
      body: { organisationId: org.organisation.id, email, roleIds: [systemRole(org, 'organisation_admin')] },
    });

    expect(outcome(res)).toEqual({ status: 404, code: 'NOT_FOUND' });
    expect(await query(app, 'SELECT id FROM users WHERE email = $1', [email])).toEqual([]);
  });
});

describe('operations that already refused more than the caller holds (regression guards)', () => {
  it('API key scopes, embed session scopes and role assignments never exceed what the caller holds', async () => {
    const manager = await createStaffUser(app, org, [{ roleId: systemRole(org, 'event_manager'), accountId: org.account.id }], 'manager');
    const accountAdmin = await createStaffUser(app, org, [{ roleId: systemRole(org, 'account_admin'), accountId: second.id }], 'accadmin');

    const embed = await api(app, 'POST', '/v1/embed/sessions', {
      ...as(manager.token),
      body: { accountId: org.account.id, scopes: ['roles.write'] },
    });
    expect(outcome(embed)).toEqual({ status: 403, code: 'FORBIDDEN' });

    const { key } = await createApiKey(app, org, ['events.read'], { accountId: org.account.id });
    const keyEmbed = await api(app, 'POST', '/v1/embed/sessions', {
      ...as(key),
      body: { accountId: org.account.id, scopes: ['events.write'] },
    });
    expect(outcome(keyEmbed)).toEqual({ status: 404, code: 'NOT_FOUND' });

    const wideKey = await api(app, 'POST', '/v1/api-keys', { ...as(accountAdmin.token), body: { name: 'wide', scopes: ['events.read'] } });
    expect(outcome(wideKey)).toEqual({ status: 403, code: 'FORBIDDEN' });

    const escalate = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(accountAdmin.token),
      body: { userId: accountAdmin.userId, accountId: second.id, roleId: systemRole(org, 'organisation_admin') },
    });
    expect(outcome(escalate)).toEqual({ status: 403, code: 'FORBIDDEN' });

    const system = await api(app, 'PATCH', `/v1/roles/${systemRole(org, 'viewer')}`, {
      ...as(org.adminToken),
      body: { permissions: ['*.*:all'] },
    });
    expect(outcome(system)).toEqual({ status: 409, code: 'CONFLICT' });
  });
});
