import { z } from 'zod';
import { AppError } from './errors.ts';
import { validate, type Raw } from './validation.ts';

/**
 * Pages of lists, for both surfaces: page/limit (the /v1 pagination) or first/after (Relay
 * cursors, GraphQL). One window is computed here and services fetch it; the GraphQL connection
 * types (schema/pagination.ts) and the REST answers shape the same `Page`.
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

export interface PageArgs {
  page?: number | null;
  limit?: number | null;
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

/** page/limit and Relay arguments as a surface hands them over, checked here. */
export type RawPageArgs = Raw<PageArgs>;

const BACKWARD = 'backward pagination is not supported; use first/after or page/limit';
const pageArgs = z.object({
  page: z.number().int().min(1).max(1_000_000_000).nullish(),
  limit: z.number().int().min(1).max(MAX_LIMIT).nullish(),
  first: z.number().int().min(0).max(MAX_LIMIT).nullish(),
  after: z.string().max(200).nullish(),
  last: z.null({ error: BACKWARD }).nullish(),
  before: z.null({ error: BACKWARD }).nullish(),
});

/** page and limit, as a list's query takes them (REST; GraphQL adds first/after). */
export const pageQuery = pageArgs.pick({ page: true, limit: true });

/** A list's whole query: page/limit and the list's own filters. */
export function listQuery(filters?: z.ZodObject): z.ZodObject {
  return z.object({ ...pageQuery.shape, ...filters?.shape });
}

export interface Window {
  offset: number;
  take: number;
  page: number;
  limit: number;
}

/** Relay offset cursors, in the format of @pothos/plugin-relay (base64 of "OffsetConnection:<n>"). */
const CURSOR_PREFIX = 'OffsetConnection:';
export function offsetToCursor(offset: number): string {
  return Buffer.from(`${CURSOR_PREFIX}${offset}`).toString('base64');
}
function cursorToOffset(cursor: string): number {
  const text = Buffer.from(cursor, 'base64').toString();
  return text.startsWith(CURSOR_PREFIX) && /^\d{1,15}$/.test(text.slice(CURSOR_PREFIX.length))
    ? Number(text.slice(CURSOR_PREFIX.length))
    : Number.NaN;
}

/** The rows to fetch: first/after when given (cursor = offset), else page/limit (defaults 1 and 20). */
export function pageWindow(raw: RawPageArgs): Window {
  const args = validate(pageArgs, raw);
  if (args.first != null || args.after != null) {
    const offset = args.after ? cursorToOffset(args.after) + 1 : 0;
    if (!Number.isInteger(offset) || offset < 0) throw AppError.validation([{ path: 'after', message: 'not a cursor of this list' }]);
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

/** Shapes one page of `nodes` (fetched for `window`, of `total`) for both surfaces. */
export function toPage<T>(window: Window, total: number, nodes: T[]): Page<T> {
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

/** Runs the count and the page query together and shapes the answer for both surfaces. */
export async function paginate<T>(
  args: RawPageArgs,
  count: () => Promise<number>,
  fetch: (window: { skip: number; take: number }) => Promise<T[]>,
): Promise<Page<T>> {
  const window = pageWindow(args);
  const [total, nodes] = await Promise.all([
    count(),
    window.take === 0 ? Promise.resolve([]) : fetch({ skip: window.offset, take: window.take }),
  ]);
  return toPage(window, total, nodes);
}

/** Splits page arguments from a list's filters (both arrive in one argument object). */
export function pageArgsOf<T extends RawPageArgs>(args: T): { page: RawPageArgs; filters: Omit<T, keyof PageArgs> } {
  const { page, limit, first, after, last, before, ...filters } = args;
  return { page: { page, limit, first, after, last, before }, filters };
}
