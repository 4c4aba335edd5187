import { describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.ts';
import { useTestApp } from '../support/app.ts';
import { customRole } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, createStaffUser, systemRole, tag, type TestOrganisation } from '../support/fixtures.ts';

/**
 * An organisation never loses its last administrator (an active user holding
 * `*.*:all` through a non-deleted role). Every change that would leave none answers 409 CONFLICT
 * saying why; nothing changes and the administrator keeps working.
 */

const app = useTestApp();

const as = (org: TestOrganisation, token = org.adminToken) => ({ token, org: org.slug });

function expectLastAdminRefusal(res: { status: number; body: any }) {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status: 409, code: 'CONFLICT' });
  expect(res.body.error).toMatch(/last administrator/i);
}

/** Active users holding *.*:all through a role that is not deleted. */
async function administrators(org: TestOrganisation): Promise<string[]> {
  const rows = await query<{ id: string }>(
    app,
    `SELECT DISTINCT u.id FROM users u
       JOIN role_assignments ra ON ra."userId" = u.id
       JOIN roles r ON r.id = ra."roleId"
      WHERE u."organisationId" = $1 AND u.status = 'active' AND NOT r."isDeleted" AND '*.*:all' = ANY(r.permissions)`,
    [org.organisation.id],
  );
  return rows.map((r) => r.id).sort();
}

async function stillAdministers(org: TestOrganisation) {
  const res = await api(app, 'GET', '/v1/roles', as(org));
  expect(res.status).toBe(200);
  expect(await administrators(org)).toEqual([org.user.id]);
}

/** The organisation's only administrator holds a custom role with *.*:all instead of the system one. */
async function organisationRunByCustomRole() {
  const org = await createOrganisation(app, 'custom-owner');
  const owners = await customRole(app, org, ['*.*:all'], `Owners ${tag()}`);
  await app().runtime.db.roleAssignment.create({
    data: {
      id: newId('roleAssignment'),
      organisationId: org.organisation.id,
      userId: org.user.id,
      accountId: org.account.id,
      roleId: owners.id,
    },
  });
  await app().runtime.db.roleAssignment.delete({ where: { id: org.assignment.id } });
  return { org, owners };
}

describe('the last administrator', () => {
  it('PUT /v1/user-account-roles with roleIds [] on oneself: 409, and every staff request still works', async () => {
    const org = await createOrganisation(app, 'last-put');
    const res = await api(app, 'PUT', '/v1/user-account-roles', {
      ...as(org),
      body: { userId: org.user.id, accountId: org.account.id, roleIds: [] },
    });
    expectLastAdminRefusal(res);
    await stillAdministers(org);
  });

  it('DELETE /v1/user-account-roles/{id} of the last administrator: 409 (a pending invitee with the admin role does not count)', async () => {
    const org = await createOrganisation(app, 'last-delete');
    const invited = await api(app, 'POST', '/v1/user-invitations', {
      ...as(org),
      body: { organisationId: org.organisation.id, email: `pending-${tag()}@last.test`, roleIds: [systemRole(org, 'organisation_admin')] },
    });
    expect(invited.status).toBe(201);

    const res = await api(app, 'DELETE', `/v1/user-account-roles/${org.assignment.id}`, as(org));
    expectLastAdminRefusal(res);
    await stillAdministers(org);
  });

  it('PATCH /v1/roles/{id} taking *.*:all out of the only administrator role: 409, permissions unchanged', async () => {
    const { org, owners } = await organisationRunByCustomRole();
    const res = await api(app, 'PATCH', `/v1/roles/${owners.id}`, { ...as(org), body: { permissions: ['events.read:all'] } });
    expectLastAdminRefusal(res);
    const [role] = await query<{ permissions: string[] }>(app, 'SELECT permissions FROM roles WHERE id = $1', [owners.id]);
    expect(role!.permissions).toEqual(['*.*:all']);
    await stillAdministers(org);
  });

  it('DELETE /v1/roles/{id} of the only administrator role: 409, role and assignment kept', async () => {
    const { org, owners } = await organisationRunByCustomRole();
    const res = await api(app, 'DELETE', `/v1/roles/${owners.id}`, as(org));
    expectLastAdminRefusal(res);
    await stillAdministers(org);
  });

  it('two administrators removing each other at the same time: exactly one succeeds, one administrator remains', async () => {
    for (let round = 0; round < 5; round += 1) {
      const org = await createOrganisation(app, `last-race-${round}`);
      const second = await createStaffUser(
        app,
        org,
        [{ roleId: systemRole(org, 'organisation_admin'), accountId: org.account.id }],
        'admin2',
      );
      expect(await administrators(org)).toEqual([org.user.id, second.userId].sort());
      // Both are recognised administrators right before they race (their rights are loaded).
      for (const token of [org.adminToken, second.token]) expect((await api(app, 'GET', '/v1/roles', as(org, token))).status).toBe(200);

      const [first, other] = await Promise.all([
        api(app, 'DELETE', `/v1/user-account-roles/${second.assignments[0]!.id}`, as(org)),
        api(app, 'DELETE', `/v1/user-account-roles/${org.assignment.id}`, as(org, second.token)),
      ]);

      const statuses = [first.status, other.status].sort();
      expect(statuses[0], `round ${round}: ${JSON.stringify([first.body, other.body])}`).toBe(200);
      expect([403, 409], `round ${round}: ${JSON.stringify([first.body, other.body])}`).toContain(statuses[1]);
      expect(await administrators(org), `round ${round}`).toHaveLength(1);
    }
  });
});
