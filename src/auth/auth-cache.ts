/**
 * A short-lived, in-process cache of what authentication reads on every request: API keys by hash,
 * a person's rights in an organisation, organisations by slug. Every change to those (revoking a
 * key, changing roles or assignments, updating the organisation) forgets the organisation's entries
 * in this process at once; other API processes see it within AUTH_CACHE_TTL_MS. Refusals are never
 * cached.
 */
export const AUTH_CACHE_TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

interface Entry {
  value: unknown;
  organisationId: string;
  expiresAt: number;
}

export class AuthCache {
  #entries = new Map<string, Entry>();

  constructor(readonly ttlMs = AUTH_CACHE_TTL_MS) {}

  async get<T>(key: string, load: () => Promise<{ value: T; organisationId: string } | undefined>): Promise<T | undefined> {
    const now = Date.now();
    const hit = this.#entries.get(key);
    if (hit && hit.expiresAt > now) return hit.value as T;
    const loaded = await load();
    if (!loaded) {
      this.#entries.delete(key);
      return undefined;
    }
    if (this.ttlMs > 0) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(key, { value: loaded.value, organisationId: loaded.organisationId, expiresAt: now + this.ttlMs });
    }
    return loaded.value;
  }

  /** Forgets everything cached about one organisation (after any change to keys, roles or settings). */
  forgetOrganisation(organisationId: string): void {
    for (const [key, entry] of this.#entries) if (entry.organisationId === organisationId) this.#entries.delete(key);
  }
}
