import express, { type Request, type Response, type Router } from 'express';
import { tenantDatabase } from '../db/tenant.ts';
import { poolOf } from '../db/client.ts';
import type { Order } from '../generated/prisma/client.ts';
import { AppError } from '../errors.ts';
import { publicUrl } from '../config.ts';
import type { Runtime } from '../runtime.ts';
import { confirmOrder } from '../services/sales/confirm-order.ts';
import { releaseExpiredHolds } from '../services/sales/hold-sweep.ts';
import { ORDER_COLUMNS } from '../services/sales/order-rows.ts';
import { recordDeclinedPayment } from '../services/sales/record-declined-payment.ts';

/**
 * The hosted checkout page, `{checkout_url}/{orderId}` (docs/spec/contract.md): a plain server-rendered page
 * (no script) that shows a pending order and takes a test card. The order id in the URL is the
 * capability, as with hosted payment pages generally: ids carry ~131 random bits, the page shows
 * no personal data (not even the email), it can only pay the order, the request log shows the
 * path without the id, and posts from other sites are refused.
 *
 * Test cards (docs/spec/contract.md): 4242 4242 4242 4242 succeeds and confirms the order; 4000 0000 0000
 * 0002 is declined (the order stays pending and the page says why). Any other well-formed number
 * is declined as not a test card. Every try is recorded as a payment of the order.
 */

/** Declined tries one order may collect; then the page refuses more (card testing, row spam). */
const MAX_DECLINED = 10;

const SUCCEEDS = '4242424242424242';
const DECLINED = '4000000000000002';

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * Intl formatters by currency and by time zone, made once: building one costs more than the rest of
 * a line's rendering (the hosted page renders on every payment and confirmation). Both
 * sets are small and closed (ISO 4217 codes, IANA zones), so the maps stay bounded.
 */
const moneyFormats = new Map<string, { format: Intl.NumberFormat; digits: number }>();
const dateFormats = new Map<string, Intl.DateTimeFormat>();

function money(amount: number, currency: string): string {
  let known = moneyFormats.get(currency);
  if (!known) {
    const format = new Intl.NumberFormat('en', { style: 'currency', currency });
    known = { format, digits: format.resolvedOptions().maximumFractionDigits ?? 2 };
    moneyFormats.set(currency, known);
  }
  return known.format.format(amount / 10 ** known.digits);
}

function dateFormat(timeZone: string): Intl.DateTimeFormat {
  let format = dateFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone });
    dateFormats.set(timeZone, format);
  }
  return format;
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i += 1) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

const ORDER_ID = /^ord_[0-9A-Za-z]{22}$/;

interface LoadedOrder extends Order {
  channel: { name: string } | null;
  lineItems: Array<{
    quantity: number;
    unitAmount: number;
    currency: string;
    ticketType: { name: string };
    occurrence: { startsAt: Date; timezone: string; event: { name: string } };
  }>;
  _count: { passes: number };
  /** Declined payment tries so far. */
  declined: number;
}

/**
 * The order of the page with what it shows, in one statement. A line shows the ticket type's name
 * it was bought under (stored on the line), as the API's order and the confirmation mail do. The
 * one cross-organisation read of this page: the order id names its organisation, and every other
 * row is read in that organisation.
 */
async function loadOrder(runtime: Runtime, orderId: string) {
  if (!ORDER_ID.test(orderId)) return null;
  const result = await poolOf(runtime.db).query<LoadedOrder & { lineItems: Array<{ occurrence: { startsAt: string } }> }>({
    name: 'checkout_page_order',
    text: `SELECT ${ORDER_COLUMNS},
        (SELECT json_build_object('name', c.name) FROM sales_channels c WHERE c."organisationId" = o."organisationId" AND c.id = o."channelId") AS channel,
        (SELECT coalesce(json_agg(json_build_object('quantity', li.quantity, 'unitAmount', li."unitAmount", 'currency', li.currency,
                  'ticketType', json_build_object('name', li."ticketTypeName"),
                  'occurrence', json_build_object('startsAt', oc."startsAt", 'timezone', oc.timezone, 'event', json_build_object('name', e.name)))
                  ORDER BY li."createdAt", li.id), '[]')
           FROM order_line_items li
           JOIN event_occurrences oc ON oc."organisationId" = li."organisationId" AND oc.id = li."occurrenceId"
           JOIN events e ON e."organisationId" = oc."organisationId" AND e.id = oc."eventId"
          WHERE li."organisationId" = o."organisationId" AND li."orderId" = o.id) AS "lineItems",
        json_build_object('passes', (SELECT count(*) FROM passes p WHERE p."organisationId" = o."organisationId" AND p."orderId" = o.id)) AS "_count",
        (SELECT count(*)::int FROM payments p WHERE p."organisationId" = o."organisationId" AND p."orderId" = o.id AND p.status = 'declined') AS declined
      FROM orders o WHERE o.id = $1`,
    values: [orderId],
  });
  const row = result.rows[0];
  if (!row) return null;
  const order: LoadedOrder = {
    ...row,
    lineItems: row.lineItems.map((line) => ({ ...line, occurrence: { ...line.occurrence, startsAt: new Date(line.occurrence.startsAt) } })),
  };
  return { order, db: tenantDatabase(runtime.db, order.organisationId), testPayments: runtime.config.TEST_PAYMENTS };
}

type Loaded = NonNullable<Awaited<ReturnType<typeof loadOrder>>>;

interface FormState {
  message?: string;
  tone?: 'error' | 'ok';
  fields?: Record<string, string>;
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 34rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; }
  table { width: 100%; border-collapse: collapse; margin: 1rem 0; }
  td, th { padding: .4rem 0; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
  td.amount, th.amount { text-align: right; }
  label { display: block; margin: .8rem 0 .2rem; font-weight: 600; }
  input { width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; }
  .row { display: flex; gap: 1rem; } .row > div { flex: 1; }
  button { margin-top: 1.2rem; width: 100%; padding: .7rem; font: inherit; font-weight: 600; background: #1d4ed8; color: #fff; border: 0; border-radius: .3rem; }
  .error { background: #fde8e8; color: #9b1c1c; padding: .7rem; border-radius: .3rem; }
  .ok { background: #def7ec; color: #03543f; padding: .7rem; border-radius: .3rem; }
  .muted { color: #6b7280; font-size: .9rem; }
</style>
</head>
<body>
${body}
</body>
</html>`;
}

function summary({ order }: Loaded): string {
  const rows = order.lineItems
    .map((line) => {
      const when = dateFormat(line.occurrence.timezone).format(line.occurrence.startsAt);
      return `<tr><td>${escape(line.occurrence.event.name)}<br><span class="muted">${escape(when)} · ${escape(line.ticketType.name)}</span></td><td class="amount">${line.quantity} × ${escape(money(line.unitAmount, line.currency))}</td></tr>`;
    })
    .join('\n');
  return `<h1>${escape(order.channel?.name ?? 'Checkout')}</h1>
<p>Order <strong data-testid="order-number">${escape(order.orderNumber)}</strong></p>
<table>
<thead><tr><th>Tickets</th><th class="amount">Price</th></tr></thead>
<tbody>
${rows}
<tr><th>Total</th><th class="amount" data-testid="total">${escape(money(order.totalAmount, order.currency))}</th></tr>
</tbody>
</table>`;
}

function render(loaded: Loaded, state: FormState = {}): string {
  const { order } = loaded;
  const notice = state.message ? `<p class="${state.tone ?? 'error'}" role="alert" data-testid="notice">${escape(state.message)}</p>` : '';
  if (order.status === 'confirmed') {
    return page(
      'Paid',
      `${summary(loaded)}<p class="ok" role="status" data-testid="status">Payment received. Order ${escape(order.orderNumber)} is confirmed: ${order._count.passes} ticket(s) issued and sent to your email address.</p>`,
    );
  }
  if (order.status !== 'pending') {
    return page(
      'Order closed',
      `${summary(loaded)}${notice}<p class="error" role="status" data-testid="status">This order was ${escape(order.status)}; it can no longer be paid.</p>`,
    );
  }
  if (order.holdExpiresAt && order.holdExpiresAt <= new Date()) {
    return page(
      'Time ran out',
      `${summary(loaded)}<p class="error" role="status" data-testid="status">The tickets of this order were held until ${escape(order.holdExpiresAt.toISOString())}; the time ran out. Please check out again.</p>`,
    );
  }
  const value = (name: string) => escape(state.fields?.[name] ?? '');
  return page(
    'Checkout',
    `${summary(loaded)}
${notice}
<form method="post" action="/checkout/${escape(order.id)}" novalidate>
  <label for="name">Name on card</label>
  <input id="name" name="name" autocomplete="cc-name" value="${value('name')}">
  <label for="cardNumber">Card number</label>
  <input id="cardNumber" name="cardNumber" inputmode="numeric" autocomplete="cc-number" placeholder="4242 4242 4242 4242" value="${value('cardNumber')}">
  <div class="row">
    <div><label for="expiry">Expiry (MM/YY)</label><input id="expiry" name="expiry" autocomplete="cc-exp" placeholder="12/30" value="${value('expiry')}"></div>
    <div><label for="cvc">CVC</label><input id="cvc" name="cvc" inputmode="numeric" autocomplete="cc-csc" placeholder="123" value="${value('cvc')}"></div>
  </div>
  <button type="submit">Pay ${escape(money(order.totalAmount, order.currency))}</button>
</form>
<p class="muted">Tickets are held until ${escape(order.holdExpiresAt?.toISOString() ?? '')}. ${
      loaded.testPayments
        ? 'Test mode: card 4242 4242 4242 4242 succeeds, 4000 0000 0000 0002 is declined.'
        : 'Card payments are not available on this installation.'
    }</p>`,
  );
}

/** Form problems, or null when the card is well formed. */
function checkCard(fields: Record<string, string>): string | null {
  const digits = (fields.cardNumber ?? '').replace(/[\s-]/g, '');
  if (!/^\d{12,19}$/.test(digits) || !luhn(digits)) return 'The card number is not valid.';
  const expiry = /^\s*(\d{1,2})\s*\/\s*(\d{2}|\d{4})\s*$/.exec(fields.expiry ?? '');
  if (!expiry) return 'The expiry date must be MM/YY.';
  const month = Number(expiry[1]);
  const year = Number(expiry[2]!.length === 2 ? `20${expiry[2]}` : expiry[2]);
  const now = new Date();
  if (month < 1 || month > 12 || year * 12 + month < now.getUTCFullYear() * 12 + now.getUTCMonth() + 1) return 'The card has expired.';
  if (!/^\d{3,4}$/.test((fields.cvc ?? '').trim())) return 'The CVC must be 3 or 4 digits.';
  return null;
}

/**
 * The form posts to its own page; a post from another site is refused (Sec-Fetch-Site where the
 * browser sends it, else Origin). Clients sending neither (curl, old browsers) are let through:
 * the order id in the URL is the capability either way.
 */
function sameOrigin(req: Request, runtime: Runtime): boolean {
  const site = req.get('sec-fetch-site');
  if (site) return site === 'same-origin' || site === 'none';
  const origin = req.get('origin');
  // The page answers Referrer-Policy: no-referrer, with which older browsers send Origin: null on
  // its own form posts.
  if (!origin || origin === 'null') return true;
  try {
    const host = new URL(origin).host;
    return host === req.get('host') || host === new URL(publicUrl(runtime.config)).host;
  } catch {
    return false;
  }
}

function send(res: Response, status: number, html: string): void {
  res
    .status(status)
    .set({
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      'Content-Security-Policy':
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
    })
    .send(html);
}

function notFound(res: Response): void {
  send(res, 404, page('Not found', '<h1>Order not found</h1><p>Check the link you were given.</p>'));
}

export function createCheckoutRouter(runtime: Runtime): Router {
  const router = express.Router();
  router.use(express.urlencoded({ extended: false, limit: '16kb' }));

  router.get('/:orderId', async (req: Request<{ orderId: string }>, res: Response) => {
    const loaded = await loadOrder(runtime, req.params.orderId);
    if (!loaded) return notFound(res);
    send(res, 200, render(loaded));
  });

  router.post('/:orderId', async (req: Request<{ orderId: string }>, res: Response) => {
    const loaded = await loadOrder(runtime, req.params.orderId);
    if (!loaded) return notFound(res);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const fields = Object.fromEntries(
      ['name', 'cardNumber', 'expiry', 'cvc'].map((name) => [name, typeof body[name] === 'string' ? body[name].slice(0, 100) : '']),
    );
    if (!sameOrigin(req, runtime)) return send(res, 403, page('Refused', '<h1>Refused</h1><p>Pay from the checkout page itself.</p>'));
    if (loaded.order.status !== 'pending') return send(res, 409, render(loaded));
    if (loaded.order.holdExpiresAt && loaded.order.holdExpiresAt <= new Date()) {
      // Nothing to charge any more: the hold is released and no payment is recorded.
      await releaseExpiredHolds(runtime, { organisationId: loaded.order.organisationId, orderId: loaded.order.id });
      return send(res, 410, render((await loadOrder(runtime, loaded.order.id)) ?? loaded));
    }
    const tooManyDeclined = () =>
      send(res, 429, render(loaded, { message: 'Too many declined payments for this order. Check out again to start over.' }));
    if (loaded.order.declined >= MAX_DECLINED) return tooManyDeclined();
    const problem = checkCard(fields);
    // The CVC is never echoed back into the page.
    const echo = { ...fields, cvc: '' };
    if (problem) return send(res, 400, render(loaded, { message: problem, fields: echo }));
    // Test cards are the only payment method: with TEST_PAYMENTS off (production's default) nothing
    // can pay here, and nothing is recorded; the order stays pending until its hold ends.
    if (!runtime.config.TEST_PAYMENTS) {
      return send(
        res,
        503,
        render(loaded, {
          message: 'Card payments are not available: test payments are off on this installation (TEST_PAYMENTS).',
          fields: echo,
        }),
      );
    }
    const digits = fields.cardNumber!.replace(/[\s-]/g, '');
    const last4 = digits.slice(-4);
    if (digits !== SUCCEEDS) {
      const reason = digits === DECLINED ? 'card_declined' : 'not_a_test_card';
      if (!(await recordDeclinedPayment(loaded.db, loaded.order, last4, reason, MAX_DECLINED))) return tooManyDeclined();
      const message =
        reason === 'card_declined'
          ? 'Your card was declined. No payment was taken; try another card.'
          : 'This card cannot be used here: test mode takes the test cards only (4242 4242 4242 4242).';
      return send(res, 402, render(loaded, { message, fields: { ...echo, cardNumber: '' } }));
    }
    try {
      await confirmOrder(runtime, loaded.order.organisationId, loaded.order.id, { method: 'test_card', cardLast4: last4 });
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      const reloaded = await loadOrder(runtime, req.params.orderId);
      return send(res, error.status, render(reloaded ?? loaded, { message: error.message }));
    }
    // Post/redirect/get: a reload shows the paid order instead of posting again.
    res.redirect(303, `/checkout/${loaded.order.id}`);
  });

  return router;
}
