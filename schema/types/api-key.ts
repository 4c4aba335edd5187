import {
  apiKeyStatus,
  createApiKey,
  createApiKeyInput,
  getApiKey,
  listApiKeys,
  revokeApiKey,
  type ApiKeyStatus as ApiKeyStatusValue,
} from '../../src/services/api-keys.ts';
import { valuesEnum } from './common.ts';
import { builder } from '../builder.ts';
import { accountRelation } from './account.ts';
import { Node } from '../node.ts';
import { organisationRelation } from './organisation.ts';
import { relatedUser } from '../../src/services/related.ts';
import { User } from './user.ts';
import { inputFrom } from '../input.ts';
import { answer, payload } from '../payload.ts';
import { pageArgsFor, pagedConnection, updatedSinceArg } from '../pagination.ts';

/** Signed-in staff only: API keys and embed tokens are refused (SIGNED_IN_USER_REQUIRED). */
const READ = { $all: { signedInUser: true, organisation: true, permission: 'api_keys.read' } } as const;
const WRITE = { $all: { signedInUser: true, organisation: true, permission: 'api_keys.write' } } as const;

const ApiKeyStatus = valuesEnum('ApiKeyStatus', 'Where an API key stands.', {
  active: 'It authenticates: not revoked, and its expiry (if any) not passed.',
  revoked: 'Revoked: its use answers 401 API_KEY_REVOKED.',
  expired: 'Its expiry passed before anyone revoked it: its use answers 401 API_KEY_EXPIRED.',
} satisfies Record<ApiKeyStatusValue, string>);

export const ApiKey = builder.prismaObject('ApiKey', {
  interfaces: [Node],
  description: 'An organisation API key (svak_). The key itself is shown once, at creation.',
  authScopes: (key, ctx) => ctx.access.allows('api_keys', 'read', key.accountId) || ctx.access.allows('api_keys', 'write', key.accountId),
  fields: (t) => ({
    organisationId: t.exposeID('organisationId', { description: 'Owning organisation.' }),
    organisation: t.field(organisationRelation()),
    accountId: t.exposeID('accountId', { nullable: true, description: 'The account the key is pinned to; null = every account.' }),
    account: t.field(
      accountRelation('Its account (null, with an error, where you may not read accounts; null for a key of every account).'),
    ),
    name: t.exposeString('name', { description: 'Name.' }),
    keyPrefix: t.exposeString('keyPrefix', { description: 'The first 12 characters of the key.' }),
    scopes: t.exposeStringList('scopes', { description: 'Scopes such as events.read or accounts.write.' }),
    createdBy: t.exposeString('createdById', { nullable: true, description: 'User who created the key (usr_), or null.' }),
    creator: t.field({
      type: User,
      nullable: true,
      description: "The user who created the key, or null (also null, with an error, where you may not read that user: user(id:)'s rule).",
      resolve: (key, _args, ctx) => relatedUser(ctx, key.createdById),
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true, description: 'Last use (to within 10 s), or null.' }),
    expiresAt: t.expose('expiresAt', { type: 'DateTime', nullable: true, description: 'Expiry, or null for none.' }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true, description: 'Revocation time, or null.' }),
    status: t.field({
      type: ApiKeyStatus,
      description: 'Whether it authenticates now, or was revoked, or its expiry passed.',
      resolve: (key) => apiKeyStatus(key),
    }),
  }),
});

const CreatedApiKey = builder.objectRef<Awaited<ReturnType<typeof createApiKey>>>('CreatedApiKey').implement({
  description: 'A new API key and its key material, which is never shown again.',
  fields: (t) => ({
    apiKey: t.field({ type: ApiKey, description: 'The key record.', resolve: (r) => r.apiKey }),
    key: t.exposeString('key', { description: 'The full key (svak_...). Store it now.' }),
  }),
});

const CreateApiKeyInput = inputFrom('CreateApiKeyInput', createApiKeyInput, {
  description: 'A new organisation API key.',
  fields: {
    name: 'Name, 1 to 255 characters.',
    scopes: 'Scopes (resource.action), each one the creator holds.',
    accountId: 'Pin the key to this account; omitted = every account.',
    expiresAt: 'Expiry (ISO 8601, in the future); omitted = none.',
  },
});

const ApiKeyConnection = pagedConnection(ApiKey, 'ApiKeyConnection', 'API keys');

builder.queryFields((t) => ({
  apiKey: t.field({
    type: ApiKey,
    nullable: true,
    description: 'One API key of an account you may read keys on (every key with organisation-wide api_keys.read).',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'API key id (oak_).' }) },
    resolve: (_root, { id }, ctx) => getApiKey(ctx, String(id)),
  }),
  apiKeys: t.field({
    type: ApiKeyConnection,
    nullable: true,
    description: 'A page of the API keys the caller may see, newest first (GET /v1/api-keys).',
    authScopes: READ,
    args: {
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
      updatedSince: updatedSinceArg(t, 'keys created, used (lastUsedAt) or revoked'),
      status: t.arg({ type: ApiKeyStatus, description: 'Only keys that stand so now.' }),
    },
    resolve: (_root, args, ctx) => listApiKeys(ctx, args),
  }),
}));

builder.mutationFields((t) => ({
  createApiKey: t.field({
    ...payload('CreateApiKey', 'createdApiKey', CreatedApiKey, 'The key created and its key material.'),
    description: 'Creates an API key (POST /v1/api-keys); signed-in staff only.',
    authScopes: WRITE,
    args: { input: t.arg({ type: CreateApiKeyInput, required: true, description: 'The key.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => createApiKey(ctx, input)),
  }),
  revokeApiKey: t.field({
    ...payload('RevokeApiKey', 'apiKey', ApiKey, 'The key as revoked.'),
    description: 'Revokes an API key (POST /v1/api-keys/{id}/revoke); its next use answers 401 API_KEY_REVOKED.',
    authScopes: WRITE,
    args: { id: t.arg.id({ required: true, description: 'Key id (oak_).' }) },
    resolve: (_root, { id }, ctx) => answer(ctx, () => revokeApiKey(ctx, id)),
  }),
}));
