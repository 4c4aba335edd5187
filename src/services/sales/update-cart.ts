import { z } from 'zod';
import type { RequestContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { newId } from '../../ids.ts';
import { validate, type Raw } from '../../validation.ts';
import { itemsInput } from './cart-items.ts';
import { assertOpen, CART_TTL_MS, cartView, reachableCart, type CartView } from './cart-rows.ts';
import { priceLines } from './pricing.ts';
import { announceSession } from './sales-sessions.ts';

/**
 * A storefront replaces the lines of its open cart (an empty list empties it), checked against the
 * catalogue and what remains; the cart lives CART_TTL_MS from then.
 */

export const updateCartInput = z.strictObject({ items: itemsInput });

export async function updateCart(ctx: RequestContext, id: string, raw: Raw<z.input<typeof updateCartInput>>): Promise<CartView> {
  const input = validate(updateCartInput, raw);
  const { cart, channel } = await reachableCart(ctx, id);
  assertOpen(cart);
  const lines = await priceLines(ctx, channel, input.items);
  const updated = await ctx.db.$transaction(async (tx) => {
    const changed = await tx.cart.updateMany({
      where: { id: cart.id, status: 'open' },
      data: { currency: lines[0]?.currency ?? null, expiresAt: new Date(Date.now() + CART_TTL_MS), updatedAt: new Date() },
    });
    if (changed.count !== 1) throw new AppError('CONFLICT', 'This cart was checked out; start a new cart.');
    await tx.cartItem.deleteMany({ where: { cartId: cart.id } });
    if (lines.length > 0) {
      await tx.cartItem.createMany({
        data: lines.map((line) => ({
          id: newId('cartItem'),
          organisationId: channel.organisationId,
          cartId: cart.id,
          occurrenceId: line.occurrenceId,
          ticketTypeId: line.ticketTypeId,
          quantity: line.quantity,
        })),
      });
    }
    return tx.cart.findFirstOrThrow({ where: { id: cart.id } });
  });
  announceSession(ctx, cart.sessionId);
  return cartView(updated, lines, null);
}
