import { RequestCache } from '@pothos/plugin-scope-auth';
import type { RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';

/**
 * Whether the request's credential or rights may have changed since it authenticated: a request
 * authenticates on its headers, and its body, a connection or a cost lease can keep it waiting
 * while an administrator revokes its key or removes a role, and that change answers first.
 */
export function rightsMoved(ctx: Pick<RequestContext, 'runtime' | 'organisation' | 'principal' | 'rightsReadAt'>): boolean {
  return ctx.runtime.authCache.readBeforeChange(ctx);
}

/**
 * Reads the request's credential again (through the auth cache) and takes the rights it holds now;
 * refuses with 401 when it no longer authenticates. What a request does runs with the rights its
 * credential holds when the work starts, not when its headers arrived
 * (test/platform/rights-after-change.test.ts).
 */
export async function judgeAgain(ctx: RequestContext): Promise<void> {
  const at = ctx.runtime.authCache.now();
  const current = await ctx.reauthenticate();
  if (!current.principal) {
    throw new AppError('UNAUTHENTICATED', 'The credential was revoked, or expired, while this request was on its way.');
  }
  ctx.principal = current.principal;
  ctx.access = current.access;
  ctx.rightsReadAt = at;
  // Scopes judged with the old rights (a route's check of its root field, before the body) are
  // judged again.
  RequestCache.clearForContext(ctx);
}

/**
 * `judgeAgain` when the request's rights may have moved since they were read, else nothing: no
 * promise, so the common path waits for nothing.
 */
export function currentRights(ctx: RequestContext): Promise<void> | undefined {
  return rightsMoved(ctx) ? judgeAgain(ctx) : undefined;
}
