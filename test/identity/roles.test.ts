import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { as, asAdmin, staffWithoutRights, staffWithRoles } from '../support/credentials.ts';
import { api, createAccount, createOrganisation, graphql, systemRole, type TestOrganisation } from '../support/fixtures.ts';

const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'roles'), createOrganisation(app, 'rolesother')]);
});

describe('roles', () => {
  it('every organisation has the four system roles, listed first', async () => {
    const res = await api(app, 'GET', '/v1/roles', asAdmin(org));
    expect(res.status).toBe(200);
    expect(res.body.roles.map((r: { name: string; isSystemRole: boolean }) => [r.name, r.isSystemRole])).toEqual([
      ['Organisation admin', true],
      ['Account admin', true],
      ['Event manager', true],
      ['Viewer', true],
    ]);
    expect(Object.keys(res.body.roles[0]).sort()).toEqual([
      'createdAt',
      'description',
      'id',
      'isDeleted',
      'isSystemRole',
      'name',
      'organisationId',
      'permissions',
      'updatedAt',
    ]);
  });

  it('custom roles: create (201, unwrapped), get, update, delete', async () => {
    const created = await api(app, 'POST', '/v1/roles', {
      ...asAdmin(org),
      body: { name: 'Scanner', description: 'Door staff', permissions: ['passes.redeem', 'passes.read:all'] },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^rol_/),
      organisationId: org.organisation.id,
      name: 'Scanner',
      description: 'Door staff',
      permissions: ['passes.redeem', 'passes.read:all'],
      isSystemRole: false,
      isDeleted: false,
    });
    const id = created.body.id;
    expect((await api(app, 'GET', `/v1/roles/${id}`, asAdmin(org))).body.name).toBe('Scanner');
    const updated = await api(app, 'PATCH', `/v1/roles/${id}`, { ...asAdmin(org), body: { description: null } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: 'Scanner', description: null, permissions: ['passes.redeem', 'passes.read:all'] });
    const removed = await api(app, 'DELETE', `/v1/roles/${id}`, asAdmin(org));
    expect(removed.body).toEqual({ success: true, id });
    expect((await api(app, 'GET', `/v1/roles/${id}`, asAdmin(org))).status).toBe(404);
  });

  it('refuses invalid permission strings with 400 naming the bad entry', async () => {
    const res = await api(app, 'POST', '/v1/roles', {
      ...asAdmin(org),
      body: { name: 'Bad', permissions: ['events.read', 'events.read:nowhere', 'x'] },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.details).toEqual([
      { path: 'permissions.1', message: expect.stringContaining('"events.read:nowhere"') },
      { path: 'permissions.2', message: expect.stringContaining('"x"') },
    ]);
  });

  it('enforces the limits: name 1-255, description <= 500, at least one permission, no unknown fields', async () => {
    const res = await api(app, 'POST', '/v1/roles', {
      ...asAdmin(org),
      body: { name: '', description: 'd'.repeat(501), permissions: [] },
    });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['description', 'name', 'permissions']);
    const unknown = await api(app, 'POST', '/v1/roles', { ...asAdmin(org), body: { name: 'x', permissions: ['a.b'], colour: 'red' } });
    expect(unknown.status).toBe(400);
  });

  it('system roles cannot be modified or deleted (409)', async () => {
    const viewer = systemRole(org, 'viewer');
    const patch = await api(app, 'PATCH', `/v1/roles/${viewer}`, { ...asAdmin(org), body: { name: 'Watcher' } });
    expect(patch.status).toBe(409);
    expect(patch.body.code).toBe('CONFLICT');
    expect((await api(app, 'DELETE', `/v1/roles/${viewer}`, asAdmin(org))).status).toBe(409);
  });

  it('duplicate names are a conflict', async () => {
    const res = await api(app, 'POST', '/v1/roles', { ...asAdmin(org), body: { name: 'viewer', permissions: ['a.b'] } });
    expect(res.status).toBe(409);
  });

  it("another organisation's role is 404, on every operation", async () => {
    const theirs = systemRole(other, 'viewer');
    expect((await api(app, 'GET', `/v1/roles/${theirs}`, asAdmin(org))).status).toBe(404);
    const custom = await api(app, 'POST', '/v1/roles', { ...asAdmin(other), body: { name: 'Theirs', permissions: ['a.b'] } });
    expect((await api(app, 'PATCH', `/v1/roles/${custom.body.id}`, { ...asAdmin(org), body: { name: 'Mine' } })).status).toBe(404);
    expect((await api(app, 'DELETE', `/v1/roles/${custom.body.id}`, asAdmin(org))).status).toBe(404);
    expect((await api(app, 'GET', `/v1/roles/${custom.body.id}`, asAdmin(other))).body.name).toBe('Theirs');
  });

  it('a staff user without roles.read gets 403 FORBIDDEN', async () => {
    const viewer = await staffWithRoles(app, org, ['viewer']);
    const res = await api(app, 'GET', '/v1/roles', as(viewer.token, org));
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('FORBIDDEN');
  });
});

describe('role assignments', () => {
  it('assign (201), list with filters and views, replace atomically, remove', async () => {
    const second = await createAccount(app, org);
    const staff = await staffWithoutRights(app, org);
    const viewer = systemRole(org, 'viewer');
    const manager = systemRole(org, 'event_manager');

    const assigned = await api(app, 'POST', '/v1/user-account-roles', {
      ...asAdmin(org),
      body: { userId: staff.userId, accountId: second.id, roleId: viewer },
    });
    expect(assigned.status).toBe(201);
    expect(assigned.body.assignment).toMatchObject({
      id: expect.stringMatching(/^uar_/),
      organisationId: org.organisation.id,
      userId: staff.userId,
      accountId: second.id,
      roleId: viewer,
      user: { id: staff.userId, email: staff.email, firstName: null, lastName: null },
      account: { id: second.id, name: 'Second account' },
      role: { id: viewer, name: 'Viewer', isSystemRole: true },
    });
    const duplicate = await api(app, 'POST', '/v1/user-account-roles', {
      ...asAdmin(org),
      body: { userId: staff.userId, accountId: second.id, roleId: viewer },
    });
    expect(duplicate.status).toBe(409);

    const byUser = await api(app, 'GET', `/v1/user-account-roles?userId=${staff.userId}`, asAdmin(org));
    expect(byUser.body.assignments.map((a: { roleId: string }) => a.roleId)).toEqual([viewer]);
    const byAccount = await api(app, 'GET', `/v1/user-account-roles?accountId=${org.account.id}`, asAdmin(org));
    expect(byAccount.body.assignments.every((a: { accountId: string }) => a.accountId === org.account.id)).toBe(true);

    const replaced = await api(app, 'PUT', '/v1/user-account-roles', {
      ...asAdmin(org),
      body: { userId: staff.userId, accountId: second.id, roleIds: [manager] },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.assignments.map((a: { roleId: string }) => a.roleId)).toEqual([manager]);

    const failing = await api(app, 'PUT', '/v1/user-account-roles', {
      ...asAdmin(org),
      body: { userId: staff.userId, accountId: second.id, roleIds: [viewer, 'rol_doesnotexist'] },
    });
    expect([failing.status, failing.body.code]).toEqual([404, 'NOT_FOUND']);
    expect(failing.body.details).toEqual([{ path: 'roleIds.1', message: expect.any(String) }]);
    const unchanged = await api(app, 'GET', `/v1/user-account-roles?userId=${staff.userId}`, asAdmin(org));
    expect(unchanged.body.assignments.map((a: { roleId: string }) => a.roleId)).toEqual([manager]);

    const removed = await api(app, 'DELETE', `/v1/user-account-roles/${replaced.body.assignments[0].id}`, asAdmin(org));
    expect(removed).toMatchObject({ status: 200, body: { success: true } });
    expect((await api(app, 'GET', `/v1/user-account-roles?userId=${staff.userId}`, asAdmin(org))).body.assignments).toEqual([]);
  });

  it('answers ids that name nothing of the organisation, whatever their form, with 404 naming the fields', async () => {
    const res = await api(app, 'POST', '/v1/user-account-roles', {
      ...asAdmin(org),
      body: { userId: 'bob', accountId: 'acc_', roleId: 'rol_ok' },
    });
    expect([res.status, res.body.code]).toEqual([404, 'NOT_FOUND']);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['accountId', 'roleId', 'userId']);
  });

  it('an account admin manages roles on their own account only, and cannot hand out more than they hold', async () => {
    const second = await createAccount(app, org, 'Admin-only account');
    const accountAdmin = await staffWithRoles(app, org, ['account_admin'], second.id);
    const staff = await staffWithoutRights(app, org);

    const ok = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(accountAdmin.token, org),
      body: { userId: staff.userId, accountId: second.id, roleId: systemRole(org, 'viewer') },
    });
    expect(ok.status).toBe(201);

    const elsewhere = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(accountAdmin.token, org),
      body: { userId: staff.userId, accountId: org.account.id, roleId: systemRole(org, 'viewer') },
    });
    expect(elsewhere.status).toBe(403);

    const escalation = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(accountAdmin.token, org),
      body: { userId: staff.userId, accountId: second.id, roleId: systemRole(org, 'organisation_admin') },
    });
    expect(escalation.status).toBe(403);
    expect(escalation.body.error).toContain('*.*:all');

    const seen = await api(app, 'GET', '/v1/user-account-roles', as(accountAdmin.token, org));
    expect(seen.body.assignments.every((a: { accountId: string }) => a.accountId === second.id)).toBe(true);
  });

  it("another organisation's user, account, role or assignment cannot be used", async () => {
    const res = await api(app, 'POST', '/v1/user-account-roles', {
      ...asAdmin(org),
      body: { userId: other.user.id, accountId: other.account.id, roleId: systemRole(other, 'viewer') },
    });
    expect([res.status, res.body.code]).toEqual([404, 'NOT_FOUND']);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['accountId', 'roleId', 'userId']);
    expect((await api(app, 'DELETE', `/v1/user-account-roles/${other.assignment.id}`, asAdmin(org))).status).toBe(404);
    const theirs = await api(app, 'GET', `/v1/user-account-roles?userId=${other.user.id}`, asAdmin(org));
    expect(theirs.body.assignments).toEqual([]);
  });

  it('granting and removing a role takes effect on the very next request (cached rights are forgotten)', async () => {
    const staff = await staffWithoutRights(app, org);
    expect((await api(app, 'GET', '/v1/roles', as(staff.token, org))).status).toBe(403);
    const granted = await api(app, 'POST', '/v1/user-account-roles', {
      ...asAdmin(org),
      body: { userId: staff.userId, accountId: org.account.id, roleId: systemRole(org, 'organisation_admin') },
    });
    expect((await api(app, 'GET', '/v1/roles', as(staff.token, org))).status).toBe(200);
    await api(app, 'DELETE', `/v1/user-account-roles/${granted.body.assignment.id}`, asAdmin(org));
    expect((await api(app, 'GET', '/v1/roles', as(staff.token, org))).status).toBe(403);
    const custom = await api(app, 'POST', '/v1/roles', {
      ...asAdmin(org),
      body: { name: 'Role readers', permissions: ['roles.read:all'] },
    });
    await api(app, 'POST', '/v1/user-account-roles', {
      ...asAdmin(org),
      body: { userId: staff.userId, accountId: org.account.id, roleId: custom.body.id },
    });
    expect((await api(app, 'GET', '/v1/roles', as(staff.token, org))).status).toBe(200);
    await api(app, 'PATCH', `/v1/roles/${custom.body.id}`, { ...asAdmin(org), body: { permissions: ['events.read'] } });
    expect((await api(app, 'GET', '/v1/roles', as(staff.token, org))).status).toBe(403);
  });

  it('GraphQL answers the same data with the same refusals', async () => {
    const res = await graphql(
      app,
      '{ roleAssignments(userId: "' + org.user.id + '") { nodes { id role { name } account { id } } } }',
      {},
      asAdmin(org),
    );
    expect(res.body.data.roleAssignments.nodes).toEqual([
      { id: org.assignment.id, role: { name: 'Organisation admin' }, account: { id: org.account.id } },
    ]);
    const viewer = await staffWithRoles(app, org, ['viewer']);
    const refused = await graphql(app, 'mutation { deleteRole(id: "rol_x") { deletedId } }', {}, as(viewer.token, org));
    expect(refused.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });
});
