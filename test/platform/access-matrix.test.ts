import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveRoutes } from '../../rest-compat/live-routes.ts';
import type { RestRoute } from '../../rest-compat/route.ts';
import { v1Routes } from '../../rest-compat/v1-routes.ts';
import { schema } from '../../schema/index.ts';
import { useTestApp } from '../support/app.ts';
import {
  asAdmin,
  createApiKey,
  customerToken,
  embedToken,
  expiredApiKey,
  otherOrganisation,
  revokedApiKey,
  staffWithoutRights,
  staffWithRoles,
} from '../support/credentials.ts';
import { api, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.ts';
import { cartLine } from '../support/sales.ts';
import { seedThings, type OrganisationThings } from '../support/things.ts';

/**
 * Every credential kind against every /v1 route, every /live route and every GraphQL root field,
 * each cell expecting exactly one answer: where the credential may act, the route's own success
 * status with a body of its documented shape about the real things the request named; where it may
 * not, the status and code contract.md prescribes (docs/api.md, "Refusals"). The things named are real
 * (seeded once per organisation), and a cell that consumes one (delete, revoke, cancel, redeem,
 * check out) makes its own first, so cells may run in any order and at once. A route or root field
 * missing from the tables fails the suite.
 */

/** The credential a cell sends (otherOrgThing: the admin, naming another organisation's things). */
const COLUMNS = [
  'admin', // staff, organisation admin
  'viewer', // staff, Viewer on the first account: reads there, nothing else
  'noRights', // staff, an active user holding no role
  'keyWith', // organisation API key holding exactly the scopes the request needs
  'keyWithout', // organisation API key holding every other scope
  'revokedKey',
  'expiredKey',
  'embedWith', // embed token on the first account holding exactly the scopes the request needs
  'embedWithout', // embed token on the first account holding every other scope
  'publishable', // sales channel key svpk_
  'secret', // sales channel key svsk_
  'customer', // storefront customer token (magic link)
  'otherOrgStaff', // another organisation's admin
  'otherOrgKey', // another organisation's API key holding everything
  'otherOrgChannelKey', // another organisation's publishable key
  'none',
  'otherOrgThing', // the admin (on /live the secret key) naming another organisation's things
] as const;
type Column = (typeof COLUMNS)[number];

const STATUS = {
  UNAUTHENTICATED: 401,
  API_KEY_REVOKED: 401,
  API_KEY_EXPIRED: 401,
  ORG_MISMATCH: 403,
  SIGNED_IN_USER_REQUIRED: 403,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
} as const;
type Refusal = keyof typeof STATUS;
/** 'ok': the route's success status (the field's data on GraphQL) with a valid body. */
type Outcome = 'ok' | Refusal;
type Access = Partial<Record<Column, Outcome>>;

// The seven columns whose answer depends on the route; the others follow from the surface.
const SIR = 'SIGNED_IN_USER_REQUIRED';
const ANY_CREDENTIAL: Access = {
  admin: 'ok',
  viewer: 'ok',
  noRights: 'ok',
  keyWith: 'ok',
  keyWithout: 'ok',
  embedWith: 'ok',
  embedWithout: 'ok',
};
/** No credential needed (/meta/versions, /auth/*): every management credential and none are served. */
const PUBLIC: Access = { ...ANY_CREDENTIAL, none: 'ok' };
/** People only (/me/*). */
const SIGNED_IN: Access = { admin: 'ok', viewer: 'ok', noRights: 'ok', keyWith: SIR, keyWithout: SIR, embedWith: SIR, embedWithout: SIR };
/** Things of the organisation as a whole (roles, identity providers, invitations, …): the right on every account (`:all`). */
const ORGANISATION_WIDE: Access = {
  admin: 'ok',
  viewer: 'FORBIDDEN',
  noRights: 'FORBIDDEN',
  keyWith: 'ok',
  keyWithout: 'NOT_FOUND',
  embedWith: 'NOT_FOUND', // an embed session holds its scopes on one account only
  embedWithout: 'NOT_FOUND',
};
/** Reads of things on the first account: the viewer and the embed session there may. */
const ACCOUNT_READ: Access = {
  admin: 'ok',
  viewer: 'ok',
  noRights: 'FORBIDDEN',
  keyWith: 'ok',
  keyWithout: 'NOT_FOUND',
  embedWith: 'ok',
  embedWithout: 'NOT_FOUND',
};
const ACCOUNT_WRITE: Access = { ...ACCOUNT_READ, viewer: 'FORBIDDEN' };
/** The sales API's own routes (/live): every management credential is 401, whatever it holds. */
const MANAGEMENT_REFUSED: Access = {
  admin: 'UNAUTHENTICATED',
  viewer: 'UNAUTHENTICATED',
  noRights: 'UNAUTHENTICATED',
  keyWith: 'UNAUTHENTICATED',
  keyWithout: 'UNAUTHENTICATED',
  embedWith: 'UNAUTHENTICATED',
  embedWithout: 'UNAUTHENTICATED',
};
const CHANNEL_KEYS: Access = { ...MANAGEMENT_REFUSED, publishable: 'ok', secret: 'ok' };

type Surface = 'v1' | 'live' | 'graphql';
/** What the columns a management row (/v1, GraphQL) leaves out answer. */
const MANAGEMENT: Access = {
  revokedKey: 'API_KEY_REVOKED',
  expiredKey: 'API_KEY_EXPIRED',
  publishable: 'UNAUTHENTICATED', // channel keys and customer tokens open the sales API only
  secret: 'UNAUTHENTICATED',
  customer: 'UNAUTHENTICATED',
  otherOrgStaff: 'ORG_MISMATCH',
  otherOrgKey: 'ORG_MISMATCH',
  otherOrgChannelKey: 'UNAUTHENTICATED',
  none: 'UNAUTHENTICATED',
};
const SURFACE: Record<Surface, Access> = {
  v1: MANAGEMENT,
  graphql: MANAGEMENT,
  live: {
    ...MANAGEMENT_REFUSED,
    revokedKey: 'API_KEY_REVOKED',
    expiredKey: 'API_KEY_EXPIRED',
    publishable: 'UNAUTHENTICATED',
    secret: 'UNAUTHENTICATED',
    customer: 'UNAUTHENTICATED',
    otherOrgStaff: 'ORG_MISMATCH',
    otherOrgKey: 'ORG_MISMATCH',
    otherOrgChannelKey: 'ORG_MISMATCH',
    none: 'UNAUTHENTICATED',
  },
};

/** Credentials /graphql refuses before anything executes: the HTTP status is the refusal's; field refusals answer 200. */
const REFUSED_BEFORE_EXECUTION = new Set<Column>([
  'revokedKey',
  'expiredKey',
  'publishable',
  'secret',
  'customer',
  'otherOrgStaff',
  'otherOrgKey',
  'otherOrgChannelKey',
]);

/** Every scope an API key or embed session can hold; `keyWithout` holds all of these but the row's. */
const ALL_SCOPES = [
  'organisation',
  'accounts',
  'users',
  'roles',
  'role_assignments',
  'identity_providers',
  'invitations',
  'api_keys',
  'events',
  'occurrences',
  'ticket_types',
  'venues',
  'sales_channels',
  'orders',
  'customers',
  'passes',
  'webhooks',
]
  .flatMap((resource) => [`${resource}.read`, `${resource}.write`])
  .concat(['orders.cancel', 'orders.refund', 'passes.redeem']);
/** A key or session holding nothing a route asks for. */
const NO_SCOPE = ['nothing.read'];

interface Cell {
  column: Column;
  /** Unique per cell: its client address and unique names. */
  n: number;
  /** Whose things the request names: the organisation's, or in the otherOrgThing column the other one's. */
  things: OrganisationThings;
  /**
   * A thing the request consumes (deletes, revokes, cancels, redeems): a fresh one for a cell that
   * may act, so no cell depends on another; the cells expected to be refused share one per row.
   */
  own<T>(make: () => Promise<T>): Promise<T>;
}

interface Row<Request> {
  access: Access;
  /** Scopes an API key or embed session needs for this very request (what keyWith holds; keyWithout holds the rest). */
  scopes?: string[];
  /** The request names things of the organisation (a path id, or an id in the body): otherOrgThing applies. */
  names?: Refusal;
  request(cell: Cell): Request | Promise<Request>;
  /** More about a successful answer: that it is about the things the request named. */
  check?(body: any, cell: Cell): void;
  /** Cells that reveal a defect of the service: they fail today (it.fails), each naming what is wrong. */
  defects?: Partial<Record<Column, string>>;
  /**
   * Why a refusal here is decided only once the request's input is read (what it asks for, or a
   * rule of the service rather than of the field): a garbled request is then judged as such.
   */
  refusedAfterInput?: string;
}

interface RestRequest {
  path: string;
  body?: unknown;
  /** X-Live-Session: the sales session a storefront holds (ignored by non-channel credentials). */
  session?: string;
}
interface GraphqlRequest {
  document: string;
  variables?: Record<string, unknown>;
}

// The matrix makes a fresh webhook endpoint for every cell that consumes one (well over the default 20 per account).
const app = useTestApp({ IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: 'true', WEBHOOK_MAX_ENDPOINTS_PER_ACCOUNT: '1000' });
let op: TestOidcProvider;
let org: TestOrganisation;
let mine: OrganisationThings;
let theirs: OrganisationThings;
/** The person signing in through the organisation's identity provider (POST /auth/federate). */
const federated = { sub: `sub-${randomBytes(4).toString('hex')}`, email: `federated-${randomBytes(4).toString('hex')}@matrix.test` };
const fixed = {} as Record<'viewer' | 'noRights' | 'revokedKey' | 'expiredKey' | 'customer' | 'otherOrgStaff' | 'otherOrgKey', string>;

beforeAll(async () => {
  op = await startOidcProvider();
  const other = await otherOrganisation(app, 'matrixother');
  org = await createOrganisation(app, 'matrix');
  [mine, theirs] = await Promise.all([
    seedThings(app, org, { identityProvider: { providerType: 'oidc', issuer: op.issuer, jwksUri: op.jwksUri, clientId: op.clientId } }),
    seedThings(app, other.org),
  ]);
  const [viewer, noRights, revokedKey, expiredKey, customer] = await Promise.all([
    staffWithRoles(app, org, ['viewer']),
    staffWithoutRights(app, org),
    revokedApiKey(app, org),
    expiredApiKey(app, org),
    customerToken(app, mine.catalogue.channel.publishable, mine.order.email),
  ]);
  Object.assign(fixed, {
    viewer: viewer.token,
    noRights: noRights.token,
    revokedKey,
    expiredKey,
    customer: customer.customerToken,
    otherOrgStaff: other.staffToken,
    otherOrgKey: other.key,
  });
  // The federated person is a user of the organisation (invited, then linked by a first sign-in).
  const invited = await api(app, 'POST', '/v1/user-invitations', {
    ...asAdmin(org),
    body: { organisationId: org.organisation.id, email: federated.email },
  });
  expect(invited.status).toBe(201);
  expect((await api(app, 'POST', '/v1/auth/federate', { body: { token: await idToken() } })).status).toBe(200);
}, 120_000);
afterAll(async () => {
  await op?.stop();
});

/** An ID token of the test OpenID provider for the federated person. */
function idToken(): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return op.signWithProviderKey({
    iss: op.issuer,
    aud: op.clientId,
    sub: federated.sub,
    email: federated.email,
    email_verified: true,
    iat: now,
    exp: now + 600,
  });
}

/** API keys and embed tokens by the scopes they hold: made once, shared by every cell asking for the same. */
const keys = new Map<string, Promise<string>>();
const embeds = new Map<string, Promise<string>>();
const once = (cache: Map<string, Promise<string>>, scopes: string[], make: () => Promise<string>) => {
  const id = [...scopes].sort().join(' ');
  if (!cache.has(id)) cache.set(id, make());
  return cache.get(id)!;
};
const holding = (scopes: string[] | undefined, what: 'with' | 'without') => {
  if (!scopes) return what === 'with' ? ALL_SCOPES : NO_SCOPE;
  return what === 'with' ? scopes : ALL_SCOPES.filter((scope) => !scopes.includes(scope));
};

/** The Authorization of a cell's credential, on a surface. */
async function credential(column: Column, row: Row<unknown>, surface: Surface): Promise<string | undefined> {
  switch (column) {
    case 'admin':
      return org.adminToken;
    case 'otherOrgThing':
      return surface === 'live' ? mine.catalogue.channel.secret : org.adminToken;
    case 'keyWith':
    case 'keyWithout': {
      const scopes = holding(row.scopes, column === 'keyWith' ? 'with' : 'without');
      return once(keys, scopes, async () => (await createApiKey(app, org, scopes)).key);
    }
    case 'embedWith':
    case 'embedWithout': {
      const scopes = holding(row.scopes, column === 'embedWith' ? 'with' : 'without');
      return once(embeds, scopes, () => embedToken(app, org, scopes, { expiresInSeconds: 3600 }));
    }
    case 'publishable':
      return mine.catalogue.channel.publishable;
    case 'secret':
      return mine.catalogue.channel.secret;
    case 'otherOrgChannelKey':
      return theirs.catalogue.channel.publishable;
    case 'none':
      return undefined;
    default:
      return fixed[column];
  }
}

/** Each cell comes from its own client address: sign-in failures and storefronts are throttled per address (docs/security.md). */
let cells = 0;
const clientAddress = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

function expectations(surface: Surface, row: Row<unknown>): Array<[Column, Outcome]> {
  const access: Access = { ...SURFACE[surface], ...(row.names ? { otherOrgThing: row.names } : {}), ...row.access };
  return COLUMNS.filter((column) => access[column] !== undefined).map((column) => [column, access[column]!]);
}

/**
 * Defects of the service the matrix shows. A cell naming one runs as it.fails: it fails today and
 * fails the suite once the defect is fixed, when its entry in the row's `defects` goes.
 */
const unique = (n: number, what: string) => `${what}-${n}-${randomBytes(2).toString('hex')}`;

// ---------------------------------------------------------------------------------------------
// /v1: one row per route of rest-compat/v1-routes.ts, keyed "METHOD /path".
// ---------------------------------------------------------------------------------------------

const v1: Record<string, Row<RestRequest>> = {
  'GET /meta/versions': { access: PUBLIC, request: () => ({ path: '/meta/versions' }) },
  'POST /auth/login': {
    access: PUBLIC,
    request: () => ({ path: '/auth/login', body: { email: org.email, password: org.password } }),
    check: (body) => expect(body.user.email).toBe(org.email),
  },
  'POST /auth/refresh': {
    access: PUBLIC,
    request: async ({ things, own }) => ({ path: '/auth/refresh', body: { refreshToken: await own(things.fresh.refreshToken) } }),
  },
  'POST /auth/logout': {
    access: PUBLIC,
    request: async ({ things, own }) => ({ path: '/auth/logout', body: { refreshToken: await own(things.fresh.refreshToken) } }),
    check: (body) => expect(body).toEqual({ success: true }),
  },
  'GET /me': { access: SIGNED_IN, request: () => ({ path: '/me' }) },
  'GET /me/organisations': {
    access: SIGNED_IN,
    request: () => ({ path: '/me/organisations' }),
    check: (body) => expect(body.organisations.map((o: { id: string }) => o.id)).toEqual([org.organisation.id]),
  },
  'GET /me/roles': { access: SIGNED_IN, request: () => ({ path: '/me/roles' }) },
  'GET /me/permissions': { access: SIGNED_IN, request: () => ({ path: '/me/permissions?resource=events' }) },
  // Every credential may ask why it may (or may not) do something; naming another organisation's account is 404.
  'GET /access/explain': {
    access: ANY_CREDENTIAL,
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/access/explain?permission=events.read&accountId=${things.org.account.id}` }),
    check: (body, { things }) => expect(body.explanation.accountId).toBe(things.org.account.id),
  },
  'GET /roles': { access: ORGANISATION_WIDE, scopes: ['roles.read'], request: () => ({ path: '/roles' }) },
  'POST /roles': {
    access: ORGANISATION_WIDE,
    scopes: ['roles.write', 'events.read'],
    request: ({ n }) => ({ path: '/roles', body: { name: unique(n, 'Matrix role'), permissions: ['events.read'] } }),
  },
  'GET /roles/{id}': {
    access: ORGANISATION_WIDE,
    scopes: ['roles.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/roles/${things.roleId}` }),
    check: (body, { things }) => expect(body.id).toBe(things.roleId),
  },
  'PATCH /roles/{id}': {
    access: ORGANISATION_WIDE,
    scopes: ['roles.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/roles/${things.roleId}`, body: { description: 'Changed by the matrix' } }),
    check: (body, { things }) => expect(body.id).toBe(things.roleId),
  },
  'DELETE /roles/{id}': {
    access: ORGANISATION_WIDE,
    scopes: ['roles.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/roles/${await own(things.fresh.roleId)}` }),
  },
  'GET /user-account-roles': {
    access: ACCOUNT_READ,
    scopes: ['role_assignments.read'],
    request: ({ things }) => ({ path: `/user-account-roles?userId=${things.userId}` }),
  },
  'POST /user-account-roles': {
    access: ACCOUNT_WRITE,
    scopes: ['role_assignments.write', 'events.read'], // and every permission of the role assigned
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({
      path: '/user-account-roles',
      body: { userId: (await own(things.fresh.user)).id, accountId: things.org.account.id, roleId: things.assignedRoleId },
    }),
    check: (body, { things }) => expect(body.assignment.roleId).toBe(things.assignedRoleId),
  },
  'PUT /user-account-roles': {
    access: ACCOUNT_WRITE,
    scopes: ['role_assignments.write', 'events.read'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({
      path: '/user-account-roles',
      body: { userId: (await own(things.fresh.user)).id, accountId: things.org.account.id, roleIds: [things.assignedRoleId] },
    }),
    check: (body, { things }) => expect(body.assignments.map((a: { roleId: string }) => a.roleId)).toEqual([things.assignedRoleId]),
  },
  'DELETE /user-account-roles/{id}': {
    access: ACCOUNT_WRITE,
    scopes: ['role_assignments.write', 'events.read'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/user-account-roles/${await own(things.fresh.assignmentId)}` }),
  },
  'GET /api-keys': {
    access: { ...SIGNED_IN, noRights: 'FORBIDDEN' },
    request: () => ({ path: '/api-keys' }),
  },
  'POST /api-keys': {
    access: { ...SIGNED_IN, viewer: 'FORBIDDEN', noRights: 'FORBIDDEN' },
    request: () => ({ path: '/api-keys', body: { name: 'Matrix key', scopes: ['events.read'] } }),
  },
  'POST /api-keys/{id}/revoke': {
    access: { ...SIGNED_IN, viewer: 'FORBIDDEN', noRights: 'FORBIDDEN' },
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/api-keys/${await own(things.fresh.apiKeyId)}/revoke` }),
    check: (body) => expect(body.apiKey.revokedAt).toEqual(expect.any(String)),
  },
  'POST /embed/sessions': {
    // Scopes no wider than the minter's on the account; an embed token never mints (404).
    access: { ...ACCOUNT_READ, embedWith: 'NOT_FOUND' },
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    refusedAfterInput: 'whether a caller may mint depends on the scopes and account it asks for',
    request: ({ things }) => ({ path: '/embed/sessions', body: { accountId: things.org.account.id, scopes: ['events.read'] } }),
    check: (body, { things }) => expect(body.accountId).toBe(things.org.account.id),
  },
  'GET /embed/sessions/current': {
    // Only an embed token has a current session; anyone else's request carries none (404).
    access: {
      ...ANY_CREDENTIAL,
      admin: 'NOT_FOUND',
      viewer: 'NOT_FOUND',
      noRights: 'NOT_FOUND',
      keyWith: 'NOT_FOUND',
      keyWithout: 'NOT_FOUND',
    },
    request: () => ({ path: '/embed/sessions/current' }),
    check: (body) => expect(body.accountId).toBe(org.account.id),
  },
  'GET /user-invitations': { access: ORGANISATION_WIDE, scopes: ['invitations.read'], request: () => ({ path: '/user-invitations' }) },
  'POST /user-invitations': {
    access: ORGANISATION_WIDE,
    scopes: ['invitations.write'],
    request: ({ n }) => ({
      path: '/user-invitations',
      body: { organisationId: org.organisation.id, email: `${unique(n, 'invitee')}@matrix.test` },
    }),
  },
  'GET /user-invitations/{id}': {
    access: ORGANISATION_WIDE,
    scopes: ['invitations.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/user-invitations/${things.invitationId}` }),
    check: (body, { things }) => expect(body.invitation.id).toBe(things.invitationId),
  },
  'DELETE /user-invitations/{id}': {
    access: ORGANISATION_WIDE,
    scopes: ['invitations.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/user-invitations/${await own(things.fresh.invitationId)}` }),
  },
  'POST /user-invitations/{id}/resend': {
    access: ORGANISATION_WIDE,
    scopes: ['invitations.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/user-invitations/${await own(things.fresh.invitationId)}/resend` }),
  },
  'POST /auth/invitations/redeem': {
    access: PUBLIC,
    request: async ({ things, own }) => ({
      path: '/auth/invitations/redeem',
      body: { code: await own(things.fresh.invitationCode), password: 'long enough password' },
    }),
  },
  'GET /identity-providers': {
    access: ORGANISATION_WIDE,
    scopes: ['identity_providers.read'],
    request: () => ({ path: '/identity-providers' }),
  },
  'POST /identity-providers': {
    access: ORGANISATION_WIDE,
    scopes: ['identity_providers.write'],
    request: ({ things }) => ({ path: '/identity-providers', body: things.fresh.identityProviderBody() }),
  },
  'GET /identity-providers/{id}': {
    access: ORGANISATION_WIDE,
    scopes: ['identity_providers.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/identity-providers/${things.identityProviderId}` }),
    check: (body, { things }) => expect(body.provider.id).toBe(things.identityProviderId),
  },
  'PATCH /identity-providers/{id}': {
    access: ORGANISATION_WIDE,
    scopes: ['identity_providers.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/identity-providers/${things.identityProviderId}`, body: { isEnabled: true } }),
  },
  'POST /auth/federate': {
    access: PUBLIC,
    request: async () => ({ path: '/auth/federate', body: { token: await idToken() } }),
    check: (body) => expect(body.user.email).toBe(federated.email),
  },
  'GET /organisation': {
    access: ACCOUNT_READ, // organisation.read on any account reads it
    scopes: ['organisation.read'],
    request: () => ({ path: '/organisation' }),
    check: (body) => expect(body.organisation.id).toBe(org.organisation.id),
  },
  'PATCH /organisation': {
    access: ORGANISATION_WIDE,
    scopes: ['organisation.write'],
    request: () => ({ path: '/organisation', body: { name: org.organisation.name } }),
  },
  'GET /accounts': { access: ACCOUNT_READ, scopes: ['accounts.read'], request: () => ({ path: '/accounts' }) },
  'POST /accounts': {
    access: ORGANISATION_WIDE,
    scopes: ['accounts.write'],
    request: ({ n }) => ({ path: '/accounts', body: { name: unique(n, 'Account') } }),
  },
  'GET /accounts/{id}': {
    access: ACCOUNT_READ,
    scopes: ['accounts.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/accounts/${things.org.account.id}` }),
    check: (body, { things }) => expect(body.account.id).toBe(things.org.account.id),
  },
  'PATCH /accounts/{id}': {
    access: ACCOUNT_WRITE,
    scopes: ['accounts.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/accounts/${things.org.account.id}`, body: { name: things.org.account.name } }),
  },
  'DELETE /accounts/{id}': {
    access: ORGANISATION_WIDE,
    scopes: ['accounts.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/accounts/${await own(things.fresh.accountId)}` }),
  },
  'POST /partner/accounts': {
    access: ORGANISATION_WIDE,
    scopes: ['accounts.write', 'sales_channels.write'],
    request: ({ n }) => ({ path: '/partner/accounts', body: { name: unique(n, 'Partner') } }),
  },
  'GET /venues': { access: ACCOUNT_READ, scopes: ['venues.read'], request: () => ({ path: '/venues' }) },
  'POST /venues': {
    access: ACCOUNT_WRITE,
    scopes: ['venues.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: '/venues', body: { accountId: things.org.account.id, name: 'Matrix venue' } }),
  },
  'GET /venues/{id}': {
    access: ACCOUNT_READ,
    scopes: ['venues.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/venues/${things.catalogue.venueId}` }),
    check: (body, { things }) => expect(body.venue.id).toBe(things.catalogue.venueId),
  },
  'PATCH /venues/{id}': {
    access: ACCOUNT_WRITE,
    scopes: ['venues.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/venues/${things.catalogue.venueId}`, body: { capacity: 500 } }),
  },
  'GET /events': { access: ACCOUNT_READ, scopes: ['events.read'], request: () => ({ path: '/events' }) },
  'POST /events': {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: '/events', body: { accountId: things.org.account.id, name: 'Matrix event', timezone: 'UTC' } }),
  },
  'GET /events/{id}': {
    access: ACCOUNT_READ,
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/events/${things.catalogue.eventId}` }),
    check: (body, { things }) => expect(body.event.id).toBe(things.catalogue.eventId),
  },
  'PATCH /events/{id}': {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/events/${things.draft.eventId}`, body: { description: 'Changed by the matrix' } }),
  },
  'DELETE /events/{id}': {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/events/${await own(things.fresh.eventId)}` }),
  },
  'GET /events/{id}/occurrences': {
    access: ACCOUNT_READ,
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/events/${things.catalogue.eventId}/occurrences` }),
    check: (body, { things }) => expect(body.eventOccurrences.map((o: { id: string }) => o.id)).toEqual([things.catalogue.occurrenceId]),
  },
  'POST /events/{id}/occurrences': {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({
      path: `/events/${things.draft.eventId}/occurrences`,
      body: { startDate: '2027-08-01', startTime: '20:00' },
    }),
  },
  'GET /events/{id}/ticket-types': {
    access: ACCOUNT_READ,
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/events/${things.catalogue.eventId}/ticket-types` }),
    check: (body, { things }) => expect(body.ticketTypes.map((t: { id: string }) => t.id)).toEqual([things.catalogue.ticketTypeId]),
  },
  'POST /events/{id}/ticket-types': {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({
      path: `/events/${things.draft.eventId}/ticket-types`,
      body: { name: 'Matrix type', priceAmount: 1000, currency: 'GBP' },
    }),
  },
  'PATCH /ticket-types/{id}': {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/ticket-types/${things.draft.ticketTypeId}`, body: { description: 'Changed by the matrix' } }),
  },
  'GET /webhook-event-types': { access: ANY_CREDENTIAL, request: () => ({ path: '/webhook-event-types' }) },
  'GET /webhook-endpoints': { access: ACCOUNT_READ, scopes: ['webhooks.read'], request: () => ({ path: '/webhook-endpoints' }) },
  'POST /webhook-endpoints': {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: ({ things, n }) => ({
      path: '/webhook-endpoints',
      body: { accountId: things.org.account.id, url: `http://127.0.0.1:9/matrix-${n}`, eventTypes: ['ticket.redeemed'] },
    }),
  },
  'GET /webhook-endpoints/{id}': {
    access: ACCOUNT_READ,
    scopes: ['webhooks.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/webhook-endpoints/${things.webhookEndpointId}` }),
    check: (body, { things }) => expect(body.endpoint.id).toBe(things.webhookEndpointId),
  },
  'PATCH /webhook-endpoints/{id}': {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/webhook-endpoints/${things.webhookEndpointId}`, body: { description: 'Changed by the matrix' } }),
  },
  'DELETE /webhook-endpoints/{id}': {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/webhook-endpoints/${await own(things.fresh.webhookEndpointId)}` }),
  },
  'POST /webhook-endpoints/{id}/test': {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/webhook-endpoints/${await own(things.fresh.webhookEndpointId)}/test` }),
  },
  'GET /webhook-deliveries': { access: ACCOUNT_READ, scopes: ['webhooks.read'], request: () => ({ path: '/webhook-deliveries' }) },
  'GET /webhook-events': {
    access: ACCOUNT_READ,
    scopes: ['webhooks.read'],
    request: () => ({ path: '/webhook-events' }),
    check: (body) => expect(body.webhookEvents).toEqual(expect.any(Array)),
  },
  'GET /webhook-deliveries/{id}': {
    access: ACCOUNT_READ,
    scopes: ['webhooks.read'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/webhook-deliveries/${await own(things.fresh.webhookDeliveryId)}` }),
  },
  'POST /webhook-deliveries/{id}/resend': {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/webhook-deliveries/${await own(things.fresh.webhookDeliveryId)}/resend` }),
  },
  'POST /webhook-endpoints/{id}/rotate-secret': {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({
      path: `/webhook-endpoints/${await own(things.fresh.webhookEndpointId)}/rotate-secret`,
      body: { overlapSeconds: 60 },
    }),
  },
  'POST /webhook-endpoints/{id}/recover': {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({
      path: `/webhook-endpoints/${await own(things.fresh.webhookEndpointId)}/recover`,
      body: { since: new Date(Date.now() - 3_600_000).toISOString() },
    }),
  },
  'GET /sales-channels': { access: ACCOUNT_READ, scopes: ['sales_channels.read'], request: () => ({ path: '/sales-channels' }) },
  'POST /sales-channels': {
    access: ACCOUNT_WRITE,
    scopes: ['sales_channels.write'],
    names: 'NOT_FOUND',
    request: ({ things, n }) => ({
      path: '/sales-channels',
      body: { accountId: things.org.account.id, name: 'Matrix channel', slug: unique(n, 'matrix') },
    }),
  },
  'GET /sales-channels/{id}': {
    access: ACCOUNT_READ,
    scopes: ['sales_channels.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/sales-channels/${things.catalogue.channel.channelId}` }),
    check: (body, { things }) => expect(body.salesChannel.id).toBe(things.catalogue.channel.channelId),
  },
  'PATCH /sales-channels/{id}': {
    access: ACCOUNT_WRITE,
    scopes: ['sales_channels.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/sales-channels/${things.catalogue.channel.channelId}`, body: { name: 'Web shop' } }),
  },
  'POST /sales-channels/{id}/keys': {
    access: ACCOUNT_WRITE,
    scopes: ['sales_channels.write'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/sales-channels/${things.catalogue.channel.channelId}/keys`, body: { kind: 'publishable' } }),
    check: (body) => expect(body.key).toMatch(/^svpk_/),
  },
  'POST /sales-channels/{id}/keys/{keyId}/revoke': {
    access: ACCOUNT_WRITE,
    scopes: ['sales_channels.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({
      path: `/sales-channels/${things.catalogue.channel.channelId}/keys/${await own(things.fresh.channelKeyId)}/revoke`,
    }),
    check: (body) => expect(body.channelKey.revokedAt).toEqual(expect.any(String)),
  },
  'GET /orders': { access: ACCOUNT_READ, scopes: ['orders.read'], request: () => ({ path: '/orders' }) },
  'GET /orders/{id}': {
    access: ACCOUNT_READ,
    scopes: ['orders.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/orders/${things.order.id}` }),
    check: (body, { things }) => expect(body.order.id).toBe(things.order.id),
  },
  'POST /orders/{id}/cancel': {
    access: ACCOUNT_WRITE,
    scopes: ['orders.cancel'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/orders/${(await own(things.fresh.order)).order.id}/cancel`, body: {} }),
    check: (body) => expect(body.order.status).toBe('cancelled'),
  },
  'POST /orders/{id}/refund': {
    access: ACCOUNT_WRITE,
    scopes: ['orders.refund'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/orders/${(await own(things.fresh.order)).order.id}/refund`, body: {} }),
    check: (body) => expect(body.order.status).toBe('refunded'),
  },
  'GET /customers': { access: ACCOUNT_READ, scopes: ['customers.read'], request: () => ({ path: '/customers' }) },
  'GET /customers/{id}': {
    access: ACCOUNT_READ,
    scopes: ['customers.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/customers/${things.order.customerId}` }),
    check: (body, { things }) => expect(body.customer.id).toBe(things.order.customerId),
  },
  'GET /passes': {
    access: ACCOUNT_READ,
    scopes: ['passes.read'],
    request: ({ things }) => ({ path: `/passes?orderId=${things.order.id}` }),
  },
  'GET /passes/{id}': {
    access: ACCOUNT_READ,
    scopes: ['passes.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/passes/${things.pass.id}` }),
    check: (body, { things }) => expect(body.pass.id).toBe(things.pass.id),
  },
  'POST /passes/{id}/redeem': {
    access: ACCOUNT_WRITE,
    scopes: ['passes.redeem'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: `/passes/${(await own(things.fresh.pass)).id}/redeem`, body: {} }),
  },
  'POST /redemptions': {
    access: ACCOUNT_WRITE,
    scopes: ['passes.redeem'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) => ({ path: '/redemptions', body: { code: (await own(things.fresh.pass)).code } }),
  },
  'GET /audit-entries': {
    access: ACCOUNT_READ,
    scopes: ['audit.read'],
    request: () => ({ path: '/audit-entries' }),
    check: (body) => expect(body.auditEntries.length).toBeGreaterThan(0),
  },
};

// ---------------------------------------------------------------------------------------------
// /live: one row per route of rest-compat/live-routes.ts.
// ---------------------------------------------------------------------------------------------

const live: Record<string, Row<RestRequest>> = {
  'GET /sales/listings': {
    access: CHANNEL_KEYS,
    request: () => ({ path: '/sales/listings' }),
    check: (body) => expect(body.events.map((e: { id: string }) => e.id)).toEqual([mine.catalogue.eventId]),
  },
  'POST /sales/carts': {
    access: CHANNEL_KEYS,
    request: ({ things }) => ({ path: '/sales/carts', body: { items: [cartLine(things.catalogue)] } }),
  },
  'GET /sales/carts/{id}': {
    access: CHANNEL_KEYS,
    names: 'NOT_FOUND',
    request: ({ things }) => ({ path: `/sales/carts/${things.cart.id}`, session: things.cart.session }),
    check: (body, { things }) => expect(body.cart.id).toBe(things.cart.id),
  },
  'PATCH /sales/carts/{id}': {
    access: CHANNEL_KEYS,
    names: 'NOT_FOUND',
    request: ({ things }) => ({
      path: `/sales/carts/${things.cart.id}`,
      body: { items: [cartLine(things.catalogue)] },
      session: things.cart.session,
    }),
    check: (body, { things }) => expect(body.cart.id).toBe(things.cart.id),
  },
  'POST /sales/carts/{id}/checkout': {
    access: CHANNEL_KEYS,
    names: 'NOT_FOUND',
    request: async ({ things, n, own }) => {
      const cart = await own(things.fresh.cart);
      return {
        path: `/sales/carts/${cart.id}/checkout`,
        body: { customer: { email: `${unique(n, 'buyer')}@matrix.test` } },
        session: cart.session,
      };
    },
    check: (body) => expect(body.order.status).toBe('pending'),
  },
  'POST /sales/orders/{id}/confirm': {
    access: { ...CHANNEL_KEYS, publishable: 'NOT_FOUND' }, // servers only
    names: 'NOT_FOUND',
    refusedAfterInput: 'the service, not the field, tells a publishable key from a secret one',
    request: async ({ things, own }) => ({
      path: `/sales/orders/${(await own(() => things.fresh.order({ pending: true }))).order.id}/confirm`,
      body: {},
    }),
    check: (body) => expect(body.order.status).toBe('confirmed'),
  },
  'POST /sales/customer-auth/magic-link': {
    access: CHANNEL_KEYS,
    request: ({ things }) => ({ path: '/sales/customer-auth/magic-link', body: { email: things.order.email } }),
  },
  'POST /sales/customer-tokens': {
    access: CHANNEL_KEYS,
    // A code of another organisation's customer is a code this channel does not know: 401.
    names: 'UNAUTHENTICATED',
    request: async ({ things, n, own }) => {
      const code = await own(() => things.fresh.magicLinkCode({ 'x-forwarded-for': clientAddress(n) }));
      return { path: '/sales/customer-tokens', body: { code } };
    },
  },
  'GET /sales/me/orders': {
    access: { ...MANAGEMENT_REFUSED, customer: 'ok' },
    request: () => ({ path: '/sales/me/orders' }),
    check: (body) => expect(body.orders.map((o: { id: string }) => o.id)).toEqual([mine.order.id]),
  },
};

// ---------------------------------------------------------------------------------------------
// GraphQL: one row per Query and Mutation field. The sales fields answer only through /live, with
// a channel key or a customer token, which /graphql refuses: every credential is refused there.
// ---------------------------------------------------------------------------------------------

const SALES_FIELD: Access = MANAGEMENT_REFUSED;
const gql = (document: string, variables?: Record<string, unknown>): GraphqlRequest => ({ document, variables });

const graphqlFields: Record<string, Row<GraphqlRequest>> = {
  apiVersions: { access: PUBLIC, request: () => gql('{ apiVersions { current } }') },
  me: { access: SIGNED_IN, request: () => gql('{ me { id } }') },
  viewer: { access: SIGNED_IN, request: () => gql('{ viewer { id roleAssignments { id } } }') },
  myOrganisations: { access: SIGNED_IN, request: () => gql('{ myOrganisations { organisationId } }') },
  myRoles: { access: SIGNED_IN, request: () => gql('{ myRoles { isOrgAdmin } }') },
  myPermissions: { access: SIGNED_IN, request: () => gql('{ myPermissions(resource: "events") { isOrgAdmin } }') },
  explainAccess: {
    access: ANY_CREDENTIAL,
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql('query($id: ID) { explainAccess(permission: "events.read", accountId: $id) { accountId } }', { id: things.org.account.id }),
    check: (data, { things }) => expect(data.accountId).toBe(things.org.account.id),
  },
  roles: { access: ORGANISATION_WIDE, scopes: ['roles.read'], request: () => gql('{ roles { nodes { id } } }') },
  role: {
    access: ORGANISATION_WIDE,
    scopes: ['roles.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { role(id: $id) { id } }', { id: things.roleId }),
    check: (data, { things }) => expect(data.id).toBe(things.roleId),
  },
  roleAssignment: {
    access: ACCOUNT_READ,
    scopes: ['role_assignments.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { roleAssignment(id: $id) { id } }', { id: things.assignmentId }),
    check: (data, { things }) => expect(data.id).toBe(things.assignmentId),
  },
  // A user is shown to whoever may read role assignments where they hold one; to others they do not exist.
  user: {
    access: { ...ACCOUNT_READ, noRights: 'NOT_FOUND' },
    scopes: ['role_assignments.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { user(id: $id) { id } }', { id: things.userId }),
    check: (data, { things }) => expect(data.id).toBe(things.userId),
  },
  roleAssignments: {
    access: ACCOUNT_READ,
    scopes: ['role_assignments.read'],
    request: () => gql('{ roleAssignments { nodes { id } } }'),
  },
  // user(id:)'s rule as a list: whoever may read role assignments somewhere.
  users: {
    access: ACCOUNT_READ,
    scopes: ['role_assignments.read'],
    request: () => gql('{ users { nodes { id } } }'),
  },
  // The organisation-wide key is not among the viewer's (those of its account): not found.
  apiKey: {
    access: { ...SIGNED_IN, viewer: 'NOT_FOUND', noRights: 'FORBIDDEN' },
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { apiKey(id: $id) { id } }', { id: things.apiKeyId }),
    check: (data, { things }) => expect(data.id).toBe(things.apiKeyId),
  },
  apiKeys: { access: { ...SIGNED_IN, noRights: 'FORBIDDEN' }, request: () => gql('{ apiKeys { nodes { id } } }') },
  currentEmbedSession: {
    access: {
      ...ANY_CREDENTIAL,
      admin: 'NOT_FOUND',
      viewer: 'NOT_FOUND',
      noRights: 'NOT_FOUND',
      keyWith: 'NOT_FOUND',
      keyWithout: 'NOT_FOUND',
    },
    request: () => gql('{ currentEmbedSession { accountId } }'),
  },
  login: {
    access: PUBLIC,
    request: () =>
      gql('mutation($input: LoginInput!) { login(input: $input) { session { accessToken } userErrors { code } } }', {
        input: { email: org.email, password: org.password },
      }),
  },
  refreshTokens: {
    access: PUBLIC,
    request: async ({ things, own }) =>
      gql('mutation($input: RefreshTokenInput!) { refreshTokens(input: $input) { tokens { accessToken } userErrors { code } } }', {
        input: { refreshToken: await own(things.fresh.refreshToken) },
      }),
  },
  logout: {
    access: PUBLIC,
    request: async ({ things, own }) =>
      gql('mutation($input: RefreshTokenInput!) { logout(input: $input) { signedOut { success } userErrors { code } } }', {
        input: { refreshToken: await own(things.fresh.refreshToken) },
      }),
  },
  createRole: {
    access: ORGANISATION_WIDE,
    scopes: ['roles.write', 'events.read'],
    request: ({ n }) =>
      gql('mutation($input: CreateRoleInput!) { createRole(input: $input) { role { id } userErrors { code } } }', {
        input: { name: unique(n, 'Matrix role'), permissions: ['events.read'] },
      }),
  },
  updateRole: {
    access: ORGANISATION_WIDE,
    scopes: ['roles.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql('mutation($id: ID!) { updateRole(id: $id, input: { description: "Changed" }) { role { id } userErrors { code } } }', {
        id: things.roleId,
      }),
  },
  deleteRole: {
    access: ORGANISATION_WIDE,
    scopes: ['roles.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { deleteRole(id: $id) { deletedId userErrors { code } } }', { id: await own(things.fresh.roleId) }),
  },
  assignRole: {
    access: ACCOUNT_WRITE,
    scopes: ['role_assignments.write', 'events.read'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($input: AssignRoleInput!) { assignRole(input: $input) { roleAssignment { id } userErrors { code } } }', {
        input: { userId: (await own(things.fresh.user)).id, accountId: things.org.account.id, roleId: things.assignedRoleId },
      }),
  },
  replaceRoles: {
    access: ACCOUNT_WRITE,
    scopes: ['role_assignments.write', 'events.read'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($input: ReplaceRolesInput!) { replaceRoles(input: $input) { roleAssignments { id } userErrors { code } } }', {
        input: { userId: (await own(things.fresh.user)).id, accountId: things.org.account.id, roleIds: [things.assignedRoleId] },
      }),
  },
  removeRoleAssignment: {
    access: ACCOUNT_WRITE,
    scopes: ['role_assignments.write', 'events.read'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { removeRoleAssignment(id: $id) { deletedId userErrors { code } } }', {
        id: await own(things.fresh.assignmentId),
      }),
  },
  createApiKey: {
    access: { ...SIGNED_IN, viewer: 'FORBIDDEN', noRights: 'FORBIDDEN' },
    request: () =>
      gql(
        'mutation { createApiKey(input: { name: "Matrix key", scopes: ["events.read"] }) { createdApiKey { key } userErrors { code } } }',
      ),
  },
  revokeApiKey: {
    access: { ...SIGNED_IN, viewer: 'FORBIDDEN', noRights: 'FORBIDDEN' },
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { revokeApiKey(id: $id) { apiKey { id } userErrors { code } } }', {
        id: await own(things.fresh.apiKeyId),
      }),
  },
  createEmbedSession: {
    access: { ...ACCOUNT_READ, embedWith: 'NOT_FOUND' },
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql(
        'mutation($input: CreateEmbedSessionInput) { createEmbedSession(input: $input) { embedSession { accountId } userErrors { code } } }',
        {
          input: { accountId: things.org.account.id, scopes: ['events.read'] },
        },
      ),
  },
  invitations: { access: ORGANISATION_WIDE, scopes: ['invitations.read'], request: () => gql('{ invitations { pagination { total } } }') },
  invitation: {
    access: ORGANISATION_WIDE,
    scopes: ['invitations.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { invitation(id: $id) { id } }', { id: things.invitationId }),
    check: (data, { things }) => expect(data.id).toBe(things.invitationId),
  },
  createInvitation: {
    access: ORGANISATION_WIDE,
    scopes: ['invitations.write'],
    request: ({ n }) =>
      gql('mutation($input: CreateInvitationInput!) { createInvitation(input: $input) { invitation { id } userErrors { code } } }', {
        input: { organisationId: org.organisation.id, email: `${unique(n, 'invitee')}@matrix.test` },
      }),
  },
  deleteInvitation: {
    access: ORGANISATION_WIDE,
    scopes: ['invitations.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { deleteInvitation(id: $id) { deletedId userErrors { code } } }', {
        id: await own(things.fresh.invitationId),
      }),
  },
  resendInvitation: {
    access: ORGANISATION_WIDE,
    scopes: ['invitations.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { resendInvitation(id: $id) { invitation { id } userErrors { code } } }', {
        id: await own(things.fresh.invitationId),
      }),
  },
  redeemInvitation: {
    access: PUBLIC,
    request: async ({ things, own }) =>
      gql('mutation($input: RedeemInvitationInput!) { redeemInvitation(input: $input) { session { accessToken } userErrors { code } } }', {
        input: { code: await own(things.fresh.invitationCode), password: 'long enough password' },
      }),
  },
  identityProviders: {
    access: ORGANISATION_WIDE,
    scopes: ['identity_providers.read'],
    request: () => gql('{ identityProviders { nodes { id } } }'),
  },
  identityProvider: {
    access: ORGANISATION_WIDE,
    scopes: ['identity_providers.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { identityProvider(id: $id) { id } }', { id: things.identityProviderId }),
    check: (data, { things }) => expect(data.id).toBe(things.identityProviderId),
  },
  createIdentityProvider: {
    access: ORGANISATION_WIDE,
    scopes: ['identity_providers.write'],
    request: ({ things }) =>
      gql(
        'mutation($input: CreateIdentityProviderInput!) { createIdentityProvider(input: $input) { identityProvider { id } userErrors { code } } }',
        {
          input: things.fresh.identityProviderBody(),
        },
      ),
  },
  updateIdentityProvider: {
    access: ORGANISATION_WIDE,
    scopes: ['identity_providers.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql(
        'mutation($id: ID!) { updateIdentityProvider(id: $id, input: { isEnabled: true }) { identityProvider { id } userErrors { code } } }',
        {
          id: things.identityProviderId,
        },
      ),
  },
  federate: {
    access: PUBLIC,
    request: async () =>
      gql('mutation($input: FederateInput!) { federate(input: $input) { session { accessToken } userErrors { code } } }', {
        input: { token: await idToken() },
      }),
  },
  organisation: {
    access: ACCOUNT_READ,
    scopes: ['organisation.read'],
    request: () => gql('{ organisation { id } }'),
    check: (data) => expect(data.id).toBe(org.organisation.id),
  },
  updateOrganisation: {
    access: ORGANISATION_WIDE,
    scopes: ['organisation.write'],
    request: () =>
      gql('mutation($input: UpdateOrganisationInput!) { updateOrganisation(input: $input) { organisation { id } userErrors { code } } }', {
        input: { name: org.organisation.name },
      }),
  },
  accounts: { access: ACCOUNT_READ, scopes: ['accounts.read'], request: () => gql('{ accounts { pagination { total } } }') },
  account: {
    access: ACCOUNT_READ,
    scopes: ['accounts.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { account(id: $id) { id } }', { id: things.org.account.id }),
    check: (data, { things }) => expect(data.id).toBe(things.org.account.id),
  },
  createAccount: {
    access: ORGANISATION_WIDE,
    scopes: ['accounts.write'],
    request: ({ n }) =>
      gql('mutation($input: CreateAccountInput!) { createAccount(input: $input) { account { id } userErrors { code } } }', {
        input: { name: unique(n, 'Account') },
      }),
  },
  updateAccount: {
    access: ACCOUNT_WRITE,
    scopes: ['accounts.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql('mutation($id: ID!, $name: String!) { updateAccount(id: $id, input: { name: $name }) { account { id } userErrors { code } } }', {
        id: things.org.account.id,
        name: things.org.account.name,
      }),
  },
  deleteAccount: {
    access: ORGANISATION_WIDE,
    scopes: ['accounts.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { deleteAccount(id: $id) { deletedId userErrors { code } } }', { id: await own(things.fresh.accountId) }),
  },
  provisionPartnerAccount: {
    access: ORGANISATION_WIDE,
    scopes: ['accounts.write', 'sales_channels.write'],
    request: ({ n }) =>
      gql(
        'mutation($input: ProvisionPartnerAccountInput!) { provisionPartnerAccount(input: $input) { provisioning { publishableKey { channelKeyId } } userErrors { code } } }',
        {
          input: { name: unique(n, 'Partner') },
        },
      ),
  },
  venues: { access: ACCOUNT_READ, scopes: ['venues.read'], request: () => gql('{ venues { pagination { total } } }') },
  venue: {
    access: ACCOUNT_READ,
    scopes: ['venues.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { venue(id: $id) { id } }', { id: things.catalogue.venueId }),
    check: (data, { things }) => expect(data.id).toBe(things.catalogue.venueId),
  },
  createVenue: {
    access: ACCOUNT_WRITE,
    scopes: ['venues.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql('mutation($input: CreateVenueInput!) { createVenue(input: $input) { venue { id } userErrors { code } } }', {
        input: { accountId: things.org.account.id, name: 'Matrix venue' },
      }),
  },
  updateVenue: {
    access: ACCOUNT_WRITE,
    scopes: ['venues.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql('mutation($id: ID!) { updateVenue(id: $id, input: { capacity: 500 }) { venue { id } userErrors { code } } }', {
        id: things.catalogue.venueId,
      }),
  },
  events: { access: ACCOUNT_READ, scopes: ['events.read'], request: () => gql('{ events { pagination { total } } }') },
  event: {
    access: ACCOUNT_READ,
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { event(id: $id) { id } }', { id: things.catalogue.eventId }),
    check: (data, { things }) => expect(data.id).toBe(things.catalogue.eventId),
  },
  // node and nodes read an entity as its own root field does: here an event, as `event` above.
  node: {
    access: ACCOUNT_READ,
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { node(id: $id) { id } }', { id: things.catalogue.eventId }),
    check: (data, { things }) => expect(data.id).toBe(things.catalogue.eventId),
  },
  nodes: {
    access: ACCOUNT_READ,
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { nodes(ids: [$id]) { id } }', { id: things.catalogue.eventId }),
    check: (data, { things }) => expect(data).toEqual([{ id: things.catalogue.eventId }]),
  },
  eventOccurrence: {
    access: ACCOUNT_READ,
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { eventOccurrence(id: $id) { id } }', { id: things.catalogue.occurrenceId }),
    check: (data, { things }) => expect(data.id).toBe(things.catalogue.occurrenceId),
  },
  eventOccurrences: {
    access: ACCOUNT_READ,
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { eventOccurrences(eventId: $id) { nodes { id } } }', { id: things.catalogue.eventId }),
    check: (data, { things }) => expect(data.nodes).toEqual([{ id: things.catalogue.occurrenceId }]),
  },
  ticketTypes: {
    access: ACCOUNT_READ,
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { ticketTypes(eventId: $id) { nodes { id } } }', { id: things.catalogue.eventId }),
    check: (data, { things }) => expect(data.nodes).toEqual([{ id: things.catalogue.ticketTypeId }]),
  },
  ticketType: {
    access: ACCOUNT_READ,
    scopes: ['events.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { ticketType(id: $id) { id } }', { id: things.catalogue.ticketTypeId }),
    check: (data, { things }) => expect(data.id).toBe(things.catalogue.ticketTypeId),
  },
  createEvent: {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql('mutation($input: CreateEventInput!) { createEvent(input: $input) { event { id } userErrors { code } } }', {
        input: { accountId: things.org.account.id, name: 'Matrix event', timezone: 'UTC' },
      }),
  },
  updateEvent: {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql('mutation($id: ID!) { updateEvent(id: $id, input: { description: "Changed" }) { event { id } userErrors { code } } }', {
        id: things.draft.eventId,
      }),
  },
  deleteEvent: {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { deleteEvent(id: $id) { deletedId userErrors { code } } }', { id: await own(things.fresh.eventId) }),
  },
  createEventOccurrence: {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql(
        'mutation($id: ID!) { createEventOccurrence(eventId: $id, input: { startDate: "2027-08-01", startTime: "20:00" }) { eventOccurrence { id }  userErrors { code } } }',
        {
          id: things.draft.eventId,
        },
      ),
  },
  updateEventOccurrence: {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql(
        'mutation($id: ID!) { updateEventOccurrence(id: $id, input: { capacity: null }) { eventOccurrence { id } userErrors { code } } }',
        { id: things.catalogue.occurrenceId },
      ),
  },
  createTicketType: {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql(
        'mutation($id: ID!) { createTicketType(eventId: $id, input: { name: "Matrix type", priceAmount: 1000, currency: "GBP" }) { ticketType { id }  userErrors { code } } }',
        { id: things.draft.eventId },
      ),
  },
  updateTicketType: {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql(
        'mutation($id: ID!) { updateTicketType(id: $id, input: { description: "Changed" }) { ticketType { id }  userErrors { code } } }',
        {
          id: things.draft.ticketTypeId,
        },
      ),
  },
  deleteTicketType: {
    access: ACCOUNT_WRITE,
    scopes: ['events.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { deleteTicketType(id: $id) { deletedId  userErrors { code } } }', {
        id: await own(things.fresh.ticketTypeId),
      }),
  },
  webhookEventTypes: { access: ANY_CREDENTIAL, request: () => gql('{ webhookEventTypes { type } }') },
  webhookEndpoints: {
    access: ACCOUNT_READ,
    scopes: ['webhooks.read'],
    request: () => gql('{ webhookEndpoints { nodes { id } } }'),
  },
  webhookEndpoint: {
    access: ACCOUNT_READ,
    scopes: ['webhooks.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { webhookEndpoint(id: $id) { id } }', { id: things.webhookEndpointId }),
    check: (data, { things }) => expect(data.id).toBe(things.webhookEndpointId),
  },
  webhookDeliveries: {
    access: ACCOUNT_READ,
    scopes: ['webhooks.read'],
    request: () => gql('{ webhookDeliveries { pagination { total } } }'),
  },
  webhookEvents: {
    access: ACCOUNT_READ,
    scopes: ['webhooks.read'],
    request: () => gql('{ webhookEvents { pagination { total } } }'),
  },
  webhookEvent: {
    access: ACCOUNT_READ,
    scopes: ['webhooks.read'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('query($id: ID!) { webhookEvent(id: $id) { id type } }', { id: await own(things.fresh.webhookEventId) }),
    check: (data) => expect(data.type).toBe('ticket.redeemed'),
  },
  createWebhookEndpoint: {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: ({ things, n }) =>
      gql(
        'mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { createdWebhookEndpoint { secret }  userErrors { code } } }',
        {
          input: { accountId: things.org.account.id, url: `http://127.0.0.1:9/matrix-${n}`, eventTypes: ['ticket.redeemed'] },
        },
      ),
  },
  updateWebhookEndpoint: {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql(
        'mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: { description: "Changed" }) { webhookEndpoint { id }  userErrors { code } } }',
        {
          id: things.webhookEndpointId,
        },
      ),
  },
  deleteWebhookEndpoint: {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { deleteWebhookEndpoint(id: $id) { deletedId  userErrors { code } } }', {
        id: await own(things.fresh.webhookEndpointId),
      }),
  },
  webhookDelivery: {
    access: ACCOUNT_READ,
    scopes: ['webhooks.read'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('query($id: ID!) { webhookDelivery(id: $id) { id } }', { id: await own(things.fresh.webhookDeliveryId) }),
  },
  resendWebhookDelivery: {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { resendWebhookDelivery(id: $id) { webhookDelivery { id }  userErrors { code } } }', {
        id: await own(things.fresh.webhookDeliveryId),
      }),
  },
  rotateWebhookEndpointSecret: {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql(
        'mutation($id: ID!) { rotateWebhookEndpointSecret(id: $id, input: { overlapSeconds: 60 }) { rotatedSecret { secret }  userErrors { code } } }',
        {
          id: await own(things.fresh.webhookEndpointId),
        },
      ),
  },
  recoverWebhookEndpoint: {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql(
        'mutation($id: ID!, $since: DateTime!) { recoverWebhookEndpoint(id: $id, input: { since: $since }) { webhookRecovery { id }  userErrors { code } } }',
        {
          id: await own(things.fresh.webhookEndpointId),
          since: new Date(Date.now() - 3_600_000).toISOString(),
        },
      ),
  },
  testWebhookEndpoint: {
    access: ACCOUNT_WRITE,
    scopes: ['webhooks.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { testWebhookEndpoint(id: $id) { webhookDelivery { id }  userErrors { code } } }', {
        id: await own(things.fresh.webhookEndpointId),
      }),
  },
  salesChannels: {
    access: ACCOUNT_READ,
    scopes: ['sales_channels.read'],
    request: () => gql('{ salesChannels { pagination { total } } }'),
  },
  salesChannel: {
    access: ACCOUNT_READ,
    scopes: ['sales_channels.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { salesChannel(id: $id) { id } }', { id: things.catalogue.channel.channelId }),
    check: (data, { things }) => expect(data.id).toBe(things.catalogue.channel.channelId),
  },
  createSalesChannel: {
    access: ACCOUNT_WRITE,
    scopes: ['sales_channels.write'],
    names: 'NOT_FOUND',
    request: ({ things, n }) =>
      gql('mutation($input: CreateSalesChannelInput!) { createSalesChannel(input: $input) { salesChannel { id }  userErrors { code } } }', {
        input: { accountId: things.org.account.id, name: 'Matrix channel', slug: unique(n, 'matrix') },
      }),
  },
  updateSalesChannel: {
    access: ACCOUNT_WRITE,
    scopes: ['sales_channels.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql('mutation($id: ID!) { updateSalesChannel(id: $id, input: { name: "Web shop" }) { salesChannel { id }  userErrors { code } } }', {
        id: things.catalogue.channel.channelId,
      }),
  },
  createChannelKey: {
    access: ACCOUNT_WRITE,
    scopes: ['sales_channels.write'],
    names: 'NOT_FOUND',
    request: ({ things }) =>
      gql(
        'mutation($id: ID!) { createChannelKey(channelId: $id, input: { kind: PUBLISHABLE }) { createdChannelKey { key }  userErrors { code } } }',
        {
          id: things.catalogue.channel.channelId,
        },
      ),
  },
  revokeChannelKey: {
    access: ACCOUNT_WRITE,
    scopes: ['sales_channels.write'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql(
        'mutation($channel: ID!, $id: ID!) { revokeChannelKey(channelId: $channel, id: $id) { channelKey { id }  userErrors { code } } }',
        {
          channel: things.catalogue.channel.channelId,
          id: await own(things.fresh.channelKeyId),
        },
      ),
  },
  orders: { access: ACCOUNT_READ, scopes: ['orders.read'], request: () => gql('{ orders { pagination { total } } }') },
  order: {
    access: ACCOUNT_READ,
    scopes: ['orders.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { order(id: $id) { id } }', { id: things.order.id }),
    check: (data, { things }) => expect(data.id).toBe(things.order.id),
  },
  customers: { access: ACCOUNT_READ, scopes: ['customers.read'], request: () => gql('{ customers { pagination { total } } }') },
  customer: {
    access: ACCOUNT_READ,
    scopes: ['customers.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { customer(id: $id) { id } }', { id: things.order.customerId }),
    check: (data, { things }) => expect(data.id).toBe(things.order.customerId),
  },
  passes: { access: ACCOUNT_READ, scopes: ['passes.read'], request: () => gql('{ passes { pagination { total } } }') },
  pass: {
    access: ACCOUNT_READ,
    scopes: ['passes.read'],
    names: 'NOT_FOUND',
    request: ({ things }) => gql('query($id: ID!) { pass(id: $id) { id } }', { id: things.pass.id }),
    check: (data, { things }) => expect(data.id).toBe(things.pass.id),
  },
  cancelOrder: {
    access: ACCOUNT_WRITE,
    scopes: ['orders.cancel'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { cancelOrder(id: $id) { order { status } userErrors { code } } }', {
        id: (await own(things.fresh.order)).order.id,
      }),
    check: (data) => expect(data.order.status).toBe('CANCELLED'),
  },
  refundOrder: {
    access: ACCOUNT_WRITE,
    scopes: ['orders.refund'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { refundOrder(id: $id) { order { status } userErrors { code } } }', {
        id: (await own(things.fresh.order)).order.id,
      }),
    check: (data) => expect(data.order.status).toBe('REFUNDED'),
  },
  redeemPass: {
    access: ACCOUNT_WRITE,
    scopes: ['passes.redeem'],
    names: 'NOT_FOUND',
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { redeemPass(passId: $id) { redemption { id } userErrors { code } } }', {
        id: (await own(things.fresh.pass)).id,
      }),
  },
  salesListings: { access: SALES_FIELD, request: () => gql('{ salesListings { pagination { total } } }') },
  salesCart: {
    access: SALES_FIELD,
    request: ({ things }) => gql('query($id: ID!) { salesCart(id: $id) { id } }', { id: things.cart.id }),
  },
  customerOrders: { access: SALES_FIELD, request: () => gql('{ customerOrders { pagination { total } } }') },
  createSalesCart: { access: SALES_FIELD, request: () => gql('mutation { createSalesCart { salesCart { id } userErrors { code } } }') },
  updateSalesCart: {
    access: SALES_FIELD,
    request: ({ things }) =>
      gql('mutation($id: ID!) { updateSalesCart(id: $id, items: []) { salesCart { id } userErrors { code } } }', {
        id: things.cart.id,
      }),
  },
  checkoutSalesCart: {
    access: SALES_FIELD,
    request: async ({ things, n, own }) =>
      gql(
        'mutation($id: ID!, $email: EmailAddress!) { checkoutSalesCart(id: $id, customer: { email: $email }) { checkout { checkoutUrl } userErrors { code } } }',
        {
          id: (await own(things.fresh.cart)).id,
          email: `${unique(n, 'buyer')}@matrix.test`,
        },
      ),
  },
  confirmSalesOrder: {
    access: SALES_FIELD,
    request: async ({ things, own }) =>
      gql('mutation($id: ID!) { confirmSalesOrder(id: $id) { order { id } userErrors { code } } }', {
        id: (await own(() => things.fresh.order({ pending: true }))).order.id,
      }),
  },
  requestCustomerMagicLink: {
    access: SALES_FIELD,
    request: ({ things }) =>
      gql('mutation($email: String!) { requestCustomerMagicLink(email: $email) { accepted { accepted } userErrors { code } } }', {
        email: things.order.email,
      }),
  },
  createCustomerToken: {
    access: SALES_FIELD,
    request: async ({ things, n, own }) => {
      const code = await own(() => things.fresh.magicLinkCode({ 'x-forwarded-for': clientAddress(n) }));
      return gql('mutation($code: String!) { createCustomerToken(code: $code) { customerToken { customerToken } userErrors { code } } }', {
        code,
      });
    },
  },
  auditEntries: {
    access: ACCOUNT_READ,
    scopes: ['audit.read'],
    request: () => gql('{ auditEntries { pagination { total } } }'),
  },
  auditEntry: {
    access: ACCOUNT_READ,
    scopes: ['audit.read'],
    names: 'NOT_FOUND',
    request: async ({ things }) => gql('query($id: ID!) { auditEntry(id: $id) { id } }', { id: await endpointCreationEntry(things) }),
  },
};

/** The audit entry of the seeded webhook endpoint's creation (on the first account), read by the admin. */
async function endpointCreationEntry(things: OrganisationThings): Promise<string> {
  const res = await graphql(
    app,
    'query($id: ID!) { auditEntries(first: 1, targetId: $id, action: "webhook_endpoint.created") { nodes { id } } }',
    { id: things.webhookEndpointId },
    asAdmin(things.org),
  );
  return res.body.data.auditEntries.nodes[0].id;
}

// ---------------------------------------------------------------------------------------------

describe('every route and root field has a row', () => {
  it('/v1: each route of the route table', () => {
    expect(Object.keys(v1).sort()).toEqual(v1Routes.map((route) => `${route.method} ${route.path}`).sort());
  });
  it('/live: each route of the sales route table', () => {
    expect(Object.keys(live).sort()).toEqual(liveRoutes.map((route) => `${route.method} ${route.path}`).sort());
  });
  it('GraphQL: each Query and Mutation field', () => {
    const names = [...Object.keys(schema.getQueryType()!.getFields()), ...Object.keys(schema.getMutationType()!.getFields())];
    expect(Object.keys(graphqlFields).sort()).toEqual(names.sort());
  });
});

/** What the refused cells of a row consume, shared: per row and organisation, the k-th thing a cell asks for. */
const sharedThings = new Map<Row<unknown>, Map<OrganisationThings, Array<Promise<unknown>>>>();

/**
 * Runs the cell's request: its credential, X-Service-Org of the organisation, its own client address.
 * `garbled`: with a body no route accepts and a malformed Idempotency-Key instead of its own.
 */
async function send(
  surface: Surface,
  row: Row<RestRequest | GraphqlRequest>,
  column: Column,
  outcome: Outcome,
  method: string,
  garbled = false,
) {
  const n = ++cells;
  const things = column === 'otherOrgThing' ? theirs : mine;
  let asked = 0;
  const own = <T>(make: () => Promise<T>): Promise<T> => {
    if (outcome === 'ok') return make();
    const byOrganisation = sharedThings.get(row) ?? new Map<OrganisationThings, Array<Promise<unknown>>>();
    sharedThings.set(row, byOrganisation);
    const list = byOrganisation.get(things) ?? [];
    byOrganisation.set(things, list);
    const index = asked++;
    list[index] ??= make();
    return list[index] as Promise<T>;
  };
  const cell: Cell = { column, n, things, own };
  const request = await row.request(cell);
  const headers: Record<string, string> = { 'x-forwarded-for': clientAddress(n) };
  const token = await credential(column, row, surface);
  if (surface === 'graphql') {
    const { document, variables } = request as GraphqlRequest;
    return { cell, res: await graphql(app, document, variables, { token, org: org.slug, headers }) };
  }
  const { path, body, session } = request as RestRequest;
  if (session) headers['x-live-session'] = session;
  if (garbled) headers['idempotency-key'] = 'not a valid key';
  return { cell, res: await api(app, method, `/${surface}${path}`, { token, org: org.slug, body: garbled ? [] : body, headers }) };
}

/** One test per cell; a cell naming a defect is expected to fail until the service is fixed. */
function cellTests(surface: Surface, row: Row<RestRequest | GraphqlRequest>, judge: (column: Column, outcome: Outcome) => Promise<void>) {
  for (const [column, outcome] of expectations(surface, row)) {
    const defect = row.defects?.[column];
    const name = defect ? `with ${column}: ${outcome} (${defect})` : `with ${column}: ${outcome}`;
    (defect ? it.concurrent.fails : it.concurrent)(name, () => judge(column, outcome));
  }
}

function restTable(surface: 'v1' | 'live', rows: Record<string, Row<RestRequest>>, routes: RestRoute[]) {
  describe.each(Object.entries(rows))(`/${surface} %s`, (name, row) => {
    const [method] = name.split(' ') as [string];
    const route = routes.find((r) => `${r.method} ${r.path}` === name);
    cellTests(surface, row, async (column, outcome) => {
      const { cell, res } = await send(surface, row, column, outcome, method);
      const seen = `${res.status} ${res.body?.code ?? ''} ${JSON.stringify(res.body).slice(0, 300)}`;
      expect(res.headers.get('x-request-id')).toBeTruthy();
      if (outcome === 'ok') {
        expect(res.status, seen).toBe(route?.status ?? 200);
        const parsed = route!.response!.safeParse(res.body);
        expect(parsed.success, `${seen}\n${parsed.error?.message}`).toBe(true);
        row.check?.(res.body, cell);
      } else {
        expect(`${res.status} ${res.body?.code}`, seen).toBe(`${STATUS[outcome]} ${outcome}`);
        expect(res.body.requestId).toBe(res.headers.get('x-request-id'));
        // Who is calling is judged before what they sent: the same caller with a body no route
        // accepts (and a malformed Idempotency-Key) is refused alike. A refusal about the things
        // named (another organisation's) needs a body that names them.
        if (method !== 'GET' && method !== 'DELETE' && column !== 'otherOrgThing' && !row.refusedAfterInput) {
          const { res: garbled } = await send(surface, row, column, outcome, method, true);
          expect(`${garbled.status} ${garbled.body?.code}`, JSON.stringify(garbled.body).slice(0, 300)).toBe(
            `${STATUS[outcome]} ${outcome}`,
          );
        }
      }
    });
  });
}

restTable('v1', v1, v1Routes);
restTable('live', live, liveRoutes);

/**
 * The refusals a mutation answers as user errors (schema/payload.ts); FORBIDDEN is one where it is
 * a right the input asks to grant (an embed session's scopes for a caller who holds none).
 */
const USER_ERROR_CODES = new Set<string>(['VALIDATION_FAILED', 'NOT_FOUND', 'CONFLICT', 'GONE', 'FORBIDDEN']);

describe.each(Object.entries(graphqlFields))('GraphQL %s', (field, row) => {
  cellTests('graphql', row, async (column, outcome) => {
    const { cell, res } = await send('graphql', row, column, outcome, 'POST');
    const seen = JSON.stringify(res.body).slice(0, 300);
    const answer = res.body.data?.[field];
    // A mutation answers a payload: an expected failure (another organisation's thing is
    // NOT_FOUND) is a user error beside a null result; a refused right stays in errors.
    const userErrors: Array<{ code: string }> | undefined = answer?.userErrors;
    if (outcome === 'ok') {
      expect([res.status, res.body.errors], seen).toEqual([200, undefined]);
      expect(answer, seen).not.toBeNull();
      if (userErrors) expect(userErrors, seen).toEqual([]);
      row.check?.(answer, cell);
    } else if (userErrors && USER_ERROR_CODES.has(outcome)) {
      expect([res.status, res.body.errors, userErrors[0]?.code], seen).toEqual([200, undefined, outcome]);
    } else {
      const status = REFUSED_BEFORE_EXECUTION.has(column) ? STATUS[outcome] : 200;
      expect([res.status, res.body.errors?.[0]?.extensions?.code], seen).toEqual([status, outcome]);
      // nodes(ids:) answers a list whose refused items are null.
      const shown = Array.isArray(answer) && answer.every((item) => item === null) ? null : answer;
      if (status === 200) expect(shown ?? null, seen).toBeNull();
    }
  });
});
