import { randomBytes } from 'node:crypto';

/**
 * Every identifier of the service: a type prefix and 22 base62 characters (~131 bits of
 * randomness). The prefixes are part of the public contract (docs/spec/service-spec.md §2).
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
  /** A batch of first attempts (its Temporal workflow id). */
  webhookBatch: 'whb',
  /** A manual resend (its Temporal workflow id). */
  webhookResend: 'whm',
  outboxMessage: 'msg',
  auditEntry: 'aud',
  request: 'req',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random bytes drawn from the OS in 4 KiB blocks: one syscall serves ~180 ids. */
const POOL_SIZE = 4096;
let pool = randomBytes(POOL_SIZE);
let poolOffset = 0;

function nextRandomByte(): number {
  if (poolOffset === POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    poolOffset = 0;
  }
  return pool[poolOffset++]!;
}

/** Base62 from random bytes without modulo bias (rejection sampling on 6-bit values). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const value = nextRandomByte() & 63;
    if (value < 62) out += ALPHABET[value];
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
