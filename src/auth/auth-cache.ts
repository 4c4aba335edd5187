import type { ChangeSubscriber } from '../db/change-notices.ts';
import type { Principal } from './principal.ts';

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

/** What a channel key's answer depends on (src/auth/channel-keys.ts). */
export const CHANNEL_KEY_TABLES: ReadonlySet<string> = new Set(['organisations', 'accounts', 'sales_channels', 'channel_keys']);
/** What an organisation API key's answer depends on: a key pinned to an account dies with it. */
export const API_KEY_TABLES: ReadonlySet<string> = new Set(['organisations', 'accounts', 'api_keys']);
/** What a customer token's answer depends on. */
export const CUSTOMER_TABLES: ReadonlySet<string> = new Set(['organisations', 'accounts', 'customers']);
/**
 * What a person's rights in an organisation depend on: the organisation, its accounts, its users,
 * their role assignments and the roles'. Not the sales credentials an on-sale changes by the
 * thousand (a customer per buyer): an administrator's rights, and the streams of the
 * admin screens following the sale (src/live/streams.ts reads them again every few seconds), stay
 * cached through it.
 */
export const STAFF_TABLES: ReadonlySet<string> = new Set(['organisations', 'accounts', 'users', 'roles', 'role_assignments']);
/** What an organisation read by its slug depends on: its own row. */
export const ORGANISATION_TABLES: ReadonlySet<string> = new Set(['organisations']);

/** What an embed session's answer depends on: its key's, and its minter's rights. */
const EMBED_TABLES: ReadonlySet<string> = new Set([...STAFF_TABLES, 'api_keys', 'embed_sessions']);
/**
 * A customer's answer depends on `customers` too (CUSTOMER_TABLES), but the service only ever adds
 * customers (every new buyer's checkout), never changes or removes one: a request whose credential
 * is a customer is not read again for another buyer's checkout, which during an on-sale would be
 * every request of every signed-in shopper (and would leave their listings unshared).
 */
const CUSTOMER_CREDENTIAL_TABLES: ReadonlySet<string> = new Set(['organisations', 'accounts']);

/**
 * The tables whose change can withdraw a principal's credential or rights (src/auth/authenticate.ts
 * reads them): a request that authenticated before such a change reads its credential again
 * (src/auth/current-rights.ts).
 */
export function credentialTables(principal: Principal): ReadonlySet<string> {
  switch (principal.kind) {
    case 'staff':
      return STAFF_TABLES;
    case 'apiKey':
      return API_KEY_TABLES;
    case 'channel':
      return CHANNEL_KEY_TABLES;
    case 'customer':
      return CUSTOMER_CREDENTIAL_TABLES;
    case 'embed':
      return EMBED_TABLES;
  }
}

interface Entry {
  value: unknown;
  organisationId: string;
  expiresAt: number;
  /** The tables whose changes can change this answer. */
  dependsOn: ReadonlySet<string>;
}

/** Changes (organisation and table) whose time the clock remembers; beyond, it forgets them all at once. */
const MAX_CHANGE_TIMES = 10_000;

export class AuthCache implements ChangeSubscriber {
  readonly tables = AUTH_TABLES;
  #entries = new Map<string, Entry>();
  /**
   * Counts forgettings: a value loaded while one happened may predate the change that caused it, so
   * it is answered but not kept.
   */
  #generation = 0;
  /** Forgettings per table (a change notice names one), for answers that depend on a few tables only. */
  #tableGenerations = new Map<string, number>();
  /**
   * Loads in flight, by key: the requests that miss the same entry at once (an on-sale's first
   * buyers, all on one channel key) share one read instead of sending one each. A request joins a
   * load only if nothing it depends on was forgotten since the load began, as it would then have to
   * be read after the change. src/auth/auth-cache.test.ts.
   */
  #loading = new Map<string, { generation: number; answer: Promise<unknown> }>();
  /**
   * A clock of credential changes: it moves at every forgetting, and remembers per organisation
   * when its credentials last changed. A request notes the time before it authenticates
   * (`RequestContext.rightsReadAt`); rights read before a change the request only acts on later (a
   * body arriving late, a wait for a connection) are read again before the work runs, and the
   * caches keyed by caller do not keep what such a request computed (`changedSince`).
   */
  #clock = 0;
  /** Per organisation, when each table of it last changed ('*': a change naming no table). */
  #changedAt = new Map<string, Map<string, number>>();
  #changeTimes = 0;
  /** When everything was last forgotten, or organisations' times were dropped to bound the map. */
  #allChangedAt = 0;

  /**
   * @param ttlMs 0 disables the cache.
   * @param canServe whether entries may be served now (change notices are arriving).
   */
  constructor(
    readonly ttlMs = AUTH_CACHE_TTL_MS,
    private readonly canServe: () => boolean = () => true,
  ) {}

  /**
   * The cached answer of `key`, or `load`'s. `dependsOn` names the tables whose changes can change
   * the answer (by default every table of AUTH_TABLES): a change notice of another table, such as
   * the customers an on-sale creates by the thousand, then leaves it cached.
   */
  get<T>(
    key: string,
    load: () => Promise<{ value: T; organisationId: string } | undefined>,
    dependsOn: ReadonlySet<string> = AUTH_TABLES,
  ): Promise<T | undefined> {
    const serving = this.ttlMs > 0 && this.canServe();
    const hit = serving ? this.#entries.get(key) : undefined;
    if (hit && hit.expiresAt > Date.now()) return Promise.resolve(hit.value as T);
    const generation = this.#generationOf(dependsOn);
    const loading = serving ? this.#loading.get(key) : undefined;
    if (loading && loading.generation === generation) return loading.answer as Promise<T | undefined>;
    const answer = this.#load(key, load, dependsOn, serving, generation);
    if (serving) {
      this.#loading.set(key, { generation, answer });
      const settled = () => {
        if (this.#loading.get(key)?.answer === answer) this.#loading.delete(key);
      };
      answer.then(settled, settled);
    }
    return answer;
  }

  async #load<T>(
    key: string,
    load: () => Promise<{ value: T; organisationId: string } | undefined>,
    dependsOn: ReadonlySet<string>,
    serving: boolean,
    generation: number,
  ): Promise<T | undefined> {
    const now = Date.now();
    const loaded = await load();
    if (!loaded) {
      this.#entries.delete(key);
      return undefined;
    }
    if (serving && generation === this.#generationOf(dependsOn) && this.canServe()) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.set(key, { value: loaded.value, organisationId: loaded.organisationId, expiresAt: now + this.ttlMs, dependsOn });
    }
    return loaded.value;
  }

  #generationOf(tables: ReadonlySet<string>): number {
    let sum = this.#generation;
    for (const table of tables) sum += this.#tableGenerations.get(table) ?? 0;
    return sum;
  }

  /** The credential clock now: note it before reading a credential (see `changedSince`). */
  now(): number {
    return this.#clock;
  }

  /**
   * Whether something of the organisation in `tables` (what a credential's answer depends on,
   * `credentialTables`) may have changed since the clock read `at`: true when this process forgot
   * any of it since, or could not tell (notices were missed).
   */
  changedSince(organisationId: string, at: number, tables: ReadonlySet<string> = AUTH_TABLES): boolean {
    if (this.#allChangedAt > at) return true;
    const changed = this.#changedAt.get(organisationId);
    if (!changed) return false;
    if ((changed.get('*') ?? 0) > at) return true;
    for (const table of tables) if ((changed.get(table) ?? 0) > at) return true;
    return false;
  }

  /** Whether `caller`'s credential was read before a change of what it depends on (see `changedSince`). */
  readBeforeChange(caller: { organisation: { id: string } | null; principal: Principal | null; rightsReadAt?: number }): boolean {
    if (!caller.organisation || !caller.principal || caller.rightsReadAt === undefined) return false;
    return this.changedSince(caller.organisation.id, caller.rightsReadAt, credentialTables(caller.principal));
  }

  /** Moves the clock for a change of `table` (every table: '*') of an organisation (of all: null). */
  #tick(organisationId: string | null, table = '*'): void {
    this.#clock += 1;
    if (organisationId === null || this.#changeTimes >= MAX_CHANGE_TIMES) {
      // Dropping the organisations' times counts as a change of all of them: safe, never stale.
      this.#changedAt.clear();
      this.#changeTimes = 0;
      this.#allChangedAt = this.#clock;
    }
    if (organisationId === null) return;
    let changed = this.#changedAt.get(organisationId);
    if (!changed) this.#changedAt.set(organisationId, (changed = new Map<string, number>()));
    if (!changed.has(table)) this.#changeTimes += 1;
    changed.set(table, this.#clock);
  }

  /** Forgets everything cached about one organisation (after any change to keys, roles or settings). */
  forgetOrganisation(organisationId: string): void {
    this.#tick(organisationId);
    this.#generation += 1;
    for (const [key, entry] of this.#entries) if (entry.organisationId === organisationId) this.#entries.delete(key);
  }

  /** A change notice: forgets the organisation's answers that depend on `table` (all of them when no table is named). */
  changed(organisationId: string, table?: string): void {
    if (table === undefined || !AUTH_TABLES.has(table)) return this.forgetOrganisation(organisationId);
    this.#tick(organisationId, table);
    this.#tableGenerations.set(table, (this.#tableGenerations.get(table) ?? 0) + 1);
    for (const [key, entry] of this.#entries)
      if (entry.organisationId === organisationId && entry.dependsOn.has(table)) this.#entries.delete(key);
  }

  forgetAll(): void {
    this.#tick(null);
    this.#generation += 1;
    this.#entries.clear();
  }
}
