import { createSourceEventStream, execute, type DocumentNode, type ExecutionArgs, type ExecutionResult, type GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Access } from '../auth/permissions.ts';
import type { Response } from 'express';
import type { RequestContext } from '../context.ts';

/**
 * Subscriptions answered as server-sent events in the GraphQL-over-SSE protocol's "distinct
 * connections" mode (what graphql-sse's client and an EventSource speak): `event: next` with a
 * result, `event: complete` at the end. Yoga's own processor is replaced for subscriptions so that
 *
 * - every event carries its SSE `id` (the live event's id, src/live/streams.ts), which a client
 *   sends back as Last-Event-ID to resume;
 * - a stream that ends with an error (rights withdrawn, key revoked) sends the error as its last
 *   result and completes, instead of dropping the connection (which a client would retry at once);
 * - a quiet stream gets a comment line every LIVE_HEARTBEAT_INTERVAL, so proxies keep it open.
 */
export function liveEventStreams(heartbeatMs: number, mask: (error: unknown) => GraphQLError): Plugin<RequestContext> {
  return {
    onResultProcess(payload) {
      const { result, acceptableMediaTypes } = payload;
      if (!acceptableMediaTypes.includes('text/event-stream') || typeof result !== 'object' || result === null) return;
      if (!(Symbol.asyncIterator in result)) return;
      const ctx = (payload.serverContext as unknown as { res: Response }).res.locals.ctx as RequestContext;
      payload.setResultProcessor(
        (results, fetchAPI) => eventStream(results as AsyncIterable<ExecutionResult>, fetchAPI, ctx, heartbeatMs, mask),
        'text/event-stream',
      );
    },
  };
}

function eventStream(
  results: AsyncIterable<ExecutionResult>,
  fetchAPI: { ReadableStream: typeof ReadableStream; Response: typeof Response; TextEncoder: typeof TextEncoder },
  ctx: RequestContext,
  heartbeatMs: number,
  mask: (error: unknown) => GraphQLError,
): globalThis.Response {
  const encoder = new fetchAPI.TextEncoder();
  const iterator = results[Symbol.asyncIterator]();
  let heartbeat: NodeJS.Timeout | undefined;
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
      const send = (result: ExecutionResult, id?: string) => controller.enqueue(encodedEvent(encoder, result, id));
      const complete = () => {
        clearInterval(heartbeat);
        controller.enqueue(encoder.encode('event: complete\ndata:\n\n'));
        controller.close();
      };
      try {
        const next = await iterator.next();
        if (next.done) return complete();
        const id = ctx.live.lastEventId;
        ctx.live.lastEventId = undefined;
        send(next.value, id);
      } catch (error) {
        send({ errors: [mask(error)] });
        complete();
      }
    },
    async cancel() {
      clearInterval(heartbeat);
      await iterator.return?.();
    },
  });
  return new fetchAPI.Response(body, {
    status: 200,
    headers: { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive', 'Content-Encoding': 'none' },
  });
}

const encoded = new WeakMap<ExecutionResult, { id: string | undefined; bytes: Uint8Array }>();

/** A result as an SSE event, encoded once when streams share it (sharedExecution): they send the same bytes. */
function encodedEvent(encoder: TextEncoder, result: ExecutionResult, id: string | undefined): Uint8Array {
  const known = encoded.get(result);
  if (known && known.id === id) return known.bytes;
  const bytes = encoder.encode(`${id ? `id: ${id}\n` : ''}event: next\ndata: ${serialised(result)}\n\n`);
  encoded.set(result, { id, bytes });
  return bytes;
}

/** A result as JSON, without the HTTP-only parts of its errors' extensions. */
function serialised(result: ExecutionResult): string {
  if (!result.errors?.length) return JSON.stringify(result);
  return JSON.stringify({
    ...result,
    errors: result.errors.map((error) => {
      const { http: _http, ...extensions } = error.toJSON().extensions ?? {};
      return { ...error.toJSON(), extensions };
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
  if (typeof payload !== 'object' || payload === null) return run();
  let byViewer = executions.get(payload);
  if (!byViewer) executions.set(payload, (byViewer = new Map<string, Promise<ExecutionResult>>()));
  const key = `${documentId(args.document)} ${args.operationName ?? ''} ${JSON.stringify(args.variableValues ?? {})} ${viewerOf(args.contextValue as RequestContext)}`;
  let result = byViewer.get(key);
  if (!result) byViewer.set(key, (result = run()));
  return result;
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
