/**
 * What a subscription's transport (src/live/sse.ts) and its follower (src/live/followers.ts) see
 * of each other, and what the request context carries between them (src/context.ts).
 */

/** The event a stream sends instead of what it cannot replay: reload, then follow the stream. */
export interface Resync {
  resync: true;
}

/**
 * What a stream ends with when its process stops: its connection is dropped rather than completed,
 * since a client takes a completed stream as the end of its subscription, and one dropped as a
 * reason to reconnect (to another process, with Last-Event-ID).
 */
export class ProcessStopping extends Error {
  constructor() {
    super('the API process is stopping');
  }
}

/** Where a follower's events go: a server-sent event stream (src/live/sse.ts) or an async iterator. */
export interface FollowerSink<T> {
  /** Whether events are encoded for the client here, so a group may hand the same bytes to many. */
  readonly direct: boolean;
  /** What decides how an event reads for this follower (equal keys read it alike); direct sinks only. */
  key(): string;
  /** One event encoded for this follower's key; direct sinks only. */
  encode(payload: object, id: bigint): Promise<Uint8Array>;
  /** Appends encoded bytes (the group's fast path); direct sinks only. */
  write(bytes: Uint8Array): void;
  /** One event (or RESYNC, without an id), in order. */
  send(payload: T | Resync, id: bigint | null): Promise<void>;
  /** The stream ends: with the contract's error, completed, or dropped (ProcessStopping). */
  end(error?: unknown): void;
}

/** A subscription's follower as its transport sees it (RequestContext `live.follower`). */
export interface Follower {
  /** Starts streaming into `sink`; the sink is told when it ends. */
  start(sink: FollowerSink<unknown>): void;
  /** The client went away: ends the stream at once. */
  close(): void;
}
