import { z } from 'zod';
import { listQuery } from '../../src/pagination.ts';
import {
  createChannelKeyInput,
  createSalesChannelInput,
  listSalesChannelsFilters,
  updateSalesChannelInput,
} from '../../src/services/sales-channels.ts';
import type { RestRoute } from '../route.ts';
import { idParam, PAGINATION_FIELDS, pagination } from '../shapes/common.ts';
import { statusOf } from '../../src/statuses.ts';

const CHANNEL_FIELDS =
  'id organisationId accountId name slug channelType sellsAllEvents eventIds storefrontUrl isActive createdAt updatedAt';
const KEY_FIELDS = 'id channelId kind keyPrefix createdAt lastUsedAt revokedAt';

const channelType = statusOf('channelType');

const salesChannel = z.object({
  id: z.string(),
  organisationId: z.string(),
  accountId: z.string(),
  name: z.string(),
  slug: z.string(),
  channelType,
  sellsAllEvents: z.boolean(),
  eventIds: z.array(z.string()),
  storefrontUrl: z.string().nullable(),
  isActive: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const channelKey = z.object({
  id: z.string(),
  channelId: z.string(),
  kind: statusOf('channelKeyKind'),
  keyPrefix: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});

const keyParams = z.object({ id: z.string().min(1).max(100), keyId: z.string().min(1).max(100) });

export const salesChannelsRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: '/sales-channels',
    summary: "List the sales channels the caller may read (deleted accounts' never appear), optionally of one account.",
    tag: 'Sales channels',
    organisation: true,
    operation: `query SalesChannels($accountId: ID, $page: Int, $limit: Int) { salesChannels(accountId: $accountId, page: $page, limit: $limit) { nodes { ${CHANNEL_FIELDS} } ${PAGINATION_FIELDS} } }`,
    query: listQuery(listSalesChannelsFilters),
    bind: { '...': 'query' },
    result: (data) => ({ salesChannels: data.salesChannels.nodes, pagination: data.salesChannels.pagination }),
    response: z.object({ salesChannels: z.array(salesChannel), pagination }),
  },
  {
    method: 'POST',
    path: '/sales-channels',
    summary: 'Create a sales channel on an account (slug unique in the organisation: 409 otherwise).',
    tag: 'Sales channels',
    organisation: true,
    operation: `mutation CreateSalesChannel($input: CreateSalesChannelInput!) { createSalesChannel(input: $input) { salesChannel { ${CHANNEL_FIELDS} } } }`,
    body: createSalesChannelInput,
    bind: { input: 'body' },
    result: (data) => ({ salesChannel: data.createSalesChannel.salesChannel }),
    status: 201,
    response: z.object({ salesChannel }),
  },
  {
    method: 'GET',
    path: '/sales-channels/{id}',
    summary: 'Get a sales channel.',
    tag: 'Sales channels',
    organisation: true,
    operation: `query SalesChannel($id: ID!) { salesChannel(id: $id) { ${CHANNEL_FIELDS} } }`,
    params: idParam,
    bind: { id: 'params.id' },
    result: (data) => ({ salesChannel: data.salesChannel }),
    response: z.object({ salesChannel }),
  },
  {
    method: 'PATCH',
    path: '/sales-channels/{id}',
    summary: 'Rename or (de)activate a sales channel, or change what it sells (eventIds replaces the list).',
    tag: 'Sales channels',
    organisation: true,
    operation: `mutation UpdateSalesChannel($id: ID!, $input: UpdateSalesChannelInput!) { updateSalesChannel(id: $id, input: $input) { salesChannel { ${CHANNEL_FIELDS} } } }`,
    params: idParam,
    body: updateSalesChannelInput,
    bind: { id: 'params.id', input: 'body' },
    result: (data) => ({ salesChannel: data.updateSalesChannel.salesChannel }),
    response: z.object({ salesChannel }),
  },
  {
    method: 'POST',
    path: '/sales-channels/{id}/keys',
    summary: 'Issue a publishable (svpk_) or secret (svsk_) key for a channel; the key is answered once and stored hashed.',
    tag: 'Sales channels',
    organisation: true,
    operation: `mutation CreateChannelKey($channelId: ID!, $input: CreateChannelKeyInput!) { createChannelKey(channelId: $channelId, input: $input) { createdChannelKey { channelKey { ${KEY_FIELDS} } key } } }`,
    params: idParam,
    body: createChannelKeyInput,
    bind: { channelId: 'params.id', input: 'body' },
    result: (data) => data.createChannelKey.createdChannelKey,
    replay: {
      secrets: ['key'],
      readWith: (answer) => {
        const { id, channelId } = (answer as { channelKey: { id: string; channelId: string } }).channelKey;
        return `The channel key ${id} was issued; if its key was lost, revoke it (POST /v1/sales-channels/${channelId}/keys/${id}/revoke) and issue another.`;
      },
    },
    status: 201,
    response: z.object({ channelKey, key: z.string() }),
  },
  {
    method: 'POST',
    path: '/sales-channels/{id}/keys/{keyId}/revoke',
    summary: 'Revoke a channel key at once (revoking again answers it unchanged).',
    tag: 'Sales channels',
    organisation: true,
    operation: `mutation RevokeChannelKey($channelId: ID!, $id: ID!) { revokeChannelKey(channelId: $channelId, id: $id) { channelKey { ${KEY_FIELDS} } } }`,
    params: keyParams,
    bind: { channelId: 'params.id', id: 'params.keyId' },
    result: (data) => ({ channelKey: data.revokeChannelKey.channelKey }),
    response: z.object({ channelKey }),
  },
];
