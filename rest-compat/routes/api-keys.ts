import { z } from 'zod';
import { createApiKeyInput } from '../../src/services/api-keys.ts';
import type { RestRoute } from '../route.ts';
import { listQuery } from '../../src/pagination.ts';
import { idParam, pagination, PAGINATION_FIELDS } from '../shapes/common.ts';

const FIELDS = 'id organisationId accountId name keyPrefix scopes createdBy createdAt lastUsedAt expiresAt revokedAt';

const apiKey = z.object({
  id: z.string(),
  organisationId: z.string(),
  accountId: z.string().nullable(),
  name: z.string(),
  keyPrefix: z.string(),
  scopes: z.array(z.string()),
  createdBy: z.string().nullable(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});

export const apiKeysRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/api-keys',
    summary: 'List organisation API keys. Signed-in staff only.',
    tag: 'API keys',
    organisation: true,
    operation: `query ApiKeys($page: Int, $limit: Int) { apiKeys(page: $page, limit: $limit) { nodes { ${FIELDS} } ${PAGINATION_FIELDS} } }`,
    query: listQuery(),
    bind: { '...': 'query' },
    result: (data) => ({ apiKeys: data.apiKeys.nodes, pagination: data.apiKeys.pagination }),
    response: z.object({ apiKeys: z.array(apiKey), pagination }),
  },
  {
    method: 'POST',
    path: '/api-keys',
    summary: 'Create an organisation API key; the key is in the answer and never again. Signed-in staff only.',
    tag: 'API keys',
    organisation: true,
    operation: `mutation CreateApiKey($input: CreateApiKeyInput!) { createApiKey(input: $input) { createdApiKey { apiKey { ${FIELDS} } key } } }`,
    body: createApiKeyInput,
    bind: { input: 'body' },
    result: (data) => data.createApiKey.createdApiKey,
    replay: {
      secrets: ['key'],
      readWith: (answer) =>
        `The key ${(answer as { apiKey: { id: string } }).apiKey.id} is listed by GET /v1/api-keys; if its key was lost, revoke it and create another.`,
    },
    status: 201,
    response: z.object({ apiKey, key: z.string() }),
  },
  {
    method: 'POST',
    path: '/api-keys/{id}/revoke',
    summary: 'Revoke an organisation API key.',
    tag: 'API keys',
    organisation: true,
    operation: `mutation RevokeApiKey($id: ID!) { revokeApiKey(id: $id) { apiKey { ${FIELDS} } } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ apiKey: data.revokeApiKey.apiKey }),
    response: z.object({ apiKey }),
  },
];
