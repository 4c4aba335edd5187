import type { RequestContext } from '../../src/context.ts';
import { revenue, type EarnedBy, type Money as MoneyValue } from '../../src/services/revenue.ts';
import { builder } from '../builder.ts';

export const Money = builder.objectRef<MoneyValue>('Money').implement({
  description: 'An amount of money: a whole number of minor units of an ISO 4217 currency.',
  fields: (t) => ({
    amount: t.expose('amount', {
      type: 'SafeInt',
      description: 'Minor units of `currency` (cents, pence; yen have none). A SafeInt, not an Int: a sum of sales can pass 2^31 - 1.',
    }),
    currency: t.exposeString('currency', { description: 'ISO 4217 currency code.' }),
  }),
});

/**
 * The `revenue` field of an event, an occurrence or a ticket type (src/services/revenue.ts), batched
 * per kind. Money is for those who may read the events of the thing's account: one who may only
 * write them is refused here, where the rest of the thing still answers.
 */
export function revenueField(by: EarnedBy, description: string) {
  return {
    type: [Money] as [typeof Money],
    description: `${description}: confirmed sales less refunds and cancellations, per currency, gross of fees.`,
    authScopes: (row: { accountId: string }, _args: unknown, ctx: RequestContext) => ctx.access.allows('events', 'read', row.accountId),
    resolve: (row: { id: string }, _args: unknown, ctx: RequestContext) => revenue(ctx, by, row.id),
  };
}
