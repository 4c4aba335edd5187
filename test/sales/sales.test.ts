import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { watchStatements } from '../../src/db/client.ts';
import { checkedOutOrder } from '../../src/services/sales/checked-out-order.ts';
import { startHoldSweep } from '../../src/services/sales/hold-sweep.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, staffWithRoles } from '../support/credentials.ts';
import { query, watchRoundTrips } from '../support/db.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { waitForMail } from '../support/mail.ts';
import { buy, cartLine, createCatalogue, createChannel, storefront, type Catalogue } from '../support/sales.ts';

const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'sales'), createOrganisation(app, 'rival')]);
});

async function inventory(c: Catalogue) {
  const [row] = await query<{ held: number; sold: number; capacity: number | null }>(
    app,
    `SELECT held, sold, capacity FROM inventories WHERE "ticketTypeId" = $1 AND "occurrenceId" = $2`,
    [c.ticketTypeId, c.occurrenceId],
  );
  return row ?? { held: 0, sold: 0, capacity: null };
}

async function sourceEvents(type: string, id: string) {
  return query<{ id: string; payload: Record<string, unknown> }>(
    app,
    `SELECT id, payload FROM webhook_events WHERE type = $1 AND (payload->>'id' = $2 OR payload->>'orderId' = $2 OR payload->>'passId' = $2) ORDER BY "createdAt"`,
    [type, id],
  );
}

describe('carts and sales sessions', () => {
  let catalogue: Catalogue;
  let channel: Awaited<ReturnType<typeof createChannel>>;
  beforeAll(async () => {
    catalogue = await createCatalogue(app, org, { capacity: 10, maxPerOrder: 6 });
    channel = await createChannel(app, org);
  });

  it('the first cart starts a session answered in X-Live-Session and a cookie; the session reaches the cart, nothing else does', async () => {
    const shop = storefront(app, channel.publishable);
    const created = await shop.call('POST', '/sales/carts', { items: [cartLine(catalogue, 2)] });
    expect(created.status).toBe(201);
    const session = created.headers.get('x-live-session');
    expect(session).toMatch(/^ses_/);
    expect(created.headers.get('set-cookie')).toMatch(
      new RegExp(`^live_session=${session}; Path=/; Max-Age=86400; HttpOnly; SameSite=Lax`),
    );
    expect(created.body.cart).toMatchObject({
      sessionId: session,
      status: 'open',
      currency: 'GBP',
      itemCount: 2,
      subtotalAmount: 5000,
      totalAmount: 5000,
      orderId: null,
      items: [
        { ...cartLine(catalogue, 2), eventId: catalogue.eventId, unitAmount: 2500, totalAmount: 5000, currency: 'GBP', available: 10 },
      ],
    });
    const id = created.body.cart.id;

    // Same session: a second cart keeps it; the cookie works like the header.
    const second = await shop.call('POST', '/sales/carts', {});
    expect(second.body.cart.sessionId).toBe(session);
    const byCookie = await api(app, 'GET', `/live/sales/carts/${id}`, {
      headers: { 'x-channel-key': channel.publishable, cookie: `live_session=${session}` },
    });
    expect(byCookie.status).toBe(200);
    expect(byCookie.body.cart.id).toBe(id);

    // Without the session, or with another session, a publishable key does not reach it.
    const stranger = await api(app, 'GET', `/live/sales/carts/${id}`, { headers: { 'x-channel-key': channel.publishable } });
    expect(stranger.status).toBe(404);
    const otherSession = storefront(app, channel.publishable);
    await otherSession.call('POST', '/sales/carts', {});
    expect((await otherSession.call('GET', `/sales/carts/${id}`)).status).toBe(404);
    // A server with the secret key does; a key of another channel does not.
    expect((await api(app, 'GET', `/live/sales/carts/${id}`, { headers: { 'x-channel-key': channel.secret } })).status).toBe(200);
    const elsewhere = await createChannel(app, org);
    expect((await api(app, 'GET', `/live/sales/carts/${id}`, { headers: { 'x-channel-key': elsewhere.secret } })).status).toBe(404);
    // An unknown or foreign session id starts a new session instead of joining it.
    const foreign = await api(app, 'POST', '/live/sales/carts', {
      body: {},
      headers: { 'x-channel-key': elsewhere.publishable, 'x-live-session': session! },
    });
    expect(foreign.status).toBe(201);
    expect(foreign.headers.get('x-live-session')).not.toBe(session);
  });

  it('PATCH replaces the lines; changes are checked against the catalogue (400) and availability (409)', async () => {
    const shop = storefront(app, channel.publishable);
    const id = (await shop.call('POST', '/sales/carts', {})).body.cart.id;
    const changed = await shop.call('PATCH', `/sales/carts/${id}`, { items: [cartLine(catalogue, 3)] });
    expect(changed.status).toBe(200);
    expect(changed.body.cart).toMatchObject({ itemCount: 3, totalAmount: 7500 });

    const draft = await createCatalogue(app, org, { status: 'draft' });
    const foreign = await createCatalogue(app, other);
    const elsewhereEvent = await createCatalogue(app, org);
    const cases: Array<[unknown, string]> = [
      [[{ ...cartLine(catalogue, 1), occurrenceId: 'eoc_missing' }], 'items.0.occurrenceId'],
      [[cartLine(draft, 1)], 'items.0.occurrenceId'],
      [[cartLine(foreign, 1)], 'items.0.occurrenceId'],
      [[{ ...cartLine(catalogue, 1), ticketTypeId: elsewhereEvent.ticketTypeId }], 'items.0.ticketTypeId'],
      [[cartLine(catalogue, 7)], 'items.0.quantity'],
      [[cartLine(catalogue, 0)], 'items.0.quantity'],
      [[cartLine(catalogue, 1), cartLine(catalogue, 2)], 'items.1'],
      [[{ ...cartLine(catalogue, 1), quantity: 'two' }], 'items.0.quantity'],
    ];
    for (const [items, path] of cases) {
      const res = await shop.call('PATCH', `/sales/carts/${id}`, { items });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    const tooMany = await createCatalogue(app, org, { capacity: 2 });
    const short = await shop.call('PATCH', `/sales/carts/${id}`, { items: [cartLine(tooMany, 3)] });
    expect(short.status).toBe(409);
    expect(short.body).toMatchObject({ code: 'CONFLICT', details: [{ path: 'items.0.quantity', message: 'Only 2 left.' }] });
    // Nothing of the refused changes stuck.
    expect((await shop.call('GET', `/sales/carts/${id}`)).body.cart.items).toEqual([expect.objectContaining(cartLine(catalogue, 3))]);
    // Empty list empties.
    expect((await shop.call('PATCH', `/sales/carts/${id}`, { items: [] })).body.cart).toMatchObject({
      items: [],
      itemCount: 0,
      currency: null,
    });
  });

  it('refuses ticket types outside their sales window and events past their off-sale date', async () => {
    const closed = await createCatalogue(app, org);
    await app().runtime.db.ticketType.update({ where: { id: closed.ticketTypeId }, data: { salesEndAt: new Date(Date.now() - 1000) } });
    const later = await createCatalogue(app, org);
    await app().runtime.db.event.update({ where: { id: later.eventId }, data: { onSaleDate: new Date(Date.now() + 3_600_000) } });
    const shop = storefront(app, channel.publishable);
    const a = await shop.call('POST', '/sales/carts', { items: [cartLine(closed, 1)] });
    expect(a.status).toBe(400);
    expect(a.body.details).toEqual([{ path: 'items.0.ticketTypeId', message: 'Sales of this ticket type have ended.' }]);
    const b = await shop.call('POST', '/sales/carts', { items: [cartLine(later, 1)] });
    expect(b.status).toBe(400);
    expect(b.body.details[0].message).toMatch(/^Sales for this event open at/);
  });

  it('the sales API refuses management credentials and management refuses channel keys', async () => {
    expect((await api(app, 'POST', '/live/sales/carts', { body: {}, token: org.adminToken })).status).toBe(401);
    expect((await api(app, 'POST', '/live/sales/carts', { body: {} })).status).toBe(401);
    expect((await api(app, 'GET', '/v1/orders', { token: channel.secret, org: org.slug })).status).toBe(401);
  });
});

describe('checkout holds tickets', () => {
  it("builds a checkout's answer from what it wrote only for the selection it knows; anything else is read from the database", () => {
    // The REST route's selection (see the next test for its answer against the database's) ...
    const known = {
      include: {
        lineItems: { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] },
        passes: { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], include: { entitlements: { take: 1, select: { id: true } } } },
        _count: { select: { lineItems: true } },
      },
    };
    const at = new Date();
    const line = (id: string) => ({
      id,
      organisationId: 'org_1',
      orderId: 'ord_1',
      ticketTypeId: 'tkt_1',
      occurrenceId: 'eoc_1',
      quantity: 1,
      unitAmount: 100,
      totalAmount: 100,
      currency: 'GBP',
      createdAt: at,
      eventId: 'evt_1',
      ticketTypeName: 'Standing',
    });
    const checkout = { order: { id: 'ord_1' } as never, lineItems: [line('oli_b'), line('oli_a')] };
    expect(checkedOutOrder(known, checkout)).toMatchObject({
      id: 'ord_1',
      lineItems: [
        { id: 'oli_a', eventId: 'evt_1' },
        { id: 'oli_b', ticketTypeName: 'Standing' },
      ],
      passes: [],
      _count: { lineItems: 2 },
    });
    // ... and nothing else: the customer, payments, another count or order are loaded instead.
    for (const other of [
      { include: { ...known.include, customer: true } },
      { include: { payments: true } },
      { include: { _count: { select: { passes: true } } } },
      { include: { lineItems: { orderBy: [{ id: 'desc' }] } } },
      { include: { lineItems: { include: { ticketType: true } } } },
      { select: { id: true } },
    ]) {
      expect(checkedOutOrder(other, checkout)).toBeNull();
    }
  });

  it('creates the customer (once per email) and a pending order; holds the tickets; records customer.created and order.created', async () => {
    const catalogue = await createCatalogue(app, org, { capacity: 10 });
    const channel = await createChannel(app, org);
    const shop = storefront(app, channel.publishable);
    const cart = (await shop.call('POST', '/sales/carts', { items: [cartLine(catalogue, 2)] })).body.cart;
    const requestId = `checkout-${randomBytes(4).toString('hex')}`;
    const sent: string[] = [];
    const stopSent = watchStatements(app().runtime.db, ({ text, requestId: id }) => id === requestId && sent.push(text));
    const { turns, stop: stopTurns } = watchRoundTrips(app, requestId);
    const stop = () => {
      stopSent();
      stopTurns();
    };
    const res = await shop
      .call(
        'POST',
        `/sales/carts/${cart.id}/checkout`,
        { customer: { email: 'Ada@Example.TEST', firstName: 'Ada', lastName: 'L' } },
        { 'x-request-id': requestId },
      )
      .finally(stop);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    // Four round trips: the cart, the minute's checkouts and the cart's lines against the catalogue
    // together; the cart closed and the customer found or made; the hold limits with the order; the
    // webhooks, the checkout counted and the holds with the commit.
    expect(turns, JSON.stringify(turns)).toHaveLength(4);
    expect(
      turns.map((turn) => turn.length),
      JSON.stringify(turns),
    ).toEqual([3, 2, 2, 4]);
    // The cart is read before its lines: a change to the cart between the two is then caught by the
    // transaction's check of the cart's updatedAt.
    expect(turns[0]![0], JSON.stringify(turns)).toMatch(/^WITH cart AS \( SELECT/);
    expect(turns[0]![2], JSON.stringify(turns)).toMatch(/ AS "itemOccurrenceId"/);
    // The lines it answers are the ones its transaction wrote: none is read back after the commit.
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.slice(sent.findIndex((text) => text.trim() === 'COMMIT') + 1).filter((text) => /order_line_items/.test(text))).toEqual([]);
    const order = res.body.order;
    expect(order).toMatchObject({
      status: 'pending',
      orderNumber: expect.stringMatching(/^SV-[0-9A-Z]{8}$/),
      accountId: org.account.id,
      channelId: channel.channelId,
      currency: 'GBP',
      subtotalAmount: 5000,
      totalAmount: 5000,
      lineItemCount: 1,
      lineItems: [{ ...cartLine(catalogue, 2), unitAmount: 2500, totalAmount: 5000 }],
      passes: [],
    });
    expect(res.body.checkoutUrl).toMatch(new RegExp(`/checkout/${order.id}$`));
    // The answer is built from what the checkout wrote (checkedOutOrder), not read back: it must be
    // what the database holds, field for field, as management reads it.
    expect((await api(app, 'GET', `/v1/orders/${order.id}`, asAdmin(org))).body.order).toMatchObject(order);
    expect(order.lineItems[0]).toMatchObject({ eventId: catalogue.eventId, ticketTypeName: 'General admission' });
    // A line keeps the ticket type's name it was bought under, as a receipt does.
    const renamed = await api(app, 'PATCH', `/v1/ticket-types/${catalogue.ticketTypeId}`, { ...asAdmin(org), body: { name: 'Standing' } });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    expect((await api(app, 'GET', `/v1/orders/${order.id}`, asAdmin(org))).body.order.lineItems[0]).toMatchObject({
      ticketTypeName: 'General admission',
    });
    const page = await (await fetch(`${app().url}/checkout/${order.id}`)).text();
    expect(page).toContain('General admission');
    expect(page).not.toContain('Standing');
    expect(new Date(order.holdExpiresAt).getTime() - Date.now()).toBeGreaterThan(14 * 60_000);
    expect(await inventory(catalogue)).toMatchObject({ held: 2, sold: 0, capacity: 10 });
    expect((await shop.call('GET', `/sales/carts/${cart.id}`)).body.cart).toMatchObject({ status: 'checked_out', orderId: order.id });
    const again = await shop.call('POST', `/sales/carts/${cart.id}/checkout`, { customer: { email: 'ada@example.test' } });
    expect(again.status).toBe(409);
    expect((await shop.call('PATCH', `/sales/carts/${cart.id}`, { items: [] })).status).toBe(409);

    // The storefront's answer names the customer by id only (a publishable key must not learn
    // who an email belongs to); management sees the record.
    expect(order).not.toHaveProperty('customer');
    const customer = (await api(app, 'GET', `/v1/customers/${order.customerId}`, asAdmin(org))).body.customer;
    expect(customer).toMatchObject({ email: 'ada@example.test', firstName: 'Ada', lastName: 'L' });
    const [customerCreated] = await sourceEvents('customer.created', order.customerId);
    expect(customerCreated!.payload).toEqual({
      id: order.customerId,
      email: 'ada@example.test',
      firstName: 'Ada',
      lastName: 'L',
      accountId: org.account.id,
      createdAt: customer.createdAt,
    });
    const [orderCreated] = await sourceEvents('order.created', order.id);
    expect(orderCreated!.payload).toEqual({
      id: order.id,
      orderNumber: order.orderNumber,
      status: 'pending',
      currency: 'GBP',
      totalAmount: 5000,
      subtotalAmount: 5000,
      customerId: order.customerId,
      accountId: org.account.id,
      createdAt: order.createdAt,
      lineItemCount: 1,
    });

    // The same email again (any case): the same customer, no second customer.created.
    const second = await buy(app, channel.publishable, catalogue, 1, 'ADA@example.test');
    expect(second.order.customerId).toBe(order.customerId);
    expect(await sourceEvents('customer.created', order.customerId)).toHaveLength(1);
    // The listing shows what remains.
    const listing = await api(app, 'GET', '/live/sales/listings', { headers: { 'x-channel-key': channel.publishable } });
    const occurrence = listing.body.events.find((e: { id: string }) => e.id === catalogue.eventId).occurrences[0];
    expect(occurrence.availability).toEqual([{ ticketTypeId: catalogue.ticketTypeId, available: 7 }]);
  });

  it("an administrator's rights stay cached while buyers become customers; a change of their users or roles is read again", async () => {
    const runtime = app().runtime;
    await expect.poll(() => runtime.notices.listening).toBe(true);
    const customerNotices: string[] = [];
    runtime.notices.subscribe({
      tables: new Set(['customers']),
      changed: (organisationId) => void (organisationId === org.organisation.id && customerNotices.push(organisationId)),
      forgetAll: () => undefined,
    });
    /** The statements an administrator's list request sends that read who they are in the organisation. */
    const rightsRead = async () => {
      const requestId = `rights-${randomBytes(4).toString('hex')}`;
      const sent: string[] = [];
      const stop = watchStatements(runtime.db, ({ text, requestId: id }) => id === requestId && sent.push(text));
      const res = await api(app, 'GET', '/v1/events?limit=1', { ...asAdmin(org), headers: { 'x-request-id': requestId } }).finally(stop);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return sent.filter((text) => /"role_assignments"/.test(text));
    };
    await rightsRead();
    const catalogue = await createCatalogue(app, org, { capacity: 5 });
    const shop = await createChannel(app, org);
    await buy(app, shop.publishable, catalogue, 1, `first-${randomBytes(3).toString('hex')}@example.test`);
    await expect.poll(() => customerNotices.length).toBeGreaterThan(0);
    // The notice of the new customer arrived: the rights are still served from the cache.
    expect(await rightsRead()).toEqual([]);
    // A change of the organisation's rights (what a role assignment's notice does) reads them again.
    runtime.authCache.changed(org.organisation.id, 'role_assignments');
    expect(await rightsRead()).toHaveLength(1);
  });

  it('never oversells: many concurrent checkouts at the last tickets hold exactly what remains', async () => {
    const catalogue = await createCatalogue(app, org, { capacity: 7 });
    const channel = await createChannel(app, org);
    // 16 shoppers with carts of 1 or 2 tickets (24 tickets wanted, 7 exist), all checking out at once.
    const shoppers = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const shop = storefront(app, channel.publishable);
        const cart = await shop.call('POST', '/sales/carts', { items: [cartLine(catalogue, 1 + (i % 2))] });
        expect(cart.status).toBe(201);
        return { shop, cartId: cart.body.cart.id as string, quantity: 1 + (i % 2), email: `buyer${i}@race.test` };
      }),
    );
    const results = await Promise.all(
      shoppers.map((s) => s.shop.call('POST', `/sales/carts/${s.cartId}/checkout`, { customer: { email: s.email } })),
    );
    const statuses = results.map((r) => r.status);
    expect(
      statuses.every((s) => s === 201 || s === 409),
      JSON.stringify(statuses),
    ).toBe(true);
    const heldByOrders = results.reduce((sum, r, i) => sum + (r.status === 201 ? shoppers[i]!.quantity : 0), 0);
    const { held, sold } = await inventory(catalogue);
    expect(held).toBe(heldByOrders);
    expect(sold).toBe(0);
    expect(held).toBeLessThanOrEqual(7);
    // The last ticket(s) went: at most one ticket can be left (a pair cannot take a single).
    expect(held).toBeGreaterThanOrEqual(6);
    const orders = await query<{ quantity: number }>(
      app,
      `SELECT li.quantity FROM order_line_items li JOIN orders o ON o.id = li."orderId" WHERE li."ticketTypeId" = $1 AND o.status = 'pending'`,
      [catalogue.ticketTypeId],
    );
    expect(orders.reduce((sum, o) => sum + o.quantity, 0)).toBe(held);
    // Refused checkouts left their carts open and created no order.
    const refused = results.filter((r) => r.status === 409);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]!.body.code).toBe('CONFLICT');
  });

  it('an expired hold gives its tickets back: to the next checkout, and the late payment is refused with 410', async () => {
    const catalogue = await createCatalogue(app, org, { capacity: 2 });
    const channel = await createChannel(app, org);
    const first = await buy(app, channel.publishable, catalogue, 2, 'slow@hold.test');
    const blocked = storefront(app, channel.publishable);
    // Held tickets count: nothing remains for another cart.
    expect((await blocked.call('POST', '/sales/carts', { items: [cartLine(catalogue, 1)] })).status).toBe(409);

    await app().runtime.db.order.update({ where: { id: first.order.id }, data: { holdExpiresAt: new Date(Date.now() - 1000) } });
    const second = await buy(app, channel.publishable, catalogue, 2, 'fast@hold.test');
    expect(second.order.status).toBe('pending');
    const expired = await api(app, 'GET', `/v1/orders/${first.order.id}`, asAdmin(org));
    expect(expired.body.order).toMatchObject({ status: 'cancelled', holdExpiresAt: null });
    expect(await sourceEvents('order.cancelled', first.order.id)).toHaveLength(1);
    expect(await inventory(catalogue)).toMatchObject({ held: 2, sold: 0 });

    await app().runtime.db.order.update({ where: { id: second.order.id }, data: { holdExpiresAt: new Date(Date.now() - 1000) } });
    const late = await api(app, 'POST', `/live/sales/orders/${second.order.id}/confirm`, {
      body: {},
      headers: { 'x-channel-key': channel.secret },
    });
    expect(late.status).toBe(410);
    expect(late.body.code).toBe('GONE');
    expect(await inventory(catalogue)).toMatchObject({ held: 0, sold: 0 });
  });
});

it('the worker sweep cancels pending orders whose hold ran out, without any request', async () => {
  const catalogue = await createCatalogue(app, org, { capacity: 3 });
  const channel = await createChannel(app, org);
  const { order } = await buy(app, channel.publishable, catalogue, 3, 'sweep@hold.test');
  await app().runtime.db.order.update({ where: { id: order.id }, data: { holdExpiresAt: new Date(Date.now() - 1000) } });
  const sweep = startHoldSweep({ db: app().runtime.db, dispatcher: app().runtime.dispatcher }, 50);
  try {
    for (let i = 0; i < 100 && (await inventory(catalogue)).held !== 0; i += 1) await new Promise((r) => setTimeout(r, 50));
  } finally {
    await sweep.stop();
  }
  expect(await inventory(catalogue)).toMatchObject({ held: 0, sold: 0 });
  expect((await api(app, 'GET', `/v1/orders/${order.id}`, asAdmin(org))).body.order.status).toBe('cancelled');
  expect(await sourceEvents('order.cancelled', order.id)).toHaveLength(1);
});

describe('confirmation, cancel, refund and redemption', () => {
  let catalogue: Catalogue;
  let channel: Awaited<ReturnType<typeof createChannel>>;
  beforeAll(async () => {
    catalogue = await createCatalogue(app, org, { capacity: 50 });
    channel = await createChannel(app, org);
  });
  const confirm = (orderId: string, key: string) =>
    api(app, 'POST', `/live/sales/orders/${orderId}/confirm`, { body: {}, headers: { 'x-channel-key': key } });

  it('a secret key confirms: tickets sold, one pass per ticket, order.confirmed and ticket.issued, and the tickets mailed', async () => {
    const { order } = await buy(app, channel.publishable, catalogue, 3, 'confirm@sales.test');
    const publishable = await confirm(order.id, channel.publishable);
    expect(publishable.status).toBe(404);
    expect(publishable.body.error).toMatch(/secret key/);
    const elsewhere = await createChannel(app, org);
    expect((await confirm(order.id, elsewhere.secret)).status).toBe(404);

    const before = await inventory(catalogue);
    const requestId = `confirm-${randomBytes(4).toString('hex')}`;
    const { turns, stop } = watchRoundTrips(app, requestId);
    const res = await api(app, 'POST', `/live/sales/orders/${order.id}/confirm`, {
      body: {},
      headers: { 'x-channel-key': channel.secret, 'x-request-id': requestId },
    }).finally(stop);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // The confirmation's transaction in two round trips: the order moved to confirmed with what
    // may stop its sale (read under share locks); then the payment, passes, webhooks and the
    // inventory with the commit.
    const begun = turns.findIndex((turn) => turn[0] === 'BEGIN');
    expect(turns[begun], JSON.stringify(turns)).toEqual([
      'BEGIN',
      expect.stringMatching(/^WITH moved AS \( UPDATE orders/),
      expect.stringMatching(/^SELECT \(SELECT a."isDeleted" FROM accounts/),
    ]);
    expect(turns[begun + 1]!.at(-1), JSON.stringify(turns)).toBe('COMMIT');
    expect(res.body.order).toMatchObject({ status: 'confirmed', holdExpiresAt: null, checkoutUrl: null });
    const passes = res.body.order.passes;
    expect(passes).toHaveLength(3);
    expect(new Set(passes.map((p: { code: string }) => p.code)).size).toBe(3);
    for (const pass of passes) {
      expect(pass).toMatchObject({
        id: expect.stringMatching(/^pas_/),
        status: 'issued',
        entitlementId: expect.stringMatching(/^ent_/),
        code: expect.stringMatching(/^[2-9A-Z]{16}$/),
      });
    }
    const afterConfirm = await inventory(catalogue);
    expect(afterConfirm).toMatchObject({ held: before.held - 3, sold: before.sold + 3 });
    expect((await confirm(order.id, channel.secret)).status).toBe(409);

    const [issued] = await sourceEvents('ticket.issued', order.id);
    expect(issued!.payload).toEqual({
      orderId: order.id,
      accountId: org.account.id,
      passCount: 3,
      passes: passes.map((p: any) => ({
        id: p.id,
        ticketTypeId: catalogue.ticketTypeId,
        occurrenceId: catalogue.occurrenceId,
        status: 'issued',
      })),
    });
    const [confirmed] = await sourceEvents('order.confirmed', order.id);
    expect(confirmed!.payload).toMatchObject({ id: order.id, status: 'confirmed', lineItemCount: 1 });
    const mail = await query<{ to: string; text: string }>(app, `SELECT "to", text FROM outbox_messages WHERE "to" = 'confirm@sales.test'`);
    expect(mail).toHaveLength(1);
    for (const pass of passes) expect(mail[0]!.text).toContain(pass.code);

    const payment = (await api(app, 'GET', `/v1/orders/${order.id}`, asAdmin(org))).body.order.payments;
    expect(payment).toEqual([
      expect.objectContaining({ method: 'server_confirmation', status: 'succeeded', amount: 7500, currency: 'GBP' }),
    ]);
  });

  it('redeems by id and by code once; a second scan, also a concurrent one, is refused with when it was redeemed', async () => {
    const { order } = await buy(app, channel.publishable, catalogue, 2, 'door@sales.test');
    const passes = (await confirm(order.id, channel.secret)).body.order.passes;
    const byId = await api(app, 'POST', `/v1/passes/${passes[0].id}/redeem`, asAdmin(org));
    expect(byId.status).toBe(201);
    expect(byId.body.redemption).toMatchObject({
      id: expect.stringMatching(/^red_/),
      passId: passes[0].id,
      entitlementId: passes[0].entitlementId,
      accountId: org.account.id,
    });
    const again = await api(app, 'POST', '/v1/redemptions', { ...asAdmin(org), body: { code: passes[0].code.toLowerCase() } });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe(`This pass was already redeemed at ${byId.body.redemption.redeemedAt}.`);

    const racing = await Promise.all([
      api(app, 'POST', '/v1/redemptions', { ...asAdmin(org), body: { code: passes[1].code } }),
      api(app, 'POST', `/v1/passes/${passes[1].id}/redeem`, asAdmin(org)),
      api(app, 'POST', '/v1/redemptions', { ...asAdmin(org), body: { code: `${passes[1].code.slice(0, 8)}-${passes[1].code.slice(8)}` } }),
    ]);
    expect(racing.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    const redemptions = await query(app, `SELECT id FROM redemptions WHERE "passId" = $1`, [passes[1].id]);
    expect(redemptions).toHaveLength(1);
    expect(await sourceEvents('ticket.redeemed', passes[1].id)).toHaveLength(1);

    const [redeemed] = await sourceEvents('ticket.redeemed', passes[0].id);
    expect(redeemed!.payload).toEqual({
      redemptionId: byId.body.redemption.id,
      passId: passes[0].id,
      orderId: order.id,
      entitlementId: passes[0].entitlementId,
      accountId: org.account.id,
    });
    const listed = await api(app, 'GET', `/v1/passes?orderId=${order.id}`, asAdmin(org));
    expect(listed.body.passes.map((p: any) => p.status)).toEqual(['redeemed', 'redeemed']);
    expect(listed.body.passes[0].redeemedAt).toBe(byId.body.redemption.redeemedAt);
    expect((await api(app, 'POST', '/v1/redemptions', { ...asAdmin(org), body: { code: 'NOSUCHCODE' } })).status).toBe(404);
    expect((await api(app, 'POST', '/v1/redemptions', { ...asAdmin(org), body: {} })).status).toBe(400);
  });

  it('tells a door scanner why a pass is refused, as a typed reason: redeemed before (and when), another occurrence, void', async () => {
    const { order } = await buy(app, channel.publishable, catalogue, 2, 'scanner@sales.test');
    const passes = (await confirm(order.id, channel.secret)).body.order.passes;
    const REDEEM = `mutation ($passId: ID, $occurrenceId: ID) {
      redeemPass(passId: $passId, occurrenceId: $occurrenceId) {
        redemption { redeemedAt }
        refusal { reason redeemedAt passOccurrenceId passOccurrence { id startsAt } }
        userErrors { code }
      }
    }`;
    const scan = async (variables: Record<string, string>) => (await graphql(app, REDEEM, variables, asAdmin(org))).body.data.redeemPass;
    const first = await scan({ passId: passes[0].id });
    expect(first.refusal).toBeNull();
    expect(await scan({ passId: passes[0].id })).toEqual({
      redemption: null,
      refusal: { reason: 'ALREADY_REDEEMED', redeemedAt: first.redemption.redeemedAt, passOccurrenceId: null, passOccurrence: null },
      userErrors: [{ code: 'CONFLICT' }],
    });
    expect((await scan({ passId: passes[1].id, occurrenceId: 'eoc_another' })).refusal).toEqual({
      reason: 'OTHER_OCCURRENCE',
      redeemedAt: null,
      passOccurrenceId: passes[1].occurrenceId,
      passOccurrence: { id: passes[1].occurrenceId, startsAt: expect.any(String) },
    });
    expect((await api(app, 'POST', `/v1/orders/${order.id}/refund`, asAdmin(org))).status).toBe(200);
    expect((await scan({ passId: passes[1].id })).refusal).toMatchObject({ reason: 'VOID' });
    // /v1 says the same in the refusal's details.
    const again = await api(app, 'POST', `/v1/passes/${passes[1].id}/redeem`, asAdmin(org));
    expect([again.status, again.body.details[0].reason]).toEqual([409, 'void']);
  });

  it('refund voids the passes (no longer redeemable) and returns the tickets; cancel releases a pending hold; wrong states are 409', async () => {
    const paid = await buy(app, channel.publishable, catalogue, 2, 'refund@sales.test');
    const passes = (await confirm(paid.order.id, channel.secret)).body.order.passes;
    const before = await inventory(catalogue);
    const refunded = await api(app, 'POST', `/v1/orders/${paid.order.id}/refund`, asAdmin(org));
    expect(refunded.status).toBe(200);
    expect(refunded.body.order).toMatchObject({ status: 'refunded', refundedAt: expect.any(String) });
    expect(refunded.body.order.passes.map((p: any) => p.status)).toEqual(['void', 'void']);
    expect(await inventory(catalogue)).toMatchObject({ held: before.held, sold: before.sold - 2 });
    const scan = await api(app, 'POST', `/v1/passes/${passes[0].id}/redeem`, asAdmin(org));
    expect(scan.status).toBe(409);
    expect(scan.body.error).toBe('This pass is void: its order was cancelled or refunded.');
    expect((await api(app, 'POST', `/v1/orders/${paid.order.id}/refund`, asAdmin(org))).status).toBe(409);
    expect((await api(app, 'POST', `/v1/orders/${paid.order.id}/cancel`, asAdmin(org))).status).toBe(409);
    const [refundEvent] = await sourceEvents('order.refunded', paid.order.id);
    expect(refundEvent!.payload).toMatchObject({ id: paid.order.id, status: 'refunded' });

    const pending = await buy(app, channel.publishable, catalogue, 4, 'cancel@sales.test');
    expect((await api(app, 'POST', `/v1/orders/${pending.order.id}/refund`, asAdmin(org))).body).toMatchObject({
      code: 'CONFLICT',
      error: 'This order is not paid; cancel it instead.',
    });
    const held = (await inventory(catalogue)).held;
    const cancelled = await graphql(
      app,
      'mutation($id: ID!) { cancelOrder(id: $id) { order { id status cancelledAt } } }',
      { id: pending.order.id },
      asAdmin(org),
    );
    expect(cancelled.body.data.cancelOrder.order).toMatchObject({ status: 'CANCELLED', cancelledAt: expect.any(String) });
    expect((await inventory(catalogue)).held).toBe(held - 4);
    expect(await sourceEvents('order.cancelled', pending.order.id)).toHaveLength(1);
    // A cancelled order cannot be paid.
    expect((await confirm(pending.order.id, channel.secret)).status).toBe(409);
  });

  it('rights: viewers read but cannot cancel; event managers scan; keys need the scope; other organisations see nothing', async () => {
    const { order } = await buy(app, channel.publishable, catalogue, 1, 'rights@sales.test');
    const pass = (await confirm(order.id, channel.secret)).body.order.passes[0];
    const viewer = await staffWithRoles(app, org, ['viewer'], org.account.id, 'viewer');
    const manager = await staffWithRoles(app, org, ['event_manager'], org.account.id, 'manager');
    const asViewer = { token: viewer.token, org: org.slug };
    expect((await api(app, 'GET', `/v1/orders/${order.id}`, asViewer)).status).toBe(200);
    expect((await api(app, 'POST', `/v1/orders/${order.id}/cancel`, asViewer)).status).toBe(403);
    expect((await api(app, 'POST', `/v1/orders/${order.id}/refund`, { token: manager.token, org: org.slug })).status).toBe(403);
    expect((await api(app, 'POST', `/v1/passes/${pass.id}/redeem`, asViewer)).status).toBe(403);
    expect((await api(app, 'POST', `/v1/passes/${pass.id}/redeem`, { token: manager.token, org: org.slug })).status).toBe(201);

    const key = (await api(app, 'POST', '/v1/api-keys', { ...asAdmin(org), body: { name: 'reader', scopes: ['orders.read'] } })).body.key;
    expect((await api(app, 'GET', `/v1/orders/${order.id}`, { token: key, org: org.slug })).status).toBe(200);
    expect((await api(app, 'POST', `/v1/orders/${order.id}/cancel`, { token: key, org: org.slug })).status).toBe(404);
    expect((await api(app, 'GET', `/v1/customers/${order.customerId}`, { token: key, org: org.slug })).status).toBe(404);

    // Another organisation's admin: every id is unknown, every list empty of ours.
    const rival = { token: other.adminToken, org: other.slug };
    for (const path of [`/v1/orders/${order.id}`, `/v1/customers/${order.customerId}`, `/v1/passes/${pass.id}`]) {
      expect((await api(app, 'GET', path, rival)).status).toBe(404);
    }
    expect((await api(app, 'POST', `/v1/orders/${order.id}/refund`, rival)).status).toBe(404);
    expect((await api(app, 'POST', '/v1/redemptions', { ...rival, body: { code: pass.code } })).status).toBe(404);
    expect((await api(app, 'GET', '/v1/orders', rival)).body.orders).toEqual([]);
    expect((await api(app, 'GET', '/v1/customers', rival)).body.customers).toEqual([]);
    expect((await api(app, 'GET', `/v1/passes?orderId=${order.id}`, rival)).body.passes).toEqual([]);
    // Our key against their organisation is an organisation mismatch.
    expect((await api(app, 'GET', '/v1/orders', { token: org.adminToken, org: other.slug })).status).toBe(403);
  });

  it('lists orders, customers and passes with filters', async () => {
    const account = await createAccount(app, org, 'Lists account');
    const elsewhere = await createCatalogue(app, org, { accountId: account.id });
    const otherChannel = await createChannel(app, org, account.id);
    const a = await buy(app, otherChannel.publishable, elsewhere, 1, 'list-a@sales.test');
    const b = await buy(app, otherChannel.publishable, elsewhere, 2, 'list-b@sales.test');
    await confirm(b.order.id, otherChannel.secret);

    const byAccount = await api(app, 'GET', `/v1/orders?accountId=${account.id}`, asAdmin(org));
    expect(byAccount.body.orders.map((o: any) => o.id)).toEqual([b.order.id, a.order.id]);
    expect(byAccount.body.pagination).toMatchObject({ total: 2, page: 1 });
    const confirmed = await api(app, 'GET', `/v1/orders?accountId=${account.id}&status=confirmed`, asAdmin(org));
    expect(confirmed.body.orders.map((o: any) => o.id)).toEqual([b.order.id]);
    const byCustomer = await api(app, 'GET', `/v1/orders?customerId=${a.order.customerId}`, asAdmin(org));
    expect(byCustomer.body.orders.map((o: any) => o.id)).toEqual([a.order.id]);
    expect((await api(app, 'GET', '/v1/orders?status=paid', asAdmin(org))).status).toBe(400);
    expect((await api(app, 'GET', '/v1/orders?limit=0', asAdmin(org))).status).toBe(400);

    const customers = await api(app, 'GET', '/v1/customers?email=LIST-A@sales.test', asAdmin(org));
    expect(customers.body.customers).toEqual([expect.objectContaining({ id: a.order.customerId, email: 'list-a@sales.test' })]);
    const passes = await api(app, 'GET', `/v1/passes?orderId=${b.order.id}&status=issued`, asAdmin(org));
    expect(passes.body.passes).toHaveLength(2);
    expect(passes.body.pagination.total).toBe(2);

    const gql = await graphql(
      app,
      'query($acc: ID) { orders(accountId: $acc, first: 1) { edges { node { id customer { email } lineItems { quantity } } } pageInfo { hasNextPage } pagination { total } } }',
      { acc: account.id },
      asAdmin(org),
    );
    expect(gql.body.data.orders).toMatchObject({
      edges: [{ node: { id: b.order.id, customer: { email: 'list-b@sales.test' }, lineItems: [{ quantity: 2 }] } }],
      pageInfo: { hasNextPage: true },
      pagination: { total: 2 },
    });
  });
});

describe('customer sign-in by magic link', () => {
  it('mails a single-use code (202 either way), exchanges it once for a token that reads only that customer’s orders', async () => {
    const catalogue = await createCatalogue(app, org);
    const channel = await createChannel(app, org, org.account.id, { storefrontUrl: 'https://shop.example.test/sign-in?from=mail' });
    const { order } = await buy(app, channel.publishable, catalogue, 2, 'magic@sales.test');
    await api(app, 'POST', `/live/sales/orders/${order.id}/confirm`, { body: {}, headers: { 'x-channel-key': channel.secret } });
    await buy(app, channel.publishable, catalogue, 1, 'someone-else@sales.test');
    const key = { 'x-channel-key': channel.publishable };

    const unknown = await api(app, 'POST', '/live/sales/customer-auth/magic-link', { body: { email: 'nobody@sales.test' }, headers: key });
    expect(unknown.status).toBe(202);
    expect(unknown.body).toEqual({ accepted: true });
    const known = await api(app, 'POST', '/live/sales/customer-auth/magic-link', { body: { email: 'Magic@Sales.test' }, headers: key });
    expect(known.status).toBe(202);
    expect(known.body).toEqual(unknown.body);
    expect((await api(app, 'POST', '/live/sales/customer-auth/magic-link', { body: { email: 'not an email' }, headers: key })).status).toBe(
      400,
    );

    const mail = await waitForMail(app, 'magic@sales.test', 'customer_magic_link');
    const code = (mail.meta as { code: string }).code;
    expect(mail.text).toContain(`https://shop.example.test/sign-in?from=mail&code=${code}`);
    await new Promise((r) => setTimeout(r, 200));
    expect(await query(app, `SELECT id FROM outbox_messages WHERE "to" = 'nobody@sales.test'`)).toEqual([]);
    const stored = await query<{ codeHash: string }>(app, `SELECT "codeHash" FROM customer_login_codes WHERE email = 'magic@sales.test'`);
    expect(stored[0]!.codeHash).not.toContain(code);

    const exchanged = await api(app, 'POST', '/live/sales/customer-tokens', { body: { code }, headers: key });
    expect(exchanged.status).toBe(201);
    expect(exchanged.body.customer).toMatchObject({ id: order.customerId, email: 'magic@sales.test' });
    const token = exchanged.body.customerToken;
    expect((await api(app, 'POST', '/live/sales/customer-tokens', { body: { code }, headers: key })).status).toBe(409);
    expect((await api(app, 'POST', '/live/sales/customer-tokens', { body: { code: 'made-up' }, headers: key })).status).toBe(401);

    const mine = await api(app, 'GET', '/live/sales/me/orders', { token });
    expect(mine.status).toBe(200);
    expect(mine.body.customer.id).toBe(order.customerId);
    expect(mine.body.orders).toHaveLength(1);
    expect(mine.body.orders[0]).toMatchObject({ id: order.id, status: 'confirmed' });
    expect(mine.body.orders[0].passes).toHaveLength(2);
    expect(mine.body.orders[0]).not.toHaveProperty('payments');
    // With the channel key beside it, the same.
    expect((await api(app, 'GET', '/live/sales/me/orders', { token, headers: key })).body.orders).toHaveLength(1);

    // The token is for that route only.
    expect((await api(app, 'GET', '/live/sales/listings', { token })).status).toBe(401);
    expect((await api(app, 'GET', '/v1/orders', { token, org: org.slug })).status).toBe(401);
    expect((await graphql(app, '{ apiVersions { current } }', {}, { token })).status).toBe(401);
    expect((await api(app, 'GET', '/live/sales/me/orders', { headers: key })).status).toBe(401);

    // An expired code is 410.
    await api(app, 'POST', '/live/sales/customer-auth/magic-link', { body: { email: 'magic@sales.test' }, headers: key });
    const second = await waitForMail(app, 'magic@sales.test', 'customer_magic_link', 2);
    await app().runtime.db.customerLoginCode.updateMany({
      where: { email: 'magic@sales.test', usedAt: null },
      data: { expiresAt: new Date(Date.now() - 1000) },
    });
    expect(
      (await api(app, 'POST', '/live/sales/customer-tokens', { body: { code: (second.meta as { code: string }).code }, headers: key }))
        .status,
    ).toBe(410);
  });
});

describe('hardening', () => {
  let catalogue: Catalogue;
  let channel: Awaited<ReturnType<typeof createChannel>>;
  beforeAll(async () => {
    catalogue = await createCatalogue(app, org, { capacity: 100 });
    channel = await createChannel(app, org);
  });
  const confirm = (orderId: string) =>
    api(app, 'POST', `/live/sales/orders/${orderId}/confirm`, { body: {}, headers: { 'x-channel-key': channel.secret } });

  it('a refund after a scan returns only the unused tickets: the redeemed seat stays sold', async () => {
    const small = await createCatalogue(app, org, { capacity: 2 });
    const { order } = await buy(app, channel.publishable, small, 2, 'scan-refund@hard.test');
    const passes = (await confirm(order.id)).body.order.passes;
    expect((await api(app, 'POST', `/v1/passes/${passes[0].id}/redeem`, asAdmin(org))).status).toBe(201);
    expect((await api(app, 'POST', `/v1/orders/${order.id}/refund`, asAdmin(org))).status).toBe(200);
    expect(await inventory(small)).toMatchObject({ held: 0, sold: 1 });
    const passStatuses = (await api(app, 'GET', `/v1/passes?orderId=${order.id}`, asAdmin(org))).body.passes
      .map((p: any) => p.status)
      .sort();
    expect(passStatuses).toEqual(['redeemed', 'void']);
    // One seat is left, not two.
    const shop = storefront(app, channel.publishable);
    expect((await shop.call('POST', '/sales/carts', { items: [cartLine(small, 2)] })).status).toBe(409);
    expect((await shop.call('POST', '/sales/carts', { items: [cartLine(small, 1)] })).status).toBe(201);
  });

  it('refuses quantities beyond any limit with 400, never 500', async () => {
    const shop = storefront(app, channel.publishable);
    for (const quantity of [2 ** 31, 101, -1, 1.5]) {
      const res = await shop.call('POST', '/sales/carts', { items: [{ ...cartLine(catalogue, 1), quantity }] });
      expect(res.status, `${quantity}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.details[0].path).toBe('items.0.quantity');
    }
  });

  it('answers CORS preflights and exposes X-Live-Session to browsers on other origins', async () => {
    const preflight = await fetch(`${app().url}/live/sales/carts`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://shop.example.test',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-channel-key, content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/X-Channel-Key/);
    expect(preflight.headers.get('access-control-allow-methods')).toMatch(/PATCH/);
    const created = await api(app, 'POST', '/live/sales/carts', {
      body: {},
      headers: { 'x-channel-key': channel.publishable, origin: 'https://shop.example.test' },
    });
    expect(created.headers.get('access-control-allow-origin')).toBe('*');
    expect(created.headers.get('access-control-expose-headers')).toMatch(/X-Live-Session/);
    // Management surfaces stay closed to cross-origin browsers.
    expect(
      (await fetch(`${app().url}/v1/meta/versions`, { headers: { origin: 'https://shop.example.test' } })).headers.get(
        'access-control-allow-origin',
      ),
    ).toBeNull();
  });

  it('an order whose occurrence was cancelled after checkout cannot be paid: 409, and it is cancelled', async () => {
    const show = await createCatalogue(app, org, { capacity: 10 });
    const { order } = await buy(app, channel.publishable, show, 2, 'cancelled-show@hard.test');
    await app().runtime.db.eventOccurrence.update({ where: { id: show.occurrenceId }, data: { status: 'cancelled' } });
    const res = await confirm(order.id);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/a performance in it was cancelled/);
    expect((await api(app, 'GET', `/v1/orders/${order.id}`, asAdmin(org))).body.order.status).toBe('cancelled');
    expect(await inventory(show)).toMatchObject({ held: 0, sold: 0 });

    const closed = await createChannel(app, org);
    const other = await buy(app, closed.publishable, catalogue, 1, 'closed-shop@hard.test');
    await api(app, 'PATCH', `/v1/sales-channels/${closed.channelId}`, { ...asAdmin(org), body: { isActive: false } });
    const page = await fetch(`${app().url}/checkout/${other.order.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=A&cardNumber=4242424242424242&expiry=12%2F30&cvc=123',
    });
    expect(page.status).toBe(409);
    expect(await page.text()).toContain('the shop it was placed in has closed');
  });

  it('cancelling or deleting an event cancels its pending orders at once and frees their tickets', async () => {
    for (const change of ['cancel', 'delete'] as const) {
      const show = await createCatalogue(app, org, { capacity: 10 });
      const { order } = await buy(app, channel.publishable, show, 3, `event-${change}@hard.test`);
      const paid = await buy(app, channel.publishable, show, 1, `event-${change}-paid@hard.test`);
      await confirm(paid.order.id);
      const res =
        change === 'cancel'
          ? await api(app, 'PATCH', `/v1/events/${show.eventId}`, { ...asAdmin(org), body: { status: 'cancelled' } })
          : await api(app, 'DELETE', `/v1/events/${show.eventId}`, asAdmin(org));
      expect(res.status).toBe(200);
      expect((await api(app, 'GET', `/v1/orders/${order.id}`, asAdmin(org))).body.order.status).toBe('cancelled');
      expect(await sourceEvents('order.cancelled', order.id)).toHaveLength(1);
      // The paid order is the operator's to refund; only the hold is released.
      expect((await api(app, 'GET', `/v1/orders/${paid.order.id}`, asAdmin(org))).body.order.status).toBe('confirmed');
      expect(await inventory(show)).toMatchObject({ held: 0, sold: 1 });
    }
  });

  it('redemption checks the occurrence: another show, or a cancelled one, is refused', async () => {
    const show = await createCatalogue(app, org, { capacity: 10 });
    const { order } = await buy(app, channel.publishable, show, 2, 'door-check@hard.test');
    const passes = (await confirm(order.id)).body.order.passes;
    const wrong = await api(app, 'POST', '/v1/redemptions', {
      ...asAdmin(org),
      body: { code: passes[0].code, occurrenceId: catalogue.occurrenceId },
    });
    expect(wrong.status).toBe(409);
    expect(wrong.body.error).toBe(`This pass is for another occurrence (${show.occurrenceId}).`);
    expect(
      (await api(app, 'POST', `/v1/passes/${passes[0].id}/redeem`, { ...asAdmin(org), body: { occurrenceId: show.occurrenceId } })).status,
    ).toBe(201);
    await app().runtime.db.eventOccurrence.update({ where: { id: show.occurrenceId }, data: { status: 'cancelled' } });
    const cancelled = await api(app, 'POST', `/v1/passes/${passes[1].id}/redeem`, asAdmin(org));
    expect(cancelled.status).toBe(409);
    expect(cancelled.body.error).toMatch(/cancelled/);
  });

  it('limits pending orders per sales session (429 with Retry-After)', async () => {
    const shop = storefront(app, channel.publishable);
    for (let i = 0; i < 5; i += 1) {
      const cart = await shop.call('POST', '/sales/carts', { items: [cartLine(catalogue, 1)] });
      expect(
        (await shop.call('POST', `/sales/carts/${cart.body.cart.id}/checkout`, { customer: { email: `many${i}@hard.test` } })).status,
      ).toBe(201);
    }
    const cart = await shop.call('POST', '/sales/carts', { items: [cartLine(catalogue, 1)] });
    const refused = await shop.call('POST', `/sales/carts/${cart.body.cart.id}/checkout`, { customer: { email: 'many5@hard.test' } });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('RATE_LIMITED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(800);
    // The cart stays open for later.
    expect((await shop.call('GET', `/sales/carts/${cart.body.cart.id}`)).body.cart.status).toBe('open');
  });

  it('nobody can lock a buyer out by placing unpaid orders in their name; secret keys sign many in', async () => {
    for (let i = 0; i < 5; i += 1) await buy(app, channel.publishable, catalogue, 1, 'victim@hard.test');
    const own = await buy(app, channel.publishable, catalogue, 1, 'victim@hard.test');
    expect(own.order.status).toBe('pending');
    for (let i = 0; i < 12; i += 1) {
      const res = await api(app, 'POST', '/live/sales/customer-auth/magic-link', {
        body: { email: `server${i}@hard.test` },
        headers: { 'x-channel-key': channel.secret },
      });
      expect(res.status).toBe(202);
    }
  });

  it('a signed-in shopper (customer token beside the key) checks out without giving an email', async () => {
    const { order } = await buy(app, channel.publishable, catalogue, 1, 'signed-in@hard.test');
    await api(app, 'POST', '/live/sales/customer-auth/magic-link', {
      body: { email: 'signed-in@hard.test' },
      headers: { 'x-channel-key': channel.publishable },
    });
    const code = ((await waitForMail(app, 'signed-in@hard.test', 'customer_magic_link')).meta as { code: string }).code;
    const token = (
      await api(app, 'POST', '/live/sales/customer-tokens', { body: { code }, headers: { 'x-channel-key': channel.publishable } })
    ).body.customerToken;

    const shop = storefront(app, channel.publishable);
    const cart = await shop.call('POST', '/sales/carts', { items: [cartLine(catalogue, 1)] }, { authorization: `Bearer ${token}` });
    expect(cart.status).toBe(201);
    const checkout = await shop.call('POST', `/sales/carts/${cart.body.cart.id}/checkout`, {}, { authorization: `Bearer ${token}` });
    expect(checkout.status, JSON.stringify(checkout.body)).toBe(201);
    expect(checkout.body.order.customerId).toBe(order.customerId);
    // Without a token and without an email: told what is missing.
    const anonymous = storefront(app, channel.publishable);
    const other = await anonymous.call('POST', '/sales/carts', { items: [cartLine(catalogue, 1)] });
    const missing = await anonymous.call('POST', `/sales/carts/${other.body.cart.id}/checkout`, {});
    expect(missing.status).toBe(400);
    expect(missing.body.details[0].path).toBe('customer.email');
    // Both credentials on /me/orders work too; a key of another account does not pair with the token.
    const mine = await api(app, 'GET', '/live/sales/me/orders', { token, headers: { 'x-channel-key': channel.publishable } });
    expect(mine.body.orders.map((o: any) => o.id)).toEqual([checkout.body.order.id, order.id]);
    const foreignAccount = await createAccount(app, org, 'Foreign shop account');
    const foreignChannel = await createChannel(app, org, foreignAccount.id);
    expect(
      (await api(app, 'GET', '/live/sales/listings', { token, headers: { 'x-channel-key': foreignChannel.publishable } })).status,
    ).toBe(401);
  });

  it('an expired sales session reaches no cart; a newer magic link retires the older code', async () => {
    const shop = storefront(app, channel.publishable);
    const cart = await shop.call('POST', '/sales/carts', {});
    await app().runtime.db.salesSession.update({ where: { id: shop.state.session! }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await shop.call('GET', `/sales/carts/${cart.body.cart.id}`)).status).toBe(404);

    await buy(app, channel.publishable, catalogue, 1, 'two-links@hard.test');
    const key = { 'x-channel-key': channel.publishable };
    await api(app, 'POST', '/live/sales/customer-auth/magic-link', { body: { email: 'two-links@hard.test' }, headers: key });
    const first = ((await waitForMail(app, 'two-links@hard.test', 'customer_magic_link')).meta as { code: string }).code;
    await api(app, 'POST', '/live/sales/customer-auth/magic-link', { body: { email: 'two-links@hard.test' }, headers: key });
    const second = ((await waitForMail(app, 'two-links@hard.test', 'customer_magic_link', 2)).meta as { code: string }).code;
    expect((await api(app, 'POST', '/live/sales/customer-tokens', { body: { code: first }, headers: key })).status).toBe(410);
    expect((await api(app, 'POST', '/live/sales/customer-tokens', { body: { code: second }, headers: key })).status).toBe(201);
  });

  it('the hosted checkout refuses cross-site posts and expired holds, and stops after ten declines (also when they race)', async () => {
    const { order } = await buy(app, channel.publishable, catalogue, 1, 'page@hard.test');
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${app().url}/checkout/${order.id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body,
      });
    const declined = 'name=A&cardNumber=4000000000000002&expiry=12%2F30&cvc=123';
    expect((await post(declined, { origin: 'https://evil.example' })).status).toBe(403);
    expect((await post(declined, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    // Its own posts: Origin null (older browsers under Referrer-Policy: no-referrer), same-origin fetch metadata.
    expect((await post(declined, { origin: 'null' })).status).toBe(402);
    expect((await post(declined, { 'sec-fetch-site': 'same-origin' })).status).toBe(402);
    const concurrent = await Promise.all(Array.from({ length: 12 }, () => post(declined)));
    expect(concurrent.filter((r) => r.status === 402)).toHaveLength(8);
    expect(concurrent.filter((r) => r.status === 429)).toHaveLength(4);
    const eleventh = await post('name=A&cardNumber=4242424242424242&expiry=12%2F30&cvc=123');
    expect(eleventh.status).toBe(429);
    expect(await eleventh.text()).toContain('Too many declined payments');

    const late = await buy(app, channel.publishable, catalogue, 1, 'late-page@hard.test');
    await app().runtime.db.order.update({ where: { id: late.order.id }, data: { holdExpiresAt: new Date(Date.now() - 1000) } });
    const gone = await fetch(`${app().url}/checkout/${late.order.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=A&cardNumber=4000000000000002&expiry=12%2F30&cvc=123',
    });
    expect(gone.status).toBe(410);
    expect(await gone.text()).toContain('cancelled');
    expect((await api(app, 'GET', `/v1/orders/${late.order.id}`, asAdmin(org))).body.order).toMatchObject({
      status: 'cancelled',
      payments: [],
    });
  });

  it('shows pass codes only to callers with passes.read', async () => {
    const { order } = await buy(app, channel.publishable, catalogue, 1, 'codes@hard.test');
    await confirm(order.id);
    const key = (await api(app, 'POST', '/v1/api-keys', { ...asAdmin(org), body: { name: 'orders only', scopes: ['orders.read'] } })).body
      .key;
    const seen = await api(app, 'GET', `/v1/orders/${order.id}`, { token: key, org: org.slug });
    expect(seen.status).toBe(200);
    expect(seen.body.order.passes).toEqual([expect.objectContaining({ status: 'issued', code: null })]);
    expect((await api(app, 'GET', `/v1/orders/${order.id}`, asAdmin(org))).body.order.passes[0].code).toMatch(/^[2-9A-Z]{16}$/);
  });
});
