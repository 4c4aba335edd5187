import { z } from 'zod';
import { myPermissionsFilters } from '../../src/services/me.ts';
import type { RestRoute } from '../route.ts';

export const meRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/me',
    summary: 'The signed-in person. API keys and embed tokens are refused.',
    tag: 'Me',
    organisation: true,
    operation: `query Me { me { id email firstName lastName identityProvider externalUserId } }`,
    result: (data) => ({ user: data.me }),
    response: z.object({
      user: z.object({
        id: z.string(),
        email: z.string(),
        firstName: z.string().nullable(),
        lastName: z.string().nullable(),
        identityProvider: z.string().nullable(),
        externalUserId: z.string().nullable(),
      }),
    }),
  },
  {
    method: 'GET',
    path: '/me/organisations',
    summary: 'Organisations the signed-in person belongs to.',
    tag: 'Me',
    organisation: true,
    operation: `query MyOrganisations { myOrganisations { id: organisationId slug name userId primaryColor secondaryColor logoUrl } }`,
    result: (data) => ({ organisations: data.myOrganisations }),
    response: z.object({
      organisations: z.array(
        z.object({
          id: z.string(),
          slug: z.string(),
          name: z.string(),
          userId: z.string(),
          primaryColor: z.string().nullable(),
          secondaryColor: z.string().nullable(),
          logoUrl: z.string().nullable(),
        }),
      ),
    }),
  },
  {
    method: 'GET',
    path: '/me/roles',
    summary: "The signed-in user's role assignments in this organisation.",
    tag: 'Me',
    organisation: true,
    operation: `query MyRoles { myRoles { roles { roleId accountId role { name description isSystemRole } } isOrgAdmin } }`,
    result: (data) => ({
      roles: data.myRoles.roles.map((assignment: { roleId: string; accountId: string; role: Record<string, unknown> }) => ({
        id: assignment.roleId,
        name: assignment.role.name,
        description: assignment.role.description,
        accountId: assignment.accountId,
        isSystemRole: assignment.role.isSystemRole,
      })),
      isOrgAdmin: data.myRoles.isOrgAdmin,
    }),
    response: z.object({
      roles: z.array(
        z.object({
          id: z.string(),
          name: z.string().nullable(),
          description: z.string().nullable(),
          accountId: z.string(),
          isSystemRole: z.boolean(),
        }),
      ),
      isOrgAdmin: z.boolean(),
    }),
  },
  {
    method: 'GET',
    path: '/me/permissions',
    summary: "The signed-in user's effective permissions, optionally filtered by resource and action.",
    tag: 'Me',
    organisation: true,
    operation: `query MyPermissions($resource: String, $action: String) {
      myPermissions(resource: $resource, action: $action) {
        permissions { permission accounts isAllAccounts } isOrgAdmin filters { resource action }
      }
    }`,
    query: myPermissionsFilters,
    bind: { '...': 'query' },
    result: (data) => data.myPermissions,
    response: z.object({
      permissions: z.array(z.object({ permission: z.string(), accounts: z.array(z.string()), isAllAccounts: z.boolean() })),
      isOrgAdmin: z.boolean(),
      filters: z.object({ resource: z.string().nullable(), action: z.string().nullable() }),
    }),
  },
];
