import { randomBytes } from 'node:crypto';
import { DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESENDS_PER_ENDPOINT_PER_MINUTE, RESENDS_PER_ORGANISATION_PER_MINUTE } from '../../src/webhooks/operator-limits.ts';
import { createActivities } from '../../workflows/activities.ts';
import { installTemporalRuntime, WORKER_CONCURRENCY, WORKFLOWS_PATH } from '../../workflows/worker.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { expectDocumentedResponse } from '../support/openapi-check.ts';
import { recordFailedDeliveries, startWebhookReceiver, type ReceiverBehaviour, type WebhookReceiver } from '../support/webhook-receiver.ts';
import { freshMinute } from '../support/clock.ts';

/**
 * POST /v1/webhook-deliveries/{id}/resend as an attacker uses it: 50 at once were 50 × 202, and each
 * resend waited for its endpoint's slot inside one of the worker's activity slots, which every
 * tenant's resends and recoveries share. Now resends are rate limited per endpoint and per
 * organisation (429 RATE_LIMITED with Retry-After), and a resend that finds its endpoint busy gives
 * its activity slot back and waits in its workflow. The worker here is the real one (its activities
 * and workflows) with only ACTIVITY_SLOTS activity slots, so that two waiting resends would fill
 * them; each endpoint has one attempt slot, so that one slow attempt makes its endpoint busy.
 */

const ACTIVITY_SLOTS = 2;
const TARPIT_MS = 15_000;
/** How long another tenant's resend may take to arrive while resends of a busy endpoint wait. */
const BOUND_MS = 6_000;

let app: TestApp;
let connection: NativeConnection;
let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;

beforeAll(async () => {
  app = await startTestApp({
    SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: '1',
    WEBHOOK_ATTEMPT_TIMEOUT: '20s',
  });
  installTemporalRuntime({ logger: new DefaultLogger('WARN') });
  connection = await NativeConnection.connect({ address: app.config.TEMPORAL_ADDRESS! });
  worker = await Worker.create({
    connection,
    namespace: app.config.TEMPORAL_NAMESPACE,
    taskQueue: app.config.TEMPORAL_TASK_QUEUE,
    workflowsPath: WORKFLOWS_PATH,
    activities: createActivities({
      db: app.runtime.db,
      logger: app.runtime.logger,
      config: app.config,
      encryptionKey: app.runtime.encryptionKey,
    }),
    ...WORKER_CONCURRENCY,
    maxConcurrentActivityTaskExecutions: ACTIVITY_SLOTS,
    maxConcurrentActivityTaskPolls: ACTIVITY_SLOTS,
  });
  running = worker.run();
  receiver = await startWebhookReceiver();
}, 180_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await connection?.close();
  await receiver?.close();
  await app?.stop();
});

const as = (o: TestOrganisation) => ({ token: o.adminToken, org: o.slug });
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let paths = 0;
async function endpoint(o: TestOrganisation, behaviour: ReceiverBehaviour = {}) {
  const accountId = (await createAccount(app, o, `Hooks ${paths + 1}`)).id;
  const path = `/resend/${(paths += 1)}`;
  receiver.pathBehaviours.set(path, behaviour);
  const res = await api(app, 'POST', '/v1/webhook-endpoints', { ...as(o), body: { accountId, url: `${receiver.url}${path}` } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  receiver.secrets.set(path, res.body.secret);
  return { id: res.body.endpoint.id as string, path, accountId };
}

/** `count` deliveries to the endpoint, recorded as services record them, failed as after their last retry. */
const failedDeliveries = (o: TestOrganisation, target: { accountId: string }, count: number) =>
  recordFailedDeliveries(app.runtime.db, { organisationId: o.organisation.id, accountId: target.accountId }, count);

const resend = (o: TestOrganisation, deliveryId: string) => api(app, 'POST', `/v1/webhook-deliveries/${deliveryId}/resend`, as(o));

describe('resends asked for in numbers', () => {
  it('50 at once of one delivery: RESENDS_PER_ENDPOINT_PER_MINUTE accepted, the rest 429 RATE_LIMITED with Retry-After; only the accepted are sent', async () => {
    await freshMinute(20_000);
    const o = await createOrganisation(app, 'resburst');
    const target = await endpoint(o);
    const [id] = (await failedDeliveries(o, target, 1)) as [string];

    const answers = await Promise.all(Array.from({ length: 50 }, () => resend(o, id)));

    expect(answers.filter((a) => a.status === 202)).toHaveLength(RESENDS_PER_ENDPOINT_PER_MINUTE);
    const refused = answers.filter((a) => a.status !== 202);
    expect(refused).toHaveLength(50 - RESENDS_PER_ENDPOINT_PER_MINUTE);
    for (const answer of refused) {
      expect([answer.status, answer.body.code]).toEqual([429, 'RATE_LIMITED']);
      const retryAfter = Number(answer.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    expect(refused[0]!.body.error).toMatch(new RegExp(`^At most ${RESENDS_PER_ENDPOINT_PER_MINUTE} resends a minute per endpoint`));
    expectDocumentedResponse('POST', `/webhook-deliveries/${id}/resend`, refused[0]!);
    const gql = await graphql(app, `mutation { resendWebhookDelivery(id: "${id}") { webhookDelivery { id } } }`, {}, as(o));
    expect(gql.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');

    await receiver.waitForRequests(RESENDS_PER_ENDPOINT_PER_MINUTE, (r) => r.path === target.path);
    await pause(1_000);
    expect(receiver.requests.filter((r) => r.path === target.path)).toHaveLength(RESENDS_PER_ENDPOINT_PER_MINUTE);
    const attempts = await app.runtime.db.webhookAttempt.count({ where: { deliveryId: id, trigger: 'manual' } });
    expect(attempts).toBe(RESENDS_PER_ENDPOINT_PER_MINUTE);
  });

  it(
    'spread over many endpoints: refused beyond RESENDS_PER_ORGANISATION_PER_MINUTE for the organisation; another organisation is unaffected',
    { timeout: 120_000 },
    async () => {
      await freshMinute(30_000);
      const o = await createOrganisation(app, 'resorg');
      const bystander = await createOrganisation(app, 'resbystander');
      const perEndpoint = RESENDS_PER_ENDPOINT_PER_MINUTE;
      const endpoints = Math.ceil(RESENDS_PER_ORGANISATION_PER_MINUTE / perEndpoint) + 1;
      const statuses: number[] = [];
      let lastRefused: Awaited<ReturnType<typeof resend>> | undefined;
      for (let e = 0; e < endpoints; e += 1) {
        const target = await endpoint(o);
        const ids = await failedDeliveries(o, target, perEndpoint);
        const answers = await Promise.all(ids.map((id) => resend(o, id)));
        statuses.push(...answers.map((a) => a.status));
        lastRefused = answers.find((a) => a.status === 429) ?? lastRefused;
      }
      expect(statuses.filter((s) => s === 202)).toHaveLength(RESENDS_PER_ORGANISATION_PER_MINUTE);
      expect(statuses.filter((s) => s === 429)).toHaveLength(endpoints * perEndpoint - RESENDS_PER_ORGANISATION_PER_MINUTE);
      expect(lastRefused!.body).toMatchObject({
        code: 'RATE_LIMITED',
        error: `At most ${RESENDS_PER_ORGANISATION_PER_MINUTE} resends a minute per organisation.`,
      });

      const theirs = await endpoint(bystander);
      const [id] = (await failedDeliveries(bystander, theirs, 1)) as [string];
      expect((await resend(bystander, id)).status).toBe(202);
    },
  );
});

describe('resends waiting for a busy endpoint', () => {
  it(
    'give their worker slot back: another tenant’s resend is sent at once, and the waiting ones follow when the endpoint frees up',
    { timeout: 120_000 },
    async () => {
      await freshMinute(40_000);
      const attacker = await createOrganisation(app, 'resbusy');
      const bystander = await createOrganisation(app, 'reshealthy');
      // The tarpit's only attempt slot is held by a test delivery (a scheduled attempt) for TARPIT_MS.
      const tarpit = await endpoint(attacker, { sleepMs: TARPIT_MS, sleepNext: 1 });
      expect((await api(app, 'POST', `/v1/webhook-endpoints/${tarpit.id}/test`, as(attacker))).status).toBe(201);
      const deadline = Date.now() + 10_000;
      while (!receiver.requests.some((r) => r.path === tarpit.path) && Date.now() < deadline) await pause(20);
      // More resends of the tarpit's deliveries than the worker has activity slots: they wait for its slot.
      const waiting = await failedDeliveries(attacker, tarpit, ACTIVITY_SLOTS + 1);
      for (const id of waiting) expect((await resend(attacker, id)).status).toBe(202);
      await pause(500);

      const healthy = await endpoint(bystander);
      const [id] = (await failedDeliveries(bystander, healthy, 1)) as [string];
      const asked = Date.now();
      expect((await resend(bystander, id)).status).toBe(202);
      const [arrived] = await receiver.waitForRequests(1, (r) => r.path === healthy.path, 30_000);
      expect(arrived!.receivedAt - asked).toBeLessThan(BOUND_MS);
      expect(arrived!.verified).toBe(true);

      const resent = (r: { path: string; headers: Record<string, unknown> }) =>
        r.path === tarpit.path && waiting.includes(String(r.headers['service-delivery-id']));
      const followed = await receiver.waitForRequests(waiting.length, resent, 60_000);
      expect(new Set(followed.map((r) => r.headers['service-delivery-id']))).toEqual(new Set(waiting));
      const settled = Date.now() + 10_000;
      while ((await app.runtime.db.webhookDelivery.count({ where: { id: { in: waiting }, status: 'succeeded' } })) < waiting.length) {
        expect(Date.now()).toBeLessThan(settled);
        await pause(50);
      }
      const attempts = await app.runtime.db.webhookAttempt.findMany({ where: { deliveryId: { in: waiting } } });
      expect(attempts.map((a) => [a.trigger, a.statusCode])).toEqual(waiting.map(() => ['manual', 200]));
    },
  );
});
