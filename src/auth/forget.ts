import type { RequestContext } from '../context.ts';

/** Call after a change to keys, roles, assignments or organisation settings has committed. */
export function forgetCachedAccess(ctx: RequestContext): void {
  if (ctx.organisation) ctx.runtime.authCache.forgetOrganisation(ctx.organisation.id);
}
