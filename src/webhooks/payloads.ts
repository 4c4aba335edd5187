import { CURRENT_VERSION, transformDown as transformResource, type Json, type VersionedResource } from '../versions.ts';
import type { WebhookEventType } from './event-types.ts';
import { eventPayload } from '../resources/event.ts';

export type { EventView } from '../resources/event.ts';

/**
 * Webhook payloads: built field by field from a fixed view at the current version (every
 * nullable field present as null, nothing else leaks), then transformed down one dated version at
 * a time to the version an endpoint pinned, by the changes src/versions.ts declares.
 */

export type Payload = { [key: string]: Json };

const iso = (value: Date | string): string => (value instanceof Date ? value : new Date(value)).toISOString();

export interface OrderView {
  id: string;
  orderNumber: string;
  status: string;
  currency: string;
  totalAmount: number;
  subtotalAmount: number;
  customerId: string;
  accountId: string;
  createdAt: Date | string;
  lineItemCount: number;
}

export interface CustomerView {
  id: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
  accountId: string;
  createdAt: Date | string;
}

export interface TicketsIssuedView {
  orderId: string;
  accountId: string;
  passes: Array<{ id: string; ticketTypeId: string; occurrenceId: string; status: string }>;
}

export interface TicketRedeemedView {
  redemptionId: string;
  passId: string;
  entitlementId: string;
  accountId: string;
}

export const views = {
  order: (o: OrderView): Payload => ({
    id: o.id,
    orderNumber: o.orderNumber,
    status: o.status,
    currency: o.currency,
    totalAmount: o.totalAmount,
    subtotalAmount: o.subtotalAmount,
    customerId: o.customerId,
    accountId: o.accountId,
    createdAt: iso(o.createdAt),
    lineItemCount: o.lineItemCount,
  }),
  customer: (c: CustomerView): Payload => ({
    id: c.id,
    email: c.email,
    firstName: c.firstName ?? null,
    lastName: c.lastName ?? null,
    accountId: c.accountId,
    createdAt: iso(c.createdAt),
  }),
  event: eventPayload,
  ticketsIssued: (t: TicketsIssuedView): Payload => ({
    orderId: t.orderId,
    accountId: t.accountId,
    passCount: t.passes.length,
    passes: t.passes.map((p) => ({ id: p.id, ticketTypeId: p.ticketTypeId, occurrenceId: p.occurrenceId, status: p.status })),
  }),
  ticketRedeemed: (r: TicketRedeemedView): Payload => ({
    redemptionId: r.redemptionId,
    passId: r.passId,
    entitlementId: r.entitlementId,
    accountId: r.accountId,
  }),
};

/** The resource each event type carries, for the version changes declared in src/versions.ts. */
export const RESOURCE_OF: Record<WebhookEventType, VersionedResource> = {
  'order.created': 'Order',
  'order.confirmed': 'Order',
  'order.cancelled': 'Order',
  'order.refunded': 'Order',
  'customer.created': 'Customer',
  'event.created': 'Event',
  'ticket.issued': 'TicketsIssued',
  'ticket.redeemed': 'Redemption',
};

/**
 * Transforms `data` (built at `from`) down to `to`, one version at a time, by the changes declared
 * in src/versions.ts: the same declarations shape `/v1` and `/live` responses.
 */
export function transformDown(type: WebhookEventType, data: Payload, to: string, from = CURRENT_VERSION): Payload {
  return transformResource(RESOURCE_OF[type], data, to, from);
}

export interface Envelope {
  id: string;
  type: WebhookEventType;
  version: string;
  createdAt: string;
  data: Payload;
}

const VIEW_OF: Record<WebhookEventType, (payload: never) => Payload> = {
  'order.created': views.order,
  'order.confirmed': views.order,
  'order.cancelled': views.order,
  'order.refunded': views.order,
  'customer.created': views.customer,
  'event.created': views.event,
  'ticket.issued': views.ticketsIssued,
  'ticket.redeemed': views.ticketRedeemed,
};

/**
 * A stored payload put back in its view's field order (jsonb keeps keys in its own order). Only
 * payloads stored at the current version pass through the view; older ones are left as stored.
 */
export function inViewOrder(type: WebhookEventType, payload: Payload, version: string): Payload {
  // A stored current-version payload is this view's own output: it holds every field the view reads.
  const view = VIEW_OF[type] as (stored: Payload) => Payload;
  return version === CURRENT_VERSION ? view(payload) : payload;
}

/** The delivery envelope of docs/spec/service-spec.md §6, at the endpoint's pinned version. */
export function envelope(args: {
  deliveryId: string;
  type: WebhookEventType;
  createdAt: Date;
  payload: Payload;
  payloadVersion: string;
  endpointVersion: string;
}): Envelope {
  return {
    id: args.deliveryId,
    type: args.type,
    version: args.endpointVersion,
    createdAt: args.createdAt.toISOString(),
    data: transformDown(args.type, inViewOrder(args.type, args.payload, args.payloadVersion), args.endpointVersion, args.payloadVersion),
  };
}
