import type { RequestContext } from '../../context.ts';
import type { Cart, SalesChannel } from '../../generated/prisma/client.ts';
import { cartView, reachableCart, type CartView } from './cart-rows.ts';
import { appraise, type PricedLine } from './pricing.ts';
import { announceSession } from './sales-sessions.ts';

/**
 * A storefront reads its cart: its lines at today's prices and what remains of each, and the
 * order it became once checked out.
 */

/** Lines of a stored cart priced at today's catalogue, without refusing what is no longer for sale (reads never fail on it). */
async function storedLines(ctx: RequestContext, channel: SalesChannel, cart: Cart): Promise<PricedLine[]> {
  const { lines, shown, issues, shortages } = await appraise(ctx, channel, { cartId: cart.id });
  if (issues.length === 0 && shortages.length === 0) return lines;
  // Something went off sale or sold out since: show the lines at their current prices anyway,
  // without availability; changing or checking out the cart says what is wrong.
  return shown.map((line) => ({ ...line, available: null }));
}

export async function getCart(ctx: RequestContext, id: string): Promise<CartView> {
  const { cart, channel, orderId } = await reachableCart(ctx, id);
  announceSession(ctx, cart.sessionId);
  return cartView(cart, await storedLines(ctx, channel, cart), orderId);
}
