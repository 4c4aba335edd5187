import { createRole, createRoleInput, deleteRole, getRole, listRoles, updateRole, updateRoleInput } from '../../src/services/roles.ts';
import { builder } from '../builder.ts';
import { Node } from '../node.ts';
import { organisationRelation } from './organisation.ts';
import { inputFrom } from '../input.ts';
import { answer, deleted, deletePayload, payload } from '../payload.ts';
import { pageArgsFor, pagedConnection, updatedSinceArg } from '../pagination.ts';

const READ = { $all: { organisation: true, organisationPermission: 'roles.read' } } as const;
const WRITE = { $all: { organisation: true, organisationPermission: 'roles.write' } } as const;

export const Role = builder.prismaObject('Role', {
  interfaces: [Node],
  description: 'A named set of permission strings, assigned to users on accounts.',
  // Those who manage role assignments see the roles they assign; a user sees the roles they hold.
  authScopes: (role, ctx) =>
    ctx.access.allows('roles', 'read') ||
    ctx.access.allows('roles', 'write') ||
    ctx.access.allowsSomewhere('role_assignments', 'read') ||
    ctx.access.allowsSomewhere('role_assignments', 'write') ||
    ctx.access.heldRoles.has(role.id),
  fields: (t) => ({
    organisationId: t.exposeID('organisationId', { description: 'Owning organisation.' }),
    organisation: t.field(organisationRelation()),
    name: t.exposeString('name', { description: 'Name, 1 to 255 characters.' }),
    description: t.exposeString('description', { nullable: true, description: 'Description (at most 500 characters), or null.' }),
    isDeleted: t.exposeBoolean('isDeleted', { description: 'Whether the role was deleted.' }),
    permissions: t.exposeStringList('permissions', { description: 'Permission strings: resource.action[:scope].' }),
    isSystemRole: t.exposeBoolean('isSystemRole', { description: 'System roles cannot be modified or deleted.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

const CreateRoleInput = inputFrom('CreateRoleInput', createRoleInput, {
  description: 'A new custom role.',
  fields: {
    name: 'Name, 1 to 255 characters.',
    description: 'At most 500 characters.',
    permissions: 'At least one permission string.',
  },
});

const UpdateRoleInput = inputFrom('UpdateRoleInput', updateRoleInput, {
  description: 'Changes to a custom role; omitted fields stay.',
  fields: {
    name: 'Name, 1 to 255 characters.',
    description: 'At most 500 characters; null clears it.',
    permissions: 'At least one permission string.',
  },
});

const RoleConnection = pagedConnection(Role, 'RoleConnection', 'roles');

builder.queryFields((t) => ({
  roles: t.field({
    type: RoleConnection,
    nullable: true,
    description: 'A page of the roles of the organisation, system roles first (GET /v1/roles).',
    authScopes: READ,
    args: {
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
      updatedSince: updatedSinceArg(t, 'roles created or changed', 'deleted ones leave the list'),
    },
    resolve: (_root, args, ctx) => listRoles(ctx, args),
  }),
  role: t.field({
    type: Role,
    nullable: true,
    description: 'One role (GET /v1/roles/{id}).',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Role id.' }) },
    resolve: (_root, { id }, ctx) => getRole(ctx, id),
  }),
}));

builder.mutationFields((t) => ({
  createRole: t.field({
    ...payload('CreateRole', 'role', Role, 'The role created.'),
    description: 'Creates a custom role (POST /v1/roles).',
    authScopes: WRITE,
    args: { input: t.arg({ type: CreateRoleInput, required: true, description: 'The role.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => createRole(ctx, input)),
  }),
  updateRole: t.field({
    ...payload('UpdateRole', 'role', Role, 'The role as changed.'),
    description: 'Changes a custom role (PATCH /v1/roles/{id}); system roles answer CONFLICT.',
    authScopes: WRITE,
    args: {
      id: t.arg.id({ required: true, description: 'Role id.' }),
      input: t.arg({ type: UpdateRoleInput, required: true, description: 'The changes.' }),
    },
    resolve: (_root, { id, input }, ctx) => answer(ctx, () => updateRole(ctx, id, input)),
  }),
  deleteRole: t.field({
    ...deletePayload('DeleteRole', 'role'),
    description: 'Deletes a custom role and its assignments (DELETE /v1/roles/{id}); system roles answer CONFLICT.',
    authScopes: WRITE,
    args: { id: t.arg.id({ required: true, description: 'Role id.' }) },
    resolve: (_root, { id }, ctx) => deleted(ctx, () => deleteRole(ctx, id)),
  }),
}));
