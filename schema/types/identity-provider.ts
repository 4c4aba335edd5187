import type { IdentityProvider } from '../../src/generated/prisma/client.ts';
import { federate, federateInput } from '../../src/services/federate.ts';
import {
  createIdentityProvider,
  createIdentityProviderInput,
  getIdentityProvider,
  listIdentityProviders,
  updateIdentityProvider,
  updateIdentityProviderInput,
} from '../../src/services/identity-providers.ts';
import { builder } from '../builder.ts';
import { Node } from '../node.ts';
import { organisationRelation } from './organisation.ts';
import { inputFrom } from '../input.ts';
import { answer, payload } from '../payload.ts';
import { SignInResultRef } from './auth.ts';
import { pageArgsFor, pagedConnection, updatedSinceArg } from '../pagination.ts';

const READ = { $all: { organisation: true, organisationPermission: 'identity_providers.read' } } as const;
const WRITE = { $all: { organisation: true, organisationPermission: 'identity_providers.write' } } as const;

export const IdentityProviderRef = builder.objectRef<IdentityProvider>('IdentityProvider').implement({
  interfaces: [Node],
  description: "An OpenID provider whose tokens sign the organisation's users in (POST /v1/auth/federate).",
  fields: (t) => ({
    organisationId: t.exposeID('organisationId', {
      nullable: true,
      description: 'Organisation the provider belongs to; null for a platform-wide provider.',
    }),
    organisation: t.field(
      organisationRelation(
        'The organisation it belongs to; null for a platform-wide provider (also null, with an error, where you may not read the organisation).',
      ),
    ),
    providerType: t.exposeString('providerType', { description: 'Kind of provider, e.g. oidc, okta, azure_ad.' }),
    isDefault: t.exposeBoolean('isDefault', { description: "Whether this is the organisation's default provider." }),
    isEnabled: t.exposeBoolean('isEnabled', { description: 'Whether tokens of this provider are accepted.' }),
    supportsPkce: t.exposeBoolean('supportsPkce', { description: 'Whether the provider supports PKCE (S256).' }),
    issuer: t.exposeString('issuer', { description: 'Issuer identifier; the iss claim of its tokens.' }),
    jwksUri: t.exposeString('jwksUri', { description: 'Where the provider publishes its signing keys (JWKS).' }),
    authorizationEndpoint: t.exposeString('authorizationEndpoint', {
      nullable: true,
      description: 'Authorization endpoint for browsers, or null.',
    }),
    tokenEndpoint: t.exposeString('tokenEndpoint', { nullable: true, description: 'Token endpoint, or null.' }),
    tokenEndpointInternal: t.exposeString('tokenEndpointInternal', {
      nullable: true,
      description: 'Token endpoint as reached from the service (private network), or null.',
    }),
    userinfoEndpoint: t.exposeString('userinfoEndpoint', { nullable: true, description: 'Userinfo endpoint, or null.' }),
    userinfoEndpointInternal: t.exposeString('userinfoEndpointInternal', {
      nullable: true,
      description: 'Userinfo endpoint as reached from the service, or null.',
    }),
    jwksUriInternal: t.exposeString('jwksUriInternal', {
      nullable: true,
      description: 'JWKS address as reached from the service; used instead of jwksUri when set. Null otherwise.',
    }),
    clientId: t.exposeString('clientId', { nullable: true, description: "The organisation's client id at the provider, or null." }),
    scopes: t.exposeStringList('scopes', { description: 'Scopes requested at sign-in.' }),
    allowedClientIds: t.exposeStringList('allowedClientIds', {
      description: 'Audiences accepted in tokens; when empty, clientId is the only one.',
    }),
    emailDomain: t.exposeString('emailDomain', {
      nullable: true,
      description: 'When set, only tokens whose email is in this domain are accepted. Null otherwise.',
    }),
    cacheTtl: t.exposeInt('cacheTtl', { description: "Seconds the provider's signing keys are cached." }),
    configuration: t.field({
      type: 'JSONObject',
      nullable: true,
      description: 'Free-form provider settings, or null.',
      resolve: (provider) => provider.configuration as Record<string, unknown> | null,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'When the provider was added.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'When the provider last changed.' }),
  }),
});

const CreateIdentityProviderInput = inputFrom('CreateIdentityProviderInput', createIdentityProviderInput, {
  description: 'A new identity provider (POST /v1/identity-providers).',
  fields: {
    providerType: 'Kind of provider: 1 to 50 letters, digits, ".", "_" or "-".',
    issuer: 'Issuer URL; unique within the organisation.',
    jwksUri: 'JWKS URL.',
    authorizationEndpoint: 'Authorization endpoint URL.',
    tokenEndpoint: 'Token endpoint URL.',
    tokenEndpointInternal: 'Token endpoint URL as reached from the service.',
    userinfoEndpoint: 'Userinfo endpoint URL.',
    userinfoEndpointInternal: 'Userinfo endpoint URL as reached from the service.',
    jwksUriInternal: 'JWKS URL as reached from the service.',
    clientId: 'Client id at the provider. It or allowedClientIds is required.',
    supportsPkce: 'Whether the provider supports PKCE (default true).',
    isEnabled: 'Whether tokens are accepted (default true).',
    isDefault: 'Make this the default provider (default false).',
    scopes: 'Scopes requested at sign-in (default openid, email, profile).',
    allowedClientIds: 'Audiences accepted in tokens (default: clientId only).',
    emailDomain: 'Only accept emails in this domain, e.g. example.com.',
    cacheTtl: 'Seconds to cache the signing keys, 0 to 86400 (default 600).',
    configuration: 'Free-form provider settings.',
  },
});

const UpdateIdentityProviderInput = inputFrom('UpdateIdentityProviderInput', updateIdentityProviderInput, {
  description: 'Changes to an identity provider (PATCH /v1/identity-providers/{id}); absent fields stay as they are.',
  fields: {
    isEnabled: 'Whether tokens are accepted.',
    isDefault: "Make this the default (true clears the organisation's other default).",
    scopes: 'Scopes requested at sign-in.',
    allowedClientIds: 'Audiences accepted in tokens; empty means clientId only.',
    emailDomain: 'Only accept emails in this domain; null accepts any.',
    cacheTtl: 'Seconds to cache the signing keys, 0 to 86400.',
    configuration: 'Free-form provider settings.',
  },
});

const FederateInput = inputFrom('FederateInput', federateInput, {
  description: "A token of an organisation's identity provider.",
  fields: {
    token: 'ID token or JWT access token issued by the provider.',
  },
});

const IdentityProviderConnection = pagedConnection(IdentityProviderRef, 'IdentityProviderConnection', 'identity providers');

builder.queryFields((t) => ({
  identityProviders: t.field({
    type: IdentityProviderConnection,
    nullable: true,
    description: "A page of the organisation's identity providers, the default first (GET /v1/identity-providers).",
    authScopes: READ,
    args: {
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
      updatedSince: updatedSinceArg(t, 'providers added or changed', 'removed ones leave the list'),
    },
    resolve: (_root, args, ctx) => listIdentityProviders(ctx, args),
  }),
  identityProvider: t.field({
    type: IdentityProviderRef,
    nullable: true,
    description: 'One identity provider of the organisation (GET /v1/identity-providers/{id}).',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Identity provider id (idp_).' }) },
    resolve: (_root, { id }, ctx) => getIdentityProvider(ctx, id),
  }),
}));

builder.mutationFields((t) => ({
  createIdentityProvider: t.field({
    ...payload('CreateIdentityProvider', 'identityProvider', IdentityProviderRef, 'The identity provider added.'),
    description: 'Adds an identity provider to the organisation (POST /v1/identity-providers). One per issuer.',
    authScopes: WRITE,
    args: { input: t.arg({ type: CreateIdentityProviderInput, required: true, description: 'The provider.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => createIdentityProvider(ctx, input)),
  }),
  updateIdentityProvider: t.field({
    ...payload('UpdateIdentityProvider', 'identityProvider', IdentityProviderRef, 'The identity provider as changed.'),
    description: 'Changes an identity provider of the organisation (PATCH /v1/identity-providers/{id}).',
    authScopes: WRITE,
    args: {
      id: t.arg.id({ required: true, description: 'Identity provider id (idp_).' }),
      input: t.arg({ type: UpdateIdentityProviderInput, required: true, description: 'The changes.' }),
    },
    resolve: (_root, { id, input }, ctx) => answer(ctx, () => updateIdentityProvider(ctx, id, input)),
  }),
  federate: t.field({
    ...payload('Federate', 'session', SignInResultRef, 'The new session: its tokens and the person signed in.'),
    description:
      "Signs in with a token of an organisation's identity provider (POST /v1/auth/federate). The person must already be " +
      'a user of that organisation (active, or invited); the tokens carry it. With X-Service-Org only its providers are tried.',
    authScopes: { public: true },
    args: { input: t.arg({ type: FederateInput, required: true, description: 'The token.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => federate(ctx, input)),
  }),
}));
