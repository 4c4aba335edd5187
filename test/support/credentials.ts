import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { newId } from '../../src/ids.ts';
import { appOf, type AppRef } from './app.ts';
import { query } from './db.ts';
import { api, createOrganisation, createStaffUser, systemRole, tag, type SystemRoleKey, type TestOrganisation } from './fixtures.ts';
import { mailTo, waitForMail } from './mail.ts';

/**
 * Every kind of credential a client can hold, made the way clients get them (over the API, by the
 * organisation's admin) unless said otherwise. Staff tokens come from createOrganisation (its
 * admin) and createStaffUser (fixtures.ts). Also the roles and refresh tokens behind them, as stored.
 */

/** Request options of a credential: `api(app, method, path, { ...as(token, org), body })`. */
export const as = (token: string | undefined, org: TestOrganisation | string) => ({
  token,
  org: typeof org === 'string' ? org : org.slug,
});

/** The organisation's first admin, as request options. */
export const asAdmin = (org: TestOrganisation) => as(org.adminToken, org);

/** A signed-in staff member of `org` holding system roles on one account (default the first). */
export async function staffWithRoles(
  app: AppRef,
  org: TestOrganisation,
  roles: SystemRoleKey[],
  accountId = org.account.id,
  label = 'staff',
) {
  return createStaffUser(
    app,
    org,
    roles.map((key) => ({ roleId: systemRole(org, key), accountId })),
    label,
  );
}

/** A signed-in, active staff member of `org` who holds no role at all. */
export async function staffWithoutRights(app: AppRef, org: TestOrganisation, label = 'norights') {
  return createStaffUser(app, org, [], label);
}

/** A custom role with exactly `permissions` (written directly: a fixture, not the subject). */
export async function customRole(app: AppRef, org: TestOrganisation, permissions: string[], name = `Role ${tag()}`) {
  return appOf(app).runtime.db.role.create({
    data: { id: newId('role'), organisationId: org.organisation.id, name, permissions },
  });
}

/** The role's permissions as stored. */
export async function storedPermissions(app: AppRef, roleId: string): Promise<string[]> {
  const [row] = await query<{ permissions: string[] }>(app, 'SELECT permissions FROM roles WHERE id = $1', [roleId]);
  return row!.permissions;
}

/** How many refresh tokens exist (every sign-in writes one), of one person or of everyone. */
export async function refreshTokenCount(app: AppRef, personId?: string): Promise<number> {
  const [row] = await query<{ n: number }>(
    app,
    personId ? 'SELECT count(*)::int AS n FROM refresh_tokens WHERE "personId" = $1' : 'SELECT count(*)::int AS n FROM refresh_tokens',
    personId ? [personId] : [],
  );
  return row!.n;
}

export interface CreatedApiKey {
  /** The key material (svak_), shown once. */
  key: string;
  apiKey: { id: string; keyPrefix: string; accountId: string | null; scopes: string[] };
}

/** An organisation API key with `scopes`, organisation-wide unless `accountId`, made by the admin over /v1. */
export async function createApiKey(
  app: AppRef,
  org: TestOrganisation,
  scopes: string[],
  options: { accountId?: string; expiresAt?: string; name?: string } = {},
): Promise<CreatedApiKey> {
  const res = await api(app, 'POST', '/v1/api-keys', {
    ...asAdmin(org),
    body: {
      name: options.name ?? `key ${randomBytes(3).toString('hex')}`,
      scopes,
      accountId: options.accountId,
      expiresAt: options.expiresAt,
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as CreatedApiKey;
}

/** The key material of a key the admin revoked over /v1 (its use answers 401 API_KEY_REVOKED). */
export async function revokedApiKey(app: AppRef, org: TestOrganisation, scopes = ['*.*']): Promise<string> {
  const { key, apiKey } = await createApiKey(app, org, scopes);
  const res = await api(app, 'POST', `/v1/api-keys/${apiKey.id}/revoke`, asAdmin(org));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return key;
}

/** The key material of a key past its expiry (401 API_KEY_EXPIRED); the past is written to the database, the API refuses it. */
export async function expiredApiKey(app: AppRef, org: TestOrganisation, scopes = ['*.*']): Promise<string> {
  const { key, apiKey } = await createApiKey(app, org, scopes);
  await query(app, `UPDATE api_keys SET "expiresAt" = now() - interval '1 minute' WHERE id = $1`, [apiKey.id]);
  return key;
}

/** An embed token pinned to `accountId` (default the first account) with `scopes`, minted by `minter` (default the admin). */
export async function embedToken(
  app: AppRef,
  org: TestOrganisation,
  scopes: string[],
  options: { accountId?: string; minter?: string; expiresInSeconds?: number } = {},
): Promise<string> {
  const res = await api(app, 'POST', '/v1/embed/sessions', {
    ...as(options.minter ?? org.adminToken, org),
    body: { accountId: options.accountId ?? org.account.id, scopes, expiresInSeconds: options.expiresInSeconds },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.token as string;
}

/** Another organisation with its own credentials: its admin's staff token and an API key holding everything. */
export async function otherOrganisation(app: AppRef, prefix = 'other') {
  const org = await createOrganisation(app, prefix);
  return { org, staffToken: org.adminToken, key: (await createApiKey(app, org, ['*.*'])).key };
}

/**
 * A magic-link code as the customer reads it from their mail (sent after the 202, so this waits for
 * it). With `request`, asks for a fresh link first (with `channelKey`; `headers` go with the request,
 * a client address say) and answers the code of the mail that request sent; the customer must exist
 * on the channel's account (a checkout makes one). Without, the test made the request itself: the
 * newest code mailed to `email`.
 */
export async function magicLinkCode(
  app: AppRef,
  email: string,
  request?: { channelKey: string; headers?: Record<string, string> },
): Promise<string> {
  const address = email.toLowerCase();
  const sent = (await mailTo(app, address, 'customer_magic_link')).length;
  if (request) {
    const link = await api(app, 'POST', '/live/sales/customer-auth/magic-link', {
      body: { email },
      headers: { 'x-channel-key': request.channelKey, ...request.headers },
    });
    expect(link.status, JSON.stringify(link.body)).toBe(202);
  }
  const mail = await waitForMail(app, address, 'customer_magic_link', request ? sent + 1 : Math.max(sent, 1));
  const code = mail.meta.code;
  if (typeof code !== 'string') throw new Error(`the magic-link mail to ${address} carries no code`);
  return code;
}

/** A customer token through the magic-link flow, as a storefront gets one (see magicLinkCode). */
export async function customerToken(app: AppRef, channelKey: string, email: string, headers: Record<string, string> = {}) {
  const code = await magicLinkCode(app, email, { channelKey, headers });
  const res = await api(app, 'POST', '/live/sales/customer-tokens', {
    body: { code },
    headers: { 'x-channel-key': channelKey, ...headers },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { customerToken: string; expiresAt: string; customer: { id: string; email: string } };
}
