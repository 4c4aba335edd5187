import { beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/auth/keys.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, createApiKey } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, graphql, systemRole, tag, type TestOrganisation } from '../support/fixtures.ts';
import { mailedInvitationCode } from '../support/mail.ts';

/**
 * Invitation codes are secrets. A code is mailed and never shown by the API
 * (create, list, get, resend answer a hint "<first 4 characters>…" that cannot be redeemed), and
 * is stored as its SHA-256 only (column codeHash).
 */

const app = useTestApp();
let org: TestOrganisation;

beforeAll(async () => {
  org = await createOrganisation(app, 'codes');
});

const admin = () => asAdmin(org);
const outcome = (res: { status: number; body: any }) => ({ status: res.status, code: res.body?.code });
const hintOf = (code: string) => `${code.slice(0, 4)}…`;
const redeem = (code: string, password: string) => api(app, 'POST', '/v1/auth/invitations/redeem', { body: { code, password } });

async function inviteAdmin() {
  const email = `new-admin-${tag()}@codes.test`;
  const res = await api(app, 'POST', '/v1/user-invitations', {
    ...admin(),
    body: { organisationId: org.organisation.id, email, roleIds: [systemRole(org, 'organisation_admin')] },
  });
  expect(res.status).toBe(201);
  const invitation = res.body.invitation as { id: string; userId: string; code: string };
  return { email, invitation, mailed: await mailedInvitationCode(app, invitation.id) };
}

async function userStatus(userId: string) {
  const [row] = await query<{ status: string; personId: string | null }>(app, 'SELECT status, "personId" FROM users WHERE id = $1', [
    userId,
  ]);
  return row;
}

describe('a read-only API key (invitations.read)', () => {
  it('cannot redeem a pending administrator invitation with the code it lists: 404, the invitee stays pending', async () => {
    const { email, invitation, mailed } = await inviteAdmin();
    const { key } = await createApiKey(app, org, ['invitations.read']);

    const listed = await api(app, 'GET', '/v1/user-invitations?limit=100', { token: key, org: org.slug });
    expect(listed.status).toBe(200);
    const code = listed.body.invitations.find((i: { id: string }) => i.id === invitation.id).code as string;
    const attack = await redeem(code, 'attacker password');

    expect(outcome(attack)).toEqual({ status: 404, code: 'NOT_FOUND' });
    expect(await userStatus(invitation.userId)).toEqual({ status: 'pending', personId: null });
    expect(await query(app, 'SELECT id FROM people WHERE email = $1', [email])).toEqual([]);
    expect(code).toBe(hintOf(mailed));
  });

  it('sees only the hint in list and get, on REST and GraphQL', async () => {
    const { invitation, mailed } = await inviteAdmin();
    const { key } = await createApiKey(app, org, ['invitations.read']);
    const as = { token: key, org: org.slug };

    const list = await api(app, 'GET', '/v1/user-invitations?limit=100', as);
    const one = await api(app, 'GET', `/v1/user-invitations/${invitation.id}`, as);
    const gqlList = await graphql(app, '{ invitations(first: 100) { nodes { id code } } }', {}, as);
    const gqlOne = await graphql(app, 'query($id: ID!) { invitation(id: $id) { code } }', { id: invitation.id }, as);

    const shown = [
      list.body.invitations.find((i: { id: string }) => i.id === invitation.id).code,
      one.body.invitation.code,
      gqlList.body.data.invitations.nodes.find((i: { id: string }) => i.id === invitation.id).code,
      gqlOne.body.data.invitation.code,
    ];
    expect(shown).toEqual([hintOf(mailed), hintOf(mailed), hintOf(mailed), hintOf(mailed)]);
    for (const body of [list.body, one.body, gqlList.body, gqlOne.body]) expect(JSON.stringify(body)).not.toContain(mailed);
  });
});

describe('the mailed code is the only one that works', () => {
  it('create and resend answer a hint that cannot be redeemed; the newest mailed code redeems, the older one is dead', async () => {
    const { email, invitation, mailed } = await inviteAdmin();
    expect(invitation.code).toBe(hintOf(mailed));
    expect(outcome(await redeem(invitation.code, 'a long password'))).toEqual({ status: 404, code: 'NOT_FOUND' });

    const resent = await api(app, 'POST', `/v1/user-invitations/${invitation.id}/resend`, admin());
    expect(resent.status).toBe(200);
    const remailed = await mailedInvitationCode(app, invitation.id);
    expect(remailed).not.toBe(mailed);
    expect(resent.body.invitation.code).toBe(hintOf(remailed));
    expect(JSON.stringify(resent.body)).not.toContain(remailed);
    expect(outcome(await redeem(resent.body.invitation.code, 'a long password'))).toEqual({ status: 404, code: 'NOT_FOUND' });
    expect(outcome(await redeem(mailed, 'a long password'))).toEqual({ status: 404, code: 'NOT_FOUND' });

    const accepted = await redeem(remailed, 'a long password');
    expect(accepted.status).toBe(200);
    expect(accepted.body.user.email).toBe(email);
  });

  it('GraphQL createInvitation and resendInvitation show the hint only', async () => {
    const email = `gql-${tag()}@codes.test`;
    const created = await graphql(
      app,
      'mutation($input: CreateInvitationInput!) { createInvitation(input: $input) { invitation { id code } } }',
      { input: { organisationId: org.organisation.id, email } },
      admin(),
    );
    const id = created.body.data.createInvitation.invitation.id as string;
    expect(created.body.data.createInvitation.invitation.code).toBe(hintOf(await mailedInvitationCode(app, id)));
    const resent = await graphql(app, 'mutation($id: ID!) { resendInvitation(id: $id) { invitation { code } } }', { id }, admin());
    expect(resent.body.data.resendInvitation.invitation.code).toBe(hintOf(await mailedInvitationCode(app, id)));
  });
});

describe('storage', () => {
  it('keeps the SHA-256 of the code only (codeHash), no plaintext column', async () => {
    const { invitation, mailed } = await inviteAdmin();
    const columns = (
      await query<{ column_name: string }>(
        app,
        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'invitations'",
      )
    ).map((c) => c.column_name);
    expect(columns).toContain('codeHash');
    expect(columns).not.toContain('code');

    const [row] = await query<Record<string, unknown>>(app, 'SELECT * FROM invitations WHERE id = $1', [invitation.id]);
    expect([sha256(mailed), Buffer.from(sha256(mailed), 'hex').toString('base64url')]).toContain(row!.codeHash);
    expect(JSON.stringify(row)).not.toContain(mailed);
  });
});
