import { z } from 'zod';
import type { RequestContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/client.ts';
import { AppError } from '../../errors.ts';
import { validate, type Raw } from '../../validation.ts';
import { assertOpen, reachableCart } from './cart-rows.ts';
import { assertMayCheckOut, checkoutBucket } from './checkout-limits.ts';
import { releaseExpiredHolds } from './hold-sweep.ts';
import { placeOrder, ShortOfTickets } from './place-order.ts';
import { appraise, soldOut } from './pricing.ts';
import { announceSession } from './sales-sessions.ts';

/**
 * A storefront checks out its cart: the cart becomes a pending order for a customer, its prices
 * frozen, and its tickets are held for ORDER_HOLD_TTL, until the order is paid (confirm-order.ts)
 * or its hold runs out (hold-sweep.ts).
 */

/** Who buys: found by email on the channel's account, or created. */
export const checkoutCustomerInput = z.strictObject({
  email: z
    .email()
    .max(254)
    .transform((email) => email.toLowerCase()),
  firstName: z.string().trim().min(1).max(100).nullish(),
  lastName: z.string().trim().min(1).max(100).nullish(),
});

export const checkoutCartInput = z.strictObject({
  /** Optional for a signed-in shopper (customer token beside the key): then they buy. */
  customer: checkoutCustomerInput.nullish(),
});

/**
 * Turns an open cart into a pending order for a customer (found by email on the channel's account,
 * or created: customer.created), holding its tickets until the hold expires (order.created). One
 * transaction: the cart closes, the customer, order, line items, holds and webhooks commit together
 * or not at all. When a hold fails, holds of orders whose time ran out are released and the hold is
 * tried once more, so abandoned checkouts never keep the last tickets from a buyer.
 */
export async function checkoutCart(ctx: RequestContext, id: string, raw: Raw<z.input<typeof checkoutCartInput>>) {
  const input = validate(checkoutCartInput, raw);
  const { cart, channel, principal, pendingHolds } = await reachableCart(ctx, id);
  const buyer = input.customer ?? (principal.customerId ? { id: principal.customerId } : null);
  if (!buyer)
    throw AppError.validation([{ path: 'customer.email', message: 'Required (unless a customer token is sent beside the channel key).' }]);
  await assertMayCheckOut(ctx, principal, pendingHolds);
  assertOpen(cart);
  const { lines, issues, shortages, items } = await appraise(ctx, channel, { cartId: cart.id });
  if (items.length === 0) throw AppError.validation([{ path: 'items', message: 'The cart is empty.' }]);
  if (issues.length > 0) throw AppError.validation(issues);
  if (shortages.length > 0) throw soldOut(shortages);

  let released = false;
  for (let attempt = 0; ; attempt += 1) {
    try {
      const result = await placeOrder(ctx, channel, cart, lines, buyer, checkoutBucket(ctx, principal));
      const bucket = checkoutBucket(ctx, principal);
      if (bucket !== null) await ctx.runtime.rateLimiter.count('checkout', bucket, 60_000);
      announceSession(ctx, cart.sessionId);
      return result;
    } catch (error) {
      if (error instanceof ShortOfTickets && !released) {
        released = true;
        if ((await releaseExpiredHolds(ctx.runtime, { organisationId: channel.organisationId })) > 0) continue;
      }
      if (error instanceof ShortOfTickets)
        throw soldOut([{ path: `items.${lines.indexOf(error.line)}.quantity`, message: 'Not enough tickets remain.' }]);
      // An order number drawn twice (about one in 10^12): draw again.
      if (isUniqueViolation(error) && attempt < 3) continue;
      throw error;
    }
  }
}
