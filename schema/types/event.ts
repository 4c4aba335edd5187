import {
  createEvent,
  createEventInput,
  deleteEvent,
  eventCounts,
  getEvent,
  listEvents,
  updateEvent,
  updateEventInput,
} from '../../src/services/events.ts';
import { inputFrom } from '../input.ts';
import type { RequestContext } from '../../src/context.ts';
import { missingRight } from '../../src/auth/refusal.ts';
import { builder } from '../builder.ts';
import { pageArgsFor, pagedConnection } from '../pagination.ts';
import { DeleteResult, statusEnum } from './common.ts';
import { describeStatuses } from '../../src/statuses.ts';

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
 * The events a field answers, each checked with `mayReadEvent` (the type's rule) before any of its
 * fields resolves: the fields every producer of events applies (the list, the single read, create
 * and update; test/platform/authorisation-schema.test.ts keeps that list complete). The services answer only
 * events the caller may read or write, so this never refuses in practice; it keeps the type's rule
 * in force for the fields, which skip the per-field check.
 */
function readable<E extends { accountId: string }>(ctx: RequestContext, events: E[]): E[] {
  for (const event of events) if (!mayReadEvent(event, ctx)) throw missingRight(ctx);
  return events;
}

/**
 * Event's fields skip the type's per-field check: Pothos would wrap each of them in a resolver only
 * to run it, and graphql-jit would then build a resolve-info object and two closures for every
 * field of every event — ~20% of a list request's CPU. The rule is applied once per
 * event instead, where events are produced (`readable`).
 */
const column = { skipTypeScopes: true } as const;

export const Event = builder.prismaObject('Event', {
  description: 'A ticketed event (evt_) of one account, with occurrences and ticket types (docs/spec/service-spec.md §2, "Event").',
  authScopes: mayReadEvent,
  fields: (t) => ({
    id: t.exposeString('id', { ...column, description: 'Event id (evt_).' }),
    organisationId: t.exposeString('organisationId', { ...column, description: 'Owning organisation.' }),
    accountId: t.exposeString('accountId', { ...column, description: 'Owning account.' }),
    name: t.exposeString('name', { ...column, description: 'Name, 1 to 255 characters.' }),
    description: t.exposeString('description', {
      ...column,
      nullable: true,
      description: 'Description (at most 5000 characters), or null.',
    }),
    status: t.expose('status', { ...column, type: EventStatus, description: 'Status.' }),
    venueId: t.exposeString('venueId', { ...column, nullable: true, description: 'Venue (vnu_) of the same account, or null.' }),
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
    tags: t.exposeStringList('tags', { ...column, description: 'Tags, each 1 to 50 characters, at most 50, no duplicates.' }),
    isDeleted: t.exposeBoolean('isDeleted', { ...column, description: 'Whether the event was deleted (deleted events are not served).' }),
    createdAt: t.expose('createdAt', { ...column, type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { ...column, type: 'DateTime', description: 'Last change.' }),
    createdBy: t.exposeString('createdBy', {
      ...column,
      nullable: true,
      description: 'The staff user (usr_) who created it; null when an API key did.',
    }),
  }),
});

const EventConnection = pagedConnection(Event, 'EventConnection', 'events');

const CreateEventInput = inputFrom('CreateEventInput', createEventInput, {
  description: 'A new event.',
  fields: {
    accountId: 'Owning account (acc_): not deleted, and you need events.write on it.',
    name: 'Name, 1 to 255 characters.',
    description: 'At most 5000 characters.',
    status: `${describeStatuses('event', { default: 'draft' })}.`,
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
    status: `${describeStatuses('event')}.`,
    venueId: 'A venue (vnu_) of the same account; null clears it.',
    timezone: 'IANA time zone name for occurrences added from now on; existing ones keep theirs.',
    onSaleDate: 'ISO 8601 date and time with Z or an offset; null clears it.',
    offSaleDate: 'ISO 8601 date and time with Z or an offset; null clears it.',
    tags: 'Replaces the tags: each 1 to 50 characters, at most 50; duplicates are dropped.',
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
      accountId: t.arg.string({ description: 'Only this account.' }),
      q: t.arg.string({ description: 'Case-insensitive text searched in name and description (at most 200 characters).' }),
      from: t.arg.string({
        description:
          "Only events with a scheduled occurrence starting at or after this: a date (YYYY-MM-DD, from the start of that day in the occurrence's time zone) or an ISO 8601 instant.",
      }),
      to: t.arg.string({
        description:
          "Only events with a scheduled occurrence starting at or before this: a date (YYYY-MM-DD, to the end of that day in the occurrence's time zone) or an ISO 8601 instant.",
      }),
    },
    resolve: async (_root, args, ctx) => {
      const page = await listEvents(ctx, args);
      readable(ctx, page.nodes);
      return page;
    },
  }),
  event: t.field({
    type: Event,
    nullable: true,
    description: 'One event (GET /v1/events/{id}).',
    authScopes: READ,
    args: { id: t.arg.string({ required: true, description: 'Event id (evt_).' }) },
    resolve: async (_root, { id }, ctx) => readable(ctx, [await getEvent(ctx, id)])[0]!,
  }),
}));

builder.mutationFields((t) => ({
  createEvent: t.field({
    type: Event,
    description: 'Creates an event (POST /v1/events).',
    authScopes: WRITE,
    args: { input: t.arg({ type: CreateEventInput, required: true, description: 'The event.' }) },
    resolve: async (_root, { input }, ctx) => readable(ctx, [await createEvent(ctx, input)])[0]!,
  }),
  updateEvent: t.field({
    type: Event,
    description: 'Changes an event (PATCH /v1/events/{id}).',
    authScopes: WRITE,
    args: {
      id: t.arg.string({ required: true, description: 'Event id (evt_).' }),
      input: t.arg({ type: UpdateEventInput, required: true, description: 'The changes.' }),
    },
    resolve: async (_root, { id, input }, ctx) => readable(ctx, [await updateEvent(ctx, id, input)])[0]!,
  }),
  deleteEvent: t.field({
    type: DeleteResult,
    description: 'Deletes an event (DELETE /v1/events/{id}): it leaves every list and answers NOT_FOUND from then on.',
    authScopes: WRITE,
    args: { id: t.arg.string({ required: true, description: 'Event id (evt_).' }) },
    resolve: (_root, { id }, ctx) => deleteEvent(ctx, id),
  }),
}));
