import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { createEvent, createOccurrence, createTicketType } from '../support/sales.ts';

const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'lista'), createOrganisation(app, 'listb')]);
});

const DAY = 86_400_000;
const slug = (label: string) => `${label}-${Math.random().toString(36).slice(2, 8)}`;

const event = (o: TestOrganisation, accountId: string, status: string, extra: Record<string, unknown> = {}) =>
  createEvent(app, o, { accountId, status, timezone: 'Europe/London', ...extra });
const occurrence = (o: TestOrganisation, e: { id: string; accountId: string }, startsAt: Date, extra: Record<string, unknown> = {}) =>
  createOccurrence(app, o, e, startsAt, extra);
const ticketType = (
  o: TestOrganisation,
  e: { id: string; accountId: string },
  capacity: number | null,
  extra: Record<string, unknown> = {},
) => createTicketType(app, o, e, { capacity, ...extra });

async function channelWithKey(o: TestOrganisation, accountId: string, body: Record<string, unknown> = {}, kind = 'publishable') {
  const created = await api(app, 'POST', '/v1/sales-channels', {
    token: o.adminToken,
    org: o.slug,
    body: { accountId, name: 'Shop', slug: slug('shop'), ...body },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const channel = created.body.salesChannel;
  const key = await api(app, 'POST', `/v1/sales-channels/${channel.id}/keys`, { token: o.adminToken, org: o.slug, body: { kind } });
  return { channel, key: key.body.key as string, keyId: key.body.channelKey.id as string };
}

const ids = (res: { body: { events: Array<{ id: string }> } }) => res.body.events.map((e) => e.id);

describe('GET /live/sales/listings', () => {
  let account: { id: string };
  let shop: Awaited<ReturnType<typeof channelWithKey>>;
  let published: { id: string; accountId: string };
  let onSale: { id: string; accountId: string };
  let hidden: string[];

  beforeAll(async () => {
    account = await createAccount(app, org, 'Listings account');
    published = await event(org, account.id, 'published', { description: 'A show', tags: ['music'] });
    onSale = await event(org, account.id, 'on_sale');
    hidden = [
      (await event(org, account.id, 'draft')).id,
      (await event(org, account.id, 'cancelled')).id,
      (await event(org, account.id, 'sold_out')).id,
      (await event(org, account.id, 'published', { isDeleted: true })).id,
    ];
    shop = await channelWithKey(org, account.id);
  });

  it('lists published and on-sale events, with the channel and pagination, via Authorization: Bearer', async () => {
    const res = await api(app, 'GET', '/live/sales/listings', { token: shop.key });
    expect(res.status).toBe(200);
    expect(res.body.channel).toEqual({ id: shop.channel.id, slug: shop.channel.slug, name: 'Shop' });
    expect(ids(res)).toEqual([published.id, onSale.id]);
    for (const id of hidden) expect(ids(res)).not.toContain(id);
    expect(res.body.pagination).toEqual({ page: 1, limit: 20, total: 2, totalPages: 1, hasNext: false, hasPrev: false });
    expect(res.body.events[0]).toMatchObject({
      name: 'Event published',
      description: 'A show',
      status: 'published',
      timezone: 'Europe/London',
      tags: ['music'],
      venueId: null,
    });
    expect(res.headers.get('service-version')).toBeTruthy();
  });

  it('takes the key in X-Channel-Key too, and a secret key', async () => {
    const viaHeader = await api(app, 'GET', '/live/sales/listings', { headers: { 'x-channel-key': shop.key } });
    expect([viaHeader.status, ids(viaHeader)]).toEqual([200, [published.id, onSale.id]]);
    const both = await api(app, 'GET', '/live/sales/listings', { token: shop.key, headers: { 'x-channel-key': shop.key } });
    expect(both.status).toBe(200);
    const secret = await api(app, 'POST', `/v1/sales-channels/${shop.channel.id}/keys`, {
      token: org.adminToken,
      org: org.slug,
      body: { kind: 'secret' },
    });
    const viaSecret = await api(app, 'GET', '/live/sales/listings', { token: secret.body.key });
    expect([viaSecret.status, ids(viaSecret)]).toEqual([200, [published.id, onSale.id]]);
    const different = await api(app, 'GET', '/live/sales/listings', { token: shop.key, headers: { 'x-channel-key': secret.body.key } });
    expect([different.status, different.body.code]).toEqual([401, 'UNAUTHENTICATED']);
  });

  it('pages by event with page and limit', async () => {
    const res = await api(app, 'GET', '/live/sales/listings?page=2&limit=1', { token: shop.key });
    expect(ids(res)).toEqual([onSale.id]);
    expect(res.body.pagination).toEqual({ page: 2, limit: 1, total: 2, totalPages: 2, hasNext: false, hasPrev: true });
    const bad = await api(app, 'GET', '/live/sales/listings?limit=0', { token: shop.key });
    expect([bad.status, bad.body.details[0].path]).toEqual([400, 'query.limit']);
  });

  it('shows future scheduled occurrences and availability from Inventory (capacity - held - sold, null unlimited)', async () => {
    const e = await event(org, account.id, 'on_sale');
    const soon = await occurrence(org, e, new Date(Date.now() + DAY), { endsAt: new Date(Date.now() + DAY + 7_200_000) });
    const later = await occurrence(org, e, new Date(Date.now() + 2 * DAY), { capacity: 10 });
    await occurrence(org, e, new Date(Date.now() - DAY));
    await occurrence(org, e, new Date(Date.now() + 3 * DAY), { status: 'cancelled' });
    const limited = await ticketType(org, e, 100, { maxPerOrder: 4, description: 'Standing' });
    const unlimited = await ticketType(org, e, null, { name: 'Guest list', priceAmount: 0 });
    await ticketType(org, e, 5, { isDeleted: true });
    const closesAt = new Date(Date.now() - 60_000);
    const closed = await ticketType(org, e, 5, { name: 'Early bird', salesEndAt: closesAt });
    const inventory = (ticketTypeId: string, occurrenceId: string, held: number, sold: number) =>
      app().runtime.db.inventory.create({ data: { organisationId: org.organisation.id, ticketTypeId, occurrenceId, held, sold } });
    await inventory(limited.id, soon.id, 7, 30);
    await inventory(limited.id, later.id, 4, 8);
    await inventory(unlimited.id, soon.id, 3, 1000);

    const res = await api(app, 'GET', '/live/sales/listings?limit=100', { token: shop.key });
    const listed = res.body.events.find((x: { id: string }) => x.id === e.id);
    expect(listed.ticketTypes).toEqual([
      {
        id: limited.id,
        name: 'General admission',
        description: 'Standing',
        priceAmount: 2500,
        currency: 'GBP',
        maxPerOrder: 4,
        salesStartAt: null,
        salesEndAt: null,
        onSale: true,
      },
      {
        id: unlimited.id,
        name: 'Guest list',
        description: null,
        priceAmount: 0,
        currency: 'GBP',
        maxPerOrder: null,
        salesStartAt: null,
        salesEndAt: null,
        onSale: true,
      },
      {
        id: closed.id,
        name: 'Early bird',
        description: null,
        priceAmount: 2500,
        currency: 'GBP',
        maxPerOrder: null,
        salesStartAt: null,
        salesEndAt: closesAt.toISOString(),
        onSale: false,
      },
    ]);
    expect(listed.occurrences.map((o: { id: string }) => o.id)).toEqual([soon.id, later.id]);
    const [first, second] = listed.occurrences;
    expect(first).toMatchObject({
      id: soon.id,
      timezone: 'Europe/London',
      startsAt: soon.startsAt.toISOString(),
      endsAt: soon.endsAt!.toISOString(),
      startDate: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      startTime: expect.stringMatching(/^\d{2}:\d{2}$/),
      endTime: expect.stringMatching(/^\d{2}:\d{2}$/),
    });
    expect(first.availability).toEqual([
      { ticketTypeId: limited.id, available: 63 },
      { ticketTypeId: unlimited.id, available: null },
      { ticketTypeId: closed.id, available: 5 },
    ]);
    // The occurrence's capacity overrides the ticket type's; never below zero; no row = nothing held or sold.
    expect(second.availability).toEqual([
      { ticketTypeId: limited.id, available: 0 },
      { ticketTypeId: unlimited.id, available: 10 },
      { ticketTypeId: closed.id, available: 10 },
    ]);
    expect(second).toMatchObject({ endDate: null, endTime: null });
  });

  it('a channel that does not sell all events lists only its events', async () => {
    const listedOnly = await channelWithKey(org, account.id, { sellsAllEvents: false, eventIds: [onSale.id, hidden[0]] });
    const res = await api(app, 'GET', '/live/sales/listings', { token: listedOnly.key });
    expect(ids(res)).toEqual([onSale.id]);
    await api(app, 'PATCH', `/v1/sales-channels/${listedOnly.channel.id}`, {
      token: org.adminToken,
      org: org.slug,
      body: { eventIds: [published.id] },
    });
    expect(ids(await api(app, 'GET', '/live/sales/listings', { token: listedOnly.key }))).toEqual([published.id]);
  });

  it("never shows another account's or organisation's events", async () => {
    const otherAccountEvent = await event(org, org.account.id, 'published');
    const otherOrgEvent = await event(other, other.account.id, 'published');
    const otherShop = await channelWithKey(other, other.account.id);
    const mine = ids(await api(app, 'GET', '/live/sales/listings?limit=100', { token: shop.key }));
    expect(mine).not.toContain(otherAccountEvent.id);
    expect(mine).not.toContain(otherOrgEvent.id);
    const theirs = ids(await api(app, 'GET', '/live/sales/listings?limit=100', { token: otherShop.key }));
    expect(theirs).toEqual([otherOrgEvent.id]);
    // Listing another account's event on a channel is refused at write time (404 naming it, like any
    // id in a body that is not the channel's account's), so it cannot leak either.
    const refused = await api(app, 'PATCH', `/v1/sales-channels/${shop.channel.id}`, {
      token: org.adminToken,
      org: org.slug,
      body: { sellsAllEvents: false, eventIds: [otherAccountEvent.id] },
    });
    expect([refused.status, refused.body.code]).toEqual([404, 'NOT_FOUND']);
  });

  it('refuses a revoked key, a management credential, no credential, and another organisation in X-Service-Org', async () => {
    const revokedShop = await channelWithKey(org, account.id);
    await api(app, 'POST', `/v1/sales-channels/${revokedShop.channel.id}/keys/${revokedShop.keyId}/revoke`, {
      token: org.adminToken,
      org: org.slug,
    });
    for (const options of [{ token: revokedShop.key }, { headers: { 'x-channel-key': revokedShop.key } }]) {
      const res = await api(app, 'GET', '/live/sales/listings', options);
      expect([res.status, res.body.code]).toEqual([401, 'UNAUTHENTICATED']);
      expect(res.body.error).toMatch(/revoked/);
    }

    const staff = await api(app, 'GET', '/live/sales/listings', { token: org.adminToken, org: org.slug });
    expect([staff.status, staff.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect(staff.body.error).toMatch(/channel key/);
    const key = await api(app, 'POST', '/v1/api-keys', { token: org.adminToken, org: org.slug, body: { name: 'k', scopes: ['*.*'] } });
    const apiKey = await api(app, 'GET', '/live/sales/listings', { token: key.body.key });
    expect([apiKey.status, apiKey.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    const mixed = await api(app, 'GET', '/live/sales/listings', { token: org.adminToken, headers: { 'x-channel-key': shop.key } });
    expect([mixed.status, mixed.body.code]).toEqual([401, 'UNAUTHENTICATED']);

    const none = await api(app, 'GET', '/live/sales/listings');
    expect([none.status, none.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    const unknown = await api(app, 'GET', '/live/sales/listings', { token: 'svpk_not_a_real_key' });
    expect([unknown.status, unknown.body.code]).toEqual([401, 'UNAUTHENTICATED']);

    const own = await api(app, 'GET', '/live/sales/listings', { token: shop.key, org: org.slug });
    expect(own.status).toBe(200);
    for (const options of [{ token: shop.key, org: other.slug }, { headers: { 'x-channel-key': shop.key, 'x-service-org': other.slug } }]) {
      const res = await api(app, 'GET', '/live/sales/listings', options);
      expect([res.status, res.body.code]).toEqual([403, 'ORG_MISMATCH']);
    }
  });

  it('is the sales API only: /graphql (the management API) refuses channel keys, and salesListings refuses management credentials', async () => {
    const document = '{ salesListings(limit: 1) { channel { channelId } events { eventId } pagination { total } } }';
    const res = await graphql(app, document, {}, { token: shop.key });
    expect(res.status).toBe(401);
    expect(res.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const staff = await graphql(app, document, {}, { token: org.adminToken, org: org.slug });
    expect(staff.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });

  it('reads a page in two statements whatever its size (its channel, then the page with its total, occurrences, types and inventories)', async () => {
    const prismaQueries: string[] = [];
    const counting = app().runtime.db.$extends({
      query: { $allOperations: ({ model, operation, args, query }) => (prismaQueries.push(`${model}.${operation}`), query(args)) },
    });
    const { listSalesListings } = await import('../../src/services/listings.ts');
    const { tenantDatabase } = await import('../../src/db/tenant.ts');
    const { tenantSql } = await import('../../src/db/sql.ts');
    const { poolOf } = await import('../../src/db/client.ts');
    const { Access } = await import('../../src/auth/permissions.ts');
    const ctx = {
      principal: { kind: 'channel', channelKeyId: shop.keyId, channelId: shop.channel.id, accountId: account.id, keyKind: 'publishable' },
      organisation: org.organisation,
      access: Access.none(),
      db: tenantDatabase(counting as never, org.organisation.id),
      sql: tenantSql(app().runtime.db, org.organisation.id),
      runtime: app().runtime,
    } as never;
    const pool = poolOf(app().runtime.db);
    const original = pool.query;
    const statements: string[] = [];
    pool.query = function (this: unknown, config: unknown, ...rest: unknown[]) {
      statements.push(typeof config === 'string' ? config : (config as { text: string }).text);
      return (original as (...args: unknown[]) => unknown).call(this, config, ...rest);
    } as typeof pool.query;
    try {
      for (const limit of [1, 100]) {
        statements.length = 0;
        const result = await listSalesListings(ctx, { limit });
        expect(result.events.length).toBe(limit === 1 ? 1 : result.pagination.total);
        expect(result.pagination.total).toBeGreaterThanOrEqual(3);
        expect(statements).toHaveLength(2);
        expect(statements[0]).toMatch(/FROM sales_channels/);
      }
    } finally {
      pool.query = original;
    }
    expect(prismaQueries).toEqual([]);
  });
});
