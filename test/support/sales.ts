import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { newId } from '../../src/ids.ts';
import { appOf, type AppRef } from './app.ts';
import { api, type TestOrganisation } from './fixtures.ts';

/** Catalogue, channel and storefront helpers: seeding for the sales tests and the access matrix. */

const DAY = 86_400_000;

export interface Catalogue {
  eventId: string;
  occurrenceId: string;
  ticketTypeId: string;
  accountId: string;
}

/** An on-sale event with one occurrence in a week and one ticket type (rows written directly: fixtures, not the subject). */
export async function createCatalogue(
  app: AppRef,
  org: TestOrganisation,
  options: {
    accountId?: string;
    capacity?: number | null;
    priceAmount?: number;
    currency?: string;
    maxPerOrder?: number | null;
    status?: string;
    name?: string;
    venueId?: string;
  } = {},
): Promise<Catalogue> {
  const accountId = options.accountId ?? org.account.id;
  const event = await createEvent(app, org, {
    accountId,
    name: options.name ?? 'Concert',
    status: options.status ?? 'on_sale',
    timezone: 'Europe/London',
    venueId: options.venueId ?? null,
  });
  const occurrence = await createOccurrence(app, org, event, new Date(Date.now() + 7 * DAY));
  const ticketType = await createTicketType(app, org, event, {
    priceAmount: options.priceAmount ?? 2500,
    currency: options.currency ?? 'GBP',
    capacity: options.capacity === undefined ? 100 : options.capacity,
    maxPerOrder: options.maxPerOrder ?? null,
  });
  return { eventId: event.id, occurrenceId: occurrence.id, ticketTypeId: ticketType.id, accountId };
}

/** An event of `accountId` (default the first account), written directly: published, in UTC, unless `fields` say otherwise. */
export async function createEvent(
  app: AppRef,
  org: TestOrganisation,
  fields: { accountId?: string; status?: string } & Record<string, unknown> = {},
) {
  const { accountId = org.account.id, status = 'published', ...rest } = fields;
  return appOf(app).runtime.db.event.create({
    data: {
      id: newId('event'),
      organisationId: org.organisation.id,
      accountId,
      name: `Event ${status}`,
      status: status as never,
      timezone: 'UTC',
      ...rest,
    },
  });
}

/** An occurrence of `event` starting at `startsAt`, written directly. */
export async function createOccurrence(
  app: AppRef,
  org: TestOrganisation,
  event: { id: string; accountId: string },
  startsAt: Date,
  fields: Record<string, unknown> = {},
) {
  return appOf(app).runtime.db.eventOccurrence.create({
    data: {
      id: newId('occurrence'),
      organisationId: org.organisation.id,
      accountId: event.accountId,
      eventId: event.id,
      startsAt,
      timezone: 'Europe/London',
      ...fields,
    },
  });
}

/** A ticket type of `event` (General admission, 25.00 GBP, capacity 100 unless `fields` say otherwise), written directly. */
export async function createTicketType(
  app: AppRef,
  org: TestOrganisation,
  event: { id: string; accountId: string },
  fields: Record<string, unknown> = {},
) {
  return appOf(app).runtime.db.ticketType.create({
    data: {
      id: newId('ticketType'),
      organisationId: org.organisation.id,
      accountId: event.accountId,
      eventId: event.id,
      name: 'General admission',
      priceAmount: 2500,
      currency: 'GBP',
      capacity: 100,
      ...fields,
    },
  });
}

/** A venue of `accountId` (default the organisation's first account), written directly. */
export async function createVenue(app: AppRef, org: TestOrganisation, accountId = org.account.id, name = 'Royal Hall') {
  return appOf(app).runtime.db.venue.create({
    data: { id: newId('venue'), organisationId: org.organisation.id, accountId, name, timezone: 'Europe/London' },
  });
}

export interface Channel {
  channelId: string;
  /** The channel's publishable key (svpk_), for browsers. */
  publishable: string;
  /** The channel's secret key (svsk_), for servers. */
  secret: string;
}

/** A sales channel of `accountId` made by the organisation's admin over /v1, with one key of each kind. */
export async function createChannel(
  app: AppRef,
  org: TestOrganisation,
  accountId = org.account.id,
  body: Record<string, unknown> = {},
): Promise<Channel> {
  const admin = { token: org.adminToken, org: org.slug };
  const created = await api(app, 'POST', '/v1/sales-channels', {
    ...admin,
    body: { accountId, name: 'Web shop', slug: `shop-${randomBytes(3).toString('hex')}`, ...body },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const channelId = created.body.salesChannel.id as string;
  return {
    channelId,
    publishable: await issueChannelKey(app, org, channelId, 'publishable'),
    secret: await issueChannelKey(app, org, channelId, 'secret'),
  };
}

/** A new key of the channel, issued by the organisation's admin over /v1; answers the key material. */
export async function issueChannelKey(app: AppRef, org: TestOrganisation, channelId: string, kind: 'publishable' | 'secret') {
  const res = await api(app, 'POST', `/v1/sales-channels/${channelId}/keys`, { token: org.adminToken, org: org.slug, body: { kind } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.key as string;
}

export interface SeededCatalogue extends Catalogue {
  venueId: string;
  channel: Channel;
}

/**
 * What a box office has before it sells: a venue, an on-sale event there with an occurrence in a
 * week and a ticket type, and a channel selling it with both keys.
 */
export async function seedCatalogue(
  app: AppRef,
  org: TestOrganisation,
  options: Parameters<typeof createCatalogue>[2] = {},
): Promise<SeededCatalogue> {
  const accountId = options.accountId ?? org.account.id;
  const venue = await createVenue(app, org, accountId);
  const catalogue = await createCatalogue(app, org, { ...options, accountId, venueId: venue.id });
  return { ...catalogue, venueId: venue.id, channel: await createChannel(app, org, accountId) };
}

/** A browser-like storefront: its channel key on every call, and the sales session once it has one. */
export function storefront(app: AppRef, key: string) {
  const state: { session?: string } = {};
  return {
    state,
    async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
      const res = await api(app, method, `/live${path}`, {
        body,
        headers: { 'x-channel-key': key, ...(state.session ? { 'x-live-session': state.session } : {}), ...headers },
      });
      const session = res.headers.get('x-live-session');
      if (session) state.session = session;
      return res;
    },
  };
}

export const cartLine = (catalogue: Catalogue, quantity = 1) => ({
  occurrenceId: catalogue.occurrenceId,
  ticketTypeId: catalogue.ticketTypeId,
  quantity,
});

/** A cart of `quantity` tickets made through the storefront with `key`; answers the cart and the storefront holding its session. */
export async function openCart(app: AppRef, key: string, catalogue: Catalogue, quantity = 1) {
  const shop = storefront(app, key);
  const res = await shop.call('POST', '/sales/carts', { items: [cartLine(catalogue, quantity)] });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { cart: res.body.cart as { id: string; sessionId: string }, shop };
}

/** Cart -> pending order for `email`; answers the checkout body. */
export async function buy(app: AppRef, key: string, catalogue: Catalogue, quantity: number, email: string) {
  const { cart, shop } = await openCart(app, key, catalogue, quantity);
  const checkout = await shop.call('POST', `/sales/carts/${cart.id}/checkout`, { customer: { email } });
  expect(checkout.status, JSON.stringify(checkout.body)).toBe(201);
  return checkout.body as { order: any; checkoutUrl: string };
}

/** Confirms a pending order as a server does, with the channel's secret key; answers the confirmed order. */
export async function confirmOrder(app: AppRef, secretKey: string, orderId: string) {
  const res = await api(app, 'POST', `/live/sales/orders/${orderId}/confirm`, { body: {}, headers: { 'x-channel-key': secretKey } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.order as { id: string; status: string; customerId: string };
}

/**
 * An order through the storefront flow with the channel's secret key (a server: not throttled):
 * cart, checkout, and unless `pending`, confirmation. Answers the order and its passes (id and
 * code, in issue order; none while pending).
 */
export async function placeOrder(
  app: AppRef,
  channel: Channel,
  catalogue: Catalogue,
  options: { email?: string; quantity?: number; pending?: boolean } = {},
) {
  const email = options.email ?? `buyer-${randomBytes(4).toString('hex')}@shop.test`;
  const { order } = await buy(app, channel.secret, catalogue, options.quantity ?? 1, email);
  if (options.pending) return { order: order as { id: string; customerId: string; status: string }, email, passes: [] };
  const confirmed = await confirmOrder(app, channel.secret, order.id);
  const passes = await appOf(app).runtime.db.pass.findMany({
    where: { orderId: order.id },
    orderBy: { id: 'asc' },
    select: { id: true, code: true },
  });
  return { order: confirmed, email, passes };
}
