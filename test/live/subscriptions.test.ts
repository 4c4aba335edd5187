import { createClient, type Client } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoApps, type AppPair, type TestApp } from '../support/app.ts';
import { query } from '../support/db.ts';
import { createApiKey, customRole, staffWithRoles } from '../support/credentials.ts';
import {
  api,
  createAccount,
  createOrganisation,
  createStaffUser,
  graphql,
  systemRole,
  type TestOrganisation,
} from '../support/fixtures.ts';
import { placeOrder, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';
import { eventually, follow, rawSse, sleep, sseClient as clientOf } from '../support/sse-client.ts';
import { createTestEndpoint, recordFailedDeliveries, startWebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * GraphQL subscriptions as an admin screen uses them: graphql-sse's own client (the GraphQL-over-SSE
 * protocol) subscribed on one API server while the changes are made through the other, both on one
 * database, each with its own runtime and its own listening connection, as two API processes.
 */

let pair: AppPair;
let org: TestOrganisation;
let catalogue: SeededCatalogue;

const ORDER_CHANGED = `subscription ($accountId: ID!, $eventId: ID) {
  orderChanged(accountId: $accountId, eventId: $eventId) { resync cursor change committedAt order { id status } }
}`;
const COUNTERS = `subscription ($occurrenceId: ID!) {
  salesCounters(occurrenceId: $occurrenceId) {
    occurrenceId counters { sold held available } occurrence { id startsAt sales { sold held available } }
  }
}`;

const DELIVERIES = `subscription ($endpointId: ID!) {
  webhookDeliveryChanged(endpointId: $endpointId) { resync cursor delivery { id status } }
}`;

const AUDIT = `subscription ($accountId: ID) {
  auditEntryAdded(accountId: $accountId) { resync cursor entry { action targetId } }
}`;

function sseClient(app: TestApp, token: string, headers: Record<string, string> = {}): Client {
  return clientOf(app, token, org.slug, headers);
}

beforeAll(async () => {
  pair = await startTwoApps();
  org = await createOrganisation(pair.a, 'live');
  catalogue = await seedCatalogue(pair.a, org);
});

afterAll(async () => {
  await pair?.stop();
});

describe('orderChanged', () => {
  it('streams an order placed through the other API process, created then confirmed, in commit order', async () => {
    const stream = follow(sseClient(pair.b, org.adminToken), ORDER_CHANGED, { accountId: org.account.id });
    // The stream is open once its first comment arrived; a change right after is not missed.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = Date.now();
    const { order } = await placeOrder(pair.a, catalogue.channel, catalogue);
    const placed = Date.now();
    const [created, confirmed] = await stream.take(2);
    stream.dispose();
    // committedAt: when each change's transaction ended, in order, while the client waited for it.
    const committed = [created, confirmed].map((result) => Date.parse(result!.data!.orderChanged.committedAt));
    expect(committed[0]).toBeGreaterThanOrEqual(before - 5);
    expect(committed[1]).toBeGreaterThanOrEqual(committed[0]!);
    expect(committed[1]).toBeLessThanOrEqual(placed + 5);
    expect(created!.data!.orderChanged).toMatchObject({ resync: false, change: 'CREATED', order: { id: order.id } });
    expect(confirmed!.data!.orderChanged).toMatchObject({
      resync: false,
      change: 'CONFIRMED',
      order: { id: order.id, status: 'CONFIRMED' },
    });
    expect(BigInt(confirmed!.data!.orderChanged.cursor)).toBeGreaterThan(BigInt(created!.data!.orderChanged.cursor));
  });

  it("shares an execution only between streams that would read it alike: a key without events.read never sees the event's name the admin sees", async () => {
    const query = `subscription ($accountId: ID!) { orderChanged(accountId: $accountId) { change order { id lineItems { event { name } } } } }`;
    const { key } = await createApiKey(pair.a, org, ['orders.read']);
    const admin = follow(sseClient(pair.b, org.adminToken), query, { accountId: org.account.id });
    const keyed = follow(sseClient(pair.b, key), query, { accountId: org.account.id });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await placeOrder(pair.a, catalogue.channel, catalogue);
    const [, asAdmin] = await admin.take(2);
    const [, asKey] = await keyed.take(2);
    admin.dispose();
    keyed.dispose();
    const name = asAdmin!.data!.orderChanged.order.lineItems[0].event.name as string;
    expect(name.length).toBeGreaterThan(0);
    expect(JSON.stringify(asKey)).not.toContain(name);
    expect(asKey!.errors?.[0]?.extensions).toMatchObject({ code: expect.stringMatching(/NOT_FOUND|FORBIDDEN/) });
  });

  it('sends nothing for a change that rolled back', async () => {
    const { order } = await placeOrder(pair.a, catalogue.channel, catalogue);
    const stream = follow(sseClient(pair.b, org.adminToken), ORDER_CHANGED, { accountId: org.account.id });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The status changes inside a transaction that then fails: the trigger ran, the commit never came.
    await expect(
      pair.a.runtime.db.$transaction(async (tx) => {
        await tx.order.update({ where: { id: order.id }, data: { status: 'cancelled', cancelledAt: new Date() } });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    const refund = await api(pair.a, 'POST', `/v1/orders/${order.id}/refund`, { token: org.adminToken, org: org.slug, body: {} });
    expect(refund.status, JSON.stringify(refund.body)).toBe(200);
    const [first] = await stream.take(1);
    stream.dispose();
    expect(first!.data!.orderChanged).toMatchObject({ change: 'REFUNDED', order: { id: order.id, status: 'REFUNDED' } });
  });

  it('narrows to one event, and shows another account only to those who may read it', async () => {
    const second = await createAccount(pair.a, org, 'Second hall');
    const other = await seedCatalogue(pair.a, org, { accountId: second.id });
    const viewer = await staffWithRoles(pair.a, org, ['viewer']);
    const onSecond = follow(sseClient(pair.b, org.adminToken), ORDER_CHANGED, { accountId: second.id, eventId: other.eventId });
    const refused = follow(sseClient(pair.b, viewer.token), ORDER_CHANGED, { accountId: second.id });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await placeOrder(pair.a, catalogue.channel, catalogue);
    const { order } = await placeOrder(pair.a, other.channel, other, { pending: true });
    const [first] = await onSecond.take(1);
    onSecond.dispose();
    expect(first!.data!.orderChanged).toMatchObject({ change: 'CREATED', order: { id: order.id } });
    const [refusal] = await refused.take(1);
    expect(refusal!.errors![0]).toMatchObject({ extensions: { code: 'NOT_FOUND' } });
  });

  it('replays what a client missed after its Last-Event-ID, and tells it to resync when that is beyond the window', async () => {
    const first = follow(sseClient(pair.b, org.adminToken), ORDER_CHANGED, { accountId: org.account.id });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await placeOrder(pair.a, catalogue.channel, catalogue, { pending: true });
    const [seen] = await first.take(1);
    first.dispose();
    // While the client is away, another order is placed and confirmed.
    const { order: missed } = await placeOrder(pair.a, catalogue.channel, catalogue);
    const resumed = follow(sseClient(pair.a, org.adminToken, { 'last-event-id': seen!.data!.orderChanged.cursor }), ORDER_CHANGED, {
      accountId: org.account.id,
    });
    const replayed = await resumed.take(2);
    resumed.dispose();
    expect(replayed.map((result) => [result.data!.orderChanged.change, result.data!.orderChanged.order.id])).toEqual([
      ['CREATED', missed.id],
      ['CONFIRMED', missed.id],
    ]);

    const lost = follow(sseClient(pair.a, org.adminToken, { 'last-event-id': '1' }), ORDER_CHANGED, { accountId: org.account.id });
    const [resync] = await lost.take(1);
    lost.dispose();
    expect(resync!.data!.orderChanged).toEqual({ resync: true, cursor: null, change: null, committedAt: null, order: null });
  });

  it('ends the stream of a key revoked while it streams, with API_KEY_REVOKED', async () => {
    const { key, apiKey } = await createApiKey(pair.a, org, ['orders.read']);
    const stream = follow(sseClient(pair.b, key), ORDER_CHANGED, { accountId: org.account.id });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const revoked = await api(pair.a, 'POST', `/v1/api-keys/${apiKey.id}/revoke`, { token: org.adminToken, org: org.slug });
    expect(revoked.status).toBe(200);
    // No event follows: the stream's own recheck ends it.
    await stream.ended();
    expect(stream.results.at(-1)!.errors![0]).toMatchObject({ extensions: { code: 'API_KEY_REVOKED' } });
  });
});

describe('lost change notices', () => {
  it('catches a stream up from the table once its process listens again, without sending twice what it had sent', async () => {
    // Two streams of one key read alike: the group hands them each event at once (its fast path).
    const { key } = await createApiKey(pair.a, org, ['orders.read']);
    const streams = [0, 1].map(() => follow(sseClient(pair.b, key), ORDER_CHANGED, { accountId: org.account.id }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const first = await placeOrder(pair.a, catalogue.channel, catalogue);
    for (const stream of streams) await stream.take(2);

    // The listening connections go (a failover, a restarted proxy): once back, every stream reads
    // the table from before its last event, which holds the first order's events again.
    const notices = pair.b.runtime.notices;
    await query(
      pair.b,
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle' AND query IN ('SELECT 1', 'LISTEN service_live')`,
    );
    const until = async (listening: boolean) => {
      const end = Date.now() + 10_000;
      while (notices.listening !== listening && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(notices.listening).toBe(listening);
    };
    await until(false);
    await until(true);

    const second = await placeOrder(pair.a, catalogue.channel, catalogue);
    for (const stream of streams) {
      await stream.take(4);
      // Anything sent twice would have come before the second order's events, or right after them.
      await new Promise((resolve) => setTimeout(resolve, 300));
      stream.dispose();
      expect(stream.results.map((result) => [result.data?.orderChanged.change, result.data?.orderChanged.order.id])).toEqual([
        ['CREATED', first.order.id],
        ['CONFIRMED', first.order.id],
        ['CREATED', second.order.id],
        ['CONFIRMED', second.order.id],
      ]);
    }
  });
});

describe('rights that move while streams share their events', () => {
  it("ends a person's stream before the next event once their role is removed, while a colleague's stream of the same events goes on", async () => {
    const role = systemRole(org, 'viewer');
    const leaving = await createStaffUser(pair.a, org, [{ roleId: role, accountId: org.account.id }], 'leaving');
    const staying = await createStaffUser(pair.a, org, [{ roleId: role, accountId: org.account.id }], 'staying');
    const gone = follow(sseClient(pair.b, leaving.token), ORDER_CHANGED, { accountId: org.account.id });
    const kept = follow(sseClient(pair.b, staying.token), ORDER_CHANGED, { accountId: org.account.id });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Both receive an order while their rights stand (the events are shared between them).
    const first = await placeOrder(pair.a, catalogue.channel, catalogue);
    await gone.take(2);
    await kept.take(2);
    const removed = await api(pair.a, 'DELETE', `/v1/user-account-roles/${leaving.assignments[0]!.id}`, {
      token: org.adminToken,
      org: org.slug,
    });
    expect(removed.status).toBe(200);
    const second = await placeOrder(pair.a, catalogue.channel, catalogue);
    await kept.take(4);
    kept.dispose();
    // Well within RECHECK_MS: the removal's change notice sent the next event through a check.
    await gone.ended(3_000);
    const orders = gone.results.flatMap((result) => (result.data ? [result.data.orderChanged.order.id] : []));
    expect(orders).toEqual([first.order.id, first.order.id]);
    expect(gone.results.at(-1)!.errors![0]).toMatchObject({ extensions: { code: 'FORBIDDEN' } });
    expect(kept.results.slice(2, 4).map((result) => result.data!.orderChanged.order.id)).toEqual([second.order.id, second.order.id]);
  });
});

describe('salesCounters', () => {
  it("sends an occurrence's counters at once, then as orders through the other process move them", async () => {
    const stream = follow(sseClient(pair.b, org.adminToken), COUNTERS, { occurrenceId: catalogue.occurrenceId });
    const [initial] = await stream.take(1);
    const before = initial!.data!.salesCounters.counters as { sold: number };
    await placeOrder(pair.a, catalogue.channel, catalogue, { quantity: 2 });
    const until = Date.now() + 15_000;
    while (stream.results.at(-1)!.data!.salesCounters.counters.sold !== before.sold + 2 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    stream.dispose();
    const last = stream.results.at(-1)!.data!.salesCounters;
    expect(last).toMatchObject({ occurrenceId: catalogue.occurrenceId, counters: { sold: before.sold + 2 } });
    // The occurrence itself, its sales the same counters: what a normalised cache updates.
    expect(last.occurrence).toMatchObject({ id: catalogue.occurrenceId, sales: last.counters });
  });

  it('sends them again as the catalogue moves them: the first ticket held, a capacity, a ticket type added or removed, a cancellation', async () => {
    const fresh = await seedCatalogue(pair.a, org, { capacity: 10 });
    const query = `subscription ($occurrenceId: ID!) { salesCounters(occurrenceId: $occurrenceId) { counters { capacity sold held available } } }`;
    const stream = follow(sseClient(pair.b, org.adminToken), query, { occurrenceId: fresh.occurrenceId });
    const reaches = async (counters: Record<string, number>) => {
      const until = Date.now() + 15_000;
      const last = () => stream.results.at(-1)?.data?.salesCounters.counters;
      while (JSON.stringify(last()) !== JSON.stringify(counters) && !stream.done && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(last()).toEqual(counters);
    };
    const admin = { token: org.adminToken, org: org.slug };
    const changed = async (path: string, body: Record<string, unknown>) =>
      expect((await api(pair.a, 'PATCH', path, { ...admin, body })).status).toBe(200);
    await reaches({ capacity: 10, sold: 0, held: 0, available: 10 });
    // The pair's first hold (a checkout's) inserts its inventory row.
    await placeOrder(pair.a, fresh.channel, fresh, { quantity: 2, pending: true });
    await reaches({ capacity: 10, sold: 0, held: 2, available: 8 });
    await changed(`/v1/ticket-types/${fresh.ticketTypeId}`, { capacity: 6 });
    await reaches({ capacity: 6, sold: 0, held: 2, available: 4 });
    const occurrence = `mutation ($id: ID!, $input: UpdateEventOccurrenceInput!) { updateEventOccurrence(id: $id, input: $input) { userErrors { code } } }`;
    const setCapacity = await graphql(pair.a, occurrence, { id: fresh.occurrenceId, input: { capacity: 4 } }, admin);
    expect(setCapacity.body.data.updateEventOccurrence.userErrors).toEqual([]);
    await reaches({ capacity: 4, sold: 0, held: 2, available: 2 });
    // The occurrence's capacity applies to each of its ticket types.
    const added = await api(pair.a, 'POST', `/v1/events/${fresh.eventId}/ticket-types`, {
      ...admin,
      body: { name: 'Balcony', priceAmount: 1500, currency: 'GBP', capacity: 50 },
    });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    await reaches({ capacity: 8, sold: 0, held: 2, available: 6 });
    const removed = await graphql(
      pair.a,
      `
        mutation ($id: ID!) {
          deleteTicketType(id: $id) {
            deletedId
          }
        }
      `,
      { id: added.body.ticketType.id },
      admin,
    );
    expect(removed.body.data.deleteTicketType.deletedId).toBe(added.body.ticketType.id);
    await reaches({ capacity: 4, sold: 0, held: 2, available: 2 });
    const cancelled = await graphql(pair.a, occurrence, { id: fresh.occurrenceId, input: { status: 'CANCELLED' } }, admin);
    expect(cancelled.body.data.updateEventOccurrence.userErrors).toEqual([]);
    await reaches({ capacity: 0, sold: 0, held: 0, available: 0 });
    stream.dispose();
  });
});

describe('webhookDeliveryChanged', () => {
  it('streams the deliveries of one endpoint as they are recorded and settled, each event as it committed', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const db = pair.a.runtime.db;
      const target = { organisationId: org.organisation.id, accountId: org.account.id, receiver };
      const endpoint = await createTestEndpoint(db, pair.a.runtime.encryptionKey, target);
      const stream = follow(sseClient(pair.b, org.adminToken), DELIVERIES, { endpointId: endpoint.id });
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Recorded and marked failed in one transaction: two events, in the order they happened.
      const [deliveryId] = await recordFailedDeliveries(db, target, 1);
      const results = await stream.take(2);
      stream.dispose();
      expect(results.map((result) => result.data!.webhookDeliveryChanged.delivery)).toEqual([
        { id: deliveryId, status: 'FAILED' },
        { id: deliveryId, status: 'FAILED' },
      ]);
      const recorded = await pair.a.runtime.db.liveEvent.findMany({ where: { subjectId: deliveryId! }, orderBy: { id: 'asc' } });
      expect(recorded.map((event) => event.kind)).toEqual(['pending', 'failed']);
    } finally {
      await receiver.close();
    }
  });
});

describe('webhookDeliveryChanged, rights moving', () => {
  it('ends the stream of a person left with webhooks.write only: the right it started with is judged for every event', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const db = pair.a.runtime.db;
      const target = { organisationId: org.organisation.id, accountId: org.account.id, receiver };
      const endpoint = await createTestEndpoint(db, pair.a.runtime.encryptionKey, target);
      const role = await customRole(pair.a, org, ['webhooks.read', 'webhooks.write']);
      const staff = await createStaffUser(pair.a, org, [{ roleId: role.id, accountId: org.account.id }], 'hooks');
      const stream = follow(sseClient(pair.b, staff.token), DELIVERIES, { endpointId: endpoint.id });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await recordFailedDeliveries(db, target, 1);
      await stream.take(2);
      const changed = await api(pair.a, 'PATCH', `/v1/roles/${role.id}`, {
        token: org.adminToken,
        org: org.slug,
        body: { permissions: ['webhooks.write'] },
      });
      expect(changed.status).toBe(200);
      await recordFailedDeliveries(db, target, 1);
      await stream.ended(5_000);
      expect(stream.results).toHaveLength(3);
      expect(stream.results.at(-1)!.errors![0]).toMatchObject({ extensions: { code: 'FORBIDDEN' } });
    } finally {
      await receiver.close();
    }
  });
});

describe('auditEntryAdded', () => {
  it('streams the audit entry of a change made through the other process, and none of a change that failed', async () => {
    const stream = follow(sseClient(pair.b, org.adminToken), AUDIT, { accountId: org.account.id });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Refused inside its use case (an unknown venue): nothing changed, nothing audited, nothing streamed.
    const refused = await api(pair.a, 'POST', '/v1/events', {
      token: org.adminToken,
      org: org.slug,
      body: { accountId: org.account.id, name: 'Nowhere', timezone: 'UTC', venueId: 'ven_missing' },
    });
    expect(refused.status).toBe(404);
    const made = await api(pair.a, 'POST', '/v1/events', {
      token: org.adminToken,
      org: org.slug,
      body: { accountId: org.account.id, name: 'Audited live', timezone: 'UTC' },
    });
    expect(made.status).toBe(201);
    const [first] = await stream.take(1);
    stream.dispose();
    expect(first!.data!.auditEntryAdded).toMatchObject({ resync: false, entry: { action: 'event.created', targetId: made.body.event.id } });
  });
});

describe('the replay window', () => {
  it("replays a narrowed stream what it missed, however many of its topic's other events came meanwhile", async () => {
    const narrow = await createOrganisation(pair.a, 'live-narrow');
    const shop = await seedCatalogue(pair.a, narrow);
    const as = { token: narrow.adminToken, org: narrow.slug };
    const db = pair.a.runtime.db;
    const accountId = narrow.account.id;
    const audit = follow(clientOf(pair.b, narrow.adminToken, narrow.slug), AUDIT, { accountId });
    const orders = follow(clientOf(pair.b, narrow.adminToken, narrow.slug), ORDER_CHANGED, { accountId, eventId: shop.eventId });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const rename = (name: string) => api(pair.a, 'PATCH', `/v1/accounts/${accountId}`, { ...as, body: { name } });
    expect((await rename('Before')).status).toBe(200);
    await placeOrder(pair.a, shop.channel, shop, { pending: true });
    const [seenEntry] = await audit.take(1);
    const [seenOrder] = await orders.take(1);
    audit.dispose();
    orders.dispose();
    // While the clients are away, more than a replay's worth of the topics' events neither would
    // send: entries of another account, orders of another event.
    const others = Array.from({ length: 1_001 }, (_, index) => index);
    const base = { organisationId: narrow.organisation.id, kind: 'created' };
    await db.liveEvent.createMany({
      data: others.map((index) => ({ ...base, topic: 'audit', subjectId: `aud_other${index}`, accountId: 'acc_other' })),
    });
    await db.liveEvent.createMany({
      data: others.map((index) => ({
        ...base,
        topic: `orders:${accountId}`,
        subjectId: `ord_other${index}`,
        accountId,
        eventIds: ['evt_other'],
      })),
    });
    expect((await rename('After')).status).toBe(200);
    const { order: missed } = await placeOrder(pair.a, shop.channel, shop, { pending: true });
    const resumedAudit = follow(
      clientOf(pair.b, narrow.adminToken, narrow.slug, { 'last-event-id': seenEntry!.data!.auditEntryAdded.cursor }),
      AUDIT,
      { accountId },
    );
    const resumedOrders = follow(
      clientOf(pair.b, narrow.adminToken, narrow.slug, { 'last-event-id': seenOrder!.data!.orderChanged.cursor }),
      ORDER_CHANGED,
      { accountId, eventId: shop.eventId },
    );
    const [entry] = await resumedAudit.take(1);
    const [order] = await resumedOrders.take(1);
    resumedAudit.dispose();
    resumedOrders.dispose();
    expect(entry!.data!.auditEntryAdded).toMatchObject({ resync: false, entry: { action: 'account.updated', targetId: accountId } });
    expect(order!.data!.orderChanged).toMatchObject({ resync: false, change: 'CREATED', order: { id: missed.id } });
  });

  it('keeps events for LIVE_REPLAY_WINDOW: older ones are pruned, newer ones stay', async () => {
    const db = pair.a.runtime.db;
    const base = { organisationId: org.organisation.id, topic: 'orders:acc_pruning', kind: 'created', accountId: null };
    const old = await db.liveEvent.create({ data: { ...base, subjectId: 'ord_old', createdAt: new Date(Date.now() - 6 * 60_000) } });
    const recent = await db.liveEvent.create({ data: { ...base, subjectId: 'ord_recent' } });
    expect(await pair.a.runtime.live.hub.prune()).toBeGreaterThanOrEqual(1);
    const kept = await db.liveEvent.findMany({ where: { topic: base.topic }, select: { id: true } });
    expect(kept.map((event) => event.id)).toEqual([recent.id]);
    expect(old.id).toBeLessThan(recent.id);
  });
});

describe('bounds', () => {
  it("counts a credential's and an organisation's streams across API processes, and lets a dead process's places lapse", async () => {
    const limited = await startTwoApps({
      LIVE_SUBSCRIPTIONS_PER_CREDENTIAL: '2',
      LIVE_SUBSCRIPTIONS_PER_ORGANISATION: '3',
      // Renewed every 2 s: a slow machine's stall of a few seconds does not lapse a place.
      LIVE_STREAM_LEASE: '6s',
    });
    try {
      const small = await createOrganisation(limited.a, 'liveplaces');
      const { key, apiKey } = await createApiKey(limited.a, small, ['orders.read']);
      const on = (app: TestApp, token: string) =>
        follow(
          createClient({
            url: `${app.url}/graphql`,
            headers: { authorization: `Bearer ${token}`, 'x-service-org': small.slug },
            retryAttempts: 0,
          }),
          ORDER_CHANGED,
          { accountId: small.account.id },
        );
      const places = async () =>
        Number(
          (
            await query<{ n: number }>(limited.a, `SELECT count(*)::int AS n FROM live_stream_places WHERE "organisationId" = $1`, [
              small.organisation.id,
            ])
          )[0]!.n,
        );
      const refusal = async (stream: ReturnType<typeof follow>) => {
        const [refused] = await stream.take(1);
        stream.dispose();
        return refused!.errors![0]!.message;
      };
      // The administrator's two streams, one on each process: a third, on either, is one too many.
      const open = [on(limited.a, small.adminToken), on(limited.b, small.adminToken)];
      await eventually('two streams admitted', async () => (await places()) === 2);
      expect(await refusal(on(limited.a, small.adminToken))).toContain('429');
      // Outliving their lease (renewed by their processes), the places still count.
      await sleep(6_500);
      expect(await refusal(on(limited.b, small.adminToken))).toContain('429');
      // The organisation's third stream is the key's; its fourth, anywhere, is refused.
      const third = on(limited.b, key);
      await eventually('the third admitted', async () => (await places()) === 3);
      expect(third.results).toEqual([]);
      expect(await refusal(on(limited.a, key))).toContain('429');
      // A closed stream gives its place back.
      third.dispose();
      await eventually('the third place given back', async () => (await places()) === 2);
      const again = on(limited.a, key);
      await eventually('another admitted', async () => (await places()) === 3);
      expect(again.results).toEqual([]);
      for (const stream of [...open, again]) stream.dispose();
      await eventually('every place given back', async () => (await places()) === 0);
      // Places a process took and never gave back (it died) count until their lease ends.
      await query(
        limited.a,
        `INSERT INTO live_stream_places (id, "organisationId", credential, "heldBy", "leaseUntil")
         SELECT 'dead-' || n || '-' || $1, $2, $3, 'a process that died', now() + interval '3 seconds' FROM generate_series(1, 2) n`,
        [small.slug, small.organisation.id, `key:${apiKey.id}`],
      );
      expect(await refusal(on(limited.b, key))).toContain('429');
      await sleep(3_500);
      const afterLapse = on(limited.b, key);
      await eventually('admitted once the dead places lapsed', () => limited.b.runtime.live.open === 1);
      expect(afterLapse.results).toEqual([]);
      afterLapse.dispose();
    } finally {
      await limited.stop();
    }
  });

  it('refuses a credential more open subscriptions than LIVE_SUBSCRIPTIONS_PER_CREDENTIAL: 429 RATE_LIMITED with Retry-After, before any stream opens; 406 to a stream asked as anything else', async () => {
    const limited = await startTwoApps({ LIVE_SUBSCRIPTIONS_PER_CREDENTIAL: '2' });
    try {
      const small = await createOrganisation(limited.a, 'livebound');
      const client = createClient({
        url: `${limited.b.url}/graphql`,
        headers: { authorization: `Bearer ${small.adminToken}`, 'x-service-org': small.slug },
        retryAttempts: 0,
      });
      const open = [0, 1].map(() => follow(client, ORDER_CHANGED, { accountId: small.account.id }));
      await new Promise((resolve) => setTimeout(resolve, 500));
      const third = follow(client, ORDER_CHANGED, { accountId: small.account.id });
      const [refusal] = await third.take(1);
      expect(refusal!.errors![0]!.message).toContain('429');
      // As any client sees it: the answer's status and Retry-After, the bound named in its body.
      const refused = await rawSse(`${limited.b.url}/graphql`, {
        headers: { authorization: `Bearer ${small.adminToken}`, 'x-service-org': small.slug },
        body: { query: ORDER_CHANGED, variables: { accountId: small.account.id } },
      });
      expect([refused.status, refused.headers.get('retry-after')]).toEqual([429, '5']);
      expect(refused.text).toContain('"code":"RATE_LIMITED"');
      expect(refused.text).toContain('"limit":"LIVE_SUBSCRIPTIONS_PER_CREDENTIAL","max":2');
      for (const stream of open) stream.dispose();
      // A closed stream frees its place.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const again = follow(client, ORDER_CHANGED, { accountId: small.account.id });
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(again.results).toEqual([]);
      // A subscription asked as anything but an event stream is 406, naming text/event-stream, and
      // holds no place: beside `again`, a second stream still fits the bound of 2. A client that
      // reads JSON is told in GraphQL's shape; one asking for what no answer here can be, in the
      // contract's envelope.
      for (const [accept, codeOf] of [
        ['application/json', (body: any) => body.errors[0].extensions.code],
        ['multipart/mixed', (body: any) => body.code],
        ['text/html', (body: any) => body.code],
      ] as const) {
        for (const accountId of [small.account.id, 'acc_missing']) {
          const refused = await rawSse(`${limited.b.url}/graphql`, {
            headers: { accept, authorization: `Bearer ${small.adminToken}`, 'x-service-org': small.slug },
            body: { query: ORDER_CHANGED, variables: { accountId } },
          });
          expect([refused.status, refused.headers.get('accept'), codeOf(JSON.parse(refused.text))], accept).toEqual([
            406,
            'text/event-stream',
            'NOT_ACCEPTABLE',
          ]);
        }
      }
      const second = follow(client, ORDER_CHANGED, { accountId: small.account.id });
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(second.results).toEqual([]);
      second.dispose();
      again.dispose();
    } finally {
      await limited.stop();
    }
  });
});
