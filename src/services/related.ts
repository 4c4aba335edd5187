import type { RequestContext } from '../context.ts';
import { batched } from '../db/batch.ts';
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

const BY_KIND = Object.fromEntries(
  Object.entries(LOADERS).map(([kind, load]) => [
    kind,
    batched(async (ctx, ids: string[]) => new Map<string, unknown>((await load(ctx, ids)).map((row: { id: string }) => [row.id, row]))),
  ]),
) as Record<RelatedKind, (ctx: RequestContext, id: string) => Promise<unknown>>;

/** The `kind` whose id is `id` (null for none, or deleted), read in the request's batch of that kind. */
export async function related<K extends RelatedKind>(ctx: RequestContext, kind: K, id: string | null | undefined): Promise<Rows[K] | null> {
  if (!id) return null;
  return ((await BY_KIND[kind](ctx, id)) as Rows[K] | undefined) ?? null;
}
