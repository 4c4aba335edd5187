import { publicUrl } from '../../config.ts';
import type { RequestContext } from '../../context.ts';
import type { Database } from '../../db/client.ts';
import type { Order } from '../../generated/prisma/client.ts';
import { views } from '../../webhooks/payloads.ts';
import { authorised } from '../access.ts';
import type { Tx } from '../inventory.ts';

/**
 * An order as stored and as the use cases that move it load it: its columns, its line items, its
 * webhook view, the page that pays it. The order lifecycle after checkout (check-out-cart.ts
 * creates pending orders):
 *
 *   pending --pay (hosted checkout) / confirm (secret key)--> confirmed --refund--> refunded
 *   pending --cancel (management) / hold expired--> cancelled
 *   confirmed --cancel (management)--> cancelled
 *
 * Every move is one transaction that changes the order only if it is still in the state the move
 * starts from (a conditional UPDATE), moves the inventory counters, and records its webhook; so two
 * concurrent moves of one order cannot both happen. Confirmation issues one pass (pas_) per ticket,
 * each with one entitlement (ent_) to its occurrence; cancelling or refunding a confirmed order
 * voids the passes not yet redeemed, so they can no longer be redeemed.
 */

/** Rights on orders: `orders.read`; `orders.cancel`; `orders.refund`, on the order's account. */
export const ORDERS_RESOURCE = 'orders';

/** An order's columns, as Prisma's Order has them. */
export const ORDER_COLUMNS = `o.id, o."organisationId", o."accountId", o."channelId", o."customerId", o."cartId", o."orderNumber",
  o.status::text AS status, o.currency, o."subtotalAmount", o."feeAmount", o."totalAmount", o."holdExpiresAt", o."clientKey",
  o."confirmedAt", o."cancelledAt", o."refundedAt", o."createdAt", o."updatedAt"`;

/** The order's webhook view; `lines` are its line items, which every caller has loaded already. */
export function orderPayload(order: Order, lines: readonly unknown[]) {
  return views.order({ ...order, lineItemCount: lines.length });
}

export async function lineItemsOf(tx: Tx, order: Order) {
  return (tx as unknown as Database).orderLineItem.findMany({
    where: { organisationId: order.organisationId, orderId: order.id },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
}

/** The order, if the caller may see it (else 404) and `action` it (else missingRight). */
export async function loadOrder(ctx: RequestContext, id: string, action: 'read' | 'cancel' | 'refund'): Promise<Order> {
  return authorised(ctx, await ctx.db.order.findFirst({ where: { id, account: { isDeleted: false } } }), ORDERS_RESOURCE, action, 'Order');
}

export function checkoutUrl(ctx: RequestContext, orderId: string): string {
  return `${publicUrl(ctx.runtime.config)}/checkout/${orderId}`;
}
