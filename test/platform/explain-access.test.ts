import { getNamedType, isObjectType, Kind, parse, type FieldNode, type GraphQLField, type OperationDefinitionNode } from 'graphql';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RestRoute } from '../../rest-compat/route.ts';
import { v1Routes } from '../../rest-compat/v1-routes.ts';
import { schema } from '../../schema/index.ts';
import { PEOPLE_ONLY_RESOURCES } from '../../src/auth/permissions.ts';
import { appOf, useTestApp } from '../support/app.ts';
import { createApiKey, customRole, embedToken, staffWithoutRights, staffWithRoles } from '../support/credentials.ts';
import {
  api,
  createAccount,
  createOrganisation,
  createStaffUser,
  from,
  graphql,
  newClientAddress,
  systemRole,
  tag,
  type TestOrganisation,
} from '../support/fixtures.ts';
import { seedThings, type OrganisationThings } from '../support/things.ts';

/**
 * "Why may I?" answers what enforcement does: for the staff and API-key columns of the access
 * matrix (test/platform/access-matrix.test.ts), every GraphQL root field and /v1 route that asks for
 * a permission is requested for real, and explainAccess is asked for that permission on the account
 * the request names, about that credential: by the administrator (GraphQL, naming it) and by the
 * credential itself (GET /v1/access/explain). `allowed` must be whether the request succeeded.
 */

const COLUMNS = ['admin', 'viewer', 'noRights', 'keyWith', 'keyWithout'] as const;
type Column = (typeof COLUMNS)[number];

type Args = Record<string, unknown>;

interface Case {
  /** The permission, for a field whose authScopes decide by the request's input rather than name one. */
  permission?: string;
  /**
   * Where the request acts: on the account of the thing it names (the default of a field needing the
   * permission somewhere), or on the organisation as a whole (the default of `organisationPermission`).
   */
  on?: 'account' | 'organisation';
  /** Scopes the request needs beyond the permission (those of a role it assigns, say): keyWith holds them too. */
  alsoNeeds?: string[];
  /** The field's arguments, by GraphQL name; fresh things for a request that consumes one. */
  args?(things: OrganisationThings): Args | Promise<Args>;
  /** Arguments of /v1 routes of the field that take others (the contract's enum values, another argument). */
  v1?: Record<string, (things: OrganisationThings) => Args | Promise<Args>>;
}

const accountOf = (t: OrganisationThings) => t.org.account.id;

/** One case per root field that asks for a permission. */
const cases: Record<string, Case> = {
  organisation: {},
  accounts: {},
  account: { args: (t) => ({ id: accountOf(t) }) },
  roles: {},
  role: { args: (t) => ({ id: t.roleId }) },
  user: { permission: 'role_assignments.read', args: (t) => ({ id: t.userId }) },
  roleAssignment: { args: (t) => ({ id: t.assignmentId }) },
  roleAssignments: {},
  users: {},
  // The organisation-wide key is the organisation's, not the first account's.
  apiKey: { on: 'organisation', args: (t) => ({ id: t.apiKeyId }) },
  apiKeys: {},
  identityProviders: {},
  identityProvider: { args: (t) => ({ id: t.identityProviderId }) },
  invitations: {},
  invitation: { args: (t) => ({ id: t.invitationId }) },
  venues: {},
  venue: { args: (t) => ({ id: t.catalogue.venueId }) },
  events: {},
  event: { args: (t) => ({ id: t.catalogue.eventId }) },
  eventOccurrence: { args: (t) => ({ id: t.catalogue.occurrenceId }) },
  eventOccurrences: { args: (t) => ({ eventId: t.catalogue.eventId }) },
  ticketTypes: { args: (t) => ({ eventId: t.catalogue.eventId }) },
  ticketType: { args: (t) => ({ id: t.catalogue.ticketTypeId }) },
  salesChannels: {},
  salesChannel: { args: (t) => ({ id: t.catalogue.channel.channelId }) },
  webhookEndpoints: {},
  webhookEndpoint: { args: (t) => ({ id: t.webhookEndpointId }) },
  webhookDelivery: { args: async (t) => ({ id: await t.fresh.webhookDeliveryId() }) },
  webhookDeliveries: {},
  webhookEvents: {},
  webhookEvent: { args: async (t) => ({ id: await t.fresh.webhookEventId() }) },
  orders: {},
  order: { args: (t) => ({ id: t.order.id }) },
  customers: {},
  customer: { args: (t) => ({ id: t.order.customerId }) },
  passes: {},
  pass: { args: (t) => ({ id: t.pass.id }) },
  auditEntries: {},
  // The entry of the seeded webhook endpoint's creation: a change on the first account.
  auditEntry: {
    args: async (t) => {
      const res = await graphql(
        app,
        'query($id: ID!) { auditEntries(first: 1, targetId: $id, action: "webhook_endpoint.created") { nodes { id } } }',
        { id: t.webhookEndpointId },
        { token: t.org.adminToken, org: t.org.slug },
      );
      return { id: res.body.data.auditEntries.nodes[0].id };
    },
  },
  updateOrganisation: { args: (t) => ({ input: { name: t.org.organisation.name } }) },
  createAccount: { args: () => ({ input: { name: `Account ${tag()}` } }) },
  updateAccount: { args: (t) => ({ id: accountOf(t), input: { name: t.org.account.name } }) },
  deleteAccount: { args: async (t) => ({ id: await t.fresh.accountId() }) },
  createRole: { alsoNeeds: ['events.read'], args: () => ({ input: { name: `Role ${tag()}`, permissions: ['events.read'] } }) },
  updateRole: { args: (t) => ({ id: t.roleId, input: { description: 'Changed' } }) },
  deleteRole: { args: async (t) => ({ id: await t.fresh.roleId() }) },
  assignRole: {
    alsoNeeds: ['events.read'], // the permissions of the role assigned
    args: async (t) => ({ input: { userId: (await t.fresh.user()).id, accountId: accountOf(t), roleId: t.assignedRoleId } }),
  },
  replaceRoles: {
    alsoNeeds: ['events.read'],
    args: async (t) => ({ input: { userId: (await t.fresh.user()).id, accountId: accountOf(t), roleIds: [t.assignedRoleId] } }),
  },
  removeRoleAssignment: { alsoNeeds: ['events.read'], args: async (t) => ({ id: await t.fresh.assignmentId() }) },
  createApiKey: {
    on: 'organisation',
    alsoNeeds: ['events.read'],
    args: () => ({ input: { name: `Key ${tag()}`, scopes: ['events.read'] } }),
  },
  revokeApiKey: { on: 'organisation', args: async (t) => ({ id: await t.fresh.apiKeyId() }) },
  // Minting needs the scopes minted, on the account minted for.
  createEmbedSession: { permission: 'events.read', args: (t) => ({ input: { accountId: accountOf(t), scopes: ['events.read'] } }) },
  createIdentityProvider: { args: (t) => ({ input: t.fresh.identityProviderBody() }) },
  updateIdentityProvider: { args: (t) => ({ id: t.identityProviderId, input: { isEnabled: true } }) },
  createInvitation: { args: (t) => ({ input: { organisationId: t.org.organisation.id, email: `invitee-${tag()}@explain.test` } }) },
  deleteInvitation: { args: async (t) => ({ id: await t.fresh.invitationId() }) },
  resendInvitation: { args: async (t) => ({ id: await t.fresh.invitationId() }) },
  createVenue: { args: (t) => ({ input: { accountId: accountOf(t), name: 'Explained venue' } }) },
  updateVenue: { args: (t) => ({ id: t.catalogue.venueId, input: { capacity: 500 } }) },
  createEvent: { args: (t) => ({ input: { accountId: accountOf(t), name: 'Explained event', timezone: 'UTC' } }) },
  updateEvent: { args: (t) => ({ id: t.draft.eventId, input: { description: 'Changed' } }) },
  deleteEvent: { args: async (t) => ({ id: await t.fresh.eventId() }) },
  createEventOccurrence: { args: (t) => ({ eventId: t.draft.eventId, input: { startDate: '2027-08-01', startTime: '20:00' } }) },
  updateEventOccurrence: { args: (t) => ({ id: t.catalogue.occurrenceId, input: { capacity: null } }) },
  createTicketType: {
    args: (t) => ({ eventId: t.draft.eventId, input: { name: 'Explained type', priceAmount: 1000, currency: 'GBP' } }),
  },
  updateTicketType: { args: (t) => ({ id: t.draft.ticketTypeId, input: { description: 'Changed' } }) },
  deleteTicketType: { args: async (t) => ({ id: await t.fresh.ticketTypeId() }) },
  provisionPartnerAccount: { alsoNeeds: ['sales_channels.write'], args: () => ({ input: { name: `Partner ${tag()}` } }) },
  createSalesChannel: { args: (t) => ({ input: { accountId: accountOf(t), name: 'Explained channel', slug: `explained-${tag()}` } }) },
  updateSalesChannel: { args: (t) => ({ id: t.catalogue.channel.channelId, input: { name: 'Web shop' } }) },
  createChannelKey: {
    args: (t) => ({ channelId: t.catalogue.channel.channelId, input: { kind: 'PUBLISHABLE' } }),
    v1: { 'POST /sales-channels/{id}/keys': (t) => ({ channelId: t.catalogue.channel.channelId, input: { kind: 'publishable' } }) },
  },
  revokeChannelKey: { args: async (t) => ({ channelId: t.catalogue.channel.channelId, id: await t.fresh.channelKeyId() }) },
  createWebhookEndpoint: {
    args: (t) => ({ input: { accountId: accountOf(t), url: `http://127.0.0.1:9/explain-${tag()}`, eventTypes: ['ticket.redeemed'] } }),
  },
  updateWebhookEndpoint: { args: (t) => ({ id: t.webhookEndpointId, input: { description: 'Changed' } }) },
  deleteWebhookEndpoint: { args: async (t) => ({ id: await t.fresh.webhookEndpointId() }) },
  rotateWebhookEndpointSecret: { args: async (t) => ({ id: await t.fresh.webhookEndpointId(), input: { overlapSeconds: 60 } }) },
  recoverWebhookEndpoint: {
    args: async (t) => ({ id: await t.fresh.webhookEndpointId(), input: { since: new Date(Date.now() - 3_600_000).toISOString() } }),
  },
  resendWebhookDelivery: { args: async (t) => ({ id: await t.fresh.webhookDeliveryId() }) },
  testWebhookEndpoint: { args: async (t) => ({ id: await t.fresh.webhookEndpointId() }) },
  cancelOrder: { args: async (t) => ({ id: (await t.fresh.order()).order.id }) },
  refundOrder: { args: async (t) => ({ id: (await t.fresh.order()).order.id }) },
  redeemPass: {
    args: async (t) => ({ passId: (await t.fresh.pass()).id }),
    v1: { 'POST /redemptions': async (t) => ({ code: (await t.fresh.pass()).code }) },
  },
};

// ---------------------------------------------------------------------------------------------
// What each root field needs, as its authScopes declare it.
// ---------------------------------------------------------------------------------------------

interface Needs {
  permission: string;
  on: 'account' | 'organisation';
  /** A signed-in person only: keys are refused whatever they hold. */
  peopleOnly: boolean;
}

type Field = GraphQLField<unknown, unknown>;
const rootFields = (): Array<[Field, 'query' | 'mutation']> => [
  ...Object.values(schema.getQueryType()!.getFields()).map((field) => [field, 'query'] as [Field, 'query']),
  ...Object.values(schema.getMutationType()!.getFields()).map((field) => [field, 'mutation'] as [Field, 'mutation']),
];

/** The static scope map of a root field, flattened ($all is the only combinator the schema uses for permissions). */
function declaredScopes(field: Field): Record<string, unknown> | undefined {
  const scopes = (field.extensions as { pothosOptions?: { authScopes?: unknown } }).pothosOptions?.authScopes;
  if (!scopes || typeof scopes !== 'object') return undefined;
  const { $all, ...rest } = scopes as Record<string, unknown>;
  return { ...rest, ...(($all as Record<string, unknown> | undefined) ?? {}) };
}

function needsOf(field: Field): Needs | undefined {
  const scopes = declaredScopes(field) ?? {};
  const given = cases[field.name]?.permission;
  const permission = given ?? (scopes.permission as string | undefined) ?? (scopes.organisationPermission as string | undefined);
  if (!permission) return undefined;
  const on = cases[field.name]?.on ?? (scopes.organisationPermission && !given ? 'organisation' : 'account');
  return { permission, on, peopleOnly: scopes.signedInUser === true };
}

/** Every scope some root field asks for: `keyWithout` holds all of them but the one asked about. */
const everyScope = () =>
  [...new Set(rootFields().flatMap(([field]) => (needsOf(field) ? [needsOf(field)!.permission] : [])))].concat(
    Object.values(cases).flatMap((c) => c.alsoNeeds ?? []),
  );

// ---------------------------------------------------------------------------------------------

const app = useTestApp({ IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: 'true', WEBHOOK_MAX_ENDPOINTS_PER_ACCOUNT: '1000' });
let org: TestOrganisation;
let things: OrganisationThings;
const people = {} as Record<'admin' | 'viewer' | 'noRights', { token: string; personId: string; userId: string }>;

beforeAll(async () => {
  org = await createOrganisation(app, 'explain');
  const [seeded, viewer, noRights] = await Promise.all([
    seedThings(app, org),
    staffWithRoles(app, org, ['viewer']),
    staffWithoutRights(app, org),
  ]);
  things = seeded;
  people.admin = { token: org.adminToken, personId: org.user.personId, userId: org.user.id };
  people.viewer = viewer;
  people.noRights = noRights;
}, 120_000);

/** Keys by the scopes they hold, made once. */
const keys = new Map<string, Promise<{ key: string; id: string }>>();
function keyHolding(scopes: string[]) {
  const id = [...new Set(scopes)].sort().join(' ');
  if (!keys.has(id))
    keys.set(
      id,
      createApiKey(app, org, [...new Set(scopes)]).then(({ key, apiKey }) => ({ key, id: apiKey.id })),
    );
  return keys.get(id)!;
}

/** The credential of a column and how explainAccess names it. */
async function credentialOf(column: Column, needs: Needs, extra: string[]): Promise<{ token: string; subject: Args }> {
  if (column === 'keyWith' || column === 'keyWithout') {
    const scopes = column === 'keyWith' ? [needs.permission, ...extra] : everyScope().filter((scope) => scope !== needs.permission);
    const { key, id } = await keyHolding(scopes);
    return { token: key, subject: { apiKeyId: id } };
  }
  return { token: people[column].token, subject: { personId: people[column].personId } };
}

/** The permission and account explainAccess is asked about for a request of these needs. */
function asked(needs: Needs): { permission: string; accountId?: string } {
  return needs.on === 'organisation'
    ? { permission: `${needs.permission}:all` }
    : { permission: needs.permission, accountId: accountOf(things) };
}

const EXPLANATION = 'allowed accountId reason grants { granted permission source roleName } nearby { granted }';

/** Explains twice: the administrator asking about the credential (GraphQL), the credential asking about itself (/v1). */
async function explanations(token: string, subject: Args, question: { permission: string; accountId?: string }) {
  const byAdmin = await graphql(
    app,
    `query($personId: ID, $apiKeyId: ID, $permission: String!, $accountId: ID) {
      explainAccess(personId: $personId, apiKeyId: $apiKeyId, permission: $permission, accountId: $accountId) { ${EXPLANATION} }
    }`,
    { ...subject, ...question },
    { token: org.adminToken, org: org.slug, headers: from(newClientAddress()) },
  );
  expect(byAdmin.body.errors, JSON.stringify(byAdmin.body)).toBeUndefined();
  const query = new URLSearchParams(question).toString();
  const bySelf = await api(app, 'GET', `/v1/access/explain?${query}`, { token, org: org.slug, headers: from(newClientAddress()) });
  expect(bySelf.status, JSON.stringify(bySelf.body)).toBe(200);
  return [byAdmin.body.data.explainAccess, bySelf.body.explanation] as Array<{ allowed: boolean; grants: unknown[]; reason: string }>;
}

/** A GraphQL request of one root field with `args`, selecting just enough to tell success from refusal. */
function fieldRequest(field: Field, operation: 'query' | 'mutation', args: Args) {
  const names = Object.keys(args);
  const declared = names.map((name) => `$${name}: ${String(field.args.find((arg) => arg.name === name)!.type)}`);
  const passed = names.map((name) => `${name}: $${name}`);
  const type = getNamedType(field.type);
  const selection = isObjectType(type) ? `{ __typename ${type.getFields().userErrors ? 'userErrors { code }' : ''} }` : '';
  return `${operation}${declared.length ? `(${declared.join(', ')})` : ''} { ${field.name}${passed.length ? `(${passed.join(', ')})` : ''} ${selection} }`;
}

/** A /v1 request of `route` carrying the root field's `args`, placed as the route's binding says. */
function routeRequest(route: RestRoute, args: Args): { path: string; body?: unknown } {
  const operation = parse(route.operation).definitions[0] as OperationDefinitionNode;
  const root = operation.selectionSet.selections[0] as FieldNode;
  let path = route.path;
  let body: Record<string, unknown> | undefined;
  const query = new URLSearchParams();
  for (const argument of root.arguments ?? []) {
    if (argument.value.kind !== Kind.VARIABLE || args[argument.name.value] === undefined) continue;
    const variable = argument.value.name.value;
    const value = args[argument.name.value];
    const source = route.bind?.[variable] ?? `${route.bind?.['...']}.${variable}`;
    const [place, name] = source.split('.') as [string, string | undefined];
    if (place === 'params') path = path.replace(`{${name}}`, String(value));
    else if (place === 'query') query.set(name!, String(value));
    else if (name) body = { ...body, [name]: value };
    else body = value as Record<string, unknown>;
  }
  const search = query.toString();
  return {
    path: `/v1${path}${search ? `?${search}` : ''}`,
    body: body ?? (route.method === 'GET' || route.method === 'DELETE' ? undefined : {}),
  };
}

function rootFieldOf(route: RestRoute): string {
  const operation = parse(route.operation).definitions[0] as OperationDefinitionNode;
  return (operation.selectionSet.selections[0] as FieldNode).name.value;
}

/** One comparison: the real request's outcome and both explanations' `allowed`. */
async function compare(needs: Needs, extra: string[], column: Column, send: (token: string) => Promise<{ ok: boolean; seen: string }>) {
  const { token, subject } = await credentialOf(column, needs, extra);
  const question = asked(needs);
  const { ok, seen } = await send(token);
  const answers = await explanations(token, subject, question);
  for (const answer of answers) {
    expect(
      answer.allowed,
      `${question.permission} on ${question.accountId ?? 'every account'}: ${answer.reason}\nthe request: ${seen}`,
    ).toBe(ok);
    expect(answer.grants.length > 0, answer.reason).toBe(ok);
  }
}

const REFUSAL = /^(FORBIDDEN|NOT_FOUND|SIGNED_IN_USER_REQUIRED)$/;
const permissionFields = () => rootFields().filter(([field]) => needsOf(field) !== undefined);

describe('every root field that asks for a permission has a case', () => {
  it('PEOPLE_ONLY_RESOURCES names exactly the resources whose every field asks for a signed-in person', () => {
    const byResource = new Map<string, boolean[]>();
    for (const [field] of permissionFields()) {
      const needs = needsOf(field)!;
      const resource = needs.permission.split('.')[0]!;
      byResource.set(resource, [...(byResource.get(resource) ?? []), needs.peopleOnly]);
    }
    // A resource some of whose fields a key may use and others not could not be explained by resource.
    for (const [resource, peopleOnly] of byResource) expect(new Set(peopleOnly).size, resource).toBe(1);
    const peopleOnly = [...byResource].filter(([, flags]) => flags[0]).map(([resource]) => resource);
    expect(peopleOnly.sort()).toEqual([...PEOPLE_ONLY_RESOURCES].sort());
  });

  it('lists exactly those fields', () => {
    expect(Object.keys(cases).sort()).toEqual(
      permissionFields()
        .map(([field]) => field.name)
        .sort(),
    );
  });
});

describe.each(permissionFields().map(([field, operation]) => [field.name, field, operation] as const))(
  'GraphQL %s',
  (_name, field, operation) => {
    const needs = needsOf(field)!;
    const c = cases[field.name]!;
    for (const column of COLUMNS) {
      it.concurrent(`with ${column}: explained as the request is answered`, () =>
        compare(needs, c.alsoNeeds ?? [], column, async (token) => {
          const args = (await c.args?.(things)) ?? {};
          const res = await graphql(app, fieldRequest(field, operation, args), args, {
            token,
            org: org.slug,
            headers: from(newClientAddress()),
          });
          const answer = res.body.data?.[field.name];
          const ok = res.status === 200 && !res.body.errors && answer != null && (answer.userErrors ?? []).length === 0;
          // A refusal, in errors or (decided on the input) as the payload's user error; nothing else.
          if (!ok)
            expect(res.body.errors?.[0]?.extensions?.code ?? answer?.userErrors?.[0]?.code, JSON.stringify(res.body)).toMatch(REFUSAL);
          return { ok, seen: JSON.stringify(res.body).slice(0, 300) };
        }),
      );
    }
  },
);

const permissionRoutes = () =>
  v1Routes
    .map((route) => [route, rootFields().find(([field]) => field.name === rootFieldOf(route))?.[0]] as const)
    .filter(([, field]) => field && needsOf(field));

describe.each(permissionRoutes().map(([route, field]) => [`${route.method} ${route.path}`, route, field!] as const))(
  '/v1 %s',
  (name, route, field) => {
    const needs = needsOf(field)!;
    const c = cases[field.name]!;
    for (const column of COLUMNS) {
      it.concurrent(`with ${column}: explained as the request is answered`, () =>
        compare(needs, c.alsoNeeds ?? [], column, async (token) => {
          const args = (await (c.v1?.[name] ?? c.args)?.(things)) ?? {};
          const { path, body } = routeRequest(route, args);
          const res = await api(app, route.method, path, { token, org: org.slug, body, headers: from(newClientAddress()) });
          const ok = res.status >= 200 && res.status < 300;
          if (!ok) expect(res.body?.code, JSON.stringify(res.body)).toMatch(REFUSAL);
          return { ok, seen: `${route.method} ${path} ${res.status} ${JSON.stringify(res.body).slice(0, 300)}` };
        }),
      );
    }
  },
);

describe('who may ask, and what an answer says', () => {
  const explain = (token: string, query: Record<string, string>) =>
    api(app, 'GET', `/v1/access/explain?${new URLSearchParams(query).toString()}`, {
      token,
      org: org.slug,
      headers: from(newClientAddress()),
    });

  it('names what a denial lacks and what is held nearby', async () => {
    const res = await explain(org.adminToken, {
      personId: people.viewer.personId,
      permission: 'events.write',
      accountId: accountOf(things),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const { explanation } = res.body;
    expect(explanation).toMatchObject({ allowed: false, grants: [], accountId: accountOf(things) });
    expect(explanation.subject).toMatchObject({ kind: 'person', personId: people.viewer.personId, apiKeyId: null });
    expect(explanation.nearby).toEqual([
      expect.objectContaining({ source: 'role_assignment', granted: '*.read', roleName: 'Viewer', scope: 'dynamic' }),
    ]);
    expect(explanation.reason).toBe(
      `events.write on ${accountOf(things)}: no role assignment grants it; the person holds *.read on ${accountOf(things)} via role Viewer assigned on ${accountOf(things)}`,
    );
  });

  it('names the role assignment, the permission as written and its wildcard and scope that allow', async () => {
    const res = await explain(people.admin.token, { permission: 'events.write', accountId: accountOf(things) });
    expect(res.body.explanation.grants).toEqual([
      expect.objectContaining({
        source: 'role_assignment',
        permission: '*.*:all',
        granted: '*.*',
        wildcard: true,
        scope: 'all',
        accountIds: null,
        roleAssignmentId: org.assignment.id,
        roleName: 'Organisation admin',
      }),
    ]);
  });

  it("answers an API key with its scopes and account, and a revoked key's refusal", async () => {
    const pinned = await createApiKey(app, org, ['events.read'], { accountId: accountOf(things) });
    const mine = await explain(pinned.key, { permission: 'events.read:all' });
    expect(mine.body.explanation).toMatchObject({
      allowed: false,
      accountId: null,
      subject: { kind: 'api_key', apiKeyId: pinned.apiKey.id, accountId: accountOf(things), scopes: ['events.read'] },
      nearby: [
        expect.objectContaining({ source: 'api_key_scope', permission: 'events.read', scope: 'account', assignedOn: accountOf(things) }),
      ],
    });
    await api(app, 'POST', `/v1/api-keys/${pinned.apiKey.id}/revoke`, { token: org.adminToken, org: org.slug });
    const revoked = await explain(org.adminToken, { apiKeyId: pinned.apiKey.id, permission: 'events.read', accountId: accountOf(things) });
    expect(revoked.body.explanation).toMatchObject({ allowed: false, credentialRefusal: { code: 'API_KEY_REVOKED' } });
    expect(revoked.body.explanation.grants).toHaveLength(1);
  });

  it('lets anyone ask about themselves, and only readers of roles about others', async () => {
    expect((await explain(people.noRights.token, { permission: 'events.read', accountId: accountOf(things) })).status).toBe(200);
    const staff = await explain(people.viewer.token, { personId: people.admin.personId, permission: 'events.read' });
    expect(`${staff.status} ${staff.body.code}`).toBe('403 FORBIDDEN');
    const key = await keyHolding(['events.read']);
    const byKey = await explain(key.key, { personId: people.admin.personId, permission: 'events.read' });
    expect(`${byKey.status} ${byKey.body.code}`).toBe('404 NOT_FOUND');
    const roleReader = await keyHolding(['roles.read', 'role_assignments.read']);
    const allowed = await explain(roleReader.key, {
      personId: people.viewer.personId,
      permission: 'events.read',
      accountId: accountOf(things),
    });
    expect(allowed.body.explanation?.allowed, JSON.stringify(allowed.body)).toBe(true);
  });

  it('answers 404 for a person, key or account not of the organisation, and names an invalid argument', async () => {
    const unknown = await explain(org.adminToken, { personId: 'usr_unknown0000000000000000', permission: 'events.read' });
    expect(`${unknown.status} ${unknown.body.code}`).toBe('404 NOT_FOUND');
    const account = await explain(org.adminToken, { permission: 'events.read', accountId: 'acc_unknown0000000000000000' });
    expect(`${account.status} ${account.body.code}`).toBe('404 NOT_FOUND');
    const invalid = await explain(org.adminToken, { permission: 'events.read:somewhere' });
    expect([invalid.status, invalid.body.code, invalid.body.details?.[0]?.path]).toEqual([400, 'VALIDATION_FAILED', 'query.permission']);
    const both = await graphql(
      app,
      'query($p: ID, $k: ID) { explainAccess(personId: $p, apiKeyId: $k, permission: "events.read") { allowed } }',
      { p: people.admin.personId, k: things.apiKeyId },
      { token: org.adminToken, org: org.slug },
    );
    expect(both.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
  });

  it("answers the contract's form: principalType and principalId in, decidedBy and missing out", async () => {
    const viewer = people.viewer;
    const denied = await explain(org.adminToken, {
      principalType: 'user',
      principalId: viewer.userId,
      permission: 'events.write',
      accountId: accountOf(things),
    });
    expect(denied.status, JSON.stringify(denied.body)).toBe(200);
    expect(denied.body).toMatchObject({
      allowed: false,
      permission: 'events.write',
      accountId: accountOf(things),
      decidedBy: [],
      missing: `events.write on ${accountOf(things)}`,
    });
    const admin = await explain(org.adminToken, { principalType: 'user', principalId: org.user.id, permission: 'events.write' });
    expect(admin.body).toMatchObject({
      allowed: true,
      accountId: null,
      decidedBy: [{ kind: 'org_admin', id: org.assignment.id, roleId: expect.stringMatching(/^rol_/), matched: '*.*:all' }],
      missing: null,
    });
    const key = await keyHolding(['events.read']);
    const linked = await graphql(
      app,
      `
        query ($id: ID!) {
          explainAccess(principalType: USER, principalId: $id, permission: "events.write") {
            subject {
              user {
                id
              }
              account {
                id
              }
            }
            grants {
              role {
                id
                name
              }
              accounts {
                id
              }
            }
          }
        }
      `,
      { id: org.user.id },
      { token: org.adminToken, org: org.slug },
    );
    expect(linked.body.errors).toBeUndefined();
    expect(linked.body.data.explainAccess).toEqual({
      subject: { user: { id: org.user.id }, account: null },
      grants: [{ role: { id: org.assignment.roleId, name: 'Organisation admin' }, accounts: null }],
    });
    const byKey = await explain(org.adminToken, { principalType: 'api_key', principalId: key.id, permission: 'events.read' });
    expect(byKey.body.decidedBy).toEqual([{ kind: 'api_key_scope', id: key.id, matched: 'events.read' }]);
    const half = await explain(org.adminToken, { principalType: 'user', permission: 'events.read' });
    expect([half.status, half.body.details?.[0]?.path]).toEqual([400, 'query.principalId']);
    const wrongKind = await explain(org.adminToken, { principalType: 'api_key', principalId: viewer.userId, permission: 'events.read' });
    expect(wrongKind.status).toBe(404);
    // A reader of roles who may not read the user's assignments learns nothing of them, not even
    // the person behind the user.
    const roleReader = await keyHolding(['roles.read']);
    const hidden = await explain(roleReader.key, { principalType: 'user', principalId: viewer.userId, permission: 'events.read' });
    expect([hidden.status, hidden.body.error]).toEqual([404, `No person ${viewer.userId} in this organisation.`]);
  });

  it("shows a reader of one account's assignments none of another's, and no one who holds roles only there", async () => {
    const accountA = accountOf(things);
    const accountB = (await createAccount(app, org, `Explain B ${tag()}`)).id;
    const reader = await customRole(app, org, ['roles.read:all', 'role_assignments.read']);
    const caller = await createStaffUser(app, org, [{ roleId: reader.id, accountId: accountA }], 'reader');
    const everywhere = await customRole(app, org, ['events.write:all']);
    const subject = await createStaffUser(
      app,
      org,
      [
        { roleId: systemRole(org, 'viewer'), accountId: accountA },
        { roleId: systemRole(org, 'event_manager'), accountId: accountB },
      ],
      'subject',
    );
    const denied = await explain(caller.token, { personId: subject.personId, permission: 'events.write', accountId: accountA });
    expect(denied.body.explanation, JSON.stringify(denied.body)).toMatchObject({ allowed: false, grants: [] });
    // The assignment on B is as absent as roleAssignments(userId:) has it for this caller.
    expect(JSON.stringify(denied.body)).not.toContain(accountB);
    expect(JSON.stringify(denied.body)).not.toContain(subject.assignments[1]!.id);

    // Allowed on A by a role assigned on B: allowed, by a grant the caller may not see.
    const fromB = await createStaffUser(
      app,
      org,
      [
        { roleId: systemRole(org, 'viewer'), accountId: accountA },
        { roleId: everywhere.id, accountId: accountB },
      ],
      'from-b',
    );
    const allowed = await explain(caller.token, { personId: fromB.personId, permission: 'events.write', accountId: accountA });
    expect(allowed.body.explanation).toMatchObject({ allowed: true, grants: [] });
    expect(allowed.body.explanation.reason).toContain('an account whose assignments you may not read');
    expect(JSON.stringify(allowed.body)).not.toContain(accountB);
    // The administrator, who reads every assignment, sees the grant.
    const byAdmin = await explain(org.adminToken, { personId: fromB.personId, permission: 'events.write', accountId: accountA });
    expect(byAdmin.body.explanation.grants).toEqual([expect.objectContaining({ roleId: everywhere.id, assignedOn: accountB })]);

    // Someone holding roles only on B, or only invited there, is any unknown id to this caller.
    const onlyB = await createStaffUser(app, org, [{ roleId: systemRole(org, 'account_admin'), accountId: accountB }], 'only-b');
    const invitation = await api(app, 'POST', '/v1/user-invitations', {
      token: org.adminToken,
      org: org.slug,
      body: {
        organisationId: org.organisation.id,
        email: `invited-${tag()}@x.test`,
        roleIds: [systemRole(org, 'viewer')],
        accountId: accountB,
      },
    });
    expect(invitation.status, JSON.stringify(invitation.body)).toBe(201);
    const unknownUser = 'usr_unknown0000000000000000';
    for (const userId of [onlyB.userId, invitation.body.invitation.userId as string, unknownUser]) {
      const res = await explain(caller.token, {
        principalType: 'user',
        principalId: userId,
        permission: 'events.read',
        accountId: accountA,
      });
      expect([res.status, String(res.body.error).replace(userId, 'usr_…')], userId).toEqual([404, 'No person usr_… in this organisation.']);
    }
  });

  it('explains a disabled user as refused whatever they ask, with what their requests meet', async () => {
    const disabled = await createStaffUser(
      app,
      org,
      [{ roleId: systemRole(org, 'account_admin'), accountId: accountOf(things) }],
      'disabled',
    );
    await appOf(app).runtime.db.user.update({ where: { id: disabled.userId }, data: { status: 'disabled' } });
    const request = await api(app, 'GET', '/v1/events', { token: disabled.token, org: org.slug });
    expect([request.status, request.body.code]).toEqual([403, 'ORG_MISMATCH']);
    const res = await explain(org.adminToken, {
      principalType: 'user',
      principalId: disabled.userId,
      permission: 'events.read',
      accountId: accountOf(things),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.explanation).toMatchObject({
      allowed: false,
      subject: { kind: 'person', userId: disabled.userId },
      credentialRefusal: { code: request.body.code },
      grants: [],
    });
    expect(res.body.explanation.credentialRefusal.message).toContain('disabled');
  });

  it('answers 404 for an account named in the permission that is not of the organisation, as for accountId', async () => {
    const other = await createOrganisation(app, 'explain-other');
    const gone = await createAccount(app, org, `Gone ${tag()}`);
    expect((await api(app, 'DELETE', `/v1/accounts/${gone.id}`, { token: org.adminToken, org: org.slug })).status).toBe(200);
    for (const accountId of [other.account.id, gone.id, 'acc_unknown0000000000000000']) {
      const byScope = await explain(org.adminToken, { permission: `events.write:${accountId}` });
      expect([byScope.status, byScope.body.code, byScope.body.details?.[0]?.path], accountId).toEqual([404, 'NOT_FOUND', 'permission']);
      const byArgument = await explain(org.adminToken, { permission: 'events.write', accountId });
      expect([byArgument.status, byArgument.body.code], accountId).toEqual([404, 'NOT_FOUND']);
    }
  });

  it('tells a key holding a right only people may use that it is refused it, holding it nearby', async () => {
    const key = await keyHolding(['api_keys.read', 'api_keys.write']);
    const res = await explain(org.adminToken, { apiKeyId: key.id, permission: 'api_keys.read:all' });
    expect(res.body.explanation).toMatchObject({ allowed: false, grants: [] });
    expect(res.body.explanation.nearby).toEqual([expect.objectContaining({ source: 'api_key_scope', permission: 'api_keys.read' })]);
    expect(res.body.explanation.reason).toContain('only a signed-in person may use api_keys (SIGNED_IN_USER_REQUIRED)');
    // Asked about every resource (`*`), which covers api_keys, a key is denied too.
    const everything = await keyHolding(['*.read']);
    const wildcard = await explain(everything.key, { permission: '*.read:all' });
    expect(wildcard.body.explanation).toMatchObject({ allowed: false, grants: [] });
    expect(wildcard.body.explanation.reason).toContain(
      'only a signed-in person may use api_keys (SIGNED_IN_USER_REQUIRED), which * covers',
    );
    expect((await api(app, 'GET', '/v1/api-keys', { token: everything.key, org: org.slug })).body.code).toBe('SIGNED_IN_USER_REQUIRED');
    // Nor may a key read another key's explanation, whatever it holds: keys are read by people.
    const reader = await keyHolding(['roles.read', 'api_keys.read', 'role_assignments.read']);
    const byKey = await explain(reader.key, { apiKeyId: key.id, permission: 'events.read:all' });
    expect([byKey.status, byKey.body.code]).toEqual([404, 'NOT_FOUND']);
    expect((await explain(reader.key, { apiKeyId: reader.id, permission: 'events.read:all' })).status).toBe(200);
  });

  it('explains an embed session, asked about by itself', async () => {
    const token = await embedToken(app, org, ['events.read']);
    const res = await explain(token, { permission: 'events.read', accountId: accountOf(things) });
    expect(res.body.explanation).toMatchObject({ allowed: true, subject: { kind: 'embed_session', accountId: accountOf(things) } });
    expect(res.body.explanation.grants).toEqual([expect.objectContaining({ source: 'embed_session_scope', permission: 'events.read' })]);
  });
});
