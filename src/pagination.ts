import { z } from 'zod';
import { AppError } from './errors.ts';
import { instant as anInstant } from './time-zones.ts';
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

const pageArgs = z.object({
  page: z.number().int().min(1).max(1_000_000_000).nullish(),
  limit: z.number().int().min(1).max(MAX_LIMIT).nullish(),
  first: z.number().int().min(0).max(MAX_LIMIT).nullish(),
  after: z.string().max(500).nullish(),
  last: z.number().int().min(0).max(MAX_LIMIT).nullish(),
  before: z.string().max(500).nullish(),
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

/** The rows of a page/limit page (the /v1 pagination, and lists without cursors). */
export function pageWindow(raw: RawPageArgs): Window {
  return windowOf(validate(pageArgs, raw));
}

function windowOf(args: { page?: number | null; limit?: number | null }): Window {
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
  /** Where the page sits: at once for page/limit, computed only when asked for a cursor page. */
  pagination: PaginationInfo | (() => Promise<PaginationInfo>);
  /** Items in the whole list (every page), as counted with the page. */
  total: number;
  nodes: T[];
}

/** The pagination of a page, computed if it waits for a client to ask. */
export function paginationOf(page: Pick<Page<unknown>, 'pagination'>): PaginationInfo | Promise<PaginationInfo> {
  return typeof page.pagination === 'function' ? page.pagination() : page.pagination;
}

/** Shapes one page/limit page of `nodes` (fetched for `window`, of `total`) for both surfaces. */
export function toPage<T>(window: Window, total: number, nodes: T[], cursorOf: (node: T, index: number) => string): Page<T> {
  const pagination = paginationInfo(window, total);
  const edges = nodes.map((node, i) => ({ cursor: cursorOf(node, i), node }));
  return {
    edges,
    nodes,
    pagination,
    total,
    pageInfo: {
      hasNextPage: pagination.hasNext,
      hasPreviousPage: pagination.hasPrev,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Cursors: keyset, over each list's sort key

/**
 * The order of a list, its last field unique (the id): a cursor holds these values of its row, so
 * the next page starts after that row wherever it now stands. Rows added or removed meanwhile
 * never make a page repeat or skip a row (test/platform/cursors.test.ts).
 */
export type SortKey = ReadonlyArray<readonly [field: string, direction: 'asc' | 'desc']>;
export const NEWEST_FIRST: SortKey = [
  ['createdAt', 'desc'],
  ['id', 'desc'],
];
export const OLDEST_FIRST: SortKey = [
  ['createdAt', 'asc'],
  ['id', 'asc'],
];

type CursorValue = string | number | boolean | { t: string } | null;

/**
 * One of the orders a client may ask a list for (`events(orderBy:)`). Its cursors carry its name,
 * so a cursor of one order is refused by another, as a cursor of another list is; the list's own
 * order (name null) keeps the plain cursors it answered before it could be sorted. `nullable`
 * names the one field of the key that may be null (the list puts those rows last).
 */
export interface ListOrder {
  readonly name: string | null;
  readonly sort: SortKey;
  readonly nullable?: string;
}

/** Ascending or descending: the direction a client asks a sorted list for. */
export const sortDirection = z.enum(['asc', 'desc']);

const isListOrder = (sort: SortKey | ListOrder): sort is ListOrder => !Array.isArray(sort);
/** The sort key of a list's order. */
export const keyOf = (sort: SortKey | ListOrder): SortKey => (isListOrder(sort) ? sort.sort : sort);

/** A row's values of the sort key's fields. */
const sortValues = (sort: SortKey, row: object): unknown[] => sort.map(([field]) => (row as Record<string, unknown>)[field]);

/** An opaque cursor: the row's sort values (instants tagged), with its order's name if it has one, base64url. */
export function cursorOf(sort: SortKey | ListOrder, row: object): string {
  const values = sortValues(keyOf(sort), row).map((value) => (value instanceof Date ? { t: value.toISOString() } : (value as CursorValue)));
  const name = isListOrder(sort) ? sort.name : null;
  return Buffer.from(JSON.stringify(name === null ? values : { o: name, v: values })).toString('base64url');
}

function valuesOf(sort: SortKey | ListOrder, cursor: string, path: 'after' | 'before'): unknown[] {
  const refused = () => AppError.validation([{ path, message: 'not a cursor of this list' }]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString());
  } catch {
    throw refused();
  }
  const key = keyOf(sort);
  const name = isListOrder(sort) ? sort.name : null;
  const named = typeof parsed === 'object' && parsed !== null ? (parsed as { o?: unknown; v?: unknown }) : {};
  const values = name === null ? parsed : named.o === name ? named.v : null;
  if (!Array.isArray(values) || values.length !== key.length) throw refused();
  return values.map((value: unknown, i) => {
    if (value === null && isListOrder(sort) && sort.nullable !== undefined && key[i]![0] === sort.nullable) return null;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
    const instant =
      typeof value === 'object' && value !== null && typeof (value as { t?: unknown }).t === 'string'
        ? new Date((value as { t: string }).t)
        : null;
    if (!instant || Number.isNaN(instant.getTime())) throw refused();
    return instant;
  });
}

/** `field` greater (or less) than `value`; booleans have no order in Prisma: false < true. */
function beyond(field: string, value: unknown, greater: boolean): Record<string, unknown> {
  if (typeof value !== 'boolean') return { [field]: { [greater ? 'gt' : 'lt']: value } };
  // Nothing is greater than true or less than false: a condition no row meets.
  if (value === greater) return { id: { in: [] } };
  return { [field]: !value };
}

/** The rows strictly after (or before) `values` in `sort`'s order, as a Prisma condition. */
function keysetWhere(sort: SortKey, values: unknown[], side: 'after' | 'before'): Record<string, unknown> {
  return {
    OR: sort.map(([field, direction], i) => {
      const forward = (direction === 'asc') === (side === 'after');
      const equal = Object.fromEntries(sort.slice(0, i).map(([earlier], j) => [earlier, values[j]]));
      return { ...equal, ...beyond(field, values[i], forward) };
    }),
  };
}

/** What a list's statements get: the keyset condition to AND with their own, the order, the window. */
export interface Slice {
  where: Record<string, unknown>;
  orderBy: Array<Record<string, 'asc' | 'desc'>>;
  skip: number;
  take: number;
}

const orderOf = (sort: SortKey, reversed = false) =>
  sort.map(([field, direction]) => ({ [field]: reversed ? (direction === 'asc' ? 'desc' : 'asc') : direction }));

/** What a list is asked for: a page/limit window, or a cursor page of `size` rows. */
export type PageRequest =
  { kind: 'offset'; window: Window } | { kind: 'cursor'; size: number; backward: boolean; cursor: string | null; values: unknown[] | null };

/** Reads a list's page arguments against its sort key or order (a cursor of another list, or order, is refused). */
export function pageRequest(args: RawPageArgs, sort: SortKey | ListOrder): PageRequest {
  const given = validate(pageArgs, args);
  if (given.first == null && given.after == null && given.last == null && given.before == null) {
    return { kind: 'offset', window: windowOf(given) };
  }
  const conflict = (path: string, message: string) => AppError.validation([{ path, message }]);
  if (given.first != null && given.last != null) throw conflict('last', 'first and last cannot be combined');
  if (given.after != null && given.before != null) throw conflict('before', 'after and before cannot be combined');
  if (given.page != null) throw conflict('page', 'page goes with limit, not with cursors');
  const backward = given.last != null || given.before != null;
  const cursor = (backward ? given.before : given.after) ?? null;
  return {
    kind: 'cursor',
    size: (backward ? given.last : given.first) ?? given.limit ?? DEFAULT_LIMIT,
    backward,
    cursor,
    values: cursor ? valuesOf(sort, cursor, backward ? 'before' : 'after') : null,
  };
}

/**
 * A cursor page from the rows fetched for `request` (up to size + 1, in the request's direction:
 * reversed for `last`/`before`). `countBefore` counts the list's rows before a row's sort values,
 * for the page's position, only when a client asks for it.
 */
export function cursorPage<T extends object>(
  request: Extract<PageRequest, { kind: 'cursor' }>,
  sort: SortKey | ListOrder,
  fetched: T[],
  total: number,
  countBefore: (values: unknown[]) => Promise<number>,
): Page<T> {
  const { size, backward, cursor } = request;
  const more = fetched.length > size;
  const nodes = backward ? fetched.slice(0, size).reverse() : fetched.slice(0, size);
  const edges = nodes.map((node) => ({ cursor: cursorOf(sort, node), node }));
  const limit = Math.max(size, 1);
  return {
    edges,
    nodes,
    total,
    pageInfo: {
      hasNextPage: backward ? cursor != null : more,
      hasPreviousPage: backward ? more : cursor != null,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
    pagination: async () => {
      const first = nodes[0];
      const offset = first ? await countBefore(sortValues(keyOf(sort), first)) : backward ? 0 : total;
      return paginationInfo({ offset, take: nodes.length, page: Math.floor(offset / limit) + 1, limit }, total);
    },
  };
}

/**
 * A cursor decodes to values of the kinds a cursor holds (text, numbers, booleans, instants), but
 * only the list's own fields give them their types: values of another kind (a forged cursor) are
 * refused by Prisma's validation of the condition, and answered as a cursor of another list, not as
 * a fault (test/platform/cursors.test.ts).
 */
function refusingForgedCursor(request: Extract<PageRequest, { kind: 'cursor' }>) {
  return (error: unknown): never => {
    if (request.values && error instanceof Error && error.name === 'PrismaClientValidationError') {
      throw AppError.validation([{ path: request.backward ? 'before' : 'after', message: 'not a cursor of this list' }]);
    }
    throw error;
  };
}

/**
 * One page of a list, for both surfaces: page/limit (offset, the /v1 pagination) or the Relay
 * arguments, first/after forward and last/before backward, over keyset cursors. `count` counts
 * the list's rows that also meet a condition (for the total: none); `fetch` reads a slice.
 */
export async function paginate<T extends object>(
  args: RawPageArgs,
  order: SortKey | ListOrder,
  count: (where: Record<string, unknown>) => Promise<number>,
  fetch: (slice: Slice) => Promise<T[]>,
): Promise<Page<T>> {
  // Prisma has no keyset over a field that may be null: such an order is a hand-written statement's.
  if (isListOrder(order) && order.nullable !== undefined) throw new Error('an order over a nullable field pages in SQL');
  const sort = keyOf(order);
  const request = pageRequest(args, order);
  if (request.kind === 'offset') {
    const { window } = request;
    const [total, nodes] = await Promise.all([
      count({}),
      window.take === 0 ? [] : fetch({ where: {}, orderBy: orderOf(sort), skip: window.offset, take: window.take }),
    ]);
    return toPage(window, total, nodes, (node) => cursorOf(order, node));
  }
  const { size, backward, values } = request;
  const where = values ? keysetWhere(sort, values, backward ? 'before' : 'after') : {};
  const [total, fetched] = await Promise.all([
    count({}),
    size === 0 ? [] : fetch({ where, orderBy: orderOf(sort, backward), skip: 0, take: size + 1 }).catch(refusingForgedCursor(request)),
  ]);
  return cursorPage(request, order, fetched, total, (before) => count(keysetWhere(sort, before, 'before')));
}

/** Splits page arguments from a list's filters (both arrive in one argument object). */
export function pageArgsOf<T extends RawPageArgs>(args: T): { page: RawPageArgs; filters: Omit<T, keyof PageArgs> } {
  const { page, limit, first, after, last, before, ...filters } = args;
  return { page: { page, limit, first, after, last, before }, filters };
}

// ---------------------------------------------------------------------------------------------
// Lists an admin screen polls

/**
 * `updatedSince`, on every list an admin screen polls: only the rows changed at or after that
 * instant. It narrows the rows, never their order, so a cursor stays valid with it or without it
 * (test/catalogue/list-filters.test.ts).
 */
export const pollFilter = z.object({ updatedSince: anInstant.nullish() });

/** A list's page arguments with `updatedSince`, as a surface hands them over. */
export type PolledListArgs = RawPageArgs & Raw<z.input<typeof pollFilter>>;

/** A range of `column` as a Prisma condition, both ends included; no condition without either end. */
export function between<C extends string>(column: C, from: Date | null | undefined, to: Date | null | undefined) {
  if (!from && !to) return {};
  return { [column]: { ...(from ? { gte: from } : {}), ...(to ? { lte: to } : {}) } } as Partial<Record<C, { gte?: Date; lte?: Date }>>;
}

/** A creation range as a Prisma condition, both ends included. */
export function createdBetween(after: Date | null | undefined, before: Date | null | undefined) {
  return between('createdAt', after, before);
}

/**
 * `updatedSince`, judged, as a Prisma condition over the columns that record a row's changes (a row
 * changed since when any of them is at or after it); no condition without it.
 */
export function changedSince(updatedSince: unknown, columns: readonly string[] = ['updatedAt']): Record<string, unknown> {
  const since = validate(pollFilter, { updatedSince }).updatedSince;
  if (!since) return {};
  const conditions = columns.map((column) => ({ [column]: { gte: since } }));
  return conditions.length === 1 ? conditions[0]! : { OR: conditions };
}
