import { randomInt } from 'node:crypto';
import { channelOf, type RequestContext } from '../../context.ts';
import { tenantSql, type TenantStatements, type TransactionStatements } from '../../db/sql.ts';
import { tenantDatabase } from '../../db/tenant.ts';
import { AppError } from '../../errors.ts';
import type { Order } from '../../generated/prisma/client.ts';
import { newId } from '../../ids.ts';
import { views } from '../../webhooks/payloads.ts';
import { withWebhooksSql, type WebhookBatchRecorder } from '../../webhooks/record.ts';
import { moveAllThenCommit } from '../inventory.ts';
import { PAYABLE_EVENT_STATUSES } from '../sellability.ts';
import { cancelPending, releaseExpiredHolds, type Services } from './hold-sweep.ts';
import { ORDER_COLUMNS, orderPayload } from './order-rows.ts';
import { mailTickets, type ConfirmedLine, type IssuedPass } from './ticket-mail.ts';

/**
 * A pending order is paid: on the hosted checkout page (src/http/checkout.ts), or confirmed by a
 * server holding a secret key of its channel. Its tickets are sold, its passes issued and mailed.
 */

const PASS_CODE_ALPHABET = '23456789ABCDEFGHJKLMNPQRSTUVWXYZ';

/** 16 characters without look-alikes (~80 bits): printed as a barcode, typed at a door when it fails. */
function passCode(): string {
  let text = '';
  for (let i = 0; i < 16; i += 1) text += PASS_CODE_ALPHABET[randomInt(PASS_CODE_ALPHABET.length)];
  return text;
}

export interface PaymentInput {
  method: 'test_card' | 'server_confirmation';
  cardLast4?: string | null;
}

/**
 * Confirms a pending order whose hold is still valid: tickets move from held to sold, a payment
 * is recorded, passes are issued; order.confirmed and ticket.issued. A confirmed order answers
 * 409, a cancelled or refunded one 409, an expired hold 410, and an order whose occurrence, event,
 * channel or account stopped selling since checkout 409; the last two are cancelled then and
 * there, their tickets back on sale.
 */
export async function confirmOrder(services: Services, organisationId: string, orderId: string, payment: PaymentInput): Promise<Order> {
  const sql = tenantSql(services.db, organisationId);
  let outcome;
  try {
    outcome = await withWebhooksSql(sql, services.dispatcher, async (tx, webhooks) => {
      const now = new Date();
      const move = tx.statement();
      const at = move.param(now);
      const id = move.param(orderId);
      move.add(`WITH moved AS (
          UPDATE orders o SET status = 'confirmed', "confirmedAt" = ${at}, "holdExpiresAt" = NULL, "updatedAt" = ${at}
           WHERE o."organisationId" = $1 AND o.id = ${id} AND o.status = 'pending' AND o."holdExpiresAt" > ${at}
          RETURNING ${ORDER_COLUMNS}
        )
        SELECT true AS moved, moved.* FROM moved
        UNION ALL
        SELECT false, ${ORDER_COLUMNS} FROM orders o WHERE o."organisationId" = $1 AND o.id = ${id} AND NOT EXISTS (SELECT 1 FROM moved)`);
      const moving = tx.rows<Order & { moved: boolean }>(move);
      // Checked under share locks, in this transaction: cancelling the occurrence (or the event,
      // the channel, the account) waits for this confirmation or is seen by it, never both missed.
      // Sent with the move, whose answer it does not need (it is of no use if nothing moved).
      const facts = confirmationFacts(tx, orderId);
      facts.catch(() => undefined); // awaited below, or failing the transaction as it settles
      const [row] = await moving;
      if (!row) throw AppError.notFound('Order not found.');
      const { moved, ...order } = row;
      if (!moved) return { order, moved: false as const, passes: [] as IssuedPass[], customerEmail: null };
      const { reason, lines, customerEmail } = await facts;
      if (reason) throw new Unsellable(order, reason);
      const passes = await confirmedSql(tx, webhooks, order, lines, payment);
      return { order, moved: true as const, passes, customerEmail };
    });
  } catch (error) {
    if (!(error instanceof Unsellable)) throw error;
    if (await cancelPending(services, error.order)) {
      throw new AppError('CONFLICT', `This order can no longer be paid: ${error.reason}. It was cancelled and nothing was charged.`);
    }
    // Another request moved it meanwhile: answer from what it is now.
    const db = tenantDatabase(services.db, organisationId);
    outcome = {
      order: await db.order.findFirstOrThrow({ where: { id: orderId } }),
      moved: false as const,
      passes: [],
      customerEmail: null,
    };
  }
  if (outcome.moved) {
    const { order, passes, customerEmail } = outcome;
    if (services.mailer && customerEmail) {
      await mailTickets(services.mailer, order, customerEmail, passes).catch((error: unknown) =>
        services.logger?.error({ err: error, orderId: order.id }, 'could not mail the tickets of a confirmed order'),
      );
    }
    return order;
  }
  const { order } = outcome;
  if (order.status === 'confirmed') throw new AppError('CONFLICT', 'This order is confirmed already.');
  if (order.status !== 'pending') throw new AppError('CONFLICT', `This order was ${order.status}; it can no longer be paid.`);
  await releaseExpiredHolds(services, { organisationId: order.organisationId, orderId: order.id });
  throw new AppError('GONE', 'The tickets of this order were held until its time ran out; it was cancelled. Check out again.');
}

class Unsellable extends Error {
  constructor(
    readonly order: Order,
    readonly reason: string,
  ) {
    super(reason);
  }
}

/**
 * What confirming an order needs to know, in one statement: why it can no longer be sold (its
 * account was deleted, its channel turned off, or an occurrence or event of its lines cancelled,
 * deleted or taken off sale since checkout; read under FOR SHARE, so a concurrent change to those
 * rows waits), its lines, and the customer's email. The order's account, channel and customer are
 * read from its row, so this can be sent before the row's answer has come back.
 */
async function confirmationFacts(
  tx: TenantStatements,
  id: string,
): Promise<{ reason: string | null; lines: ConfirmedLine[]; customerEmail: string | null }> {
  const sql = tx.statement();
  const orderId = sql.param(id);
  const ofOrder = (column: string) => `(SELECT ord."${column}" FROM orders ord WHERE ord."organisationId" = $1 AND ord.id = ${orderId})`;
  sql.add(`SELECT
      (SELECT a."isDeleted" FROM accounts a WHERE a."organisationId" = $1 AND a.id = ${ofOrder('accountId')} FOR SHARE) AS "accountDeleted",
      (SELECT c."isActive" FROM sales_channels c WHERE c."organisationId" = $1 AND c.id = ${ofOrder('channelId')} FOR SHARE) AS "channelActive",
      (SELECT coalesce(json_agg(json_build_object('occurrenceStatus', s.occurrence_status, 'eventStatus', s.event_status, 'isDeleted', s.is_deleted)), '[]')
         FROM (SELECT o.status::text AS occurrence_status, e.status::text AS event_status, e."isDeleted" AS is_deleted
                 FROM order_line_items li
                 JOIN event_occurrences o ON o."organisationId" = li."organisationId" AND o.id = li."occurrenceId"
                 JOIN events e ON e."organisationId" = o."organisationId" AND e.id = o."eventId"
                WHERE li."organisationId" = $1 AND li."orderId" = ${orderId}
                  FOR SHARE OF o, e) s) AS shows,
      (SELECT coalesce(json_agg(json_build_object('id', li.id, 'ticketTypeId', li."ticketTypeId", 'occurrenceId', li."occurrenceId",
                'quantity', li.quantity, 'totalAmount', li."totalAmount", 'currency', li.currency,
                'ticketTypeName', li."ticketTypeName", 'eventName', e.name, 'startsAt', o."startsAt") ORDER BY li."createdAt", li.id), '[]')
         FROM order_line_items li
         JOIN event_occurrences o ON o."organisationId" = li."organisationId" AND o.id = li."occurrenceId"
         JOIN events e ON e."organisationId" = o."organisationId" AND e.id = o."eventId"
        WHERE li."organisationId" = $1 AND li."orderId" = ${orderId}) AS lines,
      (SELECT cu.email FROM customers cu WHERE cu."organisationId" = $1 AND cu.id = ${ofOrder('customerId')}) AS "customerEmail"`);
  const [row] = await tx.rows<{
    accountDeleted: boolean | null;
    channelActive: boolean | null;
    shows: Array<{ occurrenceStatus: string; eventStatus: string; isDeleted: boolean }>;
    lines: ConfirmedLine[];
    customerEmail: string | null;
  }>(sql);
  const facts = row!;
  const answer = (reason: string | null) => ({ reason, lines: facts.lines, customerEmail: facts.customerEmail });
  if (facts.accountDeleted !== false) return answer('its account was closed');
  if (facts.channelActive === false) return answer('the shop it was placed in has closed');
  for (const show of facts.shows) {
    if (show.occurrenceStatus !== 'scheduled') return answer('a performance in it was cancelled');
    if (show.isDeleted || !(PAYABLE_EVENT_STATUSES as readonly string[]).includes(show.eventStatus))
      return answer('an event in it is no longer on sale');
  }
  return answer(null);
}

/**
 * The confirmation itself, in the caller's transaction of hand-written statements: paid, passes
 * and entitlements issued (one statement), webhooks recorded (one), tickets sold and their line
 * totals added to the revenue (one per line).
 */
async function confirmedSql(
  tx: TransactionStatements,
  webhooks: WebhookBatchRecorder,
  order: Order,
  lines: ConfirmedLine[],
  payment: PaymentInput,
): Promise<IssuedPass[]> {
  const passes: IssuedPass[] = lines.flatMap((line) =>
    Array.from({ length: line.quantity }, () => ({
      id: newId('pass'),
      organisationId: order.organisationId,
      accountId: order.accountId,
      orderId: order.id,
      lineItemId: line.id,
      customerId: order.customerId,
      ticketTypeId: line.ticketTypeId,
      occurrenceId: line.occurrenceId,
      code: passCode(),
      status: 'issued' as const,
      line,
    })),
  );
  // In id order: the order every list of passes answers in (same createdAt), so the ticket.issued
  // payload and GET /v1/passes agree.
  passes.sort((a, b) => (a.id < b.id ? -1 : 1));
  const sql = tx.statement();
  const at = sql.param(new Date());
  const orderId = sql.param(order.id);
  sql.add(`WITH paid AS (
      INSERT INTO payments ("organisationId", id, "orderId", amount, currency, method, "cardLast4", status, "createdAt")
      VALUES ($1, ${sql.param(newId('payment'))}, ${orderId}, ${sql.param(order.totalAmount)}, ${sql.param(order.currency)},
              ${sql.param(payment.method)}, ${sql.param(payment.cardLast4 ?? null)}, 'succeeded', ${at})
    ), issued AS (
      INSERT INTO passes ("organisationId", id, "accountId", "orderId", "lineItemId", "customerId", "ticketTypeId", "occurrenceId", code, status, "createdAt", "updatedAt")
      SELECT $1, p.id, ${sql.param(order.accountId)}, ${orderId}, p.line_item_id, ${sql.param(order.customerId)}, p.ticket_type_id, p.occurrence_id, p.code, 'issued', ${at}, ${at}
        FROM unnest(${sql.param(passes.map((p) => p.id))}::text[], ${sql.param(passes.map((p) => p.lineItemId))}::text[],
                    ${sql.param(passes.map((p) => p.ticketTypeId))}::text[], ${sql.param(passes.map((p) => p.occurrenceId))}::text[],
                    ${sql.param(passes.map((p) => p.code))}::text[]) AS p(id, line_item_id, ticket_type_id, occurrence_id, code)
    )
    INSERT INTO entitlements ("organisationId", id, "passId", "occurrenceId", "createdAt")
    SELECT $1, e.id, e.pass_id, e.occurrence_id, ${at}
      FROM unnest(${sql.param(passes.map(() => newId('entitlement')))}::text[], ${sql.param(passes.map((p) => p.id))}::text[],
                  ${sql.param(passes.map((p) => p.occurrenceId))}::text[]) AS e(id, pass_id, occurrence_id)`);
  // Sent without waiting for its answer, like the webhooks after it (the transaction's pipeline,
  // src/db/sql.ts): the moves and the commit follow at once, and a failure of either still fails
  // the transaction (rowsThenCommit answers the first error).
  const written = tx.rows(sql);
  const issued = passes.map(({ line: _line, ...pass }) => pass);
  const recorded = webhooks.record(
    { organisationId: order.organisationId, accountId: order.accountId, type: 'order.confirmed', payload: orderPayload(order, lines) },
    {
      organisationId: order.organisationId,
      accountId: order.accountId,
      type: 'ticket.issued',
      payload: views.ticketsIssued({ orderId: order.id, accountId: order.accountId, passes: issued }),
    },
  );
  recorded.catch(() => undefined); // awaited below
  // The inventory rows last, the last of them sent with the commit: they are what every
  // confirmation of a ticket type waits for (see place-order.ts).
  await moveAllThenCommit(tx, lines, 'sell');
  await written;
  await recorded;
  return passes;
}

/** POST /live/sales/orders/{id}/confirm: a server holding a secret key of the order's channel confirms it directly. */
export async function confirmOrderWithSecretKey(ctx: RequestContext, orderId: string): Promise<Order> {
  const principal = channelOf(ctx);
  // docs/spec/contract.md: a credential without the route's scope is 404 (FORBIDDEN is for signed-in staff).
  if (principal.keyKind !== 'secret') {
    throw new AppError(
      'NOT_FOUND',
      'Confirming an order takes a secret key (svsk_), on a server; publishable keys pay on the hosted checkout.',
    );
  }
  const order = await ctx.db.order.findFirst({ where: { id: orderId, channelId: principal.channelId } });
  if (!order) throw AppError.notFound('Order not found.');
  return confirmOrder(ctx.runtime, order.organisationId, order.id, { method: 'server_confirmation' });
}
