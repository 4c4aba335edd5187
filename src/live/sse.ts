import { PassThrough } from 'node:stream';
import { createSourceEventStream, execute, GraphQLError, type DocumentNode, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Access } from '../auth/permissions.ts';
import type { Response } from 'express';
import type { RequestContext } from '../context.ts';
import { ProcessStopping, type Follower, type FollowerSink } from './transport.ts';
import { RESYNC } from './streams.ts';
import { whenClosed } from '../http/closed.ts';
import { negotiatedMediaType, SUBSCRIPTION_MEDIA_TYPES } from '../graphql/media-types.ts';

/**
 * Subscriptions answered as server-sent events in the GraphQL-over-SSE protocol's "distinct
 * connections" mode (what graphql-sse's client and an EventSource speak): `event: next` with a
 * result, `event: complete` at the end. Yoga's own processor is replaced for subscriptions so that
 *
 * - every event carries its SSE `id` (the live event's id, src/live/streams.ts), which a client
 *   sends back as Last-Event-ID to resume;
 * - a stream that ends with an error (rights withdrawn, key revoked) sends the error as its last
 *   result and completes, instead of dropping the connection (which a client would retry at once);
 * - a quiet stream gets a comment line every LIVE_HEARTBEAT_INTERVAL, so proxies keep it open;
 * - a topic stream (src/live/followers.ts) is written by its follower straight into the response,
 *   its events gathered into one write every LIVE_FLUSH_INTERVAL: a thousand streams following one
 *   on-sale cost a few writes a second each, not one per event each. A client that reads slower than its
 *   events come, MAX_UNSENT_BYTES behind, is disconnected: it resumes with Last-Event-ID.
 */
export function liveEventStreams(
  { heartbeatMs, flushMs }: { heartbeatMs: number; flushMs: number },
  mask: (error: unknown) => GraphQLError,
): Plugin<RequestContext> {
  const flushes = new Flushes(flushMs);
  return {
    onResultProcess(payload) {
      const { result } = payload;
      if (typeof result !== 'object' || result === null) return;
      const res = (payload.serverContext as unknown as { res: Response }).res;
      // A subscription that could not start because its process is stopping: its connection is
      // dropped, as open streams' are, so its client reconnects to another process rather than
      // being told of an error (test/live/stream-places.test.ts).
      if (!(Symbol.asyncIterator in result)) {
        if (!isSubscriptionRequest(payload.request) || !(result as ExecutionResult).errors?.some(stoppedBy)) return;
        payload.setResultProcessor((_result, fetchAPI) => {
          res.destroy();
          return new fetchAPI.Response(null, { status: 503 });
        }, 'text/event-stream');
        return;
      }
      // A stream here was asked as an event stream (eventStreamsOnly, below).
      const ctx = res.locals.ctx as RequestContext;
      const { follower, args } = ctx.live;
      payload.setResultProcessor(
        (results, fetchAPI) =>
          follower && args
            ? followerStream(follower, args, results as AsyncIterable<unknown>, fetchAPI, res, { heartbeatMs, flushes }, mask)
            : eventStream(results as AsyncIterable<ExecutionResult>, fetchAPI, res, heartbeatMs, mask),
        'text/event-stream',
      );
    },
  };
}

const subscriptionRequests = new WeakSet<Request>();

/** Whether `request` asked for a subscription (what it may be answered as: SUBSCRIPTION_MEDIA_TYPES). */
export function isSubscriptionRequest(request: Request): boolean {
  return subscriptionRequests.has(request);
}

/**
 * A subscription is answered as an event stream only. One whose Accept names no event stream is
 * refused 406 NOT_ACCEPTABLE before anything else runs: nothing is read, nothing charged to the
 * cost budget, no place taken among the credential's streams (test/live/subscriptions.test.ts).
 * Placed before the cost limits.
 */
export function eventStreamsOnly(): Plugin<RequestContext> {
  return {
    onSubscribe({ args, setResultAndStopExecution }) {
      const request = (args.contextValue as { request?: Request }).request;
      if (!request) return;
      subscriptionRequests.add(request);
      if (negotiatedMediaType(request.headers.get('accept'), SUBSCRIPTION_MEDIA_TYPES)) return;
      const error = new GraphQLError(
        `A subscription is answered as ${SUBSCRIPTION_MEDIA_TYPES.join(' or ')}; the request's Accept header names none of them.`,
        {
          extensions: {
            code: 'NOT_ACCEPTABLE',
            requestId: (args.contextValue as RequestContext).requestId,
            // spec: false: the answer's status whatever the client accepts.
            http: { status: 406, headers: { Accept: SUBSCRIPTION_MEDIA_TYPES.join(', ') }, spec: false },
          },
        },
      );
      setResultAndStopExecution({ errors: [error] });
    },
  };
}

type FetchAPI = { ReadableStream: typeof ReadableStream; Response: typeof globalThis.Response; TextEncoder: typeof TextEncoder };

const HEADERS = { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'Content-Encoding': 'none' };
const HEARTBEAT = Buffer.from(':\n\n');
const COMPLETE = Buffer.from('event: complete\ndata:\n\n');
/** A client this far behind its stream (bytes written but not yet taken by its socket) is disconnected. */
export const MAX_UNSENT_BYTES = 4 * 1024 * 1024;

/** The process's flushes: every `intervalMs` while some stream has bytes to send, all of them. */
class Flushes {
  readonly #due = new Set<() => void>();
  #timer: NodeJS.Timeout | undefined;
  /** While the due flushes run: the pieces joined so far, by their first, and the writes framed so far. */
  #joined: Map<Uint8Array, { parts: Uint8Array[]; bytes: Uint8Array }> | undefined;
  #framed: Map<Uint8Array, Buffer> | undefined;

  constructor(readonly intervalMs: number) {}

  /** Runs `flush` at the next of them. */
  soon(flush: () => void): void {
    this.#due.add(flush);
    if (this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const due = [...this.#due];
      this.#due.clear();
      this.#joined = new Map();
      this.#framed = new Map();
      try {
        for (const run of due) run();
      } finally {
        this.#joined = undefined;
        this.#framed = undefined;
      }
    }, this.intervalMs);
  }

  /**
   * `parts` as one write. Streams that follow alike were handed the very same pieces since their
   * last write (src/live/followers.ts): within one round of flushes they share one copy of them.
   */
  join(parts: Uint8Array[]): Uint8Array {
    if (parts.length === 1) return parts[0]!;
    const joined = this.#joined;
    const known = joined?.get(parts[0]!);
    if (known && known.parts.length === parts.length && known.parts.every((part, index) => part === parts[index])) return known.bytes;
    const bytes = Buffer.concat(parts);
    joined?.set(parts[0]!, { parts, bytes });
    return bytes;
  }

  /** `bytes` as one chunk of a chunked answer's body (RFC 9112, 7.1), framed once for the streams that write them. */
  framed(bytes: Uint8Array): Buffer {
    let chunk = this.#framed?.get(bytes);
    if (!chunk) {
      chunk = Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, CRLF]);
      this.#framed?.set(bytes, chunk);
    }
    return chunk;
  }
}

const CRLF = Buffer.from('\r\n');

/** A topic stream's response: its follower writes encoded events into it (see above). */
function followerStream(
  follower: Follower,
  args: ExecutionArgs,
  results: AsyncIterable<unknown>,
  fetchAPI: FetchAPI,
  res: Response,
  { heartbeatMs, flushes }: { heartbeatMs: number; flushes: Flushes },
  mask: (error: unknown) => GraphQLError,
): globalThis.Response {
  const body = new PassThrough();
  let pending: Uint8Array[] = [];
  let lastWrite = Date.now();
  let finished = false;
  const socket = res.socket;
  /**
   * Whether a write may go straight to the socket, framed as the answer's chunked body frames it:
   * once the head has gone and nothing written before waits in the body's pipe or the response.
   * A thousand streams' flushes then skip both, what each write cost beyond the socket's own. Once
   * so, it stays so: nothing else writes to the answer until its end.
   */
  let wentStraight = false;
  const straight = () =>
    socket !== null &&
    !socket.destroyed &&
    (wentStraight ||=
      res.headersSent &&
      (res as unknown as { chunkedEncoding?: boolean }).chunkedEncoding === true &&
      body.readableLength === 0 &&
      body.writableLength === 0 &&
      res.writableLength === socket.writableLength);
  const flush = () => {
    if (pending.length === 0 || body.destroyed) return;
    const chunk = flushes.join(pending);
    pending = [];
    lastWrite = Date.now();
    if (body.writableLength + body.readableLength + (socket?.writableLength ?? 0) > MAX_UNSENT_BYTES) {
      (res.locals.ctx as RequestContext).logger.warn(
        'a subscription client read slower than its events came: disconnected (it resumes with Last-Event-ID)',
      );
      res.destroy();
      return;
    }
    if (straight()) socket!.write(flushes.framed(chunk));
    else body.write(chunk);
  };
  const append = (bytes: Uint8Array) => {
    if (finished) return;
    pending.push(bytes);
    if (pending.length === 1) flushes.soon(flush);
  };
  // Due one interval after the last write, so no silence lasts longer (and a busy stream writes none).
  let heartbeat: NodeJS.Timeout;
  const beat = () => {
    const due = lastWrite + heartbeatMs - Date.now();
    if (due > 0) heartbeat = setTimeout(beat, due);
    else {
      // With events pending, their flush (within LIVE_FLUSH_INTERVAL) is the write.
      if (pending.length === 0) {
        pending.push(HEARTBEAT);
        flush();
      }
      heartbeat = setTimeout(beat, heartbeatMs);
    }
    heartbeat.unref();
  };
  heartbeat = setTimeout(beat, heartbeatMs);
  heartbeat.unref();
  const stop = () => {
    finished = true;
    clearTimeout(heartbeat);
    // Yoga's wrappers of the subscription's source end with it (the follower was never iterated).
    void results[Symbol.asyncIterator]().return?.();
  };
  const encode = async (payload: object, id: bigint | null) =>
    encodedEvent(await executedFor(args, payload), id === null ? undefined : String(id), mask);
  const sink: FollowerSink<unknown> = {
    direct: true,
    key: () => executionKey(args),
    encode,
    write: append,
    send: async (payload, id) => append(await encode(payload as object, id)),
    end: (error) => {
      if (finished) return;
      if (error instanceof ProcessStopping) {
        // The events pending are written, then the connection ends without the answer's end (what
        // did not reach the client it reads again after Last-Event-ID).
        flush();
        stop();
        return void (socket && !socket.destroyed ? socket.end() : res.destroy());
      }
      if (error !== undefined) pending.push(encodedEvent({ errors: [mask(error)] }, undefined, mask));
      pending.push(COMPLETE);
      flush();
      stop();
      body.end();
    },
  };
  const closed = () => {
    if (!finished) stop();
    follower.close();
  };
  body.on('close', closed);
  // A client gone before the answer was sent never reads the body: its end is the response's.
  whenClosed(res, closed);
  // Headers go out with the first bytes: a client knows at once the stream is open.
  body.write(HEARTBEAT);
  follower.start(sink);
  return new fetchAPI.Response(body as unknown as BodyInit, { status: 200, headers: HEADERS });
}

/** A counter stream's response: the results of its generator, as they come. */
function eventStream(
  results: AsyncIterable<ExecutionResult>,
  fetchAPI: FetchAPI,
  res: Response,
  heartbeatMs: number,
  mask: (error: unknown) => GraphQLError,
): globalThis.Response {
  const encoder = new fetchAPI.TextEncoder();
  const iterator = results[Symbol.asyncIterator]();
  let heartbeat: NodeJS.Timeout | undefined;
  // A client gone before the answer was sent never reads the body: its end is the response's.
  whenClosed(res, () => {
    clearInterval(heartbeat);
    void iterator.return?.();
  });
  // The process is stopping: the connection is dropped, not completed, for the client to reconnect.
  const drop = () => {
    clearInterval(heartbeat);
    res.destroy();
  };
  const body = new fetchAPI.ReadableStream<Uint8Array>({
    start(controller) {
      // Headers go out with the first bytes: a client knows at once the stream is open.
      controller.enqueue(encoder.encode(':\n\n'));
      heartbeat = setInterval(() => {
        if (controller.desiredSize === null) return clearInterval(heartbeat);
        if (controller.desiredSize > 0) controller.enqueue(encoder.encode(':\n\n'));
      }, heartbeatMs);
      heartbeat.unref();
    },
    async pull(controller) {
      const send = (result: ExecutionResult) => controller.enqueue(encodedEvent(result, undefined, mask));
      const complete = () => {
        clearInterval(heartbeat);
        controller.enqueue(encoder.encode('event: complete\ndata:\n\n'));
        controller.close();
      };
      try {
        const next = await iterator.next();
        if (next.done) return complete();
        // The error masking hands a stop on as a result (see below).
        if (next.value.errors?.some(stoppedBy)) return drop();
        send(next.value);
      } catch (error) {
        if (stoppedBy(error)) return drop();
        send({ errors: [mask(error)] });
        complete();
      }
    },
    async cancel() {
      clearInterval(heartbeat);
      await iterator.return?.();
    },
  });
  return new fetchAPI.Response(body, { status: 200, headers: HEADERS });
}

/** Whether a stream ended because its process stops: ProcessStopping itself, or as the pipeline's error masking passed it on. */
function stoppedBy(error: unknown): boolean {
  return error instanceof ProcessStopping || (error instanceof GraphQLError && error.originalError instanceof ProcessStopping);
}

const encoded = new WeakMap<ExecutionResult, { id: string | undefined; bytes: Uint8Array }>();

/** A result as an SSE event, encoded once when streams share it (sharedExecution): they send the same bytes. */
function encodedEvent(result: ExecutionResult, id: string | undefined, mask: (error: unknown) => GraphQLError): Uint8Array {
  const known = encoded.get(result);
  if (known && known.id === id) return known.bytes;
  const bytes = Buffer.from(`${id ? `id: ${id}\n` : ''}event: next\ndata: ${serialised(result, mask)}\n\n`);
  encoded.set(result, { id, bytes });
  return bytes;
}

/** A result as JSON, its errors masked as the pipeline masks them, without the HTTP-only parts of their extensions. */
function serialised(result: ExecutionResult, mask: (error: unknown) => GraphQLError): string {
  if (!result.errors?.length) return JSON.stringify(result);
  return JSON.stringify({
    ...result,
    errors: result.errors.map((error) => {
      const masked = mask(error).toJSON();
      const { http: _http, ...extensions } = masked.extensions ?? {};
      return { ...masked, extensions };
    }),
  });
}

/**
 * One execution per event for the streams of a process that would answer it alike. A change object
 * is shared by every stream that sends its event (src/live/live.ts `shared`), so an event executed
 * for one stream's document, variables and viewer is executed once, and the others send that very
 * result (serialised once, below). Streams answer alike when they have the same organisation,
 * version, credential kind and rights (Access), and, for a signed-in person, are the same user (a
 * person sees some rows of their own without the right to read others'): a thousand dashboards of
 * one organisation's keys cost one execution of each event, not a thousand.
 */
export function sharedExecution(): Plugin<RequestContext> {
  return {
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(async (args) => {
        // A topic stream's transport executes its events itself (followerStream above).
        (args.contextValue as RequestContext).live.args = args;
        const source = await createSourceEventStream(args as ExecutionArgs);
        if (!(Symbol.asyncIterator in source)) return source;
        return mapped(source, (payload) => executedFor(args as ExecutionArgs, payload));
      });
    },
  };
}

const executions = new WeakMap<object, Map<string, Promise<ExecutionResult>>>();

function executedFor(args: ExecutionArgs, payload: unknown): Promise<ExecutionResult> {
  const run = () => Promise.resolve(execute({ ...args, rootValue: payload }));
  // A resync reads the same for everyone and is rare: not kept (the constant would keep every viewer's result).
  if (typeof payload !== 'object' || payload === null || payload === RESYNC) return run();
  let byViewer = executions.get(payload);
  if (!byViewer) executions.set(payload, (byViewer = new Map<string, Promise<ExecutionResult>>()));
  const key = executionKey(args);
  let result = byViewer.get(key);
  if (!result) byViewer.set(key, (result = run()));
  return result;
}

/** Equal for two subscriptions whose events read alike: document, operation, variables and viewer. */
function executionKey(args: ExecutionArgs): string {
  return `${documentId(args.document)} ${args.operationName ?? ''} ${JSON.stringify(args.variableValues ?? {})} ${viewerOf(args.contextValue as RequestContext)}`;
}

const documentIds = new WeakMap<DocumentNode, number>();
let nextDocumentId = 0;

/** Yoga parses a query text once and hands every request of it the same document. */
function documentId(document: DocumentNode): number {
  let id = documentIds.get(document);
  if (id === undefined) documentIds.set(document, (id = nextDocumentId++));
  return id;
}

const rightsKeys = new WeakMap<Access, string>();

/** What decides how a result reads for its viewer (see sharedExecution). */
function viewerOf(ctx: RequestContext): string {
  let rights = rightsKeys.get(ctx.access);
  if (rights === undefined) {
    rights = JSON.stringify([ctx.access.entries(), [...ctx.access.heldRoles].sort()]);
    rightsKeys.set(ctx.access, rights);
  }
  const principal = ctx.principal;
  const self = principal?.kind === 'staff' ? principal.userId : '';
  return `${ctx.organisation?.id ?? ''} ${ctx.apiVersion} ${principal?.kind ?? ''} ${self} ${rights}`;
}

/** `source` with each value mapped; return() reaches the source (the client went away). */
function mapped<T, U>(source: AsyncIterable<T>, map: (value: T) => Promise<U>): AsyncGenerator<U> {
  const iterator = source[Symbol.asyncIterator]();
  const result: AsyncGenerator<U> = {
    async next() {
      const next = await iterator.next();
      return next.done ? { done: true, value: undefined } : { done: false, value: await map(next.value) };
    },
    async return() {
      await iterator.return?.();
      return { done: true, value: undefined };
    },
    async throw(error: unknown) {
      await iterator.return?.();
      throw error;
    },
    [Symbol.asyncIterator]: () => result,
  };
  return result;
}
