import { beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/auth/keys.ts';
import { CURRENT_VERSION } from '../../src/versions.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, createApiKey, staffWithRoles } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';

const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
let viewer: string;
beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'orga'), createOrganisation(app, 'orgb')]);
  viewer = (await staffWithRoles(app, org, ['viewer'])).token;
});

const admin = () => asAdmin(org);
const apiKey = async (scopes: string[]) => (await createApiKey(app, org, scopes)).key;

describe('organisation', () => {
  it('GET /organisation answers the spec shape', async () => {
    const res = await api(app, 'GET', '/v1/organisation', admin());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      organisation: {
        id: org.organisation.id,
        name: org.organisation.name,
        primaryColor: null,
        secondaryColor: null,
        logoUrl: null,
        metadata: null,
        apiVersion: CURRENT_VERSION,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
    });
    expect(new Date(res.body.organisation.createdAt).toISOString()).toBe(res.body.organisation.createdAt);
  });

  it('PATCH /organisation updates branding and metadata, and clears with null', async () => {
    const res = await api(app, 'PATCH', '/v1/organisation', {
      ...admin(),
      body: {
        name: 'Renamed',
        primaryColor: '#12abEF',
        secondaryColor: '#000000',
        logoUrl: 'https://cdn.example/logo.png',
        metadata: { region: 'eu', tier: 2 },
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.organisation).toMatchObject({
      name: 'Renamed',
      primaryColor: '#12abEF',
      logoUrl: 'https://cdn.example/logo.png',
      metadata: { region: 'eu', tier: 2 },
    });
    const cleared = await api(app, 'PATCH', '/v1/organisation', { ...admin(), body: { metadata: null, secondaryColor: null } });
    expect(cleared.body.organisation).toMatchObject({ metadata: null, secondaryColor: null, primaryColor: '#12abEF' });
  });

  it('validates every field, naming it', async () => {
    const res = await api(app, 'PATCH', '/v1/organisation', {
      ...admin(),
      body: { name: '', primaryColor: 'red', secondaryColor: '#12345', logoUrl: 'javascript:alert(1)', apiVersion: 'latest' },
    });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual([
      'apiVersion',
      'logoUrl',
      'name',
      'primaryColor',
      'secondaryColor',
    ]);
    const wrongType = await api(app, 'PATCH', '/v1/organisation', { ...admin(), body: { metadata: [1, 2] } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.details[0].path).toBe('metadata');
  });

  it.each([['2024-11-01'], ['2030-01-01']])('refuses apiVersion %s with 400 UNSUPPORTED_VERSION', async (apiVersion) => {
    const res = await api(app, 'PATCH', '/v1/organisation', { ...admin(), body: { apiVersion } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('UNSUPPORTED_VERSION');
  });

  it('the pinned version is the default; the Service-Version header wins over it; current applies without either', async () => {
    await api(app, 'PATCH', '/v1/organisation', { ...admin(), body: { apiVersion: '2025-10-01' } });
    const pinned = await api(app, 'GET', '/v1/meta/versions', { org: org.slug });
    expect(pinned.body.resolved).toBe('2025-10-01');
    expect(pinned.headers.get('service-version')).toBe('2025-10-01');
    const authed = await api(app, 'GET', '/v1/organisation', admin());
    expect(authed.headers.get('service-version')).toBe('2025-10-01');
    const header = await api(app, 'GET', '/v1/meta/versions', { org: org.slug, headers: { 'service-version': '2025-04-01' } });
    expect(header.body.resolved).toBe('2025-04-01');
    const neither = await api(app, 'GET', '/v1/meta/versions', {});
    expect(neither.body.resolved).toBe(CURRENT_VERSION);
    const otherOrg = await api(app, 'GET', '/v1/meta/versions', { org: other.slug });
    expect(otherOrg.body.resolved).toBe(CURRENT_VERSION);
    await api(app, 'PATCH', '/v1/organisation', { ...admin(), body: { apiVersion: CURRENT_VERSION } });
  });

  it('needs organisation.write to change (403 staff, 404 key) and organisation.read to read', async () => {
    expect((await api(app, 'GET', '/v1/organisation', { token: viewer, org: org.slug })).status).toBe(200);
    expect((await api(app, 'PATCH', '/v1/organisation', { token: viewer, org: org.slug, body: { name: 'x' } })).status).toBe(403);
    const key = await apiKey(['events.read']);
    expect((await api(app, 'GET', '/v1/organisation', { token: key, org: org.slug })).status).toBe(404);
    expect((await api(app, 'PATCH', '/v1/organisation', { token: key, org: org.slug, body: { name: 'x' } })).status).toBe(404);
  });
});

describe('accounts', () => {
  it('create (201), list, get, update, delete; deleted accounts disappear and cannot own new things', async () => {
    const created = await api(app, 'POST', '/v1/accounts', { ...admin(), body: { name: 'Festival' } });
    expect(created.status).toBe(201);
    expect(created.body.account).toEqual({
      id: expect.stringMatching(/^acc_/),
      organisationId: org.organisation.id,
      name: 'Festival',
      status: 'active',
      isDeleted: false,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const id = created.body.account.id;
    const list = await api(app, 'GET', '/v1/accounts', admin());
    expect(list.body.accounts.map((a: { id: string }) => a.id)).toEqual([org.account.id, id]);
    expect(list.body.pagination).toEqual({ page: 1, limit: 20, total: 2, totalPages: 1, hasNext: false, hasPrev: false });
    expect((await api(app, 'GET', `/v1/accounts/${id}`, admin())).body.account.name).toBe('Festival');
    const updated = await api(app, 'PATCH', `/v1/accounts/${id}`, { ...admin(), body: { status: 'inactive', name: 'Festival 2' } });
    expect(updated.body.account).toMatchObject({ status: 'inactive', name: 'Festival 2' });
    expect(await api(app, 'DELETE', `/v1/accounts/${id}`, admin())).toMatchObject({ status: 200, body: { success: true, id } });
    expect((await api(app, 'GET', `/v1/accounts/${id}`, admin())).status).toBe(404);
    expect((await api(app, 'GET', '/v1/accounts', admin())).body.accounts.map((a: { id: string }) => a.id)).toEqual([org.account.id]);
    const [row] = await query<{ isDeleted: boolean }>(app, 'SELECT "isDeleted" FROM accounts WHERE id = $1', [id]);
    expect(row!.isDeleted).toBe(true);
    const key = await api(app, 'POST', '/v1/api-keys', { ...admin(), body: { name: 'x', scopes: ['events.read'], accountId: id } });
    expect(key.status).toBe(404);
    expect(key.body.details[0].path).toBe('accountId');
  });

  it('validates input and query strings', async () => {
    const res = await api(app, 'POST', '/v1/accounts', { ...admin(), body: { name: '', status: 'paused' } });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['name', 'status']);
    const empty = await api(app, 'POST', '/v1/accounts', { ...admin(), body: { name: ' ' } });
    expect(empty.body.details[0].path).toBe('name');
    for (const limit of ['0', '101', 'abc', '-1', '2.5']) {
      const list = await api(app, 'GET', `/v1/accounts?limit=${limit}`, admin());
      expect(list.status, limit).toBe(400);
      expect(list.body.details[0].path).toBe('query.limit');
    }
  });

  it('paginates', async () => {
    const fresh = await createOrganisation(app, 'pages');
    for (let i = 0; i < 4; i++)
      await api(app, 'POST', '/v1/accounts', { token: fresh.adminToken, org: fresh.slug, body: { name: `A${i}` } });
    const page2 = await api(app, 'GET', '/v1/accounts?page=2&limit=2', { token: fresh.adminToken, org: fresh.slug });
    expect(page2.body.pagination).toEqual({ page: 2, limit: 2, total: 5, totalPages: 3, hasNext: true, hasPrev: true });
    expect(page2.body.accounts.map((a: { name: string }) => a.name)).toEqual(['A1', 'A2']);
    const page3 = await api(app, 'GET', '/v1/accounts?page=3&limit=2', { token: fresh.adminToken, org: fresh.slug });
    expect(page3.body.pagination).toEqual({ page: 3, limit: 2, total: 5, totalPages: 3, hasNext: false, hasPrev: true });
    const page4 = await api(app, 'GET', '/v1/accounts?page=4&limit=2', { token: fresh.adminToken, org: fresh.slug });
    expect(page4.body.accounts).toEqual([]);
    expect(page4.body.pagination).toMatchObject({ hasNext: false, hasPrev: true });
  });

  it('a viewer sees only their account and cannot write (403); a key without the scope gets 404', async () => {
    const extra = await api(app, 'POST', '/v1/accounts', { ...admin(), body: { name: 'Hidden from viewer' } });
    const seen = await api(app, 'GET', '/v1/accounts', { token: viewer, org: org.slug });
    expect(seen.body.accounts.map((a: { id: string }) => a.id)).toEqual([org.account.id]);
    expect((await api(app, 'GET', `/v1/accounts/${extra.body.account.id}`, { token: viewer, org: org.slug })).status).toBe(404);
    expect((await api(app, 'POST', '/v1/accounts', { token: viewer, org: org.slug, body: { name: 'x' } })).status).toBe(403);
    expect((await api(app, 'PATCH', `/v1/accounts/${org.account.id}`, { token: viewer, org: org.slug, body: { name: 'x' } })).status).toBe(
      403,
    );
    const key = await apiKey(['events.read']);
    expect((await api(app, 'GET', '/v1/accounts', { token: key, org: org.slug })).status).toBe(404);
    expect((await api(app, 'DELETE', `/v1/accounts/${org.account.id}`, { token: key, org: org.slug })).status).toBe(404);
  });

  it("another organisation's account is 404 on every operation", async () => {
    const id = other.account.id;
    expect((await api(app, 'GET', `/v1/accounts/${id}`, admin())).status).toBe(404);
    expect((await api(app, 'PATCH', `/v1/accounts/${id}`, { ...admin(), body: { name: 'x' } })).status).toBe(404);
    expect((await api(app, 'DELETE', `/v1/accounts/${id}`, admin())).status).toBe(404);
    const [row] = await query<{ name: string; isDeleted: boolean }>(app, 'SELECT name, "isDeleted" FROM accounts WHERE id = $1', [id]);
    expect(row).toEqual({ name: 'Main account', isDeleted: false });
  });

  it('GraphQL lists accounts as a Relay connection with cursors and pagination', async () => {
    const res = await graphql(
      app,
      '{ accounts(first: 1) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } pagination { total } } }',
      {},
      admin(),
    );
    const connection = res.body.data.accounts;
    expect(connection.edges).toHaveLength(1);
    expect(connection.pageInfo.hasNextPage).toBe(connection.pagination.total > 1);
    const next = await graphql(
      app,
      '{ accounts(first: 5, after: "' + connection.pageInfo.endCursor + '") { edges { node { id } } } }',
      {},
      admin(),
    );
    expect(next.body.data.accounts.edges.map((e: { node: { id: string } }) => e.node.id)).not.toContain(connection.edges[0].node.id);
  });
});

describe('partner account provisioning', () => {
  it('creates the account, a sales channel and a publishable key shown once, atomically', async () => {
    const res = await api(app, 'POST', '/v1/partner/accounts', { ...admin(), body: { name: 'Partner Venue Ltd' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      account: expect.objectContaining({ id: expect.stringMatching(/^acc_/), name: 'Partner Venue Ltd', status: 'active' }),
      salesChannel: { id: expect.stringMatching(/^sch_/), slug: expect.stringMatching(/^partner-venue-ltd-/), channelType: 'partner' },
      publishableKey: { id: expect.stringMatching(/^schk_/), key: expect.stringMatching(/^svpk_[A-Za-z0-9_-]{43}$/) },
    });
    const [key] = await query<{ keyHash: string; kind: string }>(app, 'SELECT "keyHash", kind FROM channel_keys WHERE id = $1', [
      res.body.publishableKey.id,
    ]);
    expect(key).toEqual({ keyHash: sha256(res.body.publishableKey.key), kind: 'publishable' });
  });

  it('a clashing channel slug is 409 CONFLICT naming it, as creating the channel alone answers, and rolls everything back', async () => {
    const first = await api(app, 'POST', '/v1/partner/accounts', {
      ...admin(),
      body: { name: 'One', salesChannel: { slug: 'taken-slug' } },
    });
    expect(first.status).toBe(201);
    const before = await query<{ count: string }>(app, 'SELECT count(*) FROM accounts');
    const clash = await api(app, 'POST', '/v1/partner/accounts', {
      ...admin(),
      body: { name: 'Two', salesChannel: { slug: 'taken-slug' } },
    });
    expect([clash.status, clash.body.code, clash.body.details[0].path]).toEqual([409, 'CONFLICT', 'salesChannel.slug']);
    const after = await query<{ count: string }>(app, 'SELECT count(*) FROM accounts');
    expect(after[0]!.count).toBe(before[0]!.count);
  });

  it('validates and authorises', async () => {
    expect(
      (await api(app, 'POST', '/v1/partner/accounts', { ...admin(), body: { name: '', salesChannel: { slug: 'Bad Slug' } } })).body.details
        .map((d: { path: string }) => d.path)
        .sort(),
    ).toEqual(['name', 'salesChannel.slug']);
    expect((await api(app, 'POST', '/v1/partner/accounts', { token: viewer, org: org.slug, body: { name: 'x' } })).status).toBe(403);
    const accountsOnly = await apiKey(['accounts.write']);
    expect((await api(app, 'POST', '/v1/partner/accounts', { token: accountsOnly, org: org.slug, body: { name: 'x' } })).status).toBe(404);
    const partnerKey = await apiKey(['accounts.write', 'sales_channels.write']);
    expect((await api(app, 'POST', '/v1/partner/accounts', { token: partnerKey, org: org.slug, body: { name: 'Via key' } })).status).toBe(
      201,
    );
  });
});
