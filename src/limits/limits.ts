import { AppError, ISSUES_PER_ERROR, type ValidationIssue } from '../errors.ts';

/**
 * The service's size limits, in one table: what a request may hold and what state may grow to.
 * A request beyond one answers 400 VALIDATION_FAILED whose issue names the limit (`limit`, `max`),
 * so a client can tell a bound from a typo. README "Security model" lists them.
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
  graphqlTokens: 5_000,
  /** GraphQL: depth of a selection (introspection fields aside). */
  graphqlDepth: 12,
  /** GraphQL: aliases in a document. */
  graphqlAliases: 30,
  /** GraphQL: cost of an operation (fields, lists weighted by their page size). */
  graphqlCost: 50_000,
  /** GraphQL: sign-in mutations (credential checks) in a document. */
  graphqlSignIns: 1,
} as const;

export type LimitName = keyof typeof LIMITS;

/** The issue of a refused limit: where, why, and which limit with its number. */
export function limitIssue(path: string, limit: LimitName, message: string): ValidationIssue {
  return { path, message, limit, max: LIMITS[limit] };
}

export function limitExceeded(path: string, limit: LimitName, message: string): AppError {
  return AppError.validation([limitIssue(path, limit, message)]);
}
