import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v1Routes } from '../rest-compat/v1-routes.ts';
import { startTestApp, type TestApp } from './support/app.ts';
import { query } from './support/db.ts';
import { api, createOrganisation, createStaffUser, graphql, systemRole, type TestOrganisation } from './support/fixtures.ts';

/**
 * Every credential kind against every /v1 route and every GraphQL root field, checking the status
 * and code contract.md prescribes. A route or root field missing from the tables below fails the
 * suite, so new surface cannot skip this.
 */

type Credential = 'admin' | 'limited' | 'keyWith' | 'keyWithout' | 'revoked' | 'expired' | 'foreign' | 'embed' | 'none';
/** 'ok': served (2xx, or a 400/404/409 about the input itself), never an auth refusal. */
type Outcome = 'ok' | 'FORBIDDEN' | 'NOT_FOUND' | 'SIGNED_IN_USER_REQUIRED' | 'UNAUTHENTICATED';

interface Case {
  body?: unknown | ((org: TestOrganisation) => unknown);
  /** The route's own answer to the dummy input is 401 (a wrong password, an unknown refresh token). */
  answers401?: boolean;
  /** Outcomes for the credentials that differ per route; the rest follow from the category. */
  limited: Outcome;
  keyWithout: Outcome;
  embed: Outcome;
  public?: boolean;
}

const SIGNED_IN = { keyWithout: 'SIGNED_IN_USER_REQUIRED', embed: 'SIGNED_IN_USER_REQUIRED' } as const;
const ORG_WIDE = { limited: 'FORBIDDEN', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' } as const;
const PUBLIC = { limited: 'ok', keyWithout: 'ok', embed: 'ok', public: true } as const;
/** Readable by a viewer on its account; an API key or embed token without the scope gets 404. */
const ACCOUNT_READ = { limited: 'ok', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' } as const;
/** Sales API fields (reached through /live with a channel key or customer token): every management credential is 401. */
const SALES_API = { limited: 'UNAUTHENTICATED', keyWithout: 'UNAUTHENTICATED', embed: 'UNAUTHENTICATED' } as const;

const routes: Record<string, Case> = {
  'GET /meta/versions': PUBLIC,
  'POST /auth/login': { ...PUBLIC, answers401: true, body: { email: 'nobody@x.test', password: 'x' } },
  'POST /auth/refresh': { ...PUBLIC, answers401: true, body: { refreshToken: 'svrt_x' } },
  'POST /auth/logout': { ...PUBLIC, body: { refreshToken: 'svrt_x' } },
  'GET /me': { limited: 'ok', ...SIGNED_IN },
  'GET /me/organisations': { limited: 'ok', ...SIGNED_IN },
  'GET /me/roles': { limited: 'ok', ...SIGNED_IN },
  'GET /me/permissions': { limited: 'ok', ...SIGNED_IN },
  'GET /roles': ORG_WIDE,
  'POST /roles': { ...ORG_WIDE, body: { name: 'Matrix role', permissions: ['events.read'] } },
  'GET /roles/{id}': ORG_WIDE,
  'PATCH /roles/{id}': { ...ORG_WIDE, body: { description: 'x' } },
  'DELETE /roles/{id}': ORG_WIDE,
  'GET /user-account-roles': { limited: 'ok', keyWithout: 'NOT_FOUND', embed: 'ok' },
  'POST /user-account-roles': { limited: 'FORBIDDEN', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND', body: { userId: 'usr_x', accountId: 'acc_x', roleId: 'rol_x' } },
  'PUT /user-account-roles': { limited: 'FORBIDDEN', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND', body: { userId: 'usr_x', accountId: 'acc_x', roleIds: [] } },
  'DELETE /user-account-roles/{id}': { limited: 'FORBIDDEN', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' },
  'GET /api-keys': { limited: 'ok', ...SIGNED_IN },
  'POST /api-keys': { limited: 'FORBIDDEN', ...SIGNED_IN, body: { name: 'x', scopes: ['events.read'] } },
  'POST /api-keys/{id}/revoke': { limited: 'FORBIDDEN', ...SIGNED_IN },
  'POST /embed/sessions': {
    limited: 'ok',
    keyWithout: 'NOT_FOUND',
    embed: 'NOT_FOUND',
    body: (o: TestOrganisation) => ({ accountId: o.account.id, scopes: ['events.read'] }),
  },
  'GET /embed/sessions/current': { limited: 'NOT_FOUND', keyWithout: 'NOT_FOUND', embed: 'ok' },
  'GET /user-invitations': ORG_WIDE,
  'POST /user-invitations': { ...ORG_WIDE, body: (o: TestOrganisation) => ({ organisationId: o.organisation.id, email: 'matrix@x.test' }) },
  'GET /user-invitations/{id}': ORG_WIDE,
  'DELETE /user-invitations/{id}': ORG_WIDE,
  'POST /user-invitations/{id}/resend': ORG_WIDE,
  'POST /auth/invitations/redeem': { ...PUBLIC, body: { code: 'nope', password: 'long enough' } },
  'GET /identity-providers': ORG_WIDE,
  'POST /identity-providers': {
    ...ORG_WIDE,
    body: { providerType: 'oidc', issuer: 'https://m.example.com', jwksUri: 'https://m.example.com/jwks', clientId: 'x' },
  },
  'GET /identity-providers/{id}': ORG_WIDE,
  'PATCH /identity-providers/{id}': { ...ORG_WIDE, body: { isEnabled: true } },
  'POST /auth/federate': { ...PUBLIC, answers401: true, body: { token: 'x' } },
  'GET /organisation': { limited: 'ok', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' },
  'PATCH /organisation': { ...ORG_WIDE, body: { name: 'Matrix' } },
  'GET /accounts': { limited: 'ok', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' },
  'POST /accounts': { ...ORG_WIDE, body: { name: 'Matrix account' } },
  'GET /accounts/{id}': { limited: 'ok', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' },
  'PATCH /accounts/{id}': { ...ORG_WIDE, body: { name: 'x' } },
  'DELETE /accounts/{id}': ORG_WIDE,
  'POST /partner/accounts': { ...ORG_WIDE, body: { name: 'Matrix partner' } },
  'GET /venues': ACCOUNT_READ,
  'POST /venues': { ...ORG_WIDE, body: (o: TestOrganisation) => ({ accountId: o.account.id, name: 'Matrix venue' }) },
  'GET /venues/{id}': ACCOUNT_READ,
  'PATCH /venues/{id}': { ...ORG_WIDE, body: { name: 'x' } },
  'GET /events': ACCOUNT_READ,
  'POST /events': { ...ORG_WIDE, body: (o: TestOrganisation) => ({ accountId: o.account.id, name: 'Matrix event', timezone: 'UTC' }) },
  'GET /events/{id}': ACCOUNT_READ,
  'PATCH /events/{id}': { ...ORG_WIDE, body: { name: 'x' } },
  'DELETE /events/{id}': ORG_WIDE,
  'GET /events/{id}/occurrences': ACCOUNT_READ,
  'POST /events/{id}/occurrences': { ...ORG_WIDE, body: { startDate: '2026-08-01', startTime: '20:00' } },
  'GET /events/{id}/ticket-types': ACCOUNT_READ,
  'POST /events/{id}/ticket-types': { ...ORG_WIDE, body: { name: 'GA', priceAmount: 1, currency: 'GBP' } },
  'PATCH /ticket-types/{id}': { ...ORG_WIDE, body: { name: 'x' } },
  'GET /webhook-event-types': { limited: 'ok', keyWithout: 'ok', embed: 'ok' },
  'GET /webhook-endpoints': ACCOUNT_READ,
  'POST /webhook-endpoints': { ...ORG_WIDE, body: (o: TestOrganisation) => ({ accountId: o.account.id, url: 'http://127.0.0.1:9/matrix' }) },
  'GET /webhook-endpoints/{id}': ACCOUNT_READ,
  'PATCH /webhook-endpoints/{id}': { ...ORG_WIDE, body: { description: 'x' } },
  'DELETE /webhook-endpoints/{id}': ORG_WIDE,
  'POST /webhook-endpoints/{id}/test': ORG_WIDE,
  'POST /webhook-endpoints/{id}/rotate-secret': ORG_WIDE,
  'POST /webhook-endpoints/{id}/recover': { ...ORG_WIDE, body: { since: '2026-11-01T00:00:00Z' } },
  'GET /webhook-deliveries': ACCOUNT_READ,
  'GET /webhook-deliveries/{id}': ACCOUNT_READ,
  'POST /webhook-deliveries/{id}/resend': ORG_WIDE,
  'GET /sales-channels': ACCOUNT_READ,
  'POST /sales-channels': { ...ORG_WIDE, body: (o: TestOrganisation) => ({ accountId: o.account.id, name: 'Matrix channel', slug: `matrix-${Math.random().toString(36).slice(2, 10)}` }) },
  'GET /sales-channels/{id}': ACCOUNT_READ,
  'PATCH /sales-channels/{id}': { ...ORG_WIDE, body: { name: 'x' } },
  'POST /sales-channels/{id}/keys': { ...ORG_WIDE, body: { kind: 'publishable' } },
  'POST /sales-channels/{id}/keys/{keyId}/revoke': ORG_WIDE,
  'GET /orders': ACCOUNT_READ,
  'GET /orders/{id}': ACCOUNT_READ,
  'POST /orders/{id}/cancel': ORG_WIDE,
  'POST /orders/{id}/refund': ORG_WIDE,
  'GET /customers': ACCOUNT_READ,
  'GET /customers/{id}': ACCOUNT_READ,
  'GET /passes': ACCOUNT_READ,
  'GET /passes/{id}': ACCOUNT_READ,
  'POST /passes/{id}/redeem': ORG_WIDE,
  'POST /redemptions': { ...ORG_WIDE, body: { code: 'NOSUCHCODE' } },
};

const STATUS: Record<Exclude<Outcome, 'ok'>, number> = {
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  SIGNED_IN_USER_REQUIRED: 403,
  UNAUTHENTICATED: 401,
};

let app: TestApp;
let org: TestOrganisation;
let other: TestOrganisation;
const tokens = {} as Record<Credential, string | undefined>;

async function key(o: TestOrganisation, scopes: string[], accountId?: string) {
  const res = await api(app, 'POST', '/v1/api-keys', { token: o.adminToken, org: o.slug, body: { name: 'matrix', scopes, accountId } });
  return res.body as { key: string; apiKey: { id: string } };
}

beforeAll(async () => {
  app = await startTestApp({ IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: 'true' });
  [org, other] = await Promise.all([createOrganisation(app, 'matrix'), createOrganisation(app, 'matrixother')]);
  tokens.admin = org.adminToken;
  tokens.limited = (await createStaffUser(app, org, [{ roleId: systemRole(org, 'viewer'), accountId: org.account.id }])).token;
  tokens.keyWith = (await key(org, ['*.*'])).key;
  tokens.keyWithout = (await key(org, ['nothing.read'])).key;
  const revoked = await key(org, ['*.*']);
  await api(app, 'POST', `/v1/api-keys/${revoked.apiKey.id}/revoke`, { token: org.adminToken, org: org.slug });
  tokens.revoked = revoked.key;
  const expired = await key(org, ['*.*']);
  await query(app.database.url, `UPDATE api_keys SET "expiresAt" = now() - interval '1 minute' WHERE id = $1`, [expired.apiKey.id]);
  tokens.expired = expired.key;
  tokens.foreign = (await key(other, ['*.*'])).key;
  const embed = await api(app, 'POST', '/v1/embed/sessions', {
    token: (await key(org, ['role_assignments.read'], org.account.id)).key,
    org: org.slug,
    body: {},
  });
  tokens.embed = embed.body.token;
  tokens.none = undefined;
});
afterAll(async () => {
  await app?.stop();
});

function expected(route: Case, credential: Credential): { outcome: Outcome | 'revoked' | 'expired' | 'mismatch' } {
  switch (credential) {
    case 'revoked':
      return { outcome: 'revoked' };
    case 'expired':
      return { outcome: 'expired' };
    case 'foreign':
      return { outcome: 'mismatch' };
    case 'none':
      return { outcome: route.public ? 'ok' : 'UNAUTHENTICATED' };
    case 'admin':
    case 'keyWith':
      return { outcome: route.keyWithout === 'SIGNED_IN_USER_REQUIRED' && credential === 'keyWith' ? 'SIGNED_IN_USER_REQUIRED' : 'ok' };
    default:
      return { outcome: route[credential] };
  }
}

function path(template: string): string {
  return template.replace('{id}', 'id_that_does_not_exist');
}

describe('every /v1 route is in the matrix', () => {
  it('lists each route of the route table', () => {
    expect(Object.keys(routes).sort()).toEqual(v1Routes.map((r) => `${r.method} ${r.path}`).sort());
  });
});

const CREDENTIALS: Credential[] = ['admin', 'limited', 'keyWith', 'keyWithout', 'revoked', 'expired', 'foreign', 'embed', 'none'];

/**
 * Each request of the matrix comes from its own client address and signs in with its own email:
 * failed sign-ins are throttled per address and per email (README "Security model"), and the
 * matrix is about who may call what, not about those throttles (test/security/throttling.test.ts).
 */
let client = 0;
function asNewClient(): Record<string, string> {
  client += 1;
  return { 'x-forwarded-for': `10.${(client >> 16) & 255}.${(client >> 8) & 255}.${client & 255}` };
}
const uniqueEmail = (text: string) => text.replace(/(nobody|n)@x\.test/, `$1-${client}@x.test`);

describe.each(Object.entries(routes))('%s', (name, route) => {
  const [method, template] = name.split(' ') as [string, string];
  it.each(CREDENTIALS)('with %s', async (credential) => {
    const headers = asNewClient();
    const raw = typeof route.body === 'function' ? route.body(org) : route.body;
    const body = raw === undefined ? undefined : JSON.parse(uniqueEmail(JSON.stringify(raw)));
    const res = await api(app, method, `/v1${path(template)}`, { token: tokens[credential], org: org.slug, body, headers });
    const { outcome } = expected(route, credential);
    const seen = `${res.status} ${res.body?.code ?? ''}`;
    if (outcome === 'ok') {
      expect([200, 201, 400, 404, 409, ...(route.answers401 ? [401] : [])], seen).toContain(res.status);
      if (res.status === 404) expect(credential === 'admin' || credential === 'keyWith' || route.public || template.includes('{id}') || template.endsWith('current'), seen).toBe(true);
    } else if (outcome === 'revoked') {
      expect(seen).toBe('401 API_KEY_REVOKED');
    } else if (outcome === 'expired') {
      expect(seen).toBe('401 API_KEY_EXPIRED');
    } else if (outcome === 'mismatch') {
      expect(seen).toBe('403 ORG_MISMATCH');
    } else {
      expect(seen).toBe(`${STATUS[outcome]} ${outcome}`);
    }
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });
});

/** GraphQL root fields: the code each credential meets (or 'ok'), with minimal arguments. */
const fields: Record<string, { document: string; limited: Outcome; keyWithout: Outcome; embed: Outcome; public?: boolean }> = {
  apiVersions: { document: '{ apiVersions { current } }', ...PUBLIC },
  me: { document: '{ me { id } }', limited: 'ok', ...SIGNED_IN },
  myOrganisations: { document: '{ myOrganisations { id } }', limited: 'ok', ...SIGNED_IN },
  myRoles: { document: '{ myRoles { isOrgAdmin } }', limited: 'ok', ...SIGNED_IN },
  myPermissions: { document: '{ myPermissions { isOrgAdmin } }', limited: 'ok', ...SIGNED_IN },
  roles: { document: '{ roles { id } }', ...ORG_WIDE },
  role: { document: '{ role(id: "rol_x") { id } }', ...ORG_WIDE },
  roleAssignments: { document: '{ roleAssignments { id } }', limited: 'ok', keyWithout: 'NOT_FOUND', embed: 'ok' },
  apiKeys: { document: '{ apiKeys { id } }', limited: 'ok', ...SIGNED_IN },
  currentEmbedSession: { document: '{ currentEmbedSession { accountId } }', limited: 'NOT_FOUND', keyWithout: 'NOT_FOUND', embed: 'ok' },
  login: { document: 'mutation { login(input: {email: "n@x.test", password: "x"}) { accessToken } }', ...PUBLIC },
  refreshTokens: { document: 'mutation { refreshTokens(input: {refreshToken: "x"}) { accessToken } }', ...PUBLIC },
  logout: { document: 'mutation { logout(input: {refreshToken: "x"}) }', ...PUBLIC },
  createRole: { document: 'mutation { createRole(input: {name: "", permissions: []}) { id } }', ...ORG_WIDE },
  updateRole: { document: 'mutation { updateRole(id: "rol_x", input: {}) { id } }', ...ORG_WIDE },
  deleteRole: { document: 'mutation { deleteRole(id: "rol_x") { id } }', ...ORG_WIDE },
  assignRole: { document: 'mutation { assignRole(input: {userId: "usr_x", accountId: "acc_x", roleId: "rol_x"}) { id } }', limited: 'FORBIDDEN', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' },
  replaceRoles: { document: 'mutation { replaceRoles(input: {userId: "usr_x", accountId: "acc_x", roleIds: []}) { id } }', limited: 'FORBIDDEN', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' },
  removeRoleAssignment: { document: 'mutation { removeRoleAssignment(id: "uar_x") { success } }', limited: 'FORBIDDEN', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' },
  createApiKey: { document: 'mutation { createApiKey(input: {name: "", scopes: []}) { key } }', limited: 'FORBIDDEN', ...SIGNED_IN },
  revokeApiKey: { document: 'mutation { revokeApiKey(id: "oak_x") { id } }', limited: 'FORBIDDEN', ...SIGNED_IN },
  createEmbedSession: { document: 'mutation { createEmbedSession(input: {expiresInSeconds: 1}) { token } }', limited: 'ok', keyWithout: 'ok', embed: 'NOT_FOUND' },
  invitations: { document: '{ invitations { pagination { total } } }', ...ORG_WIDE },
  invitation: { document: '{ invitation(id: "inv_x") { id } }', ...ORG_WIDE },
  createInvitation: { document: 'mutation { createInvitation(input: {organisationId: "org_x", email: "x"}) { id } }', ...ORG_WIDE },
  deleteInvitation: { document: 'mutation { deleteInvitation(id: "inv_x") { id } }', ...ORG_WIDE },
  resendInvitation: { document: 'mutation { resendInvitation(id: "inv_x") { id } }', ...ORG_WIDE },
  redeemInvitation: { document: 'mutation { redeemInvitation(input: {code: "x", password: "long enough"}) { accessToken } }', ...PUBLIC },
  identityProviders: { document: '{ identityProviders { id } }', ...ORG_WIDE },
  identityProvider: { document: '{ identityProvider(id: "idp_x") { id } }', ...ORG_WIDE },
  createIdentityProvider: {
    document: 'mutation { createIdentityProvider(input: {providerType: "oidc", issuer: "x", jwksUri: "x"}) { id } }',
    ...ORG_WIDE,
  },
  updateIdentityProvider: { document: 'mutation { updateIdentityProvider(id: "idp_x", input: {}) { id } }', ...ORG_WIDE },
  federate: { document: 'mutation { federate(input: {token: "x"}) { accessToken } }', ...PUBLIC },
  organisation: { document: '{ organisation { id } }', limited: 'ok', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' },
  updateOrganisation: { document: 'mutation { updateOrganisation(input: {}) { id } }', ...ORG_WIDE },
  accounts: { document: '{ accounts { pagination { total } } }', limited: 'ok', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' },
  account: { document: '{ account(id: "acc_x") { id } }', limited: 'ok', keyWithout: 'NOT_FOUND', embed: 'NOT_FOUND' },
  createAccount: { document: 'mutation { createAccount(input: {name: ""}) { id } }', ...ORG_WIDE },
  updateAccount: { document: 'mutation { updateAccount(id: "acc_x", input: {}) { id } }', ...ORG_WIDE },
  deleteAccount: { document: 'mutation { deleteAccount(id: "acc_x") { id } }', ...ORG_WIDE },
  provisionPartnerAccount: { document: 'mutation { provisionPartnerAccount(input: {name: ""}) { publishableKey { id } } }', ...ORG_WIDE },
  venues: { document: '{ venues { pagination { total } } }', ...ACCOUNT_READ },
  venue: { document: '{ venue(id: "vnu_x") { id } }', ...ACCOUNT_READ },
  events: { document: '{ events { pagination { total } } }', ...ACCOUNT_READ },
  event: { document: '{ event(id: "evt_x") { id } }', ...ACCOUNT_READ },
  eventOccurrences: { document: '{ eventOccurrences(eventId: "evt_x") { pagination { total } } }', ...ACCOUNT_READ },
  ticketTypes: { document: '{ ticketTypes(eventId: "evt_x") { pagination { total } } }', ...ACCOUNT_READ },
  ticketType: { document: '{ ticketType(id: "tkt_x") { id } }', ...ACCOUNT_READ },
  createVenue: { document: 'mutation { createVenue(input: {accountId: "acc_x", name: "x"}) { id } }', ...ORG_WIDE },
  updateVenue: { document: 'mutation { updateVenue(id: "vnu_x", input: {}) { id } }', ...ORG_WIDE },
  createEvent: { document: 'mutation { createEvent(input: {accountId: "acc_x", name: "x"}) { id } }', ...ORG_WIDE },
  updateEvent: { document: 'mutation { updateEvent(id: "evt_x", input: {}) { id } }', ...ORG_WIDE },
  deleteEvent: { document: 'mutation { deleteEvent(id: "evt_x") { id } }', ...ORG_WIDE },
  createEventOccurrence: {
    document: 'mutation { createEventOccurrence(eventId: "evt_x", input: {startDate: "2026-08-01", startTime: "20:00"}) { id } }',
    ...ORG_WIDE,
  },
  createTicketType: { document: 'mutation { createTicketType(eventId: "evt_x", input: {name: "x", priceAmount: 1, currency: "GBP"}) { id } }', ...ORG_WIDE },
  updateTicketType: { document: 'mutation { updateTicketType(id: "tkt_x", input: {}) { id } }', ...ORG_WIDE },
  deleteTicketType: { document: 'mutation { deleteTicketType(id: "tkt_x") { id } }', ...ORG_WIDE },
  webhookEventTypes: { document: '{ webhookEventTypes { type } }', limited: 'ok', keyWithout: 'ok', embed: 'ok' },
  webhookEndpoints: { document: '{ webhookEndpoints { id } }', ...ACCOUNT_READ },
  webhookEndpoint: { document: '{ webhookEndpoint(id: "whe_x") { id } }', ...ACCOUNT_READ },
  webhookDeliveries: { document: '{ webhookDeliveries { pagination { total } } }', ...ACCOUNT_READ },
  createWebhookEndpoint: { document: 'mutation { createWebhookEndpoint(input: {accountId: "acc_x", url: "x"}) { secret } }', ...ORG_WIDE },
  updateWebhookEndpoint: { document: 'mutation { updateWebhookEndpoint(id: "whe_x", input: {}) { id } }', ...ORG_WIDE },
  deleteWebhookEndpoint: { document: 'mutation { deleteWebhookEndpoint(id: "whe_x") { id } }', ...ORG_WIDE },
  testWebhookEndpoint: { document: 'mutation { testWebhookEndpoint(id: "whe_x") { id } }', ...ORG_WIDE },
  rotateWebhookEndpointSecret: { document: 'mutation { rotateWebhookEndpointSecret(id: "whe_x") { secret } }', ...ORG_WIDE },
  recoverWebhookEndpoint: { document: 'mutation { recoverWebhookEndpoint(id: "whe_x", input: {since: "2026-11-01T00:00:00Z"}) { id } }', ...ORG_WIDE },
  webhookDelivery: { document: '{ webhookDelivery(id: "whd_x") { id } }', ...ACCOUNT_READ },
  resendWebhookDelivery: { document: 'mutation { resendWebhookDelivery(id: "whd_x") { id } }', ...ORG_WIDE },
  salesChannels: { document: '{ salesChannels { pagination { total } } }', ...ACCOUNT_READ },
  salesChannel: { document: '{ salesChannel(id: "sch_x") { id } }', ...ACCOUNT_READ },
  createSalesChannel: { document: 'mutation { createSalesChannel(input: {accountId: "acc_x", name: "x", slug: "x"}) { id } }', ...ORG_WIDE },
  updateSalesChannel: { document: 'mutation { updateSalesChannel(id: "sch_x", input: {}) { id } }', ...ORG_WIDE },
  createChannelKey: { document: 'mutation { createChannelKey(channelId: "sch_x", input: {kind: "publishable"}) { key } }', ...ORG_WIDE },
  revokeChannelKey: { document: 'mutation { revokeChannelKey(channelId: "sch_x", id: "schk_x") { id } }', ...ORG_WIDE },
  salesListings: { document: '{ salesListings { pagination { total } } }', ...SALES_API },
  orders: { document: '{ orders { pagination { total } } }', ...ACCOUNT_READ },
  order: { document: '{ order(id: "ord_x") { id } }', ...ACCOUNT_READ },
  customers: { document: '{ customers { pagination { total } } }', ...ACCOUNT_READ },
  customer: { document: '{ customer(id: "cus_x") { id } }', ...ACCOUNT_READ },
  passes: { document: '{ passes { pagination { total } } }', ...ACCOUNT_READ },
  pass: { document: '{ pass(id: "pas_x") { id } }', ...ACCOUNT_READ },
  cancelOrder: { document: 'mutation { cancelOrder(id: "ord_x") { id } }', ...ORG_WIDE },
  refundOrder: { document: 'mutation { refundOrder(id: "ord_x") { id } }', ...ORG_WIDE },
  redeemPass: { document: 'mutation { redeemPass(code: "x") { id } }', ...ORG_WIDE },
  salesCart: { document: '{ salesCart(id: "crt_x") { id } }', ...SALES_API },
  customerOrders: { document: '{ customerOrders { pagination { total } } }', ...SALES_API },
  createSalesCart: { document: 'mutation { createSalesCart { id } }', ...SALES_API },
  updateSalesCart: { document: 'mutation { updateSalesCart(id: "crt_x", items: []) { id } }', ...SALES_API },
  checkoutSalesCart: { document: 'mutation { checkoutSalesCart(id: "crt_x", customer: {email: "a@b.test"}) { checkoutUrl } }', ...SALES_API },
  confirmSalesOrder: { document: 'mutation { confirmSalesOrder(id: "ord_x") { id } }', ...SALES_API },
  requestCustomerMagicLink: { document: 'mutation { requestCustomerMagicLink(email: "a@b.test") { accepted } }', ...SALES_API },
  createCustomerToken: { document: 'mutation { createCustomerToken(code: "x") { customerToken } }', ...SALES_API },
};

describe('every GraphQL root field is in the matrix', () => {
  it('lists each Query and Mutation field', async () => {
    const { schema } = await import('../schema/index.ts');
    const names = [...Object.keys(schema.getQueryType()!.getFields()), ...Object.keys(schema.getMutationType()!.getFields())];
    expect(Object.keys(fields).sort()).toEqual(names.sort());
  });
});

describe.each(Object.entries(fields))('GraphQL %s', (name, field) => {
  it.each(CREDENTIALS)('with %s', async (credential) => {
    const headers = asNewClient();
    const res = await graphql(app, uniqueEmail(field.document), {}, { token: tokens[credential], org: org.slug, headers });
    const { outcome } = expected({ ...field }, credential);
    const code = res.body.errors?.[0]?.extensions?.code ?? 'ok';
    if (outcome === 'revoked') expect([res.status, code]).toEqual([401, 'API_KEY_REVOKED']);
    else if (outcome === 'expired') expect([res.status, code]).toEqual([401, 'API_KEY_EXPIRED']);
    else if (outcome === 'mismatch') expect([res.status, code]).toEqual([403, 'ORG_MISMATCH']);
    else if (outcome === 'ok') expect(['ok', 'VALIDATION_FAILED', 'NOT_FOUND', 'UNAUTHENTICATED', 'CONFLICT'], `${name}: ${code}`).toContain(code);
    else expect(code).toBe(outcome);
    if (outcome === 'ok' && code === 'UNAUTHENTICATED') {
      expect(['login', 'refreshTokens', 'federate'].includes(name) || field.limited === 'UNAUTHENTICATED', name).toBe(true);
    }
  });
});
