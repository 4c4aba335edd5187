/** The webhook event types of docs/spec/service-spec.md §6. */
export const WEBHOOK_EVENT_TYPES = {
  'order.created': 'A new order was started.',
  'order.confirmed': 'An order was paid and confirmed.',
  'order.cancelled': 'An order was cancelled.',
  'order.refunded': 'An order was refunded.',
  'customer.created': 'A new customer was created.',
  'event.created': 'A new event was created.',
  'ticket.issued': 'Passes were issued for an order.',
  'ticket.redeemed': 'A ticket was scanned and redeemed.',
} as const;

export type WebhookEventType = keyof typeof WEBHOOK_EVENT_TYPES;

export function isWebhookEventType(value: string): value is WebhookEventType {
  return Object.hasOwn(WEBHOOK_EVENT_TYPES, value);
}
