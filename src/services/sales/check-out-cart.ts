import { z } from 'zod';
import type { RequestContext } from '../../context.ts';
import { isUniqueViolation } from '../../db/client.ts';
import { AppError } from '../../errors.ts';
import { validate, type Raw } from '../../validation.ts';
import { channelOfKey } from '../listings.ts';
import { assertOpen, reachableCartOn } from './cart-rows.ts';
import { assertMayCheckOut, checkoutBucket, checkoutsUsed } from './checkout-limits.ts';
import { releaseExpiredHolds } from './hold-sweep.ts';
import { placeOrder, ShortOfTickets } from './place-order.ts';
import { appraise, appraisedAfterRelease, soldOut } from './pricing.ts';
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
  const keyed = await channelOfKey(ctx);
  const { principal, channel } = keyed;
  const bucket = checkoutBucket(ctx, principal);
  // The cart, the checkouts counted this minute and the cart's lines against the catalogue, in one
  // round trip. The lines are read after the cart (a later statement): a change to the cart
  // committed between the two changes its updatedAt, which the order's transaction checks.
  const [{ cart, pendingHolds }, used, appraisal] = await ctx.sql.together((on) =>
    Promise.all([
      reachableCartOn(on, ctx, id, keyed),
      checkoutsUsed(ctx, bucket, on),
      appraise(ctx, channel, { cartId: id }, { on, releaseHolds: false }),
    ]),
  );
  const buyer = input.customer ?? (principal.customerId ? { id: principal.customerId } : null);
  if (!buyer)
    throw AppError.validation([{ path: 'customer.email', message: 'Required (unless a customer token is sent beside the channel key).' }]);
  assertMayCheckOut(used, pendingHolds);
  assertOpen(cart);
  const { lines, issues, shortages, items } = await appraisedAfterRelease(ctx, channel, { cartId: cart.id }, appraisal);
  if (items.length === 0) throw AppError.validation([{ path: 'items', message: 'The cart is empty.' }]);
  if (issues.length > 0) throw AppError.validation(issues);
  if (shortages.length > 0) throw soldOut(shortages);

  let released = false;
  for (let attempt = 0; ; attempt += 1) {
    try {
      const result = await placeOrder(ctx, channel, cart, lines, buyer, bucket);
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
