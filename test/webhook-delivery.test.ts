import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { newId } from '../src/ids.ts';
import { bootstrapOrganisation } from '../src/services/bootstrap-organisation.ts';
import { WebhookDispatcher } from '../src/webhooks/dispatcher.ts';
import { views, type Payload } from '../src/webhooks/payloads.ts';
import { signatureHeader } from '../src/webhooks/secrets.ts';
import { attemptDelivery, parseRetryAfter } from '../src/webhooks/deliver.ts';
import { retryDelayMs, type DeliverWebhookResult } from '../workflows/webhook-delivery.ts';
import { createWorker } from '../workflows/worker.ts';
import { useTestApp } from './support/app.ts';
import { spawnProcess, type Spawned } from './support/process.ts';
import {
  createTestEndpoint,
  recordTestEvent,
  startWebhookReceiver,
  type WebhookReceiver,
} from './support/webhook-receiver.ts';

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

async function endpoint(receiver: WebhookReceiver, apiVersion?: string) {
  return createTestEndpoint(app().runtime.db, app().runtime.encryptionKey, { ...org, receiver, ...(apiVersion ? { apiVersion } : {}) });
}

/** Records an order.created (by default) and dispatches its deliveries as the services do. */
async function announce(type: 'order.created' | 'event.created' = 'order.created', payload = type === 'order.created' ? orderPayload() : eventPayload()) {
  const recorded = await recordTestEvent(app().runtime.db, { ...org, type, payload });
  const outcome = await app().runtime.dispatcher.startWorkflows(recorded.deliveryIds);
  expect(outcome.failed).toEqual([]);
  return recorded;
}

async function finished(deliveryId: string) {
  const result = (await client.workflow.getHandle(deliveryId).result()) as DeliverWebhookResult;
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
        version: '2026-06-01',
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        data: orderPayload(),
      });

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
      // Retry-After: 2 (seconds) outweighs the schedule's 200 ms step.
      const gap = receiver.requests[1]!.receivedAt - receiver.requests[0]!.receivedAt;
      expect(gap).toBeGreaterThanOrEqual(1_990);
      const history = await client.workflow.getHandle(deliveryIds[0]!).fetchHistory();
      const timers = (history.events ?? []).flatMap((e) => (e.timerStartedEventAttributes ? [e.timerStartedEventAttributes] : []));
      expect(timers.map((t) => Number(t.startToFireTimeout!.seconds) * 1000 + Math.round((t.startToFireTimeout!.nanos ?? 0) / 1e6))).toEqual([2_000]);
    } finally {
      await receiver.close();
    }
  });

  it('sends each endpoint the payload at its pinned version, the version stamped in the envelope', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const byVersion = {
        '2026-06-01': await endpoint(receiver, '2026-06-01'),
        '2025-10-01': await endpoint(receiver, '2025-10-01'),
        '2025-04-01': await endpoint(receiver, '2025-04-01'),
      };
      const order = await announce('order.created');
      const event = await announce('event.created');
      await Promise.all([...order.deliveryIds, ...event.deliveryIds].map((id) => finished(id)));
      expect(receiver.requests).toHaveLength(6);
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
    const dispatcher = new WebhookDispatcher(app().runtime.db, app().runtime.temporal, { ...app().config, WEBHOOK_RETRY_SCHEDULE: [1_500, 1_500, 1_500] }, app().runtime.logger);
    try {
      for (const change of ['disabled', 'deleted'] as const) {
        const target = await endpoint(receiver);
        const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
        await dispatcher.startWorkflows(deliveryIds);
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

describe('one attempt (the activity)', () => {
  const deps = () => ({ db: app().runtime.db, config: app().config, encryptionKey: app().runtime.encryptionKey, logger: app().runtime.logger });

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
      await endpoint(receiver);
      // Recorded, but the process "crashed" before dispatching.
      const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
      const [id] = deliveryIds as [string];
      expect(await dispatcher.sweep()).toBe(0);
      const before = await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id } });
      expect(before.workflowStartedAt).toBeNull();

      dispatcher.start();
      await waitUntil(async () => (await app().runtime.db.webhookDelivery.findUniqueOrThrow({ where: { id } })).workflowStartedAt !== null);
      const { delivery } = await finished(id);
      expect(delivery.status).toBe('succeeded');
      expect(delivery.workflowStartedAt).toBeInstanceOf(Date);
      expect(receiver.requests).toHaveLength(1);

      const description = await client.workflow.getHandle(id).describe();
      expect(description.memo).toEqual({
        deliveryId: id,
        endpointId: delivery.endpointId,
        eventType: 'order.created',
        accountId: org.accountId,
        organisationId: org.organisationId,
      });
      expect(description.taskQueue).toBe(app().config.TEMPORAL_TASK_QUEUE);
    } finally {
      await dispatcher.stop();
      await receiver.close();
    }
  });

  it('starts one workflow per delivery however often and from wherever it is dispatched', async () => {
    const receiver = await startWebhookReceiver();
    const other = new WebhookDispatcher(app().runtime.db, app().runtime.temporal, app().config, app().runtime.logger);
    try {
      await endpoint(receiver);
      const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
      const [id] = deliveryIds as [string];
      // Two processes racing (the API's dispatch and a worker's sweep), and a plain repeat.
      const outcomes = await Promise.all([app().runtime.dispatcher.startWorkflows([id]), other.startWorkflows([id])]);
      app().runtime.dispatcher.dispatch([id]);
      for (const outcome of outcomes) expect(outcome.failed).toEqual([]);
      const { delivery } = await finished(id);
      const firstRun = (await client.workflow.getHandle(id).describe()).runId;

      // Even after the workflow completed and its start was forgotten, the id is refused.
      await app().runtime.db.webhookDelivery.update({ where: { id }, data: { workflowStartedAt: null, status: 'pending' } });
      expect(await other.startWorkflows([id])).toEqual({ started: [id], failed: [] });
      await app().runtime.db.webhookDelivery.update({ where: { id }, data: { status: delivery.status } });
      expect((await client.workflow.getHandle(id).describe()).runId).toBe(firstRun);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.requests).toHaveLength(1);
      expect(await app().runtime.db.webhookAttempt.count({ where: { deliveryId: id } })).toBe(1);
    } finally {
      await other.stop();
      await receiver.close();
    }
  });
});

describe('webhook delivery across worker crashes', () => {
  it('loses and doubles no attempt when the worker is SIGKILLed mid-schedule and another takes over', { timeout: 120_000 }, async () => {
    const receiver = await startWebhookReceiver({ failAlways: true });
    const taskQueue = `wh-kill-${randomBytes(4).toString('hex')}`;
    const workerEnv = {
      DATABASE_URL: app().database.url,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      LOG_LEVEL: 'info',
    };
    const dispatcher = new WebhookDispatcher(
      app().runtime.db,
      app().runtime.temporal,
      { ...app().config, TEMPORAL_TASK_QUEUE: taskQueue, WEBHOOK_RETRY_SCHEDULE: [1_000, 3_000, 3_000] },
      app().runtime.logger,
    );
    const workers: Spawned[] = [];
    try {
      workers.push(spawnProcess(['workflows/worker-main.ts'], workerEnv));
      // The worker's own pid: the spawned process is tsx's launcher, which a SIGKILL would take
      // down alone, leaving the worker itself running.
      const [, pid] = (await workers[0]!.waitFor(/"pid":(\d+)[^\n]*worker running/, 90_000)) as unknown as [string, string];
      const target = await endpoint(receiver);
      const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...org, type: 'order.created', payload: orderPayload() });
      const [id] = deliveryIds as [string];
      await dispatcher.startWorkflows([id]);

      // Killed while the workflow waits on its timer after attempt 1.
      const handle = client.workflow.getHandle(id);
      await waitUntil(async () => (await handle.fetchHistory()).events?.some((e) => e.timerStartedEventAttributes) ?? false);
      process.kill(Number(pid), 'SIGKILL');
      expect(await workers[0]!.stop()).not.toBe(0);
      expect(() => process.kill(Number(pid), 0)).toThrow();
      expect(receiver.requests.filter((r) => r.path === target.path)).toHaveLength(1);

      workers.push(spawnProcess(['workflows/worker-main.ts'], workerEnv));
      await workers[1]!.waitFor(/worker running/, 90_000);
      // The next attempt still fails; the one after succeeds.
      receiver.behaviour = { failNext: 1 };

      const { result, delivery, attempts } = await finished(id);
      expect(result.status).toBe('succeeded');
      const numbers = attempts.map((a) => a.attemptNumber);
      expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, i) => i + 1));
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
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
