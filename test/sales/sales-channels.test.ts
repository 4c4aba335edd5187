import { beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/auth/keys.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, createApiKey, staffWithRoles } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { expectError } from '../support/expect.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { expectDocumentedResponse } from '../support/openapi-check.ts';
import { createEvent } from '../support/sales.ts';

const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
let viewer: string;
beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'chana'), createOrganisation(app, 'chanb')]);
  viewer = (await staffWithRoles(app, org, ['viewer'])).token;
});

const admin = () => asAdmin(org);
const slug = (label: string) => `${label}-${Math.random().toString(36).slice(2, 8)}`;
const apiKey = async (o: TestOrganisation, scopes: string[]) => (await createApiKey(app, o, scopes)).key;

async function createChannel(body: Record<string, unknown> = {}) {
  const res = await api(app, 'POST', '/v1/sales-channels', {
    ...admin(),
    body: { accountId: org.account.id, name: 'Web shop', slug: slug('web'), ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.salesChannel as { id: string; slug: string };
}

describe('sales channels', () => {
  it('creates, reads, lists and updates a channel in the documented shapes', async () => {
    const e1 = await createEvent(app, org);
    const res = await api(app, 'POST', '/v1/sales-channels', {
      ...admin(),
      body: {
        accountId: org.account.id,
        name: 'Box office',
        slug: slug('box'),
        channelType: 'box_office',
        sellsAllEvents: false,
        eventIds: [e1.id],
      },
    });
    expect(res.status).toBe(201);
    expectDocumentedResponse('POST', '/sales-channels', res);
    expect(res.body.salesChannel).toMatchObject({
      id: expect.stringMatching(/^sch_/),
      organisationId: org.organisation.id,
      accountId: org.account.id,
      name: 'Box office',
      channelType: 'box_office',
      sellsAllEvents: false,
      eventIds: [e1.id],
      isActive: true,
    });
    const id = res.body.salesChannel.id;

    const got = await api(app, 'GET', `/v1/sales-channels/${id}`, admin());
    expect(got.status).toBe(200);
    expectDocumentedResponse('GET', '/sales-channels/{id}', got);
    expect(got.body.salesChannel).toEqual(res.body.salesChannel);

    const list = await api(app, 'GET', `/v1/sales-channels?accountId=${org.account.id}&limit=100`, admin());
    expect(list.status).toBe(200);
    expectDocumentedResponse('GET', '/sales-channels', list);
    expect(list.body.salesChannels.map((c: { id: string }) => c.id)).toContain(id);

    const e2 = await createEvent(app, org);
    const patched = await api(app, 'PATCH', `/v1/sales-channels/${id}`, {
      ...admin(),
      body: { name: 'Front desk', isActive: false, eventIds: [e2.id] },
    });
    expect(patched.status).toBe(200);
    expectDocumentedResponse('PATCH', '/sales-channels/{id}', patched);
    expect(patched.body.salesChannel).toMatchObject({ name: 'Front desk', isActive: false, eventIds: [e2.id], sellsAllEvents: false });
  });

  it('defaults channelType web and sellsAllEvents true', async () => {
    const channel = await createChannel();
    expect(channel).toMatchObject({ channelType: 'web', sellsAllEvents: true, eventIds: [] });
  });

  it('refuses invalid input naming the fields', async () => {
    const res = await api(app, 'POST', '/v1/sales-channels', {
      ...admin(),
      body: { accountId: org.account.id, name: '', slug: 'Not A Slug' },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['name', 'slug']);

    const unknownAccount = await api(app, 'POST', '/v1/sales-channels', {
      ...admin(),
      body: { accountId: 'acc_nope', name: 'x', slug: slug('x') },
    });
    expect([unknownAccount.status, unknownAccount.body.details]).toEqual([404, [{ path: 'accountId', message: expect.any(String) }]]);

    const kind = await api(app, 'POST', `/v1/sales-channels/${(await createChannel()).id}/keys`, { ...admin(), body: { kind: 'other' } });
    // /v1 answers in the contract's values; the graph names them UPPER_CASE (below).
    expect([kind.status, kind.body.details]).toEqual([400, [{ path: 'kind', message: 'one of publishable, secret' }]]);
  });

  it('a value the graph refuses (a number for a string, a channelType outside ChannelType) is judged whole by the use case', async () => {
    const body = { accountId: 5, name: '', slug: 'Not A Slug', channelType: 'shop' };
    const paths = (details: Array<{ path: string }>) => details.map((d) => d.path).sort();
    const res = await api(app, 'POST', '/v1/sales-channels', { ...admin(), body });
    expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_FAILED']);
    expect(paths(res.body.details)).toEqual(['accountId', 'channelType', 'name', 'slug']);
    const graph = await graphql(
      app,
      'mutation ($input: CreateSalesChannelInput!) { createSalesChannel(input: $input) { salesChannel { id } } }',
      { input: body },
      admin(),
    );
    expect(graph.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
    expect(paths(graph.body.errors[0].extensions.details)).toEqual([
      'variables.input.accountId',
      'variables.input.channelType',
      'variables.input.name',
      'variables.input.slug',
    ]);

    const key = await graphql(
      app,
      'mutation ($id: ID!, $input: CreateChannelKeyInput!) { createChannelKey(channelId: $id, input: $input) { createdChannelKey { key } } }',
      { id: (await createChannel()).id, input: { kind: 'other' } },
      admin(),
    );
    expect(key.body.errors[0].extensions).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ path: 'variables.input.kind', message: 'one of PUBLISHABLE, SECRET' }],
    });
  });

  it('refuses events of another account, naming the index', async () => {
    const second = await createAccount(app, org);
    const foreign = await createEvent(app, org, { accountId: second.id });
    const own = await createEvent(app, org);
    const res = await api(app, 'POST', '/v1/sales-channels', {
      ...admin(),
      body: { accountId: org.account.id, name: 'x', slug: slug('x'), sellsAllEvents: false, eventIds: [own.id, foreign.id] },
    });
    expect([res.status, res.body.details]).toEqual([404, [{ path: 'eventIds.1', message: expect.any(String) }]]);
  });

  it('answers 409 CONFLICT for a slug already used in the organisation, but not across organisations', async () => {
    const channel = await createChannel();
    const clash = await api(app, 'POST', '/v1/sales-channels', {
      ...admin(),
      body: { accountId: org.account.id, name: 'Again', slug: channel.slug },
    });
    expect([clash.status, clash.body.code]).toEqual([409, 'CONFLICT']);
    const elsewhere = await api(app, 'POST', '/v1/sales-channels', {
      token: other.adminToken,
      org: other.slug,
      body: { accountId: other.account.id, name: 'Same slug', slug: channel.slug },
    });
    expect(elsewhere.status).toBe(201);
  });

  it('lets a viewer read but not write (403 FORBIDDEN)', async () => {
    const channel = await createChannel();
    expect((await api(app, 'GET', `/v1/sales-channels/${channel.id}`, { token: viewer, org: org.slug })).status).toBe(200);
    const patch = await api(app, 'PATCH', `/v1/sales-channels/${channel.id}`, { token: viewer, org: org.slug, body: { name: 'x' } });
    expect([patch.status, patch.body.code]).toEqual([403, 'FORBIDDEN']);
    const create = await api(app, 'POST', '/v1/sales-channels', {
      token: viewer,
      org: org.slug,
      body: { accountId: org.account.id, name: 'x', slug: slug('x') },
    });
    expect([create.status, create.body.code]).toEqual([403, 'FORBIDDEN']);
    const key = await api(app, 'POST', `/v1/sales-channels/${channel.id}/keys`, { token: viewer, org: org.slug, body: { kind: 'secret' } });
    expect([key.status, key.body.code]).toEqual([403, 'FORBIDDEN']);
  });

  it('answers 404 to an API key without the scope, and serves one with it', async () => {
    const channel = await createChannel();
    const without = await apiKey(org, ['events.read']);
    const res = await api(app, 'GET', `/v1/sales-channels/${channel.id}`, { token: without, org: org.slug });
    expect([res.status, res.body.code]).toEqual([404, 'NOT_FOUND']);
    const list = await api(app, 'GET', '/v1/sales-channels', { token: without, org: org.slug });
    expect([list.status, list.body.code]).toEqual([404, 'NOT_FOUND']);
    const withScope = await apiKey(org, ['sales_channels.read']);
    expect((await api(app, 'GET', `/v1/sales-channels/${channel.id}`, { token: withScope, org: org.slug })).status).toBe(200);
    const write = await api(app, 'PATCH', `/v1/sales-channels/${channel.id}`, { token: withScope, org: org.slug, body: { name: 'x' } });
    expect([write.status, write.body.code]).toEqual([404, 'NOT_FOUND']);
  });

  it("answers 404 for another organisation's channel and keeps it out of lists", async () => {
    const channel = await createChannel();
    const res = await api(app, 'GET', `/v1/sales-channels/${channel.id}`, { token: other.adminToken, org: other.slug });
    expect([res.status, res.body.code]).toEqual([404, 'NOT_FOUND']);
    const patch = await api(app, 'PATCH', `/v1/sales-channels/${channel.id}`, {
      token: other.adminToken,
      org: other.slug,
      body: { name: 'x' },
    });
    expect(patch.status).toBe(404);
    const keys = await api(app, 'POST', `/v1/sales-channels/${channel.id}/keys`, {
      token: other.adminToken,
      org: other.slug,
      body: { kind: 'secret' },
    });
    expect(keys.status).toBe(404);
    const list = await api(app, 'GET', '/v1/sales-channels?limit=100', { token: other.adminToken, org: other.slug });
    expect(list.body.salesChannels.map((c: { id: string }) => c.id)).not.toContain(channel.id);
  });
});

describe('channel keys', () => {
  it('shows the key once, stores only its sha256, lists keys without material, and revokes idempotently', async () => {
    const channel = await createChannel();
    const created = await api(app, 'POST', `/v1/sales-channels/${channel.id}/keys`, { ...admin(), body: { kind: 'secret' } });
    expect(created.status).toBe(201);
    expectDocumentedResponse('POST', '/sales-channels/{id}/keys', created);
    const { channelKey, key } = created.body;
    expect(key).toMatch(/^svsk_[A-Za-z0-9_-]{43}$/);
    expect(channelKey).toEqual({
      id: expect.stringMatching(/^schk_/),
      channelId: channel.id,
      kind: 'secret',
      keyPrefix: key.slice(0, 12),
      createdAt: expect.any(String),
      lastUsedAt: null,
      revokedAt: null,
    });
    const [row] = await query<{ keyHash: string }>(app, 'SELECT "keyHash" FROM channel_keys WHERE id = $1', [channelKey.id]);
    expect(row!.keyHash).toBe(sha256(key));
    const dump = JSON.stringify(await query(app, 'SELECT * FROM channel_keys WHERE id = $1', [channelKey.id]));
    expect(dump).not.toContain(key);

    const publishable = await api(app, 'POST', `/v1/sales-channels/${channel.id}/keys`, { ...admin(), body: { kind: 'publishable' } });
    expect(publishable.body.key).toMatch(/^svpk_/);

    const listed = await graphql(
      app,
      `
        query ($id: ID!) {
          salesChannel(id: $id) {
            keys {
              id
              kind
              keyPrefix
              revokedAt
            }
          }
        }
      `,
      { id: channel.id },
      admin(),
    );
    expect(listed.body.data.salesChannel.keys).toEqual([
      { id: channelKey.id, kind: 'SECRET', keyPrefix: key.slice(0, 12), revokedAt: null },
      { id: publishable.body.channelKey.id, kind: 'PUBLISHABLE', keyPrefix: publishable.body.key.slice(0, 12), revokedAt: null },
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(key);

    const before = await api(app, 'GET', '/live/sales/listings', { token: key });
    expect(before.status).toBe(200);

    const revoked = await api(app, 'POST', `/v1/sales-channels/${channel.id}/keys/${channelKey.id}/revoke`, admin());
    expect(revoked.status).toBe(200);
    expectDocumentedResponse('POST', '/sales-channels/{id}/keys/{keyId}/revoke', revoked);
    expect(revoked.body.channelKey.revokedAt).toEqual(expect.any(String));
    const again = await api(app, 'POST', `/v1/sales-channels/${channel.id}/keys/${channelKey.id}/revoke`, admin());
    expect(again.body.channelKey.revokedAt).toBe(revoked.body.channelKey.revokedAt);

    const after = await api(app, 'GET', '/live/sales/listings', { token: key });
    expect([after.status, after.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect(after.body.error).toMatch(/revoked/);
  });

  it('answers 404 for a key of another channel', async () => {
    const [a, b] = [await createChannel(), await createChannel()];
    const created = await api(app, 'POST', `/v1/sales-channels/${a.id}/keys`, { ...admin(), body: { kind: 'publishable' } });
    const res = await api(app, 'POST', `/v1/sales-channels/${b.id}/keys/${created.body.channelKey.id}/revoke`, admin());
    expect([res.status, res.body.code]).toEqual([404, 'NOT_FOUND']);
  });

  it('an inactive channel stops its keys with 401', async () => {
    const channel = await createChannel();
    const { key } = (await api(app, 'POST', `/v1/sales-channels/${channel.id}/keys`, { ...admin(), body: { kind: 'publishable' } })).body;
    expect((await api(app, 'GET', '/live/sales/listings', { token: key })).status).toBe(200);
    await api(app, 'PATCH', `/v1/sales-channels/${channel.id}`, { ...admin(), body: { isActive: false } });
    const inactive = await api(app, 'GET', '/live/sales/listings', { token: key });
    expect([inactive.status, inactive.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect(inactive.body.error).toMatch(/inactive/);
    await api(app, 'PATCH', `/v1/sales-channels/${channel.id}`, { ...admin(), body: { isActive: true } });
    expect((await api(app, 'GET', '/live/sales/listings', { token: key })).status).toBe(200);
  });

  it('a deleted account stops its keys with 401, even a key authenticated (and cached) just before', async () => {
    const account = await createAccount(app, org, 'Doomed');
    const res = await api(app, 'POST', '/v1/sales-channels', {
      ...admin(),
      body: { accountId: account.id, name: 'x', slug: slug('doomed') },
    });
    const doomedKey = (
      await api(app, 'POST', `/v1/sales-channels/${res.body.salesChannel.id}/keys`, { ...admin(), body: { kind: 'publishable' } })
    ).body.key;
    expect((await api(app, 'GET', '/live/sales/listings', { token: doomedKey })).status).toBe(200);
    expect((await api(app, 'DELETE', `/v1/accounts/${account.id}`, admin())).status).toBe(200);
    expectError(await api(app, 'GET', '/live/sales/listings', { token: doomedKey }), 401, 'UNAUTHENTICATED');
  });

  it('records lastUsedAt', async () => {
    const channel = await createChannel();
    const created = (await api(app, 'POST', `/v1/sales-channels/${channel.id}/keys`, { ...admin(), body: { kind: 'publishable' } })).body;
    await api(app, 'GET', '/live/sales/listings', { headers: { 'x-channel-key': created.key } });
    const listed = await graphql(
      app,
      `
        query ($id: ID!) {
          salesChannel(id: $id) {
            keys {
              lastUsedAt
            }
          }
        }
      `,
      { id: channel.id },
      admin(),
    );
    expect(listed.body.data.salesChannel.keys[0].lastUsedAt).toEqual(expect.any(String));
  });

  it('management surfaces still refuse channel keys', async () => {
    const channel = await createChannel();
    const { key } = (await api(app, 'POST', `/v1/sales-channels/${channel.id}/keys`, { ...admin(), body: { kind: 'secret' } })).body;
    const rest = await api(app, 'GET', '/v1/events', { token: key, org: org.slug });
    expect([rest.status, rest.body.code, rest.body.error]).toEqual([
      401,
      'UNAUTHENTICATED',
      'Channel keys authenticate the sales API only.',
    ]);
    const gql = await graphql(app, '{ accounts { pagination { total } } apiVersions { current } }', {}, { token: key, org: org.slug });
    expect(gql.status).toBe(401);
    expect(gql.body.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
    const login = await api(app, 'POST', '/v1/auth/login', { token: key, body: { email: 'x@x.test', password: 'x' } });
    expect(login.status).toBe(401);
  });
});
