import { z } from 'zod';
import {
  AccountStatus,
  CartStatus,
  ChannelKeyKind,
  ChannelType,
  DeliveryStatus,
  EventStatus,
  OccurrenceStatus,
  OrderStatus,
  PassStatus,
  PaymentStatus,
} from './generated/prisma/enums.ts';

/**
 * Every status (and kind) of the service in one home: the database's enums in
 * prisma/schema.prisma. Services validate against these lists, the GraphQL enums list exactly
 * these values (schema/types, with a description per value, which the compiler holds to the list),
 * and the REST shapes derive from the GraphQL types.
 */
const values = <T extends Record<string, string>>(enumObject: T) => Object.values(enumObject) as [T[keyof T], ...T[keyof T][]];

export const STATUSES = {
  account: values(AccountStatus),
  event: values(EventStatus),
  occurrence: values(OccurrenceStatus),
  channelType: values(ChannelType),
  channelKeyKind: values(ChannelKeyKind),
  cart: values(CartStatus),
  order: values(OrderStatus),
  payment: values(PaymentStatus),
  pass: values(PassStatus),
  delivery: values(DeliveryStatus),
} as const;

export type StatusList = keyof typeof STATUSES;

/** A zod schema of one of the lists (its refusal: "one of …", src/validation.ts). */
export function statusOf<K extends StatusList>(list: K) {
  return z.enum(STATUSES[list] as unknown as [(typeof STATUSES)[K][number], ...(typeof STATUSES)[K][number][]]);
}

/** Event statuses in which tickets may be sold (the sales window and dates still apply). */
export const SELLING_EVENT_STATUSES: ReadonlyArray<(typeof STATUSES)['event'][number]> = ['published', 'on_sale'];
