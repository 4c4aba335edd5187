import type { RequestContext } from '../context.ts';
import { organisationOf } from '../context.ts';
import { currentRights, judgeAgain, rightsMoved } from '../auth/current-rights.ts';
import { AppError, isDatabaseUnavailable } from '../errors.ts';
import { ProcessStopping, type Resync } from './transport.ts';

/**
 * What the streams of GraphQL subscriptions (schema/types/live.ts) share: their rights check, the
 * resume point, and the counter streams (one async generator per open subscription, fed by the
 * process's LiveHub, src/live/hub.ts). Topic streams are src/live/followers.ts.
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
/** A stream whose reading failed because the database could not answer tries again after this. */
export const RETRY_MS = 1_000;

export type { Resync };

export const RESYNC: Resync = { resync: true };

/** A message to a stream's generator. */
type Item = { kind: 'check' } | { kind: 'moved' } | { kind: 'end' } | { kind: 'stopping' };

/** The messages of one stream, awaited one at a time (bounded: repeats coalesce). */
class Inbox {
  #items: Item[] = [];
  #wake: (() => void) | undefined;

  push(item: Item): void {
    // Several moves or checks in a row are one.
    const previous = this.#items.at(-1);
    if (previous && previous.kind === item.kind) return;
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
function interruptible<T>(inbox: Inbox, generator: AsyncGenerator<T>, release: () => void): AsyncGenerator<T> {
  const iterator: AsyncGenerator<T> = {
    next: (...args) => generator.next(...args),
    throw: (error) => generator.throw(error),
    return: (value) => {
      inbox.push({ kind: 'end' });
      // A generator given up before it started never runs its finally: its place is released here.
      release();
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
  await judgeAgain(ctx);
  if (!allowed()) throw new AppError('FORBIDDEN', 'The rights this subscription needs were withdrawn.');
}

/** A rights version no organisation has: rights read before a change, to be read again. */
const STALE = 'stale';

/** A stream's rights check (see rightsCheck). */
export interface RightsCheck {
  /** The organisation's rights version at the last reading of the credential (null: notices not trusted). */
  readonly version: string | null;
  /**
   * `check(true)` reads the credential again; `check(false)` only when rights moved since the last
   * reading. Answers whether it read again (the context's rights may then have changed).
   */
  check(always: boolean): Promise<boolean>;
}

/**
 * A stream's rights check: `check(true)` reads the credential again; `check(false)` only when a
 * credential or right of the organisation changed since the last reading (change notices say so),
 * or when notices cannot be trusted.
 */
export function rightsCheck(ctx: RequestContext, organisationId: string, allowed: () => boolean): RightsCheck {
  const live = ctx.runtime.live;
  // Rights read before a change that this process has forgotten already (the stream started after
  // it) count as unread: the first event reads them again.
  let seen = rightsMoved(ctx) ? STALE : live.rightsVersion(organisationId);
  return {
    get version() {
      return seen;
    },
    async check(always) {
      const version = live.rightsVersion(organisationId);
      if (!always && version !== null && version === seen) return false;
      await recheck(ctx, allowed);
      seen = version;
      return true;
    },
  };
}

/** The greatest id a live event can have (a PostgreSQL bigint). */
const MAX_EVENT_ID = 9_223_372_036_854_775_807n;

/** The Last-Event-ID a stream resumes after, or null when the client sent none; an id no event can have is invalid (a resync). */
export function resumePoint(text: string | null | undefined): bigint | 'invalid' | null {
  if (text === null || text === undefined || text.trim() === '') return null;
  if (!/^\d{1,19}$/.test(text.trim())) return 'invalid';
  const id = BigInt(text.trim());
  return id <= MAX_EVENT_ID ? id : 'invalid';
}

/**
 * Counts a subscription's stream among the bounds (src/live/live.ts) as the subscription starts: a
 * refusal is the answer (429 with Retry-After), not the stream's only event. The answer releases
 * it, as the stream ends; and in any case once its HTTP answer is over, for a stream never started
 * (its client gone before the answer).
 */
export async function admitStream(ctx: RequestContext): Promise<() => void> {
  const release = await ctx.runtime.live.admit(ctx);
  ctx.live.whenClosed?.(release);
  return release;
}

/**
 * The counters of one occurrence as they move: sent when the stream starts, then after each move,
 * at most every COUNTER_INTERVAL_MS (the hub coalesces); `read` is called once per move.
 */
export async function counterEvents<T>(
  ctx: RequestContext,
  occurrenceId: string,
  allowed: () => boolean,
  read: () => Promise<T>,
): Promise<AsyncGenerator<T>> {
  const release = await admitStream(ctx);
  const inbox = new Inbox();
  return interruptible(inbox, followCounters(ctx, occurrenceId, allowed, read, inbox, release), release);
}

async function* followCounters<T>(
  ctx: RequestContext,
  occurrenceId: string,
  allowed: () => boolean,
  read: () => Promise<T>,
  inbox: Inbox,
  release: () => void,
): AsyncGenerator<T> {
  const live = ctx.runtime.live;
  const organisationId = organisationOf(ctx).id;
  let stop = () => {};
  const timer = setInterval(() => inbox.push({ kind: 'check' }), RECHECK_MS);
  timer.unref();
  try {
    // Inside: a hub that refuses (its process stopping) still releases the stream's place.
    stop = live.hub.listenToCounters(organisationId, occurrenceId, {
      moved: () => inbox.push({ kind: 'moved' }),
      end: () => inbox.push({ kind: 'stopping' }),
    });
    await currentRights(ctx);
    if (!allowed()) throw new AppError('FORBIDDEN');
    yield await read();
    const rights = rightsCheck(ctx, organisationId, allowed);
    for (;;) {
      const item = await inbox.next();
      if (item.kind === 'end') return;
      if (item.kind === 'stopping') throw new ProcessStopping();
      try {
        await rights.check(item.kind === 'check');
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
