/** A key's last use is written when the stored one is older than this: a hot key costs no write per request. */
export const LAST_USED_PRECISION_MS = 10_000;
const REMEMBERED = 10_000;

/** When this process last wrote each key's last use. */
const written = new Map<string, number>();

/**
 * Whether this request should write the last use of key `id`, whose stored last use is `lastUsedAt`:
 * when that is older than LAST_USED_PRECISION_MS and this process has not written it within as
 * long. Requests that read the key's row at once (an on-sale's first buyers on one channel key, or
 * every request while the auth cache is off) would otherwise each write it, queueing on the row's
 * lock with a pooled connection each. src/auth/last-use.test.ts.
 */
export function lastUseDue(id: string, lastUsedAt: Date | null, now: number): boolean {
  if (lastUsedAt && now - lastUsedAt.getTime() <= LAST_USED_PRECISION_MS) return false;
  const before = written.get(id);
  if (before !== undefined && now - before <= LAST_USED_PRECISION_MS) return false;
  written.delete(id);
  if (written.size >= REMEMBERED) written.delete(written.keys().next().value!);
  written.set(id, now);
  return true;
}
