import { z } from 'zod';
import { createRoleInput, updateRoleInput } from '../../src/services/roles.ts';
import { assignRoleInput, listRoleAssignmentsFilters, replaceRolesInput } from '../../src/services/role-assignments.ts';
import type { RestRoute } from '../route.ts';
import { listQuery } from '../../src/pagination.ts';
import { deleted, deletion, idParam, pagination, PAGINATION_FIELDS } from '../shapes/common.ts';

const ROLE_FIELDS = 'id organisationId name description isDeleted createdAt updatedAt permissions isSystemRole';
const ASSIGNMENT_FIELDS = `id organisationId userId accountId roleId createdAt
  user { id email firstName lastName } account { id name } role { id name isSystemRole }`;

const role = z.object({
  id: z.string(),
  organisationId: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  isDeleted: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
  permissions: z.array(z.string()),
  isSystemRole: z.boolean(),
});

const assignment = z.object({
  id: z.string(),
  organisationId: z.string(),
  userId: z.string(),
  accountId: z.string(),
  roleId: z.string(),
  createdAt: z.string(),
  user: z.object({ id: z.string(), email: z.string(), firstName: z.string().nullable(), lastName: z.string().nullable() }),
  account: z.object({ id: z.string(), name: z.string() }),
  role: z.object({ id: z.string(), name: z.string(), isSystemRole: z.boolean() }),
});

export const rolesRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/roles',
    summary: 'List the roles of the organisation, system roles first.',
    tag: 'Roles',
    organisation: true,
    operation: `query Roles($page: Int, $limit: Int) { roles(page: $page, limit: $limit) { nodes { ${ROLE_FIELDS} } ${PAGINATION_FIELDS} } }`,
    query: listQuery(),
    bind: { '...': 'query' },
    result: (data) => ({ roles: data.roles.nodes, pagination: data.roles.pagination }),
    response: z.object({ roles: z.array(role), pagination }),
  },
  {
    method: 'POST',
    path: '/roles',
    summary: 'Create a custom role.',
    tag: 'Roles',
    organisation: true,
    operation: `mutation CreateRole($input: CreateRoleInput!) { createRole(input: $input) { role { ${ROLE_FIELDS} } } }`,
    body: createRoleInput,
    bind: { input: 'body' },
    result: (data) => data.createRole.role,
    status: 201,
    response: role,
  },
  {
    method: 'GET',
    path: '/roles/{id}',
    summary: 'Get a role (returned unwrapped).',
    tag: 'Roles',
    organisation: true,
    operation: `query Role($id: ID!) { role(id: $id) { ${ROLE_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => data.role,
    response: role,
  },
  {
    method: 'PATCH',
    path: '/roles/{id}',
    summary: 'Change a custom role. System roles answer 409.',
    tag: 'Roles',
    organisation: true,
    operation: `mutation UpdateRole($id: ID!, $input: UpdateRoleInput!) { updateRole(id: $id, input: $input) { role { ${ROLE_FIELDS} } } }`,
    params: idParam,
    body: updateRoleInput,
    bind: { id: 'params.id', input: 'body' },
    result: (data) => data.updateRole.role,
    response: role,
  },
  {
    method: 'DELETE',
    path: '/roles/{id}',
    summary: 'Delete a custom role and its assignments. System roles answer 409.',
    tag: 'Roles',
    organisation: true,
    operation: `mutation DeleteRole($id: ID!) { deleteRole(id: $id) { deletedId } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => deletion(data.deleteRole),
    response: deleted,
  },
  {
    method: 'GET',
    path: '/user-account-roles',
    summary: 'List role assignments on the accounts the caller may see, optionally by user, account or role.',
    tag: 'Role assignments',
    organisation: true,
    operation: `query RoleAssignments($page: Int, $limit: Int, $userId: ID, $accountId: ID, $roleId: ID) {
      roleAssignments(page: $page, limit: $limit, userId: $userId, accountId: $accountId, roleId: $roleId) {
        nodes { ${ASSIGNMENT_FIELDS} } ${PAGINATION_FIELDS}
      }
    }`,
    query: listQuery(listRoleAssignmentsFilters),
    bind: { '...': 'query' },
    result: (data) => ({ assignments: data.roleAssignments.nodes, pagination: data.roleAssignments.pagination }),
    response: z.object({ assignments: z.array(assignment), pagination }),
  },
  {
    method: 'POST',
    path: '/user-account-roles',
    summary: 'Assign a role to a user on an account.',
    tag: 'Role assignments',
    organisation: true,
    operation: `mutation AssignRole($input: AssignRoleInput!) { assignRole(input: $input) { roleAssignment { ${ASSIGNMENT_FIELDS} } } }`,
    body: assignRoleInput,
    bind: { input: 'body' },
    result: (data) => ({ assignment: data.assignRole.roleAssignment }),
    status: 201,
    response: z.object({ assignment }),
  },
  {
    method: 'PUT',
    path: '/user-account-roles',
    summary: "Replace a user's roles on an account, atomically.",
    tag: 'Role assignments',
    organisation: true,
    operation: `mutation ReplaceRoles($input: ReplaceRolesInput!) { replaceRoles(input: $input) { roleAssignments { ${ASSIGNMENT_FIELDS} } } }`,
    body: replaceRolesInput,
    bind: { input: 'body' },
    result: (data) => ({ assignments: data.replaceRoles.roleAssignments }),
    response: z.object({ assignments: z.array(assignment) }),
  },
  {
    method: 'DELETE',
    path: '/user-account-roles/{id}',
    summary: 'Remove a role assignment.',
    tag: 'Role assignments',
    organisation: true,
    operation: `mutation RemoveRoleAssignment($id: ID!) { removeRoleAssignment(id: $id) { deletedId } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: () => ({ success: true }),
    response: z.object({ success: z.boolean() }),
  },
];
