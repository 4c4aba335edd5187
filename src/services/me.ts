import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { validate, type Raw } from '../validation.ts';
import { ASSIGNMENT_INCLUDE } from './role-assignments.ts';

/** The signed-in person as the current user, with the identity of their user in this organisation. */
export async function currentUser(ctx: RequestContext) {
  const principal = ctx.principal;
  if (principal?.kind !== 'staff' || !principal.userId) throw new AppError('SIGNED_IN_USER_REQUIRED');
  const user = await ctx.db.user.findUnique({
    where: { id: principal.userId },
    include: { person: true, identityProvider: { select: { providerType: true } } },
  });
  if (!user?.person) throw new AppError('UNAUTHENTICATED');
  return {
    id: user.person.id,
    email: user.person.email,
    firstName: user.person.firstName ?? user.firstName,
    lastName: user.person.lastName ?? user.lastName,
    identityProvider: user.identityProvider?.providerType ?? null,
    externalUserId: user.externalUserId,
  };
}

/** Every organisation the signed-in person is an active user of (person-level, across tenants). */
export async function myOrganisations(ctx: RequestContext) {
  const principal = ctx.principal;
  if (principal?.kind !== 'staff') throw new AppError('SIGNED_IN_USER_REQUIRED');
  // The one read that crosses organisations: it is the person's own memberships.
  const users = await ctx.runtime.db.user.findMany({
    where: { personId: principal.personId, status: 'active' },
    include: { organisation: true },
    orderBy: { createdAt: 'asc' },
  });
  return users.map(({ organisation, id }) => ({
    id: organisation.id,
    slug: organisation.slug,
    name: organisation.name,
    userId: id,
    primaryColor: organisation.primaryColor,
    secondaryColor: organisation.secondaryColor,
    logoUrl: organisation.logoUrl,
  }));
}

/** The signed-in user's role assignments in this organisation. */
export async function myRoles(ctx: RequestContext) {
  const principal = ctx.principal;
  if (principal?.kind !== 'staff' || !principal.userId) throw new AppError('SIGNED_IN_USER_REQUIRED');
  const roles = await ctx.db.roleAssignment.findMany({
    where: { userId: principal.userId, role: { isDeleted: false } },
    include: ASSIGNMENT_INCLUDE,
    orderBy: { createdAt: 'asc' },
  });
  return { roles, isOrgAdmin: ctx.access.isOrgAdmin };
}

const word = z.string().regex(/^([A-Za-z0-9_]+|\*)$/, 'a word (letters, digits, underscore) or *');
export const myPermissionsFilters = z.object({ resource: word.nullish(), action: word.nullish() });

export function myPermissions(ctx: RequestContext, raw: Raw<z.input<typeof myPermissionsFilters>>) {
  const filters = validate(myPermissionsFilters, raw);
  const resource = filters.resource ?? null;
  const action = filters.action ?? null;
  return {
    permissions: ctx.access.entries({ resource, action }),
    isOrgAdmin: ctx.access.isOrgAdmin,
    filters: { resource, action },
  };
}
