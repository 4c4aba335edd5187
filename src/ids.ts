import { randomBytes } from 'node:crypto';

/**
 * Every identifier of the service: a type prefix and 22 base62 characters (~131 bits of
 * randomness). The prefixes are part of the public contract (spec section 2).
 */
export const ID_PREFIXES = {
  organisation: 'org',
  account: 'acc',
  person: 'usr',
  user: 'usr',
  refreshToken: 'rtk',
  identityProvider: 'idp',
  invitation: 'inv',
  role: 'rol',
  roleAssignment: 'uar',
  apiKey: 'oak',
  embedSession: 'ems',
  venue: 'vnu',
  event: 'evt',
  occurrence: 'eoc',
  ticketType: 'tkt',
  product: 'prd',
  salesChannel: 'sch',
  channelKey: 'schk',
  customer: 'cus',
  customerLoginCode: 'clc',
  salesSession: 'ses',
  cart: 'crt',
  cartItem: 'cti',
  order: 'ord',
  orderLineItem: 'oli',
  payment: 'pay',
  pass: 'pas',
  entitlement: 'ent',
  redemption: 'red',
  webhookEndpoint: 'whe',
  webhookEvent: 'wev',
  webhookDelivery: 'whd',
  webhookAttempt: 'wha',
  outboxMessage: 'msg',
  request: 'req',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Base62 from random bytes without modulo bias (rejection sampling on 6-bit values). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      const value = byte & 63;
      if (value < 62) out += ALPHABET[value];
      if (out.length === length) break;
    }
  }
  return out;
}

export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${randomBase62(22)}`;
}

/** True when `value` looks like an id of `kind`: the prefix, an underscore, letters and digits. */
export function isId(kind: IdKind, value: string): boolean {
  return new RegExp(`^${ID_PREFIXES[kind]}_[A-Za-z0-9]{1,64}$`).test(value);
}
