import { z } from 'zod';
import { provisionPartnerAccountInput } from '../../src/services/provision-partner-account.ts';
import type { RestRoute } from '../route.ts';
import { account, ACCOUNT_FIELDS } from './accounts.ts';
import { statusOf } from '../../src/statuses.ts';

const channelType = statusOf('channelType');

export const partnerRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/partner/accounts',
    summary: 'Provision a partner account: the account, a sales channel and its publishable key (shown once), atomically.',
    tag: 'Partner provisioning',
    organisation: true,
    operation: `mutation ProvisionPartnerAccount($input: ProvisionPartnerAccountInput!) {
      provisionPartnerAccount(input: $input) {
        provisioning { account { ${ACCOUNT_FIELDS} } salesChannel { id: salesChannelId slug channelType } publishableKey { id: channelKeyId key } }
      }
    }`,
    body: provisionPartnerAccountInput,
    bind: { input: 'body' },
    result: (data) => data.provisionPartnerAccount.provisioning,
    replay: {
      secrets: ['publishableKey.key'],
      readWith: (answer) => {
        const made = answer as { account: { id: string }; salesChannel: { id: string }; publishableKey: { id: string } };
        const channel = `/v1/sales-channels/${made.salesChannel.id}`;
        return `The account ${made.account.id} and its sales channel (GET ${channel}) were made; if the publishable key was lost, revoke it (POST ${channel}/keys/${made.publishableKey.id}/revoke) and issue another.`;
      },
    },
    status: 201,
    response: z.object({
      account,
      salesChannel: z.object({ id: z.string(), slug: z.string(), channelType }),
      publishableKey: z.object({ id: z.string(), key: z.string() }),
    }),
  },
];
