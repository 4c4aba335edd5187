import { z } from 'zod';
import { createIdentityProviderInput, updateIdentityProviderInput } from '../../src/services/identity-providers.ts';
import { federateInput } from '../../src/services/federate.ts';
import type { RestRoute } from '../route.ts';
import { signInResult } from './auth.ts';
import { listQuery } from '../../src/pagination.ts';
import { idParam, pagination, PAGINATION_FIELDS } from '../shapes/common.ts';

const PROVIDER_FIELDS = `id organisationId providerType isDefault isEnabled supportsPkce issuer jwksUri
  authorizationEndpoint tokenEndpoint tokenEndpointInternal userinfoEndpoint userinfoEndpointInternal jwksUriInternal
  clientId scopes allowedClientIds emailDomain cacheTtl configuration createdAt updatedAt`;

const nullableString = z.string().nullable();

export const identityProvider = z.object({
  id: z.string(),
  organisationId: nullableString,
  providerType: z.string(),
  isDefault: z.boolean(),
  isEnabled: z.boolean(),
  supportsPkce: z.boolean(),
  issuer: z.string(),
  jwksUri: z.string(),
  authorizationEndpoint: nullableString,
  tokenEndpoint: nullableString,
  tokenEndpointInternal: nullableString,
  userinfoEndpoint: nullableString,
  userinfoEndpointInternal: nullableString,
  jwksUriInternal: nullableString,
  clientId: nullableString,
  scopes: z.array(z.string()),
  allowedClientIds: z.array(z.string()),
  emailDomain: nullableString,
  cacheTtl: z.number(),
  configuration: z.record(z.string(), z.unknown()).nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const identityProvidersRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/identity-providers',
    summary: "The organisation's identity providers, the default first.",
    tag: 'Identity providers',
    organisation: true,
    operation: `query IdentityProviders($page: Int, $limit: Int) {
      identityProviders(page: $page, limit: $limit) { nodes { ${PROVIDER_FIELDS} } ${PAGINATION_FIELDS} }
    }`,
    query: listQuery(),
    bind: { '...': 'query' },
    result: (data) => ({ providers: data.identityProviders.nodes, pagination: data.identityProviders.pagination }),
    response: z.object({ providers: z.array(identityProvider), pagination }),
  },
  {
    method: 'POST',
    path: '/identity-providers',
    summary: 'Add an identity provider (OpenID issuer) whose tokens sign users of the organisation in. One per issuer.',
    tag: 'Identity providers',
    organisation: true,
    operation: `mutation CreateIdentityProvider($input: CreateIdentityProviderInput!) {
      createIdentityProvider(input: $input) { identityProvider { ${PROVIDER_FIELDS} } }
    }`,
    body: createIdentityProviderInput,
    bind: { input: 'body' },
    result: (data) => ({ provider: data.createIdentityProvider.identityProvider }),
    status: 201,
    response: z.object({ provider: identityProvider }),
  },
  {
    method: 'GET',
    path: '/identity-providers/{id}',
    summary: 'One identity provider of the organisation.',
    tag: 'Identity providers',
    organisation: true,
    operation: `query IdentityProvider($id: ID!) { identityProvider(id: $id) { ${PROVIDER_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ provider: data.identityProvider }),
    response: z.object({ provider: identityProvider }),
  },
  {
    method: 'PATCH',
    path: '/identity-providers/{id}',
    summary:
      'Change isEnabled, isDefault, scopes, allowedClientIds, emailDomain, cacheTtl or configuration. isDefault=true clears the other default.',
    tag: 'Identity providers',
    organisation: true,
    operation: `mutation UpdateIdentityProvider($id: ID!, $input: UpdateIdentityProviderInput!) {
      updateIdentityProvider(id: $id, input: $input) { identityProvider { ${PROVIDER_FIELDS} } }
    }`,
    params: idParam,
    body: updateIdentityProviderInput,
    bind: { id: 'params.id', input: 'body' },
    result: (data) => ({ provider: data.updateIdentityProvider.identityProvider }),
    response: z.object({ provider: identityProvider }),
  },
  {
    method: 'POST',
    path: '/auth/federate',
    summary:
      "Sign in with an ID token (or JWT access token) of an organisation's identity provider. The person must already be a " +
      'user of that organisation (active or invited); the tokens carry it. With X-Service-Org only its providers are tried.',
    tag: 'Authentication',
    organisation: false,
    operation: `mutation Federate($input: FederateInput!) {
      federate(input: $input) { session { accessToken refreshToken expiresAt user { id email firstName lastName } } }
    }`,
    body: federateInput,
    bind: { input: 'body' },
    result: (data) => data.federate.session,
    replay: 'never',
    response: signInResult,
  },
];
