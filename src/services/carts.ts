import { z } from 'zod';
import { publicUrl } from '../config.ts';
import type { ChannelPrincipal, RequestContext } from '../context.ts';
import { isUniqueViolation } from '../db/client.ts';
import { AppError, type ValidationIssue } from '../errors.ts';
import type { Cart, Customer, Order, OrderLineItem, SalesChannel } from '../generated/prisma/client.ts';
import type { Statement, TenantStatements } from '../db/sql.ts';
import { newId } from '../ids.ts';
import { views } from '../webhooks/payloads.ts';
import { withWebhooksSql } from '../webhooks/record.ts';
import { sha256 } from '../auth/keys.ts';
import { clientBucket, tooMany } from '../limits/rate-limiter.ts';
import { capacityOf, holdAllThenCommit } from './inventory.ts';
import { LISTED_EVENT_STATUSES, salesClosed } from './sellability.ts';
import { channelOfKey, remaining } from './listings.ts';
import { ORDER_COLUMNS, orderNumber, releaseExpiredHolds } from './orders.ts';
import { validate } from '../validation.ts';
import { type Raw } from '../validation.ts';

/**
 * The storefront's carts and checkout (sales API, ../shared/spec/contract.md "Sales API").
 *
 * - A sales session (ses_) starts with the first cart of a browser; its id is answered in
 *   X-Live-Session and a `live_session` cookie (for hosted pages) and sent back the same way.
 *   A cart is reachable with its session only: a publishable key lives in browsers, so a cart id
 *   seen elsewhere (a log, a shared link) is not enough. A secret key (a server) may reach any cart
 *   of its channel.
 * - Carts hold no tickets: they are checked against availability when changed, and tickets are
 *   held only by checkout, which turns the cart into a pending order (prices frozen) whose tickets
 *   are held for ORDER_HOLD_TTL. Paying confirms it (src/services/orders.ts).
 * - What a cart may hold: occurrences still to come of the channel's published or on-sale events,
 *   inside the event's on/off-sale dates and the ticket type's sales window, at most maxPerOrder
 *   of a type, one currency per cart.
 */

export const SESSION_TTL_MS = 24 * 60 * 60 * 1000;
export const CART_TTL_MS = 24 * 60 * 60 * 1000;
const MAX_LINES = 50;
const MAX_QUANTITY = 100;

const itemInput = z.strictObject({
  occurrenceId: z.string().min(1).max(100),
  ticketTypeId: z.string().min(1).max(100),
  quantity: z.number().int().min(1).max(MAX_QUANTITY),
});
const itemsInput = z
  .array(itemInput)
  .max(MAX_LINES)
  .superRefine((items, ctx) => {
    const seen = new Set<string>();
    items.forEach((item, index) => {
      const key = `${item.occurrenceId}|${item.ticketTypeId}`;
      if (seen.has(key))
        ctx.addIssue({
          code: 'custom',
          path: [index],
          message: 'The same occurrence and ticket type twice; give one line with the total quantity.',
        });
      seen.add(key);
    });
  });
export const createCartInput = z.strictObject({ items: itemsInput.nullish() });
export const updateCartInput = z.strictObject({ items: itemsInput });
export const checkoutCartInput = z.strictObject({
  /** Optional for a signed-in shopper (customer token beside the key): then they buy. */
  customer: z
    .strictObject({
      email: z
        .email()
        .max(254)
        .transform((email) => email.toLowerCase()),
      firstName: z.string().trim().min(1).max(100).nullish(),
      lastName: z.string().trim().min(1).max(100).nullish(),
    })
    .nullish(),
});

export type CartItemInput = z.input<typeof itemInput>;

/**
 * The order a checkout answered, in the shape Prisma would load for `query` (what the GraphQL
 * selection asks: the REST route's is lines, passes and the line count), built from what the
 * checkout's transaction wrote instead of read back: a pending order just made has exactly these
 * lines and no passes. Null when the query asks for anything else (the customer, payments, other
 * counts), which is then loaded (issue 16: the reload was two Prisma statements and ~2 ms of CPU
 * per checkout).
 */
export function checkedOutOrder(
  query: unknown,
  checkout: { order: Order; lineItems: readonly OrderLineItem[] },
): (Order & Record<string, unknown>) | null {
  const include = onlyKeys(query, ['include']) ? (query as { include?: unknown }).include : undefined;
  if (include === undefined || !onlyKeys(include, ['lineItems', 'passes', '_count'])) return null;
  const wanted = include as { lineItems?: unknown; passes?: unknown; _count?: unknown };
  const answer: Order & Record<string, unknown> = { ...checkout.order };
  if (wanted.lineItems !== undefined) {
    const lines = wanted.lineItems === true ? {} : wanted.lineItems;
    if (!onlyKeys(lines, ['orderBy', 'include'])) return null;
    const { orderBy, include: nested = {} } = lines as { orderBy?: unknown; include?: unknown };
    // A line's own columns answer every OrderLineItem field; a relation asked of it is loaded.
    if (!onlyKeys(nested, [])) return null;
    if (orderBy !== undefined && JSON.stringify(orderBy) !== KNOWN.lineOrder) return null;
    // One createdAt for every line: the order is by id, as the database's would be.
    answer.lineItems = [...checkout.lineItems].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
  // Passes are issued on confirmation: a pending order has none, whatever their selection.
  if (wanted.passes !== undefined) answer.passes = [];
  if (wanted._count !== undefined) {
    if (JSON.stringify(wanted._count) !== KNOWN.count) return null;
    answer._count = { lineItems: checkout.lineItems.length };
  }
  return answer;
}

/** The parts of a query checkedOutOrder can answer, as JSON (the Order type's relation queries). */
const KNOWN = {
  lineOrder: JSON.stringify([{ createdAt: 'asc' }, { id: 'asc' }]),
  count: JSON.stringify({ select: { lineItems: true } }),
};

function onlyKeys(value: unknown, allowed: readonly string[]): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).every((key) => allowed.includes(key));
}

export interface PricedLine {
  occurrenceId: string;
  ticketTypeId: string;
  quantity: number;
  eventId: string;
  eventName: string;
  ticketTypeName: string;
  startsAt: Date;
  unitAmount: number;
  totalAmount: number;
  currency: string;
  /** Catalogue capacity (null = unlimited). */
  capacity: number | null;
  /** What remains now (null = unlimited). */
  available: number | null;
}

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

interface Appraisal {
  /** The lines that may be sold now, priced, in the order given. */
  lines: PricedLine[];
  /** Every line whose occurrence and ticket type exist, priced at today's price (what a stored cart shows). */
  shown: PricedLine[];
  /** Why lines are not for sale (400). */
  issues: ValidationIssue[];
  /** Lines wanting more tickets than remain (409). */
  shortages: ValidationIssue[];
}

/**
 * Prices and checks lines against the catalogue as it is now. Pending orders whose time ran out
 * still count as held until a sweep cancels them: when lines are short, that is done now for this
 * organisation, and the lines are looked at again once.
 */
async function appraise(
  ctx: RequestContext,
  channel: SalesChannel,
  items: readonly CartItemInput[] | { cartId: string },
  releaseHolds = true,
): Promise<Appraisal & { items: CartItemInput[] }> {
  if (!('cartId' in items) && items.length === 0) return { lines: [], shown: [], issues: [], shortages: [], items: [] };
  const now = new Date();
  const rows = await catalogueOf(ctx, channel, items);
  const given: CartItemInput[] = rows.map((row) => ({
    occurrenceId: row.itemOccurrenceId,
    ticketTypeId: row.itemTicketTypeId,
    quantity: row.quantity,
  }));
  const issues: ValidationIssue[] = [];
  const shortages: ValidationIssue[] = [];
  const lines: PricedLine[] = [];
  const shown: PricedLine[] = [];
  let currency: string | null = null;
  rows.forEach((row, index) => {
    const item = given[index]!;
    const at = `items.${index}`;
    const occurrence = row.occurrenceId === null ? null : row;
    const event = row.eventId === null ? null : row;
    const type =
      row.ticketTypeId === null
        ? null
        : {
            id: row.ticketTypeId,
            eventId: row.typeEventId!,
            isDeleted: row.typeDeleted!,
            maxPerOrder: row.maxPerOrder,
            currency: row.currency!,
            salesStartAt: row.salesStartAt,
            salesEndAt: row.salesEndAt,
          };
    const capacity = occurrence && type ? capacityOf({ capacity: row.occurrenceCapacity }, { capacity: row.typeCapacity }) : null;
    const line: PricedLine | null =
      occurrence && type
        ? {
            occurrenceId: row.occurrenceId!,
            ticketTypeId: type.id,
            quantity: item.quantity,
            eventId: row.eventId!,
            eventName: row.eventName!,
            ticketTypeName: row.ticketTypeName!,
            startsAt: row.startsAt!,
            unitAmount: row.priceAmount!,
            totalAmount: row.priceAmount! * item.quantity,
            currency: type.currency,
            capacity,
            available: remaining(capacity, row.held ?? 0, row.sold ?? 0),
          }
        : null;
    if (line) shown.push(line);
    const sold =
      occurrence &&
      event &&
      event.eventAccountId === channel.accountId &&
      !event.eventDeleted &&
      (LISTED_EVENT_STATUSES as readonly string[]).includes(event.eventStatus!) &&
      (channel.sellsAllEvents || event.listed);
    if (!occurrence || !event || !sold) {
      issues.push({ path: `${at}.occurrenceId`, message: 'No such occurrence on sale in this channel.' });
      return;
    }
    if (row.occurrenceStatus !== 'scheduled' || row.startsAt! <= now) {
      issues.push({ path: `${at}.occurrenceId`, message: 'This occurrence has started or was cancelled.' });
      return;
    }
    const eventClosed = salesClosed(event, { salesStartAt: null, salesEndAt: null }, now);
    if (eventClosed) {
      issues.push({ path: `${at}.${eventClosed.field}`, message: eventClosed.message });
      return;
    }
    if (!type || !line || type.isDeleted || type.eventId !== row.eventId) {
      issues.push({ path: `${at}.ticketTypeId`, message: "Not a ticket type of this occurrence's event." });
      return;
    }
    const closed = salesClosed(event, type, now);
    if (closed) {
      issues.push({ path: `${at}.${closed.field}`, message: closed.message });
      return;
    }
    if (type.maxPerOrder !== null && item.quantity > type.maxPerOrder) {
      issues.push({ path: `${at}.quantity`, message: `At most ${type.maxPerOrder} of this ticket type per order.` });
      return;
    }
    if (currency !== null && type.currency !== currency) {
      issues.push({
        path: `${at}.ticketTypeId`,
        message: `A cart holds one currency; this line is in ${type.currency}, the cart in ${currency}.`,
      });
      return;
    }
    currency = type.currency;
    if (line.available !== null && item.quantity > line.available) {
      shortages.push({
        path: `${at}.quantity`,
        message: line.available === 0 ? 'Sold out.' : `Only ${line.available} left.`,
      });
    }
    lines.push(line);
  });
  if (issues.length === 0 && shortages.length > 0 && releaseHolds) {
    if ((await releaseExpiredHolds(ctx.runtime, { organisationId: channel.organisationId })) > 0)
      return appraise(ctx, channel, items, false);
  }
  return { lines, shown, issues, shortages, items: given };
}

interface CatalogueRow {
  itemOccurrenceId: string;
  itemTicketTypeId: string;
  quantity: number;
  occurrenceId: string | null;
  occurrenceStatus: string | null;
  startsAt: Date | null;
  occurrenceCapacity: number | null;
  eventId: string | null;
  eventName: string | null;
  eventAccountId: string | null;
  eventDeleted: boolean | null;
  eventStatus: string | null;
  onSaleDate: Date | null;
  offSaleDate: Date | null;
  listed: boolean;
  ticketTypeId: string | null;
  ticketTypeName: string | null;
  typeEventId: string | null;
  typeDeleted: boolean | null;
  priceAmount: number | null;
  currency: string | null;
  typeCapacity: number | null;
  maxPerOrder: number | null;
  salesStartAt: Date | null;
  salesEndAt: Date | null;
  held: number | null;
  sold: number | null;
}

/**
 * Each line (given, or a stored cart's in its order) with what the catalogue says of it now: its
 * occurrence, event (and whether the channel lists it), ticket type and inventory; one statement.
 * A line naming what does not exist (or is another organisation's) comes back with nulls.
 */
async function catalogueOf(
  ctx: RequestContext,
  channel: SalesChannel,
  items: readonly CartItemInput[] | { cartId: string },
): Promise<CatalogueRow[]> {
  const sql = ctx.sql.statement();
  const source = !('cartId' in items)
    ? `SELECT * FROM unnest(${sql.param(items.map((item) => item.occurrenceId))}::text[], ${sql.param(
        items.map((item) => item.ticketTypeId),
      )}::text[], ${sql.param(items.map((item) => item.quantity))}::int[]) WITH ORDINALITY AS i(occurrence_id, ticket_type_id, quantity, idx)`
    : `SELECT ci."occurrenceId" AS occurrence_id, ci."ticketTypeId" AS ticket_type_id, ci.quantity,
         row_number() OVER (ORDER BY ci."createdAt", ci.id) AS idx
         FROM cart_items ci WHERE ci."organisationId" = $1 AND ci."cartId" = ${sql.param(items.cartId)}`;
  sql.add(`SELECT i.occurrence_id AS "itemOccurrenceId", i.ticket_type_id AS "itemTicketTypeId", i.quantity,
      o.id AS "occurrenceId", o.status::text AS "occurrenceStatus", o."startsAt", o.capacity AS "occurrenceCapacity",
      e.id AS "eventId", e.name AS "eventName", e."accountId" AS "eventAccountId", e."isDeleted" AS "eventDeleted",
      e.status::text AS "eventStatus", e."onSaleDate", e."offSaleDate",
      EXISTS (SELECT 1 FROM sales_channel_events l
               WHERE l."organisationId" = $1 AND l."channelId" = ${sql.param(channel.id)} AND l."eventId" = e.id) AS listed,
      t.id AS "ticketTypeId", t.name AS "ticketTypeName", t."eventId" AS "typeEventId", t."isDeleted" AS "typeDeleted",
      t."priceAmount", t.currency, t.capacity AS "typeCapacity", t."maxPerOrder", t."salesStartAt", t."salesEndAt",
      inv.held, inv.sold
    FROM (${source}) i
    LEFT JOIN event_occurrences o ON o."organisationId" = $1 AND o.id = i.occurrence_id
    LEFT JOIN events e ON e."organisationId" = $1 AND e.id = o."eventId"
    LEFT JOIN ticket_types t ON t."organisationId" = $1 AND t.id = i.ticket_type_id
    LEFT JOIN inventories inv ON inv."organisationId" = $1 AND inv."ticketTypeId" = i.ticket_type_id AND inv."occurrenceId" = i.occurrence_id
    ORDER BY i.idx`);
  return ctx.sql.rows<CatalogueRow>(sql);
}

/** The lines, priced, when all may be sold now: else a 400 naming each field not for sale, or a 409 naming each line short of tickets. */
export async function priceLines(ctx: RequestContext, channel: SalesChannel, items: readonly CartItemInput[]): Promise<PricedLine[]> {
  const { lines, issues, shortages } = await appraise(ctx, channel, items);
  if (issues.length > 0) throw AppError.validation(issues);
  if (shortages.length > 0) throw soldOut(shortages);
  return lines;
}

function soldOut(details: ValidationIssue[]): AppError {
  return new AppError('CONFLICT', 'Not enough tickets remain for this cart.', details);
}

function cartView(cart: Cart, lines: PricedLine[], orderId: string | null): CartView {
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

/** Lines of a stored cart priced at today's catalogue, without refusing what is no longer for sale (reads never fail on it). */
async function storedLines(ctx: RequestContext, channel: SalesChannel, cart: Cart): Promise<PricedLine[]> {
  const { lines, shown, issues, shortages } = await appraise(ctx, channel, { cartId: cart.id });
  if (issues.length === 0 && shortages.length === 0) return lines;
  // Something went off sale or sold out since: show the lines at their current prices anyway,
  // without availability; changing or checking out the cart says what is wrong.
  return shown.map((line) => ({ ...line, available: null }));
}

/** A cart's columns, as Prisma's Cart has them. */
const CART_COLUMNS = `c.id, c."organisationId", c."accountId", c."channelId", c."sessionId", c.status::text AS status, c.currency,
  c."expiresAt", c."createdAt", c."updatedAt"`;

/**
 * The session named by the request when it is this channel's and still valid (renewed), else a
 * new one, as a statement's common table expression `session(id)`: the cart made with it commits
 * in the same statement.
 */
function sessionFor(ctx: RequestContext, sql: Statement, channel: SalesChannel, now: Date): string {
  const expiresAt = sql.param(new Date(now.getTime() + SESSION_TTL_MS));
  const at = sql.param(now);
  const channelId = sql.param(channel.id);
  return `renewed AS (
      UPDATE sales_sessions SET "lastSeenAt" = ${at}, "expiresAt" = ${expiresAt}
       WHERE "organisationId" = $1 AND id = ${sql.param(ctx.liveSessionId ?? null)} AND "channelId" = ${channelId} AND "expiresAt" > ${at}
      RETURNING id
    ), created AS (
      INSERT INTO sales_sessions ("organisationId", id, "accountId", "channelId", "expiresAt", "lastSeenAt")
      SELECT $1, ${sql.param(newId('salesSession'))}, ${sql.param(channel.accountId)}, ${channelId}, ${expiresAt}, ${at}
       WHERE NOT EXISTS (SELECT 1 FROM renewed)
      RETURNING id
    ), session AS (SELECT id FROM renewed UNION ALL SELECT id FROM created)`;
}

/** Answers the session in X-Live-Session and in the cookie hosted pages read. */
function announceSession(ctx: RequestContext, sessionId: string): void {
  ctx.setResponseHeader('X-Live-Session', sessionId);
  const secure = publicUrl(ctx.runtime.config).startsWith('https:') ? '; Secure' : '';
  ctx.setResponseHeader(
    'Set-Cookie',
    `live_session=${sessionId}; Path=/; Max-Age=${SESSION_TTL_MS / 1000}; HttpOnly; SameSite=Lax${secure}`,
  );
}

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
async function reachableCart(ctx: RequestContext, id: string): Promise<ReachedCart> {
  const { principal, channel } = await channelOfKey(ctx);
  const now = new Date();
  const sql = ctx.sql.statement();
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
  const [row] = await ctx.sql.rows<Cart & { renewed: boolean; orderId: string | null; pendingHolds: Date[] }>(sql);
  if (!row || (bySession && !row.renewed))
    throw AppError.notFound('Cart not found (a cart is reached with the X-Live-Session its creation answered).');
  const { renewed: _renewed, orderId, pendingHolds, ...cart } = row;
  return { cart, channel, principal, orderId, pendingHolds };
}

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

export async function getCart(ctx: RequestContext, id: string): Promise<CartView> {
  const { cart, channel, orderId } = await reachableCart(ctx, id);
  announceSession(ctx, cart.sessionId);
  return cartView(cart, await storedLines(ctx, channel, cart), orderId);
}

function assertOpen(cart: Cart): void {
  if (cart.status === 'checked_out') throw new AppError('CONFLICT', 'This cart was checked out; start a new cart.');
  if (cart.status === 'abandoned' || cart.expiresAt <= new Date()) throw new AppError('GONE', 'This cart expired; start a new cart.');
}

/** Replaces the cart's lines (an empty list empties it); checked against the catalogue and availability. */
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

export function checkoutUrl(ctx: RequestContext, orderId: string): string {
  return `${publicUrl(ctx.runtime.config)}/checkout/${orderId}`;
}

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

/** Successful checkouts per minute per publishable key and client address (IPv6: per /64). */
const CHECKOUTS_PER_MINUTE = 60;
/** Pending (unpaid, still held) orders one sales session may have at once. */
const MAX_PENDING_PER_SESSION = 5;

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
function checkoutBucket(ctx: RequestContext, principal: ChannelPrincipal): string | null {
  return principal.keyKind === 'secret' ? null : `${principal.channelKeyId}|${clientBucket(ctx.clientIp)}`;
}

async function assertMayCheckOut(ctx: RequestContext, principal: ChannelPrincipal, pendingHolds: readonly Date[]): Promise<void> {
  const bucket = checkoutBucket(ctx, principal);
  if (bucket === null) return;
  await ctx.runtime.rateLimiter.check('checkout', bucket, CHECKOUTS_PER_MINUTE, 60_000);
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
async function assertHoldRoom(
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

class ShortOfTickets extends Error {
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
async function placeOrder(
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

    if (clientKey !== null) await assertHoldRoom(tx, { clientKey, customerId: customer.id }, tickets, { perClient, perEmail });

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
    const [order] = await tx.rows<Order>(write);
    // Not waited for: the holds and the commit follow in the same flight (src/db/sql.ts's pipeline).
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
