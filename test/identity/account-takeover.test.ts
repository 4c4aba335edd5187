import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, signIn, systemRole, tag, type TestOrganisation } from '../support/fixtures.ts';
import { mailedInvitationCode } from '../support/mail.ts';
import { authorizationCodeFlow, providerRegistration, startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { newId } from '../../src/ids.ts';

/**
 * A person's global credentials are created or changed only by that person
 * proving control of the email (the mailed code), never by an invitation code someone else was
 * shown; an invitation to an existing person joins them only once they sign in as themselves; a
 * tenant's identity provider signs people into its own organisation only.
 *
 * The identity provider is a real OpenID provider on loopback, so the app allows private IdP
 * URLs (IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS, decided in security-decisions.md).
 */

const app = useTestApp({ IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: 'true' });
let op: TestOidcProvider;

beforeAll(async () => {
  op = await startOidcProvider();
});
afterAll(async () => {
  await op?.stop();
});

const outcome = (res: { status: number; body: any }) => ({ status: res.status, code: res.body?.code });

/** An organisation whose administrator registered the test OpenID provider through the API. */
async function organisationWithProvider(prefix: string): Promise<TestOrganisation> {
  const org = await createOrganisation(app, prefix);
  const res = await api(app, 'POST', '/v1/identity-providers', {
    token: org.adminToken,
    org: org.slug,
    body: providerRegistration(op),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return org;
}

async function invite(org: TestOrganisation, email: string) {
  const res = await api(app, 'POST', '/v1/user-invitations', {
    token: org.adminToken,
    org: org.slug,
    body: { organisationId: org.organisation.id, email, roleIds: [systemRole(org, 'viewer')] },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.invitation as { id: string; userId: string; code: string };
}

const redeem = (code: string, password?: string, token?: string) =>
  api(app, 'POST', '/v1/auth/invitations/redeem', {
    body: { code, ...(password === undefined ? {} : { password }) },
    ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
  });

const federate = (token: string, slug: string) => api(app, 'POST', '/v1/auth/federate', { body: { token }, org: slug });

/** A token the (attacker-run) identity provider signs with its real key, asserting whatever it likes. */
function assertion(claims: Record<string, unknown>) {
  const now = Math.floor(Date.now() / 1000);
  return op.signWithProviderKey({ iss: op.issuer, aud: op.clientId, iat: now, exp: now + 300, ...claims });
}

async function organisationsOf(token: string, slug: string): Promise<string[]> {
  const res = await api(app, 'GET', '/v1/me/organisations', { token, org: slug });
  expect(res.status).toBe(200);
  return res.body.organisations.map((o: { id: string }) => o.id).sort();
}

async function userRow(userId: string) {
  const [row] = await query<{ status: string; personId: string | null; identityProviderId: string | null }>(
    app,
    'SELECT status, "personId", "identityProviderId" FROM users WHERE id = $1',
    [userId],
  );
  return row;
}

describe('cross-tenant takeover through an invitation code', () => {
  it("an administrator of A cannot give a stranger's email a password of its choosing, so cannot later sign into B as them", async () => {
    const attacker = await createOrganisation(app, 'evil');
    const victimEmail = `victim-${tag()}@victim.test`;
    const attackerPassword = 'attacker chose this';

    // Every code the API shows the attacker (create, list, get, resend) is tried.
    const created = await invite(attacker, victimEmail);
    const shown = [created.code];
    const list = await api(app, 'GET', '/v1/user-invitations?limit=100', { token: attacker.adminToken, org: attacker.slug });
    shown.push(...list.body.invitations.filter((i: { id: string }) => i.id === created.id).map((i: { code: string }) => i.code));
    const one = await api(app, 'GET', `/v1/user-invitations/${created.id}`, { token: attacker.adminToken, org: attacker.slug });
    shown.push(one.body.invitation.code);
    const resent = await api(app, 'POST', `/v1/user-invitations/${created.id}/resend`, { token: attacker.adminToken, org: attacker.slug });
    expect(resent.status).toBe(200);
    shown.push(resent.body.invitation.code);
    const answers = [];
    for (const code of new Set(shown)) answers.push(outcome(await redeem(code, attackerPassword)));
    expect(answers).toEqual([...new Set(shown)].map(() => ({ status: 404, code: 'NOT_FOUND' })));
    expect(await query(app, 'SELECT id FROM people WHERE email = $1', [victimEmail])).toEqual([]);

    // Later the real owner of the email joins B, signing in with B's identity provider.
    const b = await organisationWithProvider('victim-b');
    const bInvitation = await invite(b, victimEmail);
    const owner = { accountId: `sub-${tag()}`, email: victimEmail, password: 'the owner at the provider' };
    op.addAccount(owner);
    const owned = await federate((await authorizationCodeFlow(op, owner)).idToken, b.slug);
    expect(owned.status).toBe(200);
    expect((await userRow(bInvitation.userId))?.status).toBe('active');

    // The attacker's password opens nothing, anywhere.
    const intoB = await api(app, 'POST', '/v1/auth/login', { org: b.slug, body: { email: victimEmail, password: attackerPassword } });
    expect(outcome(intoB)).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
    const anywhere = await api(app, 'POST', '/v1/auth/login', { body: { email: victimEmail, password: attackerPassword } });
    expect(outcome(anywhere)).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
  });
});

describe('an invitation to an email that already has a person', () => {
  it('joins that person only when they sign in as themselves: wrong password 401, their own access token (no password) 200', async () => {
    const victim = await createOrganisation(app, 'owner');
    const inviter = await createOrganisation(app, 'inviter');
    const invitation = await invite(inviter, victim.email);
    const code = await mailedInvitationCode(app, invitation.id);

    const guessed = await redeem(code, 'someone else chose this');
    expect(outcome(guessed)).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
    expect((await userRow(invitation.userId))?.status).toBe('pending');

    // The person proves who they are with their own session instead of typing the password.
    const own = await redeem(code, undefined, victim.adminToken);
    expect(own.status).toBe(200);
    expect(own.body.user).toMatchObject({ id: victim.user.personId, email: victim.email });
    expect(decodeJwt(own.body.accessToken).org).toBe(inviter.organisation.id);
    expect(await userRow(invitation.userId)).toMatchObject({ status: 'active', personId: victim.user.personId });
    await expect(signIn(app, victim.email, victim.password, inviter.slug)).resolves.toMatchObject({ user: { id: victim.user.personId } });
  });

  it('a code alone never joins a person without a password (they sign in elsewhere): 401, nothing joined, no password created', async () => {
    const email = `sso-only-${tag()}@elsewhere.test`;
    const personId = newId('person');
    await app().runtime.db.person.create({ data: { id: personId, email } });
    const inviter = await createOrganisation(app, 'code-holder');
    const invitation = await invite(inviter, email);
    const code = await mailedInvitationCode(app, invitation.id);

    const res = await redeem(code, 'a password of my choosing');

    expect(outcome(res)).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
    expect(await userRow(invitation.userId)).toMatchObject({ status: 'pending', personId: null });
    expect(await query(app, 'SELECT 1 FROM password_credentials WHERE "personId" = $1', [personId])).toEqual([]);
    expect(await query(app, 'SELECT 1 FROM refresh_tokens WHERE "personId" = $1', [personId])).toEqual([]);
  });
});

describe("a tenant's identity provider signs people into its own organisation only", () => {
  it("asserting another organisation's administrator gives an organisation-only person: no link, nothing revealed, the owner untouched", async () => {
    const victim = await createOrganisation(app, 'target');
    const attacker = await organisationWithProvider('idp-evil');
    const pending = await invite(attacker, victim.email);

    const res = await federate(await assertion({ sub: `evil-${tag()}`, email: victim.email, email_verified: true }), attacker.slug);

    expect(res.status).toBe(200);
    expect(res.body.user.id).not.toBe(victim.user.personId);
    expect(decodeJwt(res.body.accessToken).org).toBe(attacker.organisation.id);
    expect(await organisationsOf(res.body.accessToken, attacker.slug)).toEqual([attacker.organisation.id]);
    expect((await userRow(pending.userId))?.personId).not.toBe(victim.user.personId);
    // The real owner: password still works, and their organisations do not include the attacker's.
    const owner = await signIn(app, victim.email, victim.password, victim.slug);
    expect(await organisationsOf(owner.accessToken, victim.slug)).toEqual([victim.organisation.id]);
    const intoVictim = await api(app, 'GET', '/v1/roles', { token: res.body.accessToken, org: victim.slug });
    expect(outcome(intoVictim)).toEqual({ status: 403, code: 'ORG_MISMATCH' });
  });

  it('an active user who signs in with a password (a global person) is refused (401, says to use the password), not linked', async () => {
    const victim = await createOrganisation(app, 'member');
    const attacker = await organisationWithProvider('idp-member');
    // The victim accepted an invitation to the attacker's organisation, proving their password.
    const invitation = await invite(attacker, victim.email);
    const accepted = await redeem(await mailedInvitationCode(app, invitation.id), victim.password);
    expect(accepted.status).toBe(200);

    const res = await federate(await assertion({ sub: `evil-${tag()}`, email: victim.email, email_verified: true }), attacker.slug);

    expect(outcome(res)).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
    expect(res.body.error).toMatch(/password/i);
    expect(await userRow(invitation.userId)).toMatchObject({ status: 'active', personId: victim.user.personId, identityProviderId: null });
    expect(
      await query(app, 'SELECT 1 FROM refresh_tokens WHERE "personId" = $1 AND "organisationId" = $2', [
        victim.user.personId,
        attacker.organisation.id,
      ]),
    ).toHaveLength(1);
  });

  it('a token without email_verified is not matched by email (401), the invitee stays pending', async () => {
    const org = await organisationWithProvider('unverified');
    const email = `unverified-${tag()}@example.test`;
    const invitation = await invite(org, email);

    const res = await federate(await assertion({ sub: `unverified-${tag()}`, email }), org.slug);

    expect(outcome(res)).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
    expect(await userRow(invitation.userId)).toMatchObject({ status: 'pending', personId: null, identityProviderId: null });
    expect(await query(app, 'SELECT id FROM people WHERE email = $1', [email])).toEqual([]);
  });
});
