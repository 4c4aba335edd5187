import type { RequestContext } from '../context.ts';
import { batched } from '../db/batch.ts';

/**
 * The money an event, one of its occurrences or one of its ticket types has taken: confirmed sales
 * less refunds and cancellations, gross of fees, per currency. Read from the revenue each inventory
 * row keeps with its `sold` counter (src/services/inventory.ts), never by scanning orders.
 *
 * Everything sold counts: an occurrence cancelled or a ticket type deleted since keeps its revenue
 * until its orders are refunded or cancelled. A currency appears once money was taken in it and
 * while some of it remains; the list is in currency order, empty when nothing was sold.
 */
export interface Money {
  /** Minor units of `currency` (cents, pence; yen have none). */
  amount: number;
  /** ISO 4217 code. */
  currency: string;
}

export type EarnedBy = 'event' | 'occurrence' | 'ticketType';

const KEY: Record<EarnedBy, string> = { event: 'o."eventId"', occurrence: 'o.id', ticketType: 'tt.id' };

/** The revenue of each of `ids` (of one kind), in one statement. */
async function revenueOf(ctx: RequestContext, by: EarnedBy, ids: string[]): Promise<Map<string, Money[]>> {
  // Joined as the sales counters join (occurrence, the ticket types of its event, their row), so each
  // kind reaches its rows through an index; unlike the counters, nothing sold is left out.
  const sql = ctx.sql.statement();
  sql.add(`SELECT ${KEY[by]} AS id, r.currency, sum(r.amount::bigint)::text AS amount
    FROM event_occurrences o
    JOIN ticket_types tt ON tt."organisationId" = o."organisationId" AND tt."eventId" = o."eventId"
    JOIN inventories i ON i."organisationId" = o."organisationId" AND i."ticketTypeId" = tt.id AND i."occurrenceId" = o.id
    CROSS JOIN LATERAL jsonb_each_text(i.revenue) AS r(currency, amount)
    WHERE o."organisationId" = $1 AND ${KEY[by]} = ANY(${sql.param(ids)}::text[])
    GROUP BY 1, 2
    ORDER BY 1, 2`);
  const rows = await ctx.sql.rows<{ id: string; currency: string; amount: string }>(sql);
  const revenue = new Map<string, Money[]>();
  for (const row of rows) {
    let list = revenue.get(row.id);
    if (!list) revenue.set(row.id, (list = []));
    list.push({ amount: Number(row.amount), currency: row.currency });
  }
  return revenue;
}

const BY_KIND = {
  event: batched((ctx, ids: string[]) => revenueOf(ctx, 'event', ids)),
  occurrence: batched((ctx, ids: string[]) => revenueOf(ctx, 'occurrence', ids)),
  ticketType: batched((ctx, ids: string[]) => revenueOf(ctx, 'ticketType', ids)),
};

/**
 * The revenue of one event, occurrence or ticket type, batched (src/db/batch.ts): everything of one
 * kind asked while a request's batch is open is read by one statement, always fresh.
 */
export async function revenue(ctx: RequestContext, by: EarnedBy, id: string): Promise<Money[]> {
  return (await BY_KIND[by](ctx, id)) ?? [];
}
