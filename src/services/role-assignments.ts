import { forgetCachedAccess } from '../auth/forget.ts';
import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { USER_FIELDS } from './users.ts';
import { batched } from '../db/batch.ts';
import { isUniqueViolation } from '../db/client.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { reference, validate, type Raw } from '../validation.ts';
import { missingRight } from '../auth/refusal.ts';
import { assertMayGrant } from '../auth/granting.ts';
import { LIMITS, limitedArray, limitExceeded } from '../limits/limits.ts';
import { assertMay } from './access.ts';
import { assertAdministratorRemains, grantsAdministration } from './administrators.ts';
import { changedSince, OLDEST_FIRST, type PolledListArgs, pageArgsOf, paginate } from '../pagination.ts';
import { audited, recordAudit } from './audit.ts';
import { assignmentEntry } from './assignment-audit.ts';

const userId = reference;
const accountId = reference;
const roleId = reference;

export const assignRoleInput = z.strictObject({ userId, accountId, roleId });
export const replaceRolesInput = z.strictObject({
  userId,
  accountId,
  roleIds: limitedArray(roleId, 'rolesPerUser', `at most ${LIMITS.rolesPerUser} roles per user`),
});
export const listRoleAssignmentsFilters = z.object({ userId: userId.nullish(), accountId: accountId.nullish(), roleId: roleId.nullish() });

/** What an assignment is answered with: its user, account and role. */
export const ASSIGNMENT_INCLUDE = { user: { select: USER_FIELDS }, account: true, role: true } as const;

/**
 * The assignments the caller may see, of one account when given: on the accounts where they may
 * read role assignments, of roles not deleted.
 */
function readableAssignments(ctx: RequestContext, accountId?: string | null) {
  const accounts = ctx.access.accountsFor('role_assignments', 'read');
  return {
    accountId: accounts === 'all' ? (accountId ?? undefined) : { in: accountId ? accounts.filter((a) => a === accountId) : accounts },
    role: { isDeleted: false },
  };
}

/** A page of the role assignments on the accounts the caller may see, oldest first, optionally filtered. */
export async function listRoleAssignments(ctx: RequestContext, raw: PolledListArgs & z.input<typeof listRoleAssignmentsFilters>) {
  const { page, filters: given } = pageArgsOf(raw);
  const { updatedSince, ...rawFilters } = given;
  const filters = validate(listRoleAssignmentsFilters, rawFilters);
  const where = {
    ...(filters.userId ? { userId: filters.userId } : {}),
    ...(filters.roleId ? { roleId: filters.roleId } : {}),
    ...readableAssignments(ctx, filters.accountId),
    // An assignment never changes (it is made or removed): its creation is its last change.
    ...changedSince(updatedSince, ['createdAt']),
  };
  return paginate(
    page,
    OLDEST_FIRST,
    (keyset) => ctx.db.roleAssignment.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) =>
      ctx.db.roleAssignment.findMany({ where: { AND: [where, keyset] }, include: ASSIGNMENT_INCLUDE, orderBy, skip, take }),
  );
}

/**
 * The assignments of users (`User.roleAssignments`) as roleAssignments(userId:) lists them: on the
 * accounts where the caller may read role assignments (and so their accounts and roles), read in
 * the request's batch, oldest first. A user holds at most LIMITS.rolesPerUser, so a list, not a
 * page. A person's own roles everywhere are `myRoles`: an assignment here on an account they may
 * not read would null the user that holds it.
 */
const heldBy = batched(async (ctx, userIds: string[]) => {
  const rows = await ctx.db.roleAssignment.findMany({
    where: { userId: { in: userIds }, ...readableAssignments(ctx) },
    include: ASSIGNMENT_INCLUDE,
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
  const byUser = new Map<string, typeof rows>();
  for (const row of rows) byUser.set(row.userId, [...(byUser.get(row.userId) ?? []), row]);
  return byUser;
});

export async function assignmentsOfUser(ctx: RequestContext, userId: string) {
  return (await heldBy(ctx, userId)) ?? [];
}

/**
 * Granting or taking away a role on an account needs role_assignments.write there, and the
 * caller must hold every permission of that role on that account: nobody hands out (or strips)
 * more than they have.
 */
function assertMayManage(ctx: RequestContext, account: string, role: { name: string; permissions: string[] }, path: string | null) {
  if (!ctx.access.allows('role_assignments', 'write', account)) {
    throw missingRight(ctx);
  }
  assertMayGrant(ctx, role.permissions, account, `or remove role "${role.name}"`, path);
}

/** Refuses (400, naming the limit) when the user would hold more than LIMITS.rolesPerUser assignments. */
async function assertRoomForRoles(db: RequestContext['db'], userId: string, adding: number, path: string): Promise<void> {
  if (adding <= 0) return;
  const held = await db.roleAssignment.count({ where: { userId } });
  if (held + adding > LIMITS.rolesPerUser) {
    throw limitExceeded(
      path,
      'rolesPerUser',
      `A user holds at most ${LIMITS.rolesPerUser} role assignments in an organisation; this one would hold ${held + adding}.`,
    );
  }
}

async function loadTargets(
  ctx: RequestContext,
  input: { userId: string; accountId: string; roleIds: string[] },
  rolePath: (index: number) => string,
) {
  const [user, account, roles] = await Promise.all([
    ctx.db.user.findUnique({ where: { id: input.userId }, select: { id: true } }),
    ctx.db.account.findFirst({ where: { id: input.accountId, isDeleted: false }, select: { id: true } }),
    ctx.db.role.findMany({ where: { id: { in: input.roleIds }, isDeleted: false } }),
  ]);
  const issues = [
    ...(user ? [] : [{ path: 'userId', message: 'No such user in this organisation.' }]),
    ...(account ? [] : [{ path: 'accountId', message: 'No such account in this organisation.' }]),
    ...input.roleIds.flatMap((id, i) =>
      roles.some((role) => role.id === id) ? [] : [{ path: rolePath(i), message: 'No such role in this organisation.' }],
    ),
  ];
  if (issues.length > 0) throw AppError.unknownReferences(issues);
  return roles;
}

export async function assignRole(ctx: RequestContext, raw: z.input<typeof assignRoleInput>) {
  const input = validate(assignRoleInput, raw);
  const [role] = await loadTargets(ctx, { ...input, roleIds: [input.roleId] }, () => 'roleId');
  assertMayManage(ctx, input.accountId, role!, 'roleId');
  await assertRoomForRoles(ctx.db, input.userId, 1, 'roleId');
  try {
    const assignment = await audited(
      ctx,
      (tx) =>
        tx.roleAssignment.create({
          data: { id: newId('roleAssignment'), organisationId: ctx.organisation!.id, ...input },
          include: ASSIGNMENT_INCLUDE,
        }),
      (created) => assignmentEntry('role_assignment.created', created),
    );
    forgetCachedAccess(ctx);
    return assignment;
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('CONFLICT', 'The user already has this role on this account.');
    throw error;
  }
}

/** Replaces every role of the user on the account with `roleIds`, atomically. */
export async function replaceRoles(ctx: RequestContext, raw: Raw<z.input<typeof replaceRolesInput>>) {
  const input = validate(replaceRolesInput, raw);
  const roleIds = [...new Set(input.roleIds)];
  const roles = await loadTargets(ctx, { ...input, roleIds }, (i) => `roleIds.${input.roleIds.indexOf(roleIds[i]!)}`);
  const current = await ctx.db.roleAssignment.findMany({
    where: { userId: input.userId, accountId: input.accountId },
    include: { role: true },
  });
  assertMayManage(ctx, input.accountId, { name: '', permissions: [] }, null);
  for (const role of roles) {
    if (!current.some((a) => a.roleId === role.id))
      assertMayManage(ctx, input.accountId, role, `roleIds.${input.roleIds.indexOf(role.id)}`);
  }
  const removed = current.filter((assignment) => !roleIds.includes(assignment.roleId));
  // A role left out of roleIds is taken away: the list as a whole asked for that.
  for (const assignment of removed) assertMayManage(ctx, input.accountId, assignment.role, 'roleIds');
  const added = roleIds.length - (current.length - removed.length);
  await assertRoomForRoles(ctx.db, input.userId, added - removed.length, 'roleIds');

  const assignments = await ctx.db.$transaction(async (tx) => {
    await tx.roleAssignment.deleteMany({ where: { userId: input.userId, accountId: input.accountId, roleId: { notIn: roleIds } } });
    for (const assignment of removed) await recordAudit(tx, ctx, assignmentEntry('role_assignment.deleted', assignment));
    if (grantsAdministration(removed.map((assignment) => assignment.role.permissions))) {
      await assertAdministratorRemains(tx, ctx.organisation!.id);
    }
    const kept = new Set(current.map((a) => a.roleId));
    for (const id of roleIds) {
      if (kept.has(id)) continue;
      const created = await tx.roleAssignment.create({
        data: {
          id: newId('roleAssignment'),
          organisationId: ctx.organisation!.id,
          userId: input.userId,
          accountId: input.accountId,
          roleId: id,
        },
      });
      await recordAudit(tx, ctx, assignmentEntry('role_assignment.created', created));
    }
    return tx.roleAssignment.findMany({
      where: { userId: input.userId, accountId: input.accountId },
      include: ASSIGNMENT_INCLUDE,
      orderBy: { createdAt: 'asc' },
    });
  });
  forgetCachedAccess(ctx);
  return assignments;
}

/** One assignment on an account where the caller may read assignments; any other id is NOT_FOUND. */
export async function getRoleAssignment(ctx: RequestContext, id: string) {
  const assignment = await ctx.db.roleAssignment.findFirst({ where: { id, role: { isDeleted: false } }, include: ASSIGNMENT_INCLUDE });
  if (!assignment || !ctx.access.allows('role_assignments', 'read', assignment.accountId)) {
    throw AppError.notFound('Role assignment not found.');
  }
  return assignment;
}

export async function removeRoleAssignment(ctx: RequestContext, id: string) {
  const assignment = await ctx.db.roleAssignment.findUnique({ where: { id }, include: { role: true } });
  if (!assignment) throw AppError.notFound('Role assignment not found.');
  // role_assignments.write without .read may remove: unreadable and unwritable alone is 404.
  assertMay(ctx, 'role_assignments', 'write', assignment.accountId, 'Role assignment');
  assertMayManage(ctx, assignment.accountId, assignment.role, null);
  await ctx.db.$transaction(async (tx) => {
    await tx.roleAssignment.delete({ where: { id } });
    await recordAudit(tx, ctx, assignmentEntry('role_assignment.deleted', assignment));
    if (grantsAdministration([assignment.role.permissions])) await assertAdministratorRemains(tx, assignment.organisationId);
  });
  forgetCachedAccess(ctx);
  return { success: true, userId: assignment.userId, roleId: assignment.roleId };
}
