import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { publicUrl } from '../../src/config.ts';
import { newId } from '../../src/ids.ts';
import { createLogger } from '../../src/log.ts';
import { INVITATION_TTL_MS } from '../../src/services/invitations.ts';
import { useTestApp } from '../support/app.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, graphql, signIn, systemRole, type SystemRoleKey, type TestOrganisation } from '../support/fixtures.ts';
import { mailedInvitationCode, mailTo } from '../support/mail.ts';

/** What the API logged, at info, through the service's own logger (its redaction included). */
const logs: string[] = [];
const app = useTestApp(
  { PUBLIC_URL: 'https://tickets.example.test', LOG_LEVEL: 'info' },
  { logger: createLogger('info', 'api', { write: (line: string) => void logs.push(line) }) },
);
let org: TestOrganisation;
let other: TestOrganisation;

beforeAll(async () => {
  org = await createOrganisation(app, 'inv');
  other = await createOrganisation(app, 'inv-other');
});

const INVITATION_KEYS = ['code', 'createdAt', 'email', 'expiresAt', 'id', 'organisationId', 'redeemedAt', 'userId'];
let emailCounter = 0;
const freshEmail = (label = 'person') => `${label}-${++emailCounter}-${Date.now()}@invitee.test`;

function invite(body: Record<string, unknown>, as: TestOrganisation | { token: string; slug: string } = org) {
  const token = 'adminToken' in as ? as.adminToken : as.token;
  return api(app, 'POST', '/v1/user-invitations', {
    token,
    org: as.slug,
    body: { organisationId: 'organisation' in as ? as.organisation.id : org.organisation.id, ...body },
  });
}

let redeemer = 0;
/**
 * Redeems from a client address of its own: failed redemptions are throttled per address (docs/security.md;
 * test/platform/throttling.test.ts covers that), which these tests are not about.
 */
function redeem(code: string, password?: string, headers: Record<string, string> = {}) {
  redeemer += 1;
  return api(app, 'POST', '/v1/auth/invitations/redeem', {
    body: { code, ...(password === undefined ? {} : { password }) },
    headers: { 'x-forwarded-for': `10.20.${redeemer >> 8}.${redeemer & 255}`, ...headers },
  });
}

const outbox = (to: string) => mailTo(app, to);
const mailedCode = (invitationId: string) => mailedInvitationCode(app, invitationId);

/** What the API shows of a code: its first four characters, not redeemable. */
const hintOf = (code: string) => `${code.slice(0, 4)}…`;

/** Invites with the given roles and redeems: a signed-in staff user of `org` holding exactly them. */
async function staffUser(roleKeys: SystemRoleKey[]) {
  const email = freshEmail('staff');
  const created = await invite({ email, roleIds: roleKeys.map((key) => systemRole(org, key)) });
  expect(created.status).toBe(201);
  const session = await redeem(await mailedCode(created.body.invitation.id), 'staff password');
  expect(session.status).toBe(200);
  return { email, userId: created.body.invitation.userId as string, token: session.body.accessToken as string, slug: org.slug };
}

describe('creating an invitation', () => {
  it('answers 201 {invitation} with the spec fields, a pending user with the roles, and mails the code and link', async () => {
    const email = freshEmail();
    const before = Date.now();
    const res = await invite({
      email: email.toUpperCase(),
      firstName: 'Ada',
      lastName: 'Lovelace',
      roleIds: [systemRole(org, 'event_manager')],
    });
    expect(res.status).toBe(201);
    const invitation = res.body.invitation;
    expect(Object.keys(invitation).sort()).toEqual(INVITATION_KEYS);
    expect(invitation).toMatchObject({
      id: expect.stringMatching(/^inv_[A-Za-z0-9]{22}$/),
      organisationId: org.organisation.id,
      userId: expect.stringMatching(/^usr_/),
      code: expect.stringMatching(/^[A-Za-z0-9_-]{4}…$/),
      email,
      redeemedAt: null,
    });
    const expiresAt = Date.parse(invitation.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(before + INVITATION_TTL_MS - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + INVITATION_TTL_MS + 1000);
    expect(INVITATION_TTL_MS).toBe(7 * 24 * 3600 * 1000);

    const [user] = await query<{ status: string; personId: string | null; firstName: string }>(
      app,
      'SELECT status, "personId", "firstName" FROM users WHERE id = $1',
      [invitation.userId],
    );
    expect(user).toEqual({ status: 'pending', personId: null, firstName: 'Ada' });
    const assignments = await query(app, 'SELECT "accountId", "roleId" FROM role_assignments WHERE "userId" = $1', [invitation.userId]);
    expect(assignments).toEqual([{ accountId: org.account.id, roleId: systemRole(org, 'event_manager') }]);

    const mails = await outbox(email);
    expect(mails).toHaveLength(1);
    const code = mails[0]!.meta.code as string;
    expect(mails[0]!.meta).toEqual({ kind: 'invitation', invitationId: invitation.id, code: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    expect(invitation.code).toBe(hintOf(code));
    expect(mails[0]!.text).toContain(`https://tickets.example.test/invite?code=${code}`);
    // Stored as its sha256 only.
    const [stored] = await query<Record<string, unknown>>(app, 'SELECT * FROM invitations WHERE id = $1', [invitation.id]);
    expect(Object.values(stored!)).not.toContain(code);
    expect(stored!.codeHash).toBe(createHash('sha256').update(code).digest('hex'));
    expect(publicUrl(app().config)).toBe('https://tickets.example.test');
    expect(mails[0]!.subject).toContain(org.organisation.name);
  });

  it('validates the body, naming the fields (email; roleIds.N and accountId not of this organisation: 404)', async () => {
    const bad = await invite({ email: 'not-an-email' });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('VALIDATION_FAILED');
    expect(bad.body.details.map((d: { path: string }) => d.path)).toEqual(['email']);

    const missing = await api(app, 'POST', '/v1/user-invitations', { token: org.adminToken, org: org.slug, body: {} });
    expect(missing.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['email', 'organisationId']);

    // Roles and accounts that are not this organisation's: 404 naming them (existence not confirmed).
    const roles = await invite({ email: freshEmail(), roleIds: [systemRole(org, 'viewer'), 'rol_nope', systemRole(other, 'viewer')] });
    expect([roles.status, roles.body.code]).toEqual([404, 'NOT_FOUND']);
    expect(roles.body.details.map((d: { path: string }) => d.path)).toEqual(['roleIds.1', 'roleIds.2']);

    const first = await invite({ email: freshEmail(), roleIds: ['rol_unknown'] });
    expect(first.body.details.map((d: { path: string }) => d.path)).toEqual(['roleIds.0']);

    const account = await invite({ email: freshEmail(), accountId: other.account.id });
    expect([account.status, account.body.code]).toEqual([404, 'NOT_FOUND']);
    expect(account.body.details.map((d: { path: string }) => d.path)).toEqual(['accountId']);

    const gql = await graphql(
      app,
      'mutation($input: CreateInvitationInput!) { createInvitation(input: $input) { invitation { id } userErrors { field code message } } }',
      { input: { organisationId: org.organisation.id, email: 'nope', roleIds: ['rol_x'] } },
      { token: org.adminToken, org: org.slug },
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.createInvitation).toEqual({
      invitation: null,
      userErrors: [{ field: ['input', 'email'], code: 'VALIDATION_FAILED', message: expect.any(String) }],
    });
  });

  it('refuses another organisationId in the body as the contract answers any other organisation’s thing: 404 naming it', async () => {
    const res = await invite({ email: freshEmail(), organisationId: other.organisation.id });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: 'NOT_FOUND', details: [{ path: 'organisationId' }] });
  });

  it('refuses an email that is already an active user, or has an open invitation, with 409', async () => {
    const active = await invite({ email: org.email });
    expect(active.status).toBe(409);
    expect(active.body.code).toBe('CONFLICT');

    const email = freshEmail();
    expect((await invite({ email })).status).toBe(201);
    const again = await invite({ email: email.toUpperCase() });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('CONFLICT');
  });

  it('supersedes an expired invitation for the same email', async () => {
    const email = freshEmail();
    const first = await invite({ email });
    await query(app, `UPDATE invitations SET "expiresAt" = now() - interval '1 minute' WHERE id = $1`, [first.body.invitation.id]);
    const second = await invite({ email, roleIds: [systemRole(org, 'viewer')] });
    expect(second.status).toBe(201);
    expect(
      (await api(app, 'GET', `/v1/user-invitations/${first.body.invitation.id}`, { token: org.adminToken, org: org.slug })).status,
    ).toBe(404);
    expect((await redeem(await mailedCode(second.body.invitation.id), 'a good password')).status).toBe(200);
  });

  it('when the mail cannot be sent, answers 500 and leaves nothing behind, so the email can be invited again', async () => {
    const email = freshEmail('unmailable');
    const send = app().runtime.mailer.send;
    // Stands in for a mail transport that is down (outside the product).
    app().runtime.mailer.send = async () => {
      throw new Error('fake mail transport: connection refused');
    };
    try {
      const res = await invite({ email, roleIds: [systemRole(org, 'viewer')] });
      expect(res.status).toBe(500);
      expect(res.body.code).toBe('INTERNAL');
    } finally {
      app().runtime.mailer.send = send;
    }
    expect(await query(app, 'SELECT id FROM users WHERE email = $1', [email])).toEqual([]);
    expect(await query(app, 'SELECT id FROM invitations WHERE email = $1', [email])).toEqual([]);
    expect((await invite({ email })).status).toBe(201);
  });

  it('grants on the account named by accountId (our addition)', async () => {
    const accountId = newId('account');
    await app().runtime.db.account.create({ data: { id: accountId, organisationId: org.organisation.id, name: 'Second' } });
    const res = await invite({ email: freshEmail(), accountId, roleIds: [systemRole(org, 'viewer')] });
    expect(res.status).toBe(201);
    const rows = await query(app, 'SELECT "accountId" FROM role_assignments WHERE "userId" = $1', [res.body.invitation.userId]);
    expect(rows).toEqual([{ accountId }]);
  });
});

describe('who may invite', () => {
  it('a staff user with only the Viewer role gets 403 FORBIDDEN, on create and on list', async () => {
    const viewer = await staffUser(['viewer']);
    const res = await invite({ email: freshEmail() }, viewer);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('FORBIDDEN');
    const list = await api(app, 'GET', '/v1/user-invitations', { token: viewer.token, org: viewer.slug });
    expect(list.status).toBe(403);
  });

  it('no privilege escalation: an inviter may grant only roles whose permissions they hold on that account', async () => {
    const delegate = await staffUser(['viewer']);
    const inviterRole = newId('role');
    await app().runtime.db.role.create({
      data: { id: inviterRole, organisationId: org.organisation.id, name: 'Inviter', permissions: ['invitations.*:all'] },
    });
    await app().runtime.db.roleAssignment.create({
      data: {
        id: newId('roleAssignment'),
        organisationId: org.organisation.id,
        userId: delegate.userId,
        accountId: org.account.id,
        roleId: inviterRole,
      },
    });

    for (const key of ['account_admin', 'organisation_admin', 'event_manager'] as const) {
      const refused = await invite({ email: freshEmail(), roleIds: [systemRole(org, key)] }, delegate);
      expect(refused.status, key).toBe(403);
      expect(refused.body.code).toBe('FORBIDDEN');
    }
    const email = freshEmail();
    const allowed = await invite({ email, roleIds: [systemRole(org, 'viewer')] }, delegate);
    expect(allowed.status).toBe(201);
    // Nothing was left behind by the refusals.
    const pending = await query(app, `SELECT count(*)::int AS n FROM users WHERE email = $1`, [email]);
    expect(pending).toEqual([{ n: 1 }]);
  });
});

describe('redeeming an invitation', () => {
  it('answers tokens for the new person; /me and /me/roles work with them; login with the password works', async () => {
    const email = freshEmail();
    const created = await invite({ email, firstName: 'Grace', lastName: 'Hopper', roleIds: [systemRole(org, 'event_manager')] });
    const { userId, id } = created.body.invitation;

    const res = await redeem(await mailedCode(id), 'correct horse');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      accessToken: expect.any(String),
      refreshToken: expect.stringMatching(/^svrt_/),
      expiresAt: expect.any(String),
      user: { id: expect.stringMatching(/^usr_/), email, firstName: 'Grace', lastName: 'Hopper' },
    });
    expect(res.body.user.id).not.toBe(userId);
    expect(decodeJwt(res.body.accessToken)).toMatchObject({ sub: res.body.user.id, org: org.organisation.id });

    const me = await api(app, 'GET', '/v1/me', { token: res.body.accessToken, org: org.slug });
    expect(me.status).toBe(200);
    expect(me.body.user).toMatchObject({ id: res.body.user.id, email, firstName: 'Grace', lastName: 'Hopper' });
    const roles = await api(app, 'GET', '/v1/me/roles', { token: res.body.accessToken, org: org.slug });
    expect(roles.status).toBe(200);
    expect(roles.body).toEqual({
      roles: [
        {
          id: systemRole(org, 'event_manager'),
          name: 'Event manager',
          description: expect.any(String),
          accountId: org.account.id,
          isSystemRole: true,
        },
      ],
      isOrgAdmin: false,
    });
    const orgs = await api(app, 'GET', '/v1/me/organisations', { token: res.body.accessToken, org: org.slug });
    expect(orgs.body.organisations).toEqual([expect.objectContaining({ id: org.organisation.id, userId })]);

    const [user] = await query(app, 'SELECT status, "personId" FROM users WHERE id = $1', [userId]);
    expect(user).toEqual({ status: 'active', personId: res.body.user.id });
    const [credential] = await query<{ passwordHash: string }>(
      app,
      'SELECT "passwordHash" FROM password_credentials WHERE "personId" = $1',
      [res.body.user.id],
    );
    expect(credential!.passwordHash).toMatch(/^\$argon2id\$/);
    await expect(signIn(app, email, 'correct horse', org.slug)).resolves.toMatchObject({ user: { id: res.body.user.id } });

    const shown = await api(app, 'GET', `/v1/user-invitations/${id}`, { token: org.adminToken, org: org.slug });
    expect(shown.body.invitation.redeemedAt).toEqual(expect.any(String));
  });

  it('a second redemption answers 409 CONFLICT; a redeemed invitation cannot be deleted or resent (409)', async () => {
    const created = await invite({ email: freshEmail() });
    const { id } = created.body.invitation;
    const code = await mailedCode(id);
    expect((await redeem(code, 'first password')).status).toBe(200);
    const twice = await redeem(code, 'first password');
    expect(twice.status).toBe(409);
    expect(twice.body.code).toBe('CONFLICT');
    const del = await api(app, 'DELETE', `/v1/user-invitations/${id}`, { token: org.adminToken, org: org.slug });
    expect(del.status).toBe(409);
    const resend = await api(app, 'POST', `/v1/user-invitations/${id}/resend`, { token: org.adminToken, org: org.slug });
    expect(resend.status).toBe(409);
  });

  it('an expired invitation answers 410 GONE; after a resend it can be redeemed', async () => {
    const created = await invite({ email: freshEmail() });
    const { id } = created.body.invitation;
    const code = await mailedCode(id);
    await query(app, `UPDATE invitations SET "expiresAt" = now() - interval '1 second' WHERE id = $1`, [id]);
    const res = await redeem(code, 'a long password');
    expect(res.status).toBe(410);
    expect(res.body.code).toBe('GONE');

    const resent = await api(app, 'POST', `/v1/user-invitations/${id}/resend`, { token: org.adminToken, org: org.slug });
    expect(resent.status).toBe(200);
    expect((await redeem(await mailedCode(id), 'a long password')).status).toBe(200);
  });

  it('an unknown code answers 404; a short password 400 naming password; no body 400 naming both', async () => {
    const unknown = await redeem('no-such-code', 'a long password');
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('NOT_FOUND');

    const created = await invite({ email: freshEmail() });
    const short = await redeem(await mailedCode(created.body.invitation.id), 'short');
    expect(short.status).toBe(400);
    expect(short.body.code).toBe('VALIDATION_FAILED');
    expect(short.body.details.map((d: { path: string }) => d.path)).toEqual(['password']);

    const empty = await api(app, 'POST', '/v1/auth/invitations/redeem', { body: {} });
    expect(empty.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['code', 'password']);

    const gql = await graphql(
      app,
      'mutation($input: RedeemInvitationInput!) { redeemInvitation(input: $input) { session { accessToken } userErrors { field code message } } }',
      { input: { code: await mailedCode(created.body.invitation.id), password: 'short' } },
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.redeemInvitation).toEqual({
      session: null,
      userErrors: [{ field: ['input', 'password'], code: 'VALIDATION_FAILED', message: expect.any(String) }],
    });
  });

  it('an existing person must prove their password; redeeming never resets it', async () => {
    // The administrator of `org` is invited into `other`.
    const created = await invite({ email: org.email, roleIds: [systemRole(other, 'viewer')] }, other);
    expect(created.status).toBe(201);
    const code = await mailedCode(created.body.invitation.id);

    const wrong = await redeem(code, 'a different password');
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe('UNAUTHENTICATED');

    const right = await redeem(code, org.password);
    expect(right.status).toBe(200);
    expect(right.body.user).toMatchObject({ id: org.user.personId, email: org.email });
    expect(decodeJwt(right.body.accessToken).org).toBe(other.organisation.id);
    await expect(signIn(app, org.email, org.password, other.slug)).resolves.toBeTruthy();
    await expect(signIn(app, org.email, 'a different password')).rejects.toThrow(/401/);
  });

  it('an existing person without a password (signs in elsewhere) joins only with their own session, and gets no password', async () => {
    const email = freshEmail('federated');
    const personId = newId('person');
    await app().runtime.db.person.create({ data: { id: personId, email } });
    const created = await invite({ email });
    const code = await mailedCode(created.body.invitation.id);
    // Holding the code is not being that person: no password can be chosen for their account.
    const anyPassword = await redeem(code, 'chosen by whoever holds the code');
    expect(anyPassword.status).toBe(401);
    const { token } = await app().runtime.tokens.signAccess(personId, undefined);
    const res = await redeem(code, undefined, { authorization: `Bearer ${token}` });
    expect(res.status).toBe(200);
    expect(res.body.user.id).toBe(personId);
    expect(await query(app, 'SELECT 1 FROM password_credentials WHERE "personId" = $1', [personId])).toEqual([]);
  });

  it('concurrent redemptions of one code: exactly one succeeds', async () => {
    const created = await invite({ email: freshEmail() });
    const code = await mailedCode(created.body.invitation.id);
    const results = await Promise.all(Array.from({ length: 6 }, () => redeem(code, 'racing password')));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409]);
    const sessions = await query(app, 'SELECT count(*)::int AS n FROM refresh_tokens WHERE "personId" = $1', [
      results.find((r) => r.status === 200)!.body.user.id,
    ]);
    expect(sessions).toEqual([{ n: 1 }]);
  });
});

describe('listing, reading, resending and deleting (REST)', () => {
  it('lists newest first with pagination, gets one, resends (new code and expiry, new mail, old code dead), deletes', async () => {
    const list = await api(app, 'GET', '/v1/user-invitations?limit=2&page=1', { token: other.adminToken, org: other.slug });
    const before = list.body.pagination.total as number;
    const emails = [freshEmail('list'), freshEmail('list')];
    const created = [];
    for (const email of emails) created.push((await invite({ email }, other)).body.invitation);

    const page1 = await api(app, 'GET', '/v1/user-invitations?limit=1&page=1', { token: other.adminToken, org: other.slug });
    expect(page1.status).toBe(200);
    expect(page1.body.invitations).toEqual([created[1]]);
    expect(page1.body.pagination).toEqual({
      page: 1,
      limit: 1,
      total: before + 2,
      totalPages: before + 2,
      hasNext: true,
      hasPrev: false,
    });
    const page2 = await api(app, 'GET', '/v1/user-invitations?limit=1&page=2', { token: other.adminToken, org: other.slug });
    expect(page2.body.invitations).toEqual([created[0]]);
    expect(page2.body.pagination).toMatchObject({ hasPrev: true });
    const all = await api(app, 'GET', '/v1/user-invitations', { token: other.adminToken, org: other.slug });
    expect(all.body.pagination).toMatchObject({ page: 1, limit: 20 });
    for (const invitation of all.body.invitations) expect(invitation.organisationId).toBe(other.organisation.id);
    const badLimit = await api(app, 'GET', '/v1/user-invitations?limit=500', { token: other.adminToken, org: other.slug });
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.details[0].path).toBe('query.limit');

    const target = created[0];
    const targetCode = await mailedCode(target.id);
    const got = await api(app, 'GET', `/v1/user-invitations/${target.id}`, { token: other.adminToken, org: other.slug });
    expect(got).toMatchObject({ status: 200, body: { invitation: target } });

    const resent = await api(app, 'POST', `/v1/user-invitations/${target.id}/resend`, { token: other.adminToken, org: other.slug });
    expect(resent.status).toBe(200);
    expect(Object.keys(resent.body.invitation).sort()).toEqual(INVITATION_KEYS);
    const resentCode = await mailedCode(target.id);
    expect(resentCode).not.toBe(targetCode);
    expect(resent.body.invitation.code).toBe(hintOf(resentCode));
    expect(Date.parse(resent.body.invitation.expiresAt)).toBeGreaterThan(Date.parse(target.expiresAt));
    const mails = await outbox(target.email);
    expect(mails.map((m) => m.meta.code)).toEqual([targetCode, resentCode]);
    expect(mails[1]!.text).toContain(`/invite?code=${resentCode}`);
    expect((await redeem(targetCode, 'some password')).status).toBe(404);

    const del = await api(app, 'DELETE', `/v1/user-invitations/${target.id}`, { token: other.adminToken, org: other.slug });
    expect(del).toMatchObject({ status: 200, body: { success: true, id: target.id } });
    expect((await api(app, 'GET', `/v1/user-invitations/${target.id}`, { token: other.adminToken, org: other.slug })).status).toBe(404);
    expect(await query(app, 'SELECT id FROM users WHERE id = $1', [target.userId])).toEqual([]);
    expect(await query(app, 'SELECT id FROM role_assignments WHERE "userId" = $1', [target.userId])).toEqual([]);
    expect((await redeem(resentCode, 'some password')).status).toBe(404);
    expect((await api(app, 'DELETE', `/v1/user-invitations/${target.id}`, { token: other.adminToken, org: other.slug })).status).toBe(404);
  });

  it("another organisation's invitation answers 404 on get, resend and delete, and is not listed", async () => {
    const theirs = (await invite({ email: freshEmail() }, other)).body.invitation;
    for (const [method, path] of [
      ['GET', `/v1/user-invitations/${theirs.id}`],
      ['POST', `/v1/user-invitations/${theirs.id}/resend`],
      ['DELETE', `/v1/user-invitations/${theirs.id}`],
    ] as const) {
      const res = await api(app, method, path, { token: org.adminToken, org: org.slug });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.code).toBe('NOT_FOUND');
    }
    const list = await api(app, 'GET', '/v1/user-invitations?limit=100', { token: org.adminToken, org: org.slug });
    expect(list.body.invitations.map((i: { id: string }) => i.id)).not.toContain(theirs.id);
    expect((await api(app, 'GET', `/v1/user-invitations/${theirs.id}`, { token: other.adminToken, org: other.slug })).status).toBe(200);
  });

  it('refuses a request without a credential with 401', async () => {
    expect((await api(app, 'GET', '/v1/user-invitations', { org: org.slug })).status).toBe(401);
  });
});

describe('the GraphQL surface', () => {
  const FIELDS = 'id organisationId userId code email expiresAt redeemedAt createdAt accountId roleIds';
  const gql = (query: string, variables: Record<string, unknown> = {}) =>
    graphql(app, query, variables, { token: org.adminToken, org: org.slug });

  it('createInvitation, invitations, invitation, resendInvitation, deleteInvitation, redeemInvitation', async () => {
    const email = freshEmail('gql');
    const created = await gql(
      `mutation($input: CreateInvitationInput!) { createInvitation(input: $input) { invitation { ${FIELDS} } userErrors { code } } }`,
      { input: { organisationId: org.organisation.id, email, roleIds: [systemRole(org, 'viewer')] } },
    );
    expect(created.body.errors).toBeUndefined();
    expect(created.body.data.createInvitation.userErrors).toEqual([]);
    const invitation = created.body.data.createInvitation.invitation;
    expect(invitation).toMatchObject({ email, accountId: org.account.id, roleIds: [systemRole(org, 'viewer')], redeemedAt: null });

    const list = await gql(`query { invitations(first: 100) { nodes { id } pagination { total page limit } } }`);
    expect(list.body.data.invitations.nodes.map((i: { id: string }) => i.id)).toContain(invitation.id);
    expect(list.body.data.invitations.pagination).toMatchObject({ page: 1, limit: 100 });

    const one = await gql(`query($id: ID!) { invitation(id: $id) { ${FIELDS} } }`, { id: invitation.id });
    expect(one.body.data.invitation).toEqual(invitation);

    const firstCode = await mailedCode(invitation.id);
    const resent = await gql(`mutation($id: ID!) { resendInvitation(id: $id) { invitation { code expiresAt } } }`, {
      id: invitation.id,
    });
    const resentCode = await mailedCode(invitation.id);
    expect(resent.body.data.resendInvitation.invitation.code).toBe(hintOf(resentCode));
    expect((await outbox(email)).map((m) => m.meta.code)).toEqual([firstCode, resentCode]);

    const redeemed = await graphql(
      app,
      'mutation($input: RedeemInvitationInput!) { redeemInvitation(input: $input) { session { accessToken user { email } } } }',
      { input: { code: resentCode, password: 'graphql password' } },
    );
    expect(redeemed.body.data.redeemInvitation.session.user.email).toBe(email);
    const again = await graphql(
      app,
      'mutation($input: RedeemInvitationInput!) { redeemInvitation(input: $input) { session { accessToken } userErrors { field code } } }',
      { input: { code: resentCode, password: 'graphql password' } },
    );
    expect(again.body.errors).toBeUndefined();
    expect(again.body.data.redeemInvitation).toEqual({ session: null, userErrors: [{ field: null, code: 'CONFLICT' }] });

    const second = await gql(`mutation($input: CreateInvitationInput!) { createInvitation(input: $input) { invitation { id } } }`, {
      input: { organisationId: org.organisation.id, email: freshEmail('gql') },
    });
    const secondId = second.body.data.createInvitation.invitation.id;
    const deleted = await gql(`mutation($id: ID!) { deleteInvitation(id: $id) { deletedId userErrors { code } } }`, { id: secondId });
    expect(deleted.body.data.deleteInvitation).toEqual({ deletedId: secondId, userErrors: [] });
    const gone = await gql(`query($id: ID!) { invitation(id: $id) { id } }`, { id: secondId });
    expect(gone.body.errors[0].extensions.code).toBe('NOT_FOUND');
  });

  it('refuses other organisations and missing permissions with the contract codes', async () => {
    const theirs = (await invite({ email: freshEmail() }, other)).body.invitation;
    const res = await gql(`query($id: ID!) { invitation(id: $id) { id code } }`, { id: theirs.id });
    expect(res.body.errors[0].extensions.code).toBe('NOT_FOUND');
    const mismatch = await gql(
      `mutation($input: CreateInvitationInput!) { createInvitation(input: $input) { invitation { id } userErrors { field code } } }`,
      { input: { organisationId: other.organisation.id, email: freshEmail() } },
    );
    expect(mismatch.body.data.createInvitation).toEqual({
      invitation: null,
      userErrors: [{ field: ['input', 'organisationId'], code: 'NOT_FOUND' }],
    });
  });
});

describe('logging', () => {
  it('the API logged requests at info, and never an invitation code', async () => {
    const codes = (await query<{ code: string }>(app, `SELECT meta->>'code' AS code FROM outbox_messages`)).map((r) => r.code);
    expect(codes.length).toBeGreaterThan(10);
    const text = logs.join('');
    expect(text).toContain('"msg":"request"');
    expect(text).toContain('/v1/auth/invitations/redeem');
    expect(text).toContain('mail written to the development outbox');
    for (const code of new Set(codes)) expect(text).not.toContain(code);
  });
});
