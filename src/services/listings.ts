import { channelOf, type ChannelPrincipal, type RequestContext } from '../context.ts';
import { AppError } from '../errors.ts';
import type { EventOccurrence, SalesChannel } from '../generated/prisma/client.ts';
import { eventsOfChannel, salesClosed } from './sellability.ts';
import { paginate, type PageArgs, type RawPageArgs } from '../pagination.ts';
import { occurrenceTimes } from './occurrences.ts';

/**
 * What a sales channel sells (GET /live/sales/listings): the published and on-sale events of the
 * channel's account (all of them, or those listed for the channel), each with its scheduled
 * occurrences still to come and its ticket types, and per occurrence what remains of each type.
 *
 * One page costs five queries whatever its size: count and page of events, then the occurrences,
 * ticket types and inventories of the whole page at once.
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

/** The key's principal and its sales channel (every sales API service starts here). */
export async function channelOfKey(ctx: RequestContext): Promise<{ principal: ChannelPrincipal; channel: SalesChannel }> {
  const principal = channelOf(ctx);
  const channel = await ctx.db.salesChannel.findFirst({ where: { id: principal.channelId } });
  if (!channel) throw new AppError('UNAUTHENTICATED', 'The sales channel of this key no longer exists.');
  return { principal, channel };
}

export async function listSalesListings(ctx: RequestContext, args: RawPageArgs) {
  const { channel } = await channelOfKey(ctx);

  const where = eventsOfChannel(channel);
  const page = await paginate(
    args as PageArgs,
    () => ctx.db.event.count({ where }),
    ({ skip, take }) => ctx.db.event.findMany({ where, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], skip, take }),
  );

  const eventIds = page.nodes.map((event) => event.id);
  const now = new Date();
  const [occurrences, ticketTypes] =
    eventIds.length === 0
      ? [[], []]
      : await Promise.all([
          ctx.db.eventOccurrence.findMany({
            where: { eventId: { in: eventIds }, status: 'scheduled', startsAt: { gt: now } },
            orderBy: [{ startsAt: 'asc' }, { id: 'asc' }],
          }),
          ctx.db.ticketType.findMany({
            where: { eventId: { in: eventIds }, isDeleted: false },
            orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
          }),
        ]);
  const inventories =
    occurrences.length === 0 || ticketTypes.length === 0
      ? []
      : await ctx.db.inventory.findMany({
          where: { occurrenceId: { in: occurrences.map((o) => o.id) }, ticketTypeId: { in: ticketTypes.map((t) => t.id) } },
          select: { occurrenceId: true, ticketTypeId: true, held: true, sold: true },
        });
  const inventoryOf = new Map(inventories.map((row) => [`${row.ticketTypeId}|${row.occurrenceId}`, row]));

  const typesByEvent = groupBy(ticketTypes, (type) => type.eventId);
  const occurrencesByEvent = groupBy(occurrences, (occurrence) => occurrence.eventId);

  const listing = (occurrence: EventOccurrence): ListingOccurrence => {
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
      availability: (typesByEvent.get(occurrence.eventId) ?? []).map((type) => {
        const row = inventoryOf.get(`${type.id}|${occurrence.id}`);
        return { ticketTypeId: type.id, available: remaining(occurrence.capacity ?? type.capacity, row?.held ?? 0, row?.sold ?? 0) };
      }),
    };
  };

  const events: ListingEvent[] = page.nodes.map((event) => ({
    id: event.id,
    name: event.name,
    description: event.description,
    status: event.status,
    timezone: event.timezone,
    venueId: event.venueId,
    tags: event.tags,
    occurrences: (occurrencesByEvent.get(event.id) ?? []).map(listing),
    ticketTypes: (typesByEvent.get(event.id) ?? []).map((type) => ({
      id: type.id,
      name: type.name,
      description: type.description,
      priceAmount: type.priceAmount,
      currency: type.currency,
      maxPerOrder: type.maxPerOrder,
      salesStartAt: type.salesStartAt,
      salesEndAt: type.salesEndAt,
      onSale: salesClosed(event, type, now) === null,
    })),
  }));

  return { channel: { id: channel.id, slug: channel.slug, name: channel.name }, events, pagination: page.pagination };
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}
