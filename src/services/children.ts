import type { RequestContext } from '../context.ts';
import { batched } from '../db/batch.ts';
import type { Statement } from '../db/sql.ts';
import { AppError } from '../errors.ts';
import { getDatamodel } from '../generated/pothos-types.ts';
import { cursorPage, DEFAULT_LIMIT, pageRequest, type Page, type PageRequest, type RawPageArgs, type SortKey } from '../pagination.ts';

/**
 * The children of the rows of a page, for the graph's connections and lists on a parent
 * (`Event.occurrences`, `Customer.orders`, `Order.lineItems`, …), loaded in batches: the children of
 * every parent asked while a request's batch is open (the rows of a page resolving the same field
 * with the same arguments) are read by ONE statement, whatever the number of parents
 * (test/catalogue/graph-connections.test.ts counts them).
 *
 * A page per parent is a LATERAL subquery per parent id, ordered and limited, beside a count per
 * parent: each parent's rows come from the (parent, sort key) index with a LIMIT, so a parent with
 * thousands of children (an endpoint's deliveries) costs its page, not a sort of all its children,
 * as a window (`row_number() OVER (PARTITION BY parent)`) over every child would. The order and the
 * cursors are the root list's (the same SortKey, src/pagination.ts), so a cursor of
 * `eventOccurrences(eventId:)` pages `Event.occurrences` and back. Who may read the children is
 * decided by the field that asks, under the rule of the root list that reads the same rows.
 */

/** The SQL type of a sort field's values, for a cursor's values. */
type SortType = 'timestamptz' | 'text' | 'int';

/** Columns read beside each row when the selection asks for them, and the joins they need. */
export interface Extra {
  columns: string;
  join?: string;
}

export interface ChildList<Row extends object> {
  /** The order, the root list's: its last field is unique. One direction throughout (a row-value keyset). */
  sort: SortKey;
  /** The SQL type of each sort field. */
  sortTypes: readonly SortType[];
  /**
   * The children of the parent whose id is `p.parent`: FROM (the child table aliased `c`) and WHERE,
   * which compares the "organisationId" of every table with $1.
   */
  from: string;
  where: string;
  /** The select list of a row. */
  columns: string;
  /** What may be read beside the rows, by name. */
  extras?: Record<string, Extra>;
  /** The row, from the columns read (the extras' among them). */
  read: (columns: Record<string, unknown>) => Row;
}

const models: Record<string, { fields: ReadonlyArray<{ name: string; kind: string }> }> = getDatamodel().datamodel.models;

/** A model's row as a statement reads it: its select list, and the row from the columns read. */
export interface RowOf<T> {
  columns: string;
  /** The row among the columns of a statement's row, or null when a LEFT JOIN found none. */
  read: (columns: Record<string, unknown>) => T | null;
}

/**
 * A model's row (its scalar and enum fields, as Prisma reads them) from table `alias`; with
 * `prefix`, each column is named `prefix.field`, for a row read beside another (an order line's
 * event).
 */
export function rowOf<T>(model: string, alias: string, prefix = ''): RowOf<T> {
  const fields = models[model]?.fields.filter((field) => field.kind === 'scalar' || field.kind === 'enum');
  if (!fields) throw new Error(`no model ${model}`);
  const named = fields.map(({ name }) => [name, `${prefix}${name}`] as const);
  const id = `${prefix}id`;
  return {
    columns: fields
      .map(({ name, kind }) => {
        const column = `${alias}."${name}"${kind === 'enum' ? '::text' : ''}`;
        return prefix || kind === 'enum' ? `${column} AS "${prefix}${name}"` : column;
      })
      .join(', '),
    read: (columns) => {
      if (columns[id] == null) return null;
      const row: Record<string, unknown> = {};
      for (const [name, column] of named) row[name] = columns[column];
      return row as T;
    },
  };
}

/** The select list of a model's row from table `alias` (see rowOf). */
export function rowColumns(model: string, alias: string): string {
  return rowOf(model, alias).columns;
}

type CursorRequest = Extract<PageRequest, { kind: 'cursor' }>;

/** Relay arguments as a cursor request; none means the first DEFAULT_LIMIT rows. */
function cursorRequest(args: RawPageArgs, sort: SortKey, types: readonly SortType[]): CursorRequest {
  const request = pageRequest(args, sort);
  if (request.kind === 'offset') return { kind: 'cursor', size: DEFAULT_LIMIT, backward: false, cursor: null, values: null };
  const fits = (value: unknown, type: SortType) =>
    type === 'timestamptz' ? value instanceof Date : type === 'int' ? Number.isInteger(value) : typeof value === 'string';
  if (request.values && !request.values.every((value, i) => fits(value, types[i]!))) {
    throw AppError.validation([{ path: request.backward ? 'before' : 'after', message: 'not a cursor of this list' }]);
  }
  return request;
}

/** The rows after (or, backward, before) the cursor's values in `sort`'s order, as SQL. */
function keyset(sql: Statement, list: ChildList<object>, request: CursorRequest): string {
  if (!request.values) return 'true';
  const values = request.values;
  const ascending = list.sort[0]![1] === 'asc';
  const columns = list.sort.map(([field]) => `c."${field}"`).join(', ');
  const params = values.map((value, i) => `${sql.param(value)}::${list.sortTypes[i]}`).join(', ');
  return `(${columns}) ${ascending !== request.backward ? '>' : '<'} (${params})`;
}

/** The statement's columns beside a child's: the parent, its total and the rows on the cursor's side. */
interface Marks {
  parent_: string;
  total_: number;
  ahead_: number;
}

/**
 * A page of each parent's children, in one statement. `ahead_` counts the children on the request's
 * side of the cursor (all of them without one), from which the page's position follows without a
 * statement of its own: forward, the rows before the page are the others; backward, the rows before
 * the cursor less the page.
 */
async function pagesOf<Row extends object>(
  ctx: RequestContext,
  list: ChildList<Row>,
  parents: string[],
  request: CursorRequest,
  extras: readonly string[],
): Promise<Map<string, Page<Row>>> {
  const sql = ctx.sql.statement();
  const ids = sql.param(parents);
  const side = keyset(sql, list, request);
  const order = list.sort
    .map(([field, direction]) => `c."${field}" ${(direction === 'asc') !== request.backward ? 'ASC' : 'DESC'}`)
    .join(', ');
  const chosen = extras.map((name) => list.extras![name]!);
  const columns = [list.columns, ...chosen.map((extra) => extra.columns)].join(', ');
  const joins = chosen.map((extra) => extra.join ?? '').join(' ');
  const take = request.size === 0 ? 0 : request.size + 1;
  sql.add(`SELECT p.parent AS parent_, n.total AS total_, n.ahead AS ahead_, r.*
    FROM unnest(${ids}::text[]) AS p(parent)
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS total, count(*) FILTER (WHERE ${side})::int AS ahead FROM ${list.from} WHERE ${list.where}
    ) n
    LEFT JOIN LATERAL (
      SELECT ${columns} FROM ${list.from} ${joins} WHERE ${list.where} AND ${side} ORDER BY ${order} LIMIT ${sql.param(take)}
    ) r ON true`);
  const found = await ctx.sql.rows<Marks & Record<string, unknown>>(sql);
  const byParent = new Map<string, { total: number; ahead: number; rows: Row[] }>();
  for (const { parent_, total_, ahead_, ...columns } of found) {
    let entry = byParent.get(parent_);
    if (!entry) byParent.set(parent_, (entry = { total: total_, ahead: ahead_, rows: [] }));
    if (columns.id != null) entry.rows.push(list.read(columns));
  }
  const pages = new Map<string, Page<Row>>();
  for (const [parent, { total, ahead, rows }] of byParent) {
    const shown = Math.min(rows.length, request.size);
    const before = request.backward ? ahead - shown : total - ahead;
    pages.set(
      parent,
      cursorPage(request, list.sort, rows, total, () => Promise.resolve(before)),
    );
  }
  return pages;
}

/**
 * A connection of `list` on its parents: `(ctx, parentId, args, extras)` answers the page of that
 * parent, read with the pages of every parent asked with the same arguments and extras in the same
 * batch. `extras` names what to read beside each row (its counters, a row it names) because the
 * selection asks for it.
 */
export function childConnection<Row extends object>(list: ChildList<Row>) {
  const direction = list.sort[0]![1];
  if (list.sort.some(([, d]) => d !== direction) || list.sortTypes.length !== list.sort.length) {
    throw new Error('a child list is sorted in one direction, with a type per sort field');
  }
  const load = batched(async (ctx, keys: string[]) => {
    const groups = new Map<string, string[]>();
    for (const key of keys) {
      const cut = key.indexOf('\n');
      const group = key.slice(0, cut);
      groups.set(group, [...(groups.get(group) ?? []), key.slice(cut + 1)]);
    }
    const pages = new Map<string, Page<Row>>();
    await Promise.all(
      [...groups].map(async ([group, parents]) => {
        const { args, extras } = JSON.parse(group) as { args: RawPageArgs; extras: string[] };
        const found = await pagesOf(ctx, list, parents, cursorRequest(args, list.sort, list.sortTypes), extras);
        for (const [parent, page] of found) pages.set(`${group}\n${parent}`, page);
      }),
    );
    return pages;
  });
  return async (ctx: RequestContext, parentId: string, args: RawPageArgs, extras: readonly string[] = []): Promise<Page<Row>> => {
    const { first, after, last, before } = args;
    const relay = { first, after, last, before };
    // Judged here, so a bad cursor is refused at its own field, not in the batch's statement.
    cursorRequest(relay, list.sort, list.sortTypes);
    const page = await load(ctx, `${JSON.stringify({ args: relay, extras: [...extras].sort() })}\n${parentId}`);
    if (!page) throw new AppError('INTERNAL', 'a parent without its page');
    return page;
  };
}

/** Every child of a parent, in one order, with its extras: for the short lists an order holds (`Order.lineItems`). */
export interface ChildRows<Row extends object> {
  /** The table of the children, aliased `c`, with its column naming the parent. */
  from: string;
  parentColumn: string;
  /** More conditions on c, beside its organisation and parent. */
  where?: string;
  order: string;
  columns: string;
  extras?: Record<string, Extra>;
  read: (columns: Record<string, unknown>) => Row;
}

/** The children of each parent asked in the same batch (with the same extras), by one statement. */
export function childRows<Row extends object>(list: ChildRows<Row>) {
  const load = batched(async (ctx, keys: string[]) => {
    const groups = new Map<string, string[]>();
    for (const key of keys) {
      const cut = key.indexOf('\n');
      groups.set(key.slice(0, cut), [...(groups.get(key.slice(0, cut)) ?? []), key.slice(cut + 1)]);
    }
    const rows = new Map<string, Row[]>();
    await Promise.all(
      [...groups].map(async ([group, parents]) => {
        const chosen = group ? group.split(',').map((name) => list.extras![name]!) : [];
        const sql = ctx.sql.statement();
        sql.add(`SELECT ${[`c."${list.parentColumn}" AS parent_`, list.columns, ...chosen.map((extra) => extra.columns)].join(', ')}
          FROM ${list.from} ${chosen.map((extra) => extra.join ?? '').join(' ')}
          WHERE c."organisationId" = $1 AND c."${list.parentColumn}" = ANY(${sql.param(parents)}::text[])${list.where ? ` AND ${list.where}` : ''}
          ORDER BY ${list.order}`);
        for (const parent of parents) rows.set(`${group}\n${parent}`, []);
        for (const { parent_, ...columns } of await ctx.sql.rows<{ parent_: string } & Record<string, unknown>>(sql)) {
          rows.get(`${group}\n${parent_}`)!.push(list.read(columns));
        }
      }),
    );
    return rows;
  });
  return async (ctx: RequestContext, parentId: string, extras: readonly string[] = []): Promise<Row[]> =>
    (await load(ctx, `${[...extras].sort().join(',')}\n${parentId}`)) ?? [];
}
