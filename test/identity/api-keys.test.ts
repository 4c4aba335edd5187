import { decodeJwt } from 'jose';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/auth/keys.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, createApiKey, staffWithRoles } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';

const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'keys'), createOrganisation(app, 'keysother')]);
});

describe('creating organisation API keys', () => {
  it('answers {apiKey, key} once: svak_ + 32 random bytes, prefix = first 12 characters, stored only as a hash', async () => {
    const res = await api(app, 'POST', '/v1/api-keys', {
      token: org.adminToken,
      org: org.slug,
      body: { name: 'Box office', scopes: ['events.read', 'roles.read'] },
    });
    expect(res.status).toBe(201);
    const { apiKey, key } = res.body;
    expect(key).toMatch(/^svak_[A-Za-z0-9_-]{43}$/);
    expect(apiKey).toEqual({
      id: expect.stringMatching(/^oak_/),
      organisationId: org.organisation.id,
      accountId: null,
      name: 'Box office',
      keyPrefix: key.slice(0, 12),
      scopes: ['events.read', 'roles.read'],
      createdBy: org.user.id,
      createdAt: expect.any(String),
      lastUsedAt: null,
      expiresAt: null,
      revokedAt: null,
    });
    const [row] = await query<Record<string, unknown>>(app, 'SELECT * FROM api_keys WHERE id = $1', [apiKey.id]);
    expect(row!.keyHash).toBe(sha256(key));
    expect(JSON.stringify(row)).not.toContain(key);
    const listed = await api(app, 'GET', '/v1/api-keys', { token: org.adminToken, org: org.slug });
    expect(JSON.stringify(listed.body)).not.toContain(key);
    expect(listed.body.apiKeys.map((k: { id: string }) => k.id)).toContain(apiKey.id);
  });

  it('validates name, scopes, account and expiry, naming the fields', async () => {
    const res = await api(app, 'POST', '/v1/api-keys', {
      token: org.adminToken,
      org: org.slug,
      body: { name: '', scopes: ['events.read', 'events.read:all'], accountId: 'nope', expiresAt: '2001-01-01T00:00:00Z' },
    });
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['expiresAt', 'name', 'scopes.1']);
    // An account id is judged by looking it up: one that names nothing here is 404 naming it.
    const unknown = await api(app, 'POST', '/v1/api-keys', {
      ...asAdmin(org),
      body: { name: 'k', scopes: ['events.read'], accountId: 'nope' },
    });
    expect([unknown.status, unknown.body.details?.[0]?.path]).toEqual([404, 'accountId']);
  });

  it('cannot grant scopes the creator does not hold', async () => {
    const second = await createAccount(app, org);
    const manager = await staffWithRoles(app, org, ['account_admin'], second.id);
    const ok = await api(app, 'POST', '/v1/api-keys', {
      token: manager.token,
      org: org.slug,
      body: { name: 'mine', scopes: ['events.read'], accountId: second.id },
    });
    expect(ok.status).toBe(201);
    const wide = await api(app, 'POST', '/v1/api-keys', {
      token: manager.token,
      org: org.slug,
      body: { name: 'wide', scopes: ['events.read'] },
    });
    expect(wide.status).toBe(403);
    const elsewhere = await api(app, 'POST', '/v1/api-keys', {
      token: manager.token,
      org: org.slug,
      body: { name: 'x', scopes: ['events.read'], accountId: org.account.id },
    });
    expect(elsewhere.status).toBe(403);
  });
});

describe('the six rules of an organisation API key', () => {
  it('1. is looked up by its hash: any other string is unknown (401)', async () => {
    const { key } = await createApiKey(app, org, ['roles.read']);
    expect((await api(app, 'GET', '/v1/roles', { token: key, org: org.slug })).status).toBe(200);
    const altered = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
    const res = await api(app, 'GET', '/v1/roles', { token: altered, org: org.slug });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('UNAUTHENTICATED');
  });

  it('2. a revoked key gets 401 API_KEY_REVOKED; an expired key 401 API_KEY_EXPIRED', async () => {
    const revoked = await createApiKey(app, org, ['roles.read']);
    const revoke = await api(app, 'POST', `/v1/api-keys/${revoked.apiKey.id}/revoke`, { token: org.adminToken, org: org.slug });
    expect(revoke.status).toBe(200);
    expect(revoke.body.apiKey.revokedAt).toEqual(expect.any(String));
    const afterRevoke = await api(app, 'GET', '/v1/roles', { token: revoked.key, org: org.slug });
    expect(afterRevoke).toMatchObject({ status: 401, body: { code: 'API_KEY_REVOKED' } });

    const expiring = await createApiKey(app, org, ['roles.read'], { expiresAt: new Date(Date.now() + 60_000).toISOString() });
    await query(app, `UPDATE api_keys SET "expiresAt" = now() - interval '1 second' WHERE id = $1`, [expiring.apiKey.id]);
    const afterExpiry = await api(app, 'GET', '/v1/roles', { token: expiring.key, org: org.slug });
    expect(afterExpiry).toMatchObject({ status: 401, body: { code: 'API_KEY_EXPIRED' } });
  });

  it("3. X-Service-Org must name the key's own organisation (403 ORG_MISMATCH)", async () => {
    const { key } = await createApiKey(app, org, ['roles.read']);
    for (const slug of [other.slug, 'does-not-exist']) {
      const res = await api(app, 'GET', '/v1/roles', { token: key, org: slug });
      expect(res).toMatchObject({ status: 403, body: { code: 'ORG_MISMATCH' } });
    }
  });

  it('4. a missing scope yields 404, never 403', async () => {
    const { key } = await createApiKey(app, org, ['events.read']);
    for (const [method, path, body] of [
      ['GET', '/v1/roles', undefined],
      ['POST', '/v1/roles', { name: 'x', permissions: ['a.b'] }],
      ['GET', '/v1/user-account-roles', undefined],
    ] as const) {
      const res = await api(app, method, path, { token: key, org: org.slug, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.code).toBe('NOT_FOUND');
    }
  });

  it('5. routes for signed-in people (/me/*, /api-keys) refuse API keys with 403 SIGNED_IN_USER_REQUIRED', async () => {
    const { key, apiKey } = await createApiKey(app, org, ['*.*']);
    for (const [method, path] of [
      ['GET', '/v1/me'],
      ['GET', '/v1/me/organisations'],
      ['GET', '/v1/me/roles'],
      ['GET', '/v1/me/permissions'],
      ['GET', '/v1/api-keys'],
      ['POST', '/v1/api-keys'],
      ['POST', `/v1/api-keys/${apiKey.id}/revoke`],
    ] as const) {
      const res = await api(app, method, path, {
        token: key,
        org: org.slug,
        body: method === 'POST' && path === '/v1/api-keys' ? { name: 'x', scopes: ['events.read'] } : undefined,
      });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.code).toBe('SIGNED_IN_USER_REQUIRED');
    }
  });

  it('6. an API key may mint embed sessions', async () => {
    const second = await createAccount(app, org, 'Widget account');
    const { key } = await createApiKey(app, org, ['role_assignments.read', 'events.read'], { accountId: second.id });
    const res = await api(app, 'POST', '/v1/embed/sessions', { token: key, org: org.slug, body: { scopes: ['events.read'] } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      token: expect.any(String),
      expiresAt: expect.any(String),
      accountId: second.id,
      organisation: { id: org.organisation.id, slug: org.slug },
    });
  });

  it('keeps lastUsedAt current', async () => {
    const { key, apiKey } = await createApiKey(app, org, ['roles.read']);
    const before = Date.now();
    await api(app, 'GET', '/v1/roles', { token: key, org: org.slug });
    const [row] = await query<{ lastUsedAt: Date }>(app, 'SELECT "lastUsedAt" FROM api_keys WHERE id = $1', [apiKey.id]);
    expect(row!.lastUsedAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
  });

  it("announces a key's changes to every API process, but not its last use (which no cached credential depends on)", async () => {
    const { key, apiKey } = await createApiKey(app, org, ['roles.read']);
    const listener = new pg.Client({ connectionString: app().database.url });
    await listener.connect();
    const notices: string[] = [];
    listener.on('notification', (notice) => notices.push(notice.payload ?? ''));
    await listener.query('LISTEN service_changes');
    try {
      await query(app, 'UPDATE api_keys SET "lastUsedAt" = now() - interval \'1 hour\' WHERE id = $1', [apiKey.id]);
      expect((await api(app, 'GET', '/v1/roles', { token: key, org: org.slug })).status).toBe(200);
      const [used] = await query<{ lastUsedAt: Date }>(app, 'SELECT "lastUsedAt" FROM api_keys WHERE id = $1', [apiKey.id]);
      expect(Date.now() - used!.lastUsedAt.getTime()).toBeLessThan(60_000);
      expect((await api(app, 'POST', `/v1/api-keys/${apiKey.id}/revoke`, { token: org.adminToken, org: org.slug })).status).toBe(200);
      const until = Date.now() + 5_000;
      while (!notices.includes(`${org.organisation.id} api_keys`) && Date.now() < until)
        await new Promise((resolve) => setTimeout(resolve, 50));
      // The revocation's notice, and none before it for the use (notices arrive in commit order).
      expect(notices.filter((notice) => notice.endsWith(' api_keys'))).toEqual([`${org.organisation.id} api_keys`]);
    } finally {
      await listener.end();
    }
  });

  it("another organisation's key id cannot be revoked (404)", async () => {
    const theirs = await createApiKey(app, other, ['roles.read']);
    expect((await api(app, 'POST', `/v1/api-keys/${theirs.apiKey.id}/revoke`, { token: org.adminToken, org: org.slug })).status).toBe(404);
    expect((await api(app, 'GET', '/v1/roles', { token: theirs.key, org: other.slug })).status).toBe(200);
  });
});

describe('embed sessions', () => {
  it('are pinned to one account, expire within an hour, and answer the current session', async () => {
    const second = await createAccount(app, org, 'Embed account');
    const { key } = await createApiKey(app, org, ['role_assignments.read', 'events.read'], { accountId: second.id });
    const created = await api(app, 'POST', '/v1/embed/sessions', { token: key, org: org.slug, body: {} });
    expect(created.status).toBe(201);
    const claims = decodeJwt(created.body.token);
    expect(claims).toMatchObject({
      typ: 'embed',
      acc: second.id,
      org: org.organisation.id,
      scopes: ['role_assignments.read', 'events.read'],
    });
    expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(3600);

    const current = await api(app, 'GET', '/v1/embed/sessions/current', { token: created.body.token, org: org.slug });
    expect(current.status).toBe(200);
    expect(current.body).toEqual({
      organisation: { id: org.organisation.id, slug: org.slug },
      accountId: second.id,
      scopes: ['role_assignments.read', 'events.read'],
      expiresAt: created.body.expiresAt,
    });
  });

  it('reach only their account and their scopes', async () => {
    const second = await createAccount(app, org, 'Scoped account');
    const { key } = await createApiKey(app, org, ['role_assignments.read']);
    const session = await api(app, 'POST', '/v1/embed/sessions', { token: key, org: org.slug, body: { accountId: second.id } });
    const token = session.body.token;
    const seen = await api(app, 'GET', '/v1/user-account-roles', { token, org: org.slug });
    expect(seen.status).toBe(200);
    expect(seen.body.assignments).toEqual([]);
    const adminsAccount = await api(app, 'GET', `/v1/user-account-roles?accountId=${org.account.id}`, { token, org: org.slug });
    expect(adminsAccount.body.assignments).toEqual([]);
    expect((await api(app, 'GET', '/v1/roles', { token, org: org.slug })).status).toBe(404);
    expect((await api(app, 'GET', '/v1/me', { token, org: org.slug })).body.code).toBe('SIGNED_IN_USER_REQUIRED');
    expect((await api(app, 'GET', '/v1/api-keys', { token, org: org.slug })).body.code).toBe('SIGNED_IN_USER_REQUIRED');
    expect((await api(app, 'GET', '/v1/roles', { token, org: other.slug })).body.code).toBe('ORG_MISMATCH');
    expect((await api(app, 'POST', '/v1/embed/sessions', { token, org: org.slug, body: {} })).status).toBe(404);
  });

  it('cannot be wider than the key, nor longer than an hour, nor for another account of a pinned key', async () => {
    const second = await createAccount(app, org, 'Pinned account');
    const { key } = await createApiKey(app, org, ['events.read'], { accountId: second.id });
    const wider = await api(app, 'POST', '/v1/embed/sessions', { token: key, org: org.slug, body: { scopes: ['events.write'] } });
    expect(wider.status).toBe(404);
    const longer = await api(app, 'POST', '/v1/embed/sessions', { token: key, org: org.slug, body: { expiresInSeconds: 7200 } });
    expect(longer.status).toBe(400);
    expect(longer.body.details[0].path).toBe('expiresInSeconds');
    const elsewhere = await api(app, 'POST', '/v1/embed/sessions', { token: key, org: org.slug, body: { accountId: org.account.id } });
    expect(elsewhere.status).toBe(404);
  });

  it('an expired embed token is refused with 401, and only embed tokens have a current session', async () => {
    const { key } = await createApiKey(app, org, ['events.read'], { accountId: org.account.id });
    const session = await api(app, 'POST', '/v1/embed/sessions', { token: key, org: org.slug, body: { expiresInSeconds: 60 } });
    await query(app, `UPDATE embed_sessions SET "expiresAt" = now() - interval '1 second'`);
    expect((await api(app, 'GET', '/v1/embed/sessions/current', { token: session.body.token, org: org.slug })).status).toBe(401);
    expect((await api(app, 'GET', '/v1/embed/sessions/current', { token: key, org: org.slug })).status).toBe(404);
  });

  it('signed-in staff may mint sessions within their own rights', async () => {
    const res = await graphql(
      app,
      'mutation($input: CreateEmbedSessionInput) { createEmbedSession(input: $input) { embedSession { accountId } userErrors { code } } }',
      { input: { accountId: org.account.id, scopes: ['events.read'] } },
      { token: org.adminToken, org: org.slug },
    );
    expect(res.body).toEqual({
      data: { createEmbedSession: { embedSession: { accountId: org.account.id }, userErrors: [] } },
      extensions: { cost: expect.any(Object) },
    });
  });
});

describe('where a key stands', () => {
  it('answers each key active, revoked or expired, and apiKeys(status:) lists those that stand so now, with updatedSince too', async () => {
    const standing = await createOrganisation(app, 'key-standing');
    const { apiKey: active } = await createApiKey(app, standing, ['events.read']);
    const { apiKey: later } = await createApiKey(app, standing, ['events.read'], {
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    const { apiKey: revoked } = await createApiKey(app, standing, ['events.read'], {
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    expect((await api(app, 'POST', `/v1/api-keys/${revoked.id}/revoke`, { ...asAdmin(standing), body: {} })).status).toBe(200);
    const { apiKey: expired } = await createApiKey(app, standing, ['events.read'], {
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    });
    // Time passes for one of them: its expiry is behind it.
    await query(app, `UPDATE api_keys SET "expiresAt" = now() - interval '1 minute' WHERE id = $1`, [expired.id]);
    const listed = async (variables: Record<string, unknown>) => {
      const res = await graphql(
        app,
        'query ($status: ApiKeyStatus, $since: DateTime) { apiKeys(status: $status, updatedSince: $since, first: 100) { nodes { id status } } }',
        variables,
        asAdmin(standing),
      );
      expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
      return (res.body.data.apiKeys.nodes as Array<{ id: string; status: string }>).map((node) => [node.id, node.status]).sort();
    };
    const mine = [active, later, revoked, expired].map((key) => key.id);
    const all = (await listed({})).filter(([id]) => mine.includes(id!));
    expect(all).toEqual(
      [
        [active.id, 'ACTIVE'],
        [later.id, 'ACTIVE'],
        [revoked.id, 'REVOKED'],
        [expired.id, 'EXPIRED'],
      ].sort(),
    );
    for (const status of ['ACTIVE', 'REVOKED', 'EXPIRED']) {
      const only = (await listed({ status })).filter(([id]) => mine.includes(id!));
      expect(only).toEqual(all.filter(([, standing]) => standing === status));
    }
    // Both conditions hold together: of the active keys, those changed within the hour.
    await query(app, `UPDATE api_keys SET "createdAt" = now() - interval '2 hours', "lastUsedAt" = NULL WHERE id = $1`, [active.id]);
    const since = new Date(Date.now() - 3_600_000).toISOString();
    expect((await listed({ status: 'ACTIVE', since })).filter(([id]) => mine.includes(id!))).toEqual([[later.id, 'ACTIVE']]);
  });
});
