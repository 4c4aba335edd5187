import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { watchStatements } from '../../src/db/client.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, customRole } from '../support/credentials.ts';
import { createAccount, createOrganisation, createStaffUser, graphql, systemRole, type TestOrganisation } from '../support/fixtures.ts';

/**
 * The users screen of an admin frontend: `users` lists whom the caller may read (user(id:)'s rule,
 * as a list), filtered and searched; each user answers the roles they hold where the caller may see
 * them, and a role who holds it, without a statement per user.
 */

const app = useTestApp();
let org: TestOrganisation;
let second: { id: string };
let onSecond: Awaited<ReturnType<typeof createStaffUser>>;
let onFirst: Awaited<ReturnType<typeof createStaffUser>>;
let secondManager: Awaited<ReturnType<typeof createStaffUser>>;

const USERS = `query ($accountId: ID, $roleId: ID, $status: UserStatus, $search: String, $first: Int) {
  users(accountId: $accountId, roleId: $roleId, status: $status, search: $search, first: $first) {
    nodes { id email status roleAssignments { accountId account { id } role { id } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

type Listed = { id: string; email: string; status: string; roleAssignments: Array<{ accountId: string; role: { id: string } }> };
const ids = (nodes: Listed[]) => nodes.map((user) => user.id).sort();

beforeAll(async () => {
  org = await createOrganisation(app, 'users');
  second = await createAccount(app, org, 'Second');
  onFirst = await createStaffUser(app, org, [{ roleId: systemRole(org, 'viewer'), accountId: org.account.id }], 'first_100');
  onSecond = await createStaffUser(app, org, [{ roleId: systemRole(org, 'viewer'), accountId: second.id }], 'second');
  const reader = await customRole(app, org, ['role_assignments.read']);
  const eventsOnly = await customRole(app, org, ['events.read']);
  secondManager = await createStaffUser(
    app,
    org,
    [
      { roleId: reader.id, accountId: second.id },
      { roleId: eventsOnly.id, accountId: org.account.id },
    ],
    'manager',
  );
});

describe('users', () => {
  it('lists every user to an organisation admin, with the roles each holds, filtered by account, role, status and text', async () => {
    const all = await graphql(app, USERS, {}, asAdmin(org));
    expect(all.body.errors).toBeUndefined();
    const nodes = all.body.data.users.nodes as Listed[];
    expect(ids(nodes)).toEqual(expect.arrayContaining([onFirst.userId, onSecond.userId, secondManager.userId]));
    expect(nodes.find((user) => user.id === onSecond.userId)).toMatchObject({
      status: 'ACTIVE',
      roleAssignments: [{ accountId: second.id, role: { id: systemRole(org, 'viewer') } }],
    });

    const onAccount = await graphql(app, USERS, { accountId: second.id }, asAdmin(org));
    expect(ids(onAccount.body.data.users.nodes)).toEqual([onSecond.userId, secondManager.userId].sort());
    const viewersOfSecond = await graphql(app, USERS, { accountId: second.id, roleId: systemRole(org, 'viewer') }, asAdmin(org));
    expect(ids(viewersOfSecond.body.data.users.nodes)).toEqual([onSecond.userId]);

    // LIKE's wildcards are literal: "_" matches an underscore only, "%" nothing here.
    const searched = await graphql(app, USERS, { search: 'FIRST_100' }, asAdmin(org));
    expect(ids(searched.body.data.users.nodes)).toEqual([onFirst.userId]);
    const wildcard = await graphql(app, USERS, { search: '%' }, asAdmin(org));
    expect(ids(wildcard.body.data.users.nodes)).toEqual([]);

    const invited = await graphql(
      app,
      `
        mutation ($input: CreateInvitationInput!) {
          createInvitation(input: $input) {
            invitation {
              userId
            }
          }
        }
      `,
      {
        input: {
          organisationId: org.organisation.id,
          email: `invitee-${randomBytes(3).toString('hex')}@users.test`,
          roleIds: [systemRole(org, 'viewer')],
          accountId: org.account.id,
        },
      },
      asAdmin(org),
    );
    const pending = await graphql(app, USERS, { status: 'PENDING' }, asAdmin(org));
    expect(ids(pending.body.data.users.nodes)).toEqual([invited.body.data.createInvitation.invitation.userId]);
  });

  it('shows a caller who reads role assignments on one account only the users holding a role there, and their roles there', async () => {
    const res = await graphql(app, USERS, {}, { token: secondManager.token, org: org.slug });
    expect(res.body.errors).toBeUndefined();
    const nodes = res.body.data.users.nodes as Listed[];
    expect(ids(nodes)).toEqual([onSecond.userId, secondManager.userId].sort());
    // Roles only where the caller may read role assignments, their own too: one on an account they
    // may not read would null them, and the list with them (their roles everywhere: myRoles).
    expect(nodes.find((user) => user.id === secondManager.userId)!.roleAssignments.map((a) => a.accountId)).toEqual([second.id]);
    expect(nodes.find((user) => user.id === onSecond.userId)!.roleAssignments.map((a) => a.accountId)).toEqual([second.id]);
    // The list agrees with user(id:): a user it leaves out does not exist for this caller.
    const one = await graphql(
      app,
      'query ($id: ID!) { user(id: $id) { id } }',
      { id: onFirst.userId },
      {
        token: secondManager.token,
        org: org.slug,
      },
    );
    expect(one.body.errors[0].extensions.code).toBe('NOT_FOUND');

    const eventsReader = await createStaffUser(app, org, [
      { roleId: (await customRole(app, org, ['events.read'])).id, accountId: second.id },
    ]);
    const none = await graphql(app, USERS, {}, { token: eventsReader.token, org: org.slug });
    expect(none.body.data.users).toBeNull();
    expect(none.body.errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('answers the signed-in person as the user of this organisation, with their roles where they may read role assignments', async () => {
    const res = await graphql(
      app,
      '{ viewer { id status roleAssignments { accountId account { id } } } }',
      {},
      { token: secondManager.token, org: org.slug },
    );
    expect(res.body.data.viewer).toEqual({
      id: secondManager.userId,
      status: 'ACTIVE',
      roleAssignments: [{ accountId: second.id, account: { id: second.id } }],
    });
  });

  it('answers a role who holds it', async () => {
    const res = await graphql(
      app,
      'query ($id: ID!) { role(id: $id) { assignments(first: 50) { nodes { user { id } accountId } } } }',
      { id: systemRole(org, 'viewer') },
      asAdmin(org),
    );
    expect(res.body.errors).toBeUndefined();
    const holders = res.body.data.role.assignments.nodes.map(
      (a: { user: { id: string }; accountId: string }) => `${a.user.id} ${a.accountId}`,
    );
    expect(holders).toEqual(expect.arrayContaining([`${onFirst.userId} ${org.account.id}`, `${onSecond.userId} ${second.id}`]));
  });

  it('reads the roles of a page of users in one statement, however many users it holds', async () => {
    const count = async (first: number) => {
      await graphql(app, '{ me { id } }', {}, asAdmin(org));
      const requestId = `users-${randomBytes(6).toString('hex')}`;
      let sent = 0;
      const stop = watchStatements(app().runtime.db, (statement) => {
        if (statement.requestId === requestId) sent += 1;
      });
      try {
        const res = await graphql(app, USERS, { first }, { ...asAdmin(org), headers: { 'x-request-id': requestId } });
        expect(res.body.data.users.nodes).toHaveLength(first);
        return sent;
      } finally {
        stop();
      }
    };
    expect(await count(4)).toBe(await count(1));
  });
});

/** An invitation of a new email address: its id, its pending user's, and the address. */
async function invite() {
  const email = `invitee-${randomBytes(3).toString('hex')}@example.com`;
  const invited = await graphql(
    app,
    'mutation ($input: CreateInvitationInput!) { createInvitation(input: $input) { invitation { id user { id } } } }',
    { input: { organisationId: org.organisation.id, email } },
    asAdmin(org),
  );
  return { ...(invited.body.data.createInvitation.invitation as { id: string; user: { id: string } }), email };
}

describe('mutations that change whose roles', () => {
  it('answer the user (and role) they changed, as they are now, for a cache to update', async () => {
    const person = await createStaffUser(app, org, [{ roleId: systemRole(org, 'viewer'), accountId: second.id }], 'changing');
    const replaced = await graphql(
      app,
      `
        mutation ($input: ReplaceRolesInput!) {
          replaceRoles(input: $input) {
            roleAssignments {
              id
            }
            user {
              id
              roleAssignments {
                role {
                  id
                }
              }
            }
            userErrors {
              code
            }
          }
        }
      `,
      { input: { userId: person.userId, accountId: second.id, roleIds: [systemRole(org, 'event_manager')] } },
      asAdmin(org),
    );
    expect(replaced.body.errors).toBeUndefined();
    const assignmentId = replaced.body.data.replaceRoles.roleAssignments[0].id as string;
    expect(replaced.body.data.replaceRoles.user).toEqual({
      id: person.userId,
      roleAssignments: [{ role: { id: systemRole(org, 'event_manager') } }],
    });

    const removed = await graphql(
      app,
      `
        mutation ($id: ID!) {
          removeRoleAssignment(id: $id) {
            deletedId
            user {
              id
              roleAssignments {
                id
              }
            }
            role {
              id
              assignments {
                totalCount
              }
            }
            userErrors {
              code
            }
          }
        }
      `,
      { id: assignmentId },
      asAdmin(org),
    );
    expect(removed.body.errors).toBeUndefined();
    expect(removed.body.data.removeRoleAssignment).toMatchObject({
      deletedId: assignmentId,
      user: { id: person.userId, roleAssignments: [] },
      role: { id: systemRole(org, 'event_manager') },
      userErrors: [],
    });
  });

  it('lead from a pending user to their open invitation, and list invitations by where they stand', async () => {
    const { id, user, email } = await invite();
    const pending = await graphql(
      app,
      `
        query ($search: String) {
          users(status: PENDING, search: $search) {
            nodes {
              id
              invitation {
                id
                status
              }
            }
          }
          active: users(status: ACTIVE, first: 1) {
            nodes {
              invitation {
                id
              }
            }
          }
        }
      `,
      { search: email },
      asAdmin(org),
    );
    expect(pending.body.errors).toBeUndefined();
    expect(pending.body.data.users.nodes).toEqual([{ id: user.id, invitation: { id, status: 'PENDING' } }]);
    expect(pending.body.data.active.nodes).toEqual([{ invitation: null }]);

    const listed = async (status: string) => {
      const res = await graphql(
        app,
        'query ($status: InvitationStatus) { invitations(status: $status, first: 100) { nodes { id } } }',
        { status },
        asAdmin(org),
      );
      return (res.body.data.invitations.nodes as Array<{ id: string }>).map((node) => node.id);
    };
    expect(await listed('PENDING')).toContain(id);
    expect(await listed('REDEEMED')).not.toContain(id);
    expect(await listed('EXPIRED')).not.toContain(id);
  });

  it('answer the pending user an invitation took with it', async () => {
    const { id, user } = await invite();
    const res = await graphql(
      app,
      'mutation ($id: ID!) { deleteInvitation(id: $id) { deletedId deletedUserId userErrors { code } } }',
      { id },
      asAdmin(org),
    );
    expect(res.body.data.deleteInvitation).toEqual({ deletedId: id, deletedUserId: user.id, userErrors: [] });
  });
});
