import { randomBytes } from 'node:crypto';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { newId } from '../../src/ids.ts';
import { registry } from '../../src/metrics.ts';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { views } from '../../src/webhooks/payloads.ts';
import { createWorker } from '../../workflows/worker.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { api, createAccount, createOrganisation, type TestOrganisation } from '../support/fixtures.ts';
import { spawnProcess, type Spawned } from '../support/process.ts';
import {
  maxConcurrent,
  recordTestEvent,
  startWebhookReceiver,
  type ReceivedRequest,
  type WebhookReceiver,
} from '../support/webhook-receiver.ts';

/**
 * As the attack: a tenant points endpoints at receivers that answer slowly (a
 * tarpit) and floods them with deliveries. Reproduced on the old design, 240 of them delayed
 * another organisation's delivery from 35 ms to 11.4 s. Now attempts in flight are bounded per
 * endpoint and per organisation across workers (src/webhooks/slots.ts), so the flood waits in the
 * outbox, costs its owner, and everyone else's deliveries keep their latency. Real app, worker,
 * Temporal and HTTP receivers.
 */

const PER_ENDPOINT = 4;
const PER_ORGANISATION = 6;
const TARPIT_MS = 2_000;
/** How late another tenant's delivery may arrive while the flood waits: the batch window, a batch, an attempt. */
const BOUND_MS = 2_000;
const ENCRYPTION_KEY = randomBytes(32).toString('base64');

let app: TestApp;
let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;
let attacker: TestOrganisation;
let bystander: TestOrganisation;

beforeAll(async () => {
  app = await startTestApp({
    WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: String(PER_ENDPOINT),
    WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION: String(PER_ORGANISATION),
    WEBHOOK_ATTEMPT_TIMEOUT: '8s',
    WEBHOOK_RETRY_SCHEDULE: '1s',
    SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
  });
  ({ worker } = await createWorker({ config: app.config, db: app.runtime.db, logger: app.runtime.logger, prebundled: false }));
  running = worker.run();
  // The sweep claims again what found no slot, as the API and workers do in a deployment.
  app.runtime.dispatcher.start();
  receiver = await startWebhookReceiver();
  [attacker, bystander] = await Promise.all([createOrganisation(app, 'tarpit'), createOrganisation(app, 'bystander')]);
}, 180_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await receiver?.close();
  await app?.stop();
});

let paths = 0;
async function endpoint(o: TestOrganisation, behaviour: { sleepMs?: number } = {}) {
  const accountId = (await createAccount(app, o, `Hooks ${paths + 1}`)).id;
  const path = `/fair/${(paths += 1)}`;
  receiver.pathBehaviours.set(path, behaviour);
  const res = await api(app, 'POST', '/v1/webhook-endpoints', {
    token: o.adminToken,
    org: o.slug,
    body: { accountId, url: `${receiver.url}${path}` },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  receiver.secrets.set(path, res.body.secret);
  return { id: res.body.endpoint.id as string, path, accountId };
}

/**
 * `count` source events on the endpoint's account, recorded and dispatched as the services do (the
 * test route is rate limited per endpoint; real events are what an attacker can make in numbers).
 */
async function flood(o: TestOrganisation, target: { accountId: string }, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const payload = views.event({
      id: newId('event'),
      name: 'Flood',
      status: 'draft',
      accountId: target.accountId,
      venueId: null,
      timezone: 'UTC',
      createdAt: new Date(),
    });
    const { deliveryIds } = await recordTestEvent(app.runtime.db, {
      organisationId: o.organisation.id,
      accountId: target.accountId,
      type: 'event.created',
      payload,
    });
    app.runtime.dispatcher.dispatch(deliveryIds);
    ids.push(...deliveryIds);
  }
  return ids;
}

/** How long the bystander's test delivery takes from the request to its receipt. */
async function bystanderLatency(path: string, endpointId: string): Promise<number> {
  const asked = Date.now();
  const res = await api(app, 'POST', `/v1/webhook-endpoints/${endpointId}/test`, { token: bystander.adminToken, org: bystander.slug });
  expect(res.status).toBe(201);
  const [received] = await receiver.waitForRequests(
    1,
    (r) => r.path === path && r.headers['service-delivery-id'] === res.body.delivery.id,
    10_000,
  );
  expect(received!.verified).toBe(true);
  return received!.receivedAt - asked;
}

const sentTo = (paths: string[]) => (r: ReceivedRequest) => paths.includes(r.path);

describe('a tenant flooding a slow receiver', () => {
  it(
    'holds at most WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT attempts at it, and another organisation’s delivery still arrives within the bound',
    { timeout: 120_000 },
    async () => {
      const tarpit = await endpoint(attacker, { sleepMs: TARPIT_MS });
      const healthy = await endpoint(bystander);
      const baseline = await bystanderLatency(healthy.path, healthy.id);

      const flooded = await flood(attacker, tarpit, 40);
      await receiver.waitForRequests(PER_ENDPOINT, (r) => r.path === tarpit.path, 10_000);
      const latencies = [];
      for (let i = 0; i < 3; i += 1) latencies.push(await bystanderLatency(healthy.path, healthy.id));
      expect(Math.max(...latencies), `baseline ${baseline} ms, under the flood ${latencies.join(', ')} ms`).toBeLessThan(BOUND_MS);

      // The flood drains at the endpoint's pace, each delivery exactly once, never more at once than the bound.
      const arrived = await receiver.waitForRequests(flooded.length, (r) => r.path === tarpit.path && r.status === 200, 90_000);
      expect(new Set(arrived.map((r) => r.headers['service-delivery-id']))).toEqual(new Set(flooded));
      expect(receiver.requests.filter((r) => r.path === tarpit.path)).toHaveLength(flooded.length);
      expect(maxConcurrent(receiver.requests, sentTo([tarpit.path]))).toBe(PER_ENDPOINT);
      // Recorded once each (the last answers may still be on their way to the database).
      const deadline = Date.now() + 10_000;
      let settled = 0;
      while (settled < flooded.length && Date.now() < deadline) {
        settled = await app.runtime.db.webhookDelivery.count({ where: { id: { in: flooded }, status: 'succeeded', attemptCount: 1 } });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(settled).toBe(flooded.length);
      expect(await app.runtime.db.webhookAttempt.count({ where: { deliveryId: { in: flooded } } })).toBe(flooded.length);
      // The backlog waited in the outbox, and the operator's metric says why each gave up its slot wait.
      expect(await app.runtime.db.webhookDelivery.count({ where: { id: { in: flooded }, availableAt: { not: null } } })).toBeGreaterThan(0);
      const giveUps = (await registry.getSingleMetric('webhook_slot_give_ups_total')!.get()).values;
      expect(giveUps.reduce((sum, v) => sum + v.value, 0)).toBeGreaterThan(0);
      expect(giveUps.every((v) => ['stalled', 'slow', 'max'].includes(String(v.labels.reason)))).toBe(true);
    },
  );

  it(
    'an endpoint slow a moment ago and fast again gets its next flood sent, none put back on the old average',
    { timeout: 60_000 },
    async () => {
      const recovered = await endpoint(attacker, { sleepMs: 4_000 });
      // Slower than the slot wait's patience (3 s), so this process's average for it is too.
      await flood(attacker, recovered, PER_ENDPOINT);
      await receiver.waitForRequests(PER_ENDPOINT, (r) => r.path === recovered.path && r.status === 200, 20_000);
      receiver.pathBehaviours.set(recovered.path, {});
      const flooded = await flood(attacker, recovered, 40);
      await receiver.waitForRequests(PER_ENDPOINT + flooded.length, (r) => r.path === recovered.path && r.status === 200, 20_000);
      expect(await app.runtime.db.webhookDelivery.count({ where: { id: { in: flooded }, availableAt: { not: null } } })).toBe(0);
    },
  );

  it('holds at most WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION attempts across all its endpoints', { timeout: 120_000 }, async () => {
    const tarpits = [
      await endpoint(attacker, { sleepMs: TARPIT_MS }),
      await endpoint(attacker, { sleepMs: TARPIT_MS }),
      await endpoint(attacker, { sleepMs: TARPIT_MS }),
    ];
    const healthy = await endpoint(bystander);
    const flooded = (await Promise.all(tarpits.map((t) => flood(attacker, t, 8)))).flat();
    await receiver.waitForRequests(PER_ORGANISATION, sentTo(tarpits.map((t) => t.path)), 10_000);
    expect(await bystanderLatency(healthy.path, healthy.id)).toBeLessThan(BOUND_MS);

    const arrived = await receiver.waitForRequests(
      flooded.length,
      (r) => sentTo(tarpits.map((t) => t.path))(r) && r.status === 200,
      90_000,
    );
    expect(new Set(arrived.map((r) => r.headers['service-delivery-id']))).toEqual(new Set(flooded));
    expect(maxConcurrent(receiver.requests, sentTo(tarpits.map((t) => t.path)))).toBe(PER_ORGANISATION);
    for (const t of tarpits) expect(maxConcurrent(receiver.requests, sentTo([t.path]))).toBeLessThanOrEqual(PER_ENDPOINT);
  });
});

describe('the bounds across worker processes', () => {
  it(
    'two worker processes, each with its own waiting line, together hold at most WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT attempts at one endpoint',
    { timeout: 150_000 },
    async () => {
      const tarpit = await endpoint(attacker, { sleepMs: TARPIT_MS });
      // Two task queues, so that each worker process surely sends half of the deliveries.
      const queues = ['a', 'b'].map((q) => `wh-fair-${q}-${randomBytes(4).toString('hex')}`);
      const workers: Spawned[] = [];
      const dispatchers = queues.map(
        (queue) =>
          new WebhookDispatcher(app.runtime.db, app.runtime.temporal, { ...app.config, TEMPORAL_TASK_QUEUE: queue }, app.runtime.logger),
      );
      try {
        for (const queue of queues) {
          workers.push(
            spawnProcess(['workflows/worker-main.ts'], {
              DATABASE_URL: app.database.url,
              TEMPORAL_ADDRESS: inject('temporalAddress'),
              TEMPORAL_TASK_QUEUE: queue,
              SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
              WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
              WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: String(PER_ENDPOINT),
              WEBHOOK_MAX_IN_FLIGHT_PER_ORGANISATION: String(PER_ORGANISATION),
              WEBHOOK_ATTEMPT_TIMEOUT: '8s',
              WEBHOOK_RETRY_SCHEDULE: '1s',
              LOG_LEVEL: 'info',
            }),
          );
        }
        await Promise.all(workers.map((w) => w.waitFor(/worker running/, 90_000)));

        const flooded: string[] = [];
        for (let i = 0; i < 16; i += 1) {
          const payload = views.event({
            id: newId('event'),
            name: 'Flood',
            status: 'draft',
            accountId: tarpit.accountId,
            venueId: null,
            timezone: 'UTC',
            createdAt: new Date(),
          });
          const { deliveryIds } = await recordTestEvent(app.runtime.db, {
            organisationId: attacker.organisation.id,
            accountId: tarpit.accountId,
            type: 'event.created',
            payload,
          });
          flooded.push(...deliveryIds);
          await dispatchers[i % 2]!.startBatch(deliveryIds);
        }
        expect(flooded).toHaveLength(16);

        const arrived = await receiver.waitForRequests(flooded.length, (r) => r.path === tarpit.path && r.status === 200, 120_000);
        expect(new Set(arrived.map((r) => r.headers['service-delivery-id']))).toEqual(new Set(flooded));
        expect(receiver.requests.filter((r) => r.path === tarpit.path)).toHaveLength(flooded.length);
        expect(maxConcurrent(receiver.requests, sentTo([tarpit.path]))).toBe(PER_ENDPOINT);
      } finally {
        await Promise.all(workers.map((w) => w.stop('SIGTERM')));
        await Promise.all(dispatchers.map((d) => d.stop()));
      }
    },
  );
});
