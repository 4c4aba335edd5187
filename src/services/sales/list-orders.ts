import { z } from 'zod';
import type { RequestContext } from '../../context.ts';
import { containing, personContaining } from '../../db/text-search.ts';
import type { Order, Prisma } from '../../generated/prisma/client.ts';
import { createdBetween, NEWEST_FIRST, type RawPageArgs, paginate } from '../../pagination.ts';
import { statusOf } from '../../statuses.ts';
import { instant } from '../../time-zones.ts';
import { reference, validate, type Raw } from '../../validation.ts';
import { readableAccounts } from '../access.ts';
import { loadOrder, ORDERS_RESOURCE } from './order-rows.ts';

/** The management API reads orders: one by id, or a page of those on the accounts the caller may read. */

/** The order, if the caller may read it (else 404, or missingRight). */
export function getOrder(ctx: RequestContext, id: string): Promise<Order> {
  return loadOrder(ctx, id, 'read');
}

export const listOrdersFilters = z.object({
  status: statusOf('order').nullish(),
  customerId: reference.nullish(),
  accountId: reference.nullish(),
  channelId: reference.nullish(),
});

const id = reference.nullish();

/**
 * The filters an admin screen adds to those of GET /v1/orders (the graph's `orders`): orders with
 * a line of an event or an occurrence, one order number, a creation range (both ends included),
 * `updatedSince` for a screen that polls for what changed, and a search box's text (in the order
 * number, the customer's email or name, case-insensitive).
 */
export const adminOrderFilters = listOrdersFilters.extend({
  eventId: id,
  occurrenceId: id,
  orderNumber: z.string().trim().min(1).max(50).nullish(),
  search: z.string().trim().min(1).max(200).nullish(),
  createdAfter: instant.nullish(),
  createdBefore: instant.nullish(),
  updatedSince: instant.nullish(),
});

/** Orders on the accounts the caller may read, newest first, with filters. */
export async function listOrders(ctx: RequestContext, args: RawPageArgs & Raw<z.input<typeof adminOrderFilters>>) {
  const { page, limit, first, after, last, before, ...rawFilters } = args;
  const filters = validate(adminOrderFilters, rawFilters);
  const accountId = readableAccounts(ctx, ORDERS_RESOURCE, filters.accountId);
  const line = {
    ...(filters.eventId ? { eventId: filters.eventId } : {}),
    ...(filters.occurrenceId ? { occurrenceId: filters.occurrenceId } : {}),
  };
  const where: Prisma.OrderWhereInput = {
    account: { isDeleted: false },
    ...(accountId === undefined ? {} : { accountId }),
    ...(filters.status ? { status: filters.status } : {}),
    ...(filters.customerId ? { customerId: filters.customerId } : {}),
    ...(filters.channelId ? { channelId: filters.channelId } : {}),
    ...(filters.orderNumber ? { orderNumber: filters.orderNumber } : {}),
    ...(Object.keys(line).length > 0 ? { lineItems: { some: line } } : {}),
    ...createdBetween(filters.createdAfter, filters.createdBefore),
    ...(filters.updatedSince ? { updatedAt: { gte: filters.updatedSince } } : {}),
    ...(filters.search
      ? {
          OR: [{ orderNumber: containing(filters.search) }, ...personContaining(filters.search).map((customer) => ({ customer }))],
        }
      : {}),
  };
  return paginate(
    { page, limit, first, after, last, before },
    NEWEST_FIRST,
    (keyset) => ctx.db.order.count({ where: { AND: [where, keyset] } }),
    ({ where: keyset, orderBy, skip, take }) => ctx.db.order.findMany({ where: { AND: [where, keyset] }, orderBy, skip, take }),
  );
}
