import { z } from 'zod';
import type { RestRoute } from '../route.ts';

/** Query-string integers arrive as text: whole numbers only, then the range. */
function wholeNumber(min: number, max: number, message: string) {
  return z.string().regex(/^\d{1,9}$/, message).transform(Number).pipe(z.number().int().min(min, message).max(max, message));
}

/** `page` (from 1) and `limit` (1 to 100, default 20), the query of every /v1 list. */
export const pageQuery = {
  page: wholeNumber(1, 1_000_000_000, 'a whole number from 1').optional(),
  limit: wholeNumber(1, 100, 'a whole number from 1 to 100').optional(),
};

export const PAGINATION_FIELDS = 'pagination { page limit total totalPages hasNext hasPrev }';

export const pagination = z.object({
  page: z.number(),
  limit: z.number(),
  total: z.number(),
  totalPages: z.number(),
  hasNext: z.boolean(),
  hasPrev: z.boolean(),
});

export const idParam = z.object({ id: z.string().min(1).max(100) });

const EVENT_FIELDS = `id organisationId accountId name description status venueId timezone onSaleDate offSaleDate
  occurrenceCount ticketCount productCount tags isDeleted createdAt updatedAt createdBy`;
const OCCURRENCE_FIELDS = 'id organisationId accountId eventId startDate startTime endDate endTime timezone status capacity';
const TICKET_TYPE_FIELDS = `id organisationId accountId eventId name description priceAmount currency capacity maxPerOrder
  salesStartAt salesEndAt createdAt updatedAt`;

const EVENT_STATUSES = ['draft', 'published', 'on_sale', 'sold_out', 'completed', 'cancelled'] as const;

const event = z.object({
  id: z.string(),
  organisationId: z.string(),
  accountId: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  status: z.enum(EVENT_STATUSES),
  venueId: z.string().nullable(),
  timezone: z.string(),
  onSaleDate: z.string().nullable(),
  offSaleDate: z.string().nullable(),
  occurrenceCount: z.number(),
  ticketCount: z.number(),
  productCount: z.number(),
  tags: z.array(z.string()),
  isDeleted: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
  createdBy: z.string().nullable(),
});

const eventOccurrence = z.object({
  id: z.string(),
  organisationId: z.string(),
  accountId: z.string(),
  eventId: z.string(),
  startDate: z.string(),
  startTime: z.string(),
  endDate: z.string().nullable(),
  endTime: z.string().nullable(),
  timezone: z.string(),
  status: z.enum(['scheduled', 'cancelled']),
  capacity: z.number().nullable(),
});

const ticketType = z.object({
  id: z.string(),
  organisationId: z.string(),
  accountId: z.string(),
  eventId: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  priceAmount: z.number(),
  currency: z.string(),
  capacity: z.number().nullable(),
  maxPerOrder: z.number().nullable(),
  salesStartAt: z.string().nullable(),
  salesEndAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const DATE_OR_INSTANT = 'a date (YYYY-MM-DD) or an ISO 8601 date and time with Z or an offset';

const eventBody = {
  name: z.string(),
  description: z.string().nullish(),
  status: z.enum(EVENT_STATUSES, { error: `one of ${EVENT_STATUSES.join(', ')}` }),
  venueId: z.string().nullish(),
  timezone: z.string(),
  onSaleDate: z.string().nullish(),
  offSaleDate: z.string().nullish(),
  tags: z.array(z.string()),
};

const ticketTypeBody = {
  name: z.string(),
  description: z.string().nullish(),
  priceAmount: z.int32(),
  currency: z.string(),
  capacity: z.int32().nullish(),
  maxPerOrder: z.int32().nullish(),
  salesStartAt: z.string().nullish(),
  salesEndAt: z.string().nullish(),
};

export const eventsRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/events',
    summary:
      "List events on the accounts you may read, newest first. Filters: status; accountId; q (case-insensitive, in name and description); from/to: events with a scheduled occurrence starting in that range (a date bound is a whole day in the occurrence's own time zone, both ends included; a date-time bound is an exact instant).",
    tag: 'Events',
    organisation: true,
    operation: `query Events($page: Int, $limit: Int, $status: String, $accountId: String, $q: String, $from: String, $to: String) {
      events(page: $page, limit: $limit, status: $status, accountId: $accountId, q: $q, from: $from, to: $to) {
        nodes { ${EVENT_FIELDS} } ${PAGINATION_FIELDS}
      }
    }`,
    query: z.object({
      ...pageQuery,
      status: z.enum(EVENT_STATUSES, { error: `one of ${EVENT_STATUSES.join(', ')}` }).optional(),
      accountId: z.string().min(1).max(100).optional(),
      q: z.string().max(200).optional(),
      from: z.union([z.iso.date(), z.iso.datetime({ offset: true })], { error: DATE_OR_INSTANT }).optional(),
      to: z.union([z.iso.date(), z.iso.datetime({ offset: true })], { error: DATE_OR_INSTANT }).optional(),
    }),
    variables: ({ query }) => query,
    result: (data) => ({ events: data.events.nodes, pagination: data.events.pagination }),
    response: z.object({ events: z.array(event), pagination }),
  },
  {
    method: 'POST',
    path: '/events',
    summary: "Create an event. timezone defaults to the venue's; status defaults to draft.",
    tag: 'Events',
    organisation: true,
    operation: `mutation CreateEvent($input: CreateEventInput!) { createEvent(input: $input) { ${EVENT_FIELDS} } }`,
    body: z.strictObject({
      accountId: z.string(),
      ...eventBody,
      status: eventBody.status.optional(),
      timezone: eventBody.timezone.nullish(),
      tags: eventBody.tags.optional(),
    }),
    variables: ({ body }) => ({ input: body }),
    result: (data) => ({ event: data.createEvent }),
    status: 201,
    response: z.object({ event }),
  },
  {
    method: 'GET',
    path: '/events/{id}',
    summary: 'Get an event. Deleted events answer 404.',
    tag: 'Events',
    organisation: true,
    operation: `query Event($id: String!) { event(id: $id) { ${EVENT_FIELDS} } }`,
    params: idParam,
    variables: ({ params }) => params,
    result: (data) => ({ event: data.event }),
    response: z.object({ event }),
  },
  {
    method: 'PATCH',
    path: '/events/{id}',
    summary: 'Change an event; omitted fields stay, null clears a nullable one. The account cannot change.',
    tag: 'Events',
    organisation: true,
    operation: `mutation UpdateEvent($id: String!, $input: UpdateEventInput!) { updateEvent(id: $id, input: $input) { ${EVENT_FIELDS} } }`,
    params: idParam,
    body: z.strictObject(eventBody).partial(),
    variables: ({ params, body }) => ({ id: params.id, input: body }),
    result: (data) => ({ event: data.updateEvent }),
    response: z.object({ event }),
  },
  {
    method: 'DELETE',
    path: '/events/{id}',
    summary: 'Delete an event: it leaves every list and answers 404 from then on.',
    tag: 'Events',
    organisation: true,
    operation: `mutation DeleteEvent($id: String!) { deleteEvent(id: $id) { success id } }`,
    params: idParam,
    variables: ({ params }) => params,
    result: (data) => data.deleteEvent,
    response: z.object({ success: z.boolean(), id: z.string() }),
  },
  {
    method: 'GET',
    path: '/events/{id}/occurrences',
    summary: 'List the occurrences of an event in start order, cancelled ones included.',
    tag: 'Event occurrences',
    organisation: true,
    operation: `query EventOccurrences($eventId: String!, $page: Int, $limit: Int) {
      eventOccurrences(eventId: $eventId, page: $page, limit: $limit) { nodes { ${OCCURRENCE_FIELDS} } ${PAGINATION_FIELDS} }
    }`,
    params: idParam,
    query: z.object(pageQuery),
    variables: ({ params, query }) => ({ eventId: params.id, ...query }),
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
    operation: `mutation CreateEventOccurrence($eventId: String!, $input: CreateEventOccurrenceInput!) {
      createEventOccurrence(eventId: $eventId, input: $input) { ${OCCURRENCE_FIELDS} }
    }`,
    params: idParam,
    body: z.strictObject({
      startDate: z.string(),
      startTime: z.string(),
      endDate: z.string().nullish(),
      endTime: z.string().nullish(),
      timezone: z.string().nullish(),
      status: z.enum(['scheduled', 'cancelled'], { error: 'scheduled or cancelled' }).optional(),
      capacity: z.int32().nullish(),
    }),
    variables: ({ params, body }) => ({ eventId: params.id, input: body }),
    result: (data) => ({ eventOccurrence: data.createEventOccurrence }),
    status: 201,
    response: z.object({ eventOccurrence }),
  },
  {
    method: 'GET',
    path: '/events/{id}/ticket-types',
    summary: 'List the ticket types of an event, oldest first.',
    tag: 'Ticket types',
    organisation: true,
    operation: `query TicketTypes($eventId: String!, $page: Int, $limit: Int) {
      ticketTypes(eventId: $eventId, page: $page, limit: $limit) { nodes { ${TICKET_TYPE_FIELDS} } ${PAGINATION_FIELDS} }
    }`,
    params: idParam,
    query: z.object(pageQuery),
    variables: ({ params, query }) => ({ eventId: params.id, ...query }),
    result: (data) => ({ ticketTypes: data.ticketTypes.nodes, pagination: data.ticketTypes.pagination }),
    response: z.object({ ticketTypes: z.array(ticketType), pagination }),
  },
  {
    method: 'POST',
    path: '/events/{id}/ticket-types',
    summary: 'Add a ticket type to an event. Prices are integer minor units with an ISO 4217 currency.',
    tag: 'Ticket types',
    organisation: true,
    operation: `mutation CreateTicketType($eventId: String!, $input: CreateTicketTypeInput!) {
      createTicketType(eventId: $eventId, input: $input) { ${TICKET_TYPE_FIELDS} }
    }`,
    params: idParam,
    body: z.strictObject(ticketTypeBody),
    variables: ({ params, body }) => ({ eventId: params.id, input: body }),
    result: (data) => ({ ticketType: data.createTicketType }),
    status: 201,
    response: z.object({ ticketType }),
  },
  {
    method: 'PATCH',
    path: '/ticket-types/{id}',
    summary: 'Change a ticket type; omitted fields stay, null clears a nullable one.',
    tag: 'Ticket types',
    organisation: true,
    operation: `mutation UpdateTicketType($id: String!, $input: UpdateTicketTypeInput!) {
      updateTicketType(id: $id, input: $input) { ${TICKET_TYPE_FIELDS} }
    }`,
    params: idParam,
    body: z.strictObject(ticketTypeBody).partial(),
    variables: ({ params, body }) => ({ id: params.id, input: body }),
    result: (data) => ({ ticketType: data.updateTicketType }),
    response: z.object({ ticketType }),
  },
];
