import { z } from 'zod';
import type { RestRoute } from '../route.ts';
import { account, ACCOUNT_FIELDS } from './accounts.ts';

const channelType = z.enum(['web', 'box_office', 'partner', 'embedded', 'mobile']);

export const partnerRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/partner/accounts',
    summary: 'Provision a partner account: the account, a sales channel and its publishable key (shown once), atomically.',
    tag: 'Partner provisioning',
    organisation: true,
    operation: `mutation ProvisionPartnerAccount($input: ProvisionPartnerAccountInput!) {
      provisionPartnerAccount(input: $input) {
        account { ${ACCOUNT_FIELDS} } salesChannel { id slug channelType } publishableKey { id key }
      }
    }`,
    body: z.strictObject({
      name: z.string(),
      salesChannel: z
        .strictObject({ name: z.string().optional(), slug: z.string().optional(), channelType: channelType.optional() })
        .optional(),
    }),
    variables: ({ body }) => ({ input: body }),
    result: (data) => data.provisionPartnerAccount,
    status: 201,
    response: z.object({
      account,
      salesChannel: z.object({ id: z.string(), slug: z.string(), channelType }),
      publishableKey: z.object({ id: z.string(), key: z.string() }),
    }),
  },
];
