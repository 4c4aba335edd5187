import { randomBytes } from 'node:crypto';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.ts';
import { views, type Payload } from '../../src/webhooks/payloads.ts';
import type { WebhookEventType } from '../../src/webhooks/event-types.ts';
import { createWorker } from '../../workflows/worker.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { api, createAccount, createOrganisation, type TestOrganisation } from '../support/fixtures.ts';
import { recordTestEvent, startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Ordered delivery (`ordering: per_object`, src/webhooks/ordering.ts), seen by real receivers: an
 * object's deliveries arrive one at a time in sequence order even when the receiver is slow for the
 * first and fast for the next; a failing delivery holds its own object's later ones and no other
 * object's; turning ordering off lets what waits go; a resend may not overtake; a recovery sends an
 * object's failed deliveries in order. An endpoint without ordering, with the same slow receiver,
 * receives the same events out of order: what the ordered endpoint is spared.
 */

let app: TestApp;
let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;
let org: TestOrganisation;

beforeAll(async () => {
  app = await startTestApp({
    WEBHOOK_RETRY_SCHEDULE: '4s,300ms',
    WEBHOOK_ATTEMPT_TIMEOUT: '5s',
    // Failing receivers here fail on purpose: the breaker would hold last attempts for its cooldown.
    WEBHOOK_BREAKER_THRESHOLD: '1000',
    SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  });
  ({ worker } = await createWorker({ config: app.config, db: app.runtime.db, logger: app.runtime.logger, prebundled: false }));
  running = worker.run();
  receiver = await startWebhookReceiver();
  org = await createOrganisation(app, 'whorder');
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await receiver?.close();
  await app?.stop();
});

const admin = () => ({ token: org.adminToken, org: org.slug });
let paths = 0;

/** An endpoint created over /v1 on a fresh account, with the ordering asked for. */
async function endpoint(ordering: 'none' | 'per_object') {
  const accountId = (await createAccount(app, org, `Ordered ${paths + 1}`)).id;
  const path = `/ordered/${(paths += 1)}`;
  const res = await api(app, 'POST', '/v1/webhook-endpoints', { ...admin(), body: { accountId, url: `${receiver.url}${path}`, ordering } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.endpoint.ordering).toBe(ordering);
  receiver.secrets.set(path, res.body.secret);
  return { id: res.body.endpoint.id as string, path, accountId };
}

const order = (accountId: string, id: string, status: string): Payload =>
  views.order({
    id,
    orderNumber: 'A-1',
    status,
    currency: 'EUR',
    totalAmount: 1000,
    subtotalAmount: 1000,
    customerId: 'cus_0000000000000000000001',
    accountId,
    createdAt: new Date(),
    lineItemCount: 1,
  });

/** Records one event of `orderId` in its own transaction and hands its deliveries to the dispatcher, as services do. */
async function announce(accountId: string, orderId: string, type: WebhookEventType) {
  const recorded = await recordTestEvent(app.runtime.db, {
    organisationId: org.organisation.id,
    accountId,
    type,
    payload: order(accountId, orderId, type.split('.')[1]!),
  });
  app.runtime.dispatcher.dispatch(recorded.deliveryIds);
  return recorded;
}

const LIFE: WebhookEventType[] = ['order.created', 'order.confirmed', 'order.refunded'];

/** The settled, 2xx requests at `path` for `orderId`, in the order they arrived. */
function received(path: string, orderId?: string): Array<ReceivedRequest & { data: { id: string; sequence: number } }> {
  return receiver.requests
    .filter((r) => r.path === path && r.status === 200)
    .map((r) => ({ ...r, data: JSON.parse(r.rawBody).data }))
    .filter((r) => orderId === undefined || r.data.id === orderId)
    .sort((a, b) => a.receivedAt - b.receivedAt);
}

async function deliveriesOf(endpointId: string) {
  const res = await api(app, 'GET', `/v1/webhook-deliveries?endpointId=${endpointId}&limit=100`, admin());
  expect(res.status).toBe(200);
  return res.body.deliveries as Array<{ id: string; status: string; eventType: string; attempts: unknown[] }>;
}

describe('an endpoint that orders per object', () => {
  it('receives an order’s events one at a time in sequence order from a receiver slow for the first; an unordered one gets them out of order', async () => {
    const ordered = await endpoint('per_object');
    const unordered = await endpoint('none');
    receiver.pathBehaviours.set(ordered.path, { sleepMs: 1_200, sleepNext: 1 });
    receiver.pathBehaviours.set(unordered.path, { sleepMs: 1_200, sleepNext: 1 });
    const orderA = newId('order');
    const orderB = newId('order');
    for (const type of LIFE) {
      await announce(ordered.accountId, orderA, type);
      await announce(unordered.accountId, orderB, type);
    }
    await receiver.waitForRequests(3, (r) => r.path === ordered.path && r.status === 200, 20_000);
    await receiver.waitForRequests(3, (r) => r.path === unordered.path && r.status === 200, 20_000);

    const inOrder = received(ordered.path, orderA);
    expect(inOrder.map((r) => r.data.sequence)).toEqual([1, 2, 3]);
    expect(inOrder.map((r) => r.headers['service-event-type'])).toEqual(LIFE);
    // One at a time: each arrived only after the one before it was answered.
    for (let i = 1; i < inOrder.length; i += 1) expect(inOrder[i]!.receivedAt).toBeGreaterThanOrEqual(inOrder[i - 1]!.settledAt!);

    // The same receiver behaviour without ordering: the deliveries overlap, one arriving while an
    // earlier one (the slow one) is still being answered.
    const asSent = received(unordered.path, orderB);
    expect(asSent.map((r) => r.data.sequence).sort()).toEqual([1, 2, 3]);
    expect(asSent.some((r, i) => i > 0 && r.receivedAt < asSent[i - 1]!.settledAt!)).toBe(true);
  }, 60_000);

  it('a failing delivery holds only its own object’s later deliveries, which follow once it succeeds', async () => {
    const ordered = await endpoint('per_object');
    const stuck = newId('order');
    const flowing = newId('order');
    // The first request fails; its retry (4 s later) succeeds.
    receiver.pathBehaviours.set(ordered.path, { failNext: 1 });
    await announce(ordered.accountId, stuck, 'order.created');
    await receiver.waitForRequests(1, (r) => r.path === ordered.path && r.settled, 10_000);
    await announce(ordered.accountId, stuck, 'order.confirmed');
    for (const type of LIFE) await announce(ordered.accountId, flowing, type);

    // The other order flows while the stuck one waits for its retry.
    await receiver.waitForRequests(
      3,
      (r) => r.path === ordered.path && r.status === 200 && JSON.parse(r.rawBody).data.id === flowing,
      10_000,
    );
    expect(received(ordered.path, stuck)).toEqual([]);

    await receiver.waitForRequests(
      2,
      (r) => r.path === ordered.path && r.status === 200 && JSON.parse(r.rawBody).data.id === stuck,
      15_000,
    );
    const stuckOnes = received(ordered.path, stuck);
    expect(stuckOnes.map((r) => r.data.sequence)).toEqual([1, 2]);
    const flowingDone = Math.max(...received(ordered.path, flowing).map((r) => r.receivedAt));
    expect(stuckOnes[0]!.receivedAt).toBeGreaterThan(flowingDone);
  }, 60_000);

  it('a resend may not overtake an earlier pending delivery of its object; turning ordering off lets waiting deliveries go', async () => {
    const ordered = await endpoint('per_object');
    const id = newId('order');
    // Every request fails while the test looks: the first delivery stays pending on its schedule.
    receiver.pathBehaviours.set(ordered.path, { failAlways: true });
    await announce(ordered.accountId, id, 'order.created');
    await announce(ordered.accountId, id, 'order.confirmed');
    await receiver.waitForRequests(1, (r) => r.path === ordered.path && r.settled, 10_000);
    const [confirmed] = (await deliveriesOf(ordered.id)).filter((d) => d.eventType === 'order.confirmed');
    expect(confirmed).toMatchObject({ status: 'pending', attempts: [] });

    const resend = await api(app, 'POST', `/v1/webhook-deliveries/${confirmed!.id}/resend`, admin());
    expect(resend.status, JSON.stringify(resend.body)).toBe(409);
    expect(resend.body.code).toBe('CONFLICT');
    expect(resend.body.error).toMatch(/earlier delivery of this object/);

    // The receiver recovers and the partner turns ordering off: the waiting delivery goes at once,
    // without waiting for the first one's retry.
    receiver.pathBehaviours.set(ordered.path, {});
    const off = await api(app, 'PATCH', `/v1/webhook-endpoints/${ordered.id}`, { ...admin(), body: { ordering: 'none' } });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect(off.body.endpoint.ordering).toBe('none');
    await receiver.waitForRequests(2, (r) => r.path === ordered.path && r.status === 200, 15_000);
    // The confirmation went at once; the creation only at its retry, 4 s after its first attempt.
    expect(received(ordered.path, id).map((r) => r.data.sequence)).toEqual([2, 1]);
  }, 60_000);

  it('a recovery sends an object’s failed deliveries again one at a time in sequence order', async () => {
    const ordered = await endpoint('per_object');
    const ids = [newId('order'), newId('order')];
    receiver.pathBehaviours.set(ordered.path, { failAlways: true });
    for (const type of LIFE) for (const id of ids) await announce(ordered.accountId, id, type);
    // Every delivery fails for good (3 attempts each); the next of each order goes once the one before has failed.
    await expect
      .poll(async () => (await deliveriesOf(ordered.id)).map((d) => d.status), { timeout: 40_000, interval: 500 })
      .toEqual(Array(6).fill('failed'));

    receiver.reset();
    receiver.pathBehaviours.set(ordered.path, { sleepMs: 600, sleepNext: 2 });
    const since = new Date(Date.now() - 120_000).toISOString();
    const recover = await api(app, 'POST', `/v1/webhook-endpoints/${ordered.id}/recover`, { ...admin(), body: { since } });
    expect(recover.status, JSON.stringify(recover.body)).toBe(202);
    await receiver.waitForRequests(6, (r) => r.path === ordered.path && r.status === 200, 30_000);
    for (const id of ids) {
      const got = received(ordered.path, id);
      expect(got.map((r) => r.data.sequence)).toEqual([1, 2, 3]);
      for (let i = 1; i < got.length; i += 1) expect(got[i]!.receivedAt).toBeGreaterThanOrEqual(got[i - 1]!.settledAt!);
    }
  }, 90_000);
});
