import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createApiKey, staffWithRoles } from '../support/credentials.ts';
import { api, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';

// Providers here live at example.com names that do not resolve offline: no address check.
const app = useTestApp({ IDENTITY_PROVIDER_ALLOW_PRIVATE_URLS: 'true' });
let org: TestOrganisation;
let other: TestOrganisation;
beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'idp'), createOrganisation(app, 'idp-other')]);
});

let issuerCount = 0;
function providerBody(overrides: Record<string, unknown> = {}) {
  issuerCount++;
  return {
    providerType: 'oidc',
    issuer: `https://id${issuerCount}.example.com/tenant`,
    jwksUri: `https://id${issuerCount}.example.com/tenant/jwks`,
    clientId: 'ticketing',
    ...overrides,
  };
}

async function createProvider(owner: TestOrganisation, overrides: Record<string, unknown> = {}) {
  const res = await api(app, 'POST', '/v1/identity-providers', { token: owner.adminToken, org: owner.slug, body: providerBody(overrides) });
  expect(res.status).toBe(201);
  return res.body.provider;
}

const FIELDS = `id organisationId providerType isDefault isEnabled supportsPkce issuer jwksUri authorizationEndpoint
  tokenEndpoint tokenEndpointInternal userinfoEndpoint userinfoEndpointInternal jwksUriInternal clientId scopes
  allowedClientIds emailDomain cacheTtl configuration createdAt updatedAt`;

describe('REST /v1/identity-providers', () => {
  it('POST creates a provider (201) with every field of the spec, nullable ones null', async () => {
    const body = providerBody({ authorizationEndpoint: 'https://id.example.com/authorize' });
    const res = await api(app, 'POST', '/v1/identity-providers', { token: org.adminToken, org: org.slug, body });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      provider: {
        id: expect.stringMatching(/^idp_/),
        organisationId: org.organisation.id,
        providerType: 'oidc',
        isDefault: false,
        isEnabled: true,
        supportsPkce: true,
        issuer: body.issuer,
        jwksUri: body.jwksUri,
        authorizationEndpoint: 'https://id.example.com/authorize',
        tokenEndpoint: null,
        tokenEndpointInternal: null,
        userinfoEndpoint: null,
        userinfoEndpointInternal: null,
        jwksUriInternal: null,
        clientId: 'ticketing',
        scopes: ['openid', 'email', 'profile'],
        allowedClientIds: [],
        emailDomain: null,
        cacheTtl: 600,
        configuration: null,
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updatedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    });
  });

  it('GET lists the providers of the organisation only; GET /{id} answers one', async () => {
    const mine = await createProvider(org);
    const theirs = await createProvider(other);
    const list = await api(app, 'GET', '/v1/identity-providers', { token: org.adminToken, org: org.slug });
    expect(list.status).toBe(200);
    const ids = list.body.providers.map((p: { id: string }) => p.id);
    expect(ids).toContain(mine.id);
    expect(ids).not.toContain(theirs.id);
    const one = await api(app, 'GET', `/v1/identity-providers/${mine.id}`, { token: org.adminToken, org: org.slug });
    expect(one).toMatchObject({ status: 200, body: { provider: mine } });
  });

  it("another organisation's provider is 404 NOT_FOUND, for reading and for changing", async () => {
    const theirs = await createProvider(other);
    const get = await api(app, 'GET', `/v1/identity-providers/${theirs.id}`, { token: org.adminToken, org: org.slug });
    expect(get.status).toBe(404);
    expect(get.body.code).toBe('NOT_FOUND');
    const patch = await api(app, 'PATCH', `/v1/identity-providers/${theirs.id}`, {
      token: org.adminToken,
      org: org.slug,
      body: { isEnabled: false },
    });
    expect(patch.status).toBe(404);
    const still = await api(app, 'GET', `/v1/identity-providers/${theirs.id}`, { token: other.adminToken, org: other.slug });
    expect(still.body.provider.isEnabled).toBe(true);
  });

  it('PATCH changes the updatable fields and nothing else', async () => {
    const provider = await createProvider(org, { emailDomain: 'example.com' });
    const res = await api(app, 'PATCH', `/v1/identity-providers/${provider.id}`, {
      token: org.adminToken,
      org: org.slug,
      body: {
        isEnabled: false,
        scopes: ['openid', 'email'],
        allowedClientIds: ['ticketing', 'ticketing-cli'],
        emailDomain: 'Corp.Example.COM',
        cacheTtl: 0,
        configuration: { prompt: 'select_account', nested: { a: 1 } },
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.provider).toEqual({
      ...provider,
      isEnabled: false,
      scopes: ['openid', 'email'],
      allowedClientIds: ['ticketing', 'ticketing-cli'],
      emailDomain: 'corp.example.com',
      cacheTtl: 0,
      configuration: { prompt: 'select_account', nested: { a: 1 } },
      updatedAt: expect.any(String),
    });
    const cleared = await api(app, 'PATCH', `/v1/identity-providers/${provider.id}`, {
      token: org.adminToken,
      org: org.slug,
      body: { emailDomain: null },
    });
    expect(cleared.body.provider.emailDomain).toBeNull();
    expect(cleared.body.provider.isEnabled).toBe(false);
  });

  it('isDefault=true takes the default away from the other providers of the organisation only', async () => {
    const theirs = await createProvider(other, { isDefault: true });
    const first = await createProvider(org, { isDefault: true });
    const second = await createProvider(org);
    const res = await api(app, 'PATCH', `/v1/identity-providers/${second.id}`, {
      token: org.adminToken,
      org: org.slug,
      body: { isDefault: true },
    });
    expect(res.body.provider.isDefault).toBe(true);
    const list = await api(app, 'GET', '/v1/identity-providers', { token: org.adminToken, org: org.slug });
    const defaults = list.body.providers.filter((p: { isDefault: boolean }) => p.isDefault).map((p: { id: string }) => p.id);
    expect(defaults).toEqual([second.id]);
    expect(list.body.providers[0].id).toBe(second.id);
    expect(defaults).not.toContain(first.id);
    const stillTheirs = await api(app, 'GET', `/v1/identity-providers/${theirs.id}`, { token: other.adminToken, org: other.slug });
    expect(stillTheirs.body.provider.isDefault).toBe(true);
  });

  it('validation names each field: wrong types, a bad domain, out-of-range cacheTtl, unknown fields', async () => {
    const provider = await createProvider(org);
    const res = await api(app, 'PATCH', `/v1/identity-providers/${provider.id}`, {
      token: org.adminToken,
      org: org.slug,
      body: { isEnabled: 'yes', emailDomain: 'not a domain', cacheTtl: 86_401, configuration: [1], issuer: 'https://x.example' },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual([
      'cacheTtl',
      'configuration',
      'emailDomain',
      'isEnabled',
      'issuer',
    ]);
    expect(res.body.details.find((d: { path: string }) => d.path === 'issuer').message).toBe('Unknown field.');
    const fraction = await api(app, 'PATCH', `/v1/identity-providers/${provider.id}`, {
      token: org.adminToken,
      org: org.slug,
      body: { cacheTtl: 1.5 },
    });
    expect(fraction.body.details).toEqual([{ path: 'cacheTtl', message: expect.any(String) }]);

    const create = await api(app, 'POST', '/v1/identity-providers', {
      token: org.adminToken,
      org: org.slug,
      body: { providerType: 'oidc', issuer: 'not a url', jwksUri: 'ftp://keys.example.com/jwks', clientId: 'x' },
    });
    expect(create.status).toBe(400);
    expect(create.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['issuer', 'jwksUri']);
    const noAudience = await api(app, 'POST', '/v1/identity-providers', {
      token: org.adminToken,
      org: org.slug,
      body: providerBody({ clientId: undefined }),
    });
    expect(noAudience.body.details).toEqual([{ path: 'clientId', message: expect.stringMatching(/audience/) }]);
  });

  it('an issuer is unique within the organisation (409 CONFLICT), not across organisations', async () => {
    const body = providerBody();
    expect((await api(app, 'POST', '/v1/identity-providers', { token: org.adminToken, org: org.slug, body })).status).toBe(201);
    const again = await api(app, 'POST', '/v1/identity-providers', { token: org.adminToken, org: org.slug, body });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('CONFLICT');
    expect((await api(app, 'POST', '/v1/identity-providers', { token: other.adminToken, org: other.slug, body })).status).toBe(201);
  });

  it('of concurrent creations with one issuer exactly one succeeds', async () => {
    const body = providerBody({ isDefault: true });
    const results = await Promise.all(
      Array.from({ length: 5 }, () => api(app, 'POST', '/v1/identity-providers', { token: org.adminToken, org: org.slug, body })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
  });
});

describe('access to identity providers', () => {
  it('a signed-in user without identity_providers.read on every account is refused with 403 FORBIDDEN', async () => {
    const { token: accessToken } = await staffWithRoles(app, org, ['viewer'], org.account.id, 'viewer');
    const list = await api(app, 'GET', '/v1/identity-providers', { token: accessToken, org: org.slug });
    expect(list.status).toBe(403);
    expect(list.body.code).toBe('FORBIDDEN');
    const create = await api(app, 'POST', '/v1/identity-providers', { token: accessToken, org: org.slug, body: providerBody() });
    expect(create.status).toBe(403);
  });

  it('an API key without the scope gets 404 NOT_FOUND; with identity_providers.read it may read but not write', async () => {
    const key = async (scopes: string[]) => (await createApiKey(app, org, scopes)).key;
    const unscoped = await key(['events.read']);
    const list = await api(app, 'GET', '/v1/identity-providers', { token: unscoped, org: org.slug });
    expect(list.status).toBe(404);
    expect(list.body.code).toBe('NOT_FOUND');
    const reader = await key(['identity_providers.read']);
    expect((await api(app, 'GET', '/v1/identity-providers', { token: reader, org: org.slug })).status).toBe(200);
    const write = await api(app, 'POST', '/v1/identity-providers', { token: reader, org: org.slug, body: providerBody() });
    expect(write.status).toBe(404);
  });

  it('needs a credential (401) and X-Service-Org (400 ORG_REQUIRED)', async () => {
    expect((await api(app, 'GET', '/v1/identity-providers', { org: org.slug })).status).toBe(401);
    expect((await api(app, 'GET', '/v1/identity-providers', { token: org.adminToken })).body.code).toBe('ORG_REQUIRED');
  });
});

describe('GraphQL identity providers', () => {
  it('create, list, get and update answer the same provider', async () => {
    const auth = { token: org.adminToken, org: org.slug };
    const input = providerBody({ allowedClientIds: ['a', 'b'], clientId: null, emailDomain: 'example.com', cacheTtl: 60 });
    const created = await graphql(
      app,
      `mutation ($input: CreateIdentityProviderInput!) { createIdentityProvider(input: $input) { identityProvider { ${FIELDS} } } }`,
      { input },
      auth,
    );
    expect(created.body.errors).toBeUndefined();
    const provider = created.body.data.createIdentityProvider.identityProvider;
    expect(provider).toMatchObject({ issuer: input.issuer, clientId: null, allowedClientIds: ['a', 'b'], cacheTtl: 60 });

    const read = await graphql(
      app,
      `query ($id: ID!) { identityProviders { nodes { id } } identityProvider(id: $id) { ${FIELDS} } }`,
      { id: provider.id },
      auth,
    );
    expect(read.body.data.identityProvider).toEqual(provider);
    expect(read.body.data.identityProviders.nodes.map((p: { id: string }) => p.id)).toContain(provider.id);

    const updated = await graphql(
      app,
      `
        mutation ($id: ID!, $input: UpdateIdentityProviderInput!) {
          updateIdentityProvider(id: $id, input: $input) {
            identityProvider {
              isEnabled
              cacheTtl
              emailDomain
            }
          }
        }
      `,
      { id: provider.id, input: { isEnabled: false, emailDomain: null } },
      auth,
    );
    expect(updated.body.data.updateIdentityProvider.identityProvider).toEqual({ isEnabled: false, cacheTtl: 60, emailDomain: null });

    const emptied = await graphql(
      app,
      `
        mutation ($id: ID!) {
          updateIdentityProvider(id: $id, input: { allowedClientIds: [] }) {
            identityProvider {
              id
            }
            userErrors {
              field
              code
              message
            }
          }
        }
      `,
      { id: provider.id },
      auth,
    );
    expect(emptied.body.errors).toBeUndefined();
    expect(emptied.body.data.updateIdentityProvider).toEqual({
      identityProvider: null,
      userErrors: [{ field: ['input', 'allowedClientIds'], code: 'VALIDATION_FAILED', message: expect.stringMatching(/audience/) }],
    });
  });

  it("refuses another organisation's provider with NOT_FOUND and an anonymous caller with UNAUTHENTICATED", async () => {
    const theirs = await createProvider(other);
    const res = await graphql(
      app,
      `
        query ($id: ID!) {
          identityProvider(id: $id) {
            id
          }
        }
      `,
      { id: theirs.id },
      {
        token: org.adminToken,
        org: org.slug,
      },
    );
    expect(res.body.errors[0].extensions.code).toBe('NOT_FOUND');
    const anonymous = await graphql(app, '{ identityProviders { nodes { id } } }', {}, { org: org.slug });
    expect(anonymous.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
  });
});
