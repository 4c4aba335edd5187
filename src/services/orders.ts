import { randomInt } from 'node:crypto';
import { z } from 'zod';
import { channelOf, type RequestContext } from '../context.ts';
import type { Database } from '../db/client.ts';
import type { TenantDatabase } from '../db/tenant.ts';
import { AppError } from '../errors.ts';
import type { Order, Prisma } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import type { Logger } from '../log.ts';
import type { Mailer } from '../mail/mailer.ts';
import { views } from '../webhooks/payloads.ts';
import { withWebhooks, withWebhooksSql, type WebhookBatchRecorder } from '../webhooks/record.ts';
import { tenantSql, type TenantStatements, type TransactionStatements } from '../db/sql.ts';
import { tenantDatabase } from '../db/tenant.ts';
import type { WebhookDispatcher } from '../webhooks/dispatcher.ts';
import { paginate, type RawPageArgs } from '../pagination.ts';
import { type Raw } from '../validation.ts';
import { authorised, readableAccounts } from './access.ts';
import { lockOrder, move, moveAllThenCommit, type Tx } from './inventory.ts';
import { validate } from '../validation.ts';
import { runPeriodically } from '../db/periodic.ts';
import { PAYABLE_EVENT_STATUSES } from './sellability.ts';
import { statusOf } from '../statuses.ts';
import { holdSweepCancellations } from '../metrics.ts';

/**
 * The order lifecycle after checkout (src/services/carts.ts creates pending orders):
 *
 *   pending --pay (hosted checkout) / confirm (secret key)--> confirmed --refund--> refunded
 *   pending --cancel (management) / hold expired--> cancelled
 *   confirmed --cancel (management)--> cancelled
 *
 * Every move is one transaction that changes the order only if it is still in the state the move
 * starts from (a conditional UPDATE), moves the inventory counters, and records its webhook; so two
 * concurrent moves of one order cannot both happen. Confirmation issues one pass (pas_) per ticket,
 * each with one entitlement (ent_) to its occurrence; cancelling or refunding a confirmed order
 * voids the passes not yet redeemed, so they can no longer be redeemed.
 *
 * Rights: `orders.read`; `orders.cancel`; `orders.refund`, on the order's account.
 */

const RESOURCE = 'orders';
const ORDER_NUMBER_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const PASS_CODE_ALPHABET = '23456789ABCDEFGHJKLMNPQRSTUVWXYZ';

/** An order's columns, as Prisma's Order has them. */
export const ORDER_COLUMNS = `o.id, o."organisationId", o."accountId", o."channelId", o."customerId", o."cartId", o."orderNumber",
  o.status::text AS status, o.currency, o."subtotalAmount", o."feeAmount", o."totalAmount", o."holdExpiresAt", o."clientKey",
  o."confirmedAt", o."cancelledAt", o."refundedAt", o."createdAt", o."updatedAt"`;

/** `SV-` and 8 Crockford base-32 characters: short enough to read out on the phone, unique per organisation. */
export function orderNumber(): string {
  let text = 'SV-';
  for (let i = 0; i < 8; i += 1) text += ORDER_NUMBER_ALPHABET[randomInt(ORDER_NUMBER_ALPHABET.length)];
  return text;
}

/** 16 characters without look-alikes (~80 bits): printed as a barcode, typed at a door when it fails. */
function passCode(): string {
  let text = '';
  for (let i = 0; i < 16; i += 1) text += PASS_CODE_ALPHABET[randomInt(PASS_CODE_ALPHABET.length)];
  return text;
}

/** The order's webhook view; `lines` are its line items, which every caller has loaded already. */
function orderPayload(order: Order, lines: readonly unknown[]) {
  return views.order({ ...order, lineItemCount: lines.length });
}

async function lineItemsOf(tx: Tx, order: Order) {
  return (tx as unknown as Database).orderLineItem.findMany({
    where: { organisationId: order.organisationId, orderId: order.id },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
  });
}

/** A payment try of the whole order total. */
function paymentOf(
  order: Order,
  attempt: { method: string; cardLast4: string | null; status: 'succeeded' | 'declined'; failureReason?: string },
) {
  return {
    id: newId('payment'),
    organisationId: order.organisationId,
    orderId: order.id,
    amount: order.totalAmount,
    currency: order.currency,
    ...attempt,
  };
}

interface Services {
  db: Database;
  dispatcher: Pick<WebhookDispatcher, 'dispatch'>;
  logger?: Logger;
  /** Sends the customer their tickets on confirmation, when present. */
  mailer?: Mailer;
}

// ---------------------------------------------------------------------------------------------
// Confirmation (hosted checkout, secret key) and payment attempts

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
      const [row] = await tx.rows<Order & { moved: boolean }>(move);
      if (!row) throw AppError.notFound('Order not found.');
      const { moved, ...order } = row;
      if (!moved) return { order, moved: false as const, passes: [] as IssuedPass[], customerEmail: null };
      // Checked under share locks, in this transaction: cancelling the occurrence (or the event,
      // the channel, the account) waits for this confirmation or is seen by it, never both missed.
      const { reason, lines, customerEmail } = await confirmationFacts(tx, order);
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

interface ConfirmedLine {
  id: string;
  ticketTypeId: string;
  occurrenceId: string;
  quantity: number;
  ticketTypeName: string;
  eventName: string;
  startsAt: string;
}

/** A pass as issued, with its line: what ticket.issued and the tickets' mail name. */
interface IssuedPass {
  id: string;
  organisationId: string;
  accountId: string;
  orderId: string;
  lineItemId: string;
  customerId: string;
  ticketTypeId: string;
  occurrenceId: string;
  code: string;
  status: 'issued';
  line: ConfirmedLine;
}

/**
 * What confirming `order` needs to know, in one statement: why it can no longer be sold (its
 * account was deleted, its channel turned off, or an occurrence or event of its lines cancelled,
 * deleted or taken off sale since checkout; read under FOR SHARE, so a concurrent change to those
 * rows waits), its lines, and the customer's email.
 */
async function confirmationFacts(
  tx: TenantStatements,
  order: Order,
): Promise<{ reason: string | null; lines: ConfirmedLine[]; customerEmail: string | null }> {
  const sql = tx.statement();
  const orderId = sql.param(order.id);
  sql.add(`SELECT
      (SELECT a."isDeleted" FROM accounts a WHERE a."organisationId" = $1 AND a.id = ${sql.param(order.accountId)} FOR SHARE) AS "accountDeleted",
      (SELECT c."isActive" FROM sales_channels c WHERE c."organisationId" = $1 AND c.id = ${sql.param(order.channelId)} FOR SHARE) AS "channelActive",
      (SELECT coalesce(json_agg(json_build_object('occurrenceStatus', s.occurrence_status, 'eventStatus', s.event_status, 'isDeleted', s.is_deleted)), '[]')
         FROM (SELECT o.status::text AS occurrence_status, e.status::text AS event_status, e."isDeleted" AS is_deleted
                 FROM order_line_items li
                 JOIN event_occurrences o ON o."organisationId" = li."organisationId" AND o.id = li."occurrenceId"
                 JOIN events e ON e."organisationId" = o."organisationId" AND e.id = o."eventId"
                WHERE li."organisationId" = $1 AND li."orderId" = ${orderId}
                  FOR SHARE OF o, e) s) AS shows,
      (SELECT coalesce(json_agg(json_build_object('id', li.id, 'ticketTypeId', li."ticketTypeId", 'occurrenceId', li."occurrenceId",
                'quantity', li.quantity, 'ticketTypeName', li."ticketTypeName", 'eventName', e.name, 'startsAt', o."startsAt") ORDER BY li."createdAt", li.id), '[]')
         FROM order_line_items li
         JOIN event_occurrences o ON o."organisationId" = li."organisationId" AND o.id = li."occurrenceId"
         JOIN events e ON e."organisationId" = o."organisationId" AND e.id = o."eventId"
        WHERE li."organisationId" = $1 AND li."orderId" = ${orderId}) AS lines,
      (SELECT cu.email FROM customers cu WHERE cu."organisationId" = $1 AND cu.id = ${sql.param(order.customerId)}) AS "customerEmail"`);
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
  if (order.channelId && facts.channelActive === false) return answer('the shop it was placed in has closed');
  for (const show of facts.shows) {
    if (show.occurrenceStatus !== 'scheduled') return answer('a performance in it was cancelled');
    if (show.isDeleted || !(PAYABLE_EVENT_STATUSES as readonly string[]).includes(show.eventStatus))
      return answer('an event in it is no longer on sale');
  }
  return answer(null);
}

/**
 * The confirmation itself, in the caller's transaction of hand-written statements: paid, passes
 * and entitlements issued (one statement), webhooks recorded (one), tickets sold (one per line).
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
  // confirmation of a ticket type waits for (see placeOrder in carts.ts).
  await moveAllThenCommit(tx, lines, 'sell');
  await written;
  await recorded;
  return passes;
}

/** The customer's tickets: one code per pass (also readable with a customer token, GET /live/sales/me/orders). */
async function mailTickets(mailer: Mailer, order: Order, email: string, passes: readonly IssuedPass[]): Promise<void> {
  await mailer.send({
    to: email,
    subject: `Your tickets, order ${order.orderNumber}`,
    text: [
      `Order ${order.orderNumber} is confirmed. Show these codes at the door:`,
      '',
      ...passes.map((p) => `${p.code}  ${p.line.eventName}, ${new Date(p.line.startsAt).toISOString()}, ${p.line.ticketTypeName}`),
    ].join('\n'),
    meta: { kind: 'tickets', orderId: order.id, passIds: passes.map((p) => p.id) },
  });
}

/**
 * A declined test payment: recorded, and the order stays pending (the page says why). At most
 * `max` per order, counted under the order's row lock so concurrent posts cannot pass it; answers
 * whether it was recorded.
 */
export async function recordDeclinedPayment(
  db: TenantDatabase,
  order: Order,
  cardLast4: string,
  reason: string,
  max: number,
): Promise<boolean> {
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT "id" FROM "orders" WHERE "organisationId" = ${order.organisationId} AND "id" = ${order.id} FOR UPDATE`;
    if ((await tx.payment.count({ where: { orderId: order.id, status: 'declined' } })) >= max) return false;
    await tx.payment.create({ data: paymentOf(order, { method: 'test_card', cardLast4, status: 'declined', failureReason: reason }) });
    return true;
  });
}

/** POST /live/sales/orders/{id}/confirm: a server holding a secret key of the order's channel confirms it directly. */
export async function confirmOrderWithSecretKey(ctx: RequestContext, orderId: string): Promise<Order> {
  const principal = channelOf(ctx);
  // ../shared/spec/contract.md: a credential without the route's scope is 404 (FORBIDDEN is for signed-in staff).
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

// ---------------------------------------------------------------------------------------------
// Hold expiry, cancel, refund

/**
 * Cancels pending orders whose hold ran out and puts their tickets back on sale (order.cancelled),
 * up to `limit` at a time; answers how many. Run by every worker's sweep, and by a checkout that
 * finds too few tickets left before it gives up.
 */
export async function releaseExpiredHolds(
  services: Services,
  filter: { organisationId?: string; orderId?: string } = {},
  limit = 100,
): Promise<number> {
  const now = new Date();
  const expired = await services.db.order.findMany({
    where: {
      status: 'pending',
      holdExpiresAt: { lte: now },
      ...(filter.organisationId ? { organisationId: filter.organisationId } : {}),
      ...(filter.orderId ? { id: filter.orderId } : {}),
    },
    select: { id: true, organisationId: true },
    orderBy: { holdExpiresAt: 'asc' },
    take: limit,
  });
  let released = 0;
  for (const order of expired) {
    if (await cancelPending(services, order, { expiredBefore: now })) released += 1;
  }
  if (released > 0) {
    holdSweepCancellations.inc(released);
    services.logger?.info({ released }, 'released the holds of expired pending orders');
  }
  return released;
}

/**
 * Cancels a pending order and releases its held tickets (order.cancelled), if it is still pending
 * (and, with `expiredBefore`, its hold ran out by then). Answers whether it did.
 */
async function cancelPending(
  services: Services,
  target: { id: string; organisationId: string },
  when: { expiredBefore?: Date } = {},
): Promise<boolean> {
  const now = new Date();
  const { id, organisationId } = target;
  return withWebhooks(services.db, services.dispatcher, async (tx, webhooks) => {
    const moved = await tx.order.updateMany({
      where: { id, organisationId, status: 'pending', ...(when.expiredBefore ? { holdExpiresAt: { lte: when.expiredBefore } } : {}) },
      data: { status: 'cancelled', cancelledAt: now, holdExpiresAt: null },
    });
    if (moved.count !== 1) return false;
    const order = await tx.order.findFirstOrThrow({ where: { id, organisationId } });
    const lines = await lineItemsOf(tx, order);
    for (const line of lockOrder(lines)) await move(tx, organisationId, line, 'release');
    await webhooks.record({
      organisationId,
      accountId: order.accountId,
      type: 'order.cancelled',
      payload: orderPayload(order, lines),
    });
    return true;
  });
}

/**
 * Cancels the pending orders holding tickets of an event that stopped selling (cancelled, taken
 * back to draft, completed, deleted), releasing their holds at once (order.cancelled for each).
 * Each order is its own transaction; one left behind by a crash cannot be paid (confirmOrder
 * refuses it) and its hold expires anyway.
 */
export async function cancelPendingOrdersOfEvent(services: Services, organisationId: string, eventId: string): Promise<number> {
  const orders = await services.db.order.findMany({
    where: { organisationId, status: 'pending', lineItems: { some: { occurrence: { eventId } } } },
    select: { id: true, organisationId: true },
  });
  let cancelled = 0;
  for (const order of orders) if (await cancelPending(services, order)) cancelled += 1;
  return cancelled;
}

/** Periodic hold expiry for a worker process; stop() waits for a sweep in flight. */
export function startHoldSweep(services: Services, intervalMs = 15_000): { stop(): Promise<void> } {
  // Every worker runs the timer; one of them sweeps per period (src/db/periodic.ts).
  return runPeriodically(services.db, 'hold-sweep', intervalMs, () => releaseExpiredHolds(services), services.logger);
}

/** The order, if the caller may see it (else 404) and `action` it (else missingRight). */
async function loadOrder(ctx: RequestContext, id: string, action: 'read' | 'cancel' | 'refund'): Promise<Order> {
  return authorised(ctx, await ctx.db.order.findFirst({ where: { id, account: { isDeleted: false } } }), RESOURCE, action, 'Order');
}

export function getOrder(ctx: RequestContext, id: string): Promise<Order> {
  return loadOrder(ctx, id, 'read');
}

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
 * voided and their tickets go back on sale (redeemed ones stay sold); order.cancelled / order.refunded. Payments are test payments, so a
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
      // stays sold (or the occurrence would be sold twice over).
      const voided = await tx.pass.updateManyAndReturn({
        where: { orderId: order.id, status: 'issued' },
        data: { status: 'void' },
        select: { lineItemId: true },
      });
      const returned = lines.map((line) => ({ ...line, quantity: voided.filter((pass) => pass.lineItemId === line.id).length }));
      for (const line of lockOrder(returned)) if (line.quantity > 0) await move(tx, order.organisationId, line, 'return');
    }
    await webhooks.record({
      organisationId: order.organisationId,
      accountId: order.accountId,
      type: transition.webhook,
      payload: orderPayload(order, lines),
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

// ---------------------------------------------------------------------------------------------
// Lists

export const listOrdersFilters = z.object({
  status: statusOf('order').nullish(),
  customerId: z.string().min(1).max(100).nullish(),
  accountId: z.string().min(1).max(100).nullish(),
  channelId: z.string().min(1).max(100).nullish(),
});

/** Orders on the accounts the caller may read, newest first, with filters. */
export async function listOrders(ctx: RequestContext, args: RawPageArgs & Raw<z.input<typeof listOrdersFilters>>) {
  const { page, limit, first, after, last, before, ...rawFilters } = args;
  const filters = validate(listOrdersFilters, rawFilters);
  const accountId = readableAccounts(ctx, RESOURCE, filters.accountId);
  const where: Prisma.OrderWhereInput = {
    account: { isDeleted: false },
    ...(accountId === undefined ? {} : { accountId }),
    ...(filters.status ? { status: filters.status } : {}),
    ...(filters.customerId ? { customerId: filters.customerId } : {}),
    ...(filters.channelId ? { channelId: filters.channelId } : {}),
  };
  return paginate(
    { page, limit, first, after, last, before },
    () => ctx.db.order.count({ where }),
    ({ skip, take }) => ctx.db.order.findMany({ where, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], skip, take }),
  );
}
