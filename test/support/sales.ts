import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { newId } from '../../src/ids.ts';
import type { TestApp } from './app.ts';
import { api, type TestOrganisation } from './fixtures.ts';

/** Catalogue, channel and storefront helpers of the sales tests. */

const DAY = 86_400_000;

export interface Catalogue {
  eventId: string;
  occurrenceId: string;
  ticketTypeId: string;
  accountId: string;
}

/** An on-sale event with one occurrence in a week and one ticket type (rows written directly: fixtures, not the subject). */
export async function createCatalogue(
  app: TestApp,
  org: TestOrganisation,
  options: { accountId?: string; capacity?: number | null; priceAmount?: number; currency?: string; maxPerOrder?: number | null; status?: string; name?: string } = {},
): Promise<Catalogue> {
  const db = app.runtime.db;
  const organisationId = org.organisation.id;
  const accountId = options.accountId ?? org.account.id;
  const event = await db.event.create({
    data: { id: newId('event'), organisationId, accountId, name: options.name ?? 'Concert', status: (options.status ?? 'on_sale') as never, timezone: 'Europe/London' },
  });
  const occurrence = await db.eventOccurrence.create({
    data: { id: newId('occurrence'), organisationId, accountId, eventId: event.id, startsAt: new Date(Date.now() + 7 * DAY), timezone: 'Europe/London' },
  });
  const ticketType = await db.ticketType.create({
    data: {
      id: newId('ticketType'),
      organisationId,
      accountId,
      eventId: event.id,
      name: 'General admission',
      priceAmount: options.priceAmount ?? 2500,
      currency: options.currency ?? 'GBP',
      capacity: options.capacity === undefined ? 100 : options.capacity,
      maxPerOrder: options.maxPerOrder ?? null,
    },
  });
  return { eventId: event.id, occurrenceId: occurrence.id, ticketTypeId: ticketType.id, accountId };
}

export async function createChannel(app: TestApp, org: TestOrganisation, accountId = org.account.id, body: Record<string, unknown> = {}) {
  const admin = { token: org.adminToken, org: org.slug };
  const created = await api(app, 'POST', '/v1/sales-channels', {
    ...admin,
    body: { accountId, name: 'Web shop', slug: `shop-${randomBytes(3).toString('hex')}`, ...body },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const channelId = created.body.salesChannel.id as string;
  const key = async (kind: 'publishable' | 'secret') => {
    const res = await api(app, 'POST', `/v1/sales-channels/${channelId}/keys`, { ...admin, body: { kind } });
    expect(res.status).toBe(201);
    return res.body.key as string;
  };
  return { channelId, publishable: await key('publishable'), secret: await key('secret') };
}

/** A browser-like storefront: its channel key on every call, and the sales session once it has one. */
export function storefront(app: TestApp, key: string) {
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

/** Cart -> pending order for `email`; answers the checkout body. */
export async function buy(app: TestApp, key: string, catalogue: Catalogue, quantity: number, email: string) {
  const shop = storefront(app, key);
  const cart = await shop.call('POST', '/sales/carts', { items: [{ occurrenceId: catalogue.occurrenceId, ticketTypeId: catalogue.ticketTypeId, quantity }] });
  expect(cart.status, JSON.stringify(cart.body)).toBe(201);
  const checkout = await shop.call('POST', `/sales/carts/${cart.body.cart.id}/checkout`, { customer: { email } });
  expect(checkout.status, JSON.stringify(checkout.body)).toBe(201);
  return checkout.body as { order: any; checkoutUrl: string };
}
