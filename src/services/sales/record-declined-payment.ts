import type { TenantDatabase } from '../../db/tenant.ts';
import type { Order } from '../../generated/prisma/client.ts';
import { newId } from '../../ids.ts';

/** A buyer's test card is declined on the hosted checkout page: the try is kept, the order stays pending. */

/** A payment try of the whole order total. */
function paymentOf(
  order: Order,
  attempt: { method: string; cardLast4: string | null; status: 'succeeded' | 'declined'; failureReason?: string },
) {
  return {
    id: newId('payment'),
    organisationId: order.organisationId,
    orderId: order.id,
    amount: order.totalAmount,
    currency: order.currency,
    ...attempt,
  };
}

/**
 * A declined test payment: recorded, and the order stays pending (the page says why). At most
 * `max` per order, counted under the order's row lock so concurrent posts cannot pass it; answers
 * whether it was recorded.
 */
export async function recordDeclinedPayment(
  db: TenantDatabase,
  order: Order,
  cardLast4: string,
  reason: string,
  max: number,
): Promise<boolean> {
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT "id" FROM "orders" WHERE "organisationId" = ${order.organisationId} AND "id" = ${order.id} FOR UPDATE`;
    if ((await tx.payment.count({ where: { orderId: order.id, status: 'declined' } })) >= max) return false;
    await tx.payment.create({ data: paymentOf(order, { method: 'test_card', cardLast4, status: 'declined', failureReason: reason }) });
    return true;
  });
}
