import type { RequestContext } from '../context.ts';
import type { ValidationIssue } from '../errors.ts';
import { missingRight } from './refusal.ts';

/**
 * The no-escalation rule, in one place: a caller hands out only rights it holds itself, on the
 * accounts where it holds them. Every operation that grants rights goes through here (roles and
 * their edits, assignments, invitations, API key scopes, embed session scopes). A refusal is the
 * contract's missing-right answer: 403 FORBIDDEN for signed-in staff, 404 for an API key or embed
 * token (which learns nothing about the thing it reached for).
 */

/** The permissions of `permissions` the caller does not hold on `accountId` (null: on every account). */
export function notHeld(ctx: RequestContext, permissions: readonly string[], accountId: string | null): string[] {
  return permissions.filter((permission) => !ctx.access.covers(permission, accountId));
}

/**
 * Refuses unless the caller holds every permission on the account. `path` is the input value that
 * asked for them (`scopes`, `roleIds.2`), named in the refusal's details so a form can mark it;
 * null where no input value did (removing a role someone holds).
 */
export function assertMayGrant(
  ctx: RequestContext,
  permissions: readonly string[],
  accountId: string | null,
  what: string,
  path: string | null,
): void {
  const missing = notHeld(ctx, permissions, accountId);
  if (missing.length > 0) {
    const message = `You cannot grant ${what}: you do not hold ${listed(missing)}${accountId ? ` on ${accountId}` : ' on every account'}.`;
    throw missingRight(ctx, message, at(path, message));
  }
}

/**
 * Refuses unless the caller could define a role with these permissions (Access.mayDefine): a role
 * grants nothing until assigned, and assigning checks the account.
 */
export function assertMayDefine(ctx: RequestContext, permissions: readonly string[], what: string, path: string): void {
  const missing = permissions.filter((permission) => !ctx.access.mayDefine(permission));
  if (missing.length > 0) {
    const message = `You cannot put into ${what} permissions you do not hold: ${listed(missing)}.`;
    throw missingRight(ctx, message, at(path, message));
  }
}

function at(path: string | null, message: string): ValidationIssue[] | undefined {
  return path === null ? undefined : [{ path, message }];
}

/** At most a few names in a message; the rest as a count. */
function listed(items: readonly string[]): string {
  const shown = items.slice(0, 5).join(', ');
  return items.length > 5 ? `${shown} and ${items.length - 5} more` : shown;
}
