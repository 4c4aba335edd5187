import type { Config } from '../config.ts';
import type { Principal } from '../auth/principal.ts';
import { randomUUID } from 'node:crypto';
import { GraphQLError } from 'graphql';
import { AUTH_TABLES } from '../auth/auth-cache.ts';
import type { ChangeSubscriber } from '../db/change-notices.ts';
import type { Database } from '../db/client.ts';
import { tenantDatabase } from '../db/tenant.ts';
import type { LiveHub } from './hub.ts';
import type { Logger } from '../log.ts';
import { ProcessStopping } from './transport.ts';

/**
 * The subscriptions of one API process: its hub, and the bounds on open streams. A stream counts
 * against its credential (LIVE_SUBSCRIPTIONS_PER_CREDENTIAL), its organisation
 * (LIVE_SUBSCRIPTIONS_PER_ORGANISATION) and the process (LIVE_SUBSCRIPTIONS_PER_PROCESS); one over
 * a bound is refused with 429 RATE_LIMITED, Retry-After and `details` naming the bound. A
 * credential's and an organisation's streams are counted across API processes, wherever a load
 * balancer sends them: each takes a place in PostgreSQL (`live_stream_places`), under a lease its
 * process renews (LIVE_STREAM_LEASE), so the places of a process that died lapse. The bound per
 * process is the process's own (test/live/subscriptions.test.ts, "bounds").
 */

export type LiveLimits = Pick<
  Config,
  'LIVE_SUBSCRIPTIONS_PER_CREDENTIAL' | 'LIVE_SUBSCRIPTIONS_PER_ORGANISATION' | 'LIVE_SUBSCRIPTIONS_PER_PROCESS' | 'LIVE_STREAM_LEASE'
>;

/** How long a refused client should wait before opening a stream again. */
const RETRY_AFTER_SECONDS = 5;

/** Who opens a stream (a request's context), and how its connection is dropped. */
interface Caller {
  principal: Principal | null;
  organisation: { id: string } | null;
  live?: { drop?: () => void };
}

/** Rows read by one statement at most (see batched). */
const MAX_BATCH = 100;

/** Readings of events' subjects kept for streams that send them later (a stream behind the others). */
const KEPT_READINGS = 2_000;

/**
 * The credentials of the sales API: no subscription stands on them (/graphql refuses them), and an
 * on-sale changes them by the thousand (a customer per buyer, a channel key's last use).
 */
const SALES_CREDENTIAL_TABLES = new Set(['customers', 'sales_channels', 'channel_keys']);

export class Live implements ChangeSubscriber {
  /** The tables whose changes move the rights of management credentials (what subscriptions are opened with). */
  readonly tables: ReadonlySet<string> = new Set([...AUTH_TABLES].filter((table) => !SALES_CREDENTIAL_TABLES.has(table)));
  /** Counts the changes of credentials and rights per organisation (and of all, '*'), as notices tell them. */
  readonly #authChanges = new Map<string, number>();
  /** This process's streams' places (live_stream_places), by id. */
  readonly #places = new Map<string, { drop: () => void }>();
  /** This process, as the holder of its places. */
  readonly #holder = `${process.pid}-${randomUUID()}`;
  readonly #renewal: NodeJS.Timeout;
  #closing = false;
  #closed: Promise<void> | undefined;
  #open = 0;
  readonly #reads = new Map<string, Promise<unknown>>();
  readonly #batches = new Map<string, { ids: Set<string>; rows: Promise<Map<string, unknown>> }>();

  constructor(
    readonly hub: LiveHub,
    readonly limits: LiveLimits,
    /** Whether change notices arrive now (src/db/change-notices.ts): else rights are read again for every event. */
    readonly listening: () => boolean = () => false,
    /**
     * Where the subjects of events are read (a pool of its own, LIVE_READ_CONNECTIONS): during an
     * on-sale the API's pool is queued with buyers, and a subscriber would wait a second for each
     * order behind them.
     */
    readonly reads: Database = hub.db,
    readonly logger?: Logger,
  ) {
    // A renewal that fails is tried again at the next: the places outlive two of them.
    this.#renewal = setInterval(() => void this.#renew().catch(() => undefined), this.limits.LIVE_STREAM_LEASE / 3);
    this.#renewal.unref();
  }

  /** The subjects' database, scoped to one organisation. */
  readsOf(organisationId: string): ReturnType<typeof tenantDatabase> {
    return tenantDatabase(this.reads, organisationId);
  }

  changed(organisationId: string): void {
    this.#authChanges.set(organisationId, (this.#authChanges.get(organisationId) ?? 0) + 1);
  }

  forgetAll(): void {
    this.#authChanges.set('*', (this.#authChanges.get('*') ?? 0) + 1);
  }

  /**
   * Where the organisation's credentials and rights stand: a stream reads its credential again
   * before an event only when this moved since it last did (or notices cannot be trusted), not for
   * every event; a quiet stream reads it every RECHECK_MS all the same (src/live/streams.ts).
   */
  rightsVersion(organisationId: string): string | null {
    if (!this.listening()) return null;
    return `${this.#authChanges.get('*') ?? 0}.${this.#authChanges.get(organisationId) ?? 0}`;
  }

  /** Streams open in this process now. */
  get open(): number {
    return this.#open;
  }

  /**
   * Counts one stream of the caller as its subscription starts, or refuses it: the answer's status
   * is 429, with Retry-After (a GraphQL error carrying both, as the cost budget's refusal does), so
   * an SSE client sees the refusal before any stream opens. The answer releases the stream.
   */
  async admit(ctx: Caller & { requestId?: string }): Promise<() => void> {
    const credential = credentialOf(ctx);
    const organisation = ctx.organisation?.id ?? '';
    const over = (limit: keyof LiveLimits, max: number) =>
      new GraphQLError(`Too many open subscriptions (${limit}: ${max}); close one first.`, {
        extensions: {
          code: 'RATE_LIMITED',
          details: [{ path: [], message: limit, limit, max }],
          ...(ctx.requestId ? { requestId: ctx.requestId } : {}),
          // spec: false: the answer's status whatever the client accepts.
          http: { status: 429, headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) }, spec: false },
        },
      });
    if (this.#open >= this.limits.LIVE_SUBSCRIPTIONS_PER_PROCESS) {
      throw over('LIVE_SUBSCRIPTIONS_PER_PROCESS', this.limits.LIVE_SUBSCRIPTIONS_PER_PROCESS);
    }
    if (this.#closing) throw new ProcessStopping();
    // Counted at once: streams starting together in this process do not all pass the check above.
    this.#open++;
    const id = randomUUID();
    const giveBack = () => {
      // Not given back (the database does not answer): it lapses with its lease.
      this.hub.db.liveStreamPlace.deleteMany({ where: { id } }).catch(() => undefined);
    };
    let refused: string | null;
    try {
      const [taken] = await this.hub.db.$queryRaw<Array<{ refused: string | null }>>`
        SELECT live_stream_take_place(${id}, ${organisation}, ${credential}, ${this.#holder},
          ${this.limits.LIVE_SUBSCRIPTIONS_PER_CREDENTIAL}::int, ${this.limits.LIVE_SUBSCRIPTIONS_PER_ORGANISATION}::int,
          ${this.limits.LIVE_STREAM_LEASE}::int) AS refused`;
      refused = taken!.refused;
    } catch (error) {
      this.#open--;
      throw error;
    }
    if (refused === 'LIVE_SUBSCRIPTIONS_PER_CREDENTIAL' || refused === 'LIVE_SUBSCRIPTIONS_PER_ORGANISATION') {
      this.#open--;
      throw over(refused, this.limits[refused]);
    }
    // The process began to stop meanwhile: its places were given back before this one was taken.
    if (this.#closing) {
      this.#open--;
      giveBack();
      throw new ProcessStopping();
    }
    this.#places.set(id, { drop: () => ctx.live?.drop?.() });
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open--;
      this.#places.delete(id);
      // A process that stops gives back all its places at once (close).
      if (!this.#closing) giveBack();
    };
  }

  /**
   * Renews the lease of this process's places. A place that lapsed meanwhile (the database did not
   * answer for longer than the lease) may have been taken by another stream since: its stream is
   * dropped, and its client, reconnecting with Last-Event-ID, takes a place again within the bounds.
   * A place given back meanwhile is not taken again: only rows still there are renewed.
   */
  async #renew(): Promise<void> {
    if (this.#places.size === 0 || this.#closing) return;
    const ids = [...this.#places.keys()];
    const renewed = await this.hub.db.$queryRaw<Array<{ id: string }>>`
      UPDATE live_stream_places SET "leaseUntil" = now() + ${this.limits.LIVE_STREAM_LEASE}::int * interval '1 millisecond'
       WHERE "heldBy" = ${this.#holder} AND id = ANY(${ids}::text[]) AND "leaseUntil" > now()
      RETURNING id`;
    if (renewed.length === ids.length) return;
    const kept = new Set(renewed.map((row) => row.id));
    const lapsed = ids.filter((id) => !kept.has(id) && this.#places.has(id));
    if (lapsed.length === 0) return;
    this.logger?.warn(
      { streams: lapsed.length },
      'open subscription streams lost their places (the database did not answer for longer than LIVE_STREAM_LEASE): dropped, their clients reconnect',
    );
    for (const id of lapsed) this.#places.get(id)?.drop();
  }

  /** Ends every stream of this process and gives back their places (once, however often asked). */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing = true;
      clearInterval(this.#renewal);
      await this.hub.close();
      this.#places.clear();
      // A database that does not answer now lets them lapse with their lease instead.
      await this.hub.db.liveStreamPlace.deleteMany({ where: { heldBy: this.#holder } }).catch(() => undefined);
    })();
    return this.#closed;
  }

  /**
   * A row read with the others asked for in the same turn of the event loop under `kind` (at most
   * MAX_BATCH): a group reads the subjects of its next events at once, and one statement for a
   * batch takes a pool connection from the sale once, not once per order. `kind` names what
   * `readMany` reads and where (one organisation's orders): the first caller's `readMany` reads
   * the batch.
   */
  batched<T extends { id: string }>(kind: string, id: string, readMany: (ids: string[]) => Promise<T[]>): Promise<T | null> {
    let batch = this.#batches.get(kind);
    if (!batch) {
      const ids = new Set<string>();
      const rows = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        if (this.#batches.get(kind)?.ids === ids) this.#batches.delete(kind);
        return new Map<string, unknown>((await readMany([...ids])).map((row) => [row.id, row]));
      });
      this.#batches.set(kind, (batch = { ids, rows }));
    }
    batch.ids.add(id);
    if (batch.ids.size >= MAX_BATCH) this.#batches.delete(kind);
    return batch.rows.then((rows) => (rows.get(id) as T | undefined) ?? null);
  }

  /**
   * One reading of `key` shared by every stream that asks while it runs (and, with `keep`, later): a
   * thousand screens following one occurrence's counters cost one statement per move, and a
   * thousand following an account's orders one reading of each changed order, not a thousand. Only
   * for what does not depend on who asks: each stream checks its own rights before it sends.
   */
  shared<T>(key: string, read: () => Promise<T>, { keep = false }: { keep?: boolean } = {}): Promise<T> {
    let reading = this.#reads.get(key) as Promise<T> | undefined;
    if (!reading) {
      const forget = () => void (this.#reads.get(key) === reading && this.#reads.delete(key));
      reading = read();
      // A failed reading is never kept; a kept one stays until KEPT_READINGS newer ones replace it.
      reading.then(keep ? () => undefined : forget, forget);
      this.#reads.set(key, reading);
      if (this.#reads.size > KEPT_READINGS) this.#reads.delete(this.#reads.keys().next().value!);
    }
    return reading;
  }
}

/** What identifies the credential of a request, for its bound. */
function credentialOf(ctx: Caller): string {
  const principal = ctx.principal;
  switch (principal?.kind) {
    case 'staff':
      return `person:${principal.personId}`;
    case 'apiKey':
      return `key:${principal.apiKeyId}`;
    case 'embed':
      return `embed:${principal.sessionId}`;
    case 'channel':
      return `channel:${principal.channelKeyId}`;
    case 'customer':
      return `customer:${principal.customerId}`;
    default:
      return 'anonymous';
  }
}
