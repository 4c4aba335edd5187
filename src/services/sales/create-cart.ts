import { z } from 'zod';
import type { RequestContext } from '../../context.ts';
import type { Cart } from '../../generated/prisma/client.ts';
import { newId } from '../../ids.ts';
import { validate, type Raw } from '../../validation.ts';
import { channelOfKey } from '../listings.ts';
import { itemsInput } from './cart-items.ts';
import { CART_COLUMNS, CART_TTL_MS, cartView, type CartView } from './cart-rows.ts';
import { priceLines } from './pricing.ts';
import { announceSession, sessionFor } from './sales-sessions.ts';

/**
 * A storefront starts a cart, empty or with its first lines (checked against the catalogue and
 * what remains), in the browser's sales session: the one it sent, renewed, or a new one.
 */

export const createCartInput = z.strictObject({ items: itemsInput.nullish() });

export async function createCart(ctx: RequestContext, raw: Raw<z.input<typeof createCartInput>>): Promise<CartView> {
  const input = validate(createCartInput, raw);
  const { channel } = await channelOfKey(ctx);
  const lines = await priceLines(ctx, channel, input.items ?? []);
  // One statement: the session (renewed or new), the cart and its lines commit together.
  const now = new Date();
  const sql = ctx.sql.statement();
  const cartId = sql.param(newId('cart'));
  sql.add(`WITH ${sessionFor(ctx, sql, channel, now)}, cart AS (
      INSERT INTO carts AS c ("organisationId", id, "accountId", "channelId", "sessionId", status, currency, "expiresAt", "createdAt", "updatedAt")
      SELECT $1, ${cartId}, ${sql.param(channel.accountId)}, ${sql.param(channel.id)}, session.id, 'open', ${sql.param(lines[0]?.currency ?? null)},
             ${sql.param(new Date(now.getTime() + CART_TTL_MS))}, ${sql.param(now)}, ${sql.param(now)}
        FROM session
      RETURNING ${CART_COLUMNS}
    ), items AS (
      INSERT INTO cart_items ("organisationId", id, "cartId", "ticketTypeId", "occurrenceId", quantity, "createdAt", "updatedAt")
      SELECT $1, item.id, ${cartId}, item.ticket_type_id, item.occurrence_id, item.quantity, ${sql.param(now)}, ${sql.param(now)}
        FROM unnest(${sql.param(lines.map(() => newId('cartItem')))}::text[], ${sql.param(lines.map((line) => line.ticketTypeId))}::text[],
                    ${sql.param(lines.map((line) => line.occurrenceId))}::text[], ${sql.param(lines.map((line) => line.quantity))}::int[])
             AS item(id, ticket_type_id, occurrence_id, quantity)
    )
    SELECT * FROM cart`);
  const [cart] = await ctx.sql.rows<Cart>(sql);
  announceSession(ctx, cart!.sessionId);
  return cartView(cart!, lines, null);
}
