import {
  createChannelKey,
  createChannelKeyInput,
  createSalesChannel,
  createSalesChannelInput,
  getSalesChannel,
  listSalesChannels,
  revokeChannelKey,
  updateSalesChannel,
  updateSalesChannelInput,
} from '../../src/services/sales-channels.ts';
import { builder } from '../builder.ts';
import { accountRelation } from './account.ts';
import { asError, Node } from '../node.ts';
import { organisationRelation } from './organisation.ts';
import { related } from '../../src/services/related.ts';
import { Event, relatedEvent } from './event.ts';
import { inputFrom } from '../input.ts';
import { describeEnumStatuses, statusEnum } from './common.ts';
import { pageArgsFor, pagedConnection, updatedSinceArg } from '../pagination.ts';
import { answer, payload } from '../payload.ts';
import { ChannelType } from './partner.ts';

const READ = { $all: { organisation: true, permission: 'sales_channels.read' } } as const;
const WRITE = { $all: { organisation: true, permission: 'sales_channels.write' } } as const;

const mayRead = (accountId: string, ctx: Parameters<typeof getSalesChannel>[0]) =>
  ctx.access.allows('sales_channels', 'read', accountId) || ctx.access.allows('sales_channels', 'write', accountId);

const ChannelKeyKind = statusEnum('ChannelKeyKind', 'channelKeyKind', 'Which kind of channel key.', {
  publishable: 'svpk_: for browsers and apps; browses and builds carts.',
  secret: 'svsk_: for servers only, never a browser.',
});

export const ChannelKey = builder.prismaObject('ChannelKey', {
  interfaces: [Node],
  description: 'A key of a sales channel (schk_). The key material is shown once, at creation; only its sha256 is stored.',
  // Reached only through its channel (checked per account there) or a channel-key mutation (checked
  // by the service); the row itself carries no account.
  authScopes: (_key, ctx) => ctx.access.allowsSomewhere('sales_channels', 'read') || ctx.access.allowsSomewhere('sales_channels', 'write'),
  fields: (t) => ({
    channelId: t.exposeID('channelId', { description: 'The sales channel (sch_).' }),
    channel: t.field({
      type: SalesChannel,
      nullable: true,
      description: 'Its sales channel (null, with an error, where you may not read sales channels on its account).',
      resolve: (key, _args, ctx) => related(ctx, 'salesChannel', key.channelId),
    }),
    kind: t.expose('kind', { type: ChannelKeyKind, description: 'PUBLISHABLE (svpk_) or SECRET (svsk_).' }),
    keyPrefix: t.exposeString('keyPrefix', { description: 'The first 12 characters of the key.' }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    lastUsedAt: t.expose('lastUsedAt', { type: 'DateTime', nullable: true, description: 'Last use (to within 10 s), or null.' }),
    revokedAt: t.expose('revokedAt', { type: 'DateTime', nullable: true, description: 'Revocation time, or null.' }),
  }),
});

export const SalesChannel = builder.prismaObject('SalesChannel', {
  interfaces: [Node],
  description:
    'Where an account sells (sch_): a storefront, box office, partner, widget or app. It sells every published or on-sale event of its account, or only the events listed for it.',
  authScopes: (channel, ctx) => mayRead(channel.accountId, ctx),
  fields: (t) => ({
    organisationId: t.exposeID('organisationId', { description: 'Owning organisation.' }),
    organisation: t.field(organisationRelation()),
    accountId: t.exposeID('accountId', { description: 'The account whose events it sells.' }),
    account: t.field(accountRelation()),
    name: t.exposeString('name', { description: 'Name, 1 to 255 characters.' }),
    slug: t.exposeString('slug', { description: 'Slug, unique in the organisation.' }),
    channelType: t.field({ type: ChannelType, description: 'Where the channel sells.', resolve: (channel) => channel.channelType }),
    sellsAllEvents: t.exposeBoolean('sellsAllEvents', {
      description: 'True: every published or on-sale event of the account; false: only the events of eventIds.',
    }),
    eventIds: t.idList({
      description: 'The events listed for the channel (what it sells when sellsAllEvents is false), oldest listing first.',
      select: { events: { select: { eventId: true }, orderBy: [{ createdAt: 'asc' }, { eventId: 'asc' }] } },
      resolve: (channel) => channel.events.map((listing) => listing.eventId),
    }),
    events: t.field({
      type: [Event],
      nullable: { list: false, items: true },
      description:
        'The events listed for the channel, in the order of eventIds (at most as many as one request may name); each null, with an error at its index, where you may not read it.',
      select: { events: { select: { eventId: true }, orderBy: [{ createdAt: 'asc' }, { eventId: 'asc' }] } },
      // Each event answers on its own: a refusal becomes an error at its index (an Error as an item).
      resolve: (channel, _args, ctx) =>
        Promise.all(channel.events.map((listing) => relatedEvent(ctx, listing.eventId).catch((error: unknown) => asError(error) as never))),
    }),
    storefrontUrl: t.exposeString('storefrontUrl', {
      nullable: true,
      description:
        'The storefront page that completes a magic-link sign-in (the mail links to it with ?code=); null = the mail carries the code only.',
    }),
    isActive: t.exposeBoolean('isActive', { description: "Whether the channel's keys work; an inactive channel's keys answer 401." }),
    keys: t.relation('keys', {
      description: 'Its keys, revoked ones included, oldest first; never the key material.',
      query: { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] },
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime', description: 'Creation time.' }),
    updatedAt: t.expose('updatedAt', { type: 'DateTime', description: 'Last change.' }),
  }),
});

const SalesChannelConnection = pagedConnection(SalesChannel, 'SalesChannelConnection', 'sales channels');

const CreatedChannelKey = builder.objectRef<Awaited<ReturnType<typeof createChannelKey>>>('CreatedChannelKey').implement({
  description: 'A new channel key and its key material, which is never shown again.',
  fields: (t) => ({
    channelKey: t.field({ type: ChannelKey, description: 'The key record.', resolve: (r) => r.channelKey }),
    key: t.exposeString('key', { description: 'The full key (svpk_... or svsk_...). Store it now.' }),
  }),
});

const CreateSalesChannelInput = inputFrom('CreateSalesChannelInput', createSalesChannelInput, {
  description: 'A new sales channel.',
  fields: {
    accountId: 'The account whose events it sells (acc_).',
    name: 'Name, 1 to 255 characters.',
    slug: 'Lower-case letters, digits and inner hyphens, 1 to 63 characters; unique in the organisation (CONFLICT otherwise).',
    channelType: `${describeEnumStatuses('channelType', { default: 'web' })}.`,
    sellsAllEvents: 'Default true.',
    eventIds: 'Events of the same account it sells when sellsAllEvents is false.',
    storefrontUrl: 'http(s) page of the storefront that completes magic-link sign-in (?code= is appended).',
  },
});

const UpdateSalesChannelInput = inputFrom('UpdateSalesChannelInput', updateSalesChannelInput, {
  description: 'Changes to a sales channel; omitted fields stay.',
  fields: {
    name: 'Name, 1 to 255 characters.',
    isActive: "false stops the channel's keys at once.",
    sellsAllEvents: 'True: every published or on-sale event of the account; false: only eventIds.',
    eventIds: 'Replaces the listed events atomically (events of the same account).',
    storefrontUrl: 'http(s) page completing magic-link sign-in; null clears it.',
  },
});

const CreateChannelKeyInput = inputFrom('CreateChannelKeyInput', createChannelKeyInput, {
  description: 'A new channel key.',
  fields: {
    kind: 'PUBLISHABLE (svpk_) or SECRET (svsk_).',
  },
});

builder.queryFields((t) => ({
  salesChannels: t.field({
    type: SalesChannelConnection,
    nullable: true,
    description:
      "Sales channels on the accounts the caller may read, oldest first; deleted accounts' never appear (GET /v1/sales-channels).",
    authScopes: READ,
    args: {
      accountId: t.arg.id({ description: 'Only this account (acc_).' }),
      updatedSince: updatedSinceArg(t, 'channels created or changed'),
      ...pageArgsFor(t),
      ...t.arg.connectionArgs(),
    },
    resolve: (_root, args, ctx) => listSalesChannels(ctx, args),
  }),
  salesChannel: t.field({
    type: SalesChannel,
    nullable: true,
    description: 'One sales channel (GET /v1/sales-channels/{id}).',
    authScopes: READ,
    args: { id: t.arg.id({ required: true, description: 'Sales channel id (sch_).' }) },
    resolve: (_root, { id }, ctx) => getSalesChannel(ctx, id),
  }),
}));

builder.mutationFields((t) => ({
  createSalesChannel: t.field({
    ...payload('CreateSalesChannel', 'salesChannel', SalesChannel, 'The sales channel created.'),
    description: 'Creates a sales channel on an account (POST /v1/sales-channels).',
    authScopes: WRITE,
    args: { input: t.arg({ type: CreateSalesChannelInput, required: true, description: 'The channel.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => createSalesChannel(ctx, input)),
  }),
  updateSalesChannel: t.field({
    ...payload('UpdateSalesChannel', 'salesChannel', SalesChannel, 'The sales channel as changed.'),
    description: 'Renames, (de)activates a channel or changes what it sells (PATCH /v1/sales-channels/{id}).',
    authScopes: WRITE,
    args: {
      id: t.arg.id({ required: true, description: 'Sales channel id (sch_).' }),
      input: t.arg({ type: UpdateSalesChannelInput, required: true, description: 'The changes.' }),
    },
    resolve: (_root, { id, input }, ctx) => answer(ctx, () => updateSalesChannel(ctx, id, input)),
  }),
  createChannelKey: t.field({
    ...payload('CreateChannelKey', 'createdChannelKey', CreatedChannelKey, 'The key issued, with its key material.'),
    description: 'Issues a publishable or secret key for a channel; the key is answered once (POST /v1/sales-channels/{id}/keys).',
    authScopes: WRITE,
    args: {
      channelId: t.arg.id({ required: true, description: 'Sales channel id (sch_).' }),
      input: t.arg({ type: CreateChannelKeyInput, required: true, description: 'The key.' }),
    },
    resolve: (_root, { channelId, input }, ctx) => answer(ctx, () => createChannelKey(ctx, channelId, input)),
  }),
  revokeChannelKey: t.field({
    ...payload('RevokeChannelKey', 'channelKey', ChannelKey, 'The key as revoked.'),
    description: 'Revokes a channel key at once; revoking again answers it unchanged (POST /v1/sales-channels/{id}/keys/{keyId}/revoke).',
    authScopes: WRITE,
    args: {
      channelId: t.arg.id({ required: true, description: 'Sales channel id (sch_).' }),
      id: t.arg.id({ required: true, description: 'Channel key id (schk_).' }),
    },
    resolve: (_root, { channelId, id }, ctx) => answer(ctx, () => revokeChannelKey(ctx, channelId, id), null),
  }),
}));
