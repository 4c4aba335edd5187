import { z } from 'zod';
import type { RequestContext } from '../../context.ts';
import type { Order, Prisma } from '../../generated/prisma/client.ts';
import { paginate, type RawPageArgs } from '../../pagination.ts';
import { statusOf } from '../../statuses.ts';
import { validate, type Raw } from '../../validation.ts';
import { readableAccounts } from '../access.ts';
import { loadOrder, ORDERS_RESOURCE } from './order-rows.ts';

/** The management API reads orders: one by id, or a page of those on the accounts the caller may read. */

/** The order, if the caller may read it (else 404, or missingRight). */
export function getOrder(ctx: RequestContext, id: string): Promise<Order> {
  return loadOrder(ctx, id, 'read');
}

export const listOrdersFilters = z.object({
  status: statusOf('order').nullish(),
  customerId: z.string().min(1).max(100).nullish(),
  accountId: z.string().min(1).max(100).nullish(),
  channelId: z.string().min(1).max(100).nullish(),
});

/** Orders on the accounts the caller may read, newest first, with filters. */
export async function listOrders(ctx: RequestContext, args: RawPageArgs & Raw<z.input<typeof listOrdersFilters>>) {
  const { page, limit, first, after, last, before, ...rawFilters } = args;
  const filters = validate(listOrdersFilters, rawFilters);
  const accountId = readableAccounts(ctx, ORDERS_RESOURCE, filters.accountId);
  const where: Prisma.OrderWhereInput = {
    account: { isDeleted: false },
    ...(accountId === undefined ? {} : { accountId }),
    ...(filters.status ? { status: filters.status } : {}),
    ...(filters.customerId ? { customerId: filters.customerId } : {}),
    ...(filters.channelId ? { channelId: filters.channelId } : {}),
  };
  return paginate(
    { page, limit, first, after, last, before },
    () => ctx.db.order.count({ where }),
    ({ skip, take }) => ctx.db.order.findMany({ where, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], skip, take }),
  );
}
