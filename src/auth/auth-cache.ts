import type { ChangeSubscriber } from '../db/change-notices.ts';

/**
 * An in-process cache of what authentication reads on every request: API keys and channel keys
 * by hash, a user's rights in an organisation, organisations by slug, customers. An entry is
 * forgotten the moment its organisation changes: at once in the process that made the change, and
 * in every other API process when PostgreSQL's change notice arrives (src/db/change-notices.ts,
 * milliseconds). While notices are not known to arrive (not yet connected, connection lost, a
 * database that does not forward them) nothing is served from the cache. The TTL only bounds
 * memory churn. Refusals are never cached.
 */
export const AUTH_CACHE_TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;

/** Tables whose changes can change an authentication answer. */
export const AUTH_TABLES: ReadonlySet<string> = new Set([
  'organisations',
  'accounts',
  'users',
  'roles',
  'role_assignments',
  'api_keys',
  'embed_sessions',
  'sales_channels',
  'channel_keys',
  'customers',
]);

interface Entry {
  value: unknown;
  organisationId: string;
  expiresAt: number;
}

export class AuthCache implements ChangeSubscriber {
  readonly tables = AUTH_TABLES;
  #entries = new Map<string, Entry>();
  /**
   * Counts forgettings: a value loaded while one happened may predate the change that caused it, so
   * it is answered but not kept.
   */
  #generation = 0;

  /**
   * @param ttlMs 0 disables the cache.
   * @param canServe whether entries may be served now (change notices are arriving).
   */
  constructor(
    readonly ttlMs = AUTH_CACHE_TTL_MS,
    private readonly canServe: () => boolean = () => true,
  ) {}

  async get<T>(key: string, load: () => Promise<{ value: T; organisationId: string } | undefined>): Promise<T | undefined> {
    const now = Date.now();
    const serving = this.ttlMs > 0 && this.canServe();
    const hit = serving ? this.#entries.get(key) : undefined;
    if (hit && hit.expiresAt > now) return hit.value as T;
    const generation = this.#generation;
    const loaded = await load();
    if (!loaded) {
      this.#entries.delete(key);
      return undefined;
    }
    if (serving && generation === this.#generation && this.canServe()) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(key, { value: loaded.value, organisationId: loaded.organisationId, expiresAt: now + this.ttlMs });
    }
    return loaded.value;
  }

  /** Forgets everything cached about one organisation (after any change to keys, roles or settings). */
  forgetOrganisation(organisationId: string): void {
    this.#generation += 1;
    for (const [key, entry] of this.#entries) if (entry.organisationId === organisationId) this.#entries.delete(key);
  }

  changed(organisationId: string): void {
    this.forgetOrganisation(organisationId);
  }

  forgetAll(): void {
    this.#generation += 1;
    this.#entries.clear();
  }
}
