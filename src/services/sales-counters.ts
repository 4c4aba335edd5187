import type { RequestContext } from '../context.ts';
import { batched } from '../db/batch.ts';

/**
 * How many tickets an event, one of its occurrences or one of its ticket types has, and where they
 * are: sold to confirmed orders, held by pending ones, still available. Read from the inventory
 * rows the sales path keeps (src/services/inventory.ts), never by counting orders.
 *
 * Capacity is the catalogue's today: per ticket type and occurrence, the occurrence's capacity when
 * it sets one, else the ticket type's (capacityOf); null when any of them is unlimited. Cancelled
 * occurrences and deleted ticket types are left out. An occurrence or event without ticket types
 * has a capacity of 0.
 */
export interface SalesCounters {
  capacity: number | null;
  sold: number;
  held: number;
  available: number | null;
}

/**
 * What is counted: an event, an occurrence, a ticket type (over the scheduled occurrences of its
 * event), or one `pair`: one ticket type at one occurrence, its one inventory row (an edge of
 * `EventOccurrence.ticketTypes`). The counters of an occurrence are the sum of its pairs'.
 */
export type CountedBy = 'event' | 'occurrence' | 'ticketType' | 'pair';

/**
 * The counters of the (occurrence co, ticket type ctt) pairs that `condition` keeps, as one JSON
 * value: a scalar subquery a statement selects beside each of its rows (`condition` may name the
 * row's columns, under aliases of its own), or the value a batch of ids selects.
 */
function countersSubquery(condition: string): string {
  return `(SELECT json_build_object(
      'unlimited', bool_or(coalesce(co.capacity, ctt.capacity) IS NULL),
      'capacity', coalesce(sum(coalesce(co.capacity, ctt.capacity)), 0),
      'sold', coalesce(sum(ci.sold), 0),
      'held', coalesce(sum(ci.held), 0))
    FROM event_occurrences co
    JOIN ticket_types ctt ON ctt."organisationId" = co."organisationId" AND ctt."eventId" = co."eventId" AND NOT ctt."isDeleted"
    LEFT JOIN inventories ci ON ci."organisationId" = co."organisationId" AND ci."occurrenceId" = co.id AND ci."ticketTypeId" = ctt.id
    WHERE co."organisationId" = $1 AND co.status <> 'cancelled' AND ${condition})`;
}

const CONDITION: Record<Exclude<CountedBy, 'pair'>, (id: string) => string> = {
  event: (id) => `co."eventId" = ${id}`,
  occurrence: (id) => `co.id = ${id}`,
  ticketType: (id) => `ctt.id = ${id}`,
};

/**
 * A select-list expression of the counters of the `by` whose id is the SQL expression `id` (a
 * column of the statement's row, `c.id`): so the statement that reads a page of rows reads their
 * counters too, when the selection asks for them (src/services/children.ts). A pair takes the
 * occurrence's id and the ticket type's. Read it with `countersFrom`.
 */
export function countersColumn(by: CountedBy, id: string, ticketTypeId?: string): string {
  if (by === 'pair') return countersSubquery(`co.id = ${id} AND ctt.id = ${ticketTypeId}`);
  return countersSubquery(CONDITION[by](id));
}

interface CountedJson {
  unlimited: boolean | null;
  capacity: number;
  sold: number;
  held: number;
}

/** The counters of a `countersColumn` value. */
export function countersFrom(counted: CountedJson): SalesCounters {
  const capacity = counted.unlimited ? null : counted.capacity;
  const available = capacity === null ? null : Math.max(0, capacity - counted.sold - counted.held);
  return { capacity, sold: counted.sold, held: counted.held, available };
}

/** The counters of each of `ids` (of one kind; a pair's id is "occurrenceId ticketTypeId"), in one statement. */
async function countersOf(ctx: RequestContext, by: CountedBy, ids: string[]): Promise<Map<string, SalesCounters>> {
  const sql = ctx.sql.statement();
  if (by === 'pair') {
    const pairs = ids.map((id) => id.split(' '));
    sql.add(`SELECT p.occurrence || ' ' || p.ticket_type AS id, ${countersColumn('pair', 'p.occurrence', 'p.ticket_type')} AS counted
      FROM unnest(${sql.param(pairs.map(([occurrence]) => occurrence))}::text[], ${sql.param(pairs.map(([, ticketType]) => ticketType))}::text[])
        AS p(occurrence, ticket_type)`);
  } else {
    sql.add(`SELECT x.id, ${countersColumn(by, 'x.id')} AS counted FROM unnest(${sql.param(ids)}::text[]) AS x(id)`);
  }
  const rows = await ctx.sql.rows<{ id: string; counted: CountedJson }>(sql);
  return new Map(rows.map((row) => [row.id, countersFrom(row.counted)]));
}

const NONE: SalesCounters = { capacity: 0, sold: 0, held: 0, available: 0 };

const BY_KIND = {
  event: batched((ctx, ids: string[]) => countersOf(ctx, 'event', ids)),
  occurrence: batched((ctx, ids: string[]) => countersOf(ctx, 'occurrence', ids)),
  ticketType: batched((ctx, ids: string[]) => countersOf(ctx, 'ticketType', ids)),
  pair: batched((ctx, ids: string[]) => countersOf(ctx, 'pair', ids)),
};

/**
 * Counters read with their row, by the statement that read it (a page of a child connection that
 * asked for them): kept per row object, so they live as long as the row and a later read of the
 * same entity in the same request (after a mutation) reads afresh.
 */
const known = new WeakMap<object, Partial<Record<CountedBy, SalesCounters>>>();

/** Keeps the counters (of `by`: a ticket type row may carry its own and its pair's) the statement that read `row` read beside it. */
export function knowCounters(row: object, by: CountedBy, counters: SalesCounters): void {
  known.set(row, { ...known.get(row), [by]: counters });
}

/**
 * The counters of one event, occurrence, ticket type or pair: those read with `row` when its
 * statement read them, else batched (src/db/batch.ts): everything of one kind asked while a
 * request's batch is open (a page of a list, the occurrences of an event) is counted by one
 * statement, always fresh.
 */
export async function salesCounters(ctx: RequestContext, by: CountedBy, id: string, row?: object): Promise<SalesCounters> {
  const read = row && known.get(row)?.[by];
  if (read) return read;
  return (await BY_KIND[by](ctx, id)) ?? NONE;
}
