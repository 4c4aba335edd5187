import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './support/app.ts';
import { api, createAccount, createOrganisation, createStaffUser, graphql, systemRole, type TestOrganisation } from './support/fixtures.ts';

let app: TestApp;
let org: TestOrganisation;
let other: TestOrganisation;
beforeAll(async () => {
  app = await startTestApp();
  [org, other] = await Promise.all([createOrganisation(app, 'roles'), createOrganisation(app, 'rolesother')]);
});
afterAll(async () => {
  await app?.stop();
});

const as = (token: string, o = org) => ({ token, org: o.slug });

describe('roles', () => {
  it('every organisation has the four system roles, listed first', async () => {
    const res = await api(app, 'GET', '/v1/roles', as(org.adminToken));
    expect(res.status).toBe(200);
    expect(res.body.roles.map((r: { name: string; isSystemRole: boolean }) => [r.name, r.isSystemRole])).toEqual([
      ['Organisation admin', true],
      ['Account admin', true],
      ['Event manager', true],
      ['Viewer', true],
    ]);
    expect(Object.keys(res.body.roles[0]).sort()).toEqual(
      ['createdAt', 'description', 'id', 'isDeleted', 'isSystemRole', 'name', 'organisationId', 'permissions', 'updatedAt'],
    );
  });

  it('custom roles: create (201, unwrapped), get, update, delete', async () => {
    const created = await api(app, 'POST', '/v1/roles', {
      ...as(org.adminToken),
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
    expect((await api(app, 'GET', `/v1/roles/${id}`, as(org.adminToken))).body.name).toBe('Scanner');
    const updated = await api(app, 'PATCH', `/v1/roles/${id}`, { ...as(org.adminToken), body: { description: null } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: 'Scanner', description: null, permissions: ['passes.redeem', 'passes.read:all'] });
    const removed = await api(app, 'DELETE', `/v1/roles/${id}`, as(org.adminToken));
    expect(removed.body).toEqual({ success: true, id });
    expect((await api(app, 'GET', `/v1/roles/${id}`, as(org.adminToken))).status).toBe(404);
  });

  it('refuses invalid permission strings with 400 naming the bad entry', async () => {
    const res = await api(app, 'POST', '/v1/roles', {
      ...as(org.adminToken),
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
      ...as(org.adminToken),
      body: { name: '', description: 'd'.repeat(501), permissions: [] },
    });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['description', 'name', 'permissions']);
    const unknown = await api(app, 'POST', '/v1/roles', { ...as(org.adminToken), body: { name: 'x', permissions: ['a.b'], colour: 'red' } });
    expect(unknown.status).toBe(400);
  });

  it('system roles cannot be modified or deleted (409)', async () => {
    const viewer = systemRole(org, 'viewer');
    const patch = await api(app, 'PATCH', `/v1/roles/${viewer}`, { ...as(org.adminToken), body: { name: 'Watcher' } });
    expect(patch.status).toBe(409);
    expect(patch.body.code).toBe('CONFLICT');
    expect((await api(app, 'DELETE', `/v1/roles/${viewer}`, as(org.adminToken))).status).toBe(409);
  });

  it('duplicate names are a conflict', async () => {
    const res = await api(app, 'POST', '/v1/roles', { ...as(org.adminToken), body: { name: 'viewer', permissions: ['a.b'] } });
    expect(res.status).toBe(409);
  });

  it("another organisation's role is 404, on every operation", async () => {
    const theirs = systemRole(other, 'viewer');
    expect((await api(app, 'GET', `/v1/roles/${theirs}`, as(org.adminToken))).status).toBe(404);
    const custom = await api(app, 'POST', '/v1/roles', { ...as(other.adminToken, other), body: { name: 'Theirs', permissions: ['a.b'] } });
    expect((await api(app, 'PATCH', `/v1/roles/${custom.body.id}`, { ...as(org.adminToken), body: { name: 'Mine' } })).status).toBe(404);
    expect((await api(app, 'DELETE', `/v1/roles/${custom.body.id}`, as(org.adminToken))).status).toBe(404);
    expect((await api(app, 'GET', `/v1/roles/${custom.body.id}`, as(other.adminToken, other))).body.name).toBe('Theirs');
  });

  it('a staff user without roles.read gets 403 FORBIDDEN', async () => {
    const viewer = await createStaffUser(app, org, [{ roleId: systemRole(org, 'viewer'), accountId: org.account.id }]);
    const res = await api(app, 'GET', '/v1/roles', as(viewer.token));
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('FORBIDDEN');
  });
});

describe('role assignments', () => {
  it('assign (201), list with filters and views, replace atomically, remove', async () => {
    const second = await createAccount(app, org);
    const staff = await createStaffUser(app, org, []);
    const viewer = systemRole(org, 'viewer');
    const manager = systemRole(org, 'event_manager');

    const assigned = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(org.adminToken),
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
      ...as(org.adminToken),
      body: { userId: staff.userId, accountId: second.id, roleId: viewer },
    });
    expect(duplicate.status).toBe(409);

    const byUser = await api(app, 'GET', `/v1/user-account-roles?userId=${staff.userId}`, as(org.adminToken));
    expect(byUser.body.assignments.map((a: { roleId: string }) => a.roleId)).toEqual([viewer]);
    const byAccount = await api(app, 'GET', `/v1/user-account-roles?accountId=${org.account.id}`, as(org.adminToken));
    expect(byAccount.body.assignments.every((a: { accountId: string }) => a.accountId === org.account.id)).toBe(true);

    const replaced = await api(app, 'PUT', '/v1/user-account-roles', {
      ...as(org.adminToken),
      body: { userId: staff.userId, accountId: second.id, roleIds: [manager] },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.assignments.map((a: { roleId: string }) => a.roleId)).toEqual([manager]);

    const failing = await api(app, 'PUT', '/v1/user-account-roles', {
      ...as(org.adminToken),
      body: { userId: staff.userId, accountId: second.id, roleIds: [viewer, 'rol_doesnotexist'] },
    });
    expect(failing.status).toBe(400);
    expect(failing.body.details).toEqual([{ path: 'roleIds.1', message: expect.any(String) }]);
    const unchanged = await api(app, 'GET', `/v1/user-account-roles?userId=${staff.userId}`, as(org.adminToken));
    expect(unchanged.body.assignments.map((a: { roleId: string }) => a.roleId)).toEqual([manager]);

    const removed = await api(app, 'DELETE', `/v1/user-account-roles/${replaced.body.assignments[0].id}`, as(org.adminToken));
    expect(removed).toMatchObject({ status: 200, body: { success: true } });
    expect((await api(app, 'GET', `/v1/user-account-roles?userId=${staff.userId}`, as(org.adminToken))).body.assignments).toEqual([]);
  });

  it('validates ids and names the fields', async () => {
    const res = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(org.adminToken),
      body: { userId: 'bob', accountId: 'acc_', roleId: 'rol_ok' },
    });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['accountId', 'userId']);
  });

  it('an account admin manages roles on their own account only, and cannot hand out more than they hold', async () => {
    const second = await createAccount(app, org, 'Admin-only account');
    const accountAdmin = await createStaffUser(app, org, [{ roleId: systemRole(org, 'account_admin'), accountId: second.id }]);
    const staff = await createStaffUser(app, org, []);

    const ok = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(accountAdmin.token),
      body: { userId: staff.userId, accountId: second.id, roleId: systemRole(org, 'viewer') },
    });
    expect(ok.status).toBe(201);

    const elsewhere = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(accountAdmin.token),
      body: { userId: staff.userId, accountId: org.account.id, roleId: systemRole(org, 'viewer') },
    });
    expect(elsewhere.status).toBe(403);

    const escalation = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(accountAdmin.token),
      body: { userId: staff.userId, accountId: second.id, roleId: systemRole(org, 'organisation_admin') },
    });
    expect(escalation.status).toBe(403);
    expect(escalation.body.error).toContain('*.*:all');

    const seen = await api(app, 'GET', '/v1/user-account-roles', as(accountAdmin.token));
    expect(seen.body.assignments.every((a: { accountId: string }) => a.accountId === second.id)).toBe(true);
  });

  it("another organisation's user, account, role or assignment cannot be used", async () => {
    const res = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(org.adminToken),
      body: { userId: other.user.id, accountId: other.account.id, roleId: systemRole(other, 'viewer') },
    });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['accountId', 'roleId', 'userId']);
    expect((await api(app, 'DELETE', `/v1/user-account-roles/${other.assignment.id}`, as(org.adminToken))).status).toBe(404);
    const theirs = await api(app, 'GET', `/v1/user-account-roles?userId=${other.user.id}`, as(org.adminToken));
    expect(theirs.body.assignments).toEqual([]);
  });

  it('granting and removing a role takes effect on the very next request (cached rights are forgotten)', async () => {
    const staff = await createStaffUser(app, org, []);
    expect((await api(app, 'GET', '/v1/roles', as(staff.token))).status).toBe(403);
    const granted = await api(app, 'POST', '/v1/user-account-roles', {
      ...as(org.adminToken),
      body: { userId: staff.userId, accountId: org.account.id, roleId: systemRole(org, 'organisation_admin') },
    });
    expect((await api(app, 'GET', '/v1/roles', as(staff.token))).status).toBe(200);
    await api(app, 'DELETE', `/v1/user-account-roles/${granted.body.assignment.id}`, as(org.adminToken));
    expect((await api(app, 'GET', '/v1/roles', as(staff.token))).status).toBe(403);
    const custom = await api(app, 'POST', '/v1/roles', { ...as(org.adminToken), body: { name: 'Role readers', permissions: ['roles.read:all'] } });
    await api(app, 'POST', '/v1/user-account-roles', {
      ...as(org.adminToken),
      body: { userId: staff.userId, accountId: org.account.id, roleId: custom.body.id },
    });
    expect((await api(app, 'GET', '/v1/roles', as(staff.token))).status).toBe(200);
    await api(app, 'PATCH', `/v1/roles/${custom.body.id}`, { ...as(org.adminToken), body: { permissions: ['events.read'] } });
    expect((await api(app, 'GET', '/v1/roles', as(staff.token))).status).toBe(403);
  });

  it('GraphQL answers the same data with the same refusals', async () => {
    const res = await graphql(app, '{ roleAssignments(userId: "' + org.user.id + '") { id role { name } account { id } } }', {}, as(org.adminToken));
    expect(res.body.data.roleAssignments).toEqual([{ id: org.assignment.id, role: { name: 'Organisation admin' }, account: { id: org.account.id } }]);
    const viewer = await createStaffUser(app, org, [{ roleId: systemRole(org, 'viewer'), accountId: org.account.id }]);
    const refused = await graphql(app, 'mutation { deleteRole(id: "rol_x") { success } }', {}, as(viewer.token));
    expect(refused.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });
});
