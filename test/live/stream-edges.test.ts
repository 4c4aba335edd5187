import pg from 'pg';
import { createClient } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoApps, type AppPair } from '../support/app.ts';
import { createApiKey } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { placeOrder, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';
import { AUDIT, ORDER_CHANGED, eventually, follow, rawSse, sleep, sseClient } from '../support/sse-client.ts';

/**
 * Topic streams at their edges, as graphql-sse's client and a raw reader see them: a resumed stream
 * meeting the shared fast path, one slow way of reading an event beside quick ones, a process that
 * stops, a Last-Event-ID no event can have, heartbeats, the cost limit, an account of another
 * organisation. Two API processes on one database, changes made through the first, streams read
 * from the second.
 */

let pair: AppPair;
let org: TestOrganisation;
let catalogue: SeededCatalogue;

beforeAll(async () => {
  pair = await startTwoApps({ LIVE_HEARTBEAT_INTERVAL: '1s' });
  org = await createOrganisation(pair.a, 'stream-edges');
  catalogue = await seedCatalogue(pair.a, org);
});

afterAll(async () => {
  await pair?.stop();
});

/** A document that reads venues: its execution waits while the venues table is locked. */
const READS_VENUES = `subscription ($accountId: ID!) { orderChanged(accountId: $accountId) { cursor order { id lineItems { event { venue { name } } } } } }`;

/** Runs `during` while another transaction holds the venues table: executions that read it wait. */
async function whileVenuesLocked(during: () => Promise<void>): Promise<void> {
  const locker = new pg.Client({ connectionString: pair.a.database.url });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE venues IN ACCESS EXCLUSIVE MODE');
  try {
    await during();
  } finally {
    await locker.query('ROLLBACK');
    await locker.end();
  }
}

/** orderChanged of the organisation's account on the second process, read raw with fetch. */
const orderStream = (signal: AbortSignal) =>
  fetch(`${pair.b.url}/graphql`, {
    method: 'POST',
    headers: {
      accept: 'text/event-stream',
      'content-type': 'application/json',
      authorization: `Bearer ${org.adminToken}`,
      'x-service-org': org.slug,
    },
    body: JSON.stringify({ query: ORDER_CHANGED, variables: { accountId: org.account.id } }),
    signal,
  });

const cancel = (orderId: string) =>
  query(pair.a, `UPDATE orders SET status = 'cancelled', "cancelledAt" = now(), "holdExpiresAt" = NULL WHERE id = $1`, [orderId]);

describe('the shared fast path', () => {
  it('sends a resumed stream each event once, though the group hands it out after the replay sent it', async () => {
    const slow = follow(sseClient(pair.b, org.adminToken, org.slug), READS_VENUES, { accountId: org.account.id });
    const light = follow(sseClient(pair.b, org.adminToken, org.slug), ORDER_CHANGED, { accountId: org.account.id });
    await sleep(400);
    const { order } = await placeOrder(pair.a, catalogue.channel, catalogue, { pending: true });
    const [created] = await light.take(1);
    await slow.take(1);
    let resumed: ReturnType<typeof follow> | undefined;
    await whileVenuesLocked(async () => {
      await cancel(order.id);
      await sleep(300);
      // A client of the light document reconnects after CREATED: its replay reads CANCELLED from
      // the table while the group still waits to hand it out.
      resumed = follow(
        sseClient(pair.b, org.adminToken, org.slug, { 'last-event-id': created!.data!.orderChanged.cursor }),
        ORDER_CHANGED,
        {
          accountId: org.account.id,
        },
      );
      await resumed.take(1);
    });
    await light.take(2);
    await sleep(1_000);
    for (const stream of [slow, light, resumed!]) stream.dispose();
    expect(resumed!.results.map((result) => result.data?.orderChanged?.change)).toEqual(['CANCELLED']);
  });

  it("does not hold one way of reading an event back for another's slow execution", async () => {
    const { key } = await createApiKey(pair.a, org, ['orders.read', 'events.read', 'venues.read']);
    const slow = follow(sseClient(pair.b, key, org.slug), READS_VENUES, { accountId: org.account.id });
    const light = follow(sseClient(pair.b, org.adminToken, org.slug), ORDER_CHANGED, { accountId: org.account.id });
    await sleep(400);
    const { order } = await placeOrder(pair.a, catalogue.channel, catalogue, { pending: true });
    await light.take(1);
    await slow.take(1);
    let waited = Number.POSITIVE_INFINITY;
    await whileVenuesLocked(async () => {
      const committed = Date.now();
      await cancel(order.id);
      const until = committed + 2_000;
      while (light.results.length < 2 && Date.now() < until) await sleep(20);
      if (light.results.length >= 2) waited = Date.now() - committed;
    });
    // The slow one gets it too, once it can read it.
    await slow.take(2);
    slow.dispose();
    light.dispose();
    expect(waited).toBeLessThan(500);
  });
});

describe('a process that stops', () => {
  it('drops its streams, so graphql-sse clients reconnect to another process (with Last-Event-ID) and miss nothing', async () => {
    const own = await startTwoApps();
    try {
      const stopping = await createOrganisation(own.a, 'stream-stop');
      const shop = await seedCatalogue(own.a, stopping);
      const resume: { lastEventId?: string } = {};
      let connections = 0;
      const client = createClient({
        // A load balancer: the first connection lands on b, any later one on a.
        url: () => `${connections++ === 0 ? own.b.url : own.a.url}/graphql`,
        headers: () => ({
          authorization: `Bearer ${stopping.adminToken}`,
          'x-service-org': stopping.slug,
          ...(resume.lastEventId ? { 'last-event-id': resume.lastEventId } : {}),
        }),
        retryAttempts: 3,
        retry: () => sleep(200),
      });
      const stream = follow(client, ORDER_CHANGED, { accountId: stopping.account.id });
      // A counter stream, through a balancer of its own.
      let counterConnections = 0;
      const counters = follow(
        createClient({
          url: () => `${counterConnections++ === 0 ? own.b.url : own.a.url}/graphql`,
          headers: { authorization: `Bearer ${stopping.adminToken}`, 'x-service-org': stopping.slug },
          retryAttempts: 3,
          retry: () => sleep(200),
        }),
        `subscription ($id: ID!) { salesCounters(occurrenceId: $id) { counters { held } } }`,
        { id: shop.occurrenceId },
      );
      await sleep(400);
      await placeOrder(own.a, shop.channel, shop, { pending: true });
      const [created] = await stream.take(1);
      resume.lastEventId = created!.data!.orderChanged.cursor;
      await own.b.server.stop({ graceMs: 1_000 });
      const second = await placeOrder(own.a, shop.channel, shop, { pending: true });
      const until = Date.now() + 10_000;
      while (!stream.results.some((r) => r.data?.orderChanged?.order?.id === second.order.id) && Date.now() < until) await sleep(100);
      while (counters.results.at(-1)?.data?.salesCounters.counters.held !== 2 && Date.now() < until) await sleep(100);
      stream.dispose();
      counters.dispose();
      expect(connections).toBe(2);
      expect(stream.results.map((r) => r.data?.orderChanged?.order?.id)).toContain(second.order.id);
      // Neither stream saw an error: the stop is no fault of theirs.
      expect([...stream.results, ...counters.results].filter((result) => result.errors)).toEqual([]);
      expect(counterConnections).toBe(2);
      expect(counters.results.at(-1)!.data!.salesCounters.counters.held).toBe(2);
    } finally {
      await own.stop();
    }
  });
});

describe('edges', () => {
  it('answers a Last-Event-ID beyond any event id (19 digits over a bigint) with a resync', async () => {
    const stream = follow(sseClient(pair.b, org.adminToken, org.slug, { 'last-event-id': '9999999999999999999' }), ORDER_CHANGED, {
      accountId: org.account.id,
    });
    await stream.take(1);
    await sleep(300);
    stream.dispose();
    expect(stream.results.map((result) => result.data?.orderChanged?.resync)).toEqual([true]);
  });

  it('writes a heartbeat into a quiet stream at least every LIVE_HEARTBEAT_INTERVAL', async () => {
    const controller = new AbortController();
    const res = await orderStream(controller.signal);
    const arrivals: number[] = [];
    const timer = setTimeout(() => controller.abort(), 5_500);
    try {
      const reader = res.body!.getReader();
      for (;;) {
        const { done } = await reader.read();
        if (done) break;
        arrivals.push(Date.now());
      }
    } catch {
      // aborted
    } finally {
      clearTimeout(timer);
    }
    const gaps = arrivals.slice(1).map((at, index) => at - arrivals[index]!);
    expect(gaps.length).toBeGreaterThanOrEqual(4);
    // 1 s asked; the timers' own lateness aside.
    expect(Math.max(...gaps)).toBeLessThan(1_300);
  });

  it('refuses a subscription whose selection costs more than the limit, as a query of the same selection', async () => {
    const occurrences = `occurrences(first: 100) { edges { node { id startsAt status capacity } } }`;
    const selection = `account { events(first: 100) { edges { node { id name a: ${occurrences} b: ${occurrences} } } } }`;
    const asQuery = await graphql(
      pair.b,
      `query ($id: ID!) { order(id: $id) { ${selection} } }`,
      { id: 'ord_x' },
      { token: org.adminToken, org: org.slug },
    );
    expect(asQuery.status).toBe(400);
    expect(asQuery.body.errors[0].extensions).toMatchObject({ code: 'VALIDATION_FAILED', limit: 'maxCost' });
    const subscription = `subscription ($a: ID!) { orderChanged(accountId: $a) { cursor order { ${selection} } } }`;
    const refused = await rawSse(`${pair.b.url}/graphql`, {
      headers: { authorization: `Bearer ${org.adminToken}`, 'x-service-org': org.slug },
      body: { query: subscription, variables: { a: org.account.id } },
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('"limit":"maxCost"');
  });

  it('holds no place for a client gone while its subscription was starting', async () => {
    const open = () => pair.b.runtime.live.open;
    const before = open();
    const locker = new pg.Client({ connectionString: pair.a.database.url });
    await locker.connect();
    await locker.query('BEGIN');
    // orderChanged reads its account before its stream is admitted: it waits here.
    await locker.query('LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE');
    const controller = new AbortController();
    const request = orderStream(controller.signal).catch(() => undefined);
    await eventually('the subscription waiting for its account', async () => {
      const [waiting] = await query<{ n: number }>(
        pair.a,
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
      );
      return waiting!.n > 0;
    });
    controller.abort();
    await request;
    await sleep(200);
    await locker.query('ROLLBACK');
    await locker.end();
    await sleep(1_000);
    expect(open()).toBe(before);
  });

  it("refuses orderChanged and auditEntryAdded naming another organisation's account, or a deleted one, NOT_FOUND", async () => {
    const other = await createOrganisation(pair.a, 'stream-edges-other');
    const closed = await createAccount(pair.a, org, 'Closed hall');
    expect((await api(pair.a, 'DELETE', `/v1/accounts/${closed.id}`, { token: org.adminToken, org: org.slug })).status).toBe(200);
    for (const accountId of [other.account.id, closed.id]) {
      for (const document of [ORDER_CHANGED, AUDIT]) {
        const stream = follow(sseClient(pair.b, org.adminToken, org.slug), document, { accountId });
        const [refused] = await stream.take(1);
        stream.dispose();
        expect(refused!.errors?.[0]).toMatchObject({ extensions: { code: 'NOT_FOUND' } });
      }
    }
  });
});
