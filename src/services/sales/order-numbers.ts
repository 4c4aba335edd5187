import { randomInt } from 'node:crypto';

const ORDER_NUMBER_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** `SV-` and 8 Crockford base-32 characters: short enough to read out on the phone, unique per organisation. */
export function orderNumber(): string {
  let text = 'SV-';
  for (let i = 0; i < 8; i += 1) text += ORDER_NUMBER_ALPHABET[randomInt(ORDER_NUMBER_ALPHABET.length)];
  return text;
}
