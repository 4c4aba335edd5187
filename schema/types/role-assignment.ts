import {
  assignRole,
  assignRoleInput,
  listRoleAssignments,
  removeRoleAssignment,
  replaceRoles,
  replaceRolesInput,
} from '../../src/services/role-assignments.ts';
import { builder } from '../builder.ts';
import { inputFrom } from '../input.ts';
import { answer, deleted, deletePayload, payload } from '../payload.ts';
import { pageArgsFor, pagedConnection } from '../pagination.ts';
import { MAX_LIMIT } from '../../src/pagination.ts';

const READ = { $all: { organisation: true, permission: 'role_assignments.read' } } as const;
const WRITE = { $all: { organisation: true, permission: 'role_assignments.write' } } as const;

interface AssignmentView {
  id: string;
  organisationId: string;
  userId: string;
  accountId: string;
  roleId: string;
  createdAt: Date;
  user: { id: string; email: string; firstName: string | null; lastName: string | null };
  account: { id: string; name: string };
  role: { id: string; name: string; isSystemRole: boolean };
}

const AssignmentUser = builder.objectRef<AssignmentView['user']>('RoleAssignmentUser').implement({
  description: 'The user of a role assignment.',
  fields: (t) => ({
    id: t.exposeString('id', { description: 'User id inside the organisation (usr_).' }),
    email: t.exposeString('email', { description: 'Email.' }),
    firstName: t.exposeString('firstName', { nullable: true, description: 'First name, or null.' }),
    lastName: t.exposeString('lastName', { nullable: true, description: 'Last name, or null.' }),
  }),
});

const AssignmentAccount = builder.objectRef<AssignmentView['account']>('RoleAssignmentAccount').implement({
  description: 'The account of a role assignment.',
  fields: (t) => ({
    id: t.exposeString('id', { description: 'Account id (acc_).' }),
    name: t.exposeString('name', { description: 'Account name.' }),
  }),
});

const AssignmentRole = builder.objectRef<AssignmentView['role']>('RoleAssignmentRole').implement({
  description: 'The role of a role assignment.',
  fields: (t) => ({
    id: t.exposeString('id', { description: 'Role id (rol_).' }),
    name: t.exposeString('name', { description: 'Role name.' }),
    isSystemRole: t.exposeBoolean('isSystemRole', { description: 'Whether it is a system role.' }),
  }),
});

export const RoleAssignment = builder.objectRef<AssignmentView>('RoleAssignment').implement({
  description: 'A role granted to a user on one account (uar_).',
  authScopes: (assignment, ctx) =>
    ctx.access.allows('role_assignments', 'read', assignment.accountId) ||
    ctx.access.allows('role_assignments', 'write', assignment.accountId),
  fields: (t) => ({
    id: t.exposeString('id', { description: 'Assignment id (uar_).' }),
    organisationId: t.exposeString('organisationId', { description: 'Organisation.' }),
    userId: t.exposeString('userId', { description: 'User id inside the organisation.' }),
    accountId: t.exposeString('accountId', { description: 'Account the role applies to.' }),
    roleId: t.exposeString('roleId', { description: 'Role.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When it was granted.' }),
    user: t.field({ type: AssignmentUser, description: 'The user.', resolve: (a) => a.user }),
    account: t.field({ type: AssignmentAccount, description: 'The account.', resolve: (a) => a.account }),
    role: t.field({ type: AssignmentRole, description: 'The role.', resolve: (a) => a.role }),
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

builder.queryFields((t) => ({
  roleAssignments: t.field({
    type: [RoleAssignment],
    nullable: true,
    description: 'Role assignments on the accounts the caller may see, optionally filtered.',
    deprecationReason: `Answers only the first ${MAX_LIMIT}; use roleAssignmentsConnection, which pages.`,
    authScopes: READ,
    args: {
      userId: t.arg.string({ description: 'Only this user.' }),
      accountId: t.arg.string({ description: 'Only this account.' }),
      roleId: t.arg.string({ description: 'Only this role.' }),
    },
    resolve: async (_root, args, ctx) => (await listRoleAssignments(ctx, { ...args, limit: MAX_LIMIT })).nodes,
  }),
  roleAssignmentsConnection: t.field({
    type: RoleAssignmentConnection,
    nullable: true,
    description:
      'A page of the role assignments on the accounts the caller may see, oldest first, optionally filtered (GET /v1/user-account-roles).',
    authScopes: READ,
    args: {
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
      userId: t.arg.string({ description: 'Only this user.' }),
      accountId: t.arg.string({ description: 'Only this account.' }),
      roleId: t.arg.string({ description: 'Only this role.' }),
    },
    resolve: (_root, args, ctx) => listRoleAssignments(ctx, args),
  }),
}));

builder.mutationFields((t) => ({
  assignRole: t.field({
    ...payload('AssignRole', 'roleAssignment', RoleAssignment, 'The role assignment created.'),
    description: 'Grants a role to a user on an account (POST /v1/user-account-roles).',
    authScopes: WRITE,
    args: { input: t.arg({ type: AssignRoleInput, required: true, description: 'The assignment.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => assignRole(ctx, input)),
  }),
  replaceRoles: t.field({
    ...payload('ReplaceRoles', 'roleAssignments', [RoleAssignment], "The user's role assignments on the account, as replaced."),
    description: "Replaces a user's roles on an account, atomically (PUT /v1/user-account-roles).",
    authScopes: WRITE,
    args: { input: t.arg({ type: ReplaceRolesInput, required: true, description: 'The new set.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => replaceRoles(ctx, input)),
  }),
  removeRoleAssignment: t.field({
    ...deletePayload('RemoveRoleAssignment', 'role assignment'),
    description: 'Removes a role assignment (DELETE /v1/user-account-roles/{id}).',
    authScopes: WRITE,
    args: { id: t.arg.string({ required: true, description: 'Assignment id (uar_).' }) },
    resolve: (_root, { id }, ctx) =>
      deleted(ctx, async () => {
        await removeRoleAssignment(ctx, id);
        return { id };
      }),
  }),
}));
