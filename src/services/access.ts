import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { missingRight } from '../auth/refusal.ts';

/**
 * Account-scoped access, the one style of check for things that belong to an account (venues,
 * events, occurrences, ticket types, sales channels, orders, customers, passes, webhooks):
 * `assertMay` for one row, `readableAccounts` for a list's condition, `authorised` to load one and
 * check it in one call.
 */

/**
 * May the caller `action` a row of `resource` on `accountId`? A row they may neither read nor
 * write is 404 (its existence is not confirmed); one they may see but not act on is `missingRight`.
 */
export function assertMay(ctx: RequestContext, resource: string, action: string, accountId: string, what: string): void {
  const may = (a: string) => ctx.access.allows(resource, a, accountId);
  if (!may('read') && !may('write') && !may(action)) throw AppError.notFound(`${what} not found.`);
  if (!may(action)) throw missingRight(ctx);
}

/** The `accountId` condition of a list: the accounts the caller may read, narrowed by a filter. */
export function readableAccounts(ctx: RequestContext, resource: string, only?: string | null): string | { in: string[] } | undefined {
  const accounts = ctx.access.accountsFor(resource, 'read');
  if (accounts === 'all') return only ?? undefined;
  return { in: only ? accounts.filter((account) => account === only) : accounts };
}

/**
 * `row` when it exists and the caller may `action` it (`what` names it in the 404), else the
 * contract's answer: absent or unreadable 404, readable but not allowed `missingRight`.
 */
export function authorised<T extends { accountId: string }>(
  ctx: RequestContext,
  row: T | null | undefined,
  resource: string,
  action: string,
  what: string,
): T {
  if (!row) throw AppError.notFound(`${what} not found.`);
  assertMay(ctx, resource, action, row.accountId, what);
  return row;
}
