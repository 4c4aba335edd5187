import { forgetCachedAccess } from '../auth/forget.ts';
import { z } from 'zod';
import { assertMayDefine, assertMayGrant } from '../auth/granting.ts';
import { isValidPermission } from '../auth/permissions.ts';
import { missingRight } from '../auth/refusal.ts';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import type { Role } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { LIMITS, limitedArray } from '../limits/limits.ts';
import { assertAdministratorRemains, grantsAdministration } from './administrators.ts';
import { validate } from '../validation.ts';
import { changedSince, type PolledListArgs, paginate } from '../pagination.ts';
import { audited, auditedChange, changesBetween, recordAudit } from './audit.ts';
import { removeAssignments } from './assignment-audit.ts';

const permissionList = limitedArray(
  z.string().refine(isValidPermission, {
    error: (issue) =>
      `"${String(issue.input).slice(0, 300)}" is not a permission string (resource.action, optionally :all or :acc_<id>; 1 to 255 characters)`,
  }),
  'permissionsPerRole',
  `at most ${LIMITS.permissionsPerRole} permissions per role`,
).pipe(z.array(z.string()).min(1, 'at least 1 permission'));

export const createRoleInput = z.strictObject({
  name: z.string().trim().min(1).max(255),
  description: z.string().max(500).nullish(),
  permissions: permissionList,
});

export const updateRoleInput = createRoleInput.partial();

export type CreateRoleInput = z.input<typeof createRoleInput>;
export type UpdateRoleInput = z.input<typeof updateRoleInput>;

/** A page of the organisation's roles, system roles first. */
export function listRoles(ctx: RequestContext, args: PolledListArgs = {}) {
  const { updatedSince, ...page } = args;
  const where = { isDeleted: false, ...changedSince(updatedSince) };
  return paginate(
    page,
    [
      ['isSystemRole', 'desc'],
      ['createdAt', 'asc'],
      ['id', 'asc'],
    ] as const,
    (keyset) => ctx.db.role.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.role.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
  );
}

export async function getRole(ctx: RequestContext, id: string) {
  const role = await ctx.db.role.findFirst({ where: { id, isDeleted: false } });
  if (!role) throw AppError.notFound('Role not found.');
  return role;
}

async function assertNameFree(ctx: RequestContext, name: string, exceptId?: string) {
  const clash = await ctx.db.role.findFirst({
    where: { name: { equals: name, mode: 'insensitive' }, isDeleted: false, ...(exceptId ? { id: { not: exceptId } } : {}) },
    select: { id: true },
  });
  if (clash) throw new AppError('CONFLICT', `A role named "${name}" already exists.`);
}

/**
 * A permission scoped to one account (`events.read:acc_…`) names an account of the organisation,
 * as any id in a body does: one that is not is 404 naming the permission (it could never grant).
 * Asked after the caller's rights, so it tells nothing about accounts they may not hand out.
 */
async function assertAccountsExist(ctx: RequestContext, permissions: readonly string[]): Promise<void> {
  const named = permissions.flatMap((permission, index) => {
    const scope = permission.split(':')[1];
    return scope?.startsWith('acc_') ? [{ index, accountId: scope }] : [];
  });
  if (named.length === 0) return;
  const ids = [...new Set(named.map((entry) => entry.accountId))];
  const found = await ctx.db.account.findMany({ where: { id: { in: ids }, isDeleted: false }, select: { id: true } });
  const known = new Set(found.map((account) => account.id));
  const unknown = named.filter((entry) => !known.has(entry.accountId));
  if (unknown.length > 0) {
    throw AppError.unknownReferences(
      unknown.map(({ index, accountId }) => ({ path: `permissions.${index}`, message: `No account ${accountId} in this organisation.` })),
    );
  }
}

export async function createRole(ctx: RequestContext, raw: Record<string, unknown>) {
  const input = validate(createRoleInput, raw);
  assertMayDefine(ctx, input.permissions, 'a role', 'permissions');
  await assertAccountsExist(ctx, input.permissions);
  await assertNameFree(ctx, input.name);
  return audited(
    ctx,
    (tx) =>
      tx.role.create({
        data: {
          id: newId('role'),
          organisationId: ctx.organisation!.id,
          name: input.name,
          description: input.description ?? null,
          permissions: [...new Set(input.permissions)],
        },
      }),
    (created) => ({ action: 'role.created', targetId: created.id, changes: changesBetween(null, created) }),
  );
}

/**
 * A change to a role is judged by its effect on every holder: on each account the role is assigned
 * on, the caller must be able to assign it as it was and as it will be (role_assignments.write
 * there, and every old and new permission held there). So nobody edits their own role, or anyone
 * else's, into more than they hold, or strips a role they could not have handed out.
 */
async function assertMayChangeHolders(ctx: RequestContext, role: Role, permissions: readonly string[], path: string | null): Promise<void> {
  const held = await ctx.db.roleAssignment.findMany({ where: { roleId: role.id }, distinct: ['accountId'], select: { accountId: true } });
  for (const { accountId } of held) {
    if (!ctx.access.allows('role_assignments', 'write', accountId)) {
      throw missingRight(ctx, `Role "${role.name}" is assigned on ${accountId}, where you may not manage role assignments.`);
    }
    assertMayGrant(ctx, [...role.permissions, ...permissions], accountId, `role "${role.name}" (it is assigned on ${accountId})`, path);
  }
}

export async function updateRole(ctx: RequestContext, id: string, raw: Record<string, unknown>) {
  const input = validate(updateRoleInput, raw);
  const role = await getRole(ctx, id);
  if (role.isSystemRole) throw new AppError('CONFLICT', 'System roles cannot be modified.');
  const permissions = input.permissions === undefined ? undefined : [...new Set(input.permissions)];
  if (permissions) {
    assertMayDefine(ctx, permissions, 'a role', 'permissions');
    await assertAccountsExist(ctx, input.permissions!);
    await assertMayChangeHolders(ctx, role, permissions, 'permissions');
  }
  if (input.name !== undefined) await assertNameFree(ctx, input.name, id);
  const updated = await auditedChange(
    ctx,
    { table: 'roles', id, read: (tx) => tx.role.findFirst({ where: { id, isDeleted: false } }) },
    async (tx, before) => {
      const changed = await tx.role.update({
        where: { id },
        data: {
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(input.description !== undefined ? { description: input.description } : {}),
          ...(permissions !== undefined ? { permissions } : {}),
        },
      });
      if (grantsAdministration([before.permissions]) && !grantsAdministration([changed.permissions])) {
        await assertAdministratorRemains(tx, role.organisationId);
      }
      return changed;
    },
    (changed, before) => ({ action: 'role.updated', targetId: id, changes: changesBetween(before, changed) }),
  );
  forgetCachedAccess(ctx);
  return updated;
}

/** Marks the role deleted and removes its assignments (each audited), in one transaction. */
export async function deleteRole(ctx: RequestContext, id: string) {
  const role = await getRole(ctx, id);
  if (role.isSystemRole) throw new AppError('CONFLICT', 'System roles cannot be deleted.');
  await assertMayChangeHolders(ctx, role, [], null);
  await ctx.db.$transaction(async (tx) => {
    await removeAssignments(tx, ctx, { roleId: id });
    await tx.role.update({ where: { id }, data: { isDeleted: true } });
    await recordAudit(tx, ctx, { action: 'role.deleted', targetId: id, changes: { isDeleted: { before: false, after: true } } });
    if (grantsAdministration([role.permissions])) await assertAdministratorRemains(tx, role.organisationId);
  });
  forgetCachedAccess(ctx);
  return { success: true, id };
}
