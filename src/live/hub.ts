import type { Config } from '../config.ts';
import type { Database } from '../db/client.ts';
import { runPeriodically } from '../db/periodic.ts';
import type { Logger } from '../log.ts';
import { ProcessStopping } from './transport.ts';

/**
 * What one API process knows of the live events every subscription of it streams (GraphQL
 * subscriptions, src/live/streams.ts). Changes write their live event from their own transaction
 * (triggers, migration 20261127140000_live_events) and announce it on the `service_live` channel;
 * PostgreSQL delivers the notice at commit, to every listening process, in commit order. The hub
 * hands each notice to the streams of this process that listen to its topic, in that order
 * (src/db/change-notices.ts listens on LIVE_CHANNEL beside its own).
 *
 * Sales counters are announced without a row, by the inventory rows' triggers and the catalogue's
 * (capacities, ticket types, cancellation; migration 20261129120000_live_counters_of_the_catalogue):
 * a counter stream sends the counters as they are, at most once per COUNTER_INTERVAL_MS per
 * occurrence, read once per process for all its subscribers.
 *
 * When notices may have been missed (the listening connection was lost), every topic stream catches
 * up from the table (`live_events`, kept for the replay window) and every counter stream is sent the
 * current counters: nothing is lost, only delayed.
 */

/** One change a topic stream may send: a row of `live_events`. */
export interface LiveEvent {
  /** The row id: the stream's SSE id, what Last-Event-ID names on reconnection. */
  id: bigint;
  organisationId: string;
  topic: string;
  kind: string;
  subjectId: string;
  accountId: string | null;
  eventIds: readonly string[];
  /** When its change committed (moments before: as its transaction ended). */
  createdAt: Date;
}

/**
 * What narrows a topic's events for one stream: columns its rows must hold. The table is read with
 * it (a replay, a catch-up) and each notice is held against it (`within`): one reading of it, so a
 * replay's bound counts only what the stream would send.
 */
export interface Narrowing {
  /** Only events about this account. */
  accountId?: string;
  /** Only events naming this event among theirs (an order with a line of it). */
  eventId?: string;
}

/** Whether `event` is one a stream narrowed so follows. */
export function within(event: LiveEvent, { accountId, eventId }: Narrowing): boolean {
  return (accountId === undefined || event.accountId === accountId) && (eventId === undefined || event.eventIds.includes(eventId));
}

export interface TopicListener {
  /** A committed change of the topic, in commit order. */
  event(event: LiveEvent): void;
  /** Notices may have been missed: read the table from the last event sent. */
  catchUp(): void;
  /** The process is stopping: end the stream. */
  end(): void;
}

export interface CounterListener {
  /** The occurrence's counters may have moved. */
  moved(): void;
  end(): void;
}

/** At most this often per occurrence a counter stream is sent its counters (4 a second). */
export const COUNTER_INTERVAL_MS = 250;
/** Rows older than the replay window are pruned this often (by one process of the service). */
const PRUNE_INTERVAL_MS = 60_000;

export class LiveHub {
  readonly #topics = new Map<string, Set<TopicListener>>();
  readonly #counters = new Map<string, { listeners: Set<CounterListener>; last: number; timer?: NodeJS.Timeout }>();
  readonly #pruning: { stop(): Promise<void> } | undefined;
  #closed = false;
  /** The greatest live event id this process was told of. */
  lastSeen = 0n;

  constructor(
    readonly db: Database,
    readonly config: Pick<Config, 'LIVE_REPLAY_WINDOW'>,
    logger: Logger,
    { prune = true }: { prune?: boolean } = {},
  ) {
    this.#pruning = prune ? runPeriodically(db, 'live-events-prune', PRUNE_INTERVAL_MS, () => this.prune(), logger) : undefined;
  }

  /** A notice of the `service_live` channel (src/db/change-notices.ts). */
  received(payload: string): void {
    const parts = payload.split(' ');
    if (parts[0] === 'c' && parts.length === 3) return this.#countersMoved(`${parts[1]} ${parts[2]}`);
    if (parts[0] !== 'e' || parts.length < 8) return;
    const [, id, organisationId, topic, kind, subjectId, accountId, eventIds, committedAt] = parts as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string | undefined,
    ];
    const eventId = BigInt(id);
    if (eventId > this.lastSeen) this.lastSeen = eventId;
    const listeners = this.#topics.get(`${organisationId} ${topic}`);
    if (!listeners) return;
    const event: LiveEvent = {
      id: eventId,
      organisationId,
      topic,
      kind,
      subjectId,
      accountId: accountId === '-' ? null : accountId,
      eventIds: eventIds === '' ? [] : eventIds.split(','),
      // Notices sent before the commit time was part of them (a rolling upgrade) count as received now.
      createdAt: committedAt === undefined ? new Date() : new Date(Number(committedAt)),
    };
    for (const listener of listeners) listener.event(event);
  }

  /** Notices may have been missed (the listening connection is back): every stream catches up. */
  resumed(): void {
    for (const listeners of this.#topics.values()) for (const listener of listeners) listener.catchUp();
    for (const key of this.#counters.keys()) this.#countersMoved(key);
  }

  listen(organisationId: string, topic: string, listener: TopicListener): () => void {
    if (this.#closed) throw new ProcessStopping();
    const key = `${organisationId} ${topic}`;
    let listeners = this.#topics.get(key);
    if (!listeners) this.#topics.set(key, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.#topics.get(key) === listeners) this.#topics.delete(key);
    };
  }

  listenToCounters(organisationId: string, occurrenceId: string, listener: CounterListener): () => void {
    if (this.#closed) throw new ProcessStopping();
    const key = `${organisationId} ${occurrenceId}`;
    let entry = this.#counters.get(key);
    if (!entry) this.#counters.set(key, (entry = { listeners: new Set(), last: 0 }));
    entry.listeners.add(listener);
    return () => {
      entry.listeners.delete(listener);
      if (entry.listeners.size === 0 && this.#counters.get(key) === entry) {
        clearTimeout(entry.timer);
        this.#counters.delete(key);
      }
    };
  }

  /** Coalesced: the first move is told at once, the next ones at most every COUNTER_INTERVAL_MS. */
  #countersMoved(key: string): void {
    const entry = this.#counters.get(key);
    if (!entry || entry.timer) return;
    const tell = () => {
      entry.timer = undefined;
      entry.last = Date.now();
      for (const listener of entry.listeners) listener.moved();
    };
    const wait = entry.last + COUNTER_INTERVAL_MS - Date.now();
    if (wait <= 0) return tell();
    entry.timer = setTimeout(tell, wait);
    entry.timer.unref();
  }

  /** Events of `topic` after `afterId` (of those, the ones `narrowing` lets through), oldest first, at most `limit`. */
  async eventsAfter(organisationId: string, topic: string, narrowing: Narrowing, afterId: bigint, limit: number): Promise<LiveEvent[]> {
    const { accountId, eventId } = narrowing;
    return this.db.liveEvent.findMany({
      where: {
        organisationId,
        topic,
        id: { gt: afterId },
        ...(accountId === undefined ? {} : { accountId }),
        ...(eventId === undefined ? {} : { eventIds: { has: eventId } }),
      },
      orderBy: { id: 'asc' },
      take: limit,
      select: {
        id: true,
        organisationId: true,
        topic: true,
        kind: true,
        subjectId: true,
        accountId: true,
        eventIds: true,
        createdAt: true,
      },
    });
  }

  /** The greatest live event id there is (0 when none). */
  async latestId(): Promise<bigint> {
    return (await this.db.liveEvent.aggregate({ _max: { id: true } }))._max.id ?? 0n;
  }

  /** Whether the event `id` of `topic` is still kept: if not, what followed it may be gone too. */
  async kept(organisationId: string, topic: string, id: bigint): Promise<boolean> {
    return (await this.db.liveEvent.count({ where: { id, organisationId, topic } })) === 1;
  }

  /**
   * Drops the events older than the replay window, and the places of open streams whose lease
   * ended (a process that died; they no longer count, src/live/live.ts).
   */
  async prune(): Promise<number> {
    const before = new Date(Date.now() - this.config.LIVE_REPLAY_WINDOW);
    await this.db.$executeRaw`DELETE FROM live_stream_places WHERE "leaseUntil" <= now()`;
    return (await this.db.liveEvent.deleteMany({ where: { createdAt: { lt: before } } })).count;
  }

  /** Ends every stream of this process (the process is stopping: open streams would hold it up). */
  async close(): Promise<void> {
    if (this.#closed) return this.#pruning?.stop();
    this.#closed = true;
    for (const listeners of this.#topics.values()) for (const listener of listeners) listener.end();
    for (const entry of this.#counters.values()) {
      clearTimeout(entry.timer);
      for (const listener of entry.listeners) listener.end();
    }
    await this.#pruning?.stop();
  }
}
