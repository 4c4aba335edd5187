import { randomBytes } from 'node:crypto';
import type { Worker } from '@temporalio/worker';
import type { Browser } from 'playwright-core';
import Stripe from 'stripe';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CURRENT_VERSION } from '../../src/versions.ts';
import { createWorker } from '../../workflows/worker.ts';
import { useTestApp } from '../support/app.ts';
import { launchBrowser } from '../support/browser.ts';
import { api, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { storefront } from '../support/sales.ts';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * The whole sales flow as its users meet it, every part real: an admin builds the catalogue over
 * /v1, a storefront lists, fills a cart and checks out over /live, the buyer pays on the hosted
 * checkout page in Chromium (a declined card first), a scanner redeems a pass, the admin refunds;
 * a second order is cancelled. A partner's endpoint receives every webhook through the Temporal
 * worker, verified with Stripe's library; a second endpoint pinned to 2025-10-01 gets the
 * down-transformed shapes.
 */

const app = useTestApp({ SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'), WEBHOOK_RETRY_SCHEDULE: '200ms,200ms' });
let org: TestOrganisation;
let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;
let browser: Browser;

beforeAll(async () => {
  ({ worker } = await createWorker({ config: app().config, db: app().runtime.db, logger: app().runtime.logger, prebundled: false }));
  running = worker.run();
  receiver = await startWebhookReceiver({ rejectUnverified: true });
  browser = await launchBrowser();
  org = await createOrganisation(app, 'e2e');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  worker?.shutdown();
  await running;
  await receiver?.close();
});

const ORDER_KEYS = [
  'id',
  'orderNumber',
  'status',
  'currency',
  'totalAmount',
  'subtotalAmount',
  'customerId',
  'accountId',
  'createdAt',
  'lineItemCount',
];

it('listing -> cart -> checkout -> pay in the browser -> passes -> redeem -> refund, with every webhook signed and shaped', async () => {
  const admin = { token: org.adminToken, org: org.slug };
  const accountId = org.account.id;

  // A partner subscribes to everything; a legacy integration pinned to 2025-10-01 to two types.
  const hook = await api(app, 'POST', '/v1/webhook-endpoints', {
    ...admin,
    body: { accountId, url: `${receiver.url}/hooks/partner`, description: 'partner' },
  });
  expect(hook.status).toBe(201);
  receiver.secrets.set('/hooks/partner', hook.body.secret);
  const legacy = await api(app, 'POST', '/v1/webhook-endpoints', {
    ...admin,
    body: { accountId, url: `${receiver.url}/hooks/legacy`, apiVersion: '2025-10-01', eventTypes: ['order.confirmed', 'ticket.issued'] },
  });
  expect(legacy.status).toBe(201);
  receiver.secrets.set('/hooks/legacy', legacy.body.secret);

  // The catalogue, over the management API.
  const event = (
    await api(app, 'POST', '/v1/events', {
      ...admin,
      body: { accountId, name: 'Summer Gala', timezone: 'Europe/London', status: 'on_sale' },
    })
  ).body.event;
  const day = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
  const occurrence = await api(app, 'POST', `/v1/events/${event.id}/occurrences`, {
    ...admin,
    body: { startDate: day, startTime: '19:30' },
  });
  expect(occurrence.status, JSON.stringify(occurrence.body)).toBe(201);
  const ticketType = await api(app, 'POST', `/v1/events/${event.id}/ticket-types`, {
    ...admin,
    body: { name: 'Stalls', priceAmount: 4250, currency: 'EUR', capacity: 100 },
  });
  expect(ticketType.status, JSON.stringify(ticketType.body)).toBe(201);
  const channel = (await api(app, 'POST', '/v1/sales-channels', { ...admin, body: { accountId, name: 'Gala shop', slug: 'gala-shop' } }))
    .body.salesChannel;
  const publishable = (await api(app, 'POST', `/v1/sales-channels/${channel.id}/keys`, { ...admin, body: { kind: 'publishable' } })).body
    .key;

  // The storefront.
  const shop = storefront(app, publishable);
  const listings = await shop.call('GET', '/sales/listings');
  expect(listings.status).toBe(200);
  const listed = listings.body.events.find((e: { id: string }) => e.id === event.id);
  const occurrenceId = listed.occurrences[0].id;
  const ticketTypeId = listed.ticketTypes[0].id;
  expect(listed.occurrences[0].availability).toEqual([{ ticketTypeId, available: 100 }]);
  const cart = await shop.call('POST', '/sales/carts', { items: [{ occurrenceId, ticketTypeId, quantity: 1 }] });
  expect(cart.status).toBe(201);
  const changed = await shop.call('PATCH', `/sales/carts/${cart.body.cart.id}`, { items: [{ occurrenceId, ticketTypeId, quantity: 2 }] });
  expect(changed.body.cart.totalAmount).toBe(8500);
  const checkout = await shop.call('POST', `/sales/carts/${cart.body.cart.id}/checkout`, {
    customer: { email: 'grace@buyer.test', firstName: 'Grace', lastName: 'Hopper' },
  });
  expect(checkout.status).toBe(201);
  const order = checkout.body.order;
  // Listings read within LISTINGS_SHARED_FOR of another request share its page: after that, the hold shows.
  await new Promise((resolve) => setTimeout(resolve, app().runtime.config.LISTINGS_SHARED_FOR + 50));
  expect(
    (await shop.call('GET', '/sales/listings')).body.events.find((e: { id: string }) => e.id === event.id).occurrences[0].availability[0]
      .available,
  ).toBe(98);

  // The buyer pays on the hosted checkout page: declined first, then the good card.
  const page = await browser.newPage();
  try {
    await page.goto(`${app().url}/checkout/${order.id}`);
    expect(await page.getByTestId('order-number').textContent()).toBe(order.orderNumber);
    expect(await page.getByTestId('total').textContent()).toBe('€85.00');
    await page.fill('#name', 'Grace Hopper');
    await page.fill('#cardNumber', '4000 0000 0000 0002');
    await page.fill('#expiry', '12/30');
    await page.fill('#cvc', '123');
    await page.click('button[type=submit]');
    expect(await page.getByTestId('notice').textContent()).toBe('Your card was declined. No payment was taken; try another card.');
    expect((await api(app, 'GET', `/v1/orders/${order.id}`, admin)).body.order).toMatchObject({
      status: 'pending',
      payments: [{ status: 'declined', cardLast4: '0002', failureReason: 'card_declined' }],
    });
    await page.fill('#cardNumber', '4242 4242 4242 4242');
    await page.fill('#cvc', '123');
    await page.click('button[type=submit]');
    await page.getByTestId('status').waitFor();
    expect(await page.getByTestId('status').textContent()).toContain(`Order ${order.orderNumber} is confirmed: 2 ticket(s) issued`);
    expect(page.url()).toBe(`${app().url}/checkout/${order.id}`);
  } finally {
    await page.close();
  }

  const paid = (await api(app, 'GET', `/v1/orders/${order.id}`, admin)).body.order;
  expect(paid).toMatchObject({
    status: 'confirmed',
    payments: [{ status: 'declined' }, { status: 'succeeded', method: 'test_card', cardLast4: '4242', amount: 8500 }],
  });
  expect(paid.passes).toHaveLength(2);

  // At the door: one pass scanned, a second scan refused.
  const scanned = await api(app, 'POST', '/v1/redemptions', { ...admin, body: { code: paid.passes[0].code } });
  expect(scanned.status).toBe(201);
  expect((await api(app, 'POST', '/v1/redemptions', { ...admin, body: { code: paid.passes[0].code } })).status).toBe(409);

  // Refunded: the other pass no longer admits.
  expect((await api(app, 'POST', `/v1/orders/${order.id}/refund`, admin)).body.order.status).toBe('refunded');
  expect((await api(app, 'POST', `/v1/passes/${paid.passes[1].id}/redeem`, admin)).status).toBe(409);

  // A second order from the same buyer, cancelled unpaid.
  const again = await shop.call('POST', '/sales/carts', { items: [{ occurrenceId, ticketTypeId, quantity: 1 }] });
  const second = (await shop.call('POST', `/sales/carts/${again.body.cart.id}/checkout`, { customer: { email: 'GRACE@buyer.test' } })).body
    .order;
  expect(second.customerId).toBe(order.customerId);
  const cancelled = await graphql(app, 'mutation($id: ID!) { cancelOrder(id: $id) { order { status } } }', { id: second.id }, admin);
  expect(cancelled.body.data.cancelOrder.order.status).toBe('CANCELLED');

  // Every webhook the partner expects, each once, signed, in the spec's shapes.
  const expected = [
    'event.created',
    'customer.created',
    'order.created',
    'order.confirmed',
    'ticket.issued',
    'ticket.redeemed',
    'order.refunded',
    'order.created',
    'order.cancelled',
  ];
  const received = await receiver.waitForRequests(expected.length, (r) => r.path === '/hooks/partner' && r.status === 200, 60_000);
  const bodies = received.map((r: ReceivedRequest) => {
    expect(r.verified, r.verificationError).toBe(true);
    const parsed = Stripe.webhooks.constructEvent(r.rawBody, String(r.headers['service-signature']), hook.body.secret) as unknown as Record<
      string,
      any
    >;
    expect(r.headers['service-delivery-id']).toBe(parsed.id);
    expect(String(r.headers['service-event-id'])).toMatch(/^wev_/);
    expect(parsed.version).toBe(CURRENT_VERSION);
    return parsed;
  });
  expect(bodies.map((b) => b.type).sort()).toEqual([...expected].sort());
  const of = (type: string) => bodies.filter((b) => b.type === type).map((b) => b.data);

  const customer = (await api(app, 'GET', `/v1/customers/${order.customerId}`, admin)).body.customer;
  expect(of('customer.created')).toEqual([
    {
      id: order.customerId,
      email: 'grace@buyer.test',
      firstName: 'Grace',
      lastName: 'Hopper',
      accountId,
      createdAt: customer.createdAt,
      sequence: 1,
    },
  ]);
  // At the current version each payload ends with its place among its object's events: an order's
  // order.* and ticket.* events share one count, in the order they happened.
  for (const type of ['order.created', 'order.confirmed', 'order.refunded', 'order.cancelled']) {
    for (const data of of(type)) expect(Object.keys(data)).toEqual([...ORDER_KEYS, 'sequence']);
  }
  expect(of('order.created')).toContainEqual({
    ...pick(order, ORDER_KEYS),
    status: 'pending',
    currency: 'EUR',
    totalAmount: 8500,
    subtotalAmount: 8500,
    lineItemCount: 1,
    sequence: 1,
  });
  expect(of('order.created')).toContainEqual(expect.objectContaining({ id: second.id, sequence: 1 }));
  expect(of('order.confirmed')).toEqual([expect.objectContaining({ id: order.id, status: 'confirmed', totalAmount: 8500, sequence: 2 })]);
  expect(of('order.refunded')).toEqual([expect.objectContaining({ id: order.id, status: 'refunded', sequence: 5 })]);
  expect(of('order.cancelled')).toEqual([expect.objectContaining({ id: second.id, status: 'cancelled', totalAmount: 4250, sequence: 2 })]);
  expect(of('ticket.issued')).toEqual([
    {
      orderId: order.id,
      accountId,
      passCount: 2,
      passes: paid.passes.map((p: any) => ({ id: p.id, ticketTypeId, occurrenceId, status: 'issued' })),
      sequence: 3,
    },
  ]);
  expect(of('ticket.redeemed')).toEqual([
    {
      redemptionId: scanned.body.redemption.id,
      passId: paid.passes[0].id,
      orderId: order.id,
      entitlementId: paid.passes[0].entitlementId,
      accountId,
      sequence: 4,
    },
  ]);

  // The legacy endpoint: its two types only, at its version.
  const legacyBodies = (await receiver.waitForRequests(2, (r) => r.path === '/hooks/legacy' && r.status === 200, 30_000)).map(
    (r) =>
      Stripe.webhooks.constructEvent(r.rawBody, String(r.headers['service-signature']), legacy.body.secret) as unknown as Record<
        string,
        any
      >,
  );
  const confirmedOld = legacyBodies.find((b) => b.type === 'order.confirmed')!;
  expect(confirmedOld.version).toBe('2025-10-01');
  expect(Object.keys(confirmedOld.data)).toEqual([
    'id',
    'orderNumber',
    'status',
    'currency',
    'totalAmount',
    'subtotalAmount',
    'customerId',
    'accountId',
    'createdAt',
  ]);
  const issuedOld = legacyBodies.find((b) => b.type === 'ticket.issued')!;
  expect(issuedOld.data).toEqual({ orderId: order.id, accountId, passCount: 2, passes: expect.any(Array) });
}, 120_000);

function pick(source: Record<string, unknown>, keys: string[]) {
  return Object.fromEntries(keys.map((key) => [key, source[key]]));
}
