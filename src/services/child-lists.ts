import type {
  Event,
  EventOccurrence,
  Order,
  OrderLineItem,
  Pass,
  Payment,
  TicketType,
  WebhookAttempt,
  WebhookDelivery,
} from '../generated/prisma/client.ts';
import { NEWEST_FIRST, OLDEST_FIRST, type SortKey } from '../pagination.ts';
import { OCCURRENCE_ORDER } from './occurrences.ts';
import { childConnection, childRows, rowColumns, rowOf, type Extra } from './children.ts';
import { knowRelated } from './related.ts';
import { countersColumn, countersFrom, knowCounters, type CountedBy } from './sales-counters.ts';

/**
 * The children the graph shows on a parent, each as the root list that reads the same rows reads
 * them (the same rows, the same order, the same cursors): the field asking checks that root list's
 * right on the parent's account first (schema/types). What the selection may ask beside the rows
 * (their sales counters, the entities a line names) is read by the same statement.
 */

type Columns = Record<string, unknown>;

/** The counters of the row's `by` (`c.id`), read beside it as `sales_`. */
const counted = (by: CountedBy): Extra => ({ columns: `${countersColumn(by, 'c.id')} AS sales_` });

/** The row, with the counters read beside it (`sales_`) kept for its `sales` field. */
function withCounters<T extends object>(by: CountedBy, columns: Columns): T {
  const { sales_, ...row } = columns;
  if (sales_) knowCounters(row, by, countersFrom(sales_ as Parameters<typeof countersFrom>[0]));
  return row as T;
}

/** `Event.occurrences`: every occurrence, cancelled ones included, in start order. */
export const eventOccurrences = childConnection<EventOccurrence>({
  sort: OCCURRENCE_ORDER,
  sortTypes: ['timestamptz', 'text'],
  from: 'event_occurrences c',
  where: 'c."organisationId" = $1 AND c."eventId" = p.parent',
  columns: rowColumns('EventOccurrence', 'c'),
  extras: { sales: counted('occurrence') },
  read: (columns) => withCounters('occurrence', columns),
});

/** `Event.ticketTypes`: its ticket types not deleted, oldest first. */
export const eventTicketTypes = childConnection<TicketType>({
  sort: OLDEST_FIRST,
  sortTypes: ['timestamptz', 'text'],
  from: 'ticket_types c',
  where: 'c."organisationId" = $1 AND c."eventId" = p.parent AND NOT c."isDeleted"',
  columns: rowColumns('TicketType', 'c'),
  extras: { sales: counted('ticketType') },
  read: (columns) => withCounters('ticketType', columns),
});

/**
 * `EventOccurrence.ticketTypes`: the ticket types of its event (not deleted; none once the event is
 * deleted), oldest first. `pair` reads each one's counters at this occurrence (its inventory row),
 * for the edge's `sales`; `sales` the ticket type's own, over every occurrence.
 */
export const occurrenceTicketTypes = childConnection<TicketType>({
  sort: OLDEST_FIRST,
  sortTypes: ['timestamptz', 'text'],
  from: `event_occurrences o
    JOIN events e ON e."organisationId" = $1 AND e.id = o."eventId" AND NOT e."isDeleted"
    JOIN ticket_types c ON c."organisationId" = $1 AND c."eventId" = o."eventId" AND NOT c."isDeleted"`,
  where: 'o."organisationId" = $1 AND o.id = p.parent',
  columns: `${rowColumns('TicketType', 'c')}, o.id AS occurrence_`,
  extras: { sales: counted('ticketType'), pair: { columns: `${countersColumn('pair', 'o.id', 'c.id')} AS pair_` } },
  read: ({ pair_, occurrence_, ...columns }) => {
    const row = withCounters<TicketType>('ticketType', columns);
    if (pair_) knowCounters(row, 'pair', countersFrom(pair_ as Parameters<typeof countersFrom>[0]));
    listedAt.set(row, occurrence_ as string);
    return row;
  },
});

/** The occurrence whose `ticketTypes` listed a ticket type row. */
const listedAt = new WeakMap<TicketType, string>();

/**
 * The id of the pair (src/services/sales-counters.ts) of a ticket type `EventOccurrence.ticketTypes`
 * listed: that occurrence's and its own.
 */
export function pairOf(ticketType: TicketType): string {
  return `${listedAt.get(ticketType)} ${ticketType.id}`;
}

/** The events a parent names in `column`, as `events(<column>:)` lists them: not deleted, newest first. */
function eventsBy(column: 'accountId' | 'venueId') {
  return childConnection<Event>({
    sort: NEWEST_FIRST,
    sortTypes: ['timestamptz', 'text'],
    from: 'events c',
    where: `c."organisationId" = $1 AND c."${column}" = p.parent AND NOT c."isDeleted"`,
    columns: rowColumns('Event', 'c'),
    extras: { sales: counted('event') },
    read: (columns) => {
      const event = withCounters<Event>('event', columns);
      event.tags ??= [];
      return event;
    },
  });
}

/** `Account.events`. */
export const accountEvents = eventsBy('accountId');

/** `Venue.events`. */
export const venueEvents = eventsBy('venueId');

/** `Customer.orders`: as `orders(customerId:)`, newest first, none of a deleted account. */
export const customerOrders = childConnection<Order>({
  sort: NEWEST_FIRST,
  sortTypes: ['timestamptz', 'text'],
  from: 'orders c JOIN accounts a ON a."organisationId" = $1 AND a.id = c."accountId" AND NOT a."isDeleted"',
  where: 'c."organisationId" = $1 AND c."customerId" = p.parent',
  columns: rowColumns('Order', 'c'),
  read: (columns) => columns as unknown as Order,
});

/** `WebhookEndpoint.deliveries`: as `webhookDeliveries(endpointId:)`, newest first, none once the endpoint is deleted. */
export const endpointDeliveries = childConnection<WebhookDelivery>({
  sort: NEWEST_FIRST,
  sortTypes: ['timestamptz', 'text'],
  from: 'webhook_deliveries c JOIN webhook_endpoints w ON w."organisationId" = $1 AND w.id = c."endpointId" AND w."deletedAt" IS NULL',
  where: 'c."organisationId" = $1 AND c."endpointId" = p.parent',
  columns: rowColumns('WebhookDelivery', 'c'),
  read: (columns) => columns as unknown as WebhookDelivery,
});

/** An attempt with the account of its delivery, whose rule it is shown under. */
export type AttemptRow = WebhookAttempt & { accountId: string };

const ATTEMPT_ORDER: SortKey = [
  ['attemptNumber', 'asc'],
  ['id', 'asc'],
];

/** `WebhookDelivery.attempts`: oldest first. */
export const deliveryAttempts = childConnection<AttemptRow>({
  sort: ATTEMPT_ORDER,
  sortTypes: ['int', 'text'],
  from: 'webhook_attempts c JOIN webhook_deliveries d ON d."organisationId" = $1 AND d.id = c."deliveryId"',
  where: 'c."organisationId" = $1 AND c."deliveryId" = p.parent',
  columns: `${rowColumns('WebhookAttempt', 'c')}, d."accountId"`,
  read: (columns) => columns as unknown as AttemptRow,
});

/** `WebhookDelivery.allAttempts`: every attempt, oldest first, as /v1 answers a delivery. */
export const allDeliveryAttempts = childRows<AttemptRow>({
  from: 'webhook_attempts c JOIN webhook_deliveries d ON d."organisationId" = $1 AND d.id = c."deliveryId"',
  parentColumn: 'deliveryId',
  order: 'c."attemptNumber", c.id',
  columns: `${rowColumns('WebhookAttempt', 'c')}, d."accountId"`,
  read: (columns) => columns as unknown as AttemptRow,
});

const LINE = rowOf<OrderLineItem>('OrderLineItem', 'c');
const LINE_EVENT = rowOf<Event>('Event', 'e', 'event.');
const LINE_OCCURRENCE = rowOf<EventOccurrence>('EventOccurrence', 'eo', 'occurrence.');
const LINE_TICKET_TYPE = rowOf<TicketType>('TicketType', 'tt', 'ticketType.');

/**
 * `Order.lineItems`, in checkout order. `event`, `occurrence` and `ticketType` read the entity each
 * line names beside it (null when deleted), for the line's relation fields.
 */
export const orderLines = childRows<OrderLineItem>({
  from: 'order_line_items c',
  parentColumn: 'orderId',
  order: 'c."createdAt", c.id',
  columns: LINE.columns,
  extras: {
    event: {
      columns: LINE_EVENT.columns,
      join: 'LEFT JOIN events e ON e."organisationId" = $1 AND e.id = c."eventId" AND NOT e."isDeleted"',
    },
    occurrence: {
      columns: LINE_OCCURRENCE.columns,
      join: 'LEFT JOIN event_occurrences eo ON eo."organisationId" = $1 AND eo.id = c."occurrenceId"',
    },
    ticketType: {
      columns: LINE_TICKET_TYPE.columns,
      join: 'LEFT JOIN ticket_types tt ON tt."organisationId" = $1 AND tt.id = c."ticketTypeId" AND NOT tt."isDeleted"',
    },
  },
  read: (columns) => {
    const line = LINE.read(columns)!;
    if ('event.id' in columns) {
      const event = LINE_EVENT.read(columns);
      if (event) event.tags ??= [];
      knowRelated(line, 'event', event);
    }
    if ('occurrence.id' in columns) knowRelated(line, 'occurrence', LINE_OCCURRENCE.read(columns));
    if ('ticketType.id' in columns) knowRelated(line, 'ticketType', LINE_TICKET_TYPE.read(columns));
    return line;
  },
});

const knownLines = new WeakMap<object, readonly OrderLineItem[]>();

/**
 * The lines of an order object a use case has just written (a checkout: src/services/sales/
 * checked-out-order.ts), in checkout order: `Order.lineItems` answers them for that object without
 * reading them back, unless it asks for an entity they name.
 */
export function knowOrderLines(order: object, lines: readonly OrderLineItem[]): void {
  knownLines.set(order, lines);
}

/** `orderLines` for the order object, or the lines known for it (knowOrderLines) when no extras are asked. */
export function linesOfOrder(
  ctx: Parameters<typeof orderLines>[0],
  order: { id: string },
  extras: readonly string[],
): Promise<OrderLineItem[]> {
  const known = extras.length === 0 ? knownLines.get(order) : undefined;
  return known ? Promise.resolve([...known]) : orderLines(ctx, order.id, extras);
}

/** `Order.payments`: oldest first. */
export const orderPayments = childRows<Payment>({
  from: 'payments c',
  parentColumn: 'orderId',
  order: 'c."createdAt", c.id',
  columns: rowColumns('Payment', 'c'),
  read: (columns) => columns as unknown as Payment,
});

/** `Order.passes`: in issue order. */
export const orderPasses = childRows<Pass>({
  from: 'passes c',
  parentColumn: 'orderId',
  order: 'c."createdAt", c.id',
  columns: rowColumns('Pass', 'c'),
  read: (columns) => columns as unknown as Pass,
});
