import { randomBytes } from 'node:crypto';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CURRENT_VERSION } from '../../src/versions.ts';
import { createWorker } from '../../workflows/worker.ts';
import { useTestApp } from '../support/app.ts';
import { as, asAdmin, createApiKey, staffWithoutRights, staffWithRoles } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { expectDocumentedResponse } from '../support/openapi-check.ts';
import { placeOrder, seedCatalogue } from '../support/sales.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Source events read instead of received (GET /v1/webhook-events, GraphQL webhookEvents): events
 * made by the real flows (a storefront order, events created over /v1, an endpoint test), delivered
 * by a real in-process worker through the real Temporal dev server to a real receiver on which one
 * endpoint always fails (500), so its deliveries stay pending until their last attempt and then fail.
 */

// The worker decrypts the signing secrets the API stored: both read this key.
const app = useTestApp({
  WEBHOOK_RETRY_SCHEDULE: '3s',
  WEBHOOK_ATTEMPT_TIMEOUT: '2s',
  SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
});
let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;
let org: TestOrganisation;
let other: TestOrganisation;
let accountB: string;
/** Endpoints of the first account (`ok` succeeds, `down` answers 500 and is pinned to 2025-10-01) and of account B. */
const endpoints = { ok: '', down: '', onB: '' };

interface StoredEvent {
  id: string;
  type: string;
  accountId: string;
  objectId: string;
}
/** The organisation's source events as stored, newest first (createdAt, then id, descending). */
let stored: StoredEvent[];
/** The ones the tests name. */
const made = {} as Record<'customer' | 'orderCreated' | 'confirmed' | 'issued' | 'eventA' | 'eventB' | 'sample' | 'foreign', string>;
/** What deliverySuccess answered right after the order was confirmed, while `down` still retried. */
let whilePending: { unsucceeded: any; succeeded: any };

const admin = () => asAdmin(org);
const idsOf = (res: { body: { webhookEvents: Array<{ id: string }> } }) => res.body.webhookEvents.map((event) => event.id);
const list = (qs = '', options: { token?: string; org?: string; headers?: Record<string, string> } = admin()) =>
  api(app, 'GET', `/v1/webhook-events${qs ? `?${qs}` : ''}`, options);
const detailPaths = (body: { details?: Array<{ path: string }> }) => (body.details ?? []).map((detail) => detail.path);

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function endpoint(accountId: string, path: string, body: Record<string, unknown>) {
  const res = await api(app, 'POST', '/v1/webhook-endpoints', { ...admin(), body: { accountId, url: `${receiver.url}${path}`, ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.endpoint.id as string;
}

async function createEvent(o: TestOrganisation, accountId: string, name: string) {
  const res = await api(app, 'POST', '/v1/events', { ...asAdmin(o), body: { accountId, name, timezone: 'Europe/London' } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.event.id as string;
}

/** The receiver's body of the delivery of `eventId` to the endpoint at `path`. */
function delivered(path: string, eventId: string) {
  const request = receiver.requests.find((r) => r.path === path && r.headers['service-event-id'] === eventId);
  if (!request) throw new Error(`no delivery of ${eventId} reached ${path}`);
  return JSON.parse(request.rawBody) as { version: string; data: Record<string, unknown> };
}

beforeAll(async () => {
  ({ worker } = await createWorker({ config: app().config, db: app().runtime.db, logger: app().runtime.logger, prebundled: false }));
  running = worker.run();
  receiver = await startWebhookReceiver();
  receiver.pathBehaviours.set('/down', { failAlways: true });
  [org, other] = await Promise.all([createOrganisation(app, 'pull'), createOrganisation(app, 'pullother')]);
  accountB = (await createAccount(app, org, 'B')).id;
  endpoints.ok = await endpoint(org.account.id, '/ok', { eventTypes: ['event.created', 'order.confirmed'] });
  endpoints.down = await endpoint(org.account.id, '/down', { eventTypes: ['order.confirmed'], apiVersion: '2025-10-01' });
  endpoints.onB = await endpoint(accountB, '/b', { eventTypes: ['event.created'] });

  // customer.created and order.created at checkout, order.confirmed and ticket.issued at confirmation.
  const catalogue = await seedCatalogue(app, org, { priceAmount: 4000 });
  const { order } = await placeOrder(app, catalogue.channel, catalogue, { quantity: 2 });
  whilePending = { unsucceeded: await list('deliverySuccess=false'), succeeded: await list('deliverySuccess=true') };

  const eventA = await createEvent(org, org.account.id, 'On A');
  const eventB = await createEvent(org, accountB, 'On B');
  const test = await api(app, 'POST', `/v1/webhook-endpoints/${endpoints.ok}/test`, admin());
  expect(test.status, JSON.stringify(test.body)).toBe(201);
  await createEvent(other, other.account.id, 'Elsewhere');

  await waitUntil(async () => {
    const [row] = await query<{ n: number }>(
      app,
      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE "organisationId" = $1 AND status = 'pending'`,
      [org.organisation.id],
    );
    return row!.n === 0;
  });

  const rows = (organisationId: string) =>
    query<StoredEvent>(
      app,
      `SELECT id, type, "accountId", "objectId" FROM webhook_events WHERE "organisationId" = $1 ORDER BY "createdAt" DESC, id DESC`,
      [organisationId],
    );
  stored = await rows(org.organisation.id);
  const find = (type: string, objectId: string) => stored.find((event) => event.type === type && event.objectId === objectId)!.id;
  made.customer = find('customer.created', order.customerId);
  made.orderCreated = find('order.created', order.id);
  made.confirmed = find('order.confirmed', order.id);
  made.issued = find('ticket.issued', order.id);
  made.eventA = find('event.created', eventA);
  made.eventB = find('event.created', eventB);
  made.sample = stored.find((event) => event.type === 'event.created' && event.objectId.startsWith('evt_sample'))!.id;
  made.foreign = (await rows(other.organisation.id))[0]!.id;
}, 120_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await receiver?.close();
});

const newest = () => stored.map((event) => event.id);
const only = (...ids: string[]) => newest().filter((id) => ids.includes(id));

describe('GET /v1/webhook-events', () => {
  it('lists every source event of the organisation newest first, each with its deliveries, page by page', async () => {
    expect(stored).toHaveLength(7);
    const res = await list();
    expect(res.status).toBe(200);
    expectDocumentedResponse('GET', '/v1/webhook-events', res);
    expect(idsOf(res)).toEqual(newest());
    // Newest first holds for the recorded times themselves, not only for the database's order.
    const times = res.body.webhookEvents.map((event: { createdAt: string }) => Date.parse(event.createdAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect(idsOf(res)[0]).toBe(made.sample);
    expect(res.body.pagination).toEqual({ page: 1, limit: 20, total: 7, totalPages: 1, hasNext: false, hasPrev: false });

    const confirmed = res.body.webhookEvents.find((event: { id: string }) => event.id === made.confirmed);
    expect(confirmed).toEqual({
      id: made.confirmed,
      type: 'order.confirmed',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      accountId: org.account.id,
      data: expect.objectContaining({ status: 'confirmed', accountId: org.account.id }),
      deliveries: expect.any(Array),
    });
    expect(confirmed.deliveries).toHaveLength(2);
    expect(confirmed.deliveries).toEqual(
      expect.arrayContaining([
        { id: expect.stringMatching(/^whd_/), endpointId: endpoints.ok, status: 'succeeded' },
        { id: expect.stringMatching(/^whd_/), endpointId: endpoints.down, status: 'failed' },
      ]),
    );
    // The same ids the receiver saw.
    const okDelivery = confirmed.deliveries.find((d: { endpointId: string }) => d.endpointId === endpoints.ok);
    expect(receiver.requests.find((r) => r.headers['service-delivery-id'] === okDelivery.id)?.headers['service-event-id']).toBe(
      made.confirmed,
    );
    const customer = res.body.webhookEvents.find((event: { id: string }) => event.id === made.customer);
    expect(customer).toMatchObject({ type: 'customer.created', deliveries: [] });
    // The endpoint test's sample is a source event with its one delivery.
    const sample = res.body.webhookEvents.find((event: { id: string }) => event.id === made.sample);
    expect(sample).toMatchObject({
      type: 'event.created',
      accountId: org.account.id,
      data: { id: expect.stringMatching(/^evt_sample/), accountId: org.account.id },
      deliveries: [{ endpointId: endpoints.ok, status: 'succeeded' }],
    });

    const page2 = await list('page=2&limit=3');
    expect(idsOf(page2)).toEqual(newest().slice(3, 6));
    expect(page2.body.pagination).toEqual({ page: 2, limit: 3, total: 7, totalPages: 3, hasNext: true, hasPrev: true });
    const page3 = await list('page=3&limit=3');
    expect(idsOf(page3)).toEqual(newest().slice(6));
    expect(page3.body.pagination).toMatchObject({ hasNext: false, hasPrev: true });
    const beyond = await list('page=4&limit=3');
    expect([idsOf(beyond), beyond.body.pagination.hasNext]).toEqual([[], false]);
  });

  it('shows data at the resolved version, as a delivery pinned to that version carries it', async () => {
    const at = async (version?: string) => {
      const res = await list('type=order.confirmed', { ...admin(), headers: version ? { 'service-version': version } : {} });
      expect(res.status).toBe(200);
      expect(res.headers.get('service-version')).toBe(version ?? CURRENT_VERSION);
      expectDocumentedResponse('GET', '/v1/webhook-events', res, 'management', version ?? CURRENT_VERSION);
      expect(idsOf(res)).toEqual([made.confirmed]);
      return { res, data: res.body.webhookEvents[0].data as Record<string, unknown> };
    };

    // The organisation's version is the current one: totalAmount, lineItemCount and the order's sequence.
    const current = (await at()).data;
    expect(current).toMatchObject({ totalAmount: 8000, subtotalAmount: 8000, lineItemCount: 1, sequence: 2 });
    expect(delivered('/ok', made.confirmed)).toMatchObject({ version: CURRENT_VERSION, data: current });
    expect(delivered('/ok', made.confirmed).data).toEqual(current);
    const created = (await list('type=order.created')).body.webhookEvents[0];
    expect(created.data.sequence).toBe(1);

    // The `down` endpoint is pinned to 2025-10-01: the same event, read at that version, is what it was sent.
    const supported = (await at('2025-10-01')).data;
    expect(delivered('/down', made.confirmed)).toMatchObject({ version: '2025-10-01' });
    expect(supported).toEqual(delivered('/down', made.confirmed).data);
    expect(supported).toMatchObject({ totalAmount: 8000, subtotalAmount: 8000 });
    expect(Object.keys(supported)).not.toContain('lineItemCount');
    expect(Object.keys(supported)).not.toContain('sequence');

    const before = (await at('2026-06-01')).data;
    expect(before).toMatchObject({ lineItemCount: 1 });
    expect(Object.keys(before)).not.toContain('sequence');

    const { res: deprecated, data: oldest } = await at('2025-04-01');
    expect(deprecated.headers.get('deprecation')).toMatch(/^@\d+$/);
    expect(oldest).toMatchObject({ total: 8000, subtotal: 8000 });
    for (const field of ['totalAmount', 'subtotalAmount', 'lineItemCount', 'sequence']) expect(Object.keys(oldest)).not.toContain(field);
    // Only what the versions changed differs.
    const { total: _total, subtotal: _subtotal, ...rest } = oldest;
    const { totalAmount: _amount, subtotalAmount: _subamount, lineItemCount: _count, sequence: _sequence, ...same } = current;
    expect(rest).toEqual(same);

    // GraphQL reads the same data at the same version.
    for (const version of [undefined, '2025-10-01']) {
      const gql = await graphql(
        app,
        '{ webhookEvents(type: "order.confirmed") { nodes { id data } } }',
        {},
        {
          ...admin(),
          headers: version ? { 'service-version': version } : {},
        },
      );
      expect(gql.body.errors).toBeUndefined();
      expect(gql.body.data.webhookEvents.nodes).toEqual([{ id: made.confirmed, data: version ? supported : current }]);
    }
  });

  it('filters by type, createdAfter and deliverySuccess, alone and together', async () => {
    const get = async (qs: string) => {
      const res = await list(qs);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return idsOf(res);
    };
    expect(await get('type=order.confirmed')).toEqual([made.confirmed]);
    expect(await get('type=event.created')).toEqual(only(made.sample, made.eventB, made.eventA));
    expect(await get('type=order.refunded')).toEqual([]);

    const eventA = (await list('type=event.created')).body.webhookEvents.find((event: { id: string }) => event.id === made.eventA);
    const after = new Date(eventA.createdAt);
    expect(await get(`createdAfter=${eventA.createdAt}`)).toEqual(only(made.sample, made.eventB));
    // The same instant written with an offset.
    const withOffset = new Date(after.getTime() + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
    expect(await get(`createdAfter=${encodeURIComponent(withOffset)}`)).toEqual(only(made.sample, made.eventB));
    expect(await get(`createdAfter=${new Date(after.getTime() - 1).toISOString()}`)).toEqual(only(made.sample, made.eventB, made.eventA));
    expect(await get(`createdAfter=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);
    // createdBefore includes its instant: with createdAfter just before it, the one event made then.
    const upToA = await get(`createdBefore=${eventA.createdAt}`);
    expect(upToA).toContain(made.eventA);
    expect(upToA).not.toContain(made.eventB);
    expect(await get(`createdAfter=${new Date(after.getTime() - 1).toISOString()}&createdBefore=${eventA.createdAt}`)).toEqual([
      made.eventA,
    ]);
    // The graph's deliveries take the same range, both ends included.
    const deliveries = async (range: Record<string, string>) => {
      const res = await graphql(
        app,
        'query ($after: DateTime, $before: DateTime) { webhookDeliveries(createdAfter: $after, createdBefore: $before, first: 100) { nodes { id } } }',
        range,
        admin(),
      );
      expect(res.body.errors).toBeUndefined();
      return res.body.data.webhookDeliveries.nodes.length as number;
    };
    const every = await deliveries({});
    expect(every).toBeGreaterThan(0);
    expect(await deliveries({ after: new Date(0).toISOString(), before: new Date(Date.now() + 60_000).toISOString() })).toBe(every);
    expect(await deliveries({ before: new Date(0).toISOString() })).toBe(0);
    expect(await deliveries({ after: new Date(Date.now() + 60_000).toISOString() })).toBe(0);

    // `down` failed the confirmed order's delivery; every other delivery succeeded; three events had none.
    expect(await get('deliverySuccess=false')).toEqual([made.confirmed]);
    expect(await get('deliverySuccess=true')).toEqual(only(made.sample, made.eventB, made.eventA));
    expect(await get('type=event.created&deliverySuccess=false')).toEqual([]);
    expect(await get(`type=event.created&deliverySuccess=true&createdAfter=${eventA.createdAt}`)).toEqual(only(made.sample, made.eventB));
    const paged = await list('deliverySuccess=true&limit=2');
    expect([idsOf(paged), paged.body.pagination.total]).toEqual([only(made.sample, made.eventB, made.eventA).slice(0, 2), 3]);
  });

  it('counts a delivery still being retried as not succeeded', () => {
    const { unsucceeded, succeeded } = whilePending;
    expect(idsOf(unsucceeded)).toEqual([made.confirmed]);
    expect(unsucceeded.body.webhookEvents[0].deliveries).toContainEqual({
      id: expect.any(String),
      endpointId: endpoints.down,
      status: 'pending',
    });
    expect(idsOf(succeeded)).toEqual([]);
  });

  it('validates the query, naming the parameter, on both surfaces', async () => {
    for (const [qs, path] of [
      ['type=order.exploded', 'query.type'],
      ['createdAfter=yesterday', 'query.createdAfter'],
      ['createdAfter=2026-07-01', 'query.createdAfter'],
      ['deliverySuccess=maybe', 'query.deliverySuccess'],
      ['limit=101', 'query.limit'],
      ['page=0', 'query.page'],
    ]) {
      const res = await list(qs);
      expect([res.status, res.body.code, detailPaths(res.body)], qs).toEqual([400, 'VALIDATION_FAILED', [path]]);
    }
    const gql = await graphql(app, '{ webhookEvents(type: "nope", createdAfter: "soon") { pagination { total } } }', {}, admin());
    expect(gql.body.errors[0].extensions).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(detailPaths(gql.body.errors[0].extensions).sort()).toEqual(['createdAfter', 'type']);
  });
});

describe('who sees which events', () => {
  it('another organisation sees only its own events, and none of these by id', async () => {
    const theirs = await list('', asAdmin(other));
    expect([theirs.status, idsOf(theirs)]).toEqual([200, [made.foreign]]);
    const byId = await graphql(app, 'query ($id: ID!) { webhookEvent(id: $id) { id } }', { id: made.confirmed }, asAdmin(other));
    expect([byId.body.data.webhookEvent, byId.body.errors[0].extensions.code]).toEqual([null, 'NOT_FOUND']);
    const mine = await list('', asAdmin(org));
    expect(idsOf(mine)).not.toContain(made.foreign);
  });

  it('an API key needs webhooks.read: 404 without it; a key of one account reads that account', async () => {
    const without = (await createApiKey(app, org, ['events.read', 'webhooks.write'])).key;
    const refused = await list('', as(without, org));
    expect([refused.status, refused.body.code]).toEqual([404, 'NOT_FOUND']);
    const gql = await graphql(app, '{ webhookEvents { pagination { total } } }', {}, as(without, org));
    expect([gql.body.data.webhookEvents, gql.body.errors[0].extensions.code]).toEqual([null, 'NOT_FOUND']);

    const reader = (await createApiKey(app, org, ['webhooks.read'])).key;
    expect(idsOf(await list('', as(reader, org)))).toEqual(newest());
    const readerOfB = (await createApiKey(app, org, ['webhooks.read'], { accountId: accountB })).key;
    expect(idsOf(await list('', as(readerOfB, org)))).toEqual([made.eventB]);
  });

  it('staff see the accounts they may read webhooks on; without any such right 403', async () => {
    const viewerOfB = (await staffWithRoles(app, org, ['viewer'], accountB)).token;
    const seen = await list('', as(viewerOfB, org));
    expect([idsOf(seen), seen.body.pagination.total]).toEqual([[made.eventB], 1]);
    expect(idsOf(await list('deliverySuccess=false', as(viewerOfB, org)))).toEqual([]);
    const notTheirs = await graphql(app, 'query ($id: ID!) { webhookEvent(id: $id) { id } }', { id: made.confirmed }, as(viewerOfB, org));
    expect(notTheirs.body.errors[0].extensions.code).toBe('NOT_FOUND');

    const viewerOfA = (await staffWithRoles(app, org, ['viewer'])).token;
    expect(idsOf(await list('', as(viewerOfA, org)))).toEqual(newest().filter((id) => id !== made.eventB));

    const nobody = (await staffWithoutRights(app, org)).token;
    const refused = await list('', as(nobody, org));
    expect([refused.status, refused.body.code]).toEqual([403, 'FORBIDDEN']);
  });
});

describe('GraphQL webhookEvents and webhookEvent', () => {
  const PAGE = `
    query ($first: Int, $after: String, $last: Int, $before: String) {
      webhookEvents(first: $first, after: $after, last: $last, before: $before) {
        edges { cursor node { id type createdAt accountId account { id } data deliveries { id endpointId status endpoint { id } } } }
        pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
        pagination { total }
      }
    }`;

  it('pages with cursors through the same events /v1 lists, with the same data and deliveries', async () => {
    const rest = (await list('limit=100')).body.webhookEvents;
    const nodes: any[] = [];
    let after: string | null = null;
    for (let pages = 0; ; pages += 1) {
      expect(pages).toBeLessThan(4);
      const res = await graphql(app, PAGE, { first: 3, after }, admin());
      expect(res.body.errors).toBeUndefined();
      const page = res.body.data.webhookEvents;
      expect(page.pagination.total).toBe(7);
      nodes.push(...page.edges.map((edge: { node: unknown }) => edge.node));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    expect(nodes.map((node) => node.id)).toEqual(newest());
    expect(
      nodes.map(({ account: _account, deliveries, ...node }) => ({
        ...node,
        deliveries: deliveries.map(({ endpoint, status, ...delivery }: any) => {
          expect(endpoint.id).toBe(delivery.endpointId);
          return { ...delivery, status: status.toLowerCase() };
        }),
      })),
    ).toEqual(rest);
    expect(nodes.every((node) => node.account.id === node.accountId)).toBe(true);

    const last = await graphql(app, PAGE, { last: 2 }, admin());
    expect(last.body.data.webhookEvents.edges.map((edge: { node: { id: string } }) => edge.node.id)).toEqual(newest().slice(-2));
    expect(last.body.data.webhookEvents.pageInfo).toMatchObject({ hasPreviousPage: true });
  });

  it('reads one event by id, and through node(id:)', async () => {
    const one = await graphql(
      app,
      'query ($id: ID!) { webhookEvent(id: $id) { id type deliveries { endpointId } } node(id: $id) { __typename id } }',
      { id: made.eventB },
      admin(),
    );
    expect(one.body.errors).toBeUndefined();
    expect(one.body.data).toEqual({
      webhookEvent: { id: made.eventB, type: 'event.created', deliveries: [{ endpointId: endpoints.onB }] },
      node: { __typename: 'WebhookEvent', id: made.eventB },
    });
    const unknown = await graphql(app, '{ webhookEvent(id: "wev_0000000000000000000000") { id } }', {}, admin());
    expect(unknown.body.errors[0].extensions.code).toBe('NOT_FOUND');
  });
});

describe('retention', () => {
  it('leaves out events older than WEBHOOK_RETENTION, even before the workers prune them', async () => {
    const [kept] = await query<{ createdAt: Date }>(app, 'SELECT "createdAt" FROM webhook_events WHERE id = $1', [made.customer]);
    await query(app, `UPDATE webhook_events SET "createdAt" = now() - interval '31 days' WHERE id = $1`, [made.customer]);
    try {
      const res = await list();
      expect([idsOf(res), res.body.pagination.total]).toEqual([newest().filter((id) => id !== made.customer), 6]);
      const byId = await graphql(app, 'query ($id: ID!) { webhookEvent(id: $id) { id } }', { id: made.customer }, admin());
      expect(byId.body.errors[0].extensions.code).toBe('NOT_FOUND');
      const [row] = await query<{ n: number }>(app, 'SELECT count(*)::int AS n FROM webhook_events WHERE id = $1', [made.customer]);
      expect(row!.n).toBe(1);
    } finally {
      await query(app, 'UPDATE webhook_events SET "createdAt" = $2 WHERE id = $1', [made.customer, kept!.createdAt]);
    }
  });
});
