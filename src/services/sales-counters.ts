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

export type CountedBy = 'event' | 'occurrence' | 'ticketType';

const KEY: Record<CountedBy, string> = { event: 'o."eventId"', occurrence: 'o.id', ticketType: 'tt.id' };

/** The counters of each of `ids` (of one kind), in one statement. */
async function countersOf(ctx: RequestContext, by: CountedBy, ids: string[]): Promise<Map<string, SalesCounters>> {
  const sql = ctx.sql.statement();
  sql.add(`SELECT ${KEY[by]} AS id,
      bool_or(coalesce(o.capacity, tt.capacity) IS NULL) AS unlimited,
      coalesce(sum(coalesce(o.capacity, tt.capacity)), 0)::int AS capacity,
      coalesce(sum(i.sold), 0)::int AS sold,
      coalesce(sum(i.held), 0)::int AS held
    FROM event_occurrences o
    JOIN ticket_types tt ON tt."organisationId" = o."organisationId" AND tt."eventId" = o."eventId" AND NOT tt."isDeleted"
    LEFT JOIN inventories i ON i."organisationId" = o."organisationId" AND i."occurrenceId" = o.id AND i."ticketTypeId" = tt.id
    WHERE o."organisationId" = $1 AND o.status <> 'cancelled' AND ${KEY[by]} = ANY(${sql.param(ids)}::text[])
    GROUP BY ${KEY[by]}`);
  const rows = await ctx.sql.rows<{ id: string; unlimited: boolean; capacity: number; sold: number; held: number }>(sql);
  return new Map(
    rows.map((row) => {
      const capacity = row.unlimited ? null : row.capacity;
      const available = capacity === null ? null : Math.max(0, capacity - row.sold - row.held);
      return [row.id, { capacity, sold: row.sold, held: row.held, available }];
    }),
  );
}

const NONE: SalesCounters = { capacity: 0, sold: 0, held: 0, available: 0 };

const BY_KIND = {
  event: batched((ctx, ids: string[]) => countersOf(ctx, 'event', ids)),
  occurrence: batched((ctx, ids: string[]) => countersOf(ctx, 'occurrence', ids)),
  ticketType: batched((ctx, ids: string[]) => countersOf(ctx, 'ticketType', ids)),
};

/**
 * The counters of one event, occurrence or ticket type, batched (src/db/batch.ts): everything of
 * one kind asked while a request's batch is open (a page of a list, the occurrences of an event) is
 * counted by one statement, always fresh.
 */
export async function salesCounters(ctx: RequestContext, by: CountedBy, id: string): Promise<SalesCounters> {
  return (await BY_KIND[by](ctx, id)) ?? NONE;
}
