import { expect } from 'vitest';
import { Prisma } from '../../src/generated/prisma/client.ts';

/** Matchers for the answers contract.md prescribes, so a test says which refusal it expects. */

export interface Answer {
  status: number;
  headers?: Headers;
  body: any;
}

/** The `path` of each entry of an error's `details`, sorted. */
export const detailPaths = (body: { details?: Array<{ path: string }> } | undefined) => (body?.details ?? []).map((d) => d.path).sort();

/**
 * A REST refusal in the contract's envelope: exactly this status and code, an `error` message, the
 * request id of the response, and when `paths` is given exactly those `details` paths (any order).
 */
export function expectError(res: Answer, status: number, code: string, paths?: string[]): void {
  const seen = JSON.stringify(res.body);
  expect({ status: res.status, code: res.body?.code }, seen).toEqual({ status, code });
  expect(res.body.error, seen).toEqual(expect.any(String));
  if (res.headers) expect(res.body.requestId, seen).toBe(res.headers.get('x-request-id'));
  if (paths) expect(detailPaths(res.body), seen).toEqual([...paths].sort());
}

/** A GraphQL refusal: the first error carries `code` (and `path`, when given) and the HTTP status is `status`. */
export function expectGraphqlError(res: Answer, code: string, options: { status?: number; path?: string[] } = {}): void {
  const seen = JSON.stringify(res.body);
  const [first] = res.body?.errors ?? [];
  expect({ status: res.status, code: first?.extensions?.code }, seen).toEqual({ status: options.status ?? 200, code });
  if (options.path) expect(first.path, seen).toEqual(options.path);
}

/** A GraphQL answer without errors; answers its data. */
export function expectGraphqlData(res: Answer): Record<string, any> {
  expect({ status: res.status, errors: res.body?.errors }, JSON.stringify(res.body)).toEqual({ status: 200, errors: undefined });
  return res.body.data;
}

/** For `rejects.toSatisfy`: Prisma's known request error with `code` (P2025 record not found, P2003 foreign key violated, …). */
export const prismaError = (code: string) => (error: unknown) =>
  error instanceof Prisma.PrismaClientKnownRequestError && error.code === code;

/** For `rejects.toSatisfy`: fetch's failure when nothing listens at the address (ECONNREFUSED). */
export const connectionRefused = (error: unknown) =>
  error instanceof TypeError && (error.cause as { code?: string } | undefined)?.code === 'ECONNREFUSED';
