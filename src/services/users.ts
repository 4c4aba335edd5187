import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';

/** What the graph shows of a user of the organisation. */
export const USER_FIELDS = {
  id: true,
  personId: true,
  email: true,
  firstName: true,
  lastName: true,
  externalUserId: true,
  createdAt: true,
  identityProvider: { select: { providerType: true } },
} as const;

/**
 * A user of the organisation, as the people who manage its roles see them: the caller themself,
 * or a caller who may read role assignments on an account where the user holds one (or on every
 * account). Anyone else is answered NOT_FOUND, as for an id that does not exist.
 */
export async function getUser(ctx: RequestContext, id: string) {
  const user = await ctx.db.user.findUnique({
    where: { id },
    select: { ...USER_FIELDS, roleAssignments: { select: { accountId: true } } },
  });
  if (!user || !mayReadUser(ctx, user)) throw AppError.notFound('User not found.');
  const { roleAssignments: _assignments, ...shown } = user;
  return shown;
}

/** getUser's rule, for a user read with the accounts it holds roles on (a relation's, src/services/related.ts). */
export function mayReadUser(ctx: RequestContext, user: { id: string; roleAssignments: ReadonlyArray<{ accountId: string }> }): boolean {
  const principal = ctx.principal;
  if (principal?.kind === 'staff' && principal.userId === user.id) return true;
  const readers = ctx.access.accountsFor('role_assignments', 'read');
  return readers === 'all' || user.roleAssignments.some((assignment) => readers.includes(assignment.accountId));
}
