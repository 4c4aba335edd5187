import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { lockOrder } from '../../src/services/inventory.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, customRole, staffWithoutRights, staffWithRoles } from '../support/credentials.ts';
import { api, createOrganisation, createStaffUser, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { query } from '../support/db.ts';
import {
  cartLine,
  createOccurrence,
  createTicketType,
  placeOrder,
  seedCatalogue,
  storefront,
  type Catalogue,
  type SeededCatalogue,
} from '../support/sales.ts';

/**
 * Revenue where admins look: an event, its occurrences and its ticket types answer the money their
 * confirmed orders took, less refunds and cancellations, per currency, from what the sales path keeps
 * on each inventory row (src/services/inventory.ts, src/services/revenue.ts).
 */
const app = useTestApp();
const DAY = 86_400_000;
let org: TestOrganisation;
/** 25.00 GBP a ticket at the first occurrence. */
let pounds: SeededCatalogue;
/** 40.00 EUR a ticket, same event and occurrence. */
let euros: Catalogue;
/** The pound tickets at the second occurrence. */
let later: Catalogue;
const orders: Record<string, string> = {};

beforeAll(async () => {
  org = await createOrganisation(app, 'revenue');
  pounds = await seedCatalogue(app, org, { capacity: 50 });
  const event = { id: pounds.eventId, accountId: pounds.accountId };
  const euroType = await createTicketType(app, org, event, { name: 'Balcony', priceAmount: 4000, currency: 'EUR', capacity: 50 });
  euros = { ...pounds, ticketTypeId: euroType.id };
  later = { ...pounds, occurrenceId: (await createOccurrence(app, org, event, new Date(Date.now() + 14 * DAY))).id };
});

const MONEY = 'revenue { amount currency }';
const DOCUMENT = `query ($eventId: ID!) {
  event(id: $eventId) { ${MONEY} }
  eventOccurrences(eventId: $eventId) { nodes { id ${MONEY} sales { sold } } }
  ticketTypes(eventId: $eventId) { nodes { id ${MONEY} } }
}`;

type Money = Array<{ amount: number; currency: string }>;

/** The revenue of the event, of each occurrence and of each ticket type, as the admin reads it. */
async function revenueNow(token = org.adminToken) {
  const res = await graphql(app, DOCUMENT, { eventId: pounds.eventId }, { token, org: org.slug });
  expect(res.body.errors).toBeUndefined();
  const { event, eventOccurrences, ticketTypes } = res.body.data;
  const byId = (nodes: Array<{ id: string; revenue: Money }>) => Object.fromEntries(nodes.map((node) => [node.id, node.revenue]));
  return {
    event: event.revenue as Money,
    occurrences: byId(eventOccurrences.nodes),
    ticketTypes: byId(ticketTypes.nodes),
    sold: Object.fromEntries(eventOccurrences.nodes.map((node: { id: string; sales: { sold: number } }) => [node.id, node.sales.sold])),
  };
}

const gbp = (amount: number) => ({ amount, currency: 'GBP' });
const eur = (amount: number) => ({ amount, currency: 'EUR' });
const usd = (amount: number) => ({ amount, currency: 'USD' });

describe('revenue', () => {
  it('sums confirmed orders per currency on the ticket type, the occurrence and the event; a pending order counts nothing', async () => {
    orders.twoPounds = (await placeOrder(app, pounds.channel, pounds, { quantity: 2 })).order.id;
    orders.onePound = (await placeOrder(app, pounds.channel, pounds, { quantity: 1 })).order.id;
    orders.threeEuros = (await placeOrder(app, pounds.channel, euros, { quantity: 3 })).order.id;
    orders.later = (await placeOrder(app, pounds.channel, later, { quantity: 1 })).order.id;
    orders.pending = (await placeOrder(app, pounds.channel, pounds, { quantity: 4, pending: true })).order.id;

    const now = await revenueNow();
    expect(now.event).toEqual([eur(12_000), gbp(10_000)]);
    expect(now.occurrences).toEqual({ [pounds.occurrenceId]: [eur(12_000), gbp(7_500)], [later.occurrenceId]: [gbp(2_500)] });
    expect(now.ticketTypes).toEqual({ [pounds.ticketTypeId]: [gbp(10_000)], [euros.ticketTypeId]: [eur(12_000)] });
  });

  it('takes back the whole total of a refunded or cancelled confirmed order, a used ticket included; cancelling a pending one changes nothing', async () => {
    expect((await api(app, 'POST', `/v1/orders/${orders.twoPounds}/refund`, asAdmin(org))).status).toBe(200);
    expect((await api(app, 'POST', `/v1/orders/${orders.threeEuros}/cancel`, asAdmin(org))).status).toBe(200);
    expect((await api(app, 'POST', `/v1/orders/${orders.pending}/cancel`, asAdmin(org))).status).toBe(200);
    let now = await revenueNow();
    expect(now.event).toEqual([gbp(5_000)]);
    expect(now.occurrences).toEqual({ [pounds.occurrenceId]: [gbp(2_500)], [later.occurrenceId]: [gbp(2_500)] });
    expect(now.ticketTypes).toEqual({ [pounds.ticketTypeId]: [gbp(5_000)], [euros.ticketTypeId]: [] });

    // A ticket scanned at the door, then its order refunded: the seat stays sold, the money goes back.
    const { order, passes } = await placeOrder(app, pounds.channel, later, { quantity: 1 });
    expect((await api(app, 'POST', `/v1/passes/${passes[0]!.id}/redeem`, asAdmin(org))).status).toBe(201);
    expect((await revenueNow()).occurrences[later.occurrenceId]).toEqual([gbp(5_000)]);
    expect((await api(app, 'POST', `/v1/orders/${order.id}/refund`, asAdmin(org))).status).toBe(200);
    now = await revenueNow();
    expect(now.occurrences[later.occurrenceId]).toEqual([gbp(2_500)]);
    expect(now.sold[later.occurrenceId]).toBe(2);
  });

  it('keeps each currency apart when a ticket type changes its currency between sales', async () => {
    const changed = await graphql(
      app,
      `
        mutation ($id: ID!) {
          updateTicketType(id: $id, input: { currency: "USD", priceAmount: 3000 }) {
            ticketType {
              id
            }
          }
        }
      `,
      { id: pounds.ticketTypeId },
      { token: org.adminToken, org: org.slug },
    );
    expect(changed.body.errors).toBeUndefined();
    await placeOrder(app, pounds.channel, pounds, { quantity: 1 });
    const now = await revenueNow();
    expect(now.ticketTypes[pounds.ticketTypeId]).toEqual([gbp(5_000), usd(3_000)]);
    expect(now.event).toEqual([gbp(5_000), usd(3_000)]);
  });

  it('is left as it was by a confirmation that does not happen: a declined card, a transaction that fails at its last line', async () => {
    const before = await revenueNow();
    const declined = await placeOrder(app, pounds.channel, pounds, { quantity: 1, pending: true });
    const page = await fetch(`${app().url}/checkout/${declined.order.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=A&cardNumber=4000000000000002&expiry=12%2F30&cvc=123',
    });
    expect(page.status).toBe(402);
    expect(await revenueNow()).toEqual(before);

    // Two lines; the row of the one moved last is made to refuse the sale, after the first line's
    // sale (and its money) went out in the same transaction.
    const shop = storefront(app, pounds.channel.secret);
    const cart = await shop.call('POST', '/sales/carts', { items: [cartLine(pounds, 1), cartLine(later, 1)] });
    expect(cart.status, JSON.stringify(cart.body)).toBe(201);
    const checkout = await shop.call('POST', `/sales/carts/${cart.body.cart.id}/checkout`, {
      customer: { email: 'two-lines@revenue.test' },
    });
    expect(checkout.status, JSON.stringify(checkout.body)).toBe(201);
    const last = lockOrder([cartLine(pounds, 1), cartLine(later, 1)]).at(-1)!;
    await query(app, `UPDATE inventories SET held = 0 WHERE "ticketTypeId" = $1 AND "occurrenceId" = $2`, [
      last.ticketTypeId,
      last.occurrenceId,
    ]);
    const confirm = await api(app, 'POST', `/live/sales/orders/${checkout.body.order.id}/confirm`, {
      body: {},
      headers: { 'x-channel-key': pounds.channel.secret },
    });
    expect(confirm.status).toBe(500);
    expect((await api(app, 'GET', `/v1/orders/${checkout.body.order.id}`, asAdmin(org))).body.order.status).toBe('pending');
    expect(await revenueNow()).toEqual(before);
  });

  it('is refused with FORBIDDEN at its path to a caller without events.read; a viewer reads it', async () => {
    const writer = await createStaffUser(
      app,
      org,
      [{ roleId: (await customRole(app, org, ['events.write'])).id, accountId: org.account.id }],
      'writer',
    );
    const updated = await graphql(
      app,
      `mutation ($id: ID!) { updateEvent(id: $id, input: { name: "Renamed" }) { event { id ${MONEY} } } }`,
      { id: pounds.eventId },
      { token: writer.token, org: org.slug },
    );
    expect(updated.body.errors.map((e: any) => [e.path, e.extensions.code])).toEqual([[['updateEvent', 'event', 'revenue'], 'FORBIDDEN']]);
    const typeUpdated = await graphql(
      app,
      `mutation ($id: ID!) { updateTicketType(id: $id, input: { name: "Stalls" }) { ticketType { id ${MONEY} } } }`,
      { id: pounds.ticketTypeId },
      { token: writer.token, org: org.slug },
    );
    expect(typeUpdated.body.errors.map((e: any) => [e.path, e.extensions.code])).toEqual([
      [['updateTicketType', 'ticketType', 'revenue'], 'FORBIDDEN'],
    ]);

    const nobody = await staffWithoutRights(app, org);
    const refused = await graphql(app, DOCUMENT, { eventId: pounds.eventId }, { token: nobody.token, org: org.slug });
    expect(refused.body.errors.find((e: any) => e.path[0] === 'event').extensions.code).toBe('FORBIDDEN');

    const viewer = await staffWithRoles(app, org, ['viewer']);
    expect((await revenueNow(viewer.token)).event).toEqual([gbp(5_000), usd(3_000)]);
  });

  it('is what the migration computes from the confirmed orders, and never negative', async () => {
    const kept = () =>
      query<{ ticketTypeId: string; occurrenceId: string; revenue: unknown }>(
        app,
        `SELECT "ticketTypeId", "occurrenceId", revenue FROM inventories ORDER BY 1, 2`,
      );
    const maintained = await kept();
    expect(maintained.some((row) => Object.keys(row.revenue as object).length > 0)).toBe(true);
    const migration = readFileSync(
      new URL('../../prisma/migrations/20261127120000_inventory_revenue/migration.sql', import.meta.url),
      'utf8',
    );
    const backfill = /^UPDATE "inventories"[\s\S]*?;$/m.exec(migration)![0];
    await query(app, `UPDATE inventories SET revenue = '{}'`);
    await query(app, backfill);
    expect(await kept()).toEqual(maintained);

    await expect(
      query(app, `UPDATE inventories SET revenue = '{"GBP": -1}' WHERE "ticketTypeId" = $1`, [pounds.ticketTypeId]),
    ).rejects.toThrow(/inventories_revenue_check/);
  });
});
