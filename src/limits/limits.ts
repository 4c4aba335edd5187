import { z } from 'zod';
import { AppError, ISSUES_PER_ERROR, type ValidationIssue } from '../errors.ts';

/**
 * The service's size limits, in one table: what a request may hold and what state may grow to.
 * A request beyond one answers 400 VALIDATION_FAILED whose issue names the limit (`limit`, `max`),
 * so a client can tell a bound from a typo. docs/security.md lists them.
 */
export const LIMITS = {
  /** Permission strings in one role. */
  permissionsPerRole: 200,
  /** Role assignments of one user in one organisation (all accounts together). */
  rolesPerUser: 50,
  /** Ids (or scopes) in one array of a request. */
  idsPerRequest: 100,
  /** Issues listed in one error's details; more are summarised in a last `(more)` entry. */
  issuesPerError: ISSUES_PER_ERROR,
  /** Nesting of a JSON body or of GraphQL variables. */
  jsonDepth: 32,
  /** Bytes of a request body (REST and GraphQL). */
  bodyBytes: 1024 * 1024,
  /** GraphQL: lexical tokens of a document (bounds parsing). */
  maxTokens: 5_000,
  /** GraphQL: depth of a selection (introspection fields aside). */
  maxDepth: 12,
  /** GraphQL: aliases in a document. */
  maxAliases: 30,
  /** GraphQL: cost of an operation (fields, lists weighted by their page size). */
  maxCost: 50_000,
  /** GraphQL: sign-in mutations (credential checks) in a document. */
  signInMutations: 1,
} as const;

export type LimitName = keyof typeof LIMITS;

/** The issue of a refused limit: where, why, and which limit with its number. */
export function limitIssue(path: string, limit: LimitName, message: string): ValidationIssue {
  return { path, message, limit, max: LIMITS[limit] };
}

export function limitExceeded(path: string, limit: LimitName, message: string): AppError {
  return AppError.validation([limitIssue(path, limit, message)]);
}

/**
 * An array bounded by a named limit. Its length is checked before its items, so 10,000 bad items
 * cost one issue, not 10,000; the issue names the limit (`params`, read by errors.ts issuesFrom).
 */
export function limitedArray<T extends z.ZodType>(item: T, limit: LimitName, message: string) {
  const max = LIMITS[limit];
  const schema = z
    .unknown()
    .check((ctx) => {
      if (Array.isArray(ctx.value) && ctx.value.length > max) {
        ctx.issues.push({ code: 'custom', message, params: { limit, max }, input: ctx.value, continue: false });
      }
    })
    .pipe(z.array(item));
  // What the check-then-parse means to a client: an array of at most `max` items of this kind.
  documentedAs(schema, () => ({ type: 'array', maxItems: max, items: inputJsonSchema(item) }));
  return schema;
}

/**
 * JSON Schemas of schemas zod cannot describe itself (a check before a pipe, a coercion): the
 * OpenAPI documents (rest-compat/openapi.ts) print these instead, so they tell what the server checks.
 */
const DOCUMENTED = new WeakMap<z.ZodType, () => Record<string, unknown>>();

export function documentedAs<T extends z.ZodType>(schema: T, json: () => Record<string, unknown>): T {
  DOCUMENTED.set(schema, json);
  return schema;
}

export function documentedJsonSchema(schema: z.ZodType): Record<string, unknown> | undefined {
  return DOCUMENTED.get(schema)?.();
}

/** The JSON Schema (2020-12) of what `schema` accepts, as the OpenAPI documents print it. */
export function inputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: 'input',
    unrepresentable: 'any',
    override: overrideDocumented,
  }) as Record<string, unknown>;
  return json;
}

/** The `override` of z.toJSONSchema that prints documentedAs schemas. */
export function overrideDocumented(ctx: { zodSchema: unknown; jsonSchema: Record<string, unknown> }): void {
  const json = DOCUMENTED.get(ctx.zodSchema as z.ZodType)?.();
  if (!json) return;
  for (const key of Object.keys(ctx.jsonSchema)) delete ctx.jsonSchema[key];
  Object.assign(ctx.jsonSchema, json);
}
