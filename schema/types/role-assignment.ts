import {
  assignmentsOfUser,
  assignRole,
  assignRoleInput,
  listRoleAssignments,
  removeRoleAssignment,
  replaceRoles,
  replaceRolesInput,
} from '../../src/services/role-assignments.ts';
import type { RequestContext } from '../../src/context.ts';
import type { Account as AccountRow, Role as RoleRow } from '../../src/generated/prisma/client.ts';
import { getRoleAssignment } from '../../src/services/role-assignments.ts';
import { missingRight } from '../../src/auth/refusal.ts';
import { AppError } from '../../src/errors.ts';
import { LIMITS } from '../../src/limits/limits.ts';
import { builder } from '../builder.ts';
import { Account } from './account.ts';
import { Role } from './role.ts';
import { User, type UserRow } from './user.ts';
import { Node } from '../node.ts';
import { organisationRelation } from './organisation.ts';
import { inputFrom } from '../input.ts';
import { answer, deleted, deletePayload, payload } from '../payload.ts';
import { related, relatedUser } from '../../src/services/related.ts';
import { pageArgsFor, pagedConnection, updatedSinceArg } from '../pagination.ts';

const READ = { $all: { organisation: true, permission: 'role_assignments.read' } } as const;
const WRITE = { $all: { organisation: true, permission: 'role_assignments.write' } } as const;

interface AssignmentView {
  id: string;
  organisationId: string;
  userId: string;
  accountId: string;
  roleId: string;
  createdAt: Date;
  user: UserRow;
  account: AccountRow;
  role: RoleRow;
}

export const RoleAssignment = builder.objectRef<AssignmentView>('RoleAssignment').implement({
  interfaces: [Node],
  description: 'A role granted to a user on one account (uar_).',
  authScopes: (assignment, ctx) =>
    ctx.access.allows('role_assignments', 'read', assignment.accountId) ||
    ctx.access.allows('role_assignments', 'write', assignment.accountId) ||
    isOwnAssignment(ctx, assignment),
  fields: (t) => ({
    organisationId: t.exposeID('organisationId', { description: 'Organisation.' }),
    organisation: t.field(organisationRelation()),
    userId: t.exposeID('userId', { description: 'User id inside the organisation.' }),
    accountId: t.exposeID('accountId', { description: 'Account the role applies to.' }),
    roleId: t.exposeID('roleId', { description: 'Role.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was granted.' }),
    user: t.field({ type: User, description: 'The user.', resolve: (a) => a.user }),
    account: t.field({
      type: Account,
      description: 'The account (readable wherever you may read its role assignments).',
      resolve: (a) => a.account,
    }),
    role: t.field({ type: Role, description: 'The role (readable wherever you may read role assignments).', resolve: (a) => a.role }),
  }),
});

const AssignRoleInput = inputFrom('AssignRoleInput', assignRoleInput, {
  description: 'A role to grant to a user on an account.',
  fields: {
    userId: 'usr_ id of the user inside the organisation.',
    accountId: 'acc_ id.',
    roleId: 'rol_ id of a system or custom role.',
  },
});

const ReplaceRolesInput = inputFrom('ReplaceRolesInput', replaceRolesInput, {
  description: 'The complete set of roles a user has on an account.',
  fields: {
    userId: 'usr_ id of the user inside the organisation.',
    accountId: 'acc_ id.',
    roleIds: 'Role ids that replace the existing ones (may be empty).',
  },
});

const RoleAssignmentConnection = pagedConnection(RoleAssignment, 'RoleAssignmentConnection', 'role assignments');

/** A signed-in user sees their own assignments (myRoles) without rights over role assignments. */
export function isOwnAssignment(ctx: RequestContext, assignment: { userId: string }): boolean {
  return ctx.principal?.kind === 'staff' && ctx.principal.userId === assignment.userId;
}

builder.objectField(User, 'roleAssignments', (t) =>
  t.field({
    type: [RoleAssignment],
    description: `The roles the user holds on the accounts where you may read role assignments, oldest first, as roleAssignments(userId:) lists them: at most ${LIMITS.rolesPerUser}. Your own roles everywhere: myRoles.`,
    resolve: (user, _args, ctx) => assignmentsOfUser(ctx, user.id),
  }),
);

builder.prismaObjectField(Role, 'assignments', (t) =>
  t.field({
    type: RoleAssignmentConnection,
    nullable: true,
    description:
      'Who holds the role, on the accounts where you may read role assignments, oldest first, as roleAssignments(roleId:) lists them; null, with an error, where you may read none.',
    args: t.arg.connectionArgs(),
    resolve: (role, args, ctx) => {
      if (!ctx.access.allowsSomewhere('role_assignments', 'read')) throw missingRight(ctx);
      return listRoleAssignments(ctx, { ...args, roleId: role.id });
    },
  }),
);

builder.queryFields((t) => ({
  roleAssignment: t.field({
    type: RoleAssignment,
    nullable: true,
    description: 'One role assignment on an account where you may read them.',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Role assignment id (uar_).' }) },
    resolve: (_root, { id }, ctx) => getRoleAssignment(ctx, String(id)),
  }),
  roleAssignments: t.field({
    type: RoleAssignmentConnection,
    nullable: true,
    description:
      'A page of the role assignments on the accounts the caller may see, oldest first, optionally filtered (GET /v1/user-account-roles).',
    authScopes: READ,
    args: {
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
      userId: t.arg.id({ description: 'Only this user.' }),
      accountId: t.arg.id({ description: 'Only this account.' }),
      roleId: t.arg.id({ description: 'Only this role.' }),
      updatedSince: updatedSinceArg(t, 'assignments made', 'an assignment never changes: it is made, or removed and gone'),
    },
    resolve: (_root, args, ctx) => listRoleAssignments(ctx, args),
  }),
}));

const ReplaceRolesPayload = payload(
  'ReplaceRoles',
  'roleAssignments',
  [RoleAssignment],
  "The user's role assignments on the account, as replaced.",
);
const RemoveRoleAssignmentPayload = deletePayload('RemoveRoleAssignment', 'role assignment');

/** The user a change of their roles touched, as `user(id:)` shows them now, for a cache to update `roleAssignments`. */
const touchedUser = (description: string) => ({
  type: User,
  nullable: true as const,
  description,
  // The change may have left the user out of what the caller may read: then null, not an error
  // after a change that was made.
  resolve: async ({ touched }: { touched?: Record<string, string | null> }, _args: unknown, ctx: RequestContext) =>
    await relatedUser(ctx, touched?.userId).catch((error: unknown) => {
      if (error instanceof AppError) return null;
      throw error;
    }),
});

builder.objectField(ReplaceRolesPayload.type, 'user', (t) =>
  t.field(touchedUser('The user as they are now, their roleAssignments as replaced; null when userErrors says why not.')),
);
builder.objectField(RemoveRoleAssignmentPayload.type, 'user', (t) =>
  t.field(touchedUser('The user who held the assignment, as they are now; null when userErrors says why not.')),
);
builder.objectField(RemoveRoleAssignmentPayload.type, 'role', (t) =>
  t.field({
    type: Role,
    nullable: true,
    description: 'The role of the assignment, as it is now (its assignments without it); null when userErrors says why not.',
    resolve: ({ touched }, _args, ctx) => related(ctx, 'role', touched?.roleId),
  }),
);

builder.mutationFields((t) => ({
  assignRole: t.field({
    ...payload('AssignRole', 'roleAssignment', RoleAssignment, 'The role assignment created.'),
    description: 'Grants a role to a user on an account (POST /v1/user-account-roles).',
    authScopes: WRITE,
    args: { input: t.arg({ type: AssignRoleInput, required: true, description: 'The assignment.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => assignRole(ctx, input)),
  }),
  replaceRoles: t.field({
    ...ReplaceRolesPayload,
    description: "Replaces a user's roles on an account, atomically (PUT /v1/user-account-roles).",
    authScopes: WRITE,
    args: { input: t.arg({ type: ReplaceRolesInput, required: true, description: 'The new set.' }) },
    resolve: async (_root, { input }, ctx) => {
      const replaced = await answer(ctx, () => replaceRoles(ctx, input));
      return replaced.result ? { ...replaced, touched: { userId: String(input.userId) } } : replaced;
    },
  }),
  removeRoleAssignment: t.field({
    ...RemoveRoleAssignmentPayload,
    description: 'Removes a role assignment (DELETE /v1/user-account-roles/{id}).',
    authScopes: WRITE,
    args: { id: t.arg.id({ required: true, description: 'Assignment id (uar_).' }) },
    resolve: (_root, { id }, ctx) =>
      deleted(ctx, async () => {
        const { userId, roleId } = await removeRoleAssignment(ctx, id);
        return { id, touched: { userId, roleId } };
      }),
  }),
}));
