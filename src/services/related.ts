import type { RequestContext } from '../context.ts';
import { batched } from '../db/batch.ts';
import { missingRight } from '../auth/refusal.ts';
import type {
  Account,
  Customer,
  Event,
  EventOccurrence,
  Order,
  Organisation,
  Pass,
  Role,
  SalesChannel,
  TicketType,
  Venue,
  WebhookEndpoint,
} from '../generated/prisma/client.ts';
import { mayReadUser, USER_FIELDS } from './users.ts';

/**
 * The entity an `…Id` field names, for the graph's relation fields (`Event.venue`,
 * `OrderLineItem.event`, `Pass.order`, …), loaded in batches: every id of one kind asked while a
 * request's batch is open (the rows of a page) is read by one statement, through the organisation's
 * scoped client. Deleted rows answer null. Who may see the entity is its GraphQL type's rule, asked
 * for each one (Event's, which its fields skip, by the field that answers it: schema/types/event.ts;
 * User's, which lives in its use case, by `relatedUser`).
 */
const LOADERS = {
  account: (ctx: RequestContext, ids: string[]) => ctx.db.account.findMany({ where: { id: { in: ids }, isDeleted: false } }),
  venue: (ctx: RequestContext, ids: string[]) => ctx.db.venue.findMany({ where: { id: { in: ids }, isDeleted: false } }),
  event: (ctx: RequestContext, ids: string[]) => ctx.db.event.findMany({ where: { id: { in: ids }, isDeleted: false } }),
  occurrence: (ctx: RequestContext, ids: string[]) => ctx.db.eventOccurrence.findMany({ where: { id: { in: ids } } }),
  ticketType: (ctx: RequestContext, ids: string[]) => ctx.db.ticketType.findMany({ where: { id: { in: ids }, isDeleted: false } }),
  customer: (ctx: RequestContext, ids: string[]) => ctx.db.customer.findMany({ where: { id: { in: ids } } }),
  // As `order(id:)` reads one: not of a deleted account.
  order: (ctx: RequestContext, ids: string[]) => ctx.db.order.findMany({ where: { id: { in: ids }, account: { isDeleted: false } } }),
  pass: (ctx: RequestContext, ids: string[]) =>
    ctx.db.pass.findMany({ where: { id: { in: ids }, order: { account: { isDeleted: false } } } }),
  salesChannel: (ctx: RequestContext, ids: string[]) => ctx.db.salesChannel.findMany({ where: { id: { in: ids } } }),
  role: (ctx: RequestContext, ids: string[]) => ctx.db.role.findMany({ where: { id: { in: ids }, isDeleted: false } }),
  webhookEndpoint: (ctx: RequestContext, ids: string[]) => ctx.db.webhookEndpoint.findMany({ where: { id: { in: ids }, deletedAt: null } }),
  // The scoped client reads the request's organisation only.
  organisation: (ctx: RequestContext, ids: string[]) => ctx.db.organisation.findMany({ where: { id: { in: ids } } }),
  user: (ctx: RequestContext, ids: string[]) =>
    ctx.db.user.findMany({ where: { id: { in: ids } }, select: { ...USER_FIELDS, roleAssignments: { select: { accountId: true } } } }),
};

type UserRow = Awaited<ReturnType<(typeof LOADERS)['user']>>[number];

interface Rows {
  account: Account;
  venue: Venue;
  event: Event;
  occurrence: EventOccurrence;
  ticketType: TicketType;
  customer: Customer;
  order: Order;
  pass: Pass;
  salesChannel: SalesChannel;
  role: Role;
  webhookEndpoint: WebhookEndpoint;
  organisation: Organisation;
  user: UserRow;
}
export type RelatedKind = keyof Rows;

const BY_KIND = Object.fromEntries(
  Object.entries(LOADERS).map(([kind, load]) => [
    kind,
    batched(async (ctx, ids: string[]) => new Map<string, unknown>((await load(ctx, ids)).map((row: { id: string }) => [row.id, row]))),
  ]),
) as Record<RelatedKind, (ctx: RequestContext, id: string) => Promise<unknown>>;

/**
 * Entities read beside the row that names them, by the statement that read the row (an order's lines
 * with their events, src/services/child-lists.ts): kept per row object, so they live as long as
 * the row, and a later read of the same entity in the same request reads afresh.
 */
const known = new WeakMap<object, Partial<Record<RelatedKind, unknown>>>();

/** Keeps the `kind` (or null: none, or deleted) the statement that read `row` read beside it. */
export function knowRelated<K extends RelatedKind>(row: object, kind: K, entity: Rows[K] | null): void {
  known.set(row, { ...known.get(row), [kind]: entity });
}

/**
 * The `kind` whose id is `id` (null for none, or deleted): read with `from` (the row naming it) when
 * its statement read it, else in the request's batch of that kind.
 */
export async function related<K extends RelatedKind>(
  ctx: RequestContext,
  kind: K,
  id: string | null | undefined,
  from?: object,
): Promise<Rows[K] | null> {
  if (!id) return null;
  const read = from && known.get(from);
  if (read && kind in read) return (read[kind] as Rows[K] | null) ?? null;
  return ((await BY_KIND[kind](ctx, id)) as Rows[K] | undefined) ?? null;
}

/** A user a relation names (`Invitation.user`), shown as `user(id:)` shows one, else refused at its place. */
export async function relatedUser(ctx: RequestContext, id: string | null | undefined) {
  const user = await related(ctx, 'user', id);
  if (!user) return null;
  if (!mayReadUser(ctx, user)) throw missingRight(ctx);
  const { roleAssignments: _assignments, ...shown } = user;
  return shown;
}
