import type { Json } from '../versions.ts';
import { eventPayload } from '../resources/event.ts';

export type { EventView } from '../resources/event.ts';

/**
 * The payload views: what each webhook carries, built field by field at the current version
 * (every nullable field present as null, nothing else leaks). src/webhooks/event-types.ts names
 * the view of each type.
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
  /** The pass's order: the object whose events the redemption is numbered among. */
  orderId: string;
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
    orderId: r.orderId,
    entitlementId: r.entitlementId,
    accountId: r.accountId,
  }),
};
