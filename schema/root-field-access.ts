import { RequestCache, type AuthFailure } from '@pothos/plugin-scope-auth';
import type { GraphQLSchema } from 'graphql';
import type { RequestContext } from '../src/context.ts';
import type { AppError } from '../src/errors.ts';
import { builder } from './builder.ts';
import { refusal } from './refusal.ts';

/**
 * Whether the caller may call a root field at all, by the field's own `authScopes` (who: signed in,
 * an API key, which organisation, which permission somewhere), before anything they sent is looked
 * at: a caller who may not call a mutation is told so, not that its body is wrong
 * (test/platform/idempotency-attacks.test.ts, "credential before body"). Scope maps given as
 * functions of the arguments are left to execution, which applies every scope again anyway; the
 * same request cache serves both, so nothing is evaluated twice.
 */
export async function rootFieldRefusal(
  schema: GraphQLSchema,
  operation: 'query' | 'mutation',
  fieldName: string,
  ctx: RequestContext,
): Promise<AppError | null> {
  const type = operation === 'query' ? schema.getQueryType() : schema.getMutationType();
  const field = type?.getFields()[fieldName];
  const scopes = (field?.extensions as { pothosOptions?: { authScopes?: unknown } } | undefined)?.pothosOptions?.authScopes;
  if (!type || scopes === undefined || typeof scopes === 'function') return null;
  // No resolve info: it serves only scopes a parent granted, and a root field has no parent.
  const cache: RequestCache<never> = RequestCache.fromContext<never>(ctx as never, builder as never);
  const failure: AuthFailure | null = await cache.evaluateScopeMap(scopes as Parameters<typeof cache.evaluateScopeMap>[0]);
  return failure ? refusal(ctx, failure) : null;
}
