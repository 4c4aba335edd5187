import {
  createEvent,
  createEventInput,
  deleteEvent,
  eventCounts,
  eventOrderInput,
  getEvent,
  listEvents,
  updateEvent,
  updateEventInput,
} from '../../src/services/events.ts';
import { inputFrom } from '../input.ts';
import { missingRight } from '../../src/auth/refusal.ts';
import type { Event as EventRow } from '../../src/generated/prisma/client.ts';
import { related, relatedUser } from '../../src/services/related.ts';
import { User } from './user.ts';
import { Account, accountRelation } from './account.ts';
import { organisationRelation } from './organisation.ts';
import { accountEvents, venueEvents } from '../../src/services/child-lists.ts';
import { selectsOnNodes } from '../selection.ts';
import { Venue } from './venue.ts';
import { salesCounters } from '../../src/services/sales-counters.ts';
import { SalesCounters } from './sales-counters.ts';
import { revenueField } from './money.ts';
import type { RequestContext } from '../../src/context.ts';
import { builder } from '../builder.ts';
import { Node } from '../node.ts';
import { pageArgsFor, pagedConnection, REST_ONLY, updatedSinceArg } from '../pagination.ts';
import { describeEnumStatuses, OrderDirection, statusEnum, valuesEnum } from './common.ts';
import { answer, deleted, deletePayload, payload } from '../payload.ts';

const READ = { $all: { organisation: true, permission: 'events.read' } } as const;
const WRITE = { $all: { organisation: true, permission: 'events.write' } } as const;

export const EventStatus = statusEnum('EventStatus', 'event', 'Where an event is in its life. Any status may follow any other.', {
  draft: 'Being prepared; not shown to buyers.',
  published: 'Announced; tickets not on sale yet.',
  on_sale: 'Tickets are on sale.',
  sold_out: 'Every ticket is sold.',
  completed: 'The event has taken place.',
  cancelled: 'The event will not take place.',
});

/** Who may see an event: whoever may read or write events on its account. */
function mayReadEvent(event: { accountId: string }, ctx: RequestContext): boolean {
  return ctx.access.allows('events', 'read', event.accountId) || ctx.access.allows('events', 'write', event.accountId);
}

/**
 * Which events a caller sees is decided once, by the use cases (src/services/events.ts): a list is
 * filtered to the accounts the caller may read, a single read or a change authorises its event.
 * Every field answering events answers a use case's result (test/platform/authorisation-schema.test.ts
 * lists them, so a new one is reviewed), and Event's fields skip the type's rule: Pothos would
 * otherwise wrap each of them in a resolver asking `mayReadEvent` again for every field of every
 * event, a large share of a list request's CPU. The rule stays declared on the type for the schema's
 * authorisation checks and for a field that would produce events without a use case.
 */
const column = { skipTypeScopes: true } as const;

/**
 * An event a relation answers (an occurrence's, an order line's), not a use case: the type's rule
 * is asked here, once per event, as its fields skip it. `from` is the row naming it, when the
 * statement that read the row read the event too (src/services/related.ts).
 */
export async function relatedEvent(ctx: RequestContext, eventId: string, from?: object): Promise<EventRow | null> {
  const event = await related(ctx, 'event', eventId, from);
  if (event && !mayReadEvent(event, ctx)) throw missingRight(ctx);
  return event;
}

export const Event = builder.prismaObject('Event', {
  interfaces: [Node],
  description: 'A ticketed event (evt_) of one account, with occurrences and ticket types.',
  authScopes: mayReadEvent,
  fields: (t) => ({
    organisationId: t.exposeID('organisationId', { ...column, description: 'Owning organisation.' }),
    organisation: t.field({ ...column, ...organisationRelation() }),
    accountId: t.exposeID('accountId', { ...column, description: 'Owning account.' }),
    name: t.exposeString('name', { ...column, description: 'Name, 1 to 255 characters.' }),
    description: t.exposeString('description', {
      ...column,
      nullable: true,
      description: 'Description (at most 5000 characters), or null.',
    }),
    status: t.expose('status', { ...column, type: EventStatus, description: 'Status.' }),
    venueId: t.exposeID('venueId', { ...column, nullable: true, description: 'Venue (vnu_) of the same account, or null.' }),
    venue: t.field({
      ...column,
      type: Venue,
      nullable: true,
      description: 'Its venue, or null (also null, with an error, where you may not read venues).',
      resolve: (event, _args, ctx) => related(ctx, 'venue', event.venueId),
    }),
    account: t.field({ ...column, ...accountRelation() }),
    timezone: t.expose('timezone', { ...column, type: 'TimeZone', description: 'IANA time zone in which new occurrences are given.' }),
    onSaleDate: t.expose('onSaleDate', { ...column, type: 'DateTime', nullable: true, description: 'When sales open, or null.' }),
    offSaleDate: t.expose('offSaleDate', { ...column, type: 'DateTime', nullable: true, description: 'When sales close, or null.' }),
    occurrenceCount: t.int({
      ...column,
      description: 'Occurrences that are not cancelled.',
      resolve: async (event, _args, ctx) => (await eventCounts(ctx, event)).occurrenceCount,
    }),
    ticketCount: t.int({
      ...column,
      description: 'Ticket types that are not deleted.',
      resolve: async (event, _args, ctx) => (await eventCounts(ctx, event)).ticketCount,
    }),
    productCount: t.int({
      ...column,
      description: 'Products (not admission: parking, merchandise) that are not deleted.',
      resolve: async (event, _args, ctx) => (await eventCounts(ctx, event)).productCount,
    }),
    sales: t.field({
      ...column,
      type: SalesCounters,
      description: 'Tickets of its scheduled occurrences: capacity, sold, held and available.',
      resolve: (event, _args, ctx) => salesCounters(ctx, 'event', event.id, event),
    }),
    revenue: t.field({ ...column, ...revenueField('event', 'Money taken for its tickets, at every occurrence') }),
    tags: t.exposeStringList('tags', { ...column, description: 'Tags, each 1 to 50 characters, at most 50, no duplicates.' }),
    isDeleted: t.exposeBoolean('isDeleted', { ...column, description: 'Whether the event was deleted (deleted events are not served).' }),
    createdAt: t.expose('createdAt', { ...column, type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { ...column, type: 'DateTime', description: 'Last change.' }),
    createdBy: t.exposeString('createdBy', {
      ...column,
      nullable: true,
      description: 'The staff user (usr_) who created it; null when an API key did.',
    }),
    creator: t.field({
      ...column,
      type: User,
      nullable: true,
      description:
        "The staff user who created it; null when an API key did (also null, with an error, where you may not read that user: user(id:)'s rule).",
      resolve: (event, _args, ctx) => relatedUser(ctx, event.createdBy),
    }),
  }),
});

const EventConnection = pagedConnection(Event, 'EventConnection', 'events');

builder.prismaObjectField(Account, 'events', (t) =>
  t.field({
    type: EventConnection,
    nullable: true,
    description:
      'Its events, newest first, as events(accountId:) lists them: deleted ones left out; null, with an error, where you may not read its events.',
    args: t.arg.connectionArgs(),
    resolve: (account, args, ctx, info) => {
      // The rule of `events`, whose use case authorises the events it lists (test/platform/authorisation-schema.test.ts).
      if (!ctx.access.allows('events', 'read', account.id)) throw missingRight(ctx);
      return accountEvents(ctx, account.id, args, selectsOnNodes(info, 'sales') ? ['sales'] : []);
    },
  }),
);

builder.prismaObjectField(Venue, 'events', (t) =>
  t.field({
    type: EventConnection,
    nullable: true,
    description:
      'The events held there, newest first, as events(venueId:) lists them: deleted ones left out; null, with an error, where you may not read the events of its account.',
    args: t.arg.connectionArgs(),
    resolve: (venue, args, ctx, info) => {
      // The rule of `events`: a venue's events are of its own account.
      if (!ctx.access.allows('events', 'read', venue.accountId)) throw missingRight(ctx);
      return venueEvents(ctx, venue.id, args, selectsOnNodes(info, 'sales') ? ['sales'] : []);
    },
  }),
);

const CreateEventInput = inputFrom('CreateEventInput', createEventInput, {
  description: 'A new event.',
  fields: {
    accountId: 'Owning account (acc_): not deleted, and you need events.write on it.',
    name: 'Name, 1 to 255 characters.',
    description: 'At most 5000 characters.',
    status: `${describeEnumStatuses('event', { default: 'draft' })}.`,
    venueId: 'A venue (vnu_) of the same account.',
    timezone: "IANA time zone name; defaults to the venue's, required when the venue has none.",
    onSaleDate: 'ISO 8601 date and time with Z or an offset; before offSaleDate.',
    offSaleDate: 'ISO 8601 date and time with Z or an offset; after onSaleDate.',
    tags: 'Tags, each 1 to 50 characters, at most 50; duplicates are dropped.',
  },
});

const UpdateEventInput = inputFrom('UpdateEventInput', updateEventInput, {
  description: 'Changes to an event; omitted fields stay, null clears a nullable one. The account cannot change.',
  fields: {
    name: 'Name, 1 to 255 characters.',
    description: 'At most 5000 characters; null clears it.',
    status: `${describeEnumStatuses('event')}.`,
    venueId: 'A venue (vnu_) of the same account; null clears it.',
    timezone: 'IANA time zone name for occurrences added from now on; existing ones keep theirs.',
    onSaleDate: 'ISO 8601 date and time with Z or an offset; null clears it.',
    offSaleDate: 'ISO 8601 date and time with Z or an offset; null clears it.',
    tags: 'Replaces the tags: each 1 to 50 characters, at most 50; duplicates are dropped.',
  },
});

const EventOrderField = valuesEnum('EventOrderField', 'What a list of events is sorted by.', {
  created_at: 'Creation time; newest first unless direction says ASC. The default order.',
  name: 'Name, A first unless direction says DESC (ties by id).',
  start_date:
    'Start of the first scheduled occurrence (cancelled ones do not count), earliest first unless direction says DESC; events without one come last either way.',
});

const EventOrder = inputFrom('EventOrder', eventOrderInput, {
  description: 'How to sort events. A cursor holds its order: a cursor of one order is refused by another (VALIDATION_FAILED).',
  fields: {
    field: { description: 'What to sort by.', type: EventOrderField },
    direction: { description: 'Which way: CREATED_AT runs DESC, NAME and START_DATE run ASC when left out.', type: OrderDirection },
  },
});

builder.queryFields((t) => ({
  events: t.field({
    type: EventConnection,
    nullable: true,
    description: 'Events on the accounts you may read, newest first (GET /v1/events). Deleted events are left out.',
    authScopes: READ,
    args: {
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
      status: t.arg({ type: EventStatus, description: 'Only this status.' }),
      accountId: t.arg.id({ description: 'Only this account.' }),
      venueId: t.arg.id({ description: 'Only events held at this venue (vnu_).' }),
      q: t.arg.string({ description: 'Case-insensitive text searched in name and description (at most 200 characters).' }),
      from: t.arg.string({
        description:
          "/v1's start filter (the graph takes startsFrom or startDateFrom): a date (YYYY-MM-DD, from the start of that day in the occurrence's time zone) or an ISO 8601 instant.",
        extensions: REST_ONLY,
      }),
      to: t.arg.string({
        description:
          "/v1's start filter (the graph takes startsTo or startDateTo): a date (YYYY-MM-DD, to the end of that day in the occurrence's time zone) or an ISO 8601 instant.",
        extensions: REST_ONLY,
      }),
      startsFrom: t.arg({
        type: 'DateTime',
        description: 'Only events with a scheduled occurrence starting at or after this instant. Not with startDateFrom.',
      }),
      startsTo: t.arg({
        type: 'DateTime',
        description: 'Only events with a scheduled occurrence starting at or before this instant. Not with startDateTo.',
      }),
      startDateFrom: t.arg({
        type: 'LocalDate',
        description:
          "Only events with a scheduled occurrence on or after this day, in the occurrence's own time zone (a show at 21:00 in New York on 4 July is on 2026-07-04). Not with startsFrom.",
      }),
      startDateTo: t.arg({
        type: 'LocalDate',
        description:
          "Only events with a scheduled occurrence on or before this day (the whole day), in the occurrence's own time zone. Not with startsTo.",
      }),
      updatedSince: updatedSinceArg(
        t,
        'events created or changed',
        'their own fields: an occurrence or ticket type added is not a change of the event; deleted events leave the list',
      ),
      orderBy: t.arg({
        type: EventOrder,
        description:
          'The order: CREATED_AT (the default: newest first), NAME (A first) or START_DATE (the first scheduled occurrence, earliest first; events without one last), each with a direction. Every order pages by cursor without repeating or skipping an event while events are added; a cursor of another order is refused.',
      }),
    },
    resolve: (_root, args, ctx) => listEvents(ctx, args),
  }),
  event: t.field({
    type: Event,
    nullable: true,
    description: 'One event (GET /v1/events/{id}).',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Event id (evt_).' }) },
    resolve: (_root, { id }, ctx) => getEvent(ctx, id),
  }),
}));

builder.mutationFields((t) => ({
  createEvent: t.field({
    ...payload('CreateEvent', 'event', Event, 'The event created.'),
    description: 'Creates an event (POST /v1/events).',
    authScopes: WRITE,
    args: { input: t.arg({ type: CreateEventInput, required: true, description: 'The event.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => createEvent(ctx, input)),
  }),
  updateEvent: t.field({
    ...payload('UpdateEvent', 'event', Event, 'The event as changed.'),
    description: 'Changes an event (PATCH /v1/events/{id}).',
    authScopes: WRITE,
    args: {
      id: t.arg.id({ required: true, description: 'Event id (evt_).' }),
      input: t.arg({ type: UpdateEventInput, required: true, description: 'The changes.' }),
    },
    resolve: (_root, { id, input }, ctx) => answer(ctx, () => updateEvent(ctx, id, input)),
  }),
  deleteEvent: t.field({
    ...deletePayload('DeleteEvent', 'event'),
    description: 'Deletes an event (DELETE /v1/events/{id}): it leaves every list and answers NOT_FOUND from then on.',
    authScopes: WRITE,
    args: { id: t.arg.id({ required: true, description: 'Event id (evt_).' }) },
    resolve: (_root, { id }, ctx) => deleted(ctx, () => deleteEvent(ctx, id)),
  }),
}));
