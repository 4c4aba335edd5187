import { z } from 'zod';
import type { RestRoute } from '../route.ts';
import { versioned } from '../versioned.ts';
import { deleted, deletion, idParam, PAGINATION_FIELDS, pagination } from '../shapes/common.ts';
import { listQuery } from '../../src/pagination.ts';
import { createEventInput, listEventsFilters, updateEventInput } from '../../src/services/events.ts';
import { createOccurrenceInput } from '../../src/services/occurrences.ts';
import { createTicketTypeInput, updateTicketTypeInput } from '../../src/services/ticket-types.ts';
import { EVENT } from '../../src/resources/event.ts';
import { OCCURRENCE } from '../../src/resources/occurrence.ts';
import { TICKET_TYPE } from '../../src/resources/ticket-type.ts';

const EVENT_FIELDS = EVENT.selection();
const OCCURRENCE_FIELDS = OCCURRENCE.selection();
const TICKET_TYPE_FIELDS = TICKET_TYPE.selection();

const event = versioned(EVENT.rest(), 'Event');
const eventOccurrence = OCCURRENCE.rest();
const ticketType = TICKET_TYPE.rest();

export const eventsRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/events',
    summary:
      "List events on the accounts you may read, newest first. Filters: status; accountId; q (case-insensitive, in name and description); from/to: events with a scheduled occurrence starting in that range (a date bound is a whole day in the occurrence's own time zone, both ends included; a date-time bound is an exact instant).",
    tag: 'Events',
    organisation: true,
    operation: `query Events($page: Int, $limit: Int, $status: EventStatus, $accountId: ID, $q: String, $from: String, $to: String) {
      events(page: $page, limit: $limit, status: $status, accountId: $accountId, q: $q, from: $from, to: $to) {
        nodes { ${EVENT_FIELDS} } ${PAGINATION_FIELDS}
      }
    }`,
    query: listQuery(listEventsFilters),
    bind: { '...': 'query' },
    result: (data) => ({ events: data.events.nodes, pagination: data.events.pagination }),
    response: z.object({ events: z.array(event), pagination }),
  },
  {
    method: 'POST',
    path: '/events',
    summary: "Create an event. timezone defaults to the venue's; status defaults to draft.",
    tag: 'Events',
    organisation: true,
    operation: `mutation CreateEvent($input: CreateEventInput!) { createEvent(input: $input) { event { ${EVENT_FIELDS} } } }`,
    body: versioned(createEventInput, 'Event'),
    bind: { input: 'body' },
    result: (data) => ({ event: data.createEvent.event }),
    status: 201,
    response: z.object({ event }),
  },
  {
    method: 'GET',
    path: '/events/{id}',
    summary: 'Get an event. Deleted events answer 404.',
    tag: 'Events',
    organisation: true,
    operation: `query Event($id: ID!) { event(id: $id) { ${EVENT_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ event: data.event }),
    response: z.object({ event }),
  },
  {
    method: 'PATCH',
    path: '/events/{id}',
    summary: 'Change an event; omitted fields stay, null clears a nullable one. The account cannot change.',
    tag: 'Events',
    organisation: true,
    operation: `mutation UpdateEvent($id: ID!, $input: UpdateEventInput!) { updateEvent(id: $id, input: $input) { event { ${EVENT_FIELDS} } } }`,
    params: idParam,
    body: versioned(updateEventInput, 'Event'),
    bind: { id: 'params.id', input: 'body' },
    result: (data) => ({ event: data.updateEvent.event }),
    response: z.object({ event }),
  },
  {
    method: 'DELETE',
    path: '/events/{id}',
    summary: 'Delete an event: it leaves every list and answers 404 from then on.',
    tag: 'Events',
    organisation: true,
    operation: `mutation DeleteEvent($id: ID!) { deleteEvent(id: $id) { deletedId } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => deletion(data.deleteEvent),
    response: deleted,
  },
  {
    method: 'GET',
    path: '/events/{id}/occurrences',
    summary: 'List the occurrences of an event in start order, cancelled ones included.',
    tag: 'Event occurrences',
    organisation: true,
    operation: `query EventOccurrences($eventId: ID!, $page: Int, $limit: Int) {
      eventOccurrences(eventId: $eventId, page: $page, limit: $limit) { nodes { ${OCCURRENCE_FIELDS} } ${PAGINATION_FIELDS} }
    }`,
    params: idParam,
    query: listQuery(),
    bind: { eventId: 'params.id', '...': 'query' },
    result: (data) => ({ eventOccurrences: data.eventOccurrences.nodes, pagination: data.eventOccurrences.pagination }),
    response: z.object({ eventOccurrences: z.array(eventOccurrence), pagination }),
  },
  {
    method: 'POST',
    path: '/events/{id}/occurrences',
    summary:
      "Add an occurrence. startDate/startTime (and endDate/endTime) are wall-clock values in the event's time zone unless timezone overrides it; a time skipped by a clock change is refused, a repeated one means its first occurrence.",
    tag: 'Event occurrences',
    organisation: true,
    operation: `mutation CreateEventOccurrence($eventId: ID!, $input: CreateEventOccurrenceInput!) {
      createEventOccurrence(eventId: $eventId, input: $input) { eventOccurrence { ${OCCURRENCE_FIELDS} } }
    }`,
    params: idParam,
    body: createOccurrenceInput,
    bind: { eventId: 'params.id', input: 'body' },
    result: (data) => ({ eventOccurrence: data.createEventOccurrence.eventOccurrence }),
    status: 201,
    response: z.object({ eventOccurrence }),
  },
  {
    method: 'GET',
    path: '/events/{id}/ticket-types',
    summary: 'List the ticket types of an event, oldest first.',
    tag: 'Ticket types',
    organisation: true,
    operation: `query TicketTypes($eventId: ID!, $page: Int, $limit: Int) {
      ticketTypes(eventId: $eventId, page: $page, limit: $limit) { nodes { ${TICKET_TYPE_FIELDS} } ${PAGINATION_FIELDS} }
    }`,
    params: idParam,
    query: listQuery(),
    bind: { eventId: 'params.id', '...': 'query' },
    result: (data) => ({ ticketTypes: data.ticketTypes.nodes, pagination: data.ticketTypes.pagination }),
    response: z.object({ ticketTypes: z.array(ticketType), pagination }),
  },
  {
    method: 'POST',
    path: '/events/{id}/ticket-types',
    summary: 'Add a ticket type to an event. Prices are integer minor units with an ISO 4217 currency.',
    tag: 'Ticket types',
    organisation: true,
    operation: `mutation CreateTicketType($eventId: ID!, $input: CreateTicketTypeInput!) {
      createTicketType(eventId: $eventId, input: $input) { ticketType { ${TICKET_TYPE_FIELDS} } }
    }`,
    params: idParam,
    body: createTicketTypeInput,
    bind: { eventId: 'params.id', input: 'body' },
    result: (data) => ({ ticketType: data.createTicketType.ticketType }),
    status: 201,
    response: z.object({ ticketType }),
  },
  {
    method: 'PATCH',
    path: '/ticket-types/{id}',
    summary: 'Change a ticket type; omitted fields stay, null clears a nullable one.',
    tag: 'Ticket types',
    organisation: true,
    operation: `mutation UpdateTicketType($id: ID!, $input: UpdateTicketTypeInput!) {
      updateTicketType(id: $id, input: $input) { ticketType { ${TICKET_TYPE_FIELDS} } }
    }`,
    params: idParam,
    body: updateTicketTypeInput,
    bind: { id: 'params.id', input: 'body' },
    result: (data) => ({ ticketType: data.updateTicketType.ticketType }),
    response: z.object({ ticketType }),
  },
];
