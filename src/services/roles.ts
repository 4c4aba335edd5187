import { forgetCachedAccess } from '../auth/forget.ts';
import { z } from 'zod';
import { isValidPermission } from '../auth/permissions.ts';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { validate } from './sessions.ts';

const permissionList = z
  .array(
    z
      .string()
      .refine(isValidPermission, {
        error: (issue) =>
          `"${String(issue.input).slice(0, 300)}" is not a permission string (resource.action, optionally :all or :acc_<id>; 1 to 255 characters)`,
      }),
  )
  .min(1, 'at least 1 permission');

const createInput = z.object({
  name: z.string().trim().min(1).max(255),
  description: z.string().max(500).nullish(),
  permissions: permissionList,
});

const updateInput = createInput.partial();

export type CreateRoleInput = z.input<typeof createInput>;
export type UpdateRoleInput = z.input<typeof updateInput>;

export function listRoles(ctx: RequestContext) {
  return ctx.db.role.findMany({ where: { isDeleted: false }, orderBy: [{ isSystemRole: 'desc' }, { createdAt: 'asc' }] });
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

export async function createRole(ctx: RequestContext, raw: Record<string, unknown>) {
  const input = validate(createInput, raw);
  await assertNameFree(ctx, input.name);
  return ctx.db.role.create({
    data: {
      id: newId('role'),
      organisationId: ctx.organisation!.id,
      name: input.name,
      description: input.description ?? null,
      permissions: input.permissions,
    },
  });
}

export async function updateRole(ctx: RequestContext, id: string, raw: Record<string, unknown>) {
  const input = validate(updateInput, raw);
  const role = await getRole(ctx, id);
  if (role.isSystemRole) throw new AppError('CONFLICT', 'System roles cannot be modified.');
  if (input.name !== undefined) await assertNameFree(ctx, input.name, id);
  const updated = await ctx.db.role.update({
    where: { id },
    data: {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.permissions !== undefined ? { permissions: input.permissions } : {}),
    },
  });
  forgetCachedAccess(ctx);
  return updated;
}

/** Marks the role deleted and removes its assignments, in one transaction. */
export async function deleteRole(ctx: RequestContext, id: string) {
  const role = await getRole(ctx, id);
  if (role.isSystemRole) throw new AppError('CONFLICT', 'System roles cannot be deleted.');
  await ctx.db.$transaction([
    ctx.db.roleAssignment.deleteMany({ where: { roleId: id } }),
    ctx.db.role.update({ where: { id }, data: { isDeleted: true } }),
  ]);
  forgetCachedAccess(ctx);
  return { success: true, id };
}
