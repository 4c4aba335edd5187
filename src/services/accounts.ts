import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { changedSince, OLDEST_FIRST, type PolledListArgs, paginate } from '../pagination.ts';
import { validate } from '../validation.ts';
import { forgetCachedAccess } from '../auth/forget.ts';
import { missingRight } from '../auth/refusal.ts';
import { assertMay } from './access.ts';
import { statusOf } from '../statuses.ts';
import { audited, changesBetween, auditedChange } from './audit.ts';

const name = z.string().trim().min(1).max(255);
const status = statusOf('account');
export const createAccountInput = z.strictObject({ name, status: status.optional() });
export const updateAccountInput = z.strictObject({ name, status }).partial();

/** Accounts the caller may read, never deleted ones. */
export function visibleAccountsWhere(ctx: RequestContext) {
  const accounts = ctx.access.accountsFor('accounts', 'read');
  return { isDeleted: false, ...(accounts === 'all' ? {} : { id: { in: accounts } }) };
}

/** Accounts the caller may read, oldest first, never deleted ones; those changed since `updatedSince` if given. */
export function listAccounts(ctx: RequestContext, args: PolledListArgs) {
  const { updatedSince, ...page } = args;
  const where = { ...visibleAccountsWhere(ctx), ...changedSince(updatedSince) };
  return paginate(
    page,
    OLDEST_FIRST,
    (keyset) => ctx.db.account.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.account.findMany({ where: { AND: [where, keyset] }, skip, take, orderBy }),
  );
}

export async function getAccount(ctx: RequestContext, id: string) {
  const account = await ctx.db.account.findFirst({ where: { id, isDeleted: false } });
  if (!account || !ctx.access.allows('accounts', 'read', id)) throw AppError.notFound('Account not found.');
  return account;
}

export async function createAccount(ctx: RequestContext, raw: Record<string, unknown>) {
  const input = validate(createAccountInput, raw);
  return audited(
    ctx,
    (tx) =>
      tx.account.create({
        data: { id: newId('account'), organisationId: ctx.organisation!.id, name: input.name, status: input.status ?? 'active' },
      }),
    (account) => ({ action: 'account.created', targetId: account.id, accountId: account.id, changes: changesBetween(null, account) }),
  );
}

/** The account to change: a credential holding accounts.write needs no accounts.read to change it. */
async function writableAccount(ctx: RequestContext, id: string) {
  const account = await ctx.db.account.findFirst({ where: { id, isDeleted: false } });
  if (!account) throw AppError.notFound('Account not found.');
  assertMay(ctx, 'accounts', 'write', account.id, 'Account');
  return account;
}

export async function updateAccount(ctx: RequestContext, id: string, raw: Record<string, unknown>) {
  const input = validate(updateAccountInput, raw);
  await writableAccount(ctx, id);
  const account = await auditedChange(
    ctx,
    { table: 'accounts', id, read: (tx) => tx.account.findFirst({ where: { id, isDeleted: false } }) },
    (tx) => tx.account.update({ where: { id }, data: input }),
    (after, before) => ({ action: 'account.updated', targetId: id, accountId: id, changes: changesBetween(before, after) }),
  );
  forgetCachedAccess(ctx);
  return account;
}

/** Soft delete: the account disappears from lists and cannot own new things. */
export async function deleteAccount(ctx: RequestContext, id: string) {
  await writableAccount(ctx, id);
  if (!ctx.access.allows('accounts', 'write')) throw missingRight(ctx);
  await audited(
    ctx,
    (tx) => tx.account.update({ where: { id }, data: { isDeleted: true } }),
    () => ({ action: 'account.deleted', targetId: id, accountId: id, changes: { isDeleted: { before: false, after: true } } }),
  );
  // Keys and sessions of the account authenticated just before must stop now, in this process too.
  forgetCachedAccess(ctx);
  return { success: true, id };
}

type Db = Pick<RequestContext['db'], 'account'>;

/**
 * The account a new thing belongs to: it must exist in this organisation and not be deleted (else
 * 404 naming accountId), and the caller must hold `resource.write` on it (else missingRight).
 * `db` is the caller's transaction when the check belongs to one.
 */
export async function owningAccount(ctx: RequestContext, resource: string, accountId: string, db: Db = ctx.db): Promise<string> {
  const account = await db.account.findFirst({ where: { id: accountId, isDeleted: false }, select: { id: true } });
  if (!account)
    throw AppError.unknownReferences([{ path: 'accountId', message: 'No such account in this organisation (or it was deleted).' }]);
  if (!ctx.access.allows(resource, 'write', account.id)) throw missingRight(ctx);
  return account.id;
}
