import { cursorToOffset, offsetToCursor } from '@pothos/plugin-relay';
import type { ObjectRef } from '@pothos/core';
import { z } from 'zod';
import { validate } from '../src/services/sessions.ts';
import { builder } from './builder.ts';

/**
 * Lists are Relay connections in GraphQL (first/after cursors) that also take page/limit, the
 * /v1 pagination, and answer `pagination` beside `edges` and `pageInfo`. One resolver serves both
 * surfaces: the REST layer passes page/limit and reads `pagination` and the nodes.
 */

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export interface PaginationInfo {
  page: number;
  limit: number;
  total: number;
  totalPages: number;
  hasNext: boolean;
  hasPrev: boolean;
}

export const Pagination = builder.objectRef<PaginationInfo>('Pagination').implement({
  description: 'Where a page sits in a list.',
  fields: (t) => ({
    page: t.exposeInt('page', { description: 'This page, from 1.' }),
    limit: t.exposeInt('limit', { description: 'Items per page (1 to 100).' }),
    total: t.exposeInt('total', { description: 'Items in the whole list.' }),
    totalPages: t.exposeInt('totalPages', { description: 'Pages in the whole list (0 when it is empty).' }),
    hasNext: t.exposeBoolean('hasNext', { description: 'Whether a later page exists.' }),
    hasPrev: t.exposeBoolean('hasPrev', { description: 'Whether an earlier page exists.' }),
  }),
});

export interface PageArgs {
  page?: number | null;
  limit?: number | null;
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

const pageArgs = z.object({
  page: z.number().int().min(1).nullish(),
  limit: z.number().int().min(1).max(MAX_LIMIT).nullish(),
  first: z.number().int().min(0).max(MAX_LIMIT).nullish(),
  after: z.string().max(200).nullish(),
  last: z.null({ error: 'backward pagination is not supported; use first/after or page/limit' }).nullish(),
  before: z.null({ error: 'backward pagination is not supported; use first/after or page/limit' }).nullish(),
});

export interface Window {
  offset: number;
  take: number;
  page: number;
  limit: number;
}

/** The rows to fetch: first/after when given (cursor = offset), else page/limit (defaults 1 and 20). */
export function pageWindow(raw: PageArgs | Record<string, unknown>): Window {
  const args = validate(pageArgs, raw);
  if (args.first != null || args.after != null) {
    let offset = 0;
    if (args.after) {
      try {
        offset = cursorToOffset(args.after) + 1;
      } catch {
        offset = Number.NaN;
      }
      if (!Number.isInteger(offset) || offset < 1) {
        validate(z.object({ after: z.never({ error: 'not a cursor of this list' }) }), { after: args.after });
      }
    }
    const limit = args.first ?? args.limit ?? DEFAULT_LIMIT;
    return { offset, take: limit, page: Math.floor(offset / Math.max(limit, 1)) + 1, limit: Math.max(limit, 1) };
  }
  const page = args.page ?? 1;
  const limit = args.limit ?? DEFAULT_LIMIT;
  return { offset: (page - 1) * limit, take: limit, page, limit };
}

export function paginationInfo(window: Window, total: number): PaginationInfo {
  const totalPages = Math.ceil(total / window.limit);
  return {
    page: window.page,
    limit: window.limit,
    total,
    totalPages,
    hasNext: window.offset + window.take < total,
    hasPrev: window.offset > 0,
  };
}

export interface Page<T> {
  edges: Array<{ cursor: string; node: T }>;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  pagination: PaginationInfo;
  nodes: T[];
}

/** Runs the count and the page query together and shapes the answer for both surfaces. */
export async function paginate<T>(
  args: PageArgs | Record<string, unknown>,
  count: () => Promise<number>,
  fetch: (window: { skip: number; take: number }) => Promise<T[]>,
): Promise<Page<T>> {
  const window = pageWindow(args);
  const [total, nodes] = await Promise.all([count(), window.take === 0 ? Promise.resolve([]) : fetch({ skip: window.offset, take: window.take })]);
  const pagination = paginationInfo(window, total);
  const edges = nodes.map((node, i) => ({ cursor: offsetToCursor(window.offset + i), node }));
  return {
    edges,
    nodes,
    pagination,
    pageInfo: {
      hasNextPage: pagination.hasNext,
      hasPreviousPage: pagination.hasPrev,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}

/** A connection type whose objects carry `pagination` and `nodes` beside edges and pageInfo. */
export function pagedConnection<T>(type: ObjectRef<any, T>, name: string, what: string) {
  return builder.connectionObject(
    {
      type,
      name,
      description: `A page of ${what}.`,
      fields: (t) => ({
        pagination: t.field({
          type: Pagination,
          description: 'Page position and totals.',
          resolve: (connection) => (connection as unknown as Page<T>).pagination,
        }),
        nodes: t.field({
          type: [type],
          description: `The ${what} of this page (the edges' nodes).`,
          resolve: (connection) => (connection as unknown as Page<T>).nodes as never,
        }),
      }),
    },
    { name: `${name.replace(/Connection$/, '')}Edge`, description: `One of the ${what}.` },
  );
}

/** page/limit arguments for list fields, beside the Relay ones. */
export function pageArgsFor(t: { arg: { int: (options: { description: string }) => any } }) {
  return {
    page: t.arg.int({ description: 'Page number from 1 (default 1); ignored when first/after are given.' }),
    limit: t.arg.int({ description: `Items per page, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT}).` }),
  };
}
