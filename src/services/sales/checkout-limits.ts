import type { ChannelPrincipal, RequestContext } from '../../context.ts';
import type { FlightStatements, TenantStatements, TransactionStatements } from '../../db/sql.ts';
import { clientBucket, tooMany, type WindowUse } from '../../limits/rate-limiter.ts';

/**
 * A publishable key is public: anyone can check out with it, and a fresh sales session costs
 * nothing. What bounds one client holding a show's tickets with a script:
 * - tickets held at once (pending, unexpired orders) per key and client address
 *   (CHECKOUT_HOLD_LIMIT_PER_CLIENT) and per customer email (CHECKOUT_HOLD_LIMIT_PER_EMAIL), checked
 *   under a lock inside the checkout's transaction, so concurrent checkouts cannot pass it together;
 * - checkouts per key and address per minute (only those that hold tickets count, so a crowd behind
 *   one NAT retrying a sold-out show is not locked out), and pending orders per sales session.
 * The per-email cap counts only live holds, which expire with ORDER_HOLD_TTL: someone holding
 * tickets under another's email to lock them out spends their own per-address allowance doing it,
 * and only for the length of a hold. Secret keys are servers that answer for their own users and
 * are not limited here.
 */

/** Successful checkouts per minute per publishable key and client address (IPv6: per /64). */
const CHECKOUTS_PER_MINUTE = 60;
/** Pending (unpaid, still held) orders one sales session may have at once. */
export const MAX_PENDING_PER_SESSION = 5;

/** What a checkout counts against: the publishable key and client address; none for a secret key. */
export function checkoutBucket(ctx: RequestContext, principal: ChannelPrincipal): string | null {
  return principal.keyKind === 'secret' ? null : `${principal.channelKeyId}|${clientBucket(ctx.clientIp)}`;
}

/** The checkouts counted this minute against `bucket` (none for a secret key), read in `on`'s flight. */
export function checkoutsUsed(ctx: RequestContext, bucket: string | null, on: FlightStatements): Promise<WindowUse | null> {
  return bucket === null ? Promise.resolve(null) : ctx.runtime.rateLimiter.used('checkout', bucket, 60_000, on);
}

/** Counts a checkout that holds tickets, in its transaction (so only one that commits counts). */
export function countCheckout(ctx: RequestContext, bucket: string, tx: TransactionStatements): Promise<void> {
  return ctx.runtime.rateLimiter.count('checkout', bucket, 60_000, tx);
}

/** Refuses (429) a checkout beyond the per-minute limit of its bucket or the session's pending orders. */
export function assertMayCheckOut(used: WindowUse | null, pendingHolds: readonly Date[]): void {
  if (used === null) return;
  used.assertUnder(CHECKOUTS_PER_MINUTE);
  if (pendingHolds.length >= MAX_PENDING_PER_SESSION) {
    const seconds = Math.max(1, Math.ceil((new Date(pendingHolds[0]!).getTime() - Date.now()) / 1000));
    throw tooMany(
      seconds,
      `${MAX_PENDING_PER_SESSION} orders of this session are waiting for payment; pay one, or wait until a hold ends.`,
    );
  }
}

/**
 * Refuses (429, Retry-After = until the earliest of those holds ends) when the tickets already held
 * by the client address's (or the customer's) pending orders plus `adding` would exceed their
 * limit. Runs in the checkout's transaction after the statement that locked the holders (client,
 * then customer), so two checkouts of one client are counted one after the other.
 */
export async function assertHoldRoom(
  tx: TenantStatements,
  holders: { clientKey: string; customerId: string },
  adding: number,
  limits: { perClient: number; perEmail: number },
): Promise<void> {
  const now = new Date();
  const sql = tx.statement();
  const at = sql.param(now);
  const held = (column: string, value: string) => `(SELECT coalesce(sum(li.quantity), 0)::int FROM orders o
        JOIN order_line_items li ON li."organisationId" = o."organisationId" AND li."orderId" = o.id
       WHERE o."organisationId" = $1 AND o.${column} = ${value} AND o.status = 'pending' AND o."holdExpiresAt" > ${at})`;
  const earliest = (column: string, value: string) => `(SELECT min(o."holdExpiresAt") FROM orders o
       WHERE o."organisationId" = $1 AND o.${column} = ${value} AND o.status = 'pending' AND o."holdExpiresAt" > ${at})`;
  const client = sql.param(holders.clientKey);
  const customer = sql.param(holders.customerId);
  sql.add(`SELECT ${held('"clientKey"', client)} AS "clientHeld", ${earliest('"clientKey"', client)} AS "clientUntil",
      ${held('"customerId"', customer)} AS "customerHeld", ${earliest('"customerId"', customer)} AS "customerUntil"`);
  const [row] = await tx.rows<{ clientHeld: number; clientUntil: Date | null; customerHeld: number; customerUntil: Date | null }>(sql);
  const refuse = (holding: number, until: Date | null, limit: number, whose: string) => {
    const end = until ?? new Date(now.getTime() + 60_000);
    return tooMany(
      (end.getTime() - now.getTime()) / 1000,
      `At most ${limit} tickets may be held at once ${whose}; ${holding} are held by unpaid orders. Pay for one, or wait until a hold ends.`,
    );
  };
  if (row!.clientHeld + adding > limits.perClient)
    throw refuse(row!.clientHeld, row!.clientUntil, limits.perClient, 'from one client address');
  if (row!.customerHeld + adding > limits.perEmail)
    throw refuse(row!.customerHeld, row!.customerUntil, limits.perEmail, 'for one customer email');
}
