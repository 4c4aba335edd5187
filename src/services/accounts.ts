import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { paginate, type RawPageArgs } from '../pagination.ts';
import { validate } from '../validation.ts';
import { missingRight } from '../auth/refusal.ts';
import { statusOf } from '../statuses.ts';

const name = z.string().trim().min(1).max(255);
const status = statusOf('account');
export const createAccountInput = z.strictObject({ name, status: status.optional() });
export const updateAccountInput = z.strictObject({ name, status }).partial();

/** Accounts the caller may read, never deleted ones. */
export function visibleAccountsWhere(ctx: RequestContext) {
  const accounts = ctx.access.accountsFor('accounts', 'read');
  return { isDeleted: false, ...(accounts === 'all' ? {} : { id: { in: accounts } }) };
}

/** Accounts the caller may read, oldest first, never deleted ones. */
export function listAccounts(ctx: RequestContext, args: RawPageArgs) {
  const where = visibleAccountsWhere(ctx);
  return paginate(
    args,
    () => ctx.db.account.count({ where }),
    ({ skip, take }) => ctx.db.account.findMany({ where, skip, take, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] }),
  );
}

export async function getAccount(ctx: RequestContext, id: string) {
  const account = await ctx.db.account.findFirst({ where: { id, isDeleted: false } });
  if (!account || !ctx.access.allows('accounts', 'read', id)) throw AppError.notFound('Account not found.');
  return account;
}

export async function createAccount(ctx: RequestContext, raw: Record<string, unknown>) {
  const input = validate(createAccountInput, raw);
  return ctx.db.account.create({
    data: { id: newId('account'), organisationId: ctx.organisation!.id, name: input.name, status: input.status ?? 'active' },
  });
}

export async function updateAccount(ctx: RequestContext, id: string, raw: Record<string, unknown>) {
  const input = validate(updateAccountInput, raw);
  await getAccount(ctx, id);
  if (!ctx.access.allows('accounts', 'write', id)) throw missingRight(ctx);
  return ctx.db.account.update({ where: { id }, data: input });
}

/** Soft delete: the account disappears from lists and cannot own new things. */
export async function deleteAccount(ctx: RequestContext, id: string) {
  await getAccount(ctx, id);
  if (!ctx.access.allows('accounts', 'write')) throw missingRight(ctx);
  await ctx.db.account.update({ where: { id }, data: { isDeleted: true } });
  return { success: true, id };
}

type Db = Pick<RequestContext['db'], 'account'>;

/**
 * The account a new thing belongs to: it must exist in this organisation and not be deleted (else
 * 400 naming accountId), and the caller must hold `resource.write` on it (else missingRight).
 * `db` is the caller's transaction when the check belongs to one.
 */
export async function owningAccount(ctx: RequestContext, resource: string, accountId: string, db: Db = ctx.db): Promise<string> {
  const account = await db.account.findFirst({ where: { id: accountId, isDeleted: false }, select: { id: true } });
  if (!account) throw AppError.validation([{ path: 'accountId', message: 'No such account in this organisation (or it was deleted).' }]);
  if (!ctx.access.allows(resource, 'write', account.id)) throw missingRight(ctx);
  return account.id;
}
