import { z } from 'zod';
import { currentUser, myOrganisations, myPermissions, myRoles } from '../../src/services/me.ts';
import { validate } from '../../src/validation.ts';
import { builder } from '../builder.ts';
import { Person } from './person.ts';
import { RoleAssignment } from './role-assignment.ts';

/** /me and /me/*: a signed-in person inside the organisation named by X-Service-Org. */
const SIGNED_IN = { $all: { signedInUser: true, organisation: true } } as const;

const OrganisationMembership = builder.objectRef<Awaited<ReturnType<typeof myOrganisations>>[number]>('OrganisationMembership').implement({
  description: 'An organisation the signed-in person belongs to, and their user there.',
  fields: (t) => ({
    organisationId: t.exposeID('id', { description: 'The organisation (org_).' }),
    slug: t.exposeString('slug', { description: 'The value for X-Service-Org.' }),
    name: t.exposeString('name', { description: 'Display name.' }),
    userId: t.exposeID('userId', { description: "The person's user id inside this organisation." }),
    primaryColor: t.exposeString('primaryColor', { nullable: true, description: 'Brand colour (#rrggbb), or null.' }),
    secondaryColor: t.exposeString('secondaryColor', { nullable: true, description: 'Brand colour (#rrggbb), or null.' }),
    logoUrl: t.exposeString('logoUrl', { nullable: true, description: 'Logo URI, or null.' }),
  }),
});

const MyRoles = builder.objectRef<Awaited<ReturnType<typeof myRoles>>>('MyRoles').implement({
  description: "The signed-in user's roles in this organisation.",
  fields: (t) => ({
    roles: t.field({
      type: [RoleAssignment],
      description: 'Role assignments, oldest first: one per role and account (one role on two accounts is two).',
      resolve: (r) => r.roles,
    }),
    isOrgAdmin: t.exposeBoolean('isOrgAdmin', { description: 'Whether the user may do everything on every account.' }),
  }),
});

const PermissionEntry = builder.objectRef<ReturnType<typeof myPermissions>['permissions'][number]>('PermissionEntry').implement({
  description: 'One permission and where it applies.',
  fields: (t) => ({
    permission: t.exposeString('permission', { description: 'resource.action' }),
    accounts: t.exposeStringList('accounts', { description: 'Account ids, or the single value "all".' }),
    isAllAccounts: t.exposeBoolean('isAllAccounts', { description: 'Whether it applies to every account.' }),
  }),
});

const PermissionFilters = builder.objectRef<ReturnType<typeof myPermissions>['filters']>('PermissionFilters').implement({
  description: 'The filters a permissions listing was made with.',
  fields: (t) => ({
    resource: t.exposeString('resource', { nullable: true, description: 'Resource filter, or null.' }),
    action: t.exposeString('action', { nullable: true, description: 'Action filter, or null.' }),
  }),
});

const MyPermissions = builder.objectRef<ReturnType<typeof myPermissions>>('MyPermissions').implement({
  description: "The signed-in user's effective permissions in this organisation.",
  fields: (t) => ({
    permissions: t.field({ type: [PermissionEntry], description: 'Permissions.', resolve: (r) => r.permissions }),
    isOrgAdmin: t.exposeBoolean('isOrgAdmin', { description: 'Whether the user may do everything on every account.' }),
    filters: t.field({ type: PermissionFilters, description: 'Filters applied.', resolve: (r) => r.filters }),
  }),
});

const word = z
  .string()
  .regex(/^([A-Za-z0-9_]+|\*)$/, 'a word (letters, digits, underscore) or *')
  .nullish();

builder.queryFields((t) => ({
  me: t.field({
    type: Person,
    nullable: true,
    description: 'The signed-in person (GET /v1/me). API keys and embed tokens are refused.',
    authScopes: SIGNED_IN,
    resolve: (_root, _args, ctx) => currentUser(ctx),
  }),
  myOrganisations: t.field({
    type: [OrganisationMembership],
    nullable: true,
    description: 'Organisations the signed-in person belongs to (GET /v1/me/organisations).',
    authScopes: SIGNED_IN,
    resolve: (_root, _args, ctx) => myOrganisations(ctx),
  }),
  myRoles: t.field({
    type: MyRoles,
    nullable: true,
    description: "The signed-in user's role assignments here (GET /v1/me/roles).",
    authScopes: SIGNED_IN,
    resolve: (_root, _args, ctx) => myRoles(ctx),
  }),
  myPermissions: t.field({
    type: MyPermissions,
    nullable: true,
    description: "The signed-in user's effective permissions here (GET /v1/me/permissions).",
    authScopes: SIGNED_IN,
    args: {
      resource: t.arg.string({ description: 'Only permissions covering this resource.' }),
      action: t.arg.string({ description: 'Only permissions covering this action.' }),
    },
    resolve: (_root, args, ctx) => myPermissions(ctx, validate(z.object({ resource: word, action: word }), args)),
  }),
}));
