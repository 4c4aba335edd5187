import type { ChannelPrincipal, RequestContext } from '../../context.ts';
import type { TenantStatements } from '../../db/sql.ts';
import { AppError } from '../../errors.ts';
import type { Cart, SalesChannel } from '../../generated/prisma/client.ts';
import { channelOfKey } from '../listings.ts';
import { MAX_PENDING_PER_SESSION } from './checkout-limits.ts';
import type { PricedLine } from './pricing.ts';
import { SESSION_TTL_MS } from './sales-sessions.ts';

/**
 * A storefront's cart (sales API, docs/spec/contract.md "Sales API") as stored and as answered: its
 * columns, its view, and how a request reaches it. A cart is reachable with its session only: a
 * publishable key lives in browsers, so a cart id seen elsewhere (a log, a shared link) is not
 * enough. A secret key (a server) may reach any cart of its channel. Carts hold no tickets: they
 * are checked against availability when changed, and tickets are held only by checkout
 * (check-out-cart.ts).
 */

export const CART_TTL_MS = 24 * 60 * 60 * 1000;

export interface CartView {
  id: string;
  sessionId: string;
  status: 'open' | 'checked_out' | 'abandoned';
  currency: string | null;
  items: PricedLine[];
  itemCount: number;
  subtotalAmount: number;
  totalAmount: number;
  orderId: string | null;
  expiresAt: Date;
  createdAt: Date;
  updatedAt: Date;
}

export function cartView(cart: Cart, lines: PricedLine[], orderId: string | null): CartView {
  const subtotal = lines.reduce((sum, line) => sum + line.totalAmount, 0);
  const expired = cart.status === 'open' && cart.expiresAt <= new Date();
  return {
    id: cart.id,
    sessionId: cart.sessionId,
    status: expired ? 'abandoned' : cart.status,
    currency: lines[0]?.currency ?? cart.currency,
    items: lines,
    itemCount: lines.reduce((sum, line) => sum + line.quantity, 0),
    subtotalAmount: subtotal,
    totalAmount: subtotal,
    orderId,
    expiresAt: cart.expiresAt,
    createdAt: cart.createdAt,
    updatedAt: cart.updatedAt,
  };
}

/** A cart's columns, as Prisma's Cart has them. */
export const CART_COLUMNS = `c.id, c."organisationId", c."accountId", c."channelId", c."sessionId", c.status::text AS status, c.currency,
  c."expiresAt", c."createdAt", c."updatedAt"`;

interface ReachedCart {
  cart: Cart;
  channel: SalesChannel;
  principal: ChannelPrincipal;
  /** Pending orders of the cart's session whose hold is still running, soonest to end first (at most MAX_PENDING_PER_SESSION). */
  pendingHolds: Date[];
  /** The id of the order the cart became, if it was checked out. */
  orderId: string | null;
}

/**
 * A cart of the key's channel the request may reach (its session, or any with a secret key),
 * with its session renewed, and what checkout asks of it: one statement.
 */
export async function reachableCart(ctx: RequestContext, id: string): Promise<ReachedCart> {
  return reachableCartOn(ctx.sql, ctx, id, await channelOfKey(ctx));
}

/**
 * reachableCart's statement, sent on `on` (a flight of the caller's) before this returns, so it
 * goes ahead of whatever the caller sends next.
 */
export function reachableCartOn(
  on: TenantStatements,
  ctx: RequestContext,
  id: string,
  { principal, channel }: Awaited<ReturnType<typeof channelOfKey>>,
): Promise<ReachedCart> {
  const now = new Date();
  const sql = on.statement();
  const at = sql.param(now);
  // A publishable key reaches a cart only with its session, which must still be alive; using it
  // keeps it alive.
  const bySession = principal.keyKind !== 'secret';
  sql.add(`WITH cart AS (
      SELECT ${CART_COLUMNS} FROM carts c
       WHERE c."organisationId" = $1 AND c.id = ${sql.param(id)} AND c."channelId" = ${sql.param(channel.id)}
         ${bySession ? `AND c."sessionId" = ${sql.param(ctx.liveSessionId ?? null)}` : ''}
    ), renewed AS (
      UPDATE sales_sessions s SET "lastSeenAt" = ${at}, "expiresAt" = ${sql.param(new Date(now.getTime() + SESSION_TTL_MS))}
        FROM cart
       WHERE ${bySession ? 'true' : 'false'} AND s."organisationId" = $1 AND s.id = cart."sessionId" AND s."channelId" = cart."channelId" AND s."expiresAt" > ${at}
      RETURNING s.id
    )
    SELECT cart.*, EXISTS (SELECT 1 FROM renewed) AS renewed,
      (SELECT o.id FROM orders o WHERE o."organisationId" = $1 AND o."cartId" = cart.id) AS "orderId",
      ARRAY(SELECT o."holdExpiresAt" FROM orders o JOIN carts oc ON oc."organisationId" = o."organisationId" AND oc.id = o."cartId"
             WHERE o."organisationId" = $1 AND oc."sessionId" = cart."sessionId" AND o.status = 'pending' AND o."holdExpiresAt" > ${at}
             ORDER BY o."holdExpiresAt" LIMIT ${MAX_PENDING_PER_SESSION}) AS "pendingHolds"
      FROM cart`);
  return on.rows<Cart & { renewed: boolean; orderId: string | null; pendingHolds: Date[] }>(sql).then(([row]) => {
    if (!row || (bySession && !row.renewed))
      throw AppError.notFound('Cart not found (a cart is reached with the X-Live-Session its creation answered).');
    const { renewed: _renewed, orderId, pendingHolds, ...cart } = row;
    return { cart, channel, principal, orderId, pendingHolds };
  });
}

export function assertOpen(cart: Cart): void {
  if (cart.status === 'checked_out') throw new AppError('CONFLICT', 'This cart was checked out; start a new cart.');
  if (cart.status === 'abandoned' || cart.expiresAt <= new Date()) throw new AppError('GONE', 'This cart expired; start a new cart.');
}
