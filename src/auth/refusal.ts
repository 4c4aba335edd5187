import type { RequestContext } from '../context.ts';
import { AppError, type ValidationIssue } from '../errors.ts';

/**
 * The answer to a credential that lacks a right (docs/spec/contract.md): a signed-in user gets 403
 * FORBIDDEN; an API key or embed token gets 404 NOT_FOUND, so the thing's existence is not confirmed.
 * `details` names the input values at fault where the refusal is about what the input asks for (a
 * permission it would grant), so a form can mark them.
 */
export function missingRight(ctx: RequestContext, message?: string, details?: ValidationIssue[]): AppError {
  return new AppError(ctx.principal?.kind === 'staff' ? 'FORBIDDEN' : 'NOT_FOUND', message, details);
}
