import { forgetCachedAccess } from '../auth/forget.ts';
import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { isUniqueViolation } from '../db/client.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { validate } from './sessions.ts';
import { missingRight } from '../auth/refusal.ts';

const userId = z.string().regex(/^usr_[A-Za-z0-9]+$/, 'usr_ followed by letters and digits');
const accountId = z.string().regex(/^acc_[A-Za-z0-9]+$/, 'acc_ followed by letters and digits');
const roleId = z.string().regex(/^rol_[A-Za-z0-9_]+$/, 'rol_ followed by letters, digits and underscores');

const assignInput = z.object({ userId, accountId, roleId });
const replaceInput = z.object({ userId, accountId, roleIds: z.array(roleId).max(100) });
const listFilters = z.object({ userId: userId.nullish(), accountId: accountId.nullish(), roleId: roleId.nullish() });

const INCLUDE = {
  user: { select: { id: true, email: true, firstName: true, lastName: true } },
  account: { select: { id: true, name: true } },
  role: { select: { id: true, name: true, isSystemRole: true, permissions: true } },
} as const;

/** Assignments on the accounts where the caller may read them, optionally filtered. */
export async function listRoleAssignments(ctx: RequestContext, raw: z.input<typeof listFilters>) {
  const filters = validate(listFilters, raw);
  const accounts = ctx.access.accountsFor('role_assignments', 'read');
  return ctx.db.roleAssignment.findMany({
    where: {
      ...(filters.userId ? { userId: filters.userId } : {}),
      ...(filters.roleId ? { roleId: filters.roleId } : {}),
      accountId: accounts === 'all' ? (filters.accountId ?? undefined) : { in: filters.accountId ? accounts.filter((a) => a === filters.accountId) : accounts },
      role: { isDeleted: false },
    },
    include: INCLUDE,
    orderBy: { createdAt: 'asc' },
  });
}

/**
 * Granting or taking away a role on an account needs role_assignments.write there, and the
 * caller must hold every permission of that role on that account: nobody hands out (or strips)
 * more than they have.
 */
function assertMayManage(ctx: RequestContext, account: string, role: { name: string; permissions: string[] }) {
  if (!ctx.access.allows('role_assignments', 'write', account)) {
    throw missingRight(ctx);
  }
  const missing = role.permissions.filter((permission) => !ctx.access.covers(permission, account));
  if (missing.length > 0) {
    throw new AppError('FORBIDDEN', `You cannot grant or remove role "${role.name}": you lack ${missing.join(', ')}.`);
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
  if (issues.length > 0) throw AppError.validation(issues);
  return roles;
}

export async function assignRole(ctx: RequestContext, raw: z.input<typeof assignInput>) {
  const input = validate(assignInput, raw);
  const [role] = await loadTargets(ctx, { ...input, roleIds: [input.roleId] }, () => 'roleId');
  assertMayManage(ctx, input.accountId, role!);
  try {
    const assignment = await ctx.db.roleAssignment.create({
      data: { id: newId('roleAssignment'), organisationId: ctx.organisation!.id, ...input },
      include: INCLUDE,
    });
    forgetCachedAccess(ctx);
    return assignment;
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError('CONFLICT', 'The user already has this role on this account.');
    throw error;
  }
}

/** Replaces every role of the user on the account with `roleIds`, atomically. */
export async function replaceRoles(ctx: RequestContext, raw: z.input<typeof replaceInput>) {
  const input = validate(replaceInput, raw);
  const roleIds = [...new Set(input.roleIds)];
  const roles = await loadTargets(ctx, { ...input, roleIds }, (i) => `roleIds.${input.roleIds.indexOf(roleIds[i]!)}`);
  const current = await ctx.db.roleAssignment.findMany({
    where: { userId: input.userId, accountId: input.accountId },
    include: { role: true },
  });
  assertMayManage(ctx, input.accountId, { name: '', permissions: [] });
  for (const role of roles) if (!current.some((a) => a.roleId === role.id)) assertMayManage(ctx, input.accountId, role);
  for (const assignment of current) if (!roleIds.includes(assignment.roleId)) assertMayManage(ctx, input.accountId, assignment.role);

  const assignments = await ctx.db.$transaction(async (tx) => {
    await tx.roleAssignment.deleteMany({ where: { userId: input.userId, accountId: input.accountId, roleId: { notIn: roleIds } } });
    const kept = new Set(current.map((a) => a.roleId));
    for (const id of roleIds) {
      if (kept.has(id)) continue;
      await tx.roleAssignment.create({
        data: { id: newId('roleAssignment'), organisationId: ctx.organisation!.id, userId: input.userId, accountId: input.accountId, roleId: id },
      });
    }
    return tx.roleAssignment.findMany({
      where: { userId: input.userId, accountId: input.accountId },
      include: INCLUDE,
      orderBy: { createdAt: 'asc' },
    });
  });
  forgetCachedAccess(ctx);
  return assignments;
}

export async function removeRoleAssignment(ctx: RequestContext, id: string) {
  const assignment = await ctx.db.roleAssignment.findUnique({ where: { id }, include: { role: true } });
  if (!assignment || !ctx.access.allows('role_assignments', 'read', assignment.accountId)) {
    throw AppError.notFound('Role assignment not found.');
  }
  assertMayManage(ctx, assignment.accountId, assignment.role);
  await ctx.db.roleAssignment.delete({ where: { id } });
  forgetCachedAccess(ctx);
  return { success: true };
}
