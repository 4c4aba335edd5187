import { AuthScopeFailureType, type AuthFailure } from '@pothos/plugin-scope-auth';
import { CHANNEL_KEYS_SALES_ONLY, SALES_API_TAKES_CHANNEL_KEYS } from '../src/auth/channel-keys.ts';
import { missingRight } from '../src/auth/refusal.ts';
import { signedInCustomer, type RequestContext } from '../src/context.ts';
import { AppError } from '../src/errors.ts';

/** The scope names a failed authorisation check tripped over. */
function failedScopes(failure: AuthFailure): string[] {
  if (failure.kind === AuthScopeFailureType.AuthScope) return [failure.scope];
  if (failure.kind === AuthScopeFailureType.AnyAuthScopes || failure.kind === AuthScopeFailureType.AllAuthScopes) {
    return failure.failures.flatMap(failedScopes);
  }
  return [];
}

/**
 * The contract's answer to a refused field: no credential 401; a channel key on a management
 * field, or anything but a channel key on a sales field, 401; an API key or embed token on a
 * signed-in-only field 403 SIGNED_IN_USER_REQUIRED; no X-Service-Org 400; a signed-in user
 * without the permission 403 FORBIDDEN; an API key or embed token without the scope 404 (the
 * existence of the thing is not confirmed).
 */
export function refusal(ctx: RequestContext, failure: AuthFailure): AppError {
  if (ctx.principal?.kind !== 'channel' && failedScopes(failure).includes('salesChannel')) {
    return new AppError('UNAUTHENTICATED', SALES_API_TAKES_CHANNEL_KEYS);
  }
  if (!signedInCustomer(ctx.principal) && failedScopes(failure).includes('customer')) {
    return new AppError('UNAUTHENTICATED', CUSTOMER_TOKEN_REQUIRED);
  }
  if (!ctx.principal) return new AppError('UNAUTHENTICATED');
  if (ctx.principal.kind === 'customer') return new AppError('UNAUTHENTICATED', CUSTOMER_TOKENS_ONLY);
  if (ctx.principal.kind === 'channel') return new AppError('UNAUTHENTICATED', CHANNEL_KEYS_SALES_ONLY);
  if (ctx.principal.kind !== 'staff' && failedScopes(failure).includes('signedInUser')) {
    return new AppError('SIGNED_IN_USER_REQUIRED');
  }
  if (!ctx.organisation) return new AppError('ORG_REQUIRED');
  return missingRight(ctx);
}

const CUSTOMER_TOKEN_REQUIRED = 'This route takes a customer token (POST /live/sales/customer-tokens) as Authorization: Bearer <token>.';
const CUSTOMER_TOKENS_ONLY = "A customer token authenticates only the customer's own routes (GET /live/sales/me/orders).";
