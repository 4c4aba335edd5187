import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import Stripe from 'stripe';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/ids.ts';
import { views } from '../../src/webhooks/payloads.ts';
import { WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { createWorker } from '../../workflows/worker.ts';
import { RECOVERIES_PER_ENDPOINT_PER_HOUR } from '../../src/webhooks/operator-limits.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import {
  api,
  createAccount,
  createOrganisation,
  createStaffUser,
  graphql,
  systemRole,
  type TestOrganisation,
} from '../support/fixtures.ts';
import { expectDocumentedResponse } from '../support/openapi-check.ts';
import { recordTestEvent, startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * What partners and operators do with deliveries beyond receiving them: resend one,
 * recover an endpoint's failures since a time, rotate a signing secret (both signatures verified
 * with Stripe's library), and what the service does on its own: the circuit breaker, automatic
 * disabling, and pruning old history. Over HTTP against the real app, a real in-process worker, the
 * real Temporal dev server and real receivers.
 */

const logLines: string[] = [];
let app: TestApp;
let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;
let org: TestOrganisation;
let other: TestOrganisation;

beforeAll(async () => {
  const logger = pino({ level: 'info' }, new Writable({ write: (chunk, _encoding, done) => (logLines.push(String(chunk)), done()) }));
  app = await startTestApp(
    {
      WEBHOOK_RETRY_SCHEDULE: '300ms,300ms',
      WEBHOOK_ATTEMPT_TIMEOUT: '3s',
      WEBHOOK_BREAKER_THRESHOLD: '3',
      WEBHOOK_BREAKER_COOLDOWN: '1500ms',
      WEBHOOK_DISABLE_AFTER: '4s',
      WEBHOOK_RETENTION: '30d',
      SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'info',
    },
    { logger },
  );
  ({ worker } = await createWorker({ config: app.config, db: app.runtime.db, logger, prebundled: false }));
  running = worker.run();
  receiver = await startWebhookReceiver();
  [org, other] = await Promise.all([createOrganisation(app, 'whops'), createOrganisation(app, 'whopsother')]);
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await receiver?.close();
  await app?.stop();
});

const admin = () => ({ token: org.adminToken, org: org.slug });

let paths = 0;
/**
 * An endpoint registered over the API, as a partner does, alone on an account of its own (an event
 * goes to every endpoint of its account); its requests arrive at its own path.
 */
async function endpoint(o: TestOrganisation = org) {
  const accountId = (await createAccount(app, o, `Hooks ${paths + 1}`)).id;
  const path = `/ops/${(paths += 1)}`;
  const res = await api(app, 'POST', '/v1/webhook-endpoints', {
    token: o.adminToken,
    org: o.slug,
    body: { accountId, url: `${receiver.url}${path}` },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  receiver.secrets.set(path, res.body.secret);
  return { id: res.body.endpoint.id as string, path, secret: res.body.secret as string, accountId };
}

/** Records an event.created on the endpoint's account and dispatches it, as the services do. */
async function announce(target: { accountId: string }, o: TestOrganisation = org) {
  const { accountId } = target;
  const payload = views.event({
    id: newId('event'),
    name: 'Ops',
    status: 'draft',
    accountId,
    venueId: null,
    timezone: 'UTC',
    createdAt: new Date(),
  });
  const recorded = await recordTestEvent(app.runtime.db, { organisationId: o.organisation.id, accountId, type: 'event.created', payload });
  app.runtime.dispatcher.dispatch(recorded.deliveryIds);
  return recorded;
}

async function delivery(id: string, o: TestOrganisation = org) {
  const res = await api(app, 'GET', `/v1/webhook-deliveries/${id}`, { token: o.adminToken, org: o.slug });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.delivery as { id: string; status: string; attemptCount: number; attempts: Array<Record<string, any>> };
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const settledAs = async (id: string, status: string, attempts?: number) =>
  waitUntil(async () => {
    const d = await delivery(id);
    return d.status === status && (attempts === undefined || d.attemptCount === attempts);
  });

const on = (path: string) => (r: ReceivedRequest) => r.path === path;

describe('POST /webhook-deliveries/{id}/resend', () => {
  it('sends the delivery again now as a manual attempt: same event and delivery ids, verified by Stripe, recorded after the first', async () => {
    const target = await endpoint();
    const { eventId, deliveryIds } = await announce(target);
    const [id] = deliveryIds as [string];
    await settledAs(id, 'succeeded', 1);

    const res = await api(app, 'POST', `/v1/webhook-deliveries/${id}/resend`, admin());
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expectDocumentedResponse('POST', `/webhook-deliveries/${id}/resend`, res);
    expect(res.body.delivery).toMatchObject({ id, status: 'succeeded', attemptCount: 1 });

    const requests = await receiver.waitForRequests(2, on(target.path));
    expect(requests.map((r) => [r.headers['service-event-id'], r.headers['service-delivery-id'], r.verified])).toEqual([
      [eventId, id, true],
      [eventId, id, true],
    ]);
    await settledAs(id, 'succeeded', 2);
    const got = await api(app, 'GET', `/v1/webhook-deliveries/${id}`, admin());
    expectDocumentedResponse('GET', `/webhook-deliveries/${id}`, got);
    expect(got.body.delivery.attempts.map((a: Record<string, unknown>) => [a.attemptNumber, a.trigger, a.statusCode])).toEqual([
      [1, 'scheduled', 200],
      [2, 'manual', 200],
    ]);
  });

  it('settles a failed delivery as succeeded when the resend is answered 2xx; a failed resend changes nothing else and is not retried', async () => {
    const target = await endpoint();
    receiver.pathBehaviours.set(target.path, { failAlways: true });
    const { deliveryIds } = await announce(target);
    const [id] = deliveryIds as [string];
    await settledAs(id, 'failed', 3);

    expect((await api(app, 'POST', `/v1/webhook-deliveries/${id}/resend`, admin())).status).toBe(202);
    await settledAs(id, 'failed', 4);
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect((await delivery(id)).attemptCount).toBe(4);

    receiver.pathBehaviours.delete(target.path);
    const gql = await graphql(
      app,
      `mutation { resendWebhookDelivery(id: "${id}") { webhookDelivery { id status } userErrors { code } } }`,
      {},
      admin(),
    );
    expect(gql.body.data.resendWebhookDelivery).toEqual({ webhookDelivery: { id, status: 'FAILED' }, userErrors: [] });
    await settledAs(id, 'succeeded', 5);
    const attempts = (await delivery(id)).attempts;
    expect(attempts.map((a) => [a.attemptNumber, a.trigger, a.statusCode])).toEqual([
      [1, 'scheduled', 500],
      [2, 'scheduled', 500],
      [3, 'scheduled', 500],
      [4, 'manual', 500],
      [5, 'manual', 200],
    ]);
  });

  it('refuses: unknown or another organisation’s delivery 404, a viewer 403, a key without webhooks.write 404, a disabled endpoint 409', async () => {
    const target = await endpoint();
    const { deliveryIds } = await announce(target);
    const [id] = deliveryIds as [string];
    await settledAs(id, 'succeeded');
    const resend = (token: string, slug = org.slug, deliveryId = id) =>
      api(app, 'POST', `/v1/webhook-deliveries/${deliveryId}/resend`, { token, org: slug });

    expect((await resend(org.adminToken, org.slug, 'whd_doesnotexist')).body.code).toBe('NOT_FOUND');
    const foreign = await resend(other.adminToken, other.slug);
    expect([foreign.status, foreign.body.code]).toEqual([404, 'NOT_FOUND']);
    expect((await api(app, 'GET', `/v1/webhook-deliveries/${id}`, { token: other.adminToken, org: other.slug })).status).toBe(404);
    const viewer = (await createStaffUser(app, org, [{ roleId: systemRole(org, 'viewer'), accountId: target.accountId }])).token;
    expect(await resend(viewer).then((r) => [r.status, r.body.code])).toEqual([403, 'FORBIDDEN']);
    expect((await api(app, 'GET', `/v1/webhook-deliveries/${id}`, { token: viewer, org: org.slug })).status).toBe(200);
    for (const scopes of [['webhooks.read'], ['events.write']]) {
      const key = (await api(app, 'POST', '/v1/api-keys', { ...admin(), body: { name: 'k', scopes } })).body.key;
      expect(await resend(key).then((r) => [r.status, r.body.code]), scopes.join()).toEqual([404, 'NOT_FOUND']);
    }
    await api(app, 'PATCH', `/v1/webhook-endpoints/${target.id}`, { ...admin(), body: { enabled: false } });
    expect(await resend(org.adminToken).then((r) => [r.status, r.body.code])).toEqual([409, 'CONFLICT']);
    await api(app, 'DELETE', `/v1/webhook-endpoints/${target.id}`, admin());
    expect(await resend(org.adminToken).then((r) => [r.status, r.body.code])).toEqual([404, 'NOT_FOUND']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.requests.filter(on(target.path))).toHaveLength(1);
  });
});

describe('POST /webhook-endpoints/{id}/recover', () => {
  it('sends every failed delivery since the time again, once each, and leaves older ones and other endpoints alone', async () => {
    const target = await endpoint();
    receiver.pathBehaviours.set(target.path, { failAlways: true });
    const before = (await announce(target)).deliveryIds[0]!;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const since = new Date().toISOString();
    const failed = [];
    for (let i = 0; i < 3; i += 1) failed.push((await announce(target)).deliveryIds[0]!);
    for (const id of [before, ...failed]) await settledAs(id, 'failed');
    // Healthy again, once its circuit breaker (opened by those failures) has cooled down. The last
    // attempts waited for the circuit to let them through, long enough here (WEBHOOK_DISABLE_AFTER
    // is 4 s) for the endpoint to have been disabled meanwhile: the partner enables it again.
    receiver.pathBehaviours.delete(target.path);
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    expect((await api(app, 'PATCH', `/v1/webhook-endpoints/${target.id}`, { ...admin(), body: { enabled: true } })).status).toBe(200);
    const succeeded = (await announce(target)).deliveryIds[0]!;
    await settledAs(succeeded, 'succeeded');
    const sentBefore = receiver.requests.filter(on(target.path)).length;

    const res = await api(app, 'POST', `/v1/webhook-endpoints/${target.id}/recover`, { ...admin(), body: { since } });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expectDocumentedResponse('POST', `/webhook-endpoints/${target.id}/recover`, res);
    expect(res.body.recovery).toEqual({
      id: `whr_${target.id.slice(4)}`,
      endpointId: target.id,
      url: `${receiver.url}${target.path}`,
      since,
      until: expect.any(String),
      deliveryCount: 3,
      includedOtherUrlCount: 0,
      skippedOtherUrlCount: 0,
      remainingCount: 0,
    });
    for (const id of failed) await settledAs(id, 'succeeded', 4);
    expect((await delivery(before)).status).toBe('failed');
    expect((await delivery(succeeded)).attemptCount).toBe(1);
    const sent = receiver.requests.filter(on(target.path)).slice(sentBefore);
    expect(sent.map((r) => r.headers['service-delivery-id']).sort()).toEqual([...failed].sort());
    expect(sent.every((r) => r.verified)).toBe(true);
    for (const id of failed)
      expect((await delivery(id)).attempts.at(-1)).toMatchObject({ attemptNumber: 4, trigger: 'manual', statusCode: 200 });

    // Nothing failed is left: a second recovery sends nothing.
    const again = await graphql(
      app,
      `mutation { recoverWebhookEndpoint(id: "${target.id}", input: { since: "${since}" }) { webhookRecovery { deliveryCount } userErrors { code } } }`,
      {},
      admin(),
    );
    expect(again.body.data.recoverWebhookEndpoint).toEqual({ webhookRecovery: { deliveryCount: 0 }, userErrors: [] });
  });

  it('runs one recovery per endpoint at a time (409 while one runs)', async () => {
    const target = await endpoint();
    receiver.pathBehaviours.set(target.path, { failAlways: true });
    const since = new Date(Date.now() - 1000).toISOString();
    const id = (await announce(target)).deliveryIds[0]!;
    await settledAs(id, 'failed');
    // The recovery's attempt hangs for a while.
    receiver.pathBehaviours.set(target.path, { sleepMs: 2_000 });
    const first = await api(app, 'POST', `/v1/webhook-endpoints/${target.id}/recover`, { ...admin(), body: { since } });
    expect(first.status).toBe(202);
    // Refused while it runs, without using up the hourly allowance: never 429.
    for (let i = 0; i < RECOVERIES_PER_ENDPOINT_PER_HOUR; i += 1) {
      const again = await api(app, 'POST', `/v1/webhook-endpoints/${target.id}/recover`, { ...admin(), body: { since } });
      expect([i, again.status, again.body.code]).toEqual([i, 409, 'CONFLICT']);
    }
    await settledAs(id, 'succeeded');
    receiver.pathBehaviours.delete(target.path);
  });

  it('validates since (present, a date-time, not in the future, within WEBHOOK_RETENTION), and keeps tenants and rights apart', async () => {
    const target = await endpoint();
    const recover = (body: unknown, as = admin(), id = target.id) =>
      api(app, 'POST', `/v1/webhook-endpoints/${id}/recover`, { ...as, body });
    for (const body of [
      {},
      { since: 'yesterday' },
      { since: 5 },
      { since: new Date(Date.now() + 60_000).toISOString() },
      { since: '2020-01-01T00:00:00Z' },
    ]) {
      const res = await recover(body);
      expect([res.status, res.body.code, res.body.details?.map((d: { path: string }) => d.path)], JSON.stringify(body)).toEqual([
        400,
        'VALIDATION_FAILED',
        ['since'],
      ]);
      expectDocumentedResponse('POST', `/webhook-endpoints/${target.id}/recover`, res);
    }
    expect((await recover({ since: new Date().toISOString(), extra: 1 })).status).toBe(400);
    const since = new Date().toISOString();
    expect((await recover({ since }, { token: other.adminToken, org: other.slug })).status).toBe(404);
    expect((await recover({ since }, admin(), 'whe_doesnotexist')).status).toBe(404);
    const viewer = (await createStaffUser(app, org, [{ roleId: systemRole(org, 'viewer'), accountId: target.accountId }])).token;
    expect((await recover({ since }, { token: viewer, org: org.slug })).status).toBe(403);
    const key = (await api(app, 'POST', '/v1/api-keys', { ...admin(), body: { name: 'k', scopes: ['webhooks.read'] } })).body.key;
    expect((await recover({ since }, { token: key, org: org.slug })).status).toBe(404);
    await api(app, 'PATCH', `/v1/webhook-endpoints/${target.id}`, { ...admin(), body: { enabled: false } });
    expect(await recover({ since }).then((r) => [r.status, r.body.code])).toEqual([409, 'CONFLICT']);
  });
});

describe('POST /webhook-endpoints/{id}/rotate-secret', () => {
  const signatures = (r: ReceivedRequest) =>
    String(r.headers['service-signature'])
      .split(',')
      .filter((p) => p.startsWith('v1=')).length;
  const verifies = (r: ReceivedRequest, secret: string) => {
    try {
      Stripe.webhooks.constructEvent(r.rawBody, String(r.headers['service-signature']), secret);
      return true;
    } catch {
      return false;
    }
  };

  it('answers the new secret once; during the overlap every delivery verifies with either secret (Stripe); ending the overlap early leaves only the new one', async () => {
    const target = await endpoint();
    receiver.secrets.delete(target.path);
    const rotated = await api(app, 'POST', `/v1/webhook-endpoints/${target.id}/rotate-secret`, admin());
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expectDocumentedResponse('POST', `/webhook-endpoints/${target.id}/rotate-secret`, rotated);
    const secret = rotated.body.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(secret).not.toBe(target.secret);
    const overlapEnds = Date.parse(rotated.body.endpoint.rotationOverlapEndsAt);
    expect(overlapEnds - Date.now()).toBeGreaterThan(86_400_000 - 60_000);
    expect(overlapEnds - Date.now()).toBeLessThanOrEqual(86_400_000);
    const shown = await api(app, 'GET', `/v1/webhook-endpoints/${target.id}`, admin());
    expect(JSON.stringify(shown.body)).not.toContain(secret);
    expect(shown.body.endpoint.rotationOverlapEndsAt).toBe(rotated.body.endpoint.rotationOverlapEndsAt);

    const during = (await announce(target)).deliveryIds[0]!;
    const [overlapping] = await receiver.waitForRequests(1, (r) => r.headers['service-delivery-id'] === during);
    expect(signatures(overlapping!)).toBe(2);
    expect(verifies(overlapping!, secret)).toBe(true);
    expect(verifies(overlapping!, target.secret)).toBe(true);
    expect(verifies(overlapping!, 'whsec_someoneelse')).toBe(false);

    const ended = await api(app, 'PATCH', `/v1/webhook-endpoints/${target.id}`, { ...admin(), body: { rotationOverlapEndsAt: null } });
    expect([ended.status, ended.body.endpoint.rotationOverlapEndsAt]).toEqual([200, null]);
    const after = (await announce(target)).deliveryIds[0]!;
    const [single] = await receiver.waitForRequests(1, (r) => r.headers['service-delivery-id'] === after);
    expect(signatures(single!)).toBe(1);
    expect(verifies(single!, secret)).toBe(true);
    expect(verifies(single!, target.secret)).toBe(false);
  });

  it('takes overlapSeconds (0 = none), drops the oldest secret on a second rotation, and validates', async () => {
    const target = await endpoint();
    receiver.secrets.delete(target.path);
    const rotate = (body?: unknown) =>
      api(app, 'POST', `/v1/webhook-endpoints/${target.id}/rotate-secret`, { ...admin(), ...(body === undefined ? {} : { body }) });
    const first = await rotate({ overlapSeconds: 60 });
    expect(Date.parse(first.body.endpoint.rotationOverlapEndsAt) - Date.now()).toBeLessThanOrEqual(60_000);
    const second = await rotate({ overlapSeconds: 120 });
    const id = (await announce(target)).deliveryIds[0]!;
    const [request] = await receiver.waitForRequests(1, (r) => r.headers['service-delivery-id'] === id);
    expect(signatures(request!)).toBe(2);
    expect([verifies(request!, second.body.secret), verifies(request!, first.body.secret), verifies(request!, target.secret)]).toEqual([
      true,
      true,
      false,
    ]);

    const none = await rotate({ overlapSeconds: 0 });
    expect(none.body.endpoint.rotationOverlapEndsAt).toBeNull();
    const next = (await announce(target)).deliveryIds[0]!;
    const [only] = await receiver.waitForRequests(1, (r) => r.headers['service-delivery-id'] === next);
    expect([signatures(only!), verifies(only!, none.body.secret), verifies(only!, second.body.secret)]).toEqual([1, true, false]);

    // null is "not given" (the default day), on /v1 as on GraphQL: one schema validates both.
    const byDefault = await rotate({ overlapSeconds: null });
    expect(byDefault.status).toBe(200);
    expect(Date.parse(byDefault.body.endpoint.rotationOverlapEndsAt) - Date.now()).toBeGreaterThan(86_000_000);
    for (const overlapSeconds of [-1, 604_801, 1.5, '60']) {
      const res = await rotate({ overlapSeconds });
      expect([res.status, res.body.code, res.body.details?.map((d: { path: string }) => d.path)], String(overlapSeconds)).toEqual([
        400,
        'VALIDATION_FAILED',
        ['overlapSeconds'],
      ]);
    }
    const patch = await api(app, 'PATCH', `/v1/webhook-endpoints/${target.id}`, {
      ...admin(),
      body: { rotationOverlapEndsAt: '2030-01-01T00:00:00Z' },
    });
    expect([patch.status, patch.body.details?.map((d: { path: string }) => d.path)]).toEqual([400, ['rotationOverlapEndsAt']]);
    expect(
      (await api(app, 'POST', `/v1/webhook-endpoints/${target.id}/rotate-secret`, { token: other.adminToken, org: other.slug })).status,
    ).toBe(404);
    const gql = await graphql(
      app,
      `mutation { rotateWebhookEndpointSecret(id: "${target.id}", input: { overlapSeconds: 30 }) { rotatedSecret { secret endpoint { rotationOverlapEndsAt } } } }`,
      {},
      admin(),
    );
    expect(gql.body.data.rotateWebhookEndpointSecret.rotatedSecret.secret).toMatch(/^whsec_/);
  });
});

describe('an endpoint that keeps failing', () => {
  it('trips its circuit breaker: after WEBHOOK_BREAKER_THRESHOLD failures in a row attempts are recorded as not sent, then one probe at a time until one succeeds', async () => {
    const target = await endpoint();
    receiver.pathBehaviours.set(target.path, { failAlways: true });
    // Three failures in a row (the threshold): attempt 1, 2 and 3 of the first delivery.
    const first = (await announce(target)).deliveryIds[0]!;
    await settledAs(first, 'failed', 3);
    expect(receiver.requests.filter(on(target.path))).toHaveLength(3);

    // Within the cool-down nothing is sent: the attempts are recorded as not sent.
    const second = (await announce(target)).deliveryIds[0]!;
    await waitUntil(async () => (await delivery(second)).attemptCount >= 1);
    expect((await delivery(second)).attempts[0]).toMatchObject({
      attemptNumber: 1,
      statusCode: null,
      durationMs: 0,
      error: expect.stringMatching(/circuit open/),
    });
    expect(receiver.requests.filter(on(target.path))).toHaveLength(3);

    // After it, the endpoint works again: the next attempt probes, succeeds, and closes the circuit.
    receiver.pathBehaviours.delete(target.path);
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    const third = (await announce(target)).deliveryIds[0]!;
    await settledAs(third, 'succeeded', 1);
    const row = await app.runtime.db.webhookEndpoint.findUniqueOrThrow({ where: { id: target.id } });
    expect(row).toMatchObject({ consecutiveFailures: 0, failingSince: null, circuitOpenUntil: null });
  });

  it('sends a delivery’s last attempt even when the circuit is open at its time: it waits for the circuit instead of being spent', async () => {
    const target = await endpoint();
    // Its breaker tripped by failures in a row (the threshold, 3), and open for longer than a
    // delivery's whole schedule (600 ms): every attempt of the next delivery falls within it.
    const openUntil = new Date(Date.now() + 4_000);
    await app.runtime.db.webhookEndpoint.update({
      where: { id: target.id },
      data: { consecutiveFailures: 3, circuitOpenUntil: openUntil },
    });
    const id = (await announce(target)).deliveryIds[0]!;
    await waitUntil(async () => (await delivery(id)).attemptCount >= 2);

    // The last attempt was due 300 ms later: it waits for the circuit, the delivery still pending
    // with its next attempt at the circuit's end (seen while it waits, however slow the machine).
    let waited = false;
    await waitUntil(async () => {
      const res = await api(app, 'GET', `/v1/webhook-deliveries/${id}`, admin());
      const { status, attemptCount, nextAttemptAt } = res.body.delivery as {
        status: string;
        attemptCount: number;
        nextAttemptAt: string | null;
      };
      if (status === 'pending' && attemptCount === 2 && nextAttemptAt && Date.parse(nextAttemptAt) >= openUntil.getTime()) waited = true;
      return waited || status !== 'pending';
    });
    expect(waited).toBe(true);

    await settledAs(id, 'succeeded', 3);
    const attempts = (await delivery(id)).attempts;
    expect(Date.parse(attempts[2]!.attemptedAt as string)).toBeGreaterThanOrEqual(openUntil.getTime());
    expect(attempts.map((a) => [a.attemptNumber, a.trigger, a.statusCode, a.error])).toEqual([
      [1, 'scheduled', null, expect.stringMatching(/circuit open/)],
      [2, 'scheduled', null, expect.stringMatching(/circuit open/)],
      [3, 'scheduled', 200, null],
    ]);
    const sent = receiver.requests.filter((r) => r.headers['service-delivery-id'] === id);
    expect(sent.map((r) => [r.status, r.verified])).toEqual([[200, true]]);
    expect(sent[0]!.receivedAt).toBeGreaterThanOrEqual(openUntil.getTime());
  });

  it('is disabled once every attempt failed for WEBHOOK_DISABLE_AFTER, with the reason shown and logged; enabling it again clears the reason', async () => {
    const target = await endpoint();
    receiver.pathBehaviours.set(target.path, { failAlways: true });
    const started = Date.now();
    let last: string | undefined;
    // Failures for longer than WEBHOOK_DISABLE_AFTER (4 s), spaced beyond the breaker's cool-down.
    while (Date.now() - started < 8_000) {
      // Disabled between the check below and this announcement: no delivery, keep the last one.
      last = (await announce(target)).deliveryIds[0] ?? last;
      await new Promise((resolve) => setTimeout(resolve, 700));
      const shown = await api(app, 'GET', `/v1/webhook-endpoints/${target.id}`, admin());
      if (!shown.body.endpoint.enabled) break;
    }
    const shown = await api(app, 'GET', `/v1/webhook-endpoints/${target.id}`, admin());
    expectDocumentedResponse('GET', `/webhook-endpoints/${target.id}`, shown);
    expect(shown.body.endpoint).toMatchObject({
      enabled: false,
      disabledReason: expect.stringMatching(/^Every delivery attempt failed for 4s \(since \d{4}-\d\d-\d\dT/),
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_000);
    expect(logLines.some((line) => line.includes(target.id) && line.includes('webhook endpoint disabled automatically'))).toBe(true);
    // The audit log names the service as the one who disabled it, with the reason it gave.
    const entries = await api(
      app,
      'GET',
      `/v1/audit-entries?targetType=webhook_endpoint&targetId=${target.id}&action=webhook_endpoint.disabled`,
      admin(),
    );
    expect(entries.status, JSON.stringify(entries.body)).toBe(200);
    expect(entries.body.auditEntries).toEqual([
      expect.objectContaining({
        actor: { type: 'system', id: null },
        action: 'webhook_endpoint.disabled',
        target: { type: 'webhook_endpoint', id: target.id },
        changes: expect.arrayContaining([
          expect.objectContaining({ field: 'enabled', before: true, after: false }),
          expect.objectContaining({ field: 'disabledReason', before: null, after: shown.body.endpoint.disabledReason }),
        ]),
      }),
    ]);

    // Disabled: new events make no delivery for it, pending ones stop.
    expect((await announce(target)).deliveryIds).toEqual([]);
    await settledAs(last!, 'failed');

    receiver.pathBehaviours.delete(target.path);
    const enabled = await api(app, 'PATCH', `/v1/webhook-endpoints/${target.id}`, { ...admin(), body: { enabled: true } });
    expect(enabled.body.endpoint).toMatchObject({ enabled: true, disabledReason: null });
    const id = (await announce(target)).deliveryIds[0]!;
    await settledAs(id, 'succeeded', 1);
    const gql = await graphql(app, `{ webhookEndpoint(id: "${target.id}") { enabled disabledReason } }`, {}, admin());
    expect(gql.body.data.webhookEndpoint).toEqual({ enabled: true, disabledReason: null });
  });
});

describe('delivery history', () => {
  it('is pruned by the worker once older than WEBHOOK_RETENTION, unless a delivery of it is still pending', async () => {
    const target = await endpoint();
    const account = target.accountId;
    const recorded = await Promise.all(
      [0, 1, 2].map(() =>
        recordTestEvent(app.runtime.db, {
          organisationId: org.organisation.id,
          accountId: account,
          type: 'event.created',
          payload: views.event({
            id: newId('event'),
            name: 'Old',
            status: 'draft',
            accountId: account,
            venueId: null,
            timezone: 'UTC',
            createdAt: new Date(),
          }),
        }),
      ),
    );
    const [old, oldPending, recent] = recorded.map((r) => ({ eventId: r.eventId, deliveryId: r.deliveryIds[0]! }));
    const longAgo = new Date(Date.now() - 31 * 86_400_000);
    const db = app.runtime.db;
    await db.webhookEvent.updateMany({ where: { id: { in: [old!.eventId, oldPending!.eventId] } }, data: { createdAt: longAgo } });
    await db.webhookDelivery.updateMany({
      where: { id: { in: [old!.deliveryId, recent!.deliveryId] } },
      data: { status: 'succeeded', workflowStartedAt: new Date(), batchId: 'whb_done' },
    });
    await db.webhookDelivery.update({
      where: { id: oldPending!.deliveryId },
      data: { workflowStartedAt: new Date(), batchId: 'whb_elsewhere' },
    });
    await db.webhookAttempt.create({
      data: {
        id: newId('webhookAttempt'),
        organisationId: org.organisation.id,
        deliveryId: old!.deliveryId,
        attemptNumber: 1,
        scheduledAttempt: 1,
        attemptedAt: longAgo,
        statusCode: 200,
        durationMs: 3,
      },
    });

    const pruner = new WebhookDispatcher(db, app.runtime.temporal, app.config, app.runtime.logger, { prune: true });
    await db.periodicTask.deleteMany({ where: { name: { startsWith: 'webhook-' } } });
    await pruner.sweep();
    await pruner.stop();
    expect(await db.webhookEvent.findMany({ where: { id: { in: recorded.map((r) => r.eventId) } }, select: { id: true } })).toEqual(
      expect.arrayContaining([{ id: oldPending!.eventId }, { id: recent!.eventId }]),
    );
    expect(await db.webhookEvent.count({ where: { id: old!.eventId } })).toBe(0);
    expect(await db.webhookDelivery.count({ where: { id: old!.deliveryId } })).toBe(0);
    expect(await db.webhookAttempt.count({ where: { deliveryId: old!.deliveryId } })).toBe(0);
    expect(target.id).toMatch(/^whe_/);
  });
});
