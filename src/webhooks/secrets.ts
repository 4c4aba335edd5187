import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/**
 * How an endpoint's deliveries are signed: `service` (Service-Signature, docs/spec/service-spec.md
 * §6) or `standard` (Standard Webhooks' webhook-id, webhook-timestamp and webhook-signature as well).
 */
export type SignatureScheme = 'service' | 'standard';
export const SIGNATURE_SCHEMES = ['service', 'standard'] as const satisfies readonly SignatureScheme[];

/**
 * A new endpoint signing secret: `whsec_` + 32 random bytes in base64 (the standard alphabet, as
 * Standard Webhooks' verifiers decode it). Shown once.
 */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * Whether every Standard Webhooks verifier can read the secret: `whsec_` and padded base64 in the
 * standard alphabet. Secrets issued before that scheme existed are unpadded and URL-safe, which
 * strict decoders (most languages' libraries) refuse.
 */
export function isStandardSecret(secret: string): boolean {
  return /^whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(secret);
}

/**
 * `webhook-signature` of Standard Webhooks (https://www.standardwebhooks.com): `v1,<base64
 * HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">` keyed with the secret's base64
 * bytes, one per secret given (space-separated), the new secret's first during a rotation's overlap.
 */
export function standardSignatureHeader(secrets: readonly string[], messageId: string, timestamp: number, rawBody: string): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
      return `v1,${createHmac('sha256', key).update(`${messageId}.${timestamp}.${rawBody}`).digest('base64')}`;
    })
    .join(' ');
}

/** AES-256-GCM: `v1.` + base64(iv | tag | ciphertext). Signing needs the secret itself, so no hash. */
export function encryptSecret(secret: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `v1.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64')}`;
}

export function decryptSecret(stored: string, key: Buffer): string {
  if (!stored.startsWith('v1.')) throw new Error('unknown secret format');
  const raw = Buffer.from(stored.slice(3), 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.<raw body>">` (docs/spec/service-spec.md §6), with one `v1=` per
 * secret given: during a rotation's overlap the new secret's first, then the previous one's, so a
 * receiver holding either verifies (Stripe's verifier accepts any matching `v1`).
 */
export function signatureHeader(secrets: string | readonly string[], rawBody: string, timestamp = Math.floor(Date.now() / 1000)): string {
  const signatures = (typeof secrets === 'string' ? [secrets] : secrets).map(
    (secret) => `v1=${createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex')}`,
  );
  return `t=${timestamp},${signatures.join(',')}`;
}
