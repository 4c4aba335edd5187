import { channelOf, type ChannelPrincipal, type RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import { authenticatedChannel } from '../auth/channel-keys.ts';
import { rightsMoved } from '../auth/current-rights.ts';
import type { SalesChannel } from '../generated/prisma/client.ts';
import { LISTED_EVENT_STATUSES, salesClosed } from './sellability.ts';
import { pageWindow, paginationInfo, type RawPageArgs } from '../pagination.ts';
import { occurrenceTimes } from './occurrences.ts';
import type { SharedPages } from '../http/shared-pages.ts';

/**
 * What a sales channel sells (GET /live/sales/listings): the published and on-sale events of the
 * channel's account (all of them, or those listed for the channel), each with its scheduled
 * occurrences still to come and its ticket types, and per occurrence what remains of each type.
 *
 * One page is one statement whatever its size (listSalesListings).
 *
 * Remaining = capacity - held - sold, never below 0. The capacity is the catalogue's: the
 * occurrence's capacity when set (it overrides every ticket type's), else the ticket type's; null
 * is unlimited. Held and sold come from the Inventory row of (ticket type, occurrence); no row
 * means nothing is held or sold yet.
 */

export interface ListingAvailability {
  ticketTypeId: string;
  /** Null = unlimited. */
  available: number | null;
}

export interface ListingOccurrence {
  id: string;
  startDate: string;
  startTime: string;
  endDate: string | null;
  endTime: string | null;
  timezone: string;
  startsAt: Date;
  endsAt: Date | null;
  availability: ListingAvailability[];
}

export interface ListingTicketType {
  id: string;
  name: string;
  description: string | null;
  priceAmount: number;
  currency: string;
  maxPerOrder: number | null;
  salesStartAt: Date | null;
  salesEndAt: Date | null;
  /** Whether a cart may take it now: inside its sales window and the event's on/off-sale dates. */
  onSale: boolean;
}

export interface ListingEvent {
  id: string;
  name: string;
  description: string | null;
  status: string;
  timezone: string;
  venueId: string | null;
  tags: string[];
  occurrences: ListingOccurrence[];
  ticketTypes: ListingTicketType[];
}

export function remaining(capacity: number | null, held: number, sold: number): number | null {
  return capacity === null ? null : Math.max(0, capacity - held - sold);
}

/** A sales channel's columns, as Prisma's SalesChannel has them. */
const CHANNEL_COLUMNS = `id, "organisationId", "accountId", name, slug, "channelType"::text AS "channelType", "sellsAllEvents", "isActive",
  "storefrontUrl", "createdAt", "updatedAt"`;

/** The key's principal and its sales channel (every sales API service starts here). */
export async function channelOfKey(ctx: RequestContext): Promise<{ principal: ChannelPrincipal; channel: SalesChannel }> {
  const principal = channelOf(ctx);
  // Read with the key by authentication, and cached with it (forgotten when the channel changes).
  const known = authenticatedChannel(principal);
  if (known) return { principal, channel: known };
  const sql = ctx.sql.statement();
  sql.add(`SELECT ${CHANNEL_COLUMNS} FROM sales_channels WHERE "organisationId" = $1 AND id = ${sql.param(principal.channelId)}`);
  const [channel] = await ctx.sql.rows<SalesChannel>(sql);
  if (!channel) throw new AppError('UNAUTHENTICATED', 'The sales channel of this key no longer exists.');
  return { principal, channel };
}

/** A page row: the event's own fields as a listing has them, with what the checks need and its parts as JSON. */
interface ListingRow extends Omit<ListingEvent, 'id' | 'occurrences' | 'ticketTypes'> {
  total: number;
  /** Null on the one row of an empty page (which still carries the total). */
  id: string | null;
  onSaleDate: Date | null;
  offSaleDate: Date | null;
  occurrences: Array<{ id: string; startsAt: string; endsAt: string | null; timezone: string; capacity: number | null }>;
  ticketTypes: Array<{
    id: string;
    name: string;
    description: string | null;
    priceAmount: number;
    currency: string;
    capacity: number | null;
    maxPerOrder: number | null;
    salesStartAt: string | null;
    salesEndAt: string | null;
  }>;
  inventories: Array<{ ticketTypeId: string; occurrenceId: string; held: number; sold: number }>;
}

/**
 * The page of events a channel sells (its account's, listed, not deleted, all of them or those it names), its
 * total, and per event its scheduled occurrences still to come, its ticket types and their
 * inventories: one statement whatever the page size.
 */
export async function listSalesListings(ctx: RequestContext, args: RawPageArgs): Promise<Listings> {
  // The key is judged on every request (a revoked key or a deactivated channel is refused at once);
  // only the page is shared.
  const { channel } = await channelOfKey(ctx);
  const window = pageWindow(args);
  return sharedListings(ctx, channel, window);
}

type Listings = Awaited<ReturnType<typeof readListings>>;

/**
 * An on-sale's buyers all ask for the same listings in the same moment: a channel's page is read
 * once for all of them (src/http/shared-pages.ts): while it is being read, and for LISTINGS_SHARED_FOR
 * after, every request for it gets that read's answer. A change of the catalogue (events, occurrences,
 * ticket types, the channel) shows at once; what sales hold and sell shows at most that late. Nothing
 * that decides who gets a ticket reads it: a cart holds tickets against the inventory rows themselves,
 * exactly. test/sales/listings-shared.test.ts.
 */
function sharedListings(ctx: RequestContext, channel: SalesChannel, window: ReturnType<typeof pageWindow>): Promise<Listings> {
  // A request whose channel was read before a change of it reads its own page, and shares none.
  if (rightsMoved(ctx)) return readListings(ctx, channel, window);
  const key = `${channel.organisationId}|${channel.id}|${window.take}|${window.offset}`;
  return (ctx.runtime.listings as SharedPages<Listings>).get(channel.organisationId, key, () => readListings(ctx, channel, window));
}

async function readListings(ctx: RequestContext, channel: SalesChannel, window: ReturnType<typeof pageWindow>) {
  const now = new Date();
  const sql = ctx.sql.statement();
  const at = sql.param(now);
  sql.add(`WITH listed AS (
      SELECT e.* FROM events e
       WHERE e."organisationId" = $1 AND e."accountId" = ${sql.param(channel.accountId)} AND NOT e."isDeleted"
         AND e.status::text = ANY(${sql.param([...LISTED_EVENT_STATUSES])}::text[])
         AND (${sql.param(channel.sellsAllEvents)}::boolean OR EXISTS (SELECT 1 FROM sales_channel_events l
               WHERE l."organisationId" = $1 AND l."channelId" = ${sql.param(channel.id)} AND l."eventId" = e.id))
    ), page AS (
      SELECT * FROM listed ORDER BY "createdAt", id LIMIT ${sql.param(window.take)} OFFSET ${sql.param(window.offset)}
    )
    SELECT (SELECT count(*)::int FROM listed) AS total, page.id, page.name, page.description, page.status::text AS status, page.timezone,
      page."venueId", coalesce(page.tags, '{}') AS tags, page."onSaleDate", page."offSaleDate",
      (SELECT coalesce(json_agg(json_build_object('id', o.id, 'startsAt', o."startsAt", 'endsAt', o."endsAt", 'timezone', o.timezone,
                'capacity', o.capacity) ORDER BY o."startsAt", o.id), '[]')
         FROM event_occurrences o
        WHERE o."organisationId" = $1 AND o."eventId" = page.id AND o.status = 'scheduled' AND o."startsAt" > ${at}) AS occurrences,
      (SELECT coalesce(json_agg(json_build_object('id', t.id, 'name', t.name, 'description', t.description, 'priceAmount', t."priceAmount",
                'currency', t.currency, 'capacity', t.capacity, 'maxPerOrder', t."maxPerOrder", 'salesStartAt', t."salesStartAt",
                'salesEndAt', t."salesEndAt") ORDER BY t."createdAt", t.id), '[]')
         FROM ticket_types t WHERE t."organisationId" = $1 AND t."eventId" = page.id AND NOT t."isDeleted") AS "ticketTypes",
      (SELECT coalesce(json_agg(json_build_object('ticketTypeId', inv."ticketTypeId", 'occurrenceId', inv."occurrenceId", 'held', inv.held,
                'sold', inv.sold)), '[]')
         FROM inventories inv JOIN event_occurrences o ON o."organisationId" = inv."organisationId" AND o.id = inv."occurrenceId"
        WHERE inv."organisationId" = $1 AND o."eventId" = page.id AND o.status = 'scheduled' AND o."startsAt" > ${at}) AS inventories
    FROM (SELECT 1) one LEFT JOIN page ON true
    ORDER BY page."createdAt", page.id`);
  const rows = await ctx.sql.rows<ListingRow>(sql);
  const date = (value: string | null) => (value === null ? null : new Date(value));

  const events: ListingEvent[] = rows
    .filter((row) => row.id !== null)
    .map((row) => {
      const inventoryOf = new Map(row.inventories.map((inv) => [`${inv.ticketTypeId}|${inv.occurrenceId}`, inv]));
      const types = row.ticketTypes.map((type) => ({ ...type, salesStartAt: date(type.salesStartAt), salesEndAt: date(type.salesEndAt) }));
      const listing = (raw: ListingRow['occurrences'][number]): ListingOccurrence => {
        const occurrence = { ...raw, startsAt: new Date(raw.startsAt), endsAt: date(raw.endsAt) };
        const times = occurrenceTimes(occurrence);
        return {
          id: occurrence.id,
          startDate: times.startDate,
          startTime: times.startTime,
          endDate: times.endDate,
          endTime: times.endTime,
          timezone: occurrence.timezone,
          startsAt: occurrence.startsAt,
          endsAt: occurrence.endsAt,
          availability: types.map((type) => {
            const inv = inventoryOf.get(`${type.id}|${occurrence.id}`);
            return { ticketTypeId: type.id, available: remaining(occurrence.capacity ?? type.capacity, inv?.held ?? 0, inv?.sold ?? 0) };
          }),
        };
      };
      return {
        id: row.id!,
        name: row.name,
        description: row.description,
        status: row.status,
        timezone: row.timezone,
        venueId: row.venueId,
        tags: row.tags,
        occurrences: row.occurrences.map(listing),
        ticketTypes: types.map((type) => ({
          id: type.id,
          name: type.name,
          description: type.description,
          priceAmount: type.priceAmount,
          currency: type.currency,
          maxPerOrder: type.maxPerOrder,
          salesStartAt: type.salesStartAt,
          salesEndAt: type.salesEndAt,
          onSale: salesClosed(row, type, now) === null,
        })),
      };
    });

  const pagination = paginationInfo(window, rows[0]?.total ?? 0);
  return { channel: { id: channel.id, slug: channel.slug, name: channel.name }, events, pagination };
}
