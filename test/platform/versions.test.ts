import { randomBytes } from 'node:crypto';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSIONS, CURRENT_VERSION, describeChange } from '../../src/versions.ts';
import { createWorker } from '../../workflows/worker.ts';
import { useTestApp } from '../support/app.ts';
import { expectDocumentedResponse, responseProblems } from '../support/openapi-check.ts';
import { api, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { placeOrder, seedCatalogue, storefront, type SeededCatalogue } from '../support/sales.ts';
import { createTestEndpoint, startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * One set of version changes (src/versions.ts) shapes webhooks, /v1 and /live
 * alike. For each declared change the same object is read at the versions before and after it,
 * through REST, the sales API and a webhook of an endpoint pinned to that version, and must read
 * the same. Real app, worker, Temporal and receiver.
 */

const app = useTestApp({ SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64') });
/** The versions served, oldest first (docs/spec/contract.md "API versions" and "Decided later (2026-11-26)"). */
const VERSIONS = ['2025-04-01', '2025-10-01', '2026-06-01', '2026-11-27'] as const;
type Version = (typeof VERSIONS)[number];

let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;
let org: TestOrganisation;
let catalogue: SeededCatalogue;
const endpointPath = {} as Record<Version, string>;
let orderId: string;
/** An event made over /v1 (so it announced event.created), at the catalogue's venue. */
let eventId: string;
const PRICE = 2500;

beforeAll(async () => {
  ({ worker } = await createWorker({ config: app().config, db: app().runtime.db, logger: app().runtime.logger, prebundled: false }));
  running = worker.run();
  receiver = await startWebhookReceiver();
  org = await createOrganisation(app(), 'versions');
  for (const version of VERSIONS) {
    const target = { organisationId: org.organisation.id, accountId: org.account.id, receiver, apiVersion: version };
    endpointPath[version] = (await createTestEndpoint(app().runtime.db, app().runtime.encryptionKey, target)).path;
  }
  catalogue = await seedCatalogue(app(), org);
  const created = await api(app(), 'POST', '/v1/events', {
    token: org.adminToken,
    org: org.slug,
    body: { accountId: org.account.id, name: 'Announced', timezone: 'Europe/London', venueId: catalogue.venueId },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  eventId = created.body.event.id;
  ({
    order: { id: orderId },
  } = await placeOrder(app(), catalogue.channel, catalogue));
  // event.created, order.created, order.confirmed and ticket.issued at each endpoint.
  await receiver.waitForRequests(4 * VERSIONS.length, undefined, 60_000);
}, 180_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await receiver?.close();
});

function webhook(version: Version, type: string): Record<string, unknown> {
  const request = receiver.requests.find((r: ReceivedRequest) => {
    const { type: sent, data } = JSON.parse(r.rawBody) as { type: string; data: Record<string, unknown> };
    return r.path === endpointPath[version] && sent === type && [orderId, eventId].includes(String(data.id ?? data.orderId));
  });
  expect(request, `${type} at ${version}`).toBeDefined();
  expect(request!.verified).toBe(true);
  const envelope = JSON.parse(request!.rawBody) as { version: string; data: Record<string, unknown> };
  expect(envelope.version).toBe(version);
  return envelope.data;
}

const at = (version: string) => ({ 'service-version': version });

/**
 * Every field the webhook shows, the REST object shows with the same value (the webhook's view is a
 * subset), but `sequence`: the event's place among its object's events, which only webhooks carry.
 */
function expectSameObject(rest: Record<string, unknown>, hook: Record<string, unknown>) {
  for (const [key, value] of Object.entries(hook)) if (key !== 'sequence') expect(rest[key], key).toEqual(value);
  expect(rest).not.toHaveProperty('sequence');
}

/** What 2026-11-27 added: webhook payloads carry `sequence`, endpoints pinned earlier never see it. */
const sequenced = (version: Version) => version >= '2026-11-27';

it('covers every version served, up to the current one', () => {
  expect(API_VERSIONS.filter((v) => v.status !== 'sunset').map((v) => v.date)).toEqual(VERSIONS);
  expect(VERSIONS.at(-1)).toBe(CURRENT_VERSION);
});

describe('Order: total/subtotal renamed totalAmount/subtotalAmount (2025-10-01), lineItemCount added (2026-06-01), sequence in webhooks (2026-11-27)', () => {
  it.each(VERSIONS)('reads the same at %s on GET /v1/orders/{id}, in the list, and in the order.confirmed webhook', async (version) => {
    const one = await api(app(), 'GET', `/v1/orders/${orderId}`, { token: org.adminToken, org: org.slug, headers: at(version) });
    expect(one.status).toBe(200);
    expect(one.headers.get('service-version')).toBe(version);
    const order = one.body.order as Record<string, unknown>;
    const list = await api(app(), 'GET', '/v1/orders?limit=5', { token: org.adminToken, org: org.slug, headers: at(version) });
    // And each answer is what the OpenAPI document of that version describes (GET /v1/openapi.json at it).
    expectDocumentedResponse('GET', '/orders/{id}', one, 'management', version);
    expectDocumentedResponse('GET', '/orders', list, 'management', version);
    // 2026-11-27 changed webhook payloads only: from 2026-06-01 on an order reads as the current one.
    if (version < '2026-06-01') expect(responseProblems('GET', '/orders', list, 'management', CURRENT_VERSION)).not.toEqual([]);
    else expect(responseProblems('GET', '/orders', list, 'management', CURRENT_VERSION)).toEqual([]);
    expect(list.body.orders.find((o: { id: string }) => o.id === orderId)).toEqual(order);
    const hook = webhook(version, 'order.confirmed');
    expectSameObject(order, hook);

    const renamed = version === '2025-04-01';
    for (const shape of [order, hook]) {
      expect('total' in shape).toBe(renamed);
      expect('subtotal' in shape).toBe(renamed);
      expect('totalAmount' in shape).toBe(!renamed);
      expect('subtotalAmount' in shape).toBe(!renamed);
      expect('lineItemCount' in shape).toBe(version >= '2026-06-01');
    }
    // order.created, then this: the order's second event.
    if (sequenced(version)) expect(hook.sequence).toBe(2);
    else expect(hook).not.toHaveProperty('sequence');
    expect(renamed ? order.total : order.totalAmount).toBe(PRICE);
    // A line's own totalAmount is not the order's: no version renamed it.
    expect((order.lineItems as Array<Record<string, unknown>>)[0]!.totalAmount).toBe(PRICE);
  });

  it('reads the same on /live: the checkout and confirmation answers at an old version', async () => {
    const shop = storefront(app(), catalogue.channel.secret);
    const cart = await shop.call('POST', '/sales/carts', {
      items: [{ occurrenceId: catalogue.occurrenceId, ticketTypeId: catalogue.ticketTypeId, quantity: 2 }],
    });
    expect(cart.status).toBe(201);
    const checkout = await shop.call(
      'POST',
      `/sales/carts/${cart.body.cart.id}/checkout`,
      { customer: { email: 'old@shop.test' } },
      at('2025-04-01'),
    );
    expect(checkout.status).toBe(201);
    expectDocumentedResponse('POST', '/sales/carts/{id}/checkout', checkout, 'sales', '2025-04-01');
    expect(checkout.body.order).toMatchObject({ total: 2 * PRICE, subtotal: 2 * PRICE });
    expect(checkout.body.order).not.toHaveProperty('totalAmount');
    expect(checkout.body.order).not.toHaveProperty('lineItemCount');
    const confirmed = await shop.call('POST', `/sales/orders/${checkout.body.order.id}/confirm`, {}, at('2025-10-01'));
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.order).toMatchObject({ totalAmount: 2 * PRICE, status: 'confirmed' });
    expect(confirmed.body.order).not.toHaveProperty('total');
    expect(confirmed.body.order).not.toHaveProperty('lineItemCount');
    const rest = await api(app(), 'GET', `/v1/orders/${checkout.body.order.id}`, {
      token: org.adminToken,
      org: org.slug,
      headers: at('2025-10-01'),
    });
    for (const [key, value] of Object.entries(confirmed.body.order))
      if (key !== 'updatedAt') expect(rest.body.order[key], key).toEqual(value);
  });

  it('follows the organisation pin when no header names a version', async () => {
    const other = await createOrganisation(app(), 'pinned');
    const pinned = await api(app(), 'PATCH', '/v1/organisation', {
      token: other.adminToken,
      org: other.slug,
      body: { apiVersion: '2025-04-01' },
    });
    expect(pinned.status).toBe(200);
    const things = await seedCatalogue(app(), other);
    const { order } = await placeOrder(app(), things.channel, things);
    const res = await api(app(), 'GET', `/v1/orders/${order.id}`, { token: other.adminToken, org: other.slug });
    expect(res.headers.get('service-version')).toBe('2025-04-01');
    expect(res.body.order).toHaveProperty('total', PRICE);
    expect(res.body.order).not.toHaveProperty('totalAmount');
    // The header still wins over the pin.
    const current = await api(app(), 'GET', `/v1/orders/${order.id}`, {
      token: other.adminToken,
      org: other.slug,
      headers: at(CURRENT_VERSION),
    });
    expect(current.body.order).toHaveProperty('totalAmount', PRICE);
  });

  it('GraphQL keeps one schema: total and subtotal stay as deprecated fields, whatever Service-Version says', async () => {
    const query = `query ($id: ID!) { order(id: $id) { total subtotal totalAmount subtotalAmount lineItemCount } }`;
    const answers = [];
    for (const version of VERSIONS) {
      const res = await graphql(app(), query, { id: orderId }, { token: org.adminToken, org: org.slug, headers: at(version) });
      expect(res.body.errors).toBeUndefined();
      answers.push(res.body.data.order);
    }
    expect(answers[0]).toEqual({
      total: PRICE,
      subtotal: PRICE,
      totalAmount: PRICE,
      subtotalAmount: PRICE,
      lineItemCount: 1,
    });
    for (const answer of answers) expect(answer).toEqual(answers[0]);
    const introspection = await graphql(
      app(),
      '{ __type(name: "Order") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }',
    );
    const fields = introspection.body.data.__type.fields as Array<{
      name: string;
      isDeprecated: boolean;
      deprecationReason: string | null;
    }>;
    expect(fields.find((f) => f.name === 'total')).toEqual({
      name: 'total',
      isDeprecated: true,
      deprecationReason: 'Renamed totalAmount in API version 2025-10-01.',
    });
    expect(fields.find((f) => f.name === 'totalAmount')?.isDeprecated).toBe(false);
  });
});

describe('Event: venueId added (2026-06-01), sequence in webhooks (2026-11-27)', () => {
  it.each(VERSIONS)('reads the same at %s on GET /v1/events/{id}, in /live listings and in the event.created webhook', async (version) => {
    const res = await api(app(), 'GET', `/v1/events/${eventId}`, { token: org.adminToken, org: org.slug, headers: at(version) });
    expect(res.status).toBe(200);
    const event = res.body.event as Record<string, unknown>;
    const hook = webhook(version, 'event.created');
    expectSameObject(event, hook);

    const onSale = await api(app(), 'GET', `/v1/events/${catalogue.eventId}`, {
      token: org.adminToken,
      org: org.slug,
      headers: at(version),
    });
    const listings = await api(app(), 'GET', '/live/sales/listings', {
      headers: { 'x-channel-key': catalogue.channel.publishable, ...at(version) },
    });
    expect(listings.status).toBe(200);
    expectDocumentedResponse('GET', '/sales/listings', listings, 'sales', version);
    expectDocumentedResponse('GET', '/events/{id}', res, 'management', version);
    const listed = listings.body.events.find((e: { id: string }) => e.id === catalogue.eventId) as Record<string, unknown>;
    for (const key of ['id', 'name', 'description', 'status', 'timezone', 'venueId'])
      expect(listed[key], key).toEqual(onSale.body.event[key]);

    const shown = version >= '2026-06-01';
    for (const shape of [event, hook, listed, onSale.body.event]) expect('venueId' in shape).toBe(shown);
    for (const shape of [listed, onSale.body.event]) expect(shape).not.toHaveProperty('sequence');
    if (sequenced(version)) expect(hook.sequence).toBe(1);
    else expect(hook).not.toHaveProperty('sequence');
    if (shown) expect([event.venueId, hook.venueId, listed.venueId]).toEqual([catalogue.venueId, catalogue.venueId, catalogue.venueId]);
  });

  it('accepts an old version’s create body and answers in that version’s shape', async () => {
    const res = await api(app(), 'POST', '/v1/events', {
      token: org.adminToken,
      org: org.slug,
      headers: at('2025-10-01'),
      body: { accountId: org.account.id, name: 'Old client', timezone: 'Europe/London' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.event).toMatchObject({ name: 'Old client' });
    expect(res.body.event).not.toHaveProperty('venueId');
  });
});

describe('deprecated versions and the version table', () => {
  it('a response at a deprecated version carries Deprecation, Sunset and Link; a supported one none', async () => {
    const deprecated = API_VERSIONS.find((v) => v.date === '2025-04-01')!;
    expect(deprecated.status).toBe('deprecated');
    for (const path of ['/v1/meta/versions', `/v1/events/${eventId}`]) {
      const res = await api(app(), 'GET', path, { token: org.adminToken, org: org.slug, headers: at('2025-04-01') });
      expect(res.status).toBe(200);
      expect(res.headers.get('deprecation')).toBe(`@${Date.parse(deprecated.deprecatedAt!) / 1000}`);
      expect(res.headers.get('sunset')).toBe(new Date(deprecated.sunsetAt!).toUTCString());
      expect(res.headers.get('link')).toBe('</v1/meta/versions>; rel="deprecation"; type="application/json"');
    }
    const live = await api(app(), 'GET', '/live/sales/listings', {
      headers: { 'x-channel-key': catalogue.channel.publishable, ...at('2025-04-01') },
    });
    expect(live.headers.get('deprecation')).toBe('@1759276800');
    const supported = await api(app(), 'GET', '/v1/meta/versions', { headers: at('2025-10-01') });
    expect(supported.headers.get('deprecation')).toBeNull();
    expect(supported.headers.get('sunset')).toBeNull();
  });

  it('GET /meta/versions lists each version’s changes, generated from the declarations', async () => {
    const res = await api(app(), 'GET', '/v1/meta/versions');
    expect(res.status).toBe(200);
    const byDate = new Map(
      (res.body.versions as Array<{ date: string; breakingChanges: string[] }>).map((v) => [v.date, v.breakingChanges]),
    );
    expect(byDate.get('2025-10-01')).toEqual([
      'Order: total renamed totalAmount',
      'Order: subtotal renamed subtotalAmount',
      'Tickets issued: passCount added',
    ]);
    expect(byDate.get('2026-06-01')).toEqual(['Order: lineItemCount added', 'Event: venueId added (null when none)']);
    expect(byDate.get('2026-11-27')).toEqual([
      ...['Order', 'Customer', 'Event', 'Tickets issued', 'Ticket redeemed'].map(
        (resource) => `${resource}: sequence added (webhook payloads: the event's place among its object's events, 1, 2, ...)`,
      ),
      "Ticket redeemed: orderId added (webhook payloads: the pass's order)",
    ]);
    for (const version of API_VERSIONS) expect(byDate.get(version.date)).toEqual(version.changes.map(describeChange));
  });

  it('GET /v1/openapi.json and /live/openapi.json describe the version the request resolves to', async () => {
    for (const [surface, path] of [
      ['/v1', '/orders/{id}'],
      ['/live', '/sales/orders/{id}/confirm'],
    ] as const) {
      const shapes: Record<string, string[]> = {};
      for (const version of VERSIONS) {
        const res = await api(app(), 'GET', `${surface}/openapi.json`, { headers: at(version) });
        expect(res.body.info.version).toBe(version);
        const operation = res.body.paths[path].get ?? res.body.paths[path].post;
        shapes[version] = Object.keys(operation.responses['200'].content['application/json'].schema.properties.order.properties);
      }
      expect(shapes['2025-04-01']).toEqual(expect.arrayContaining(['total', 'subtotal']));
      expect(shapes['2025-04-01']).not.toContain('totalAmount');
      expect(shapes['2025-10-01']).toEqual(expect.arrayContaining(['totalAmount', 'subtotalAmount']));
      expect(shapes['2025-10-01']).not.toContain('lineItemCount');
      expect(shapes['2026-06-01']).toContain('lineItemCount');
      // Only webhook payloads carry sequence: /v1 and /live read the same at 2026-06-01 and at 2026-11-27.
      expect(shapes['2026-11-27']).toEqual(shapes['2026-06-01']);
      expect(shapes['2026-11-27']).not.toContain('sequence');
    }
  });

  it('ticket.issued carries passCount from 2025-10-01 on, and its order’s sequence from 2026-11-27 on', () => {
    expect(webhook('2025-04-01', 'ticket.issued')).not.toHaveProperty('passCount');
    for (const version of ['2025-10-01', '2026-06-01'] as const) {
      expect(webhook(version, 'ticket.issued')).toHaveProperty('passCount', 1);
      expect(webhook(version, 'ticket.issued')).not.toHaveProperty('sequence');
    }
    // order.created, order.confirmed, then this: the order's third event.
    expect(webhook('2026-11-27', 'ticket.issued')).toMatchObject({ passCount: 1, sequence: 3 });
  });
});
