import { createHash } from 'node:crypto';
import { getOperationAST, Kind, OperationTypeNode, print, type DocumentNode, type ExecutionResult } from 'graphql';
import type { Principal } from '../auth/principal.ts';
import type { ChangeSubscriber } from '../db/change-notices.ts';

/** What the cache needs of a request's context (src/context.ts RequestContext has it all). */
export interface CacheCaller {
  principal: Principal | null;
  organisation: { id: string } | null;
  apiVersion: string;
  /** The credential clock when the principal was read (src/auth/auth-cache.ts `now`). */
  rightsReadAt?: number;
}

/**
 * A short-lived cache of query results for a small list of read-heavy catalogue fields (events,
 * venues, occurrences, ticket types). A result is kept per (document, variables, organisation,
 * principal, API version), so access rules are never shared between callers. Every management
 * mutation in an organisation forgets that organisation's results in this process at once (an
 * administrator reads their own writes); every API process, this one too, forgets them when
 * PostgreSQL's change notice of any of the organisation's rows arrives (src/db/change-notices.ts),
 * which is how a storefront's sale shows in an administrator's counts; while notices are not known
 * to arrive, nothing is cached.
 *
 * A result is kept only for a query asked for a second time within the TTL (admission on second
 * sight): the first ask leaves only its key. Under varied traffic nearly every result is asked for
 * once, and keeping each one for the TTL made it outlive the young generation — copied by every
 * scavenge, then promoted — which cost the API more collection time than the cache ever saved
 * (the uncached list rows answered ~10% more requests with the cache off). A query that
 * repeats (a dashboard's poll, a popular page) is answered from memory from its third ask on.
 */
export const RESULT_CACHE_TTL_MS = 1_000;
/**
 * At most this many results are kept, and none past its expiry: a result can be a page of 50
 * events with their counts (tens of KB as objects), and under varied traffic (many principals,
 * pages, filters) nearly every result is asked for once. 5,000 entries dropped only when asked for
 * again held ~300 MB of expired results in `npm run bench`.
 */
const MAX_ENTRIES = 1_000;
/** Keys asked for once are kept for admission, at most this many. */
const MAX_SEEN = 10_000;
/** Longer keys (variables of many kilobytes) are not cached: ~45 MB of keys at most. */
const MAX_KEY_LENGTH = 4_000;

/** Root fields whose results may be cached; a document selecting anything else never is. */
export const CACHEABLE_ROOT_FIELDS: ReadonlySet<string> = new Set([
  'events',
  'event',
  'eventOccurrences',
  'ticketTypes',
  'ticketType',
  'venues',
  'venue',
  'apiVersions',
]);

interface Entry {
  result: ExecutionResult;
  organisationId: string;
  expiresAt: number;
}

const documentIds = new WeakMap<DocumentNode, string | null>();

/**
 * The key of a cacheable query document (its source text, so documents parsed per request still
 * share entries), or null when the document may not be cached.
 */
function cacheableDocumentId(document: DocumentNode, operationName: string | null | undefined): string | null {
  const known = documentIds.get(document);
  if (known !== undefined) return known;
  const operation = getOperationAST(document, operationName);
  const cacheable =
    document.definitions.length === 1 &&
    operation?.operation === OperationTypeNode.QUERY &&
    operation.selectionSet.selections.every(
      (selection) => selection.kind === Kind.FIELD && CACHEABLE_ROOT_FIELDS.has(selection.name.value),
    );
  // A digest of the text, not the text: keys are held (up to MAX_SEEN of them), and a document
  // may be long; one digest per document object.
  const id = cacheable
    ? createHash('sha256')
        .update(`${operationName ?? ''}\0${document.loc?.source.body ?? print(document)}`)
        .digest('base64url')
    : null;
  documentIds.set(document, id);
  return id;
}

function principalKey(ctx: CacheCaller): string {
  const principal = ctx.principal;
  if (!principal) return 'anonymous';
  if (principal.kind === 'staff') return `staff:${principal.userId}`;
  if (principal.kind === 'apiKey') return `key:${principal.apiKeyId}`;
  if (principal.kind === 'channel') return `channel:${principal.channelKeyId}`;
  if (principal.kind === 'customer') return `customer:${principal.customerId}`;
  return `embed:${principal.sessionId}`;
}

/**
 * Drops from the front of `map` what has expired, and the oldest while it holds `max` or more. Its
 * keys are in the order they expire (one TTL, a key set again moves to the end), so the expired
 * ones are at the front: at most as many are dropped as were added since.
 */
function dropOldest<V>(map: Map<string, V>, now: number, max: number, expiresAt: (value: V) => number): void {
  for (const [oldest, value] of map) {
    if (expiresAt(value) > now && map.size < max) break;
    map.delete(oldest);
  }
}

export class ResultCache implements ChangeSubscriber {
  #entries = new Map<string, Entry>();
  /** Keys asked for once, until their expiry: a second ask within it stores the result. */
  #seen = new Map<string, number>();
  /** Executions in flight, so concurrent misses of one key run the query once. */
  #inFlight = new Map<string, Promise<ExecutionResult>>();
  /** Any change of an organisation's rows can change a cached answer (counts, rights). */
  readonly tables: ReadonlySet<string>;
  /** Other caches of this process that a mutation here forgets too (src/http/shared-pages.ts). */
  #followers: Array<{ forgetOrganisation(organisationId: string): void }> = [];

  /**
   * @param rightsMoved whether the caller's rights may have changed since it authenticated
   *   (src/auth/current-rights.ts): such a caller neither shares nor keeps a result, which its old
   *   rights may have shaped and a later request with the new ones would be answered.
   */
  constructor(
    readonly ttlMs = RESULT_CACHE_TTL_MS,
    private readonly canServe: () => boolean = () => true,
    tables: ReadonlySet<string> = new Set(),
    private readonly rightsMoved: (caller: CacheCaller) => boolean = () => false,
  ) {
    this.tables = tables;
  }

  changed(organisationId: string): void {
    this.forgetOrganisation(organisationId);
  }

  /** Makes every mutation that forgets an organisation's results here forget them in `cache` too. */
  alsoForget(cache: { forgetOrganisation(organisationId: string): void }): void {
    this.#followers.push(cache);
  }

  forgetAll(): void {
    this.#entries.clear();
    this.#seen.clear();
    this.#inFlight.clear();
  }

  keyFor(
    document: DocumentNode,
    operationName: string | null | undefined,
    variables: Record<string, unknown> | null | undefined,
    ctx: CacheCaller,
  ): string | null {
    if (this.ttlMs <= 0 || !ctx.organisation || !this.canServe()) return null;
    const documentId = cacheableDocumentId(document, operationName);
    if (documentId === null) return null;
    const key = `${ctx.organisation.id}|${principalKey(ctx)}|${ctx.apiVersion}|${documentId}|${JSON.stringify(variables ?? {})}`;
    // Variables can make a key long (up to the body limit): such a query is not cached, so every
    // key held is small (MAX_KEY_LENGTH x (MAX_SEEN + MAX_ENTRIES) at most).
    return key.length <= MAX_KEY_LENGTH ? key : null;
  }

  get(key: string): ExecutionResult | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.result;
  }

  set(key: string, organisationId: string, result: ExecutionResult): void {
    if (result.errors?.length) return;
    const now = Date.now();
    dropOldest(this.#entries, now, MAX_ENTRIES, (entry) => entry.expiresAt);
    this.#entries.delete(key);
    this.#entries.set(key, { result, organisationId, expiresAt: now + this.ttlMs });
  }

  /**
   * Whether `key` was asked for before, within the TTL; records this ask. The keys are bounded like
   * the entries (MAX_SEEN, in the order they expire).
   */
  #seenBefore(key: string): boolean {
    const now = Date.now();
    const seenUntil = this.#seen.get(key);
    if (seenUntil !== undefined && seenUntil > now) return true;
    dropOldest(this.#seen, now, MAX_SEEN, (expiresAt) => expiresAt);
    this.#seen.delete(key);
    this.#seen.set(key, now + this.ttlMs);
    return false;
  }

  /** Results held (expired ones are dropped as new ones come). */
  get size(): number {
    return this.#entries.size;
  }

  forgetOrganisation(organisationId: string): void {
    for (const [key, entry] of this.#entries) if (entry.organisationId === organisationId) this.#entries.delete(key);
    for (const key of this.#inFlight.keys()) if (key.startsWith(`${organisationId}|`)) this.#inFlight.delete(key);
  }

  /** Runs `execute` through the cache: cached queries answer from memory; mutations forget. */
  async run(
    args: {
      document: DocumentNode;
      operationName?: string | null;
      variableValues?: Record<string, unknown> | null;
      contextValue: CacheCaller;
    },
    execute: () => Promise<ExecutionResult> | ExecutionResult,
  ): Promise<ExecutionResult> {
    const ctx = args.contextValue;
    const operation = getOperationAST(args.document, args.operationName);
    if (operation?.operation === OperationTypeNode.MUTATION) {
      try {
        return await execute();
      } finally {
        // Storefront mutations (carts, checkout, sign-in) move only counts, which the change
        // notice forgets a few milliseconds later: they must not empty the organisation's cache on
        // every cart of a busy shop, and no storefront reads the results this cache holds.
        const storefront = ctx.principal?.kind === 'channel' || ctx.principal?.kind === 'customer';
        if (ctx.organisation && !storefront) {
          this.forgetOrganisation(ctx.organisation.id);
          for (const follower of this.#followers) follower.forgetOrganisation(ctx.organisation.id);
        }
      }
    }
    const key = this.keyFor(args.document, args.operationName, args.variableValues, ctx);
    if (key === null || this.rightsMoved(ctx)) return execute();
    const hit = this.get(key);
    if (hit) return hit;
    const pending = this.#inFlight.get(key);
    if (pending) return pending;
    if (!this.#seenBefore(key)) return execute();
    const organisationId = ctx.organisation!.id;
    const running = Promise.resolve(execute()).then(
      (result) => {
        // Only if no mutation forgot this organisation while the query ran.
        if (this.#inFlight.get(key) === running) this.set(key, organisationId, result);
        this.#inFlight.delete(key);
        return result;
      },
      (error: unknown) => {
        if (this.#inFlight.get(key) === running) this.#inFlight.delete(key);
        throw error;
      },
    );
    this.#inFlight.set(key, running);
    return running;
  }
}
