import { z } from 'zod';
import { publicUrl } from '../config.ts';
import type { ChannelPrincipal, RequestContext } from '../context.ts';
import { isUniqueViolation } from '../db/client.ts';
import { AppError, type ValidationIssue } from '../errors.ts';
import type { Cart, Prisma, SalesChannel } from '../generated/prisma/client.ts';
import { newId } from '../ids.ts';
import { views } from '../webhooks/payloads.ts';
import { withWebhooks } from '../webhooks/record.ts';
import { sha256 } from '../auth/keys.ts';
import { clientBucket, tooMany } from '../limits/rate-limiter.ts';
import { capacityOf, hold, lockOrder } from './inventory.ts';
import { LISTED_EVENT_STATUSES, salesClosed } from './sellability.ts';
import { channelOfKey, remaining } from './listings.ts';
import { orderNumber, releaseExpiredHolds } from './orders.ts';
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
  items: readonly CartItemInput[],
  releaseHolds = true,
): Promise<Appraisal> {
  if (items.length === 0) return { lines: [], shown: [], issues: [], shortages: [] };
  const now = new Date();
  const [occurrences, ticketTypes] = await Promise.all([
    ctx.db.eventOccurrence.findMany({
      where: { id: { in: items.map((item) => item.occurrenceId) } },
      include: { event: { include: { channelListings: { where: { channelId: channel.id }, select: { eventId: true } } } } },
    }),
    ctx.db.ticketType.findMany({ where: { id: { in: items.map((item) => item.ticketTypeId) } } }),
  ]);
  const occurrenceById = new Map(occurrences.map((o) => [o.id, o]));
  const typeById = new Map(ticketTypes.map((t) => [t.id, t]));
  const inventories = await ctx.db.inventory.findMany({
    where: { OR: items.map((item) => ({ occurrenceId: item.occurrenceId, ticketTypeId: item.ticketTypeId })) },
    select: { occurrenceId: true, ticketTypeId: true, held: true, sold: true },
  });
  const inventoryOf = new Map(inventories.map((row) => [`${row.ticketTypeId}|${row.occurrenceId}`, row]));

  const issues: ValidationIssue[] = [];
  const shortages: ValidationIssue[] = [];
  const lines: PricedLine[] = [];
  const shown: PricedLine[] = [];
  let currency: string | null = null;
  items.forEach((item, index) => {
    const at = `items.${index}`;
    const occurrence = occurrenceById.get(item.occurrenceId);
    const event = occurrence?.event;
    const type = typeById.get(item.ticketTypeId);
    const capacity = occurrence && type ? capacityOf(occurrence, type) : null;
    const row = occurrence && type ? inventoryOf.get(`${type.id}|${occurrence.id}`) : undefined;
    const line: PricedLine | null =
      occurrence && type
        ? {
            occurrenceId: occurrence.id,
            ticketTypeId: type.id,
            quantity: item.quantity,
            eventId: occurrence.eventId,
            eventName: occurrence.event.name,
            ticketTypeName: type.name,
            startsAt: occurrence.startsAt,
            unitAmount: type.priceAmount,
            totalAmount: type.priceAmount * item.quantity,
            currency: type.currency,
            capacity,
            available: remaining(capacity, row?.held ?? 0, row?.sold ?? 0),
          }
        : null;
    if (line) shown.push(line);
    const sold =
      occurrence &&
      event &&
      event.accountId === channel.accountId &&
      !event.isDeleted &&
      LISTED_EVENT_STATUSES.includes(event.status) &&
      (channel.sellsAllEvents || event.channelListings.length > 0);
    if (!occurrence || !event || !sold) {
      issues.push({ path: `${at}.occurrenceId`, message: 'No such occurrence on sale in this channel.' });
      return;
    }
    if (occurrence.status !== 'scheduled' || occurrence.startsAt <= now) {
      issues.push({ path: `${at}.occurrenceId`, message: 'This occurrence has started or was cancelled.' });
      return;
    }
    const eventClosed = salesClosed(event, { salesStartAt: null, salesEndAt: null }, now);
    if (eventClosed) {
      issues.push({ path: `${at}.${eventClosed.field}`, message: eventClosed.message });
      return;
    }
    if (!type || !line || type.isDeleted || type.eventId !== event.id) {
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
  return { lines, shown, issues, shortages };
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
  const items = await ctx.db.cartItem.findMany({ where: { cartId: cart.id }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  const { lines, shown, issues, shortages } = await appraise(ctx, channel, items);
  if (issues.length === 0 && shortages.length === 0) return lines;
  // Something went off sale or sold out since: show the lines at their current prices anyway,
  // without availability; changing or checking out the cart says what is wrong.
  return shown.map((line) => ({ ...line, available: null }));
}

/** The session named by the request when it is this channel's and still valid; else a new one. */
async function sessionFor(ctx: RequestContext, channel: SalesChannel): Promise<string> {
  const now = new Date();
  const expiresAt = new Date(now.getTime() + SESSION_TTL_MS);
  if (ctx.liveSessionId) {
    const renewed = await ctx.db.salesSession.updateMany({
      where: { id: ctx.liveSessionId, channelId: channel.id, expiresAt: { gt: now } },
      data: { lastSeenAt: now, expiresAt },
    });
    if (renewed.count === 1) return ctx.liveSessionId;
  }
  const session = await ctx.db.salesSession.create({
    data: {
      id: newId('salesSession'),
      organisationId: channel.organisationId,
      accountId: channel.accountId,
      channelId: channel.id,
      expiresAt,
    },
  });
  return session.id;
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

/** A cart of the key's channel the request may reach (its session, or any with a secret key). */
async function reachableCart(ctx: RequestContext, id: string): Promise<{ cart: Cart; channel: SalesChannel; principal: ChannelPrincipal }> {
  const { principal, channel } = await channelOfKey(ctx);
  const cart = await ctx.db.cart.findFirst({ where: { id, channelId: channel.id } });
  const notFound = () => AppError.notFound('Cart not found (a cart is reached with the X-Live-Session its creation answered).');
  if (!cart) throw notFound();
  if (principal.keyKind !== 'secret') {
    if (cart.sessionId !== ctx.liveSessionId) throw notFound();
    // The session must still be alive; using it keeps it alive.
    const now = new Date();
    const renewed = await ctx.db.salesSession.updateMany({
      where: { id: cart.sessionId, channelId: channel.id, expiresAt: { gt: now } },
      data: { lastSeenAt: now, expiresAt: new Date(now.getTime() + SESSION_TTL_MS) },
    });
    if (renewed.count !== 1) throw notFound();
  }
  return { cart, channel, principal };
}

async function orderIdOf(ctx: RequestContext, cartId: string): Promise<string | null> {
  const order = await ctx.db.order.findFirst({ where: { cartId }, select: { id: true } });
  return order?.id ?? null;
}

export async function createCart(ctx: RequestContext, raw: Raw<z.input<typeof createCartInput>>): Promise<CartView> {
  const input = validate(createCartInput, raw);
  const { channel } = await channelOfKey(ctx);
  const lines = await priceLines(ctx, channel, input.items ?? []);
  const sessionId = await sessionFor(ctx, channel);
  const cartId = newId('cart');
  const cart = await ctx.db.$transaction(async (tx) => {
    const created = await tx.cart.create({
      data: {
        id: cartId,
        organisationId: channel.organisationId,
        accountId: channel.accountId,
        channelId: channel.id,
        sessionId,
        currency: lines[0]?.currency ?? null,
        expiresAt: new Date(Date.now() + CART_TTL_MS),
      },
    });
    if (lines.length > 0) {
      await tx.cartItem.createMany({
        data: lines.map((line) => ({
          id: newId('cartItem'),
          organisationId: channel.organisationId,
          cartId,
          occurrenceId: line.occurrenceId,
          ticketTypeId: line.ticketTypeId,
          quantity: line.quantity,
        })),
      });
    }
    return created;
  });
  announceSession(ctx, sessionId);
  return cartView(cart, lines, null);
}

export async function getCart(ctx: RequestContext, id: string): Promise<CartView> {
  const { cart, channel } = await reachableCart(ctx, id);
  announceSession(ctx, cart.sessionId);
  return cartView(cart, await storedLines(ctx, channel, cart), await orderIdOf(ctx, cart.id));
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
  const { cart, channel, principal } = await reachableCart(ctx, id);
  const buyer = input.customer ?? (principal.customerId ? { id: principal.customerId } : null);
  if (!buyer)
    throw AppError.validation([{ path: 'customer.email', message: 'Required (unless a customer token is sent beside the channel key).' }]);
  await assertMayCheckOut(ctx, principal, cart);
  assertOpen(cart);
  const items = await ctx.db.cartItem.findMany({ where: { cartId: cart.id }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  if (items.length === 0) throw AppError.validation([{ path: 'items', message: 'The cart is empty.' }]);
  const lines = await priceLines(ctx, channel, items);

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

async function assertMayCheckOut(ctx: RequestContext, principal: ChannelPrincipal, cart: Cart): Promise<void> {
  const bucket = checkoutBucket(ctx, principal);
  if (bucket === null) return;
  await ctx.runtime.rateLimiter.check('checkout', bucket, CHECKOUTS_PER_MINUTE, 60_000);
  const now = new Date();
  const pending = await ctx.db.order.findMany({
    where: { status: 'pending', holdExpiresAt: { gt: now }, cart: { sessionId: cart.sessionId } },
    select: { holdExpiresAt: true },
    orderBy: { holdExpiresAt: 'asc' },
    take: MAX_PENDING_PER_SESSION,
  });
  if (pending.length >= MAX_PENDING_PER_SESSION) {
    const seconds = Math.max(1, Math.ceil((pending[0]!.holdExpiresAt!.getTime() - now.getTime()) / 1000));
    throw tooMany(
      seconds,
      `${MAX_PENDING_PER_SESSION} orders of this session are waiting for payment; pay one, or wait until a hold ends.`,
    );
  }
}

type Tx = Parameters<Parameters<RequestContext['db']['$transaction']>[0]>[0];

/**
 * Refuses (429, Retry-After = until the earliest of those holds ends) when the tickets already held
 * by `holder`'s pending orders plus `adding` would exceed `limit`. Runs in the checkout's
 * transaction under a lock on the holder, so two checkouts of one client are counted one after
 * the other.
 */
async function assertHoldRoom(
  tx: Tx,
  holder: Prisma.OrderWhereInput,
  lockKey: string,
  adding: number,
  limit: number,
  whose: string,
): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`holds:${lockKey}`}))`;
  const now = new Date();
  const where: Prisma.OrderWhereInput = { ...holder, status: 'pending', holdExpiresAt: { gt: now } };
  const [held, earliest] = await Promise.all([
    tx.orderLineItem.aggregate({ where: { order: where }, _sum: { quantity: true } }),
    tx.order.aggregate({ where, _min: { holdExpiresAt: true } }),
  ]);
  const holding = held._sum.quantity ?? 0;
  if (holding + adding > limit) {
    const until = earliest._min.holdExpiresAt ?? new Date(now.getTime() + 60_000);
    throw tooMany(
      (until.getTime() - now.getTime()) / 1000,
      `At most ${limit} tickets may be held at once ${whose}; ${holding} are held by unpaid orders. Pay for one, or wait until a hold ends.`,
    );
  }
}

class ShortOfTickets extends Error {
  constructor(readonly line: PricedLine) {
    super('short of tickets');
  }
}

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
  const { order, customer } = await withWebhooks(ctx.db, ctx.runtime.dispatcher, async (tx, webhooks) => {
    // Closed only as it was read: a change committed meanwhile (another tab's PATCH) would make
    // the order differ from the cart the buyer last saw.
    const closed = await tx.cart.updateMany({
      where: { id: cart.id, status: 'open', updatedAt: cart.updatedAt },
      data: { status: 'checked_out' },
    });
    if (closed.count !== 1) {
      const now = await tx.cart.findFirst({ where: { id: cart.id }, select: { status: true } });
      throw new AppError(
        'CONFLICT',
        now?.status === 'open' ? 'The cart changed during checkout; look at it again and check out.' : 'This cart was checked out already.',
      );
    }

    let customer =
      'id' in buyer
        ? await tx.customer.findFirst({ where: { id: buyer.id, accountId: channel.accountId } })
        : await tx.customer.findFirst({ where: { accountId: channel.accountId, email: buyer.email } });
    if (!customer) {
      if ('id' in buyer) throw new AppError('UNAUTHENTICATED', 'The customer of this token no longer exists.');
      const customerInput = buyer;
      // A concurrent checkout with the same new email: the unique (accountId, email) index decides;
      // the loser's transaction fails and the caller retries against the winner's customer.
      customer = await tx.customer.create({
        data: {
          id: newId('customer'),
          organisationId,
          accountId: channel.accountId,
          email: customerInput.email,
          firstName: customerInput.firstName ?? null,
          lastName: customerInput.lastName ?? null,
        },
      });
      await webhooks.record({
        organisationId,
        accountId: channel.accountId,
        type: 'customer.created',
        payload: views.customer(customer),
      });
    }

    if (clientKey !== null) {
      await assertHoldRoom(tx, { clientKey }, clientKey, tickets, perClient, 'from one client address');
      await assertHoldRoom(tx, { customerId: customer.id }, customer.id, tickets, perEmail, 'for one customer email');
    }

    const subtotal = lines.reduce((sum, line) => sum + line.totalAmount, 0);
    const order = await tx.order.create({
      data: {
        id: newId('order'),
        organisationId,
        accountId: channel.accountId,
        channelId: channel.id,
        customerId: customer.id,
        cartId: cart.id,
        orderNumber: orderNumber(),
        status: 'pending',
        currency: lines[0]!.currency,
        subtotalAmount: subtotal,
        feeAmount: 0,
        totalAmount: subtotal,
        holdExpiresAt: new Date(Date.now() + holdTtl),
        clientKey,
      },
    });
    await tx.orderLineItem.createMany({
      data: lines.map((line) => ({
        id: newId('orderLineItem'),
        organisationId,
        orderId: order.id,
        ticketTypeId: line.ticketTypeId,
        occurrenceId: line.occurrenceId,
        quantity: line.quantity,
        unitAmount: line.unitAmount,
        totalAmount: line.totalAmount,
        currency: line.currency,
      })),
    });
    await tx.salesSession.updateMany({ where: { id: cart.sessionId }, data: { customerId: customer.id } });
    await webhooks.record({
      organisationId,
      accountId: channel.accountId,
      type: 'order.created',
      payload: views.order({ ...order, lineItemCount: lines.length }),
    });
    // The holds last: an inventory row is the one lock every buyer of a ticket type waits for, so
    // it is taken just before the commit, and held for as short a time as the transaction allows.
    for (const line of lockOrder(lines)) {
      if (!(await hold(tx, organisationId, line))) throw new ShortOfTickets(line);
    }
    return { order, customer };
  });
  return { order, customer, checkoutUrl: checkoutUrl(ctx, order.id) };
}
