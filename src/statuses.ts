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
  UserStatus,
} from './generated/prisma/enums.ts';

/**
 * Every status (and kind) of the service in one home: the database's enums in
 * prisma/schema.prisma. Services validate against these lists, the GraphQL enums list exactly
 * these values (schema/types, with a description per value, which the compiler holds to the list),
 * descriptions that name the values build the text with describeEnumStatuses (schema/types/common.ts), and the REST response
 * shapes take them through statusOf (src/resources/, rest-compat/).
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
  user: values(UserStatus),
} as const;

export type StatusList = keyof typeof STATUSES;

/** A zod schema of one of the lists (its refusal: "one of …", src/validation.ts). */
export function statusOf<K extends StatusList>(list: K) {
  return z.enum(STATUSES[list] as unknown as [(typeof STATUSES)[K][number], ...(typeof STATUSES)[K][number][]]);
}

/**
 * Values as a description names them: "a, b or c". `default` marks one ("a (default), b or c");
 * `notes` follow a value in brackets; `serialComma` writes "a, b, or c".
 */
export function describeValues(
  values: readonly string[],
  options: { default?: string; notes?: Record<string, string>; serialComma?: boolean } = {},
): string {
  const named = values.map((value) => {
    const note = value === options.default ? 'default' : options.notes?.[value];
    return note ? `${value} (${note})` : value;
  });
  if (named.length < 2) return named.join('');
  const last = named.pop()!;
  return `${named.join(', ')}${options.serialComma ? ',' : ''} or ${last}`;
}
