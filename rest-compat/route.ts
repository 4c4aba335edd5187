import type { z } from 'zod';

/**
 * One REST route of the compatibility layer. It names the GraphQL operation it runs in-process
 * against the same schema and the same request context, and says how path, query and body become
 * variables and how the result becomes the REST shape. No resolver logic lives here.
 */
export interface RestRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** OpenAPI-style path relative to the router root, e.g. `/accounts/{id}`. */
  path: string;
  summary: string;
  tag: string;
  /** Whether X-Service-Org is required (contract.md: not for /meta/versions and /auth/*). */
  organisation: boolean;
  /** GraphQL document with exactly one operation. */
  operation: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  variables?: (input: { params: any; query: any; body: any }) => Record<string, unknown>;
  /** Maps `data` of the operation to the response body. */
  result: (data: any) => unknown;
  /** Success status (default 200). */
  status?: number;
  /** Schema of the success body, for the OpenAPI document. */
  response?: z.ZodType;
}
