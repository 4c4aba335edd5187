import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/** A new endpoint signing secret: `whsec_` + 32 random bytes (base64url). Shown once. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
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
