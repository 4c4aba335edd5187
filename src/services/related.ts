import type { RequestContext } from '../context.ts';
import type { Account, Customer, Event, EventOccurrence, TicketType, Venue } from '../generated/prisma/client.ts';

/**
 * The entity an `…Id` field names, for the graph's relation fields (`Event.venue`,
 * `OrderLineItem.event`, …), loaded in batches: every id of one kind asked while a request's batch
 * is open (the rows of a page) is read by one statement, through the organisation's scoped client.
 * Deleted rows answer null. Who may see the entity is its GraphQL type's rule, asked for each one
 * (Event's, which its fields skip, by the field that answers it: schema/types/event.ts).
 */
const LOADERS = {
  account: (ctx: RequestContext, ids: string[]) => ctx.db.account.findMany({ where: { id: { in: ids }, isDeleted: false } }),
  venue: (ctx: RequestContext, ids: string[]) => ctx.db.venue.findMany({ where: { id: { in: ids }, isDeleted: false } }),
  event: (ctx: RequestContext, ids: string[]) => ctx.db.event.findMany({ where: { id: { in: ids }, isDeleted: false } }),
  occurrence: (ctx: RequestContext, ids: string[]) => ctx.db.eventOccurrence.findMany({ where: { id: { in: ids } } }),
  ticketType: (ctx: RequestContext, ids: string[]) => ctx.db.ticketType.findMany({ where: { id: { in: ids }, isDeleted: false } }),
  customer: (ctx: RequestContext, ids: string[]) => ctx.db.customer.findMany({ where: { id: { in: ids } } }),
};

interface Rows {
  account: Account;
  venue: Venue;
  event: Event;
  occurrence: EventOccurrence;
  ticketType: TicketType;
  customer: Customer;
}
export type RelatedKind = keyof Rows;

interface Batch {
  ids: Set<string>;
  result: Promise<Map<string, unknown>>;
}
const batches = new WeakMap<RequestContext, Map<RelatedKind, Batch>>();

/** The `kind` whose id is `id` (null for none, or deleted), read in the request's batch of that kind. */
export function related<K extends RelatedKind>(ctx: RequestContext, kind: K, id: string | null | undefined): Promise<Rows[K] | null> {
  if (!id) return Promise.resolve(null);
  let open = batches.get(ctx);
  if (!open) batches.set(ctx, (open = new Map<RelatedKind, Batch>()));
  let batch = open.get(kind);
  if (!batch) {
    const ids = new Set<string>();
    const kinds = open;
    batch = {
      ids,
      result: new Promise((resolve) => setImmediate(resolve)).then(async () => {
        kinds.delete(kind);
        const rows: Array<{ id: string }> = await LOADERS[kind](ctx, [...ids]);
        return new Map(rows.map((row) => [row.id, row]));
      }),
    };
    open.set(kind, batch);
  }
  batch.ids.add(id);
  return batch.result.then((rows) => (rows.get(id) as Rows[K] | undefined) ?? null);
}
