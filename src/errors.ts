import { GraphQLError } from 'graphql';
/**
 * The one error type of the service and the one table that maps each code to its HTTP status.
 * REST answers `{error, code, details?, requestId}` with that status; GraphQL puts the same code in
 * `extensions.code` (and the status in `extensions.http.status` where Yoga honours it).
 * docs/spec/contract.md "Errors" is the source of this table.
 */
export const ERROR_CODES = {
  VALIDATION_FAILED: { status: 400, message: 'The request is invalid.' },
  INVALID_JSON: { status: 400, message: 'The request body is not valid JSON.' },
  ORG_REQUIRED: { status: 400, message: 'The X-Service-Org header is required.' },
  UNSUPPORTED_VERSION: { status: 400, message: 'The API version is unknown or no longer supported.' },
  UNAUTHENTICATED: { status: 401, message: 'Authentication is required.' },
  API_KEY_REVOKED: { status: 401, message: 'The API key has been revoked.' },
  API_KEY_EXPIRED: { status: 401, message: 'The API key has expired.' },
  ORG_MISMATCH: { status: 403, message: 'X-Service-Org names another organisation than the credential.' },
  SIGNED_IN_USER_REQUIRED: { status: 403, message: 'This operation needs a signed-in user.' },
  FORBIDDEN: { status: 403, message: 'You do not have permission to do this.' },
  NOT_FOUND: { status: 404, message: 'Not found.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed.' },
  NOT_ACCEPTABLE: { status: 406, message: 'None of the media types the request accepts can carry this answer.' },
  CONFLICT: { status: 409, message: 'The request conflicts with the current state.' },
  GONE: { status: 410, message: 'The resource is no longer available.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is too large.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The request body must be application/json.' },
  RATE_LIMITED: { status: 429, message: 'Too many requests.' },
  INTERNAL: { status: 500, message: 'An unexpected error occurred.' },
  UNAVAILABLE: { status: 503, message: 'The service is temporarily unavailable.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ValidationIssue {
  path: string;
  message: string;
  /** For a refused limit: its name (src/limits/limits.ts) and number. */
  limit?: string;
  max?: number;
  /** For the summary entry `(more)`: how many issues were left out. */
  count?: number;
}

/**
 * Issues listed in one error: a body of 10,000 bad values must not answer megabytes of details.
 * Beyond this, a last `{path: '(more)', message, count}` says how many were left out.
 */
export const ISSUES_PER_ERROR = 20;

export function cappedIssues(issues: ValidationIssue[]): ValidationIssue[] {
  if (issues.length <= ISSUES_PER_ERROR) return issues;
  const more = issues.length - ISSUES_PER_ERROR;
  return [...issues.slice(0, ISSUES_PER_ERROR), { path: '(more)', message: `${more} more issues`, count: more }];
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message?: string, details?: unknown, headers: Record<string, string> = {}) {
    super(message ?? ERROR_CODES[code].message);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  static validation(issues: ValidationIssue[], message = 'The request is invalid.'): AppError {
    return new AppError('VALIDATION_FAILED', message, cappedIssues(issues));
  }

  static notFound(what = 'Not found.'): AppError {
    return new AppError('NOT_FOUND', what);
  }

  /**
   * Things named in a request body (an accountId, roleIds.2, ...) that are not this organisation's:
   * 404 NOT_FOUND like a path id (docs/spec/contract.md), the same answer whether the
   * thing is absent or another organisation's, so existence is never confirmed. `details` names
   * the fields as validation issues do.
   */
  static unknownReferences(issues: ValidationIssue[]): AppError {
    const message = issues.length === 1 ? issues[0]!.message : 'Things named in the request were not found in this organisation.';
    return new AppError('NOT_FOUND', message, cappedIssues(issues));
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

export interface ErrorBody {
  error: string;
  code: ErrorCode;
  details?: unknown;
  requestId?: string;
}

export function errorBody(error: AppError, requestId: string | undefined): ErrorBody {
  const body: ErrorBody = { error: error.message, code: error.code };
  if (error.details !== undefined) body.details = error.details;
  if (requestId) body.requestId = requestId;
  return body;
}

/** The limit a zod `too_big` issue reports, named after what it bounds. */
const ZOD_LIMITS: Record<string, string> = {
  array: 'maxItems',
  set: 'maxItems',
  string: 'maxLength',
  number: 'maximum',
  int: 'maximum',
  bigint: 'maximum',
};

/** Turns zod-style issues into the contract's `{path, message}` details (a bound also names its limit). */
export function issuesFrom(
  issues: ReadonlyArray<{
    path: ReadonlyArray<PropertyKey>;
    message: string;
    code?: string;
    origin?: string;
    maximum?: unknown;
    params?: { limit?: string; max?: number };
    keys?: readonly string[];
  }>,
): ValidationIssue[] {
  return issues.flatMap((issue) => {
    const path = issue.path.map(String).join('.') || '(root)';
    // One issue per unknown field, at the field's own path.
    if (issue.code === 'unrecognized_keys' && issue.keys?.length) {
      return issue.keys.map((key) => ({ path: [...issue.path.map(String), key].join('.'), message: issue.message }));
    }
    if (issue.params?.limit) return { path, message: issue.message, limit: issue.params.limit, max: issue.params.max };
    const limit = issue.code === 'too_big' ? ZOD_LIMITS[issue.origin ?? ''] : undefined;
    return limit && typeof issue.maximum === 'number'
      ? { path, message: issue.message, limit, max: issue.maximum }
      : { path, message: issue.message };
  });
}

/**
 * A fault that came after some of a change's work was committed (its answer being read, or a step
 * after its first transaction): a 500 that says so, without Retry-After, since sending the same
 * request again could make the change twice. An Idempotency-Key keeps this answer rather than
 * giving the key back (src/http/idempotency.ts; test/platform/database-outage.test.ts).
 */
export class FaultAfterWork extends AppError {
  constructor() {
    super(
      'INTERNAL',
      'The request failed after some of its work was saved, so it may have taken effect: read what it would have changed before sending it again with a new key.',
    );
  }
}

/** FaultAfterWork as masked for a GraphQL answer: read back as one by `toAppError` (the REST layer). */
export class GraphQLFaultAfterWork extends GraphQLError {}

/**
 * The one conversion of anything thrown into the contract's error: our own errors as they are, a
 * GraphQL error by its `extensions.code` (the code, message, details and headers a masked
 * AppError carries), body-parser and router failures by what they mean, and everything else
 * INTERNAL (the caller logs it; nothing of it reaches the client).
 */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (isDatabaseUnavailable(error)) return databaseUnavailable();
  if (error instanceof GraphQLError) return fromGraphQLError(error);
  // A path that does not decode (`/v1/events/%FF`): the caller's input, not a fault.
  if (error instanceof URIError) return AppError.validation([{ path: 'params', message: 'The path is not valid percent-encoded UTF-8.' }]);
  const type = (error as { type?: string } | null)?.type;
  if (type === 'entity.parse.failed') return new AppError('INVALID_JSON');
  if (type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return new AppError('UNSUPPORTED_MEDIA_TYPE');
  return new AppError('INTERNAL');
}

function fromGraphQLError(error: GraphQLError): AppError {
  if (error instanceof GraphQLFaultAfterWork) return new FaultAfterWork();
  if (error.originalError instanceof AppError) return error.originalError;
  if (isDatabaseUnavailable(error.originalError)) return databaseUnavailable();
  const code = error.extensions?.code;
  const http = error.extensions?.http;
  if (isErrorCode(code)) return new AppError(code, error.message, error.extensions.details, { ...http?.headers });
  // A GraphQL-level error without our code (variable coercion, e.g. an Int beyond 32 bits) means
  // input the operation's types refused: still the caller's input, so a 400, never a 500.
  if (!error.originalError || error.originalError instanceof GraphQLError) {
    return AppError.validation([{ path: '(root)', message: error.message }]);
  }
  return new AppError('INTERNAL');
}

/**
 * Prisma's codes for a database it cannot reach or lost (P1001 unreachable … P2024 pool timeout), and
 * P2028: a transaction that could not start (no pooled connection within maxWait) or outlived its
 * timeout; either way it changed nothing and the same request can be tried again.
 */
const UNAVAILABLE_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028']);
/** The driver adapter's kinds of the same. */
const UNAVAILABLE_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
/** PostgreSQL's: connection exceptions, and a server shutting down or starting. */
const UNAVAILABLE_SQLSTATES = /^(08|57P0[1-3])/;

/**
 * Whether `error` means the database cannot be reached now (down, restarting, out of connections):
 * the request is answered 503 with Retry-After, since the same request will work once it is back —
 * a client must not read it as a fault of the request (500).
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  const e = error as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    meta?: { driverAdapterError?: { cause?: { kind?: string; originalCode?: string } } };
  } | null;
  if (!e || typeof e !== 'object' || depth > 3) return false;
  if (typeof e.code === 'string' && (UNAVAILABLE_CODES.has(e.code) || UNAVAILABLE_SQLSTATES.test(e.code) || SOCKET_CODES.has(e.code)))
    return true;
  // What node-postgres throws when a pooled connection dies under a query.
  if (typeof e.message === 'string' && LOST_CONNECTION.test(e.message)) return true;
  const cause = e.meta?.driverAdapterError?.cause;
  if (cause && ((cause.kind !== undefined && UNAVAILABLE_KINDS.has(cause.kind)) || UNAVAILABLE_SQLSTATES.test(cause.originalCode ?? '')))
    return true;
  return isDatabaseUnavailable(e.cause, depth + 1);
}

const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);
const LOST_CONNECTION = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

export function databaseUnavailable(): AppError {
  return new AppError('UNAVAILABLE', 'The database cannot be reached just now; try again shortly.', undefined, { 'Retry-After': '1' });
}
