import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { newId } from '../../src/ids.ts';
import { CURRENT_VERSION } from '../../src/versions.ts';
import { WEBHOOK_EVENT_TYPES } from '../../src/webhooks/event-types.ts';
import { views } from '../../src/webhooks/payloads.ts';
import { recordWebhookEvent } from '../../src/webhooks/record.ts';
import { decryptSecret } from '../../src/webhooks/secrets.ts';
import {
  assertDeliverableUrl,
  deliverableLookup,
  forbiddenAddressReason,
  MAX_WEBHOOK_URL_LENGTH,
  parseWebhookUrl,
  UrlPolicyError,
} from '../../src/net/url-policy.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, createApiKey } from '../support/credentials.ts';
import { query } from '../support/db.ts';
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

/**
 * Webhook endpoints, event types, deliveries and the recording of source events, over HTTP
 * against the real app. Receivers are on loopback (WEBHOOK_ALLOW_PRIVATE_URLS is on in the main
 * app); the URL policy's refusals run on a second app with it off. No traffic goes anywhere but
 * loopback: only IP literals and localhost are resolved, and the one public IP literal used is
 * never sent to (the API process does not run a worker).
 */

const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
let viewer: string;
let secondAccountId: string;
const dispatched: string[][] = [];

const RECEIVER = 'http://127.0.0.1:9/hooks';
const admin = () => asAdmin(org);

const apiKey = async (o: TestOrganisation, scopes: string[]) => (await createApiKey(app, o, scopes, { name: 'webhooks' })).key;

async function createEndpoint(o: TestOrganisation, body: Record<string, unknown>) {
  const res = await api(app, 'POST', '/v1/webhook-endpoints', { token: o.adminToken, org: o.slug, body: { url: RECEIVER, ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { endpoint: Record<string, any> & { id: string }; secret: string };
}

const paths = (res: { body: { details?: Array<{ path: string }> } }) => (res.body.details ?? []).map((d) => d.path).sort();

beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'hooks'), createOrganisation(app, 'hooksother')]);
  viewer = (await createStaffUser(app, org, [{ roleId: systemRole(org, 'viewer'), accountId: org.account.id }])).token;
  secondAccountId = (await createAccount(app, org, 'Second')).id;
  // Observe (and still run) the real dispatcher: which deliveries it was asked to start.
  const dispatcher = app().runtime.dispatcher;
  const original = dispatcher.dispatch.bind(dispatcher);
  vi.spyOn(dispatcher, 'dispatch').mockImplementation((ids) => {
    dispatched.push([...ids]);
    original(ids);
  });
});

describe('GET /webhook-event-types', () => {
  it('lists every type with its description, for any credential of the organisation', async () => {
    const res = await api(app, 'GET', '/v1/webhook-event-types', admin());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      eventTypes: Object.entries(WEBHOOK_EVENT_TYPES).map(([type, description]) => ({ type, description })),
    });
    expect(res.body.eventTypes.map((t: { type: string }) => t.type)).toEqual([
      'order.created',
      'order.confirmed',
      'order.cancelled',
      'order.refunded',
      'customer.created',
      'event.created',
      'ticket.issued',
      'ticket.redeemed',
    ]);
    expectDocumentedResponse('GET', '/webhook-event-types', res);
    const key = await apiKey(org, ['events.read']);
    expect((await api(app, 'GET', '/v1/webhook-event-types', { token: key, org: org.slug })).status).toBe(200);
    expect((await api(app, 'GET', '/v1/webhook-event-types', { token: viewer, org: org.slug })).status).toBe(200);
    expect((await api(app, 'GET', '/v1/webhook-event-types', { org: org.slug })).status).toBe(401);
    const gql = await graphql(app, '{ webhookEventTypes { type description } }', {}, { token: key, org: org.slug });
    expect(gql.body.data.webhookEventTypes).toEqual(res.body.eventTypes);
  });
});

describe('POST /webhook-endpoints', () => {
  it('creates an endpoint (201) and shows its whsec_ secret once; stored encrypted', async () => {
    const res = await api(app, 'POST', '/v1/webhook-endpoints', {
      ...admin(),
      body: { accountId: org.account.id, url: RECEIVER, description: 'Orders to the ERP' },
    });
    expect(res.status).toBe(201);
    expectDocumentedResponse('POST', '/webhook-endpoints', res);
    expect(res.body).toEqual({
      endpoint: {
        id: expect.stringMatching(/^whe_[A-Za-z0-9]{22}$/),
        accountId: org.account.id,
        url: RECEIVER,
        description: 'Orders to the ERP',
        eventTypes: [],
        enabled: true,
        disabledReason: null,
        apiVersion: CURRENT_VERSION,
        signatureScheme: 'service',
        ordering: 'none',
        rotationOverlapEndsAt: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const { endpoint, secret } = res.body;

    const [row] = await query<{ secretCiphertext: string }>(app, 'SELECT "secretCiphertext" FROM webhook_endpoints WHERE id = $1', [
      endpoint.id,
    ]);
    expect(row!.secretCiphertext).not.toContain(secret);
    expect(row!.secretCiphertext).not.toContain(secret.slice('whsec_'.length));
    expect(decryptSecret(row!.secretCiphertext, app().runtime.encryptionKey)).toBe(secret);

    const got = await api(app, 'GET', `/v1/webhook-endpoints/${endpoint.id}`, admin());
    expect(got.body).toEqual({ endpoint });
    expectDocumentedResponse('GET', `/v1/webhook-endpoints/${endpoint.id}`, got);
    const list = await api(app, 'GET', '/v1/webhook-endpoints', admin());
    expectDocumentedResponse('GET', '/webhook-endpoints', list);
    for (const body of [got.body, list.body]) {
      expect(JSON.stringify(body)).not.toContain(secret);
      expect(JSON.stringify(body)).not.toMatch(/secret/i);
    }
    const gql = await graphql(app, `{ webhookEndpoint(id: "${endpoint.id}") { id secret } }`, {}, admin());
    expect(gql.body.errors[0].message).toMatch(/Cannot query field "secret"/);
  });

  it('subscribes to the given types (duplicates dropped) and pins an earlier payload version on request', async () => {
    const { endpoint } = await createEndpoint(org, {
      accountId: org.account.id,
      eventTypes: ['order.confirmed', 'ticket.issued', 'order.confirmed'],
      apiVersion: '2025-04-01',
    });
    expect(endpoint).toMatchObject({ eventTypes: ['order.confirmed', 'ticket.issued'], apiVersion: '2025-04-01', description: null });
    const empty = await createEndpoint(org, { accountId: org.account.id, eventTypes: [] });
    expect(empty.endpoint.eventTypes).toEqual([]);
  });

  it('lets the same URL be registered on several accounts, each with its own secret', async () => {
    const url = 'http://127.0.0.1:9/shared';
    const a = await createEndpoint(org, { accountId: org.account.id, url });
    const b = await createEndpoint(org, { accountId: secondAccountId, url });
    const again = await createEndpoint(org, { accountId: secondAccountId, url });
    expect(new Set([a.endpoint.url, b.endpoint.url, again.endpoint.url])).toEqual(new Set([url]));
    expect(new Set([a.secret, b.secret, again.secret]).size).toBe(3);
  });

  it('names the invalid field', async () => {
    const post = (body: unknown) => api(app, 'POST', '/v1/webhook-endpoints', { ...admin(), body });
    const badType = await post({ accountId: org.account.id, url: RECEIVER, eventTypes: ['order.created', 'order.exploded'] });
    expect(badType.status).toBe(400);
    expect(badType.body.code).toBe('VALIDATION_FAILED');
    expect(paths(badType)).toEqual(['eventTypes.1']);
    expectDocumentedResponse('POST', '/webhook-endpoints', badType);

    for (const url of [
      'ftp://example.com/x',
      'https://user:pw@example.com/x',
      'not a url',
      '/relative',
      `https://example.com/${'a'.repeat(MAX_WEBHOOK_URL_LENGTH)}`,
      '',
    ]) {
      const res = await post({ accountId: org.account.id, url });
      expect([res.status, paths(res)], url).toEqual([400, ['url']]);
    }
    expect(paths(await post({ accountId: org.account.id }))).toEqual(['url']);
    expect(paths(await post({ url: RECEIVER }))).toEqual(['accountId']);
    expect(paths(await post({ accountId: org.account.id, url: RECEIVER, description: 'x'.repeat(501) }))).toEqual(['description']);
    expect(paths(await post({ accountId: org.account.id, url: RECEIVER, secret: 'whsec_mine' }))).toEqual(['secret']);
    expect(paths(await post({ accountId: org.account.id, url: RECEIVER, apiVersion: 'latest' }))).toEqual(['apiVersion']);
    for (const apiVersion of ['2024-11-01', '2030-01-01']) {
      const res = await post({ accountId: org.account.id, url: RECEIVER, apiVersion });
      expect([res.status, res.body.code], apiVersion).toEqual([400, 'UNSUPPORTED_VERSION']);
    }
  });

  it('refuses a deleted account, an unknown one and one of another organisation, naming accountId', async () => {
    const doomed = await createAccount(app, org, 'Doomed');
    await api(app, 'DELETE', `/v1/accounts/${doomed.id}`, admin());
    for (const accountId of [doomed.id, 'acc_doesnotexist', other.account.id]) {
      const res = await api(app, 'POST', '/v1/webhook-endpoints', { ...admin(), body: { accountId, url: RECEIVER } });
      expect([res.status, paths(res)], accountId).toEqual([404, ['accountId']]);
    }
  });

  it('GraphQL: the same validation, with the field path in userErrors', async () => {
    const res = await graphql(
      app,
      'mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { createdWebhookEndpoint { endpoint { id } secret } userErrors { field code } } }',
      { input: { accountId: org.account.id, url: RECEIVER, eventTypes: ['nope'] } },
      admin(),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.createWebhookEndpoint).toEqual({
      createdWebhookEndpoint: null,
      userErrors: [{ field: ['input', 'eventTypes', '0'], code: 'VALIDATION_FAILED' }],
    });
    const ok = await graphql(
      app,
      'mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { createdWebhookEndpoint { endpoint { id apiVersion eventTypes } secret } userErrors { field } } }',
      { input: { accountId: org.account.id, url: RECEIVER, eventTypes: ['customer.created'] } },
      admin(),
    );
    expect(ok.body.data.createWebhookEndpoint).toMatchObject({
      createdWebhookEndpoint: {
        endpoint: { apiVersion: CURRENT_VERSION, eventTypes: ['customer.created'] },
        secret: expect.stringMatching(/^whsec_/),
      },
      userErrors: [],
    });
  });

  it('needs webhooks.write on the account: 403 for a viewer, 404 for a key without it', async () => {
    const body = { accountId: org.account.id, url: RECEIVER };
    const refused = await api(app, 'POST', '/v1/webhook-endpoints', { token: viewer, org: org.slug, body });
    expect([refused.status, refused.body.code]).toEqual([403, 'FORBIDDEN']);
    for (const scopes of [['events.write'], ['webhooks.read']]) {
      const key = await apiKey(org, scopes);
      const res = await api(app, 'POST', '/v1/webhook-endpoints', { token: key, org: org.slug, body });
      expect([res.status, res.body.code], scopes.join()).toEqual([404, 'NOT_FOUND']);
    }
    const allowed = await apiKey(org, ['webhooks.write']);
    expect((await api(app, 'POST', '/v1/webhook-endpoints', { token: allowed, org: org.slug, body })).status).toBe(201);
    // An account admin of the second account cannot register endpoints on the first one.
    const accountAdmin = await createStaffUser(app, org, [{ roleId: systemRole(org, 'account_admin'), accountId: secondAccountId }]);
    const elsewhere = await api(app, 'POST', '/v1/webhook-endpoints', { token: accountAdmin.token, org: org.slug, body });
    expect([elsewhere.status, elsewhere.body.code]).toEqual([403, 'FORBIDDEN']);
    const own = await api(app, 'POST', '/v1/webhook-endpoints', {
      token: accountAdmin.token,
      org: org.slug,
      body: { ...body, accountId: secondAccountId },
    });
    expect(own.status).toBe(201);
  });
});

describe('the URL policy with WEBHOOK_ALLOW_PRIVATE_URLS off', () => {
  const strict = useTestApp({ WEBHOOK_ALLOW_PRIVATE_URLS: 'false' });
  let strictOrg: TestOrganisation;
  beforeAll(async () => {
    strictOrg = await createOrganisation(strict, 'strict');
  });

  const create = (url: string) =>
    api(strict, 'POST', '/v1/webhook-endpoints', {
      token: strictOrg.adminToken,
      org: strictOrg.slug,
      body: { accountId: strictOrg.account.id, url },
    });

  it.each([
    ['http://127.0.0.1:9/x', /loopback/],
    ['http://10.0.0.1/', /private/],
    ['http://172.16.5.4/', /private/],
    ['http://192.168.1.1/', /private/],
    ['http://100.64.0.1/', /carrier-grade NAT/],
    ['http://169.254.169.254/latest/meta-data/', /link-local/],
    ['http://0.0.0.0/', /unspecified/],
    ['http://224.0.0.1/', /multicast/],
    ['http://[::1]/', /loopback/],
    ['http://[::]/', /unspecified/],
    ['http://[fd00::1]/', /private/],
    ['http://[fe80::1]/', /link-local/],
    ['http://[ff02::1]/', /multicast/],
    ['http://[::ffff:127.0.0.1]/', /loopback \(IPv4-mapped\)/],
    ['http://[::ffff:a00:1]/', /private \(IPv4-mapped\)/],
    ['http://2130706433/', /loopback/],
    ['http://0x7f.1/', /loopback/],
    ['http://localhost:9/', /loopback/],
  ])('refuses %s with 400 naming url', async (url, reason) => {
    const res = await create(url);
    expect([res.status, res.body.code, paths(res)]).toEqual([400, 'VALIDATION_FAILED', ['url']]);
    expect(res.body.details[0].message).toMatch(reason);
  });

  it('accepts a public address, and refuses moving it to a private one on update', async () => {
    const created = await create('https://93.184.215.14/hooks');
    expect(created.status).toBe(201);
    const id = created.body.endpoint.id;
    const moved = await api(strict, 'PATCH', `/v1/webhook-endpoints/${id}`, {
      token: strictOrg.adminToken,
      org: strictOrg.slug,
      body: { url: 'http://192.168.1.10/hooks' },
    });
    expect([moved.status, paths(moved)]).toEqual([400, ['url']]);
    const after = await api(strict, 'GET', `/v1/webhook-endpoints/${id}`, { token: strictOrg.adminToken, org: strictOrg.slug });
    expect(after.body.endpoint.url).toBe('https://93.184.215.14/hooks');
  });

  it('GraphQL refuses the same way', async () => {
    const res = await graphql(
      strict,
      'mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { createdWebhookEndpoint { secret } userErrors { field code } } }',
      { input: { accountId: strictOrg.account.id, url: 'http://[::1]:8080/' } },
      { token: strictOrg.adminToken, org: strictOrg.slug },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.createWebhookEndpoint).toEqual({
      createdWebhookEndpoint: null,
      userErrors: [{ field: ['input', 'url'], code: 'VALIDATION_FAILED' }],
    });
  });
});

describe('url-policy.ts', () => {
  it.each([
    ['8.8.8.8', undefined],
    ['93.184.215.14', undefined],
    ['172.32.0.1', undefined],
    ['100.128.0.1', undefined],
    ['2606:4700::1111', undefined],
    ['::ffff:8.8.8.8', undefined],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.255.255.255', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['100.127.255.255', 'carrier-grade NAT (shared address space)'],
    ['169.254.0.1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'reserved (including broadcast)'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fc00::1', 'private (unique local)'],
    ['fdff:ffff::1', 'private (unique local)'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback (IPv4-mapped)'],
    ['::ffff:7f00:1', 'loopback (IPv4-mapped)'],
    ['::ffff:192.168.1.1', 'private (IPv4-mapped)'],
    ['64:ff9b::a9fe:a9fe', 'link-local (NAT64)'],
    ['2002:0a00:0001::1', 'private (6to4)'],
    ['::127.0.0.1', 'reserved (IPv4-compatible)'],
    ['example.com', 'not an IP address'],
  ])('forbiddenAddressReason(%s) = %s', (address, reason) => {
    expect(forbiddenAddressReason(address)).toBe(reason);
  });

  it('parseWebhookUrl normalises what the WHATWG parser normalises and refuses the rest synchronously', () => {
    expect(parseWebhookUrl('HTTPS://Example.COM:443/a b').href).toBe('https://example.com/a%20b');
    expect(parseWebhookUrl('http://2130706433/').href).toBe('http://127.0.0.1/');
    expect(() => parseWebhookUrl('javascript:alert(1)')).toThrow(UrlPolicyError);
    expect(() => parseWebhookUrl('https://:pw@example.com/')).toThrow(/user name or password/);
    expect(() => parseWebhookUrl(`https://example.com/${'x'.repeat(2030)}`)).toThrow(/2048/);
    expect(parseWebhookUrl(`https://example.com/${'x'.repeat(2048 - 'https://example.com/'.length)}`).href).toHaveLength(2048);
  });

  it('assertDeliverableUrl refuses when any resolved address is forbidden, or the host does not resolve', async () => {
    const resolving =
      (...addresses: string[]) =>
      async () =>
        addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    await expect(
      assertDeliverableUrl('https://hooks.example/x', { allowPrivate: false, lookup: resolving('93.184.215.14') }),
    ).resolves.toBeInstanceOf(URL);
    await expect(
      assertDeliverableUrl('https://hooks.example/x', { allowPrivate: false, lookup: resolving('93.184.215.14', '10.1.2.3') }),
    ).rejects.toThrow(/private address \(hooks\.example resolves to 10\.1\.2\.3\)/);
    const nxdomain = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    await expect(assertDeliverableUrl('https://hooks.example/x', { allowPrivate: false, lookup: nxdomain })).rejects.toThrow(
      /does not resolve/,
    );
    await expect(assertDeliverableUrl('https://hooks.example/x', { allowPrivate: false, lookup: resolving() })).rejects.toThrow(
      /does not resolve/,
    );
    const hanging = () => new Promise<never>(() => {});
    await expect(
      assertDeliverableUrl('https://hooks.example/x', { allowPrivate: false, lookup: hanging, lookupTimeoutMs: 20 }),
    ).rejects.toThrow(/does not resolve/);
    // Allowed private targets need no lookup at all.
    await expect(assertDeliverableUrl('http://10.0.0.1/', { allowPrivate: true, lookup: nxdomain })).resolves.toBeInstanceOf(URL);
    await expect(assertDeliverableUrl('ftp://x/', { allowPrivate: true })).rejects.toThrow(UrlPolicyError);
  });

  it('deliverableLookup refuses at connection time what resolves to a forbidden address', async () => {
    const server = http.createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const get = (allowPrivate: boolean) =>
      new Promise<string>((resolve, reject) => {
        const req = http.get({ host: 'localhost', port, family: 4, path: '/', lookup: deliverableLookup(allowPrivate) }, (res) => {
          res.setEncoding('utf8');
          let body = '';
          res.on('data', (chunk) => (body += chunk));
          res.on('end', () => resolve(body));
        });
        req.on('error', reject);
      });
    try {
      await expect(get(false)).rejects.toMatchObject({
        code: 'EWEBHOOKADDRESS',
        message: expect.stringMatching(/loopback address \(localhost resolves to 127\.0\.0\.1\)/),
      });
      await expect(get(true)).resolves.toBe('ok');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('GET /webhook-endpoints and GET /webhook-endpoints/{id}', () => {
  let fresh: TestOrganisation;
  let accountB: string;
  let onA: string;
  let onB: string;
  beforeAll(async () => {
    fresh = await createOrganisation(app, 'hookslist');
    accountB = (await createAccount(app, fresh, 'B')).id;
    onA = (await createEndpoint(fresh, { accountId: fresh.account.id })).endpoint.id;
    onB = (await createEndpoint(fresh, { accountId: accountB, eventTypes: ['order.created'] })).endpoint.id;
  });
  const as = (token: string) => ({ token, org: fresh.slug });

  it('lists the endpoints of readable accounts, oldest first, optionally of one account', async () => {
    const all = await api(app, 'GET', '/v1/webhook-endpoints', as(fresh.adminToken));
    expect(all.body.endpoints.map((e: { id: string }) => e.id)).toEqual([onA, onB]);
    const onlyB = await api(app, 'GET', `/v1/webhook-endpoints?accountId=${accountB}`, as(fresh.adminToken));
    expect(onlyB.body.endpoints.map((e: { id: string }) => e.id)).toEqual([onB]);
    const gql = await graphql(
      app,
      `{ webhookEndpoints(accountId: "${fresh.account.id}") { nodes { id eventTypes } } }`,
      {},
      as(fresh.adminToken),
    );
    expect(gql.body.data.webhookEndpoints.nodes).toEqual([{ id: onA, eventTypes: [] }]);
  });

  it('a viewer of one account sees only that account; its other endpoints are 404', async () => {
    const viewerOfB = (await createStaffUser(app, fresh, [{ roleId: systemRole(fresh, 'viewer'), accountId: accountB }])).token;
    const seen = await api(app, 'GET', '/v1/webhook-endpoints', as(viewerOfB));
    expect(seen.body.endpoints.map((e: { id: string }) => e.id)).toEqual([onB]);
    const filtered = await api(app, 'GET', `/v1/webhook-endpoints?accountId=${fresh.account.id}`, as(viewerOfB));
    expect(filtered.body.endpoints).toEqual([]);
    expect((await api(app, 'GET', `/v1/webhook-endpoints/${onB}`, as(viewerOfB))).status).toBe(200);
    expect((await api(app, 'GET', `/v1/webhook-endpoints/${onA}`, as(viewerOfB))).status).toBe(404);
  });

  it('needs webhooks.read (404 for a key without it); another organisation sees nothing', async () => {
    const key = await apiKey(fresh, ['events.read']);
    expect((await api(app, 'GET', '/v1/webhook-endpoints', as(key))).status).toBe(404);
    expect((await api(app, 'GET', `/v1/webhook-endpoints/${onA}`, as(key))).status).toBe(404);
    const reader = await apiKey(fresh, ['webhooks.read']);
    expect((await api(app, 'GET', `/v1/webhook-endpoints/${onA}`, as(reader))).status).toBe(200);
    const foreign = await api(app, 'GET', `/v1/webhook-endpoints/${onA}`, { token: other.adminToken, org: other.slug });
    expect([foreign.status, foreign.body.code]).toEqual([404, 'NOT_FOUND']);
    const foreignList = await api(app, 'GET', '/v1/webhook-endpoints', { token: other.adminToken, org: other.slug });
    expect(foreignList.body.endpoints).toEqual([]);
    expect((await api(app, 'GET', '/v1/webhook-endpoints/whe_doesnotexist', as(fresh.adminToken))).status).toBe(404);
  });
});

describe('PATCH and DELETE /webhook-endpoints/{id}', () => {
  it('changes url, description (null clears), event types ([] = all) and enabled; nothing else', async () => {
    const { endpoint } = await createEndpoint(org, { accountId: org.account.id, description: 'before', eventTypes: ['order.created'] });
    const res = await api(app, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
      ...admin(),
      body: { url: 'http://127.0.0.1:9/moved', description: null, eventTypes: ['order.refunded', 'customer.created'], enabled: false },
    });
    expect(res.status).toBe(200);
    expectDocumentedResponse('PATCH', `/webhook-endpoints/${endpoint.id}`, res);
    expect(res.body.endpoint).toEqual({
      ...endpoint,
      url: 'http://127.0.0.1:9/moved',
      description: null,
      eventTypes: ['order.refunded', 'customer.created'],
      enabled: false,
      updatedAt: expect.any(String),
    });
    const all = await api(app, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { ...admin(), body: { eventTypes: [], enabled: true } });
    expect(all.body.endpoint).toMatchObject({ eventTypes: [], enabled: true, description: null, url: 'http://127.0.0.1:9/moved' });
    const untouched = await api(app, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { ...admin(), body: {} });
    expect(untouched.body.endpoint).toMatchObject({ eventTypes: [], enabled: true, apiVersion: CURRENT_VERSION });
  });

  it('names invalid fields; apiVersion and accountId cannot change', async () => {
    const { endpoint } = await createEndpoint(org, { accountId: org.account.id });
    const patch = (body: unknown) => api(app, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { ...admin(), body });
    expect(paths(await patch({ eventTypes: ['nope', 'order.created'] }))).toEqual(['eventTypes.0']);
    expect(paths(await patch({ url: 'gopher://x' }))).toEqual(['url']);
    expect(paths(await patch({ enabled: 'yes' }))).toEqual(['enabled']);
    expect((await patch({ apiVersion: '2025-04-01' })).status).toBe(400);
    expect((await patch({ accountId: secondAccountId })).status).toBe(400);
    const gql = await graphql(
      app,
      `mutation { updateWebhookEndpoint(id: "${endpoint.id}", input: { eventTypes: ["order.created", "x"] }) { webhookEndpoint { id } userErrors { field code } } }`,
      {},
      admin(),
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.updateWebhookEndpoint).toEqual({
      webhookEndpoint: null,
      userErrors: [{ field: ['input', 'eventTypes', '1'], code: 'VALIDATION_FAILED' }],
    });
  });

  it('deletes softly: gone from get and list, the row keeps deletedAt', async () => {
    const { endpoint } = await createEndpoint(org, { accountId: org.account.id });
    const res = await api(app, 'DELETE', `/v1/webhook-endpoints/${endpoint.id}`, admin());
    expect(res).toMatchObject({ status: 200, body: { success: true, id: endpoint.id } });
    expectDocumentedResponse('DELETE', `/webhook-endpoints/${endpoint.id}`, res);
    expect((await api(app, 'GET', `/v1/webhook-endpoints/${endpoint.id}`, admin())).status).toBe(404);
    expect((await api(app, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { ...admin(), body: { enabled: false } })).status).toBe(404);
    expect((await api(app, 'DELETE', `/v1/webhook-endpoints/${endpoint.id}`, admin())).status).toBe(404);
    const list = await api(app, 'GET', '/v1/webhook-endpoints', admin());
    expect(list.body.endpoints.map((e: { id: string }) => e.id)).not.toContain(endpoint.id);
    const [row] = await query<{ deletedAt: Date | null }>(app, 'SELECT "deletedAt" FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
    expect(row!.deletedAt).toBeInstanceOf(Date);
  });

  it('403 for a viewer, 404 for a key without webhooks.write, 404 for another organisation', async () => {
    const { endpoint } = await createEndpoint(org, { accountId: org.account.id });
    const path = `/v1/webhook-endpoints/${endpoint.id}`;
    for (const [method, body] of [
      ['PATCH', { description: 'x' }],
      ['DELETE', undefined],
      ['POST', undefined],
    ] as const) {
      const target = method === 'POST' ? `${path}/test` : path;
      const byViewer = await api(app, method, target, { token: viewer, org: org.slug, body });
      expect([byViewer.status, byViewer.body.code], method).toEqual([403, 'FORBIDDEN']);
      for (const scopes of [['events.write'], ['webhooks.read']]) {
        const key = await apiKey(org, scopes);
        const byKey = await api(app, method, target, { token: key, org: org.slug, body });
        expect([byKey.status, byKey.body.code], `${method} ${scopes.join(' ')}`).toEqual([404, 'NOT_FOUND']);
      }
      const foreign = await api(app, method, target, { token: other.adminToken, org: other.slug, body });
      expect([foreign.status, foreign.body.code], method).toEqual([404, 'NOT_FOUND']);
    }
    const after = await api(app, 'GET', path, admin());
    expect(after.body.endpoint).toEqual(endpoint);
  });
});

describe('POST /webhook-endpoints/{id}/test', () => {
  it('records a sample event of the first subscribed type and ONE delivery to this endpoint, then dispatches it', async () => {
    const account = await createAccount(app, org, 'Test sends');
    const target = await createEndpoint(org, { accountId: account.id, eventTypes: ['order.confirmed', 'customer.created'] });
    const sibling = await createEndpoint(org, { accountId: account.id, eventTypes: ['order.confirmed'] });
    const everything = await createEndpoint(org, { accountId: account.id });
    dispatched.length = 0;

    const res = await api(app, 'POST', `/v1/webhook-endpoints/${target.endpoint.id}/test`, admin());
    expect(res.status).toBe(201);
    expectDocumentedResponse('POST', `/webhook-endpoints/${target.endpoint.id}/test`, res);
    expect(res.body).toEqual({
      delivery: {
        id: expect.stringMatching(/^whd_/),
        endpointId: target.endpoint.id,
        eventId: expect.stringMatching(/^wev_/),
        eventType: 'order.confirmed',
        status: 'pending',
        attemptCount: 0,
        nextAttemptAt: null,
        createdAt: expect.any(String),
        attempts: [],
      },
    });
    const { delivery } = res.body;
    expect(dispatched).toEqual([[delivery.id]]);

    const deliveries = await query<{ endpointId: string }>(app, 'SELECT "endpointId" FROM webhook_deliveries WHERE "eventId" = $1', [
      delivery.eventId,
    ]);
    expect(deliveries).toEqual([{ endpointId: target.endpoint.id }]);
    const siblingDeliveries = await query(app, 'SELECT id FROM webhook_deliveries WHERE "endpointId" = ANY($1)', [
      [sibling.endpoint.id, everything.endpoint.id],
    ]);
    expect(siblingDeliveries).toEqual([]);

    const [event] = await query<{ type: string; accountId: string; version: string; payload: Record<string, unknown> }>(
      app,
      'SELECT type, "accountId", version, payload FROM webhook_events WHERE id = $1',
      [delivery.eventId],
    );
    expect(event).toMatchObject({ type: 'order.confirmed', accountId: account.id, version: CURRENT_VERSION });
    expect(event!.payload).toEqual({
      id: 'ord_sample0000000000000000',
      orderNumber: 'SAMPLE-0001',
      status: 'confirmed',
      currency: 'GBP',
      totalAmount: 5250,
      subtotalAmount: 5000,
      customerId: 'cus_sample0000000000000000',
      accountId: account.id,
      createdAt: expect.any(String),
      lineItemCount: 2,
    });
    // Exactly the keys of the real view, so a receiver's parser sees a real shape (jsonb keeps no key order).
    const real = views.order({
      id: 'x',
      orderNumber: 'x',
      status: 'x',
      currency: 'x',
      totalAmount: 0,
      subtotalAmount: 0,
      customerId: 'x',
      accountId: 'x',
      createdAt: new Date(),
      lineItemCount: 0,
    });
    expect(Object.keys(event!.payload).sort()).toEqual(Object.keys(real).sort());
  });

  it('uses event.created for an endpoint of every type; a second test is a new source event', async () => {
    const { endpoint } = await createEndpoint(org, { accountId: org.account.id });
    const first = await api(app, 'POST', `/v1/webhook-endpoints/${endpoint.id}/test`, admin());
    const second = await api(app, 'POST', `/v1/webhook-endpoints/${endpoint.id}/test`, admin());
    expect(first.body.delivery.eventType).toBe('event.created');
    expect(second.body.delivery.eventId).not.toBe(first.body.delivery.eventId);
    const [event] = await query<{ payload: Record<string, unknown> }>(app, 'SELECT payload FROM webhook_events WHERE id = $1', [
      first.body.delivery.eventId,
    ]);
    expect(event!.payload).toEqual({
      id: 'evt_sample0000000000000000',
      name: 'Sample event',
      status: 'draft',
      accountId: org.account.id,
      venueId: 'vnu_sample0000000000000000',
      timezone: 'Europe/London',
      createdAt: expect.any(String),
    });
    const gql = await graphql(
      app,
      `mutation { testWebhookEndpoint(id: "${endpoint.id}") { webhookDelivery { eventType status attempts { nodes { attemptNumber } } } userErrors { code } } }`,
      {},
      admin(),
    );
    expect(gql.body.data.testWebhookEndpoint).toEqual({
      webhookDelivery: { eventType: 'event.created', status: 'PENDING', attempts: { nodes: [] } },
      userErrors: [],
    });
  });

  it('refuses a disabled endpoint (409), a deleted or foreign one (404)', async () => {
    const { endpoint } = await createEndpoint(org, { accountId: org.account.id });
    await api(app, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { ...admin(), body: { enabled: false } });
    const disabled = await api(app, 'POST', `/v1/webhook-endpoints/${endpoint.id}/test`, admin());
    expect([disabled.status, disabled.body.code]).toEqual([409, 'CONFLICT']);
    await api(app, 'DELETE', `/v1/webhook-endpoints/${endpoint.id}`, admin());
    expect((await api(app, 'POST', `/v1/webhook-endpoints/${endpoint.id}/test`, admin())).status).toBe(404);
    const foreign = (await createEndpoint(other, { accountId: other.account.id })).endpoint.id;
    expect((await api(app, 'POST', `/v1/webhook-endpoints/${foreign}/test`, admin())).status).toBe(404);
    const rows = await query(app, 'SELECT id FROM webhook_deliveries WHERE "endpointId" = ANY($1)', [[endpoint.id, foreign]]);
    expect(rows).toEqual([]);
  });
});

describe('recordWebhookEvent', () => {
  let fresh: TestOrganisation;
  let accountB: string;
  const ids = {} as Record<'all' | 'subscribed' | 'unsubscribed' | 'disabled' | 'deleted' | 'otherAccount' | 'otherOrg', string>;
  beforeAll(async () => {
    fresh = await createOrganisation(app, 'hooksrecord');
    accountB = (await createAccount(app, fresh, 'B')).id;
    const a = fresh.account.id;
    ids.all = (await createEndpoint(fresh, { accountId: a })).endpoint.id;
    ids.subscribed = (await createEndpoint(fresh, { accountId: a, eventTypes: ['order.created', 'event.created'] })).endpoint.id;
    ids.unsubscribed = (await createEndpoint(fresh, { accountId: a, eventTypes: ['order.created'] })).endpoint.id;
    ids.disabled = (await createEndpoint(fresh, { accountId: a, eventTypes: ['event.created'] })).endpoint.id;
    ids.deleted = (await createEndpoint(fresh, { accountId: a })).endpoint.id;
    ids.otherAccount = (await createEndpoint(fresh, { accountId: accountB })).endpoint.id;
    ids.otherOrg = (await createEndpoint(other, { accountId: other.account.id })).endpoint.id;
    await api(app, 'PATCH', `/v1/webhook-endpoints/${ids.disabled}`, {
      token: fresh.adminToken,
      org: fresh.slug,
      body: { enabled: false },
    });
    await api(app, 'DELETE', `/v1/webhook-endpoints/${ids.deleted}`, { token: fresh.adminToken, org: fresh.slug });
  });

  const payload = () =>
    views.event({
      id: newId('event'),
      name: 'Recorded',
      status: 'draft',
      accountId: fresh.account.id,
      venueId: null,
      timezone: 'UTC',
      createdAt: new Date(),
    });

  it('records one pending delivery per enabled, not deleted, subscribed endpoint of that account only', async () => {
    const recorded = await app().runtime.db.$transaction((tx) =>
      recordWebhookEvent(tx, {
        organisationId: fresh.organisation.id,
        accountId: fresh.account.id,
        type: 'event.created',
        payload: payload(),
      }),
    );
    expect(recorded.eventId).toMatch(/^wev_/);
    const rows = await query<{ id: string; endpointId: string; status: string; attemptCount: number; eventType: string }>(
      app,
      'SELECT id, "endpointId", status::text, "attemptCount", "eventType" FROM webhook_deliveries WHERE "eventId" = $1',
      [recorded.eventId],
    );
    expect(rows.map((r) => r.endpointId).sort()).toEqual([ids.all, ids.subscribed].sort());
    expect(rows.map((r) => r.id).sort()).toEqual([...recorded.deliveryIds].sort());
    expect(rows.every((r) => r.status === 'pending' && r.attemptCount === 0 && r.eventType === 'event.created')).toBe(true);
  });

  it('an order.created event reaches the endpoints subscribed to it and to everything', async () => {
    const recorded = await app().runtime.db.$transaction((tx) =>
      recordWebhookEvent(tx, { organisationId: fresh.organisation.id, accountId: fresh.account.id, type: 'order.created', payload: {} }),
    );
    const rows = await query<{ endpointId: string }>(app, 'SELECT "endpointId" FROM webhook_deliveries WHERE "eventId" = $1', [
      recorded.eventId,
    ]);
    expect(rows.map((r) => r.endpointId).sort()).toEqual([ids.all, ids.subscribed, ids.unsubscribed].sort());
  });

  it('rolls back with the transaction: no event, no delivery', async () => {
    const before = await query<{ events: string; deliveries: string }>(
      app,
      'SELECT (SELECT count(*) FROM webhook_events) AS events, (SELECT count(*) FROM webhook_deliveries) AS deliveries',
    );
    let recordedEventId: string | undefined;
    await expect(
      app().runtime.db.$transaction(async (tx) => {
        const recorded = await recordWebhookEvent(tx, {
          organisationId: fresh.organisation.id,
          accountId: fresh.account.id,
          type: 'event.created',
          payload: payload(),
        });
        recordedEventId = recorded.eventId;
        expect(recorded.deliveryIds).toHaveLength(2);
        throw new Error('the change failed after recording');
      }),
    ).rejects.toThrow('the change failed after recording');
    expect(recordedEventId).toMatch(/^wev_/);
    const after = await query<{ events: string; deliveries: string }>(
      app,
      'SELECT (SELECT count(*) FROM webhook_events) AS events, (SELECT count(*) FROM webhook_deliveries) AS deliveries',
    );
    expect(after).toEqual(before);
    expect(await query(app, 'SELECT id FROM webhook_events WHERE id = $1', [recordedEventId])).toEqual([]);
  });
});

describe('GET /webhook-deliveries', () => {
  let fresh: TestOrganisation;
  let accountB: string;
  let endpointA: string;
  let endpointA2: string;
  let endpointB: string;
  /** Delivery ids in creation order. */
  const made: Array<{ id: string; endpointId: string; eventType: string; status: string }> = [];

  async function record(accountId: string, type: 'order.created' | 'customer.created' | 'event.created', endpointOnly?: string) {
    const recorded = await app().runtime.db.$transaction((tx) =>
      recordWebhookEvent(tx, { organisationId: fresh.organisation.id, accountId, type, payload: {} }),
    );
    const rows = await app().runtime.db.webhookDelivery.findMany({ where: { eventId: recorded.eventId }, orderBy: { id: 'asc' } });
    for (const row of rows)
      if (!endpointOnly || row.endpointId === endpointOnly)
        made.push({ id: row.id, endpointId: row.endpointId, eventType: row.eventType, status: row.status });
    return rows;
  }

  beforeAll(async () => {
    fresh = await createOrganisation(app, 'hooksdeliveries');
    accountB = (await createAccount(app, fresh, 'B')).id;
    endpointA = (await createEndpoint(fresh, { accountId: fresh.account.id, eventTypes: ['order.created', 'customer.created'] })).endpoint
      .id;
    endpointB = (await createEndpoint(fresh, { accountId: accountB, eventTypes: ['order.created'] })).endpoint.id;
    await record(fresh.account.id, 'order.created');
    await record(fresh.account.id, 'customer.created');
    await record(fresh.account.id, 'order.created');
    await record(accountB, 'order.created');
    // Distinct creation times, so "newest first" cannot hinge on two rows sharing a millisecond.
    for (const [i, delivery] of made.entries()) {
      await app().runtime.db.webhookDelivery.update({
        where: { id: delivery.id },
        data: { createdAt: new Date(Date.UTC(2026, 6, 1, 10, i)) },
      });
    }
    // One delivery succeeded after a failed attempt, one failed for good.
    const [first, second] = made;
    const db = app().runtime.db;
    await db.webhookDelivery.update({ where: { id: first!.id }, data: { status: 'succeeded', attemptCount: 2, completedAt: new Date() } });
    await db.webhookDelivery.update({ where: { id: second!.id }, data: { status: 'failed', attemptCount: 1, completedAt: new Date() } });
    first!.status = 'succeeded';
    second!.status = 'failed';
    // Inserted out of order: the answer orders them by attempt number.
    await db.webhookAttempt.create({
      data: {
        id: newId('webhookAttempt'),
        organisationId: fresh.organisation.id,
        deliveryId: first!.id,
        attemptNumber: 2,
        attemptedAt: new Date('2026-07-01T12:00:05.000Z'),
        statusCode: 200,
        responseBody: 'ok',
        durationMs: 31,
        error: null,
      },
    });
    await db.webhookAttempt.create({
      data: {
        id: newId('webhookAttempt'),
        organisationId: fresh.organisation.id,
        deliveryId: first!.id,
        attemptNumber: 1,
        attemptedAt: new Date('2026-07-01T12:00:00.000Z'),
        statusCode: 503,
        responseBody: 'busy',
        durationMs: 12,
        error: 'receiver answered 503',
      },
    });
    await db.webhookAttempt.create({
      data: {
        id: newId('webhookAttempt'),
        organisationId: fresh.organisation.id,
        deliveryId: second!.id,
        attemptNumber: 1,
        attemptedAt: new Date('2026-07-01T12:01:00.000Z'),
        statusCode: null,
        responseBody: null,
        durationMs: 15000,
        error: 'timeout after 15000 ms',
      },
    });
    // A third pending delivery with its next attempt scheduled.
    await db.webhookDelivery.update({
      where: { id: made[2]!.id },
      data: { attemptCount: 1, nextAttemptAt: new Date('2030-01-01T00:00:00.000Z') },
    });
    // A deleted endpoint's deliveries leave with it.
    endpointA2 = (await createEndpoint(fresh, { accountId: fresh.account.id, eventTypes: ['event.created'] })).endpoint.id;
    await record(fresh.account.id, 'event.created');
    made.pop();
    await api(app, 'DELETE', `/v1/webhook-endpoints/${endpointA2}`, { token: fresh.adminToken, org: fresh.slug });
  });

  const as = (token: string) => ({ token, org: fresh.slug });
  const idsOf = (res: { body: { deliveries: Array<{ id: string }> } }) => res.body.deliveries.map((d) => d.id);
  const newestFirst = () => [...made].reverse();

  it('answers the contract shape, newest first, attempts ordered by attempt number', async () => {
    const res = await api(app, 'GET', '/v1/webhook-deliveries', as(fresh.adminToken));
    expect(res.status).toBe(200);
    expectDocumentedResponse('GET', '/v1/webhook-deliveries', res);
    expect(idsOf(res)).toEqual(newestFirst().map((d) => d.id));
    expect(res.body.pagination).toEqual({ page: 1, limit: 20, total: 4, totalPages: 1, hasNext: false, hasPrev: false });
    const first = res.body.deliveries.find((d: { id: string }) => d.id === made[0]!.id);
    expect(first).toEqual({
      id: made[0]!.id,
      endpointId: endpointA,
      eventId: expect.stringMatching(/^wev_/),
      eventType: 'order.created',
      status: 'succeeded',
      attemptCount: 2,
      nextAttemptAt: null,
      createdAt: expect.any(String),
      attempts: [
        {
          attemptNumber: 1,
          trigger: 'scheduled',
          attemptedAt: '2026-07-01T12:00:00.000Z',
          statusCode: 503,
          responseBody: 'busy',
          durationMs: 12,
          error: 'receiver answered 503',
        },
        {
          attemptNumber: 2,
          trigger: 'scheduled',
          attemptedAt: '2026-07-01T12:00:05.000Z',
          statusCode: 200,
          responseBody: 'ok',
          durationMs: 31,
          error: null,
        },
      ],
    });
    const failed = res.body.deliveries.find((d: { id: string }) => d.id === made[1]!.id);
    expect(failed).toMatchObject({
      status: 'failed',
      attempts: [{ attemptNumber: 1, statusCode: null, responseBody: null, error: 'timeout after 15000 ms' }],
    });
    const scheduled = res.body.deliveries.find((d: { id: string }) => d.id === made[2]!.id);
    expect(scheduled).toMatchObject({ status: 'pending', attemptCount: 1, nextAttemptAt: '2030-01-01T00:00:00.000Z', attempts: [] });
    expect(res.body.deliveries.map((d: { endpointId: string }) => d.endpointId)).not.toContain(endpointA2);
  });

  it('filters by endpointId, status and eventType, together', async () => {
    const get = async (qs: string) => idsOf(await api(app, 'GET', `/v1/webhook-deliveries?${qs}`, as(fresh.adminToken)));
    const expectIds = (filter: (d: (typeof made)[number]) => boolean) =>
      newestFirst()
        .filter(filter)
        .map((d) => d.id);
    expect(await get(`endpointId=${endpointB}`)).toEqual(expectIds((d) => d.endpointId === endpointB));
    expect(await get('status=pending')).toEqual(expectIds((d) => d.status === 'pending'));
    expect(await get('status=failed')).toEqual([made[1]!.id]);
    expect(await get('eventType=customer.created')).toEqual(expectIds((d) => d.eventType === 'customer.created'));
    expect(await get(`endpointId=${endpointA}&status=pending&eventType=order.created`)).toEqual(
      expectIds((d) => d.endpointId === endpointA && d.status === 'pending' && d.eventType === 'order.created'),
    );
    expect(await get('endpointId=whe_unknown')).toEqual([]);
    expect(await get(`endpointId=${endpointA2}`)).toEqual([]);
  });

  it('paginates', async () => {
    const page2 = await api(app, 'GET', '/v1/webhook-deliveries?page=2&limit=3', as(fresh.adminToken));
    expect(page2.body.pagination).toEqual({ page: 2, limit: 3, total: 4, totalPages: 2, hasNext: false, hasPrev: true });
    expect(idsOf(page2)).toEqual([newestFirst()[3]!.id]);
    const page1 = await api(app, 'GET', '/v1/webhook-deliveries?page=1&limit=3', as(fresh.adminToken));
    expect(page1.body.pagination).toMatchObject({ hasNext: true, hasPrev: false, totalPages: 2 });
    expect(idsOf(page1)).toEqual(
      newestFirst()
        .slice(0, 3)
        .map((d) => d.id),
    );
  });

  it('validates the query, naming the parameter', async () => {
    for (const [qs, path] of [
      ['status=done', 'query.status'],
      ['eventType=order.exploded', 'query.eventType'],
      ['limit=0', 'query.limit'],
      ['limit=101', 'query.limit'],
      ['page=0', 'query.page'],
    ]) {
      const res = await api(app, 'GET', `/v1/webhook-deliveries?${qs}`, as(fresh.adminToken));
      expect([res.status, res.body.code, paths(res)], qs).toEqual([400, 'VALIDATION_FAILED', [path]]);
    }
    const gql = await graphql(app, '{ webhookDeliveries(eventType: "nope") { pagination { total } } }', {}, as(fresh.adminToken));
    expect(gql.body.errors[0].extensions).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'eventType' }] });
  });

  it('shows only accounts where the caller may read webhooks; 404 for a key without it; nothing of another organisation', async () => {
    const viewerOfB = (await createStaffUser(app, fresh, [{ roleId: systemRole(fresh, 'viewer'), accountId: accountB }])).token;
    const seen = await api(app, 'GET', '/v1/webhook-deliveries', as(viewerOfB));
    expect(idsOf(seen)).toEqual(
      newestFirst()
        .filter((d) => d.endpointId === endpointB)
        .map((d) => d.id),
    );
    const filtered = await api(app, 'GET', `/v1/webhook-deliveries?endpointId=${endpointA}`, as(viewerOfB));
    expect(idsOf(filtered)).toEqual([]);
    const key = await apiKey(fresh, ['events.read']);
    const refused = await api(app, 'GET', '/v1/webhook-deliveries', as(key));
    expect([refused.status, refused.body.code]).toEqual([404, 'NOT_FOUND']);
    const reader = await apiKey(fresh, ['webhooks.read']);
    expect((await api(app, 'GET', '/v1/webhook-deliveries', as(reader))).body.pagination.total).toBe(4);
    const foreign = await api(app, 'GET', `/v1/webhook-deliveries?endpointId=${endpointA}`, { token: other.adminToken, org: other.slug });
    expect([foreign.status, idsOf(foreign)]).toEqual([200, []]);
  });

  it('GraphQL: a Relay connection with cursors, pagination and the status enum', async () => {
    const res = await graphql(
      app,
      `
        {
          webhookDeliveries(first: 2, status: PENDING) {
            edges {
              cursor
              node {
                id
                status
                attempts {
                  nodes {
                    attemptNumber
                  }
                }
              }
            }
            pageInfo {
              hasNextPage
              endCursor
            }
            pagination {
              total
            }
          }
        }
      `,
      {},
      as(fresh.adminToken),
    );
    const connection = res.body.data.webhookDeliveries;
    const pending = newestFirst().filter((d) => d.status === 'pending');
    expect(connection.pagination.total).toBe(pending.length);
    expect(connection.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(pending.slice(0, 2).map((d) => d.id));
    expect(connection.pageInfo.hasNextPage).toBe(pending.length > 2);
    const next = await graphql(
      app,
      `{ webhookDeliveries(first: 2, status: PENDING, after: "${connection.pageInfo.endCursor}") { nodes { id } } }`,
      {},
      as(fresh.adminToken),
    );
    expect(next.body.data.webhookDeliveries.nodes.map((n: { id: string }) => n.id)).toEqual(pending.slice(2, 4).map((d) => d.id));
  });
});
