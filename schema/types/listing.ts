import {
  listSalesListings,
  type ListingAvailability,
  type ListingEvent,
  type ListingOccurrence,
  type ListingTicketType,
} from '../../src/services/listings.ts';
import { builder } from '../builder.ts';
import { describeEnumValues } from './common.ts';
import { LISTED_EVENT_STATUSES } from '../../src/services/sellability.ts';
import { EventStatus } from './event.ts';
import { Pagination, pageArgsFor } from '../pagination.ts';

type Listings = Awaited<ReturnType<typeof listSalesListings>>;

/*
 * The storefront's view of a channel's catalogue. These objects carry no tenant rows of their own:
 * they are built by the listings service for the key's channel only, and reachable only from
 * `salesListings`, whose scope is a channel key.
 */

const ListingChannel = builder.objectRef<Listings['channel']>('ListingChannel').implement({
  description: 'The sales channel of the key.',
  fields: (t) => ({
    channelId: t.exposeID('id', { description: 'The sales channel (sch_).' }),
    slug: t.exposeString('slug', { description: 'Channel slug.' }),
    name: t.exposeString('name', { description: 'Channel name.' }),
  }),
});

const ListingAvailabilityRef = builder.objectRef<ListingAvailability>('ListingAvailability').implement({
  description: 'What remains of one ticket type at one occurrence.',
  fields: (t) => ({
    ticketTypeId: t.exposeID('ticketTypeId', { description: 'Ticket type id (tkt_).' }),
    available: t.exposeInt('available', {
      nullable: true,
      description: 'Tickets still available (capacity minus held minus sold, at least 0); null = unlimited.',
    }),
  }),
});

const ListingOccurrenceRef = builder.objectRef<ListingOccurrence>('ListingOccurrence').implement({
  description: 'A scheduled occurrence still to come. Dates and times of day are wall-clock values in `timezone`.',
  fields: (t) => ({
    occurrenceId: t.exposeID('id', { description: 'The occurrence (eoc_).' }),
    startDate: t.expose('startDate', { type: 'LocalDate', description: 'Start date (YYYY-MM-DD) in the time zone.' }),
    startTime: t.exposeString('startTime', { description: 'Start time of day (HH:MM, 24-hour) in the time zone.' }),
    endDate: t.expose('endDate', { type: 'LocalDate', nullable: true, description: 'End date in the time zone, or null.' }),
    endTime: t.exposeString('endTime', { nullable: true, description: 'End time of day in the time zone, or null.' }),
    timezone: t.expose('timezone', { type: 'TimeZone', description: 'IANA time zone of the dates and times.' }),
    startsAt: t.expose('startsAt', { type: 'DateTime', description: 'Start as an instant.' }),
    endsAt: t.expose('endsAt', { type: 'DateTime', nullable: true, description: 'End as an instant, or null.' }),
    availability: t.field({
      type: [ListingAvailabilityRef],
      description: "What remains of each of the event's ticket types at this occurrence, in the order of ticketTypes.",
      resolve: (occurrence) => occurrence.availability,
    }),
  }),
});

const ListingTicketTypeRef = builder.objectRef<ListingTicketType>('ListingTicketType').implement({
  description: 'A ticket type on sale for the event.',
  fields: (t) => ({
    ticketTypeId: t.exposeID('id', { description: 'The ticket type (tkt_).' }),
    name: t.exposeString('name', { description: 'Name.' }),
    description: t.exposeString('description', { nullable: true, description: 'Description, or null.' }),
    priceAmount: t.exposeInt('priceAmount', { description: 'Price in minor units of currency (cents, pence).' }),
    currency: t.exposeString('currency', { description: 'ISO 4217 currency code.' }),
    maxPerOrder: t.exposeInt('maxPerOrder', { nullable: true, description: 'Most tickets of this type in one order; null = no limit.' }),
    salesStartAt: t.expose('salesStartAt', { type: 'DateTime', nullable: true, description: 'Sales of this type open then; null = open.' }),
    salesEndAt: t.expose('salesEndAt', {
      type: 'DateTime',
      nullable: true,
      description: 'Sales of this type close then; null = until the occurrence.',
    }),
    onSale: t.exposeBoolean('onSale', {
      description:
        "Whether a cart may take it now: inside its sales window and the event's on/off-sale dates (a cart also needs availability).",
    }),
  }),
});

export const ListingEventRef = builder.objectRef<ListingEvent>('ListingEvent').implement({
  description: 'A published or on-sale event the channel sells.',
  fields: (t) => ({
    eventId: t.exposeID('id', { description: 'The event (evt_).' }),
    name: t.exposeString('name', { description: 'Name.' }),
    description: t.exposeString('description', { nullable: true, description: 'Description, or null.' }),
    status: t.field({
      type: EventStatus,
      description: `${describeEnumValues(LISTED_EVENT_STATUSES)}.`,
      resolve: (event) => event.status as (typeof LISTED_EVENT_STATUSES)[number],
    }),
    timezone: t.expose('timezone', { type: 'TimeZone', description: 'IANA time zone of the event.' }),
    venueId: t.exposeID('venueId', { nullable: true, description: 'Venue id (vnu_), or null.' }),
    tags: t.exposeStringList('tags', { description: 'Tags.' }),
    occurrences: t.field({
      type: [ListingOccurrenceRef],
      description: 'Scheduled occurrences that have not started yet, in start order.',
      resolve: (event) => event.occurrences,
    }),
    ticketTypes: t.field({
      type: [ListingTicketTypeRef],
      description: 'Ticket types (deleted ones left out), oldest first.',
      resolve: (event) => event.ticketTypes,
    }),
  }),
});

const SalesListings = builder.objectRef<Listings>('SalesListings').implement({
  description: "A page of what the key's sales channel sells.",
  fields: (t) => ({
    channel: t.field({ type: ListingChannel, description: 'The channel of the key.', resolve: (r) => r.channel }),
    events: t.field({ type: [ListingEventRef], description: 'Events of this page, oldest first.', resolve: (r) => r.events }),
    pagination: t.field({ type: Pagination, description: 'Page position and totals (of events).', resolve: (r) => r.pagination }),
  }),
});

builder.queryFields((t) => ({
  salesListings: t.field({
    type: SalesListings,
    nullable: true,
    description:
      "What the key's sales channel sells, paged by event (GET /live/sales/listings). Takes a channel key (svpk_ or svsk_) as Authorization: Bearer; management credentials are refused.",
    authScopes: { salesChannel: true },
    args: pageArgsFor(t),
    resolve: (_root, args, ctx) => listSalesListings(ctx, args),
  }),
}));
