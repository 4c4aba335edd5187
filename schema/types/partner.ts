import { provisionPartnerAccount, provisionPartnerAccountInput } from '../../src/services/provision-partner-account.ts';
import { builder } from '../builder.ts';
import { inputFrom } from '../input.ts';
import { answer, payload } from '../payload.ts';
import { statusEnum } from './common.ts';
import { Account } from './account.ts';

type Provisioned = Awaited<ReturnType<typeof provisionPartnerAccount>>;

export const ChannelType = statusEnum('ChannelType', 'channelType', 'Where a sales channel sells.', {
  web: 'A web storefront.',
  box_office: 'A box office.',
  partner: "A partner's storefront.",
  embedded: 'An embedded widget.',
  mobile: 'A mobile app.',
});

const ProvisionedChannel = builder.objectRef<Provisioned['salesChannel']>('ProvisionedSalesChannel').implement({
  description: 'The sales channel created for a partner account.',
  fields: (t) => ({
    salesChannelId: t.exposeID('id', { description: 'The sales channel (sch_).' }),
    slug: t.exposeString('slug', { description: 'Channel slug, unique in the organisation.' }),
    channelType: t.field({ type: ChannelType, description: 'Channel type.', resolve: (c) => c.channelType }),
  }),
});

const PublishableKey = builder.objectRef<Provisioned['publishableKey']>('ProvisionedPublishableKey').implement({
  description: 'The publishable key of the new channel, shown once.',
  fields: (t) => ({
    channelKeyId: t.exposeID('id', { description: 'The channel key (schk_).' }),
    key: t.exposeString('key', { description: 'The publishable key (svpk_...). Never shown again.' }),
  }),
});

const ProvisioningResult = builder.objectRef<Provisioned>('PartnerAccountProvisioning').implement({
  description: 'A provisioned partner account: account, sales channel and publishable key.',
  fields: (t) => ({
    account: t.field({ type: Account, description: 'The new account.', resolve: (r) => r.account }),
    salesChannel: t.field({ type: ProvisionedChannel, description: 'Its sales channel.', resolve: (r) => r.salesChannel }),
    publishableKey: t.field({ type: PublishableKey, description: 'The channel publishable key.', resolve: (r) => r.publishableKey }),
  }),
});

const SalesChannelInput = inputFrom('ProvisionSalesChannelInput', provisionPartnerAccountInput.shape.salesChannel.unwrap(), {
  description: 'Options of the sales channel a provisioning creates.',
  fields: {
    name: 'Channel name (default: the account name).',
    slug: 'Channel slug (default: derived from the name).',
    channelType: 'Default PARTNER.',
  },
});

const ProvisionInput = inputFrom('ProvisionPartnerAccountInput', provisionPartnerAccountInput, {
  description: 'A partner account to provision.',
  fields: {
    name: 'Account name, 1 to 255 characters.',
    salesChannel: { description: 'Sales channel options.', type: SalesChannelInput },
  },
});

builder.mutationFields((t) => ({
  provisionPartnerAccount: t.field({
    ...payload('ProvisionPartnerAccount', 'provisioning', ProvisioningResult, 'The account, its sales channel and publishable key.'),
    description:
      'Creates an account, a sales channel and its publishable key atomically (POST /v1/partner/accounts). Needs accounts.write and sales_channels.write on every account.',
    authScopes: { $all: { organisation: true, organisationPermission: 'accounts.write' } },
    args: { input: t.arg({ type: ProvisionInput, required: true, description: 'The partner account.' }) },
    resolve: (_root, { input }, ctx) => answer(ctx, () => provisionPartnerAccount(ctx, input)),
  }),
}));
