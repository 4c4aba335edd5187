import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { ConfigError } from '../config.ts';

export interface SigningKey {
  kid: string;
  secret: Uint8Array;
}

export interface SigningKeys {
  /** Signs new tokens. */
  current: SigningKey;
  /** Every key that verifies (the current one and those being rotated out). */
  byKid: ReadonlyMap<string, SigningKey>;
  ephemeral: boolean;
}

const keyList = z.array(z.object({ kid: z.string().min(1).max(64), secret: z.string().min(32, 'at least 32 characters') })).min(1);

/**
 * JWT_SIGNING_KEYS, or (outside production) a random key for this process only: tokens then do
 * not survive a restart, which `npm start` avoids by generating keys once into DATA_DIR.
 */
export function loadSigningKeys(config: Config): SigningKeys {
  if (!config.JWT_SIGNING_KEYS) {
    const key = { kid: `ephemeral-${randomBytes(4).toString('hex')}`, secret: randomBytes(32) };
    return { current: key, byKid: new Map([[key.kid, key]]), ephemeral: true };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(config.JWT_SIGNING_KEYS);
  } catch {
    throw new ConfigError('Invalid configuration:\n  JWT_SIGNING_KEYS: not JSON (expected [{"kid": "...", "secret": "..."}])');
  }
  const result = keyList.safeParse(parsed);
  if (!result.success) {
    throw new ConfigError(
      `Invalid configuration:\n${result.error.issues.map((i) => `  JWT_SIGNING_KEYS.${i.path.join('.')}: ${i.message}`).join('\n')}`,
    );
  }
  const keys = result.data.map((k) => ({ kid: k.kid, secret: new TextEncoder().encode(k.secret) }));
  return { current: keys[0]!, byKid: new Map(keys.map((k) => [k.kid, k])), ephemeral: false };
}

/** The 32-byte key that encrypts webhook signing secrets at rest. */
export function loadEncryptionKey(config: Config): Buffer {
  if (!config.SECRETS_ENCRYPTION_KEY) return randomBytes(32);
  const text = config.SECRETS_ENCRYPTION_KEY;
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) throw new ConfigError('Invalid configuration:\n  SECRETS_ENCRYPTION_KEY: must be 32 bytes, base64 or hex');
  return key;
}

/** SHA-256 (hex) of key material: API keys, channel keys, refresh tokens and codes are stored as this. */
export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** `prefix` + base64url of `bytes` random bytes. */
export function randomSecret(prefix: string, bytes = 32): string {
  return `${prefix}${randomBytes(bytes).toString('base64url')}`;
}

/** Key material as the service stores it: never itself, only its hash and a short prefix to recognise it by. */
export interface MintedKey {
  /** The material, for the one answer (or mail) that shows it. */
  key: string;
  /** sha256 (hex): what is stored and looked up. */
  keyHash: string;
  /** Its first 12 characters (spec: API key keyPrefix), safe to show again. */
  keyPrefix: string;
}

/**
 * New key material (API keys, channel keys, refresh tokens, invitation and sign-in codes): `prefix`
 * + 32 random bytes (base64url), shown once and stored only as its sha256. One home, so every kind
 * gets the same strength and the same storage rule.
 */
export function mintKey(prefix: string, bytes = 32): MintedKey {
  return keyParts(randomSecret(prefix, bytes));
}

/** What is stored of a key (its hash and shown prefix), for one minted earlier. */
export function keyParts(key: string): MintedKey {
  return { key, keyHash: sha256(key), keyPrefix: key.slice(0, 12) };
}
