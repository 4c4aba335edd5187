import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { newId } from '../../src/ids.ts';
import { bootstrapOrganisation } from '../../src/services/bootstrap-organisation.ts';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { views, type Payload } from '../../src/webhooks/payloads.ts';
import { signatureHeader } from '../../src/webhooks/secrets.ts';
import { attemptDelivery, parseRetryAfter } from '../../src/webhooks/deliver.ts';
import type { DeliverBatchResult } from '../../src/webhooks/batch.ts';
import type { DeliverWebhookResult } from '../../src/webhooks/workflow-contract.ts';
import { CURRENT_VERSION } from '../../src/versions.ts';
import { retryDelayMs } from '../../workflows/webhook-delivery.ts';
import { createWorker } from '../../workflows/worker.ts';
import { useTestApp } from '../support/app.ts';
import { spawnProcess, type Spawned } from '../support/process.ts';
import { createTestEndpoint, recordTestEvent, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const ENCRYPTION_KEY = randomBytes(32).toString('base64');

const app = useTestApp({
  WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms',
  WEBHOOK_ATTEMPT_TIMEOUT: '2s',
  SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
});
let worker: Worker;
let running: Promise<void>;
let connection: Connection;
let client: Client;
let org: { organisationId: string; accountId: string };

beforeAll(async () => {
  ({ worker } = await createWorker({ config: app().config, db: app().runtime.db, logger: app().runtime.logger, prebundled: false }));
  running = worker.run();
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection });
  const result = await bootstrapOrganisation(app().runtime.db, {
    orgSlug: `wh-${randomBytes(4).toString('hex')}`,
    orgName: 'Webhooks',
    email: `admin-${randomBytes(4).toString('hex')}@wh.test`,
    password: 'admin password 1',
  });
  org = { organisationId: result.organisation.id, accountId: result.account.id };
});

// Each test its own account: an event goes to every endpoint of its account.
beforeEach(async () => {
  const account = await app().runtime.db.account.create({
    data: { id: newId('account'), organisationId: org.organisationId, name: `Account ${randomBytes(3).toString('hex')}` },
  });
  org = { ...org, accountId: account.id };
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await connection?.close();
});

const orderPayload = (): Payload =>
  views.order({
    id: 'ord_0000000000000000000001',
    orderNumber: 'A-1001',
    status: 'pending',
    currency: 'EUR',
    totalAmount: 4500,
    subtotalAmount: 4000,
    customerId: 'cus_0000000000000000000001',
    accountId: org.accountId,
    createdAt: new Date('2026-07-01T10:00:00.000Z'),
    lineItemCount: 2,
  });

const eventPayload = (): Payload =>
  views.event({
    id: 'evt_0000000000000000000001',
    name: 'Summer concert',
    status: 'draft',
    accountId: org.accountId,
    venueId: null,
    timezone: 'Europe/Paris',
    createdAt: new Date('2026-07-01T09:00:00.000Z'),
  });

/** The sequence the source event was recorded with (the same order id is announced by every test of the file). */
async function sequenceOf(eventId: string) {
  return (await app().runtime.db.webhookEvent.findUniqueOrThrow({ where: { id: eventId } })).sequence;
}

async function endpoint(receiver: WebhookReceiver, apiVersion?: string) {
  return createTestEndpoint(app().runtime.db, app().runtime.encryptionKey, { ...org, receiver, ...(apiVersion ? { apiVersion } : {}) });
}

/** Records an order.created (by default) and dispatches its deliveries as the services do. */
async function announce(
  type: 'order.created' | 'event.created' = 'order.created',
  payload = type === 'order.created' ? orderPayload() : eventPayload(),
) {
  const recorded = await recordTestEvent(app().runtime.db, { ...org, type, payload });
  const outcome = await app().runtime.dispatcher.startBatch(recorded.deliveryIds);
  expect(outcome.failed).toEqual([]);
  return recorded;
}

/**
 * Waits for the delivery's batch (its first attempt), then, when that attempt failed, for its retry
 * workflow (workflow id = the delivery id): `result` is the retry workflow's, or a summary of the
 * batch's outcome when none was needed.
 */
async function finished(deliveryId: string) {
  let result: DeliverWebhookResult | undefined;
  for (let batches = 0; !result; batches += 1) {
    if (batches > 5) throw new Error(`delivery ${deliveryId} deferred again and again`);
    await waitUntil(
      async () => (await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } })).workflowStartedAt !== null,
    );
    const { batchId } = await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } });
    const batch = (await client.workflow.getHandle(batchId!).result()) as DeliverBatchResult;
    const entry = batch.deliveries.find((d) => d.id === deliveryId)!;
    if (entry.outcome === 'retrying') result = (await client.workflow.getHandle(deliveryId).result()) as DeliverWebhookResult;
    else if (entry.outcome === 'succeeded' || entry.outcome === 'failed') {
      result = {
        status: entry.outcome,
        attempts: [{ attemptNumber: 1, at: '', ok: entry.outcome === 'succeeded', statusCode: entry.statusCode, error: entry.error }],
      };
    }
  }
  const delivery = await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } });
  const attempts = await app().runtime.db.webhookAttempt.findMany({ where: { deliveryId }, orderBy: { attemptNumber: 'asc' } });
  return { result, delivery, attempts };
}

describe('webhook delivery', () => {
  it('signs each delivery so that Stripe’s verifier accepts it, with the six headers of spec section 6', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const target = await endpoint(receiver);
      const { eventId, deliveryIds } = await announce();
      expect(deliveryIds).toHaveLength(1);
      const { delivery, attempts } = await finished(deliveryIds[0]!);
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 1, nextAttemptAt: null });
      expect(delivery.completedAt).toBeInstanceOf(Date);
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toMatchObject({ attemptNumber: 1, statusCode: 200, error: null, trigger: 'scheduled' });
      expect(attempts[0]!.responseBody).toBe('{"received":true,"status":200}');

      const [request] = receiver.requests;
      expect(receiver.requests).toHaveLength(1);
      expect(request!.path).toBe(target.path);
      expect(request!.verified).toBe(true);
      expect(request!.headers['content-type']).toBe('application/json');
      expect(request!.headers['user-agent']).toBe('Service-Webhooks/1.0');
      expect(request!.headers['service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(request!.headers['service-event-type']).toBe('order.created');
      expect(request!.headers['service-event-id']).toBe(eventId);
      expect(request!.headers['service-delivery-id']).toBe(deliveryIds[0]);
      expect(eventId).toMatch(/^wev_/);
      const body = JSON.parse(request!.rawBody);
      expect(body).toEqual({
        id: deliveryIds[0],
        type: 'order.created',
        version: CURRENT_VERSION,
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        data: { ...orderPayload(), sequence: await sequenceOf(eventId) },
      });
      expect(body.data.sequence).toEqual(expect.any(Number));

      // What a receiver must refuse: a body changed in transit, and a replay of an old signature.
      const header = String(request!.headers['service-signature']);
      expect(Stripe.webhooks.constructEvent(request!.rawBody, header, target.secret)).toEqual(body);
      expect(() => Stripe.webhooks.constructEvent(request!.rawBody.replace('4500', '1'), header, target.secret)).toThrow(
        /No signatures found matching/,
      );
      const stale = signatureHeader(target.secret, request!.rawBody, Math.floor(Date.now() / 1000) - 600);
      expect(() => Stripe.webhooks.constructEvent(request!.rawBody, stale, target.secret)).toThrow(/tolerance/);
      expect(() => Stripe.webhooks.constructEvent(request!.rawBody, header, 'whsec_another')).toThrow();
    } finally {
      await receiver.close();
    }
  });

  it('retries a failing receiver on the schedule with the same event and delivery ids until it answers 2xx', async () => {
    const receiver = await startWebhookReceiver({ failNext: 2 });
    try {
      await endpoint(receiver);
      const { eventId, deliveryIds } = await announce();
      const { result, delivery, attempts } = await finished(deliveryIds[0]!);
      expect(result.status).toBe('succeeded');
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 3, nextAttemptAt: null });
      expect(attempts.map((a) => [a.attemptNumber, a.statusCode])).toEqual([
        [1, 500],
        [2, 500],
        [3, 200],
      ]);
      expect(receiver.requests).toHaveLength(3);
      expect(new Set(receiver.requests.map((r) => r.headers['service-event-id']))).toEqual(new Set([eventId]));
      expect(new Set(receiver.requests.map((r) => r.headers['service-delivery-id']))).toEqual(new Set([deliveryIds[0]]));
      expect(receiver.requests.every((r) => r.verified)).toBe(true);
      // The timer between attempts is the schedule's 200 ms.
      for (let i = 1; i < receiver.requests.length; i += 1) {
        expect(receiver.requests[i]!.receivedAt - receiver.requests[i - 1]!.receivedAt).toBeGreaterThanOrEqual(190);
      }
    } finally {
      await receiver.close();
    }
  });

  it('marks a delivery failed after 1 + schedule length attempts when the receiver always fails', async () => {
    const receiver = await startWebhookReceiver({ failAlways: true, failureStatus: 503 });
    try {
      await endpoint(receiver);
      const { deliveryIds } = await announce();
      const { result, delivery, attempts } = await finished(deliveryIds[0]!);
      expect(result.status).toBe('failed');
      expect(delivery).toMatchObject({ status: 'failed', attemptCount: 4, nextAttemptAt: null });
      expect(delivery.completedAt).toBeInstanceOf(Date);
      expect(attempts.map((a) => a.attemptNumber)).toEqual([1, 2, 3, 4]);
      expect(attempts.every((a) => a.statusCode === 503 && a.durationMs >= 0)).toBe(true);
      expect(receiver.requests).toHaveLength(4);
    } finally {
      await receiver.close();
    }
  });

  it('counts a receiver that answers after the attempt timeout as a failed attempt (timeout)', async () => {
    const receiver = await startWebhookReceiver({ sleepMs: 3_000, sleepNext: 1 });
    try {
      await endpoint(receiver);
      const { deliveryIds } = await announce();
      const { delivery, attempts } = await finished(deliveryIds[0]!);
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 2 });
      expect(attempts[0]).toMatchObject({ attemptNumber: 1, statusCode: null, error: 'timeout' });
      expect(attempts[0]!.durationMs).toBeGreaterThanOrEqual(1_900);
      expect(attempts[0]!.durationMs).toBeLessThan(3_000);
      expect(attempts[1]).toMatchObject({ attemptNumber: 2, statusCode: 200, error: null });
    } finally {
      await receiver.close();
    }
  });

  it('does not follow redirects, and honours Retry-After beyond the schedule step', async () => {
    const receiver = await startWebhookReceiver({ failNext: 1, failureStatus: 307, retryAfter: '2' });
    try {
      await endpoint(receiver);
      const { deliveryIds } = await announce();
      const { delivery, attempts } = await finished(deliveryIds[0]!);
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 2 });
      expect(attempts[0]).toMatchObject({ statusCode: 307, error: 'redirect not followed' });
      expect(receiver.requests).toHaveLength(2);
      // Retry-After: 2 (seconds) outweighs the schedule's 200 ms step: the retry workflow starts 2 s later.
      const gap = receiver.requests[1]!.receivedAt - receiver.requests[0]!.receivedAt;
      expect(gap).toBeGreaterThanOrEqual(1_990);
      const history = await client.workflow.getHandle(deliveryIds[0]!).fetchHistory();
      const backoff = history.events![0]!.workflowExecutionStartedEventAttributes!.firstWorkflowTaskBackoff!;
      expect(Number(backoff.seconds) * 1000 + Math.round((backoff.nanos ?? 0) / 1e6)).toBe(2_000);
    } finally {
      await receiver.close();
    }
  });

  it('sends each endpoint the payload at its pinned version, the version stamped in the envelope', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const current = await endpoint(receiver, CURRENT_VERSION);
      const byVersion = {
        '2026-06-01': await endpoint(receiver, '2026-06-01'),
        '2025-10-01': await endpoint(receiver, '2025-10-01'),
        '2025-04-01': await endpoint(receiver, '2025-04-01'),
      };
      const order = await announce('order.created');
      const event = await announce('event.created');
      await Promise.all([...order.deliveryIds, ...event.deliveryIds].map((id) => finished(id)));
      expect(receiver.requests).toHaveLength(8);
      expect(receiver.requests.every((r) => r.verified)).toBe(true);
      const received = (path: string, type: string) => {
        const request = receiver.requests.find((r) => r.path === path && r.headers['service-event-type'] === type)!;
        return JSON.parse(request.rawBody) as { version: string; data: Record<string, unknown> };
      };
      const orderCommon = {
        id: 'ord_0000000000000000000001',
        orderNumber: 'A-1001',
        status: 'pending',
        currency: 'EUR',
        customerId: 'cus_0000000000000000000001',
        accountId: org.accountId,
        createdAt: '2026-07-01T10:00:00.000Z',
      };
      const eventCommon = {
        id: 'evt_0000000000000000000001',
        name: 'Summer concert',
        status: 'draft',
        accountId: org.accountId,
        timezone: 'Europe/Paris',
        createdAt: '2026-07-01T09:00:00.000Z',
      };
      // The current version: the payload as built, and the event's place among its object's events last.
      expect(received(current.path, 'order.created')).toEqual({
        id: expect.any(String),
        type: 'order.created',
        version: CURRENT_VERSION,
        createdAt: expect.any(String),
        data: { ...orderPayload(), sequence: await sequenceOf(order.eventId) },
      });
      expect(Object.keys(received(current.path, 'order.created').data)).toEqual([...Object.keys(orderPayload()), 'sequence']);
      expect(received(current.path, 'event.created').data).toEqual({ ...eventPayload(), sequence: await sequenceOf(event.eventId) });
      // Endpoints pinned before 2026-11-27 get no sequence (the exact key sets below).
      expect(received(byVersion['2026-06-01'].path, 'order.created')).toMatchObject({
        version: '2026-06-01',
        data: { ...orderCommon, totalAmount: 4500, subtotalAmount: 4000, lineItemCount: 2 },
      });
      expect(received(byVersion['2025-10-01'].path, 'order.created')).toMatchObject({
        version: '2025-10-01',
        data: { ...orderCommon, totalAmount: 4500, subtotalAmount: 4000 },
      });
      expect(received(byVersion['2025-04-01'].path, 'order.created')).toMatchObject({
        version: '2025-04-01',
        data: { ...orderCommon, total: 4500, subtotal: 4000 },
      });
      // Exact key sets: what a version does not have is absent, not null.
      expect(Object.keys(received(byVersion['2026-06-01'].path, 'order.created').data).sort()).toEqual(
        [...Object.keys(orderCommon), 'totalAmount', 'subtotalAmount', 'lineItemCount'].sort(),
      );
      expect(Object.keys(received(byVersion['2025-10-01'].path, 'order.created').data).sort()).toEqual(
        [...Object.keys(orderCommon), 'totalAmount', 'subtotalAmount'].sort(),
      );
      expect(Object.keys(received(byVersion['2025-04-01'].path, 'order.created').data).sort()).toEqual(
        [...Object.keys(orderCommon), 'total', 'subtotal'].sort(),
      );
      expect(received(byVersion['2026-06-01'].path, 'event.created')).toEqual({
        id: expect.any(String),
        type: 'event.created',
        version: '2026-06-01',
        createdAt: expect.any(String),
        data: { ...eventCommon, venueId: null },
      });
      for (const version of ['2025-10-01', '2025-04-01'] as const) {
        const body = received(byVersion[version].path, 'event.created');
        expect(body.version).toBe(version);
        expect(body.data).toEqual(eventCommon);
      }
    } finally {
      await receiver.close();
    }
  });

  it('stops retrying once the endpoint is disabled or deleted, recording why', async () => {
    const receiver = await startWebhookReceiver({ failAlways: true });
    // A slower schedule than the suite's, so the endpoint changes between two attempts for sure.
    const dispatcher = new WebhookDispatcher(
      app().runtime.db,
      app().runtime.temporal,
      { ...app().config, WEBHOOK_RETRY_SCHEDULE: [1_500, 1_500, 1_500] },
      app().runtime.logger,
    );
    try {
      for (const change of ['disabled', 'deleted'] as const) {
        const target = await endpoint(receiver);
        const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
        await dispatcher.startBatch(deliveryIds);
        await receiver.waitForRequests(1, (r) => r.path === target.path);
        await app().runtime.db.webhookEndpoint.update({
          where: { id: target.id },
          data: change === 'disabled' ? { enabled: false } : { deletedAt: new Date() },
        });
        const { result, delivery, attempts } = await finished(deliveryIds[0]!);
        expect(result).toMatchObject({ status: 'failed', stoppedBecause: `endpoint ${change}` });
        expect(delivery).toMatchObject({ status: 'failed', attemptCount: 2, nextAttemptAt: null });
        expect(attempts.map((a) => [a.attemptNumber, a.statusCode, a.error])).toEqual([
          [1, 500, null],
          [2, null, `endpoint ${change}`],
        ]);
        expect(receiver.requests.filter((r) => r.path === target.path)).toHaveLength(1);
      }
    } finally {
      await dispatcher.stop();
      await receiver.close();
    }
  });
});

describe('a last attempt that finds its endpoint’s circuit open', () => {
  it('is put back, not spent, when it is also the first (no retries): sent once the circuit lets attempts through', async () => {
    const receiver = await startWebhookReceiver();
    const dispatcher = new WebhookDispatcher(
      app().runtime.db,
      app().runtime.temporal,
      { ...app().config, WEBHOOK_RETRY_SCHEDULE: [] },
      app().runtime.logger,
      { sweepIntervalMs: 200 },
    );
    try {
      const target = await endpoint(receiver);
      // Its breaker tripped by earlier failures: open for the next 1.5 s, then one attempt at a time.
      const openUntil = new Date(Date.now() + 1_500);
      await app().runtime.db.webhookEndpoint.update({
        where: { id: target.id },
        data: { consecutiveFailures: app().config.WEBHOOK_BREAKER_THRESHOLD, failingSince: new Date(), circuitOpenUntil: openUntil },
      });
      const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
      const [id] = deliveryIds as [string];
      const { batchIds } = await dispatcher.startBatch(deliveryIds);
      const batch = (await client.workflow.getHandle(batchIds[0]!).result()) as DeliverBatchResult;
      expect(batch.deliveries).toEqual([{ id, outcome: 'deferred', statusCode: null, error: null }]);
      expect(await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id } })).toMatchObject({
        status: 'pending',
        attemptCount: 0,
      });

      // The sweep claims it again once the circuit lets attempts through.
      dispatcher.start();
      const [request] = await receiver.waitForRequests(1, (r) => r.headers['service-delivery-id'] === id, 15_000);
      expect(request!.receivedAt).toBeGreaterThanOrEqual(openUntil.getTime());
      await waitUntil(async () => (await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id } })).status === 'succeeded');
      const attempts = await app().runtime.db.webhookAttempt.findMany({ where: { deliveryId: id } });
      expect(attempts.map((a) => [a.attemptNumber, a.scheduledAttempt, a.statusCode])).toEqual([[1, 1, 200]]);
    } finally {
      await dispatcher.stop();
      await receiver.close();
    }
  });
});

describe('one attempt (the activity)', () => {
  const deps = () => ({
    db: app().runtime.db,
    config: app().config,
    encryptionKey: app().runtime.encryptionKey,
    logger: app().runtime.logger,
  });

  it('answers an attempt recorded already from its record instead of sending it again', async () => {
    const receiver = await startWebhookReceiver({ failNext: 1 });
    try {
      await endpoint(receiver);
      const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
      const [id] = deliveryIds as [string];
      const first = await attemptDelivery(deps(), id, 1);
      expect(first).toMatchObject({ ok: false, statusCode: 500, replayed: false });
      // Temporal retrying the activity whose completion it never heard of:
      expect(await attemptDelivery(deps(), id, 1)).toMatchObject({ ok: false, statusCode: 500, replayed: true });
      expect(receiver.requests).toHaveLength(1);
      const second = await attemptDelivery(deps(), id, 2);
      expect(second).toMatchObject({ ok: true, statusCode: 200, replayed: false });
      expect(await attemptDelivery(deps(), id, 2)).toMatchObject({ ok: true, statusCode: 200, replayed: true });
      expect(receiver.requests).toHaveLength(2);
      const delivery = await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id } });
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 2 });
    } finally {
      await receiver.close();
    }
  });

  it('records one row when two executions of the same attempt race (both sent: the documented window)', async () => {
    const receiver = await startWebhookReceiver({ sleepMs: 200 });
    try {
      await endpoint(receiver);
      const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
      const [id] = deliveryIds as [string];
      const results = await Promise.all([attemptDelivery(deps(), id, 1), attemptDelivery(deps(), id, 1)]);
      expect(results.map((r) => r.ok)).toEqual([true, true]);
      expect(results.map((r) => r.replayed).sort()).toEqual([false, true]);
      expect(receiver.requests).toHaveLength(2);
      expect(new Set(receiver.requests.map((r) => r.headers['service-delivery-id']))).toEqual(new Set([id]));
      expect(await app().runtime.db.webhookAttempt.count({ where: { deliveryId: id } })).toBe(1);
      const delivery = await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id } });
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: 1 });
    } finally {
      await receiver.close();
    }
  });

  it('re-checks the URL before sending: a private address is refused unless private URLs are allowed', async () => {
    const receiver = await startWebhookReceiver();
    try {
      await endpoint(receiver);
      const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
      const strict = { ...deps(), config: { ...app().config, WEBHOOK_ALLOW_PRIVATE_URLS: false } };
      const result = await attemptDelivery(strict, deliveryIds[0]!, 1);
      expect(result).toMatchObject({ ok: false, statusCode: null, replayed: false });
      expect(result.error).toMatch(/^url refused: .*loopback/);
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await receiver.close();
    }
  });

  it('keeps the first 4 KiB of a response body', async () => {
    const { createServer } = await import('node:http');
    const server = createServer((_req, res) => res.end('é'.repeat(10_000)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const receiver = { url: `http://127.0.0.1:${port}`, secrets: new Map() } as unknown as WebhookReceiver;
      await endpoint(receiver);
      const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
      expect(await attemptDelivery(deps(), deliveryIds[0]!, 1)).toMatchObject({ ok: true, statusCode: 200 });
      const [attempt] = await app().runtime.db.webhookAttempt.findMany({ where: { deliveryId: deliveryIds[0]! } });
      expect(Buffer.byteLength(attempt!.responseBody!)).toBeLessThanOrEqual(4096);
      expect(attempt!.responseBody!.startsWith('é'.repeat(2000))).toBe(true);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('waits for Retry-After up to twice the step or an hour, whichever is longer, never less than the step', () => {
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter(new Date(Date.now() + 60_000).toUTCString())).toBeGreaterThan(58_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter('0')).toBeUndefined();
    expect(retryDelayMs(5_000)).toBe(5_000);
    expect(retryDelayMs(5_000, 1_000)).toBe(5_000);
    expect(retryDelayMs(5_000, 120_000)).toBe(120_000);
    expect(retryDelayMs(5_000, 86_400_000)).toBe(3_600_000);
    expect(retryDelayMs(36_000_000, 100_000_000)).toBe(72_000_000);
  });
});

describe('webhook dispatcher', () => {
  it('sweeps up a delivery whose immediate dispatch never happened, once its grace period has passed', async () => {
    const receiver = await startWebhookReceiver();
    const dispatcher = new WebhookDispatcher(app().runtime.db, app().runtime.temporal, app().config, app().runtime.logger, {
      sweepIntervalMs: 200,
      graceMs: 1_000,
    });
    try {
      const target = await endpoint(receiver);
      // Recorded, but the process "crashed" before dispatching.
      const { eventId, deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
      const [id] = deliveryIds as [string];
      expect(await dispatcher.sweep()).toBe(0);
      const before = await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id } });
      expect(before.workflowStartedAt).toBeNull();

      dispatcher.start();
      await waitUntil(async () => (await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id } })).workflowStartedAt !== null);
      const { delivery } = await finished(id);
      expect(delivery.status).toBe('succeeded');
      expect(delivery.batchId).toMatch(/^whb_[A-Za-z0-9]{22}$/);
      expect(receiver.requests).toHaveLength(1);

      // What an operator sees in the Temporal UI: the batch, its memo naming each delivery, and the
      // search attributes that find it by delivery, endpoint or source event.
      const description = await client.workflow.getHandle(delivery.batchId!).describe();
      expect(description.type).toBe('deliverBatch');
      // (The sweep may have taken other tests' leftovers into the same batch.)
      const memo = description.memo as {
        batchId: string;
        deliveryCount: number;
        organisationIds: string[];
        accountIds: string[];
        eventTypes: string[];
      };
      expect(memo).toMatchObject({
        batchId: delivery.batchId,
        deliveryCount: (description.searchAttributes as Record<string, string[]>).WebhookDeliveryIds!.length,
      });
      expect(memo.organisationIds).toContain(org.organisationId);
      expect(memo.accountIds).toContain(org.accountId);
      expect(memo.eventTypes).toContain('order.created');
      expect(description.taskQueue).toBe(app().config.TEMPORAL_TASK_QUEUE);
      const attributes = description.searchAttributes as Record<string, string[]>;
      expect(attributes.WebhookDeliveryIds).toContain(id);
      expect(attributes.WebhookEndpointIds).toContain(target.id);
      expect(attributes.WebhookEventIds).toContain(eventId);
      await waitUntil(async () => {
        const found: string[] = [];
        for await (const workflow of client.workflow.list({ query: `WebhookDeliveryIds = '${id}'` })) found.push(workflow.workflowId);
        return found.length === 1 && found[0] === delivery.batchId;
      });
    } finally {
      await dispatcher.stop();
      await receiver.close();
    }
  });

  it('starts one batch per delivery however often and from wherever it is dispatched, and restarts an unstarted one under its id', async () => {
    const receiver = await startWebhookReceiver();
    const other = new WebhookDispatcher(app().runtime.db, app().runtime.temporal, app().config, app().runtime.logger, { graceMs: 0 });
    try {
      await endpoint(receiver);
      const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
      const [id] = deliveryIds as [string];
      // Two processes racing (the API's dispatch and a worker's sweep), and a plain repeat.
      const outcomes = await Promise.all([app().runtime.dispatcher.startBatch([id]), other.startBatch([id])]);
      app().runtime.dispatcher.dispatch([id]);
      await app().runtime.dispatcher.flush();
      expect(outcomes.flatMap((o) => o.failed)).toEqual([]);
      expect(outcomes.flatMap((o) => o.started)).toEqual([id]);
      const { delivery } = await finished(id);
      const batch = client.workflow.getHandle(delivery.batchId!);
      const firstRun = (await batch.describe()).runId;

      // A crash between the claim and the start: the sweep starts the same batch id, which
      // Temporal refuses even after the first run completed; nothing is sent again.
      await app().runtime.db.webhookDelivery.update({ where: { id }, data: { workflowStartedAt: null, status: 'pending' } });
      await app().runtime.db.periodicTask.deleteMany({ where: { name: { startsWith: 'webhook-' } } });
      expect(await other.sweep()).toBe(1);
      await app().runtime.db.webhookDelivery.update({ where: { id }, data: { status: delivery.status } });
      expect((await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id } })).workflowStartedAt).not.toBeNull();
      expect((await batch.describe()).runId).toBe(firstRun);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.requests).toHaveLength(1);
      expect(await app().runtime.db.webhookAttempt.count({ where: { deliveryId: id } })).toBe(1);
    } finally {
      await other.stop();
      await receiver.close();
    }
  });

  it('groups the deliveries dispatched within the batch window into one batch, never splitting a source event', async () => {
    const receiver = await startWebhookReceiver();
    try {
      for (let i = 0; i < 3; i += 1) await endpoint(receiver);
      const events = [];
      for (let i = 0; i < 4; i += 1)
        events.push(await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() }));
      // Four commits dispatched within the window (WEBHOOK_BATCH_WINDOW, 50 ms).
      for (const recorded of events) app().runtime.dispatcher.dispatch(recorded.deliveryIds);
      await app().runtime.dispatcher.flush();
      const rows = await app().runtime.db.webhookDelivery.findMany({ where: { eventId: { in: events.map((e) => e.eventId) } } });
      expect(rows).toHaveLength(12);
      expect(new Set(rows.map((r) => r.batchId)).size).toBe(1);
      await Promise.all(rows.map((r) => finished(r.id)));
      expect(receiver.requests).toHaveLength(12);
    } finally {
      await receiver.close();
    }
  });

  it('starts the last partial batch of a burst a window after the burst ends, however many full batches went before it', async () => {
    const receiver = await startWebhookReceiver();
    // Batches of 3 (a source event's 2 deliveries are never split, so each full one holds 2), and a
    // token every 10 s: a partial batch that waited for the full ones' tokens would wait 40 s.
    const config = { ...app().config, WEBHOOK_BATCH_SIZE: 3, WEBHOOK_BATCHES_PER_SECOND: 0.1 };
    const dispatcher = new WebhookDispatcher(app().runtime.db, app().runtime.temporal, config, app().runtime.logger);
    try {
      await endpoint(receiver);
      await endpoint(receiver);
      const events = [];
      for (let i = 0; i < 9; i += 1)
        events.push(await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() }));
      // A burst: each event's deliveries close the batch before them (eight, more than the bucket
      // holds) and are left over themselves, the last of them when the burst ends.
      for (const recorded of events) dispatcher.dispatch(recorded.deliveryIds);
      const ids = events.flatMap((e) => e.deliveryIds);
      const started = () => app().runtime.db.webhookDelivery.count({ where: { id: { in: ids }, workflowStartedAt: { not: null } } });
      await waitUntil(async () => (await started()) === ids.length, 5_000);
      const rows = await app().runtime.db.webhookDelivery.findMany({ where: { id: { in: ids } } });
      expect(ids).toHaveLength(18);
      expect(new Set(rows.map((r) => r.batchId)).size).toBe(9);
      for (const id of ids) expect((await finished(id)).delivery.status).toBe('succeeded');
      expect(receiver.requests).toHaveLength(ids.length);
    } finally {
      await dispatcher.flush();
      await receiver.close();
    }
  });
});

describe('webhook delivery across worker crashes', () => {
  const workerEnv = (taskQueue: string) => ({
    DATABASE_URL: app().database.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    LOG_LEVEL: 'info',
  });
  /** The worker's own pid: the spawned process is tsx's launcher, which a SIGKILL would take down alone. */
  const workerPid = async (worker: Spawned) => Number((await worker.waitFor(/"pid":(\d+)[^\n]*worker running/, 90_000))[1]);

  it('loses and doubles no attempt when the worker is SIGKILLed mid-schedule and another takes over', { timeout: 120_000 }, async () => {
    const receiver = await startWebhookReceiver({ failAlways: true });
    const taskQueue = `wh-kill-${randomBytes(4).toString('hex')}`;
    const dispatcher = new WebhookDispatcher(
      app().runtime.db,
      app().runtime.temporal,
      { ...app().config, TEMPORAL_TASK_QUEUE: taskQueue, WEBHOOK_RETRY_SCHEDULE: [1_000, 3_000, 3_000] },
      app().runtime.logger,
    );
    const workers: Spawned[] = [];
    try {
      workers.push(spawnProcess(['workflows/worker-main.ts'], workerEnv(taskQueue)));
      const pid = await workerPid(workers[0]!);
      const target = await endpoint(receiver);
      const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
      const [id] = deliveryIds as [string];
      await dispatcher.startBatch([id]);

      // Killed once attempt 1 failed and the retry workflow waits for attempt 2.
      const handle = client.workflow.getHandle(id);
      await waitUntil(
        async () =>
          await handle.describe().then(
            () => true,
            () => false,
          ),
      );
      process.kill(pid, 'SIGKILL');
      expect(await workers[0]!.stop()).not.toBe(0);
      expect(() => process.kill(pid, 0)).toThrow();
      expect(receiver.requests.filter((r) => r.path === target.path)).toHaveLength(1);

      workers.push(spawnProcess(['workflows/worker-main.ts'], workerEnv(taskQueue)));
      await workers[1]!.waitFor(/worker running/, 90_000);
      // The next attempt still fails; the one after succeeds.
      receiver.behaviour = { failNext: 1 };

      const { result, delivery, attempts } = await finished(id);
      expect(result.status).toBe('succeeded');
      const numbers = attempts.map((a) => a.attemptNumber);
      expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, i) => i + 1));
      expect(attempts.map((a) => a.scheduledAttempt)).toEqual(numbers);
      expect(numbers.length).toBeGreaterThanOrEqual(3);
      expect(attempts.at(-1)!.statusCode).toBe(200);
      expect(delivery).toMatchObject({ status: 'succeeded', attemptCount: numbers.length });
      expect(receiver.requests.filter((r) => r.path === target.path)).toHaveLength(numbers.length);
    } finally {
      await Promise.all(workers.map((w) => w.stop('SIGTERM')));
      await dispatcher.stop();
      await receiver.close();
    }
  });

  it(
    'a batch whose worker is SIGKILLed mid-send is finished by another: nothing lost, nothing recorded twice, only what was in flight sent again',
    { timeout: 120_000 },
    async () => {
      const receiver = await startWebhookReceiver();
      const taskQueue = `wh-batch-kill-${randomBytes(4).toString('hex')}`;
      const config = { ...app().config, TEMPORAL_TASK_QUEUE: taskQueue, WEBHOOK_ATTEMPT_TIMEOUT: 30_000 };
      const dispatcher = new WebhookDispatcher(app().runtime.db, app().runtime.temporal, config, app().runtime.logger);
      const workers: Spawned[] = [];
      try {
        const targets = [];
        for (let i = 0; i < 5; i += 1) targets.push(await endpoint(receiver));
        const recorded = [];
        for (let i = 0; i < 4; i += 1)
          recorded.push(await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() }));
        const ids = recorded.flatMap((r) => r.deliveryIds);
        expect(ids).toHaveLength(20);

        workers.push(spawnProcess(['workflows/worker-main.ts'], { ...workerEnv(taskQueue), WEBHOOK_ATTEMPT_TIMEOUT: '30s' }));
        const pid = await workerPid(workers[0]!);
        // Ten requests left hanging (answered after 20 s: the worker dies first), ten answered at once.
        receiver.behaviour = { sleepMs: 20_000, sleepNext: 10 };
        const requestsBefore = receiver.requests.length;
        expect((await dispatcher.startBatch(ids)).batchIds).toHaveLength(1);
        await waitUntil(
          async () =>
            receiver.requests.length - requestsBefore >= 20 &&
            (await app().runtime.db.webhookAttempt.count({ where: { deliveryId: { in: ids } } })) >= 10,
        );
        await new Promise((resolve) => setTimeout(resolve, 300));
        const recordedBeforeKill = new Set(
          (await app().runtime.db.webhookAttempt.findMany({ where: { deliveryId: { in: ids } } })).map((a) => a.deliveryId),
        );
        process.kill(pid, 'SIGKILL');
        expect(await workers[0]!.stop()).not.toBe(0);
        expect(recordedBeforeKill.size).toBe(10);

        // Another worker takes the batch over once the dead one's heartbeats are missed.
        receiver.behaviour = {};
        workers.push(spawnProcess(['workflows/worker-main.ts'], { ...workerEnv(taskQueue), WEBHOOK_ATTEMPT_TIMEOUT: '30s' }));
        await workers[1]!.waitFor(/worker running/, 90_000);
        await waitUntil(
          async () => (await app().runtime.db.webhookDelivery.count({ where: { id: { in: ids }, status: 'succeeded' } })) === 20,
          60_000,
        );

        const attempts = await app().runtime.db.webhookAttempt.findMany({ where: { deliveryId: { in: ids } } });
        expect(attempts).toHaveLength(20);
        expect(new Set(attempts.map((a) => a.deliveryId)).size).toBe(20);
        expect(attempts.every((a) => a.attemptNumber === 1 && a.scheduledAttempt === 1 && a.statusCode === 200)).toBe(true);
        const sent = new Map<string, number>();
        for (const r of receiver.requests.slice(requestsBefore)) {
          const delivery = String(r.headers['service-delivery-id']);
          sent.set(delivery, (sent.get(delivery) ?? 0) + 1);
        }
        expect([...sent.keys()].sort()).toEqual([...ids].sort());
        for (const id of ids) expect(sent.get(id), id).toBe(recordedBeforeKill.has(id) ? 1 : 2);
        const rows = await app().runtime.db.webhookDelivery.findMany({ where: { id: { in: ids } } });
        expect(rows.every((r) => r.attemptCount === 1)).toBe(true);
        expect(await app().runtime.db.webhookLease.count({ where: { id: { in: ids.map((id) => `${id}:1`) } } })).toBe(0);
      } finally {
        await Promise.all(workers.map((w) => w.stop('SIGTERM')));
        await dispatcher.stop();
        await receiver.close();
      }
    },
  );
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
