import { sha256 } from '../../auth/keys.ts';
import type { RequestContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import type { Cart, Customer, Order, OrderLineItem, SalesChannel } from '../../generated/prisma/client.ts';
import { newId } from '../../ids.ts';
import { views } from '../../webhooks/payloads.ts';
import { withWebhooksSql } from '../../webhooks/record.ts';
import { holdAllThenCommit } from '../inventory.ts';
import { assertHoldRoom, countCheckout } from './checkout-limits.ts';
import { orderNumber } from './order-numbers.ts';
import { checkoutUrl, ORDER_COLUMNS } from './order-rows.ts';
import type { PricedLine } from './pricing.ts';

/**
 * The order a checkout places (check-out-cart.ts), written in one transaction with its customer,
 * its lines, its webhooks and the holds of its tickets.
 */

export class ShortOfTickets extends Error {
  constructor(readonly line: PricedLine) {
    super('short of tickets');
  }
}

/** A customer's columns, as Prisma's Customer has them. */
const CUSTOMER_COLUMNS = `cu.id, cu."organisationId", cu."accountId", cu.email, cu."firstName", cu."lastName", cu."createdAt", cu."updatedAt"`;

/**
 * The checkout's transaction, in hand-written statements (the on-sale's hottest write; `npm run
 * bench:onsale`): the cart closes, the customer is found or created, the hold limits are checked,
 * the order and its lines are written, the webhooks recorded, and the tickets held, last.
 */
export async function placeOrder(
  ctx: RequestContext,
  channel: SalesChannel,
  cart: Cart,
  lines: PricedLine[],
  buyer: { email: string; firstName?: string | null; lastName?: string | null } | { id: string },
  bucket: string | null,
) {
  const organisationId = channel.organisationId;
  const {
    ORDER_HOLD_TTL: holdTtl,
    CHECKOUT_HOLD_LIMIT_PER_CLIENT: perClient,
    CHECKOUT_HOLD_LIMIT_PER_EMAIL: perEmail,
  } = ctx.runtime.config;
  const clientKey = bucket === null ? null : sha256(bucket);
  const tickets = lines.reduce((sum, line) => sum + line.quantity, 0);
  const { order, customer, lineItems } = await withWebhooksSql(ctx.sql, ctx.runtime.dispatcher, async (tx, webhooks) => {
    const now = new Date();
    // Closed only as it was read: a change committed meanwhile (another tab's PATCH) would make
    // the order differ from the cart the buyer last saw. The customer is found (or, for an email
    // not seen before, created) in the same statement.
    const sql = tx.statement();
    const accountId = sql.param(channel.accountId);
    // The hold limits count a client's and a customer's holds under their locks (client first,
    // then customer), taken here with the customer known, so the count that follows (a later
    // statement, a later snapshot) sees every checkout of theirs that committed before.
    const clientLock = clientKey === null ? null : sql.param(`holds:${clientKey}`);
    const locks = (customerId: string) =>
      clientLock === null
        ? ''
        : `, pg_advisory_xact_lock(hashtext(${clientLock})) AS "clientLocked", pg_advisory_xact_lock(hashtext('holds:' || ${customerId})) AS "customerLocked"`;
    const closing = `closed AS (
        UPDATE carts SET status = 'checked_out', "updatedAt" = ${sql.param(now)}
         WHERE "organisationId" = $1 AND id = ${sql.param(cart.id)} AND status = 'open' AND "updatedAt" = ${sql.param(cart.updatedAt)}
        RETURNING id, "sessionId"
      )`;
    if ('id' in buyer) {
      sql.add(`WITH ${closing}, found AS (SELECT ${CUSTOMER_COLUMNS} FROM customers cu
          WHERE cu."organisationId" = $1 AND cu.id = ${sql.param(buyer.id)} AND cu."accountId" = ${accountId})
        SELECT buyer.*${locks('buyer.id')} FROM (
          SELECT (SELECT count(*)::int FROM closed) AS closed, false AS created, found.* FROM (SELECT 1) one LEFT JOIN found ON true
        ) buyer`);
    } else {
      // A concurrent checkout with the same new email: the unique (accountId, email) index decides;
      // the loser's transaction fails and the caller retries against the winner's customer.
      const email = sql.param(buyer.email);
      sql.add(`WITH ${closing}, found AS (SELECT ${CUSTOMER_COLUMNS} FROM customers cu
          WHERE cu."organisationId" = $1 AND cu."accountId" = ${accountId} AND cu.email = ${email}),
        made AS (
          INSERT INTO customers AS cu ("organisationId", id, "accountId", email, "firstName", "lastName", "createdAt", "updatedAt")
          SELECT $1, ${sql.param(newId('customer'))}, ${accountId}, ${email}, ${sql.param(buyer.firstName ?? null)},
                 ${sql.param(buyer.lastName ?? null)}, ${sql.param(now)}, ${sql.param(now)}
           WHERE NOT EXISTS (SELECT 1 FROM found) AND EXISTS (SELECT 1 FROM closed)
          RETURNING ${CUSTOMER_COLUMNS}
        )
        SELECT buyer.*${locks('buyer.id')} FROM (
          SELECT (SELECT count(*)::int FROM closed) AS closed, false AS created, found.* FROM found
          UNION ALL SELECT (SELECT count(*)::int FROM closed), true, made.* FROM made
          UNION ALL SELECT (SELECT count(*)::int FROM closed), false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
           WHERE NOT EXISTS (SELECT 1 FROM found) AND NOT EXISTS (SELECT 1 FROM made)
        ) buyer`);
    }
    const [row] = await tx.rows<Customer & { closed: number; created: boolean; clientLocked?: unknown; customerLocked?: unknown }>(sql);
    if (row!.closed !== 1) {
      const state = tx.statement();
      state.add(`SELECT status::text AS status FROM carts WHERE "organisationId" = $1 AND id = ${state.param(cart.id)}`);
      const [current] = await tx.rows<{ status: string }>(state);
      throw new AppError(
        'CONFLICT',
        current?.status === 'open'
          ? 'The cart changed during checkout; look at it again and check out.'
          : 'This cart was checked out already.',
      );
    }
    const { closed: _closed, created, clientLocked: _client, customerLocked: _customer, ...customer } = row!;
    if (customer.id === null) throw new AppError('UNAUTHENTICATED', 'The customer of this token no longer exists.');

    // The hold limits and the order go out together: a refusal rolls the order back.
    const roomChecked =
      clientKey === null ? Promise.resolve() : assertHoldRoom(tx, { clientKey, customerId: customer.id }, tickets, { perClient, perEmail });
    roomChecked.catch(() => undefined); // awaited below, before the order's answer is used

    // The order, its lines and the session's customer in one statement.
    const subtotal = lines.reduce((sum, line) => sum + line.totalAmount, 0);
    const write = tx.statement();
    const lineIds = lines.map(() => newId('orderLineItem'));
    const orderId = write.param(newId('order'));
    const at = write.param(now);
    write.add(`WITH made AS (
        INSERT INTO orders AS o ("organisationId", id, "accountId", "channelId", "customerId", "cartId", "orderNumber", status, currency,
                                 "subtotalAmount", "feeAmount", "totalAmount", "holdExpiresAt", "clientKey", "createdAt", "updatedAt")
        VALUES ($1, ${orderId}, ${write.param(channel.accountId)}, ${write.param(channel.id)}, ${write.param(customer.id)}, ${write.param(cart.id)},
                ${write.param(orderNumber())}, 'pending', ${write.param(lines[0]!.currency)}, ${write.param(subtotal)}, 0, ${write.param(subtotal)},
                ${write.param(new Date(now.getTime() + holdTtl))}, ${write.param(clientKey)}, ${at}, ${at})
        RETURNING ${ORDER_COLUMNS}
      ), lines AS (
        INSERT INTO order_line_items ("organisationId", id, "orderId", "ticketTypeId", "occurrenceId", "eventId", "ticketTypeName",
                                      quantity, "unitAmount", "totalAmount", currency, "createdAt")
        SELECT $1, line.id, ${orderId}, line.ticket_type_id, line.occurrence_id, line.event_id, line.ticket_type_name,
               line.quantity, line.unit_amount, line.total_amount, line.currency, ${at}
          FROM unnest(${write.param(lineIds)}::text[], ${write.param(lines.map((l) => l.ticketTypeId))}::text[],
                      ${write.param(lines.map((l) => l.occurrenceId))}::text[], ${write.param(lines.map((l) => l.eventId))}::text[],
                      ${write.param(lines.map((l) => l.ticketTypeName))}::text[], ${write.param(lines.map((l) => l.quantity))}::int[],
                      ${write.param(lines.map((l) => l.unitAmount))}::int[], ${write.param(lines.map((l) => l.totalAmount))}::int[],
                      ${write.param(lines.map((l) => l.currency))}::text[])
               AS line(id, ticket_type_id, occurrence_id, event_id, ticket_type_name, quantity, unit_amount, total_amount, currency)
      ), session AS (
        UPDATE sales_sessions SET "customerId" = ${write.param(customer.id)} WHERE "organisationId" = $1 AND id = ${write.param(cart.sessionId)}
      )
      SELECT * FROM made`);
    const written = tx.rows<Order>(write);
    await roomChecked;
    const [order] = await written;
    // Counted in the transaction, so only a checkout that commits counts. Not waited for, like the
    // webhooks: the holds and the commit follow in the same flight (src/db/sql.ts's pipeline).
    const counted = bucket === null ? Promise.resolve() : countCheckout(ctx, bucket, tx);
    counted.catch(() => undefined); // awaited below
    const recorded = webhooks.record(
      ...(created
        ? [{ organisationId, accountId: channel.accountId, type: 'customer.created' as const, payload: views.customer(customer) }]
        : []),
      {
        organisationId,
        accountId: channel.accountId,
        type: 'order.created',
        payload: views.order({ ...order!, lineItemCount: lines.length }),
      },
    );
    recorded.catch(() => undefined); // awaited below
    // The holds last: an inventory row is the one lock every buyer of a ticket type waits for, so
    // it is taken just before the commit, the last of them in the commit's own round trip.
    const short = await holdAllThenCommit(tx, lines);
    if (short) throw new ShortOfTickets(short);
    await recorded;
    await counted;
    // The lines as Prisma would load them: every column is one this statement wrote.
    const lineItems: OrderLineItem[] = lines.map((line, i) => ({
      id: lineIds[i]!,
      organisationId,
      orderId: order!.id,
      ticketTypeId: line.ticketTypeId,
      occurrenceId: line.occurrenceId,
      quantity: line.quantity,
      unitAmount: line.unitAmount,
      totalAmount: line.totalAmount,
      currency: line.currency,
      createdAt: now,
      eventId: line.eventId,
      ticketTypeName: line.ticketTypeName,
    }));
    return { order: order!, customer, lineItems };
  });
  return { order, customer, lineItems, checkoutUrl: checkoutUrl(ctx, order.id) };
}
