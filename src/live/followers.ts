import type { RequestContext } from '../context.ts';
import { organisationOf } from '../context.ts';
import { AppError, isDatabaseUnavailable } from '../errors.ts';
import { within, type LiveEvent, type Narrowing, type TopicListener } from './hub.ts';
import { currentRights } from '../auth/current-rights.ts';
import { admitStream, MAX_REPLAY, RECHECK_MS, RESYNC, RETRY_MS, resumePoint, rightsCheck, type RightsCheck } from './streams.ts';
import { ProcessStopping, type Follower, type FollowerSink, type Resync } from './transport.ts';

/**
 * The topic streams of GraphQL subscriptions (orderChanged, webhookDeliveryChanged,
 * auditEntryAdded): one follower per open subscription, and one group per topic and narrowing in each
 * API process that hands the followers what the hub (src/live/hub.ts) tells it, in commit order.
 *
 * A thousand admin screens following one on-sale must not cost a thousand times each order: the
 * group reads an event's subject once, executes the subscription once per way of reading it (same
 * document, variables, organisation, version and rights: src/live/sse.ts) and hands the encoded
 * bytes to every follower that is up to date, which appends them to its socket's next write. That
 * is the fast path, taken by a follower when nothing is pending for it and the organisation's
 * rights have not moved since it last read its credential. Events whose reading ended together go
 * out together: a follower is handed them as one piece of bytes, and remembers them as a stretch
 * of the group's sequence (what a catch-up must not send again), not one by one.
 *
 * Anything else goes through the follower's own queue, one item at a time, in order: the replay
 * after Last-Event-ID, a catch-up after lost notices, the read of its credential again (when
 * rights moved, and every RECHECK_MS), events that came while any of those ran, and streams whose
 * payload depends on who reads it (audit entries). A revoked key, an expired token or a removed
 * role ends the stream with the contract's error before its next event, and within RECHECK_MS
 * while it is quiet.
 */

/** What a subscription field follows. */
export interface TopicStream<T> {
  topic: string;
  /** Which of the topic's events it follows (its arguments narrower than the topic). */
  narrowing: Narrowing;
  /** Whether the caller may still follow this stream (checked against fresh rights). */
  allowed(): boolean;
  /** The payload of an event as the caller may see it; null skips it (gone, or not theirs). */
  payload(event: LiveEvent): Promise<T | null>;
  /**
   * Whether `payload` reads the same for every caller allowed to follow the stream: then the group
   * reads it once for all its followers; else each follower reads its own.
   */
  shared: boolean;
}

/** Ids remembered per stream to send an event once when a catch-up reads it again (two generations of this many). */
const REMEMBERED_IDS = 5_000;
/** A catch-up reads back this far before the last event sent (transactions commit out of id order). */
const CATCH_UP_SLACK = 1_000n;
/**
 * Items queued for a follower (or events for a group) at most; beyond, the queued events turn into
 * one catch-up from the table.
 */
const MAX_QUEUED = 1_000;

type Item = { kind: 'event'; event: LiveEvent } | { kind: 'catchUp' } | { kind: 'check' };

/** How long, after the first way of reading an event is done, a group waits for the others (see #read). */
const SLOW_READING_GRACE_MS = 100;

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** Events whose subject a group reads ahead of the one it hands out (bounded: the pool is shared). */
const READ_AHEAD = 32;

/**
 * Events a group remembers handing out on its fast path, for its followers' catch-ups (which read
 * back CATCH_UP_SLACK ids); a follower remembers those it was handed as stretches of them, at most
 * MAX_STRETCHES (the oldest turn into ids it remembers one by one).
 */
const HANDED_OUT = 2 * REMEMBERED_IDS;
const MAX_STRETCHES = 256;

/** What reading an event came to: its subject (null: none to send) and its bytes per way of reading it. */
type Reading = { payload: unknown; bytes: Map<string, Uint8Array | null> };
/** Each follower reads the event itself, in its turn (a payload per reader, or a failed reading). */
const OWN_TURN = 'own turn';

/** An event in a group's queue, and what reading it came to once it ended. */
interface Queued {
  event: LiveEvent;
  reading?: Promise<void>;
  outcome?: Reading | typeof OWN_TURN;
}

/** The followers of one topic and narrowing in one process (see above). */
export class FollowerGroup implements TopicListener {
  readonly followers = new Set<TopicFollower<unknown>>();
  readonly #queue: Queued[] = [];
  #draining = false;
  /** The fast path's events in the order handed out, by sequence number (the last HANDED_OUT). */
  readonly #handedOut = new Map<number, number>();
  readonly #idsBySequence = new Float64Array(HANDED_OUT);
  #sequence = 0;

  constructor(
    /** Where the organisation's credentials and rights stand (src/live/live.ts `rightsVersion`). */
    readonly rightsVersion: (organisationId: string) => string | null,
    readonly organisationId: string,
    readonly stream: TopicStream<unknown>,
  ) {}

  event(event: LiveEvent): void {
    if (this.followers.size === 0 || !within(event, this.stream.narrowing)) return;
    if (this.#queue.length >= MAX_QUEUED) {
      // Reads this far behind (a database that does not answer): each follower reads the table instead.
      this.#queue.length = 0;
      return this.catchUp();
    }
    this.#queue.push({ event });
    if (!this.#draining) void this.#drain();
  }

  catchUp(): void {
    for (const follower of this.followers) follower.later({ kind: 'catchUp' });
  }

  /** The process is stopping: each stream's connection is dropped, for its client to reconnect elsewhere. */
  end(): void {
    for (const follower of this.followers) follower.stopping();
  }

  /** The sequence number under which the fast path handed out event `id`, while remembered. */
  sequenceOf(id: number): number | undefined {
    return this.#handedOut.get(id);
  }

  /** The event handed out under `sequence`, while remembered. */
  idAt(sequence: number): number | undefined {
    return sequence >= this.#sequence - HANDED_OUT && sequence < this.#sequence ? this.#idsBySequence[sequence % HANDED_OUT] : undefined;
  }

  /**
   * Hands out the events in commit order while the subjects of the next READ_AHEAD are read (an
   * on-sale's orders arrive faster than one database round trip each): the first, and with it every
   * one after it whose reading has ended too.
   */
  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      while (this.#queue.length > 0) {
        for (const queued of this.#queue.slice(0, READ_AHEAD)) queued.reading ??= this.#read(queued);
        await this.#queue[0]!.reading;
        let ready = 0;
        while (ready < this.#queue.length && this.#queue[ready]!.outcome) ready += 1;
        // Zero when an overflow emptied the queue meanwhile (its followers catch up from the table).
        if (ready > 0) this.#deliver(this.#queue.splice(0, ready));
      }
    } finally {
      this.#draining = false;
    }
  }

  /**
   * The event's subject for followers that share it, and its execution and bytes for each way they
   * read it now (src/live/sse.ts keeps the execution for those who join meanwhile): a failure is the
   * followers' own to meet, each in its turn.
   */
  async #read(queued: Queued): Promise<void> {
    if (!this.stream.shared) return void (queued.outcome = OWN_TURN);
    try {
      const payload = await this.stream.payload(queued.event);
      const bytes = new Map<string, Uint8Array | null>();
      if (payload !== null) {
        const encodings: Promise<void>[] = [];
        for (const follower of this.followers) {
          const key = follower.key;
          if (!follower.direct || key === '' || bytes.has(key)) continue;
          bytes.set(key, null);
          encodings.push(
            follower.encode(payload as object, queued.event.id).then(
              (encoded) => void bytes.set(key, encoded),
              () => undefined,
            ),
          );
        }
        // One way of reading it that takes long (a document reading much, rows locked) holds back
        // no other: once the first is done, the others get SLOW_READING_GRACE_MS; followers of
        // those not done by then read the event in their own turn. When all are slow, all wait.
        const all = Promise.all(encodings);
        if (encodings.length > 1) await Promise.race([all, Promise.race(encodings).then(() => delay(SLOW_READING_GRACE_MS))]);
        else await all;
      }
      queued.outcome = { payload, bytes };
    } catch {
      // Each follower reads it again in its turn, and waits for a database that cannot answer.
      queued.outcome = OWN_TURN;
    }
  }

  /**
   * Events whose reading ended, to every follower: at once to those up to date, as far as their way
   * of reading them has bytes for each; the rest through their queue, in order. Rights may have
   * moved, or a follower's check begun, while the events were read: those take them in their turn.
   */
  #deliver(batch: Queued[]): void {
    const first = this.#sequence;
    for (const { event } of batch) {
      const id = Number(event.id);
      const previous = this.#idsBySequence[this.#sequence % HANDED_OUT]!;
      if (this.#sequence >= HANDED_OUT && this.#handedOut.get(previous) === this.#sequence - HANDED_OUT) this.#handedOut.delete(previous);
      this.#idsBySequence[this.#sequence % HANDED_OUT] = id;
      this.#handedOut.set(id, this.#sequence);
      this.#sequence += 1;
    }
    const version = this.rightsVersion(this.organisationId);
    const shares = new Map<string, Share>();
    for (const follower of this.followers) {
      let taken = 0;
      // A follower that read some of these from the table already (a replay, a catch-up) takes
      // them through its queue, which sends each event once.
      if (follower.ready(version) && !follower.sentAnyOf(batch)) {
        let share = shares.get(follower.key);
        if (!share) shares.set(follower.key, (share = shareOf(batch, follower.key)));
        if (share.count > 0) follower.handed(this, first, share);
        taken = share.count;
      }
      for (let index = taken; index < batch.length; index += 1) follower.later({ kind: 'event', event: batch[index]!.event });
    }
  }
}

/** The leading events of a batch that followers reading them one way take at once, and their bytes together. */
interface Share {
  count: number;
  /** The greatest id among them. */
  last: bigint;
  bytes: Uint8Array | null;
}

function shareOf(batch: Queued[], key: string): Share {
  const parts: Uint8Array[] = [];
  let count = 0;
  let last = 0n;
  for (const { event, outcome } of batch) {
    if (outcome === undefined || outcome === OWN_TURN) break;
    if (outcome.payload !== null) {
      const bytes = outcome.bytes.get(key);
      if (!bytes) break;
      parts.push(bytes);
    }
    count += 1;
    if (event.id > last) last = event.id;
  }
  return { count, last, bytes: parts.length === 0 ? null : parts.length === 1 ? parts[0]! : Buffer.concat(parts) };
}

/** One open topic subscription (see above). */
export class TopicFollower<T> implements Follower, AsyncIterable<T | Resync> {
  /** How events read for this follower (its sink's key), as of its last reading of its credential. */
  key = '';
  readonly #ctx: RequestContext;
  readonly #stream: TopicStream<T>;
  readonly #queue: Item[] = [];
  /** Whether its queue is being worked through (or the stream is starting): events wait their turn. */
  #busy = true;
  #ended = false;
  #sink: FollowerSink<T> | undefined;
  /** Ids sent through its queue (as numbers: hashed faster than bigints, and ids stay far below 2^53); the fast path's are stretches. */
  #sent = new Set<number>();
  #sentBefore = new Set<number>();
  /** What its group's fast path handed it: pairs of first and last sequence number (FollowerGroup). */
  #stretches: number[] = [];
  #group: FollowerGroup | undefined;
  /** A catch-up reads from the last event sent, and never from before the stream started. */
  #floor = 0n;
  #last = 0n;
  #rights: RightsCheck | undefined;
  #cleanups: (() => void)[] = [];

  constructor(ctx: RequestContext, stream: TopicStream<T>, release: () => void) {
    this.#ctx = ctx;
    this.#stream = stream;
    this.#cleanups.push(release);
  }

  /** Whether the group may hand it an event's bytes now (nothing pending, rights unmoved since its last reading). */
  ready(version: string | null): boolean {
    return (
      !this.#busy &&
      !this.#ended &&
      version !== null &&
      this.#rights?.version === version &&
      this.#stream.shared &&
      this.#sink?.direct === true
    );
  }

  /** Whether its events are encoded for the client by its sink (server-sent events), so shareable. */
  get direct(): boolean {
    return this.#sink?.direct === true;
  }

  encode(payload: object, id: bigint): Promise<Uint8Array> {
    return this.#sink!.encode(payload, id);
  }

  /** Whether it sent any of these events through its queue (read from the table) already. */
  sentAnyOf(batch: Queued[]): boolean {
    if (this.#sent.size === 0 && this.#sentBefore.size === 0) return false;
    return batch.some(({ event }) => this.#sent.has(Number(event.id)) || this.#sentBefore.has(Number(event.id)));
  }

  /** The group's fast path: the events it handed out from sequence `first` on, `share.count` of them, as one piece. */
  handed(group: FollowerGroup, first: number, share: Share): void {
    this.#group = group;
    const stretches = this.#stretches;
    if (stretches.length > 0 && stretches[stretches.length - 1] === first - 1) stretches[stretches.length - 1] = first + share.count - 1;
    else {
      stretches.push(first, first + share.count - 1);
      if (stretches.length > 2 * MAX_STRETCHES) this.#forgetOldestStretch();
    }
    if (share.last > this.#last) this.#last = share.last;
    if (share.bytes) this.#sink!.write(share.bytes);
  }

  later(item: Item): void {
    if (this.#ended) return;
    if (this.#queue.length >= MAX_QUEUED) {
      const rest = this.#queue.filter((queued) => queued.kind !== 'event');
      this.#queue.length = 0;
      this.#queue.push(...rest);
      item = { kind: 'catchUp' };
    }
    // Several checks or catch-ups in a row are one.
    const previous = this.#queue.at(-1);
    if (previous && previous.kind === item.kind && item.kind !== 'event') return;
    this.#queue.push(item);
    if (!this.#busy) void this.#work();
  }

  start(sink: FollowerSink<unknown>): void {
    this.#sink = sink;
    void this.#begin();
  }

  /** Its process is stopping (see ProcessStopping). */
  stopping(): void {
    this.#fail(new ProcessStopping());
  }

  close(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const cleanup of this.#cleanups.splice(0)) cleanup();
    this.#sink?.end();
  }

  async #begin(): Promise<void> {
    const ctx = this.#ctx;
    const live = ctx.runtime.live;
    const organisationId = organisationOf(ctx).id;
    try {
      await currentRights(ctx);
      // The client went away meanwhile: nothing to join or time.
      if (this.#ended) return;
      if (!this.#stream.allowed()) throw new AppError('FORBIDDEN');
      this.#rights = rightsCheck(ctx, organisationId, () => this.#stream.allowed());
      this.key = this.#sink!.key();
      // Listening before the replay: what commits meanwhile waits in the queue.
      this.#cleanups.push(follow(ctx, organisationId, this.#stream, this));
      const timer = setInterval(() => this.later({ kind: 'check' }), RECHECK_MS);
      timer.unref();
      this.#cleanups.push(() => clearInterval(timer));
      this.#floor = live.hub.lastSeen > 0n ? live.hub.lastSeen : await live.hub.latestId();
      this.#last = this.#floor;
      const resume = resumePoint(ctx.live.resumeAfter);
      if (resume !== null) {
        const topic = this.#stream.topic;
        const missed = resume === 'invalid' || !(await live.hub.kept(organisationId, topic, resume)) ? null : resume;
        // What this stream missed, not what its topic did: a stream of one account's entries is
        // not told to resynchronise because others' came meanwhile.
        const replay =
          missed === null ? [] : await live.hub.eventsAfter(organisationId, topic, this.#stream.narrowing, missed, MAX_REPLAY + 1);
        if (missed === null || replay.length > MAX_REPLAY) {
          await this.#sink!.send(RESYNC, null);
        } else {
          // The replay is what was just read: what commits after it comes through the queue.
          this.#last = missed;
          for (const event of replay) {
            if (this.#ended) break;
            await this.#deliver(event);
          }
        }
      }
    } catch (error) {
      return this.#fail(error);
    }
    await this.#work();
  }

  /** Works through the queue in order; the fast path is open again once it is empty. */
  async #work(): Promise<void> {
    this.#busy = true;
    try {
      for (let item = this.#queue.shift(); item && !this.#ended; item = this.#queue.shift()) {
        try {
          if (item.kind === 'check') await this.#checkRights(true);
          else if (item.kind === 'catchUp') {
            await this.#fromTable(this.#last - CATCH_UP_SLACK > this.#floor ? this.#last - CATCH_UP_SLACK : this.#floor);
          } else await this.#deliver(item.event);
        } catch (error) {
          // The database could not answer: the stream stays open and reads what it missed once it can.
          if (!isDatabaseUnavailable(error)) return this.#fail(error);
          setTimeout(() => this.later({ kind: 'catchUp' }), RETRY_MS).unref();
        }
      }
    } finally {
      this.#busy = false;
    }
  }

  /** One event through the queue: its rights checked when they moved, its payload read, then sent. */
  async #deliver(event: LiveEvent): Promise<void> {
    if (this.#wasSent(event.id) || !within(event, this.#stream.narrowing)) return;
    await this.#checkRights(false);
    const payload = await this.#stream.payload(event);
    if (this.#ended) return;
    this.#remember(event.id);
    if (payload !== null) await this.#sink!.send(payload, event.id);
  }

  /** The rights check; after a fresh reading of the credential, how events read for it may differ. */
  async #checkRights(always: boolean): Promise<void> {
    if (await this.#rights!.check(always)) this.key = this.#sink!.key();
  }

  /** The table's events after `after`, page by page (bounded by the replay window's rows). */
  async #fromTable(after: bigint): Promise<void> {
    const hub = this.#ctx.runtime.live.hub;
    const organisationId = organisationOf(this.#ctx).id;
    for (let cursor = after; !this.#ended;) {
      const events = await hub.eventsAfter(organisationId, this.#stream.topic, this.#stream.narrowing, cursor, 500);
      for (const event of events) await this.#deliver(event);
      if (events.length < 500) return;
      cursor = events.at(-1)!.id;
    }
  }

  #remember(id: bigint): void {
    if (id > this.#last) this.#last = id;
    this.#rememberSent(Number(id));
  }

  #rememberSent(id: number): void {
    this.#sent.add(id);
    if (this.#sent.size > REMEMBERED_IDS) {
      this.#sentBefore = this.#sent;
      this.#sent = new Set();
    }
  }

  #wasSent(id: bigint): boolean {
    const number = Number(id);
    if (this.#sent.has(number) || this.#sentBefore.has(number)) return true;
    const sequence = this.#group?.sequenceOf(number);
    if (sequence === undefined) return false;
    const stretches = this.#stretches;
    for (let index = stretches.length - 2; index >= 0; index -= 2) {
      if (sequence >= stretches[index]! && sequence <= stretches[index + 1]!) return true;
    }
    return false;
  }

  /** Too many stretches (a follower often behind): the oldest turns into the ids it holds. */
  #forgetOldestStretch(): void {
    const [first, last] = this.#stretches.splice(0, 2) as [number, number];
    for (let sequence = first; sequence <= last; sequence += 1) {
      const id = this.#group!.idAt(sequence);
      // Handed out before #last moved past them: only the id is kept.
      if (id !== undefined) this.#rememberSent(id);
    }
  }

  #fail(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const cleanup of this.#cleanups.splice(0)) cleanup();
    this.#sink?.end(error);
  }

  /**
   * The events as an async iterator, for transports that consume the subscription's source stream
   * themselves (Yoga's multipart answer); server-sent events start the follower with their own sink.
   */
  [Symbol.asyncIterator](): AsyncIterator<T | Resync> {
    const queued: (T | Resync)[] = [];
    let finished = false;
    let failure: unknown;
    let wake: (() => void) | undefined;
    let taken: (() => void) | undefined;
    const sink: FollowerSink<T> = {
      direct: false,
      key: () => '',
      encode: () => Promise.reject(new Error('not a direct sink')),
      write: () => undefined,
      send: async (payload) => {
        // A consumer slower than the events holds the follower back (its queue turns into a catch-up).
        while (queued.length >= 100 && !finished) await new Promise<void>((resolve) => (taken = resolve));
        queued.push(payload);
        wake?.();
      },
      end: (error) => {
        finished = true;
        failure = error instanceof ProcessStopping ? undefined : error;
        wake?.();
        taken?.();
      },
    };
    let started = false;
    const iterator: AsyncIterator<T | Resync> = {
      next: async () => {
        if (!started) {
          started = true;
          this.start(sink);
        }
        while (queued.length === 0 && !finished) await new Promise<void>((resolve) => (wake = resolve));
        if (queued.length > 0) {
          const value = queued.shift()!;
          taken?.();
          return { done: false, value };
        }
        // What ended the stream: the contract's error (an AppError) or a failure to surface as it was.
        if (failure !== undefined) throw failure instanceof Error ? failure : new Error('the stream failed', { cause: failure });
        return { done: true, value: undefined };
      },
      return: () => {
        this.close();
        return Promise.resolve({ done: true, value: undefined });
      },
    };
    return iterator;
  }
}

const groups = new WeakMap<object, Map<string, { group: FollowerGroup; stop: () => void }>>();

/**
 * Joins `follower` to the group of its organisation, topic and narrowing in its process, which
 * listens to the process's hub while it has followers; the answer leaves it.
 */
function follow(ctx: RequestContext, organisationId: string, stream: TopicStream<unknown>, follower: TopicFollower<unknown>): () => void {
  const live = ctx.runtime.live;
  let ofProcess = groups.get(live);
  if (!ofProcess) groups.set(live, (ofProcess = new Map<string, { group: FollowerGroup; stop: () => void }>()));
  const key = `${organisationId} ${stream.topic} ${stream.narrowing.accountId ?? ''} ${stream.narrowing.eventId ?? ''} ${stream.shared}`;
  let entry = ofProcess.get(key);
  if (!entry) {
    const group = new FollowerGroup((id) => live.rightsVersion(id), organisationId, stream);
    entry = { group, stop: live.hub.listen(organisationId, stream.topic, group) };
    ofProcess.set(key, entry);
  }
  const joined = entry;
  const all = ofProcess;
  joined.group.followers.add(follower);
  return () => {
    joined.group.followers.delete(follower);
    if (joined.group.followers.size === 0 && all.get(key) === joined) {
      joined.stop();
      all.delete(key);
    }
  };
}

/** The stream of a topic subscription field: its follower, which the transport starts (see Follower). */
export async function topicEvents<T>(ctx: RequestContext, stream: TopicStream<T>): Promise<TopicFollower<T>> {
  const follower = new TopicFollower(ctx, stream, await admitStream(ctx));
  ctx.live.follower = follower;
  return follower;
}
