import { ID_PREFIXES, type IdKind } from '../ids.ts';
import type { VersionedResource } from '../versions.ts';
import { views, type Payload } from './views.ts';

/**
 * Every webhook event type (docs/spec/service-spec.md §6), one entry each: when it is sent, the
 * resource it carries (the API versions that change it are the declarations of src/versions.ts
 * for that resource), its payload view (the service that announces it builds the payload with the
 * view; stored payloads are put back in the view's order), and the sample a test delivery sends.
 * The event-type list (GraphQL `webhookEventTypes`, GET /v1/webhook-event-types), the enum of
 * endpoint subscriptions and delivery filters, payload transforms and test deliveries read it.
 */
interface WebhookType<View> {
  description: string;
  resource: VersionedResource;
  view: (value: View) => Payload;
  /** A realistic payload built with `view`: only accountId is real (see sampleId). */
  sample: (accountId: string, now: Date) => Payload;
  /**
   * The object the event is about, whose events are numbered (`sequence`) and, for endpoints that
   * ask for it, delivered in order: an order for its order.* and ticket.* events (a redemption, its
   * pass's order), a customer, an event.
   */
  objectOf: (payload: Payload) => string | undefined;
}

/** An id field of the payload (every view has them as strings). */
const field = (name: string) => (payload: Payload) => (typeof payload[name] === 'string' ? payload[name] : undefined);

const type = <View>(entry: WebhookType<View>) => entry;

/**
 * Ids of sample data: the real prefix, then `sample` and zeros (`ord_sample0000000000000000`), the
 * shape of a real id and plainly not one.
 */
export function sampleId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${'sample'.padEnd(22, '0')}`;
}

const sampleOrder = (status: string) => (accountId: string, now: Date) =>
  views.order({
    id: sampleId('order'),
    orderNumber: 'SAMPLE-0001',
    status,
    currency: 'GBP',
    totalAmount: 5250,
    subtotalAmount: 5000,
    customerId: sampleId('customer'),
    accountId,
    createdAt: now,
    lineItemCount: 2,
  });

export const WEBHOOK_TYPES = {
  'order.created': type({
    description: 'A new order was started.',
    resource: 'Order',
    objectOf: field('id'),
    view: views.order,
    sample: sampleOrder('pending'),
  }),
  'order.confirmed': type({
    description: 'An order was paid and confirmed.',
    resource: 'Order',
    objectOf: field('id'),
    view: views.order,
    sample: sampleOrder('confirmed'),
  }),
  'order.cancelled': type({
    description: 'An order was cancelled.',
    resource: 'Order',
    objectOf: field('id'),
    view: views.order,
    sample: sampleOrder('cancelled'),
  }),
  'order.refunded': type({
    description: 'An order was refunded.',
    resource: 'Order',
    objectOf: field('id'),
    view: views.order,
    sample: sampleOrder('refunded'),
  }),
  'customer.created': type({
    description: 'A new customer was created.',
    resource: 'Customer',
    objectOf: field('id'),
    view: views.customer,
    sample: (accountId, now) =>
      views.customer({
        id: sampleId('customer'),
        email: 'sample.customer@example.com',
        firstName: 'Sample',
        lastName: 'Customer',
        accountId,
        createdAt: now,
      }),
  }),
  'event.created': type({
    description: 'A new event was created.',
    resource: 'Event',
    objectOf: field('id'),
    view: views.event,
    sample: (accountId, now) =>
      views.event({
        id: sampleId('event'),
        name: 'Sample event',
        status: 'draft',
        accountId,
        venueId: sampleId('venue'),
        timezone: 'Europe/London',
        createdAt: now,
      }),
  }),
  'ticket.issued': type({
    description: 'Passes were issued for an order.',
    resource: 'TicketsIssued',
    objectOf: field('orderId'),
    view: views.ticketsIssued,
    sample: (accountId) =>
      views.ticketsIssued({
        orderId: sampleId('order'),
        accountId,
        passes: [{ id: sampleId('pass'), ticketTypeId: sampleId('ticketType'), occurrenceId: sampleId('occurrence'), status: 'issued' }],
      }),
  }),
  'ticket.redeemed': type({
    description: 'A ticket was scanned and redeemed.',
    resource: 'Redemption',
    objectOf: field('orderId'),
    view: views.ticketRedeemed,
    sample: (accountId) =>
      views.ticketRedeemed({
        redemptionId: sampleId('redemption'),
        passId: sampleId('pass'),
        orderId: sampleId('order'),
        entitlementId: sampleId('entitlement'),
        accountId,
      }),
  }),
};

export type WebhookEventType = keyof typeof WEBHOOK_TYPES;

/** Each type and when it is sent, in the registry's order. */
export const WEBHOOK_EVENT_TYPES = Object.fromEntries(
  Object.entries(WEBHOOK_TYPES).map(([name, entry]) => [name, entry.description]),
) as Record<WebhookEventType, string>;

export function isWebhookEventType(value: string): value is WebhookEventType {
  return Object.hasOwn(WEBHOOK_TYPES, value);
}
