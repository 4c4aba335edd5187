import { randomBytes } from 'node:crypto';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecoverResult } from '../../src/webhooks/manual.ts';
import {
  RECOVERIES_PER_ENDPOINT_PER_HOUR,
  RECOVERIES_PER_ORGANISATION_PER_HOUR,
  RECOVERY_MAX_DELIVERIES,
  RECOVERY_STEP_INTERVAL_MS,
  RECOVERY_STEP_SIZE,
} from '../../src/webhooks/operator-limits.ts';
import { createWorker } from '../../workflows/worker.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { expectDocumentedResponse } from '../support/openapi-check.ts';
import { recordFailedDeliveries, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * POST /v1/webhook-endpoints/{id}/recover as an attacker uses it: let deliveries fail, point the
 * endpoint at a URL of their choosing, and ask for recoveries, which sent every failed delivery of
 * 30 days to that URL at once (5 calls, 500 requests in one burst). Now a recovery sends only the
 * deliveries made for the endpoint's current URL unless the caller says otherwise (and counts the
 * others either way), stops if the URL changes under it, sends at most RECOVERY_MAX_DELIVERIES,
 * RECOVERY_STEP_SIZE at a time a pause apart, and recoveries are rate limited per endpoint and per
 * organisation. Real app, worker, Temporal and receivers; the failed deliveries are recorded the way
 * services record them and then marked failed, as their exhausted retries would have.
 */

let app: TestApp;
let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;

beforeAll(async () => {
  app = await startTestApp({ SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64') });
  ({ worker } = await createWorker({ config: app.config, db: app.runtime.db, logger: app.runtime.logger, prebundled: false }));
  running = worker.run();
  receiver = await startWebhookReceiver();
}, 180_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await receiver?.close();
  await app?.stop();
});

const as = (o: TestOrganisation) => ({ token: o.adminToken, org: o.slug });

let paths = 0;
/** An endpoint registered over the API, alone on an account of its own, at a path of its own. */
async function endpoint(o: TestOrganisation) {
  const accountId = (await createAccount(app, o, `Hooks ${paths + 1}`)).id;
  const path = `/recover/${(paths += 1)}`;
  const res = await api(app, 'POST', '/v1/webhook-endpoints', { ...as(o), body: { accountId, url: `${receiver.url}${path}` } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  receiver.secrets.set(path, res.body.secret);
  return { id: res.body.endpoint.id as string, path, url: res.body.endpoint.url as string, accountId };
}

/** `count` deliveries to the endpoint, recorded as services record them, failed as after their last retry. */
const failedDeliveries = (o: TestOrganisation, target: { accountId: string }, count: number) =>
  recordFailedDeliveries(app.runtime.db, { organisationId: o.organisation.id, accountId: target.accountId }, count);

const recover = (o: TestOrganisation, endpointId: string, body: Record<string, unknown>) =>
  api(app, 'POST', `/v1/webhook-endpoints/${endpointId}/recover`, { ...as(o), body });

/** The recovery's result, once its workflow has finished. */
async function finished(recoveryId: string): Promise<RecoverResult> {
  const client = await app.runtime.temporal!.client();
  return client.workflow.getHandle(recoveryId).result() as Promise<RecoverResult>;
}

const sentTo = (path: string) => receiver.requests.filter((r) => r.path === path);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for the next fixed window of the rate limiter when the current one ends within `margin`. */
async function freshWindow(windowMs: number, marginMs: number): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < marginMs) await pause(left + 50);
}

describe('a recovery after the endpoint was pointed elsewhere', () => {
  it('sends nothing made for the old URL to the new one unless the caller confirms it, and says how many it left out or included', async () => {
    const o = await createOrganisation(app, 'recurl');
    const partner = await endpoint(o);
    const since = new Date(Date.now() - 1_000).toISOString();
    const made = await failedDeliveries(o, partner, 5);
    const elsewhere = `${receiver.url}/elsewhere/${paths}`;
    const patched = await api(app, 'PATCH', `/v1/webhook-endpoints/${partner.id}`, { ...as(o), body: { url: elsewhere } });
    expect(patched.status).toBe(200);

    const res = await recover(o, partner.id, { since });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expectDocumentedResponse('POST', `/webhook-endpoints/${partner.id}/recover`, res);
    expect(res.body.recovery).toMatchObject({
      url: elsewhere,
      deliveryCount: 0,
      includedOtherUrlCount: 0,
      skippedOtherUrlCount: 5,
      remainingCount: 0,
    });
    expect(await finished(res.body.recovery.id)).toEqual({ attempted: 0, succeeded: 0 });
    expect(receiver.requests.filter((r) => r.path.startsWith('/elsewhere/'))).toHaveLength(0);
    const shown = await graphql(app, `{ webhookDelivery(id: "${made[0]}") { url status } }`, {}, as(o));
    expect(shown.body.data.webhookDelivery).toEqual({ url: partner.url, status: 'FAILED' });

    const confirmed = await graphql(
      app,
      `
        mutation ($id: ID!, $since: DateTime!) {
          recoverWebhookEndpoint(id: $id, input: { since: $since, includeOtherUrls: true }) {
            webhookRecovery {
              deliveryCount
              includedOtherUrlCount
              skippedOtherUrlCount
              remainingCount
            }
          }
        }
      `,
      { id: partner.id, since },
      as(o),
    );
    expect(confirmed.body.data.recoverWebhookEndpoint.webhookRecovery).toEqual({
      deliveryCount: 5,
      includedOtherUrlCount: 5,
      skippedOtherUrlCount: 0,
      remainingCount: 0,
    });
    const arrived = await receiver.waitForRequests(5, (r) => r.path.startsWith('/elsewhere/'));
    expect(new Set(arrived.map((r) => r.headers['service-delivery-id']))).toEqual(new Set(made));
  });

  it('stops when the endpoint’s URL changes while it runs: nothing goes to the new URL', async () => {
    const o = await createOrganisation(app, 'recmove');
    const partner = await endpoint(o);
    const since = new Date(Date.now() - 1_000).toISOString();
    await failedDeliveries(o, partner, 3 * RECOVERY_STEP_SIZE);
    const res = await recover(o, partner.id, { since });
    expect(res.body.recovery.deliveryCount).toBe(3 * RECOVERY_STEP_SIZE);

    await receiver.waitForRequests(RECOVERY_STEP_SIZE, (r) => r.path === partner.path);
    const moved = `${receiver.url}/moved/${paths}`;
    expect((await api(app, 'PATCH', `/v1/webhook-endpoints/${partner.id}`, { ...as(o), body: { url: moved } })).status).toBe(200);

    const result = await finished(res.body.recovery.id);
    expect(result.stoppedBecause).toBe('endpoint url changed');
    expect(receiver.requests.filter((r) => r.path.startsWith('/moved/'))).toHaveLength(0);
    expect(sentTo(partner.path).length).toBeLessThan(3 * RECOVERY_STEP_SIZE);
  });
});

describe('a recovery of a long backlog', () => {
  it(
    `sends at most RECOVERY_MAX_DELIVERIES, oldest first, RECOVERY_STEP_SIZE at a time RECOVERY_STEP_INTERVAL_MS apart, and says how many remain`,
    { timeout: 120_000 },
    async () => {
      const o = await createOrganisation(app, 'recmax');
      const target = await endpoint(o);
      const since = new Date(Date.now() - 1_000).toISOString();
      await failedDeliveries(o, target, RECOVERY_MAX_DELIVERIES + 5);

      const res = await recover(o, target.id, { since });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      expect(res.body.recovery).toMatchObject({ deliveryCount: RECOVERY_MAX_DELIVERIES, skippedOtherUrlCount: 0, remainingCount: 5 });
      expect(await finished(res.body.recovery.id)).toEqual({ attempted: RECOVERY_MAX_DELIVERIES, succeeded: RECOVERY_MAX_DELIVERIES });

      const arrived = sentTo(target.path).sort((a, b) => a.receivedAt - b.receivedAt);
      expect(arrived).toHaveLength(RECOVERY_MAX_DELIVERIES);
      const oldest = await app.runtime.db.webhookDelivery.findMany({
        where: { endpointId: target.id },
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
        select: { id: true, status: true },
      });
      expect(new Set(arrived.map((r) => r.headers['service-delivery-id']))).toEqual(
        new Set(oldest.slice(0, RECOVERY_MAX_DELIVERIES).map((d) => d.id)),
      );
      expect(oldest.slice(RECOVERY_MAX_DELIVERIES).map((d) => d.status)).toEqual(Array(5).fill('failed'));
      // Paced: any RECOVERY_STEP_SIZE + 1 requests span at least one pause.
      const spans = arrived.slice(RECOVERY_STEP_SIZE).map((r, i) => r.receivedAt - arrived[i]!.receivedAt);
      expect(Math.min(...spans)).toBeGreaterThanOrEqual(RECOVERY_STEP_INTERVAL_MS);
    },
  );
});

describe('recoveries asked for in numbers', () => {
  it(
    'answers 429 RATE_LIMITED with Retry-After beyond RECOVERIES_PER_ENDPOINT_PER_HOUR of one endpoint; another endpoint still recovers',
    { timeout: 180_000 },
    async () => {
      await freshWindow(3_600_000, 60_000);
      const o = await createOrganisation(app, 'recrate');
      const target = await endpoint(o);
      const since = new Date(Date.now() - 60_000).toISOString();
      for (let i = 0; i < RECOVERIES_PER_ENDPOINT_PER_HOUR; i += 1) {
        const res = await recover(o, target.id, { since });
        expect(res.status, JSON.stringify(res.body)).toBe(202);
        await finished(res.body.recovery.id);
      }

      const refused = await recover(o, target.id, { since });
      expect([refused.status, refused.body.code]).toEqual([429, 'RATE_LIMITED']);
      expect(refused.body.error).toBe(`At most ${RECOVERIES_PER_ENDPOINT_PER_HOUR} recoveries an hour per endpoint.`);
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(3_600);
      expectDocumentedResponse('POST', `/webhook-endpoints/${target.id}/recover`, refused);
      const gql = await graphql(
        app,
        `mutation { recoverWebhookEndpoint(id: "${target.id}", input: { since: "${since}" }) { webhookRecovery { id } } }`,
        {},
        as(o),
      );
      expect(gql.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');

      const other = await endpoint(o);
      expect((await recover(o, other.id, { since })).status).toBe(202);
    },
  );

  it(
    'answers 429 RATE_LIMITED beyond RECOVERIES_PER_ORGANISATION_PER_HOUR across an organisation’s endpoints; another organisation still recovers',
    { timeout: 180_000 },
    async () => {
      await freshWindow(3_600_000, 90_000);
      const o = await createOrganisation(app, 'recorg');
      const bystander = await createOrganisation(app, 'recbystander');
      const since = new Date(Date.now() - 60_000).toISOString();
      let made = 0;
      while (made < RECOVERIES_PER_ORGANISATION_PER_HOUR) {
        const target = await endpoint(o);
        for (let i = 0; i < RECOVERIES_PER_ENDPOINT_PER_HOUR && made < RECOVERIES_PER_ORGANISATION_PER_HOUR; i += 1, made += 1) {
          const res = await recover(o, target.id, { since });
          expect(res.status, JSON.stringify(res.body)).toBe(202);
          await finished(res.body.recovery.id);
        }
      }

      const fresh = await endpoint(o);
      const refused = await recover(o, fresh.id, { since });
      expect([refused.status, refused.body.code]).toEqual([429, 'RATE_LIMITED']);
      expect(refused.body.error).toBe(`At most ${RECOVERIES_PER_ORGANISATION_PER_HOUR} recoveries an hour per organisation.`);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

      const theirs = await endpoint(bystander);
      expect((await recover(bystander, theirs.id, { since })).status).toBe(202);
    },
  );
});
