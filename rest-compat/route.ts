import type { z } from 'zod';
import type { AnswerReplay } from '../src/http/idempotency.ts';

/**
 * Where the value of one GraphQL variable comes from: a path parameter, a query parameter, the whole
 * JSON body, or one field of it.
 */
export type Source = `params.${string}` | `query.${string}` | 'body' | `body.${string}`;

/**
 * How a request becomes the operation's variables: named variables from their sources, and
 * optionally `'...'` to pass every query parameter (or every body field) under its own name.
 */
export type Binding = { [variable: string]: Source | 'query' | undefined; '...'?: 'query' | 'body' };

/**
 * One REST route of the compatibility layer. It names the GraphQL operation it runs in-process
 * through the same pipeline and request context as /graphql, says where each variable comes from
 * and how the result becomes the REST shape. No validation and no resolver logic live here: the
 * use case's schema decides (docs/architecture.md, "Input is judged once"), and its refusals come
 * back naming the REST place (`query.page`, `params.id`, a body field).
 */
export interface RestRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** OpenAPI-style path relative to the router root, e.g. `/accounts/{id}`. */
  path: string;
  summary: string;
  tag: string;
  /** Whether X-Service-Org is required (docs/spec/contract.md: not for /meta/versions and /auth/*). */
  organisation: boolean;
  /** GraphQL document with exactly one operation. */
  operation: string;
  bind?: Binding;
  /**
   * What the path parameters, query and body may hold, for the OpenAPI document only: the request
   * is not checked against these (the use case behind the operation judges it).
   */
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Maps `data` of the operation to the response body. */
  // The answer to `operation` above: its shape is the operation's, checked against `response` by
  // test/platform/openapi.test.ts, not a TypeScript type.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  result: (data: any) => unknown;
  /** Success status (default 200). */
  status?: number;
  /** Schema of the success body, for the OpenAPI document. */
  response?: z.ZodType;
  /**
   * How a retry with the same Idempotency-Key is answered (POST only; default `replay`): a route
   * whose answer carries a token pair says `never`, one whose answer carries key material names
   * those fields (src/http/idempotency.ts). test/platform/idempotency-attacks.test.ts checks that
   * every route answering a secret says which.
   */
  replay?: AnswerReplay<readonly string[]>;
}
