import {
  createTicketType,
  createTicketTypeInput,
  deleteTicketType,
  getTicketType,
  listTicketTypes,
  updateTicketType,
  updateTicketTypeInput,
} from '../../src/services/ticket-types.ts';
import { builder } from '../builder.ts';
import { accountRelation } from './account.ts';
import { organisationRelation } from './organisation.ts';
import { EventOccurrence } from './occurrence.ts';
import { missingRight } from '../../src/auth/refusal.ts';
import { eventTicketTypes, occurrenceTicketTypes, pairOf } from '../../src/services/child-lists.ts';
import type { TicketType as TicketTypeRow } from '../../src/generated/prisma/client.ts';
import { paginationOf, type Page } from '../../src/pagination.ts';
import { selects, selectsOnNodes } from '../selection.ts';
import { Node } from '../node.ts';
import { inputFrom } from '../input.ts';
import { Event, relatedEvent } from './event.ts';
import { salesCounters } from '../../src/services/sales-counters.ts';
import { SalesCounters } from './sales-counters.ts';
import { revenueField } from './money.ts';
import { pageArgsFor, pagedConnection, Pagination, updatedSinceArg } from '../pagination.ts';
import { answer, deleted, deletePayload, payload } from '../payload.ts';

const READ = { $all: { organisation: true, permission: 'events.read' } } as const;
const WRITE = { $all: { organisation: true, permission: 'events.write' } } as const;

export const TicketType = builder.prismaObject('TicketType', {
  interfaces: [Node],
  description: 'A kind of admission sold for an event (tkt_), with its price and stock per occurrence.',
  authScopes: (ticketType, ctx) =>
    ctx.access.allows('events', 'read', ticketType.accountId) || ctx.access.allows('events', 'write', ticketType.accountId),
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
      resolve: (ticketType, _args, ctx) => relatedEvent(ctx, ticketType.eventId),
    }),
    name: t.exposeString('name', { description: 'Name, 1 to 255 characters.' }),
    description: t.exposeString('description', { nullable: true, description: 'Description (at most 5000 characters), or null.' }),
    priceAmount: t.exposeInt('priceAmount', { description: 'Price in minor units of currency (cents, pence), 0 or more.' }),
    currency: t.exposeString('currency', { description: 'ISO 4217 currency code.' }),
    capacity: t.exposeInt('capacity', { nullable: true, description: 'Tickets available per occurrence; null = unlimited.' }),
    maxPerOrder: t.exposeInt('maxPerOrder', { nullable: true, description: 'Most tickets of this type in one order; null = no limit.' }),
    sales: t.field({
      type: SalesCounters,
      description: 'Tickets of this type over the scheduled occurrences of its event: capacity, sold, held and available.',
      resolve: (ticketType, _args, ctx) => salesCounters(ctx, 'ticketType', ticketType.id, ticketType),
    }),
    revenue: t.field(revenueField('ticketType', 'Money taken for tickets of this type, at every occurrence')),
    salesStartAt: t.expose('salesStartAt', { type: 'DateTime', nullable: true, description: 'When sales of this type open, or null.' }),
    salesEndAt: t.expose('salesEndAt', { type: 'DateTime', nullable: true, description: 'When sales of this type close, or null.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

const TicketTypeConnection = pagedConnection(TicketType, 'TicketTypeConnection', 'ticket types');

builder.prismaObjectField(Event, 'ticketTypes', (t) =>
  t.field({
    // Event's fields skip its rule (schema/types/event.ts); the ticket types are ticketTypes(eventId:)'s.
    skipTypeScopes: true,
    type: TicketTypeConnection,
    nullable: true,
    description:
      'Its ticket types, oldest first, deleted ones left out, as ticketTypes(eventId:) lists them; null, with an error, where you may not read events.',
    args: t.arg.connectionArgs(),
    resolve: (event, args, ctx, info) => {
      if (!ctx.access.allows('events', 'read', event.accountId)) throw missingRight(ctx);
      return eventTicketTypes(ctx, event.id, args, selectsOnNodes(info, 'sales') ? ['sales'] : []);
    },
  }),
);

/**
 * The ticket types of an occurrence: each edge carries the tickets of that type at that occurrence
 * (one inventory row), beside the node's own `sales` over every occurrence of the event.
 */
const OccurrenceTicketTypeConnection = builder.connectionObject(
  {
    type: TicketType,
    name: 'EventOccurrenceTicketTypeConnection',
    description: 'A page of the ticket types of an occurrence, each with its tickets at that occurrence.',
    fields: (t) => ({
      pagination: t.field({
        type: Pagination,
        description: 'Page position and totals.',
        resolve: (connection) => paginationOf(connection as unknown as Page<TicketTypeRow>),
      }),
      totalCount: t.int({
        description: 'All the ticket types of the occurrence, on every page: counted with the page, at no further cost.',
        resolve: (connection) => (connection as unknown as Page<TicketTypeRow>).total,
      }),
      nodes: t.field({
        type: [TicketType],
        description: "The ticket types of this page (the edges' nodes).",
        resolve: (connection) => (connection as unknown as Page<TicketTypeRow>).nodes,
      }),
    }),
  },
  {
    name: 'EventOccurrenceTicketTypeEdge',
    description: 'One ticket type of the occurrence, with its tickets there.',
    fields: (t) => ({
      sales: t.field({
        type: SalesCounters,
        description:
          "Tickets of this type at this occurrence (its inventory row): capacity, sold, held and available; all 0 once the occurrence is cancelled. The occurrence's `sales` are the sum of its edges'.",
        resolve: (edge, _args, ctx) => salesCounters(ctx, 'pair', pairOf(edge.node), edge.node),
      }),
    }),
  },
);

builder.prismaObjectField(EventOccurrence, 'ticketTypes', (t) =>
  t.field({
    type: OccurrenceTicketTypeConnection,
    nullable: true,
    description:
      'The ticket types of its event, oldest first, deleted ones left out, as ticketTypes(eventId:) lists them, each edge with its tickets at this occurrence; null, with an error, where you may not read events.',
    args: t.arg.connectionArgs(),
    resolve: (occurrence, args, ctx, info) => {
      if (!ctx.access.allows('events', 'read', occurrence.accountId)) throw missingRight(ctx);
      const extras = [...(selectsOnNodes(info, 'sales') ? ['sales'] : []), ...(selects(info, ['edges', 'sales']) ? ['pair'] : [])];
      return occurrenceTicketTypes(ctx, occurrence.id, args, extras);
    },
  }),
);

const CreateTicketTypeInput = inputFrom('CreateTicketTypeInput', createTicketTypeInput, {
  description: 'A new ticket type.',
  fields: {
    name: 'Name, 1 to 255 characters.',
    description: 'At most 5000 characters.',
    priceAmount: 'Price in minor units, 0 or more.',
    currency: 'ISO 4217 code, three upper-case letters (e.g. EUR).',
    capacity: 'Tickets available per occurrence, 0 or more; omitted or null = unlimited.',
    maxPerOrder: 'Most tickets of this type in one order, 1 or more; omitted or null = no limit.',
    salesStartAt: 'ISO 8601 date and time with Z or an offset; before salesEndAt.',
    salesEndAt: 'ISO 8601 date and time with Z or an offset; after salesStartAt.',
  },
});

const UpdateTicketTypeInput = inputFrom('UpdateTicketTypeInput', updateTicketTypeInput, {
  description: 'Changes to a ticket type; omitted fields stay, null clears a nullable one.',
  fields: {
    name: 'Name, 1 to 255 characters.',
    description: 'At most 5000 characters; null clears it.',
    priceAmount: 'Price in minor units, 0 or more.',
    currency: 'ISO 4217 code, three upper-case letters.',
    capacity: 'Tickets available per occurrence, 0 or more; null = unlimited.',
    maxPerOrder: 'Most tickets of this type in one order, 1 or more; null = no limit.',
    salesStartAt: 'ISO 8601 date and time with Z or an offset; null clears it.',
    salesEndAt: 'ISO 8601 date and time with Z or an offset; null clears it.',
  },
});

builder.queryFields((t) => ({
  ticketTypes: t.field({
    type: TicketTypeConnection,
    nullable: true,
    description: 'Ticket types of an event, oldest first (GET /v1/events/{id}/ticket-types). Deleted ones are left out.',
    authScopes: READ,
    args: {
      eventId: t.arg.id({ required: true, description: 'Event id (evt_).' }),
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
      updatedSince: updatedSinceArg(
        t,
        'ticket types added or changed',
        'deleted ones leave the list; tickets sold are not a change of the type',
      ),
    },
    resolve: (_root, { eventId, ...args }, ctx) => listTicketTypes(ctx, eventId, args),
  }),
  ticketType: t.field({
    type: TicketType,
    nullable: true,
    description: 'One ticket type (GraphQL only).',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Ticket type id (tkt_).' }) },
    resolve: (_root, { id }, ctx) => getTicketType(ctx, id),
  }),
}));

const DeleteTicketTypePayload = deletePayload('DeleteTicketType', 'ticket type');

builder.objectField(DeleteTicketTypePayload.type, 'event', (t) =>
  t.field({
    type: Event,
    nullable: true,
    description:
      "The deleted ticket type's event as it is now (its ticketCount without it), for a cache to update; null when userErrors says why not.",
    resolve: async ({ result }, _args, ctx) => {
      if (!result) return null;
      const row = await ctx.db.ticketType.findUnique({ where: { id: result }, select: { eventId: true } });
      return row ? relatedEvent(ctx, row.eventId) : null;
    },
  }),
);

builder.mutationFields((t) => ({
  createTicketType: t.field({
    ...payload('CreateTicketType', 'ticketType', TicketType, 'The ticket type added.'),
    description: 'Adds a ticket type to an event (POST /v1/events/{id}/ticket-types).',
    authScopes: WRITE,
    args: {
      eventId: t.arg.id({ required: true, description: 'Event id (evt_).' }),
      input: t.arg({ type: CreateTicketTypeInput, required: true, description: 'The ticket type.' }),
    },
    resolve: (_root, { eventId, input }, ctx) => answer(ctx, () => createTicketType(ctx, eventId, input)),
  }),
  updateTicketType: t.field({
    ...payload('UpdateTicketType', 'ticketType', TicketType, 'The ticket type as changed.'),
    description: 'Changes a ticket type (PATCH /v1/ticket-types/{id}).',
    authScopes: WRITE,
    args: {
      id: t.arg.id({ required: true, description: 'Ticket type id (tkt_).' }),
      input: t.arg({ type: UpdateTicketTypeInput, required: true, description: 'The changes.' }),
    },
    resolve: (_root, { id, input }, ctx) => answer(ctx, () => updateTicketType(ctx, id, input)),
  }),
  deleteTicketType: t.field({
    ...DeleteTicketTypePayload,
    description: "Deletes a ticket type (GraphQL only): it leaves the list and the event's ticketCount.",
    authScopes: WRITE,
    args: { id: t.arg.id({ required: true, description: 'Ticket type id (tkt_).' }) },
    resolve: (_root, { id }, ctx) => deleted(ctx, () => deleteTicketType(ctx, id)),
  }),
}));
