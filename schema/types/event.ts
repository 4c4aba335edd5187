import { createEvent, deleteEvent, eventCounts, getEvent, listEvents, updateEvent } from '../../src/services/events.ts';
import { builder } from '../builder.ts';
import { pageArgsFor, pagedConnection } from '../pagination.ts';
import { DeleteResult, statusEnum } from './common.ts';

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

export const Event = builder.prismaObject('Event', {
  description: 'A ticketed event (evt_) of one account, with occurrences and ticket types (../shared/spec/service-spec.md §2, "Event").',
  authScopes: (event, ctx) => ctx.access.allows('events', 'read', event.accountId) || ctx.access.allows('events', 'write', event.accountId),
  fields: (t) => ({
    id: t.exposeString('id', { description: 'Event id (evt_).' }),
    organisationId: t.exposeString('organisationId', { description: 'Owning organisation.' }),
    accountId: t.exposeString('accountId', { description: 'Owning account.' }),
    name: t.exposeString('name', { description: 'Name, 1 to 255 characters.' }),
    description: t.exposeString('description', { nullable: true, description: 'Description (at most 5000 characters), or null.' }),
    status: t.expose('status', { type: EventStatus, description: 'Status.' }),
    venueId: t.exposeString('venueId', { nullable: true, description: 'Venue (vnu_) of the same account, or null.' }),
    timezone: t.expose('timezone', { type: 'TimeZone', description: 'IANA time zone in which new occurrences are given.' }),
    onSaleDate: t.expose('onSaleDate', { type: 'DateTime', nullable: true, description: 'When sales open, or null.' }),
    offSaleDate: t.expose('offSaleDate', { type: 'DateTime', nullable: true, description: 'When sales close, or null.' }),
    occurrenceCount: t.int({
      description: 'Occurrences that are not cancelled.',
      resolve: async (event, _args, ctx) => (await eventCounts(ctx, event)).occurrenceCount,
    }),
    ticketCount: t.int({
      description: 'Ticket types that are not deleted.',
      resolve: async (event, _args, ctx) => (await eventCounts(ctx, event)).ticketCount,
    }),
    productCount: t.int({
      description: 'Products (not admission: parking, merchandise) that are not deleted.',
      resolve: async (event, _args, ctx) => (await eventCounts(ctx, event)).productCount,
    }),
    tags: t.exposeStringList('tags', { description: 'Tags, each 1 to 50 characters, at most 50, no duplicates.' }),
    isDeleted: t.exposeBoolean('isDeleted', { description: 'Whether the event was deleted (deleted events are not served).' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
    createdBy: t.exposeString('createdBy', {
      nullable: true,
      description: 'The staff user (usr_) who created it; null when an API key did.',
    }),
  }),
});

const EventConnection = pagedConnection(Event, 'EventConnection', 'events');

const CreateEventInput = builder.inputType('CreateEventInput', {
  description: 'A new event.',
  fields: (t) => ({
    accountId: t.string({ required: true, description: 'Owning account (acc_): not deleted, and you need events.write on it.' }),
    name: t.string({ required: true, description: 'Name, 1 to 255 characters.' }),
    description: t.string({ description: 'At most 5000 characters.' }),
    status: t.string({ description: 'draft (default), published, on_sale, sold_out, completed or cancelled.' }),
    venueId: t.string({ description: 'A venue (vnu_) of the same account.' }),
    timezone: t.string({ description: "IANA time zone name; defaults to the venue's, required when the venue has none." }),
    onSaleDate: t.string({ description: 'ISO 8601 date and time with Z or an offset; before offSaleDate.' }),
    offSaleDate: t.string({ description: 'ISO 8601 date and time with Z or an offset; after onSaleDate.' }),
    tags: t.stringList({ description: 'Tags, each 1 to 50 characters, at most 50; duplicates are dropped.' }),
  }),
});

const UpdateEventInput = builder.inputType('UpdateEventInput', {
  description: 'Changes to an event; omitted fields stay, null clears a nullable one. The account cannot change.',
  fields: (t) => ({
    name: t.string({ description: 'Name, 1 to 255 characters.' }),
    description: t.string({ description: 'At most 5000 characters; null clears it.' }),
    status: t.string({ description: 'draft, published, on_sale, sold_out, completed or cancelled.' }),
    venueId: t.string({ description: 'A venue (vnu_) of the same account; null clears it.' }),
    timezone: t.string({ description: 'IANA time zone name for occurrences added from now on; existing ones keep theirs.' }),
    onSaleDate: t.string({ description: 'ISO 8601 date and time with Z or an offset; null clears it.' }),
    offSaleDate: t.string({ description: 'ISO 8601 date and time with Z or an offset; null clears it.' }),
    tags: t.stringList({ description: 'Replaces the tags: each 1 to 50 characters, at most 50; duplicates are dropped.' }),
  }),
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
      status: t.arg.string({ description: 'Only this status: draft, published, on_sale, sold_out, completed or cancelled.' }),
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
    resolve: (_root, args, ctx) => listEvents(ctx, args),
  }),
  event: t.field({
    type: Event,
    nullable: true,
    description: 'One event (GET /v1/events/{id}).',
    authScopes: READ,
    args: { id: t.arg.string({ required: true, description: 'Event id (evt_).' }) },
    resolve: (_root, { id }, ctx) => getEvent(ctx, id),
  }),
}));

builder.mutationFields((t) => ({
  createEvent: t.field({
    type: Event,
    description: 'Creates an event (POST /v1/events).',
    authScopes: WRITE,
    args: { input: t.arg({ type: CreateEventInput, required: true, description: 'The event.' }) },
    resolve: (_root, { input }, ctx) => createEvent(ctx, input),
  }),
  updateEvent: t.field({
    type: Event,
    description: 'Changes an event (PATCH /v1/events/{id}).',
    authScopes: WRITE,
    args: {
      id: t.arg.string({ required: true, description: 'Event id (evt_).' }),
      input: t.arg({ type: UpdateEventInput, required: true, description: 'The changes.' }),
    },
    resolve: (_root, { id, input }, ctx) => updateEvent(ctx, id, input),
  }),
  deleteEvent: t.field({
    type: DeleteResult,
    description: 'Deletes an event (DELETE /v1/events/{id}): it leaves every list and answers NOT_FOUND from then on.',
    authScopes: WRITE,
    args: { id: t.arg.string({ required: true, description: 'Event id (evt_).' }) },
    resolve: (_root, { id }, ctx) => deleteEvent(ctx, id),
  }),
}));
