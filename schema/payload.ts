import type { ObjectRef } from '@pothos/core';
import type { RequestContext } from '../src/context.ts';
import { AppError, type ValidationIssue } from '../src/errors.ts';
import { builder } from './builder.ts';
import { valuesEnum } from './types/common.ts';

/**
 * Every mutation answers a payload: the thing it changed, or `userErrors` saying why it did not.
 * A document with several mutations answers each on its own: one refused for its input or for the
 * state it met never nulls the others (test/platform/mutation-payloads.test.ts).
 *
 * Expected failures are user errors: the input is invalid, what it names is not there or is gone,
 * the state conflicts, or it asks to grant a right the caller does not hold (FORBIDDEN naming the
 * input value). Everything else stays in `errors` at the mutation's path: a missing right to run
 * the mutation at all (FORBIDDEN, with the payload null), an exhausted budget, a fault of the
 * service. Wherever the refusal names input values, each is a user error with its `field`.
 */

const USER_ERROR_CODES = ['VALIDATION_FAILED', 'NOT_FOUND', 'CONFLICT', 'GONE', 'FORBIDDEN'] as const;
type UserErrorCode = (typeof USER_ERROR_CODES)[number];

const UserErrorCodeEnum = valuesEnum('UserErrorCode', 'Why a mutation did not happen; the same codes as `extensions.code` and /v1.', {
  VALIDATION_FAILED: 'A value of the input is invalid; `field` names it.',
  NOT_FOUND: 'Something the mutation names does not exist in the organisation, or is not visible to the caller.',
  CONFLICT: 'The change conflicts with the current state (a duplicate, a state that does not allow it).',
  GONE: 'What the mutation names is no longer available (an expired or used token or invitation).',
  FORBIDDEN: 'The input asks to grant a right you do not hold (a scope, a permission, a role); `field` names it.',
} satisfies Record<UserErrorCode, string>);

export interface UserError {
  field: string[] | null;
  code: UserErrorCode;
  message: string;
}

export const UserErrorRef = builder.objectRef<UserError>('UserError').implement({
  description: 'An expected reason a mutation did not happen: invalid input, something missing, a conflict.',
  fields: (t) => ({
    field: t.stringList({
      nullable: true,
      description: 'Path of the input value at fault, from the mutation\'s arguments (`["input", "name"]`); null when no one value is.',
      resolve: (error) => error.field,
    }),
    code: t.field({ type: UserErrorCodeEnum, description: 'What kind of failure.', resolve: (error) => error.code }),
    message: t.exposeString('message', { description: 'What went wrong, for a person.' }),
  }),
});

export interface Payload<T> {
  result: T | null;
  userErrors: UserError[];
  /** The refusal the user errors come from, for a payload that answers more of it (`RedeemPassPayload.refusal`). */
  failure?: AppError;
  /**
   * Ids of what the change touched beside its result, for the payload's own fields to answer (the
   * user and role of a removed assignment), so a normalised cache updates them without a refetch.
   */
  touched?: Record<string, string | null>;
}

/**
 * The `type` and nullability of a mutation answering `<Name>Payload { <field>, userErrors }`. The
 * payload is nullable so that a mutation refused outright (a missing right) nulls only itself.
 */
type Ref<T> = ObjectRef<typeof builder.$inferSchemaTypes, T>;

export function payload<T>(name: string, field: string, type: Ref<T>, description: string): PayloadField<T>;
export function payload<T>(name: string, field: string, type: [Ref<T>], description: string): PayloadField<T[]>;
export function payload<T>(name: string, field: string, type: Ref<T> | [Ref<T>], description: string): PayloadField<T> {
  const ref = builder.objectRef<Payload<T>>(`${name}Payload`).implement({
    description: `The answer of \`${name.charAt(0).toLowerCase()}${name.slice(1)}\`: ${description.charAt(0).toLowerCase()}${description.slice(1).replace(/\.$/, '')}, or why not.`,
    fields: (t) => ({
      [field]: t.field({
        type: type as never,
        nullable: true,
        description: `${description} Null when userErrors says why not.`,
        resolve: (answer) => answer.result as never,
      }),
      userErrors: t.field({
        type: [UserErrorRef],
        description: 'Why the mutation did not happen; empty when it did.',
        resolve: (answer) => answer.userErrors,
      }),
    }),
  });
  return { type: ref, nullable: true } as const;
}

interface PayloadField<T> {
  type: Ref<Payload<T>>;
  nullable: true;
}

/** The payload of a deletion: the deleted thing's id. */
export function deletePayload(name: string, what: string) {
  const ref = builder.objectRef<Payload<string>>(`${name}Payload`).implement({
    description: `The answer of \`${name.charAt(0).toLowerCase()}${name.slice(1)}\`: the id of the deleted ${what}, or why not.`,
    fields: (t) => ({
      deletedId: t.id({
        nullable: true,
        description: `Id of the deleted ${what}; null when userErrors says why not.`,
        resolve: (answer) => answer.result,
      }),
      userErrors: t.field({
        type: [UserErrorRef],
        description: 'Why the deletion did not happen; empty when it did.',
        resolve: (answer) => answer.userErrors,
      }),
    }),
  });
  return { type: ref, nullable: true } as const;
}

/** Contexts (the /v1 and /live routes) whose callers receive every failure as an error. */
const failingContexts = new WeakSet<RequestContext>();

/**
 * /v1 and /live answer a refused mutation with the contract's error and status, so there a
 * mutation's failure stays an error, details and headers included.
 */
export function failuresAsErrors(ctx: RequestContext): void {
  failingContexts.add(ctx);
}

/**
 * Runs a mutation's use case: its result, or the expected failure as user errors. `argument`
 * names the argument that input paths are relative to (the use cases report `name`, the graph
 * says `["input", "name"]`).
 */
export async function answer<T>(ctx: RequestContext, run: () => Promise<T> | T, argument: string | null = 'input'): Promise<Payload<T>> {
  try {
    return { result: await run(), userErrors: [] };
  } catch (error) {
    if (!(error instanceof AppError) || failingContexts.has(ctx) || !isUserError(error)) throw error;
    return { result: null, userErrors: userErrorsOf(error, argument), failure: error };
  }
}

/** The deletion's payload: the id the use case deleted, and the ids of what else it touched. */
export async function deleted(
  ctx: RequestContext,
  run: () => Promise<{ id: string; touched?: Record<string, string | null> }>,
): Promise<Payload<string>> {
  const { result, userErrors } = await answer(ctx, run, null);
  return { result: result?.id ?? null, userErrors, touched: result?.touched };
}

/** A refusal of the caller's right is a user error only where it names the input values at fault. */
function isUserError(error: AppError): boolean {
  if (error.code === 'FORBIDDEN') return issuesOf(error).length > 0;
  return (USER_ERROR_CODES as readonly string[]).includes(error.code);
}

/** The input values an error names (`details` of `{path, message}`), or none. */
function issuesOf(error: AppError): ValidationIssue[] {
  const details: unknown[] = Array.isArray(error.details) ? error.details : [];
  const named = details.every((issue) => typeof (issue as Partial<ValidationIssue>)?.path === 'string');
  return named ? (details as ValidationIssue[]) : [];
}

function userErrorsOf(error: AppError, argument: string | null): UserError[] {
  const code = error.code as UserErrorCode;
  const issues = issuesOf(error);
  if (issues.length === 0) return [{ field: null, code, message: error.message }];
  return issues.map((issue) => ({ field: fieldOf(issue.path, argument), code, message: issue.message }));
}

/** `name` -> ["input", "name"]; `variables.id` -> ["id"]; `(root)` -> [argument]. */
function fieldOf(path: string, argument: string | null): string[] | null {
  if (path === '(more)') return null;
  if (path === '(root)' || path === '') return argument === null ? null : [argument];
  const segments = path.split('.');
  if (segments[0] === 'variables' || segments[0] === 'args') return segments.slice(1);
  return argument === null || segments[0] === argument ? segments : [argument, ...segments];
}
