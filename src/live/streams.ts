import type { RequestContext } from '../context.ts';
import { organisationOf } from '../context.ts';
import { AppError, isDatabaseUnavailable } from '../errors.ts';
import type { LiveEvent } from './hub.ts';

/**
 * The streams of GraphQL subscriptions (schema/types/live.ts), one async generator per open
 * subscription, fed by the process's LiveHub (src/live/hub.ts).
 *
 * Rights are the query's rights, checked when the stream starts, again (against a fresh reading of
 * the credential, through the auth cache that change notices keep true) before every event it
 * would send, and every RECHECK_MS while it is quiet: a revoked key, an expired token or a removed
 * role ends the stream with the contract's error within RECHECK_MS.
 */

/** How often a quiet stream reads its credential again (the bound on ending a stream whose rights went). */
export const RECHECK_MS = 5_000;
/** Events replayed to a reconnecting client at most; beyond, it is told to resynchronise. */
export const MAX_REPLAY = 1_000;
/** Ids remembered per stream to send an event once when a catch-up reads it again. */
const REMEMBERED_IDS = 10_000;
/** A catch-up reads back this far before the last event sent (transactions commit out of id order). */
const CATCH_UP_SLACK = 1_000n;
/** A stream whose reading failed because the database could not answer tries again after this. */
const RETRY_MS = 1_000;

/** The event a stream sends instead of what it cannot replay: reload, then follow the stream. */
export interface Resync {
  resync: true;
}

export const RESYNC: Resync = { resync: true };

/** A message to a stream's generator. */
type Item = { kind: 'event'; event: LiveEvent } | { kind: 'catchUp' } | { kind: 'check' } | { kind: 'moved' } | { kind: 'end' };

/** The messages of one stream, awaited one at a time; bounded (an overflow turns into a catch-up). */
class Inbox {
  #items: Item[] = [];
  #wake: (() => void) | undefined;
  static readonly MAX = 1_000;

  push(item: Item): void {
    if (this.#items.length >= Inbox.MAX) {
      this.#items = this.#items.filter((queued) => queued.kind !== 'event');
      item = { kind: 'catchUp' };
    }
    // Several moves or checks in a row are one.
    const previous = this.#items.at(-1);
    if (previous && previous.kind === item.kind && item.kind !== 'event') return;
    this.#items.push(item);
    this.#wake?.();
  }

  async next(): Promise<Item> {
    while (this.#items.length === 0) await new Promise<void>((resolve) => (this.#wake = resolve));
    this.#wake = undefined;
    return this.#items.shift()!;
  }
}

/**
 * A stream's generator whose return() (the client went away) ends it at once: an async
 * generator's own return() waits until the generator next yields, which a quiet stream may not do
 * for hours, holding its place against the bounds (src/live/live.ts) and its listener in the hub.
 */
function interruptible<T>(inbox: Inbox, generator: AsyncGenerator<T>): AsyncGenerator<T> {
  const iterator: AsyncGenerator<T> = {
    next: (...args) => generator.next(...args),
    throw: (error) => generator.throw(error),
    return: (value) => {
      inbox.push({ kind: 'end' });
      return generator.return(value);
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}

/**
 * Reads the credential again and replaces the context's rights with what it holds now; throws the
 * contract's refusal when it no longer authenticates, or when `allowed` says the rights went.
 */
async function recheck(ctx: RequestContext, allowed: () => boolean): Promise<void> {
  const current = await ctx.reauthenticate();
  if (!current.principal) throw new AppError('UNAUTHENTICATED');
  ctx.access = current.access;
  if (!allowed()) throw new AppError('FORBIDDEN', 'The rights this subscription needs were withdrawn.');
}

/**
 * A stream's rights check: `check(true)` reads the credential again; `check(false)` only when a
 * credential or right of the organisation changed since the last reading (change notices say so),
 * or when notices cannot be trusted.
 */
function rightsCheck(ctx: RequestContext, organisationId: string, allowed: () => boolean): (always: boolean) => Promise<void> {
  const live = ctx.runtime.live;
  let seen = live.rightsVersion(organisationId);
  return async (always) => {
    const version = live.rightsVersion(organisationId);
    if (!always && version !== null && version === seen) return;
    await recheck(ctx, allowed);
    seen = version;
  };
}

/** The Last-Event-ID a stream resumes after, or null when the client sent none. */
export function resumePoint(text: string | null | undefined): bigint | 'invalid' | null {
  if (text === null || text === undefined || text.trim() === '') return null;
  return /^\d{1,19}$/.test(text.trim()) ? BigInt(text.trim()) : 'invalid';
}

export interface TopicStream<T> {
  topic: string;
  /** Whether the caller may still follow this stream (checked against fresh rights). */
  allowed(): boolean;
  /** Whether this event belongs to this stream (filters narrower than the topic). */
  matches(event: LiveEvent): boolean;
  /** The payload of an event as the caller may see it; null skips it (gone, or not theirs). */
  payload(event: LiveEvent): Promise<T | null>;
}

/**
 * The events of one topic from now on, or after the client's Last-Event-ID (replayed from the
 * table while it keeps them, else a RESYNC first). Live events come in commit order; a catch-up
 * after lost notices reads the table back a little before the last event sent and skips what was
 * sent, so an event committed after one with a greater id is still sent, once.
 */
export function topicEvents<T>(ctx: RequestContext, stream: TopicStream<T>): AsyncGenerator<T | Resync> {
  const inbox = new Inbox();
  return interruptible(inbox, followTopic(ctx, stream, inbox));
}

async function* followTopic<T>(ctx: RequestContext, stream: TopicStream<T>, inbox: Inbox): AsyncGenerator<T | Resync> {
  const allowed = () => stream.allowed();
  const live = ctx.runtime.live;
  const organisationId = organisationOf(ctx).id;
  const release = live.admit(ctx);
  const stop = live.hub.listen(organisationId, stream.topic, {
    event: (event) => inbox.push({ kind: 'event', event }),
    catchUp: () => inbox.push({ kind: 'catchUp' }),
    end: () => inbox.push({ kind: 'end' }),
  });
  const timer = setInterval(() => inbox.push({ kind: 'check' }), RECHECK_MS);
  timer.unref();
  const sent = new Set<bigint>();
  // A catch-up reads from the last event sent, and never from before the stream started: the last
  // event the process had seen then.
  const floor = live.hub.lastSeen > 0n ? live.hub.lastSeen : await live.hub.latestId();
  let last = floor;
  const checkRights = rightsCheck(ctx, organisationId, allowed);
  /** What to send of an event: its payload when it is the stream's and not sent yet. */
  const deliver = async (event: LiveEvent): Promise<T | null> => {
    if (sent.has(event.id) || !stream.matches(event)) return null;
    await checkRights(false);
    const payload = await stream.payload(event);
    sent.add(event.id);
    if (sent.size > REMEMBERED_IDS) sent.delete(sent.values().next().value!);
    if (event.id > last) last = event.id;
    if (payload !== null) ctx.live.lastEventId = String(event.id);
    return payload;
  };
  /** The table's events after `after`, page by page (bounded by the replay window's rows). */
  async function* fromTable(after: bigint): AsyncGenerator<T> {
    for (let cursor = after; ;) {
      const events = await live.hub.eventsAfter(organisationId, stream.topic, cursor, 500);
      for (const event of events) {
        const payload = await deliver(event);
        if (payload !== null) yield payload;
      }
      if (events.length < 500) return;
      cursor = events.at(-1)!.id;
    }
  }
  try {
    if (!stream.allowed()) throw new AppError('FORBIDDEN');
    const resume = resumePoint(ctx.live.resumeAfter);
    if (resume !== null) {
      const missed = resume === 'invalid' || !(await live.hub.kept(organisationId, stream.topic, resume)) ? null : resume;
      if (missed === null || (await live.hub.eventsAfter(organisationId, stream.topic, missed, MAX_REPLAY + 1)).length > MAX_REPLAY) {
        ctx.live.lastEventId = undefined;
        yield RESYNC;
      } else {
        last = missed;
        yield* fromTable(missed);
      }
    }
    for (;;) {
      const item = await inbox.next();
      if (item.kind === 'end') return;
      try {
        if (item.kind === 'check') await checkRights(true);
        else if (item.kind === 'catchUp') yield* fromTable(last - CATCH_UP_SLACK > floor ? last - CATCH_UP_SLACK : floor);
        else if (item.kind === 'event') {
          const payload = await deliver(item.event);
          if (payload !== null) yield payload;
        }
      } catch (error) {
        // The database could not answer: the stream stays open and reads what it missed once it can.
        if (!isDatabaseUnavailable(error)) throw error;
        setTimeout(() => inbox.push({ kind: 'catchUp' }), RETRY_MS).unref();
      }
    }
  } finally {
    clearInterval(timer);
    stop();
    release();
  }
}

/**
 * The counters of one occurrence as they move: sent when the stream starts, then after each move,
 * at most every COUNTER_INTERVAL_MS (the hub coalesces); `read` is called once per move.
 */
export function counterEvents<T>(
  ctx: RequestContext,
  occurrenceId: string,
  allowed: () => boolean,
  read: () => Promise<T>,
): AsyncGenerator<T> {
  const inbox = new Inbox();
  return interruptible(inbox, followCounters(ctx, occurrenceId, allowed, read, inbox));
}

async function* followCounters<T>(
  ctx: RequestContext,
  occurrenceId: string,
  allowed: () => boolean,
  read: () => Promise<T>,
  inbox: Inbox,
): AsyncGenerator<T> {
  const live = ctx.runtime.live;
  const organisationId = organisationOf(ctx).id;
  const release = live.admit(ctx);
  const stop = live.hub.listenToCounters(organisationId, occurrenceId, {
    moved: () => inbox.push({ kind: 'moved' }),
    end: () => inbox.push({ kind: 'end' }),
  });
  const timer = setInterval(() => inbox.push({ kind: 'check' }), RECHECK_MS);
  timer.unref();
  try {
    if (!allowed()) throw new AppError('FORBIDDEN');
    yield await read();
    const checkRights = rightsCheck(ctx, organisationId, allowed);
    for (;;) {
      const item = await inbox.next();
      if (item.kind === 'end') return;
      try {
        await checkRights(item.kind === 'check');
        if (item.kind === 'moved') yield await read();
      } catch (error) {
        // The database could not answer: the counters are sent once it can.
        if (!isDatabaseUnavailable(error)) throw error;
        setTimeout(() => inbox.push({ kind: 'moved' }), RETRY_MS).unref();
      }
    }
  } finally {
    clearInterval(timer);
    stop();
    release();
  }
}
