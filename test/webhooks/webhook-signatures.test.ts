import { randomBytes } from 'node:crypto';
import type { Worker } from '@temporalio/worker';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encryptSecret, newSigningSecret } from '../../src/webhooks/secrets.ts';
import { createWorker } from '../../workflows/worker.ts';
import { useTestApp } from '../support/app.ts';
import { query } from '../support/db.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { expectDocumentedResponse } from '../support/openapi-check.ts';
import { startWebhookReceiver, type ReceivedRequest, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * The two signature schemes as a receiver sees them: `service` (Service-Signature, verified with
 * Stripe's library) and `standard` (Standard Webhooks' webhook-id, webhook-timestamp and
 * webhook-signature, verified with the `standardwebhooks` library, Service-Signature as well).
 * Endpoints are registered and changed over /v1, deliveries are real ones (an event created over
 * the API, the test operation, a resend) sent by a real worker through the Temporal dev server to
 * a real HTTP receiver.
 */

const app = useTestApp({
  WEBHOOK_RETRY_SCHEDULE: '300ms,300ms',
  WEBHOOK_ATTEMPT_TIMEOUT: '3s',
  SECRETS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
});
let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;
let org: TestOrganisation;

beforeAll(async () => {
  ({ worker } = await createWorker({ config: app().config, db: app().runtime.db, logger: app().runtime.logger, prebundled: false }));
  running = worker.run();
  receiver = await startWebhookReceiver();
  org = await createOrganisation(app, 'whsig');
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await receiver?.close();
});

const admin = () => ({ token: org.adminToken, org: org.slug });

const STANDARD_SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

let paths = 0;
/** An endpoint registered over /v1, alone on an account of its own; its requests arrive at its own path. */
async function endpoint(body: Record<string, unknown> = {}) {
  const accountId = (await createAccount(app, org, `Signed ${paths + 1}`)).id;
  const path = `/signed/${(paths += 1)}`;
  const res = await api(app, 'POST', '/v1/webhook-endpoints', { ...admin(), body: { accountId, url: `${receiver.url}${path}`, ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expectDocumentedResponse('POST', '/webhook-endpoints', res);
  return { id: res.body.endpoint.id as string, path, secret: res.body.secret as string, accountId, endpoint: res.body.endpoint };
}

async function patch(id: string, body: Record<string, unknown>) {
  const res = await api(app, 'PATCH', `/v1/webhook-endpoints/${id}`, { ...admin(), body });
  expectDocumentedResponse('PATCH', `/webhook-endpoints/${id}`, res);
  return res;
}

/** Creates an event on the endpoint's account over the API and answers the request its event.created made. */
async function createEventAndReceive(target: { accountId: string; path: string }): Promise<ReceivedRequest> {
  const created = await api(app, 'POST', '/v1/events', {
    ...admin(),
    body: { accountId: target.accountId, name: 'Café “Ünicode” gala ✓', timezone: 'Europe/Paris' },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const eventId = created.body.event.id as string;
  const [request] = await receiver.waitForRequests(
    1,
    (r) => r.path === target.path && (JSON.parse(r.rawBody) as { data: { id: string } }).data.id === eventId,
  );
  return request!;
}

const received = (deliveryId: string, count = 1) => receiver.waitForRequests(count, (r) => r.headers['service-delivery-id'] === deliveryId);

/** The request's headers as a receiver hands them to the library (single-valued ones). */
const headersOf = (r: ReceivedRequest, change: Record<string, string> = {}): Record<string, string> => ({
  ...Object.fromEntries(Object.entries(r.headers).filter((entry): entry is [string, string] => typeof entry[1] === 'string')),
  ...change,
});

const standardWebhookHeaders = (r: ReceivedRequest) => Object.keys(r.headers).filter((name) => name.startsWith('webhook-'));

/** What a Standard Webhooks receiver does: the library's verify, which answers the parsed body or throws. */
const verifyStandard = (r: ReceivedRequest, secret: string, rawBody = r.rawBody, change: Record<string, string> = {}) =>
  new Webhook(secret).verify(rawBody, headersOf(r, change));

const verifiesStandard = (r: ReceivedRequest, secret: string) => {
  try {
    verifyStandard(r, secret);
    return true;
  } catch {
    return false;
  }
};

/** What a receiver of the service's own scheme does: Stripe's constructEvent on Service-Signature. */
const verifyService = (r: ReceivedRequest, secret: string, rawBody = r.rawBody) =>
  Stripe.webhooks.constructEvent(rawBody, String(r.headers['service-signature']), secret);

const verifiesService = (r: ReceivedRequest, secret: string) => {
  try {
    verifyService(r, secret);
    return true;
  } catch {
    return false;
  }
};

async function settledDelivery(id: string) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await api(app, 'GET', `/v1/webhook-deliveries/${id}`, admin());
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    if (res.body.delivery.status !== 'pending') return res.body.delivery as { status: string; attemptCount: number };
    if (Date.now() > deadline) throw new Error(`delivery ${id} still pending`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('signatureScheme standard', () => {
  it('an endpoint created with it receives deliveries that the standardwebhooks library verifies, and Stripe’s verifies their Service-Signature', async () => {
    const target = await endpoint({ signatureScheme: 'standard' });
    expect(target.endpoint).toMatchObject({ signatureScheme: 'standard', ordering: 'none' });
    expect(target.secret).toMatch(STANDARD_SECRET);
    const gql = await graphql(app, `{ webhookEndpoint(id: "${target.id}") { signatureScheme ordering } }`, {}, admin());
    expect(gql.body.data).toEqual({ webhookEndpoint: { signatureScheme: 'STANDARD', ordering: 'NONE' } });
    const read = await api(app, 'GET', `/v1/webhook-endpoints/${target.id}`, admin());
    expect(read.body.endpoint).toMatchObject({ signatureScheme: 'standard', ordering: 'none' });

    const request = await createEventAndReceive(target);
    const { headers } = request;
    expect(standardWebhookHeaders(request).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    expect(headers['webhook-id']).toMatch(/^wev_/);
    expect(headers['webhook-id']).toBe(headers['service-event-id']);
    expect(headers['webhook-timestamp']).toMatch(/^\d+$/);
    expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    // One clock for both schemes: the same timestamp is signed in each.
    expect(headers['service-signature']).toMatch(new RegExp(`^t=${String(headers['webhook-timestamp'])},v1=[0-9a-f]{64}$`));
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);

    const body = JSON.parse(request.rawBody);
    expect(body).toMatchObject({ type: 'event.created', data: { name: 'Café “Ünicode” gala ✓' } });
    expect(verifyStandard(request, target.secret)).toEqual(body);
    expect(verifyService(request, target.secret)).toEqual(body);

    // What a receiver must refuse: a changed body, another secret, the signature under another message id.
    const tampered = request.rawBody.replace('gala', 'gal4');
    expect(tampered).not.toBe(request.rawBody);
    expect(() => verifyStandard(request, target.secret, tampered)).toThrow(/No matching signature/);
    expect(() => verifyService(request, target.secret, tampered)).toThrow(/No signatures found matching/);
    const another = newSigningSecret();
    expect(() => verifyStandard(request, another)).toThrow(/No matching signature/);
    expect(() => verifyService(request, another)).toThrow(/No signatures found matching/);
    expect(() => verifyStandard(request, target.secret, request.rawBody, { 'webhook-id': 'wev_another' })).toThrow(/No matching signature/);
    const stale = String(Number(headers['webhook-timestamp']) - 600);
    expect(() => verifyStandard(request, target.secret, request.rawBody, { 'webhook-timestamp': stale })).toThrow(/too old/);
  });

  it('a service endpoint (the default) gets no webhook-* headers; Stripe’s verifier accepts its Service-Signature', async () => {
    const target = await endpoint();
    expect(target.endpoint).toMatchObject({ signatureScheme: 'service', ordering: 'none' });
    expect(target.secret).toMatch(STANDARD_SECRET);

    const request = await createEventAndReceive(target);
    expect(standardWebhookHeaders(request)).toEqual([]);
    expect(request.headers['service-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyService(request, target.secret)).toEqual(JSON.parse(request.rawBody));
    expect(() => verifyStandard(request, target.secret)).toThrow(/Missing required headers/);
  });

  it('PATCH signatureScheme standard makes the next delivery carry the Standard Webhooks headers; service takes them away', async () => {
    const target = await endpoint();
    const before = await createEventAndReceive(target);
    expect(standardWebhookHeaders(before)).toEqual([]);

    const standard = await patch(target.id, { signatureScheme: 'standard' });
    expect(standard.status, JSON.stringify(standard.body)).toBe(200);
    expect(standard.body.endpoint).toMatchObject({ id: target.id, signatureScheme: 'standard' });
    const gql = await graphql(app, `{ webhookEndpoint(id: "${target.id}") { signatureScheme } }`, {}, admin());
    expect(gql.body.data.webhookEndpoint).toEqual({ signatureScheme: 'STANDARD' });
    const signed = await createEventAndReceive(target);
    expect(standardWebhookHeaders(signed).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    expect(signed.headers['webhook-id']).toBe(signed.headers['service-event-id']);
    expect(verifiesStandard(signed, target.secret)).toBe(true);
    expect(verifiesService(signed, target.secret)).toBe(true);

    const service = await patch(target.id, { signatureScheme: 'service' });
    expect([service.status, service.body.endpoint.signatureScheme]).toEqual([200, 'service']);
    const after = await createEventAndReceive(target);
    expect(standardWebhookHeaders(after)).toEqual([]);
    expect(verifiesService(after, target.secret)).toBe(true);
  });

  it('during a rotation’s overlap webhook-signature carries two v1 entries and verifies under the new secret and the old one; ending the overlap leaves one', async () => {
    const target = await endpoint({ signatureScheme: 'standard' });
    const rotated = await api(app, 'POST', `/v1/webhook-endpoints/${target.id}/rotate-secret`, admin());
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const secret = rotated.body.secret as string;
    expect(secret).toMatch(STANDARD_SECRET);
    expect(secret).not.toBe(target.secret);
    expect(rotated.body.endpoint.signatureScheme).toBe('standard');

    const overlapping = await createEventAndReceive(target);
    const entries = String(overlapping.headers['webhook-signature']).split(' ');
    expect(entries).toHaveLength(2);
    expect(entries.every((entry) => /^v1,[A-Za-z0-9+/]{43}=$/.test(entry))).toBe(true);
    expect(verifiesStandard(overlapping, secret)).toBe(true);
    expect(verifiesStandard(overlapping, target.secret)).toBe(true);
    expect(verifiesStandard(overlapping, newSigningSecret())).toBe(false);
    // The new secret's signature comes first, as in Service-Signature.
    const newOnly = { 'webhook-signature': entries[0]! };
    expect(() => verifyStandard(overlapping, secret, overlapping.rawBody, newOnly)).not.toThrow();
    expect(() => verifyStandard(overlapping, target.secret, overlapping.rawBody, newOnly)).toThrow(/No matching signature/);
    expect(verifiesService(overlapping, secret)).toBe(true);
    expect(verifiesService(overlapping, target.secret)).toBe(true);

    const ended = await patch(target.id, { rotationOverlapEndsAt: null });
    expect([ended.status, ended.body.endpoint.rotationOverlapEndsAt]).toEqual([200, null]);
    const single = await createEventAndReceive(target);
    expect(String(single.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifiesStandard(single, secret)).toBe(true);
    expect(verifiesStandard(single, target.secret)).toBe(false);
  });

  it('the test operation and a resend are signed with the Standard Webhooks headers too, under the same webhook-id', async () => {
    const target = await endpoint({ signatureScheme: 'standard' });
    const sent = await api(app, 'POST', `/v1/webhook-endpoints/${target.id}/test`, admin());
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const { id: deliveryId, eventId } = sent.body.delivery as { id: string; eventId: string };
    const [test] = await received(deliveryId);
    expect(test!.path).toBe(target.path);
    expect(test!.headers['webhook-id']).toBe(eventId);
    expect(verifyStandard(test!, target.secret)).toEqual(JSON.parse(test!.rawBody));
    expect(verifiesService(test!, target.secret)).toBe(true);
    expect(await settledDelivery(deliveryId)).toMatchObject({ status: 'succeeded', attemptCount: 1 });

    const resent = await api(app, 'POST', `/v1/webhook-deliveries/${deliveryId}/resend`, admin());
    expect(resent.status, JSON.stringify(resent.body)).toBe(202);
    const [, again] = await received(deliveryId, 2);
    expect(again!.headers['webhook-id']).toBe(eventId);
    expect(again!.headers['service-event-id']).toBe(eventId);
    expect(verifyStandard(again!, target.secret)).toEqual(JSON.parse(again!.rawBody));
    expect(verifiesService(again!, target.secret)).toBe(true);
  });
});

describe('choosing a scheme', () => {
  it('refuses standard (409 CONFLICT, saying to rotate) while the secret is one its verifiers cannot decode; after a rotation it is accepted', async () => {
    const target = await endpoint();
    // A secret of the older alphabet (base64url), with a character standard base64 does not have.
    let raw: string;
    do raw = randomBytes(32).toString('base64url');
    while (!/[-_]/.test(raw));
    const old = `whsec_${raw}`;
    expect(() => new Webhook(old)).toThrow();
    await query(app, 'UPDATE webhook_endpoints SET "secretCiphertext" = $1 WHERE id = $2', [
      encryptSecret(old, app().runtime.encryptionKey),
      target.id,
    ]);

    const refused = await patch(target.id, { signatureScheme: 'standard' });
    expect([refused.status, refused.body.code]).toEqual([409, 'CONFLICT']);
    expect(refused.body.error).toMatch(/rotate/);
    expect(refused.body.error).toContain(`/v1/webhook-endpoints/${target.id}/rotate-secret`);
    expect((await api(app, 'GET', `/v1/webhook-endpoints/${target.id}`, admin())).body.endpoint.signatureScheme).toBe('service');
    // It keeps delivering with its scheme and its secret meanwhile.
    const meanwhile = await createEventAndReceive(target);
    expect(standardWebhookHeaders(meanwhile)).toEqual([]);
    expect(verifiesService(meanwhile, old)).toBe(true);

    const rotated = await api(app, 'POST', `/v1/webhook-endpoints/${target.id}/rotate-secret`, admin());
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const secret = rotated.body.secret as string;
    expect(secret).toMatch(STANDARD_SECRET);
    const accepted = await patch(target.id, { signatureScheme: 'standard' });
    expect([accepted.status, accepted.body.endpoint.signatureScheme]).toEqual([200, 'standard']);

    // During the overlap the old secret still verifies Service-Signature; the standard headers verify under the new one.
    const request = await createEventAndReceive(target);
    expect(verifiesStandard(request, secret)).toBe(true);
    expect(verifiesService(request, secret)).toBe(true);
    expect(verifiesService(request, old)).toBe(true);
  });

  it('names signatureScheme when its value is not one of service, standard (400 VALIDATION_FAILED)', async () => {
    const target = await endpoint();
    const created = await api(app, 'POST', '/v1/webhook-endpoints', {
      ...admin(),
      body: { accountId: target.accountId, url: `${receiver.url}/refused`, signatureScheme: 'foo' },
    });
    const changed = await patch(target.id, { signatureScheme: 'foo' });
    for (const res of [created, changed]) {
      expect([res.status, res.body.code], JSON.stringify(res.body)).toEqual([400, 'VALIDATION_FAILED']);
      expect(res.body.details).toEqual([
        expect.objectContaining({ path: 'signatureScheme', message: expect.stringMatching(/service, standard/) }),
      ]);
    }
    expectDocumentedResponse('POST', '/webhook-endpoints', created);
    expect((await api(app, 'GET', `/v1/webhook-endpoints/${target.id}`, admin())).body.endpoint.signatureScheme).toBe('service');
  });
});
