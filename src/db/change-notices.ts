import pg from 'pg';
import type { Logger } from '../log.ts';

/**
 * Change notices from PostgreSQL, so every API process forgets what it cached about an organisation
 * within milliseconds of another process changing it. Triggers (migration
 * 20261123020000_change_notices) call pg_notify('service_changes', '<organisationId> <table>') from
 * the changing transaction; PostgreSQL delivers the notice to every listening connection at commit.
 *
 * Caches must never serve what a missed notice would have removed. So a cache consults `listening`:
 * false until a dedicated connection has LISTENed and proved notices arrive (a probe notice sent from
 * another connection, which also proves the embedded PGlite of `npm start` forwards them between its
 * connections: src/embedded/pglite.ts, test/platform/embedded.test.ts), and false again the moment
 * that connection is lost, when every subscriber is told to forget everything. The connection is
 * retried with backoff; on success subscribers forget everything again (notices may have been missed
 * meanwhile) and caching resumes.
 *
 * The log says each condition once: a warning with the reason (a message, no stack trace) when notices
 * are lost, or still not there STARTUP_GRACE_MS after start(); debug lines while every retry fails;
 * info when they are back (test/platform/change-notices-health.test.ts).
 *
 * A connection can also go half-open: the socket stays "connected" while nothing arrives, so neither
 * an error nor an end ever comes. A query on the listening connection every HEALTH_CHECK_INTERVAL_MS
 * must answer within HEALTH_CHECK_TIMEOUT_MS (notices travel on the same connection, so an answer
 * proves they can arrive); otherwise the connection counts as lost. A notice missed that way stops
 * being trusted within HEALTH_CHECK_INTERVAL_MS + HEALTH_CHECK_TIMEOUT_MS.
 */

export const CHANGE_CHANNEL = 'service_changes';
/** What GraphQL subscriptions stream (src/live/hub.ts), on the same connection. */
export const LIVE_CHANNEL = 'service_live';

/** Takes the notices of LIVE_CHANNEL. */
export interface LiveListener {
  received(payload: string): void;
  /** Listening (again) after notices may have been missed. */
  resumed(): void;
}

export interface ChangeSubscriber {
  /** Tables whose changes matter to this subscriber. */
  tables: ReadonlySet<string>;
  /** Something of `organisationId` changed in `table`. */
  changed(organisationId: string, table: string): void;
  /** Notices may have been missed: forget everything. */
  forgetAll(): void;
}

/** How often the listening connection must prove it still carries what the server sends. */
export const HEALTH_CHECK_INTERVAL_MS = 2_000;
/** How long that proof (and any other query of ours) may take before the connection counts as lost. */
export const HEALTH_CHECK_TIMEOUT_MS = 2_000;

const PROBE_TIMEOUT_MS = 2_000;
const MAX_BACKOFF_MS = 5_000;
/**
 * How long after start() failures count as a slow start, logged at debug only: a process busy
 * starting (building its schema, on a loaded machine) can hold its event loop past a connection
 * timeout, so a first attempt fails that would have succeeded. Caches stay off meanwhile all the same.
 */
export const STARTUP_GRACE_MS = 15_000;

export class ChangeNotices {
  #client: pg.Client | undefined;
  #listening = false;
  #stopped = false;
  #backoffMs = 250;
  #retry: NodeJS.Timeout | undefined;
  #healthCheck: NodeJS.Timeout | undefined;
  /** Whether the loss of notices has been reported and not yet their return: a condition is logged once. */
  #reportedUnavailable = false;
  /** When start() was called, until notices first arrive (then undefined): failures before STARTUP_GRACE_MS are no warning. */
  #startingSince: number | undefined;
  #probe: { id: string; resolve: () => void } | undefined;
  readonly #subscribers: ChangeSubscriber[] = [];
  #live: LiveListener | undefined;
  /** Connections already given up (an error is usually followed by an end). */
  readonly #dead = new WeakSet<pg.Client>();

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
  ) {}

  /** Whether notices are known to arrive now: caches may serve only while this is true. */
  get listening(): boolean {
    return this.#listening;
  }

  subscribe(subscriber: ChangeSubscriber): void {
    this.#subscribers.push(subscriber);
  }

  /** The one taker of LIVE_CHANNEL's notices. */
  listenLive(listener: LiveListener): void {
    this.#live = listener;
  }

  /** Connects (in the background; retried until stop()). */
  start(): void {
    this.#stopped = false;
    this.#startingSince = Date.now();
    void this.#connect();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retry);
    clearTimeout(this.#healthCheck);
    this.#lost();
    const client = this.#client;
    this.#client = undefined;
    if (client) await close(client);
  }

  async #connect(): Promise<void> {
    if (this.#stopped) return;
    const client = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: 5_000,
      query_timeout: HEALTH_CHECK_TIMEOUT_MS,
      keepAlive: true,
    });
    client.on('error', (error) => this.#failed(client, error));
    client.on('end', () => this.#failed(client, new Error('connection ended')));
    client.on('notification', (message) =>
      message.channel === LIVE_CHANNEL ? this.#live?.received(message.payload ?? '') : this.#received(message.payload ?? ''),
    );
    try {
      await client.connect();
      if (this.#stopped) return void (await close(client));
      this.#client = client;
      await client.query(`LISTEN ${CHANGE_CHANNEL}`);
      await client.query(`LISTEN ${LIVE_CHANNEL}`);
      await this.#proveDelivery();
      this.#backoffMs = 250;
      for (const subscriber of this.#subscribers) subscriber.forgetAll();
      this.#listening = true;
      this.#live?.resumed();
      this.#watch(client);
      if (this.#reportedUnavailable) this.logger.info('change notices are back: caches are on again');
      else this.logger.debug('listening for change notices');
      this.#reportedUnavailable = false;
      this.#startingSince = undefined;
    } catch (error) {
      this.#failed(client, error);
    }
  }

  /** Schedules the next round trip on the listening connection; a late or failed answer loses it. */
  #watch(client: pg.Client): void {
    this.#healthCheck = setTimeout(() => {
      client.query('SELECT 1').then(
        () => {
          if (this.#client === client) this.#watch(client);
        },
        (error: unknown) => this.#failed(client, new Error(`the listening connection did not answer: ${messageOf(error)}`)),
      );
    }, HEALTH_CHECK_INTERVAL_MS);
    this.#healthCheck.unref();
  }

  /** Sends a probe from another connection and waits for it on ours. */
  async #proveDelivery(): Promise<void> {
    const id = `probe-${process.pid}-${Math.random().toString(36).slice(2)}`;
    const arrived = new Promise<void>((resolve, reject) => {
      this.#probe = { id, resolve };
      setTimeout(
        () => reject(new Error(`a probe notice sent from another connection did not arrive within ${PROBE_TIMEOUT_MS} ms`)),
        PROBE_TIMEOUT_MS,
      ).unref();
    });
    const sender = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5_000, query_timeout: HEALTH_CHECK_TIMEOUT_MS });
    // Ended by the server meanwhile: the awaited statement fails and says so; the event must not
    // crash the process.
    sender.on('error', () => undefined);
    const send = async () => {
      try {
        await sender.connect();
        await sender.query('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, id]);
      } finally {
        await close(sender);
      }
    };
    // Both awaited together, so a failed send leaves no unheard timeout of the probe behind.
    await Promise.all([send(), arrived]).finally(() => (this.#probe = undefined));
  }

  #received(payload: string): void {
    if (this.#probe && payload === this.#probe.id) return this.#probe.resolve();
    const space = payload.indexOf(' ');
    if (space < 0) return;
    const organisationId = payload.slice(0, space);
    const table = payload.slice(space + 1);
    for (const subscriber of this.#subscribers) if (subscriber.tables.has(table)) subscriber.changed(organisationId, table);
  }

  #lost(): void {
    const was = this.#listening;
    this.#listening = false;
    if (was) for (const subscriber of this.#subscribers) subscriber.forgetAll();
  }

  #failed(client: pg.Client, error: unknown): void {
    if (this.#dead.has(client)) return;
    this.#dead.add(client);
    this.#lost();
    if (this.#client === client) {
      this.#client = undefined;
      clearTimeout(this.#healthCheck);
    }
    void close(client);
    if (this.#stopped) return;
    const reason = messageOf(error);
    const starting = this.#startingSince !== undefined && Date.now() - this.#startingSince < STARTUP_GRACE_MS;
    if (starting) this.logger.debug({ reason, retryInMs: this.#backoffMs }, 'change notices not yet available');
    else if (this.#reportedUnavailable) this.logger.debug({ reason, retryInMs: this.#backoffMs }, 'change notices still unavailable');
    else this.logger.warn({ reason, retryInMs: this.#backoffMs }, 'change notices unavailable: caches are off until they are back');
    if (!starting) this.#reportedUnavailable = true;
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => void this.#connect(), this.#backoffMs);
    this.#retry.unref();
    this.#backoffMs = Math.min(this.#backoffMs * 2, MAX_BACKOFF_MS);
  }
}

/** Ends a connection; a half-open one never answers the goodbye, so it is dropped after the timeout. */
async function close(client: pg.Client): Promise<void> {
  const drop = setTimeout(() => client.connection.stream.destroy(), HEALTH_CHECK_TIMEOUT_MS);
  drop.unref();
  await client.end().catch(() => undefined);
  clearTimeout(drop);
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
