import { randomBytes } from 'node:crypto';
import { decodeJwt, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { api, createOrganisation, graphql, systemRole, type TestOrganisation } from '../support/fixtures.ts';
import { authorizationCodeFlow, providerRegistration, startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';

// The test's OpenID provider listens on loopback.
const app = useTestApp({ IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: 'true' });
let op: TestOidcProvider;
beforeAll(async () => {
  op = await startOidcProvider();
});
afterAll(async () => {
  await op?.stop();
});

/** An organisation whose admin configured the test provider through our API. */
async function organisationWithProvider(overrides: Record<string, unknown> = {}) {
  const org = await createOrganisation(app, 'fed');
  const res = await api(app, 'POST', '/v1/identity-providers', {
    token: org.adminToken,
    org: org.slug,
    body: { ...providerRegistration(op), ...overrides },
  });
  expect(res.status).toBe(201);
  return { org, provider: res.body.provider as { id: string } };
}

/** A person known to the identity provider, with a fresh email. */
function identity(domain = 'example.test') {
  const tag = randomBytes(4).toString('hex');
  const account = { accountId: `sub-${tag}`, email: `person-${tag}@${domain}`, password: `secret ${tag}`, givenName: 'Ada' };
  op.addAccount(account);
  return account;
}

/** A pending user of the organisation, invited (as viewer) through the invitations API. */
async function invite(org: TestOrganisation, email: string) {
  const res = await api(app, 'POST', '/v1/user-invitations', {
    token: org.adminToken,
    org: org.slug,
    body: { organisationId: org.organisation.id, email, roleIds: [systemRole(org, 'viewer')] },
  });
  expect(res.status).toBe(201);
  return res.body.invitation as { id: string; userId: string };
}

const federate = (token: string, org?: string) => api(app, 'POST', '/v1/auth/federate', { body: { token }, ...(org ? { org } : {}) });

function expectRefused(res: { status: number; body: { code: string; error: string } }, message: RegExp) {
  expect(res.status).toBe(401);
  expect(res.body.code).toBe('UNAUTHENTICATED');
  expect(res.body.error).toMatch(message);
}

describe('POST /v1/auth/federate', () => {
  it('signs an invited user in with a real ID token (authorization code + PKCE S256) and links the identity', async () => {
    const { org } = await organisationWithProvider({ emailDomain: 'example.test' });
    const person = identity();
    const invitation = await invite(org, person.email);

    const flow = await authorizationCodeFlow(op, person);
    expect(flow.steps).toEqual([
      'GET /auth -> 303',
      expect.stringMatching(/^GET \/interaction\/\S+ -> 200$/),
      expect.stringMatching(/^POST \/interaction\/\S+\/login -> 303$/),
      expect.stringMatching(/^GET \/auth\/\S+ -> 303$/),
      expect.stringMatching(/^GET \/interaction\/\S+ -> 200$/),
      expect.stringMatching(/^POST \/interaction\/\S+\/confirm -> 303$/),
      expect.stringMatching(/^GET \/auth\/\S+ -> 303$/),
      'POST /token -> 200',
    ]);
    expect(decodeJwt(flow.idToken)).toMatchObject({ iss: op.issuer, aud: op.clientId, sub: person.accountId, email: person.email });

    const res = await federate(flow.idToken);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      accessToken: expect.any(String),
      refreshToken: expect.stringMatching(/^svrt_/),
      expiresAt: expect.any(String),
      user: { id: expect.stringMatching(/^usr_/), email: person.email, firstName: 'Ada', lastName: null },
    });
    expect(decodeJwt(res.body.accessToken)).toMatchObject({ typ: 'access', sub: res.body.user.id, org: org.organisation.id });

    const me = await api(app, 'GET', '/v1/me', { token: res.body.accessToken, org: org.slug });
    expect(me.status).toBe(200);
    expect(me.body.user).toEqual({
      id: res.body.user.id,
      email: person.email,
      firstName: 'Ada',
      lastName: null,
      identityProvider: 'oidc',
      externalUserId: person.accountId,
    });

    const linked = await app().runtime.db.user.findUniqueOrThrow({ where: { id: invitation.userId } });
    expect(linked).toMatchObject({ status: 'active', personId: res.body.user.id, externalUserId: person.accountId });
    const redeemed = await api(app, 'GET', `/v1/user-invitations/${invitation.id}`, { token: org.adminToken, org: org.slug });
    expect(redeemed.body.invitation.redeemedAt).toEqual(expect.any(String));
    const roles = await api(app, 'GET', '/v1/me/roles', { token: res.body.accessToken, org: org.slug });
    expect(roles.body.roles).toEqual([expect.objectContaining({ name: 'Viewer', accountId: org.account.id })]);
  });

  it('a second federation of the same identity signs in the same user', async () => {
    const { org } = await organisationWithProvider();
    const person = identity();
    const { userId } = await invite(org, person.email);
    const first = await federate((await authorizationCodeFlow(op, person)).idToken);
    const second = await federate((await authorizationCodeFlow(op, person)).idToken);
    expect(second.status).toBe(200);
    expect(second.body.user.id).toBe(first.body.user.id);
    const users = await app().runtime.db.user.findMany({ where: { organisationId: org.organisation.id, email: person.email } });
    expect(users.map((u) => u.id)).toEqual([userId]);
  });

  it("never links a person of the global realm (one who signs in with a password): the organisation's provider vouches for its own people only", async () => {
    const { org } = await organisationWithProvider();
    const admin = { accountId: `sub-admin-${randomBytes(3).toString('hex')}`, email: org.email, password: 'at the provider' };
    op.addAccount(admin);
    const res = await federate((await authorizationCodeFlow(op, admin)).idToken, org.slug);
    expect(res.status).toBe(401);
    expect(res.body.error).toMatch(/signs in with a password/);
    const user = await app().runtime.db.user.findUniqueOrThrow({ where: { id: org.user.id } });
    expect(user).toMatchObject({ identityProviderId: null, externalUserId: null, personId: org.user.personId });
  });

  it('fetches the JWKS once and serves later verifications from the cache', async () => {
    const { org } = await organisationWithProvider({ cacheTtl: 600 });
    const person = identity();
    await invite(org, person.email);
    const tokens = [(await authorizationCodeFlow(op, person)).idToken, (await authorizationCodeFlow(op, person)).idToken];
    const before = op.jwksRequests();
    expect((await federate(tokens[0]!, org.slug)).status).toBe(200);
    expect(op.jwksRequests()).toBe(before + 1);
    expect((await federate(tokens[1]!, org.slug)).status).toBe(200);
    expect(op.jwksRequests()).toBe(before + 1);
  });

  it('with cacheTtl 0 fetches the JWKS for every verification', async () => {
    const { org } = await organisationWithProvider({ cacheTtl: 0 });
    const person = identity();
    await invite(org, person.email);
    const { idToken } = await authorizationCodeFlow(op, person);
    const before = op.jwksRequests();
    expect((await federate(idToken, org.slug)).status).toBe(200);
    expect((await federate(idToken, org.slug)).status).toBe(200);
    expect(op.jwksRequests()).toBe(before + 2);
  });

  it("answers 503 UNAVAILABLE when the provider's JWKS cannot be fetched (not the token's fault)", async () => {
    const { org } = await organisationWithProvider({ jwksUri: 'http://127.0.0.1:9/jwks' });
    const person = identity();
    await invite(org, person.email);
    const res = await federate((await authorizationCodeFlow(op, person)).idToken, org.slug);
    expect(res.status).toBe(503);
    expect(res.body.code).toBe('UNAVAILABLE');
  });

  it('GraphQL federate answers the same sign-in result', async () => {
    const { org } = await organisationWithProvider();
    const person = identity();
    await invite(org, person.email);
    const res = await graphql(
      app,
      'mutation ($input: FederateInput!) { federate(input: $input) { session { accessToken user { email } } } }',
      {
        input: { token: (await authorizationCodeFlow(op, person)).idToken },
      },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.federate.session.user.email).toBe(person.email);
    expect(decodeJwt(res.body.data.federate.session.accessToken).org).toBe(org.organisation.id);
  });

  it('an identity invited by two organisations must name one with X-Service-Org (400 ORG_REQUIRED)', async () => {
    const [a, b] = await Promise.all([organisationWithProvider(), organisationWithProvider()]);
    const person = identity();
    await invite(a.org, person.email);
    await invite(b.org, person.email);
    const { idToken } = await authorizationCodeFlow(op, person);
    const ambiguous = await federate(idToken);
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.body.code).toBe('ORG_REQUIRED');
    const named = await federate(idToken, b.org.slug);
    expect(named.status).toBe(200);
    expect(decodeJwt(named.body.accessToken).org).toBe(b.org.organisation.id);
  });
});

describe('POST /v1/auth/federate refusals (401 UNAUTHENTICATED)', () => {
  it('refuses an identity that is no user of the organisation (no self-sign-up)', async () => {
    const { org } = await organisationWithProvider();
    const stranger = identity();
    const { idToken } = await authorizationCodeFlow(op, stranger);
    expectRefused(await federate(idToken, org.slug), /No user of the organisation has this email/);
    // Without X-Service-Org every organisation trusting the issuer was tried: no one's reason is told.
    expectRefused(await federate(idToken), /^No organisation accepts this identity/);
    expect(await app().runtime.db.person.findMany({ where: { email: stranger.email } })).toEqual([]);
  });

  it('refuses a token issued to another client (wrong audience)', async () => {
    const { org } = await organisationWithProvider();
    const person = identity();
    await invite(org, person.email);
    const { idToken } = await authorizationCodeFlow(op, person, { clientId: op.otherClientId });
    expect(decodeJwt(idToken).aud).toBe(op.otherClientId);
    expectRefused(await federate(idToken, org.slug), /audience/);
  });

  it('refuses a token of an issuer the organisation does not trust (wrong issuer)', async () => {
    const { org } = await organisationWithProvider();
    const person = identity();
    await invite(org, person.email);
    const token = await op.signWithProviderKey({
      iss: `${op.issuer}/elsewhere`,
      aud: op.clientId,
      sub: person.accountId,
      email: person.email,
      iat: Math.floor(Date.now() / 1000),
      exp: Math.floor(Date.now() / 1000) + 300,
    });
    expectRefused(await federate(token, org.slug), /No enabled identity provider trusts the issuer/);
  });

  it('refuses an expired token', async () => {
    const { org } = await organisationWithProvider();
    const person = identity();
    await invite(org, person.email);
    const now = Math.floor(Date.now() / 1000);
    const token = await op.signWithProviderKey({
      iss: op.issuer,
      aud: op.clientId,
      sub: person.accountId,
      email: person.email,
      iat: now - 3600,
      exp: now - 120,
    });
    expectRefused(await federate(token, org.slug), /expired/);
  });

  it("refuses a token signed with a key that is not the provider's (foreign key, real iss and aud)", async () => {
    const { org } = await organisationWithProvider();
    const person = identity();
    await invite(org, person.email);
    const { privateKey } = await generateKeyPair('RS256');
    const token = await new SignJWT({ email: person.email })
      .setProtectedHeader({ alg: 'RS256', kid: op.kid })
      .setIssuer(op.issuer)
      .setAudience(op.clientId)
      .setSubject(person.accountId)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    expectRefused(await federate(token, org.slug), /signature/);
  });

  it('refuses tokens of a disabled provider', async () => {
    const { org, provider } = await organisationWithProvider();
    const person = identity();
    await invite(org, person.email);
    const { idToken } = await authorizationCodeFlow(op, person);
    const disable = (isEnabled: boolean) =>
      api(app, 'PATCH', `/v1/identity-providers/${provider.id}`, { token: org.adminToken, org: org.slug, body: { isEnabled } });
    expect((await disable(false)).status).toBe(200);
    expectRefused(await federate(idToken, org.slug), /No enabled identity provider/);
    expect((await disable(true)).status).toBe(200);
    expect((await federate(idToken, org.slug)).status).toBe(200);
  });

  it("refuses an email outside the provider's emailDomain", async () => {
    const { org } = await organisationWithProvider({ emailDomain: 'corp.example' });
    const person = identity('example.test');
    await invite(org, person.email);
    expectRefused(await federate((await authorizationCodeFlow(op, person)).idToken, org.slug), /email domain/);
  });

  it('an invited user whose invitation has expired is answered 410 GONE', async () => {
    const { org } = await organisationWithProvider();
    const person = identity();
    const invitation = await invite(org, person.email);
    await app().runtime.db.invitation.update({ where: { id: invitation.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const res = await federate((await authorizationCodeFlow(op, person)).idToken, org.slug);
    expect(res.status).toBe(410);
    expect(res.body.code).toBe('GONE');
    const user = await app().runtime.db.user.findUniqueOrThrow({ where: { id: invitation.userId } });
    expect(user).toMatchObject({ status: 'pending', identityProviderId: null, personId: null });
  });

  it('refuses what is not a JWT at all, and an empty token is a validation error', async () => {
    expectRefused(await federate('not-a-jwt'), /not a JWT/);
    const empty = await federate('');
    expect(empty.status).toBe(400);
    expect(empty.body.details).toEqual([{ path: 'token', message: expect.any(String) }]);
  });
});
