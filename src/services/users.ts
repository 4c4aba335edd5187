import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { personContaining } from '../db/text-search.ts';
import { AppError } from '../errors.ts';
import type { Prisma } from '../generated/prisma/client.ts';
import { OLDEST_FIRST, pageArgsOf, paginate, type RawPageArgs } from '../pagination.ts';
import { statusOf } from '../statuses.ts';
import { reference, validate, type Raw } from '../validation.ts';

/** What the graph shows of a user of the organisation. */
export const USER_FIELDS = {
  id: true,
  personId: true,
  email: true,
  firstName: true,
  lastName: true,
  status: true,
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

export const listUsersFilters = z.object({
  accountId: reference.nullish(),
  roleId: reference.nullish(),
  status: statusOf('user').nullish(),
  search: z.string().trim().min(1).max(200).nullish(),
});

export type ListUsersArgs = RawPageArgs & Raw<z.input<typeof listUsersFilters>>;

/**
 * A page of the users the caller may read, oldest first: getUser's rule as a condition (every user
 * where they may read role assignments on every account, else those holding a role on an account
 * where they may), filtered by an account or role they hold a role on (both: that role on that
 * account), their status, or text in their email or name (case-insensitive).
 */
export async function listUsers(ctx: RequestContext, args: ListUsersArgs) {
  const { page, filters } = pageArgsOf(args);
  const input = validate(listUsersFilters, filters);
  const readers = ctx.access.accountsFor('role_assignments', 'read');
  const accountId =
    readers === 'all' ? (input.accountId ?? undefined) : { in: input.accountId ? readers.filter((id) => id === input.accountId) : readers };
  const holding: Prisma.RoleAssignmentWhereInput = { accountId, ...(input.roleId ? { roleId: input.roleId } : {}) };

  const where: Prisma.UserWhereInput = {
    ...(readers === 'all' && !input.accountId && !input.roleId ? {} : { roleAssignments: { some: holding } }),
    ...(input.status ? { status: input.status } : {}),
    ...(input.search ? { OR: personContaining(input.search) } : {}),
  };
  return paginate(
    page,
    OLDEST_FIRST,
    (keyset) => ctx.db.user.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) =>
      ctx.db.user.findMany({ where: { AND: [where, keyset] }, select: USER_FIELDS, orderBy, skip, take }),
  );
}
