import {
  createOccurrence,
  createOccurrenceInput,
  getOccurrence,
  listOccurrences,
  occurrenceTimes,
  updateOccurrence,
  updateOccurrenceInput,
} from '../../src/services/occurrences.ts';
import { builder } from '../builder.ts';
import { accountRelation } from './account.ts';
import { organisationRelation } from './organisation.ts';
import { missingRight } from '../../src/auth/refusal.ts';
import { eventOccurrences } from '../../src/services/child-lists.ts';
import { selectsOnNodes } from '../selection.ts';
import { Node } from '../node.ts';
import { inputFrom } from '../input.ts';
import { Event, relatedEvent } from './event.ts';
import { salesCounters } from '../../src/services/sales-counters.ts';
import { SalesCounters } from './sales-counters.ts';
import { revenueField } from './money.ts';
import { describeEnumStatuses, statusEnum } from './common.ts';
import { pageArgsFor, pagedConnection, updatedSinceArg } from '../pagination.ts';
import { answer, payload } from '../payload.ts';

const READ = { $all: { organisation: true, permission: 'events.read' } } as const;
const WRITE = { $all: { organisation: true, permission: 'events.write' } } as const;

export const OccurrenceStatus = statusEnum('OccurrenceStatus', 'occurrence', 'Whether an occurrence takes place.', {
  scheduled: 'It takes place as planned.',
  cancelled: "It was cancelled; it does not count in the event's occurrenceCount.",
});

export const EventOccurrence = builder.prismaObject('EventOccurrence', {
  interfaces: [Node],
  description:
    'One dated performance of an event (eoc_). Dates and times of day are wall-clock values in `timezone`; startsAt and endsAt are the same moments as instants.',
  authScopes: (occurrence, ctx) =>
    ctx.access.allows('events', 'read', occurrence.accountId) || ctx.access.allows('events', 'write', occurrence.accountId),
  fields: (t) => ({
    organisationId: t.exposeID('organisationId', { description: 'Owning organisation.' }),
    organisation: t.field(organisationRelation()),
    accountId: t.exposeID('accountId', { description: "The event's account." }),
    account: t.field(accountRelation()),
    eventId: t.exposeID('eventId', { description: 'The event (evt_).' }),
    event: t.field({
      type: Event,
      nullable: true,
      description: 'Its event: null once the event is deleted (also null, with an error, where you may not read events).',
      resolve: (occurrence, _args, ctx) => relatedEvent(ctx, occurrence.eventId),
    }),
    startDate: t.field({
      type: 'LocalDate',
      description: 'Start date (YYYY-MM-DD) in the time zone.',
      resolve: (occurrence) => occurrenceTimes(occurrence).startDate,
    }),
    startTime: t.string({
      description: 'Start time of day (HH:MM, 24-hour) in the time zone.',
      resolve: (occurrence) => occurrenceTimes(occurrence).startTime,
    }),
    endDate: t.field({
      type: 'LocalDate',
      nullable: true,
      description: 'End date (YYYY-MM-DD) in the time zone, or null when no end was given.',
      resolve: (occurrence) => occurrenceTimes(occurrence).endDate,
    }),
    endTime: t.string({
      nullable: true,
      description: 'End time of day (HH:MM, 24-hour) in the time zone, or null when no end was given.',
      resolve: (occurrence) => occurrenceTimes(occurrence).endTime,
    }),
    timezone: t.expose('timezone', {
      type: 'TimeZone',
      description: "IANA time zone of the dates and times: the event's unless overridden.",
    }),
    status: t.expose('status', {
      type: OccurrenceStatus,
      description: `${describeEnumStatuses('occurrence')}.`,
    }),
    capacity: t.exposeInt('capacity', {
      nullable: true,
      description: "Overrides every ticket type's capacity for this occurrence when set; null = no override.",
    }),
    sales: t.field({
      type: SalesCounters,
      description: 'Tickets at this occurrence, over the ticket types of its event: capacity, sold, held and available.',
      resolve: (occurrence, _args, ctx) => salesCounters(ctx, 'occurrence', occurrence.id, occurrence),
    }),
    revenue: t.field(revenueField('occurrence', 'Money taken for tickets to this occurrence, of every ticket type')),
    startsAt: t.expose('startsAt', { type: 'DateTime', description: 'Start as an instant.' }),
    endsAt: t.expose('endsAt', { type: 'DateTime', nullable: true, description: 'End as an instant, or null.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

const EventOccurrenceConnection = pagedConnection(EventOccurrence, 'EventOccurrenceConnection', 'event occurrences');

builder.prismaObjectField(Event, 'occurrences', (t) =>
  t.field({
    // Event's fields skip its rule (schema/types/event.ts); the occurrences are eventOccurrences(eventId:)'s.
    skipTypeScopes: true,
    type: EventOccurrenceConnection,
    nullable: true,
    description:
      'Its occurrences in start order, cancelled ones included, as eventOccurrences(eventId:) lists them; null, with an error, where you may not read events.',
    args: t.arg.connectionArgs(),
    resolve: (event, args, ctx, info) => {
      if (!ctx.access.allows('events', 'read', event.accountId)) throw missingRight(ctx);
      return eventOccurrences(ctx, event.id, args, selectsOnNodes(info, 'sales') ? ['sales'] : []);
    },
  }),
);

const CreateEventOccurrenceInput = inputFrom('CreateEventOccurrenceInput', createOccurrenceInput, {
  description:
    "A new occurrence. Dates and times are wall-clock values in the occurrence's time zone; a time the clocks skip is refused, a repeated one means its first occurrence.",
  fields: {
    startDate: 'Start date, YYYY-MM-DD.',
    startTime: 'Start time of day, HH:MM (24-hour).',
    endDate: 'End date, YYYY-MM-DD; needs endTime. Defaults to startDate when endTime is given.',
    endTime: 'End time of day, HH:MM (24-hour); the end must be after the start.',
    timezone: "IANA time zone of these dates and times; defaults to the event's.",
    status: `${describeEnumStatuses('occurrence', { default: 'scheduled' })}.`,
    capacity: "Overrides every ticket type's capacity for this occurrence; 0 or more.",
  },
});

const UpdateEventOccurrenceInput = inputFrom('UpdateEventOccurrenceInput', updateOccurrenceInput, {
  description:
    "Changes to an occurrence; a field left out stays as it is. Dates and times are wall-clock values in the occurrence's time zone (the new one, when timezone changes).",
  fields: {
    startDate: 'New start date, YYYY-MM-DD.',
    startTime: 'New start time of day, HH:MM (24-hour).',
    endDate: 'New end date, YYYY-MM-DD, with endTime; null: the end is on the start date. Leave out both to keep the length of the show.',
    endTime: 'New end time of day, HH:MM (24-hour); null: no end.',
    timezone: 'IANA time zone the dates and times are read in, and the occurrence is shown in.',
    status: `${describeEnumStatuses('occurrence')}: CANCELLED stops its sales and its passes' entry; its orders stay, to refund.`,
    capacity: "Overrides every ticket type's capacity, from the next hold on (tickets held or sold stay); null: the ticket types' own.",
  },
});

builder.queryFields((t) => ({
  eventOccurrence: t.field({
    type: EventOccurrence,
    nullable: true,
    description: 'One occurrence of an event you may read.',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Occurrence id (eoc_).' }) },
    resolve: (_root, { id }, ctx) => getOccurrence(ctx, String(id)),
  }),
  eventOccurrences: t.field({
    type: EventOccurrenceConnection,
    nullable: true,
    description: 'Occurrences of an event in start order, cancelled ones included (GET /v1/events/{id}/occurrences).',
    authScopes: READ,
    args: {
      eventId: t.arg.id({ required: true, description: 'Event id (evt_).' }),
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
      updatedSince: updatedSinceArg(t, 'occurrences added or changed (moved, cancelled)'),
      status: t.arg({ type: OccurrenceStatus, description: 'Only occurrences of this status.' }),
      startsFrom: t.arg({ type: 'DateTime', description: 'Only occurrences starting at or after this instant (upcoming ones: now).' }),
      startsTo: t.arg({ type: 'DateTime', description: 'Only occurrences starting at or before this instant.' }),
    },
    resolve: (_root, { eventId, ...args }, ctx) => listOccurrences(ctx, eventId, args),
  }),
}));

builder.mutationFields((t) => ({
  createEventOccurrence: t.field({
    ...payload('CreateEventOccurrence', 'eventOccurrence', EventOccurrence, 'The occurrence added.'),
    description: 'Adds an occurrence to an event (POST /v1/events/{id}/occurrences).',
    authScopes: WRITE,
    args: {
      eventId: t.arg.id({ required: true, description: 'Event id (evt_).' }),
      input: t.arg({ type: CreateEventOccurrenceInput, required: true, description: 'The occurrence.' }),
    },
    resolve: (_root, { eventId, input }, ctx) => answer(ctx, () => createOccurrence(ctx, eventId, input)),
  }),
  updateEventOccurrence: t.field({
    ...payload('UpdateEventOccurrence', 'eventOccurrence', EventOccurrence, 'The occurrence as changed.'),
    description: 'Moves, re-sizes or cancels an occurrence (GraphQL only).',
    authScopes: WRITE,
    args: {
      id: t.arg.id({ required: true, description: 'Occurrence id (eoc_).' }),
      input: t.arg({ type: UpdateEventOccurrenceInput, required: true, description: 'The changes.' }),
    },
    resolve: (_root, { id, input }, ctx) => answer(ctx, () => updateOccurrence(ctx, id, input)),
  }),
}));
