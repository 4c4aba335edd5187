import type { RequestContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import type { Order } from '../../generated/prisma/client.ts';
import { withWebhooks } from '../../webhooks/record.ts';
import { changesBetween, recordAudit } from '../audit.ts';
import { lockOrder, move } from '../inventory.ts';
import { lineItemsOf, loadOrder, orderPayload } from './order-rows.ts';

/** An organisation cancels an order, pending or confirmed, or refunds a confirmed one (management API). */

const TRANSITIONS = {
  cancel: {
    from: ['pending', 'confirmed'] as const,
    to: 'cancelled' as const,
    stamp: 'cancelledAt' as const,
    webhook: 'order.cancelled' as const,
  },
  refund: { from: ['confirmed'] as const, to: 'refunded' as const, stamp: 'refundedAt' as const, webhook: 'order.refunded' as const },
};

/**
 * Cancels (pending or confirmed) or refunds (confirmed) an order: passes not yet redeemed are
 * voided and their tickets go back on sale (redeemed ones stay sold), and a confirmed order's whole
 * total leaves the revenue; order.cancelled / order.refunded. Payments are test payments, so a
 * refund moves no money; a real payment provider would be called here, before the commit.
 */
export async function changeOrder(ctx: RequestContext, id: string, action: 'cancel' | 'refund'): Promise<Order> {
  const found = await loadOrder(ctx, id, action);
  const transition = TRANSITIONS[action];
  const now = new Date();
  const result = await withWebhooks(ctx.db, ctx.runtime.dispatcher, async (tx, webhooks) => {
    // Lock the row first: the state it leaves decides which counter its tickets return to.
    const [locked] = await tx.$queryRaw<Array<{ status: Order['status'] }>>`
      SELECT "status" FROM "orders" WHERE "organisationId" = ${found.organisationId} AND "id" = ${found.id} FOR UPDATE`;
    if (!locked || !(transition.from as readonly string[]).includes(locked.status)) {
      return { order: await tx.order.findFirstOrThrow({ where: { id: found.id } }), changed: false };
    }
    const order = await tx.order.update({
      where: { id: found.id },
      data: { status: transition.to, [transition.stamp]: now, holdExpiresAt: null },
    });
    const lines = await lineItemsOf(tx, order);
    if (locked.status === 'pending') {
      for (const line of lockOrder(lines)) await move(tx, order.organisationId, line, 'release');
    } else {
      // Only tickets whose pass is voided now go back on sale: a redeemed pass was used, its seat
      // stays sold (or the occurrence would be sold twice over). The money goes back in full, so
      // every line moves, one with no ticket returned included (test/sales/revenue.test.ts).
      const voided = await tx.pass.updateManyAndReturn({
        where: { orderId: order.id, status: 'issued' },
        data: { status: 'void' },
        select: { lineItemId: true },
      });
      const returned = lines.map((line) => ({ ...line, quantity: voided.filter((pass) => pass.lineItemId === line.id).length }));
      for (const line of lockOrder(returned)) await move(tx, order.organisationId, line, 'return');
    }
    await webhooks.record({
      organisationId: order.organisationId,
      accountId: order.accountId,
      type: transition.webhook,
      payload: orderPayload(order, lines),
    });
    // The money: a confirmed order's whole total leaves the revenue (none was taken for a pending one).
    await recordAudit(tx, ctx, {
      action: transition.webhook,
      targetId: order.id,
      accountId: order.accountId,
      changes: {
        ...changesBetween({ ...found, status: locked.status }, order, ['status', transition.stamp, 'holdExpiresAt']),
        revenue: {
          before: { amount: locked.status === 'confirmed' ? order.totalAmount : 0, currency: order.currency },
          after: { amount: 0, currency: order.currency },
        },
      },
    });
    return { order, changed: true };
  });
  if (!result.changed) {
    const status = result.order.status;
    if (action === 'refund' && status === 'pending') throw new AppError('CONFLICT', 'This order is not paid; cancel it instead.');
    throw new AppError('CONFLICT', `This order is ${status}; it cannot be ${action === 'cancel' ? 'cancelled' : 'refunded'}.`);
  }
  return result.order;
}
