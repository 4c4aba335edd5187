import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { createApiKey } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createAccount, createOrganisation, createStaffUser, systemRole, type TestOrganisation } from '../support/fixtures.ts';

/**
 * An embed session dies with what minted it. Once its API key is revoked or
 * expired, its account deleted, or the staff user who minted it is no longer active or no longer
 * holds the session's scopes on its account, the embed token answers 401 UNAUTHENTICATED on its
 * next request.
 */

let app: TestApp;
let org: TestOrganisation;

beforeAll(async () => {
  app = await startTestApp();
  org = await createOrganisation(app, 'embed');
});
afterAll(async () => {
  await app?.stop();
});

const admin = () => ({ token: org.adminToken, org: org.slug });

async function mint(token: string, accountId: string, scopes = ['events.read']) {
  const res = await api(app, 'POST', '/v1/embed/sessions', { token, org: org.slug, body: { accountId, scopes, expiresInSeconds: 3600 } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.token as string;
}

/** What a widget does with its token: read its session and the account's events. */
async function widget(token: string) {
  const current = await api(app, 'GET', '/v1/embed/sessions/current', { token, org: org.slug });
  const events = await api(app, 'GET', '/v1/events', { token, org: org.slug });
  return { current: { status: current.status, code: current.body?.code }, events: { status: events.status, code: events.body?.code } };
}

const ENDED = { current: { status: 401, code: 'UNAUTHENTICATED' }, events: { status: 401, code: 'UNAUTHENTICATED' } };
const WORKING = { current: { status: 200, code: undefined }, events: { status: 200, code: undefined } };

describe('an embed session minted by an API key', () => {
  it('ends when the key is revoked', async () => {
    const { apiKey, key } = await createApiKey(app, org, ['events.read'], { accountId: org.account.id });
    const embed = await mint(key, org.account.id);
    expect(await widget(embed)).toEqual(WORKING);

    expect((await api(app, 'POST', `/v1/api-keys/${apiKey.id}/revoke`, admin())).status).toBe(200);

    expect(await widget(embed)).toEqual(ENDED);
  });

  it('ends when the key expires', async () => {
    const created = await api(app, 'POST', '/v1/api-keys', {
      ...admin(),
      body: {
        name: 'short-lived',
        scopes: ['events.read'],
        accountId: org.account.id,
        expiresAt: new Date(Date.now() + 2_000).toISOString(),
      },
    });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    const embed = await mint(key, org.account.id);
    expect(await widget(embed)).toEqual(WORKING);

    await sleep(2_500);

    expect((await api(app, 'GET', '/v1/events', { token: key, org: org.slug })).body.code).toBe('API_KEY_EXPIRED');
    expect(await widget(embed)).toEqual(ENDED);
  });
});

describe('an embed session of an account', () => {
  it('ends when the account is deleted', async () => {
    const account = await createAccount(app, org, 'Closing down');
    const { key } = await createApiKey(app, org, ['events.read'], { accountId: account.id });
    const embed = await mint(key, account.id);
    expect((await api(app, 'GET', '/v1/embed/sessions/current', { token: embed, org: org.slug })).status).toBe(200);

    expect((await api(app, 'DELETE', `/v1/accounts/${account.id}`, admin())).status).toBe(200);

    expect(await widget(embed)).toEqual(ENDED);
  });
});

describe('an embed session minted by a staff user', () => {
  it('ends when the user no longer holds its scopes on the account (role assignment removed)', async () => {
    const manager = await createStaffUser(app, org, [{ roleId: systemRole(org, 'event_manager'), accountId: org.account.id }], 'minter');
    const embed = await mint(manager.token, org.account.id);
    expect(await widget(embed)).toEqual(WORKING);

    expect((await api(app, 'DELETE', `/v1/user-account-roles/${manager.assignments[0]!.id}`, admin())).status).toBe(200);

    expect(await widget(embed)).toEqual(ENDED);
  });

  it('ends when the user is no longer active', async () => {
    const manager = await createStaffUser(app, org, [{ roleId: systemRole(org, 'event_manager'), accountId: org.account.id }], 'leaver');
    const embed = await mint(manager.token, org.account.id);
    expect(await widget(embed)).toEqual(WORKING);

    // There is no API to disable a user yet: an operator does it in the database. The users
    // table's change notice (LISTEN/NOTIFY) makes every API process forget what it
    // cached about the user within milliseconds; allow two seconds for a loaded machine.
    await query(app.database.url, `UPDATE users SET status = 'disabled' WHERE id = $1`, [manager.userId]);
    const deadline = Date.now() + 2_000;
    let seen = await widget(embed);
    while (JSON.stringify(seen) !== JSON.stringify(ENDED) && Date.now() < deadline) {
      await sleep(50);
      seen = await widget(embed);
    }

    expect(seen).toEqual(ENDED);
  });
});
