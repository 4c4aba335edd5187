import { decodeJwt, decodeProtectedHeader } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { query } from '../support/db.ts';
import {
  api,
  createAccount,
  createOrganisation,
  createStaffUser,
  graphql,
  signIn,
  systemRole,
  type TestOrganisation,
} from '../support/fixtures.ts';

const app = useTestApp();
let org: TestOrganisation;
beforeAll(async () => {
  org = await createOrganisation(app, 'auth');
});

describe('POST /v1/auth/login', () => {
  it('answers tokens and the user; the access token is a JWT with a kid, carrying the chosen organisation', async () => {
    const res = await api(app, 'POST', '/v1/auth/login', { org: org.slug, body: { email: org.email, password: org.password } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      accessToken: expect.any(String),
      refreshToken: expect.stringMatching(/^svrt_/),
      expiresAt: expect.any(String),
      user: { id: org.user.personId, email: org.email, firstName: null, lastName: null },
    });
    expect(decodeProtectedHeader(res.body.accessToken)).toMatchObject({ alg: 'HS256', kid: expect.any(String) });
    const claims = decodeJwt(res.body.accessToken);
    expect(claims).toMatchObject({ typ: 'access', sub: org.user.personId, org: org.organisation.id });
    expect(claims.exp! - claims.iat!).toBe(15 * 60);
  });

  it('without X-Service-Org signs in without an organisation', async () => {
    const res = await api(app, 'POST', '/v1/auth/login', { body: { email: org.email, password: org.password } });
    expect(res.status).toBe(200);
    expect(decodeJwt(res.body.accessToken).org).toBeUndefined();
  });

  it('refuses a wrong password and an unknown email alike, with 401 UNAUTHENTICATED', async () => {
    const wrong = await api(app, 'POST', '/v1/auth/login', { body: { email: org.email, password: 'nope' } });
    const unknown = await api(app, 'POST', '/v1/auth/login', { body: { email: 'nobody@x.test', password: 'nope' } });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body.code).toBe('UNAUTHENTICATED');
    expect(unknown.body.error).toBe(wrong.body.error);
  });

  it('refuses an organisation the person is not in, or that does not exist, with 403 ORG_MISMATCH', async () => {
    const other = await createOrganisation(app, 'other');
    const res = await api(app, 'POST', '/v1/auth/login', { org: other.slug, body: { email: org.email, password: org.password } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('ORG_MISMATCH');
    const missing = await api(app, 'POST', '/v1/auth/login', { org: 'no-such-org', body: { email: org.email, password: org.password } });
    expect(missing.status).toBe(403);
  });

  it('validates the body, naming the fields', async () => {
    const res = await api(app, 'POST', '/v1/auth/login', { body: { email: 'not-an-email', password: '' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['email', 'password']);
  });

  it('stores the password as an argon2id hash only', async () => {
    const rows = await query<{ passwordHash: string }>(app, 'SELECT "passwordHash" FROM password_credentials');
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row.passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  });
});

describe('refresh tokens', () => {
  it('rotate: each refresh answers a new pair and the old refresh token stops working', async () => {
    const first = await signIn(app, org.email, org.password, org.slug);
    const second = await api(app, 'POST', '/v1/auth/refresh', { body: { refreshToken: first.refreshToken } });
    expect(second.status).toBe(200);
    expect(Object.keys(second.body).sort()).toEqual(['accessToken', 'refreshToken']);
    expect(second.body.refreshToken).not.toBe(first.refreshToken);
    expect(decodeJwt(second.body.accessToken).org).toBe(org.organisation.id);
    const me = await api(app, 'GET', '/v1/me', { token: second.body.accessToken, org: org.slug });
    expect(me.status).toBe(200);
  });

  it('a reused refresh token is refused and its whole family revoked', async () => {
    const first = await signIn(app, org.email, org.password, org.slug);
    const second = await api(app, 'POST', '/v1/auth/refresh', { body: { refreshToken: first.refreshToken } });
    const reuse = await api(app, 'POST', '/v1/auth/refresh', { body: { refreshToken: first.refreshToken } });
    expect(reuse.status).toBe(401);
    expect(reuse.body.code).toBe('UNAUTHENTICATED');
    const descendant = await api(app, 'POST', '/v1/auth/refresh', { body: { refreshToken: second.body.refreshToken } });
    expect(descendant.status).toBe(401);
    const rows = await query<{ tokenHash: string }>(app, 'SELECT "tokenHash" FROM refresh_tokens');
    for (const row of rows) expect(row.tokenHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('sign-out revokes the family', async () => {
    const session = await signIn(app, org.email, org.password);
    const out = await api(app, 'POST', '/v1/auth/logout', { body: { refreshToken: session.refreshToken } });
    expect(out).toMatchObject({ status: 200, body: { success: true } });
    const after = await api(app, 'POST', '/v1/auth/refresh', { body: { refreshToken: session.refreshToken } });
    expect(after.status).toBe(401);
  });

  it('refuses an empty or unknown refresh token', async () => {
    expect((await api(app, 'POST', '/v1/auth/refresh', { body: {} })).body.code).toBe('VALIDATION_FAILED');
    expect((await api(app, 'POST', '/v1/auth/refresh', { body: { refreshToken: 'svrt_nope' } })).status).toBe(401);
  });
});

describe('access tokens', () => {
  it('refuses a tampered, foreign-signed or expired token with 401', async () => {
    const [h, p, s] = org.adminToken.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...decodeJwt(org.adminToken), sub: 'usr_other' })).toString('base64url')}.${s}`;
    expect((await api(app, 'GET', '/v1/me', { token: tampered, org: org.slug })).status).toBe(401);
    expect(p).toBeTruthy();

    const { SignJWT } = await import('jose');
    const foreign = await new SignJWT({ typ: 'access' })
      .setProtectedHeader({ alg: 'HS256', kid: decodeProtectedHeader(org.adminToken).kid! })
      .setSubject(org.user.personId)
      .setIssuer('ticketing-service')
      .setAudience('ticketing-management')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode('a'.repeat(32)));
    expect((await api(app, 'GET', '/v1/me', { token: foreign, org: org.slug })).body.code).toBe('UNAUTHENTICATED');

    const expired = await app().runtime.tokens.sign({ typ: 'access', sub: org.user.personId }, new Date(Date.now() - 1000));
    const res = await api(app, 'GET', '/v1/me', { token: expired, org: org.slug });
    expect(res.status).toBe(401);
    expect(res.body.error).toMatch(/expired/);
  });

  it('a token carrying one organisation is refused in another with 403 ORG_MISMATCH', async () => {
    const other = await createOrganisation(app, 'mismatch');
    const res = await api(app, 'GET', '/v1/me', { token: org.adminToken, org: other.slug });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('ORG_MISMATCH');
  });
});

describe('/me', () => {
  it('GET /me answers the current user', async () => {
    const res = await api(app, 'GET', '/v1/me', { token: org.adminToken, org: org.slug });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      user: { id: org.user.personId, email: org.email, firstName: null, lastName: null, identityProvider: null, externalUserId: null },
    });
  });

  it('GET /me/organisations lists every organisation of the person with their user id there', async () => {
    const res = await api(app, 'GET', '/v1/me/organisations', { token: org.adminToken, org: org.slug });
    expect(res.status).toBe(200);
    expect(res.body.organisations).toEqual([
      {
        id: org.organisation.id,
        slug: org.slug,
        name: org.organisation.name,
        userId: org.user.id,
        primaryColor: null,
        secondaryColor: null,
        logoUrl: null,
      },
    ]);
  });

  it('one role held on two accounts is two assignments with ids of their own in the graph; /v1 still names the role', async () => {
    const second = await createAccount(app, org, 'Box office');
    const viewer = systemRole(org, 'viewer');
    const staff = await createStaffUser(app, org, [
      { roleId: viewer, accountId: org.account.id },
      { roleId: viewer, accountId: second.id },
    ]);
    const graph = await graphql(app, '{ myRoles { roles { id roleId accountId } } }', {}, { token: staff.token, org: org.slug });
    const byAccount = <T extends { accountId: string }>(list: T[]) => [...list].sort((a, b) => a.accountId.localeCompare(b.accountId));
    expect(byAccount(graph.body.data.myRoles.roles)).toEqual(
      byAccount(staff.assignments.map((assignment) => ({ id: assignment.id, roleId: viewer, accountId: assignment.accountId }))),
    );
    const rest = await api(app, 'GET', '/v1/me/roles', { token: staff.token, org: org.slug });
    expect(byAccount(rest.body.roles as Array<{ id: string; accountId: string }>).map((role) => [role.id, role.accountId])).toEqual(
      byAccount([
        { id: viewer, accountId: org.account.id },
        { id: viewer, accountId: second.id },
      ]).map((role) => [role.id, role.accountId]),
    );
  });

  it('GET /me/roles answers the assignments and isOrgAdmin', async () => {
    const res = await api(app, 'GET', '/v1/me/roles', { token: org.adminToken, org: org.slug });
    expect(res.body).toEqual({
      roles: [
        {
          id: org.assignment.roleId,
          name: 'Organisation admin',
          description: expect.any(String),
          accountId: org.account.id,
          isSystemRole: true,
        },
      ],
      isOrgAdmin: true,
    });
  });

  it('GET /me/permissions answers entries, isOrgAdmin and the filters', async () => {
    const all = await api(app, 'GET', '/v1/me/permissions', { token: org.adminToken, org: org.slug });
    expect(all.body).toEqual({
      permissions: [{ permission: '*.*', accounts: ['all'], isAllAccounts: true }],
      isOrgAdmin: true,
      filters: { resource: null, action: null },
    });
    const filtered = await api(app, 'GET', '/v1/me/permissions?resource=events&action=read', { token: org.adminToken, org: org.slug });
    expect(filtered.body.filters).toEqual({ resource: 'events', action: 'read' });
    expect(filtered.body.permissions).toHaveLength(1);
    const bad = await api(app, 'GET', '/v1/me/permissions?resource=ev-ents', { token: org.adminToken, org: org.slug });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([{ path: 'query.resource', message: expect.any(String) }]);
  });

  it('needs X-Service-Org (400 ORG_REQUIRED) and a credential (401)', async () => {
    expect((await api(app, 'GET', '/v1/me', { token: org.adminToken })).body.code).toBe('ORG_REQUIRED');
    expect((await api(app, 'GET', '/v1/me', { org: org.slug })).status).toBe(401);
  });

  it('GraphQL answers the same fields', async () => {
    const res = await graphql(app, '{ me { id email } myRoles { isOrgAdmin } }', {}, { token: org.adminToken, org: org.slug });
    expect(res.body).toEqual({
      data: { me: { id: org.user.personId, email: org.email }, myRoles: { isOrgAdmin: true } },
      extensions: { cost: expect.any(Object) },
    });
    const anonymous = await graphql(app, '{ me { id } }', {}, { org: org.slug });
    expect(anonymous.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });
});
