import type { Request, Response } from 'express';
import { getOperationAST, GraphQLError, OperationTypeNode, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { currentRights } from '../auth/current-rights.ts';
import type { RequestContext } from '../context.ts';
import { commitsSoFar } from '../db/client.ts';
import {
  AppError,
  databaseUnavailable,
  errorBody,
  FaultAfterWork,
  GraphQLFaultAfterWork,
  isDatabaseUnavailable,
  isErrorCode,
  toAppError,
} from '../errors.ts';
import { logScope, type Logger } from '../log.ts';
import { graphqlOperationDuration, graphqlOperations } from '../metrics.ts';
import type { Runtime } from '../runtime.ts';
import { requestIdOf } from '../http/middleware.ts';
import { graphqlArgs } from './execution-args.ts';
import { GRAPHIQL_EXAMPLES } from './graphiql-examples.ts';
import { compiledExecution } from './jit.ts';
import { ANSWER_MEDIA_TYPES, negotiatedJsonMediaType, SUBSCRIPTION_MEDIA_TYPES } from './media-types.ts';
import { keyedMutations, type KeyedMutationsOptions } from './keyed-mutations.ts';
import { costedFrom, operationLimitsPlugin } from './limits.ts';
import { CostBudgets } from '../limits/cost-budget.ts';
import { eventStreamsOnly, isSubscriptionRequest, liveEventStreams, sharedExecution } from '../live/sse.ts';
import { SpanStatusCode } from '@opentelemetry/api';
import { tracer } from '../tracing.ts';
import { ProcessStopping } from '../live/transport.ts';

/**
 * The one GraphQL pipeline. /graphql is Yoga over HTTP; /v1 and /live run their fixed operations
 * through the very same envelop plugins (limits and the organisation's cost budget, the result
 * cache, error masking) with `execute`, so a plugin added here applies to every surface.
 */
export interface GraphqlPipeline {
  schema: GraphQLSchema;
  yoga: YogaServerInstance<{ req: Request; res: Response }, RequestContext>;
  /** Runs a parsed and validated operation in-process, through the plugins, with the request's context. */
  execute(document: DocumentNode, variableValues: Record<string, unknown>, ctx: RequestContext): Promise<ExecutionResult>;
}

/**
 * Error-free results are serialised with plain JSON.stringify, once per result object (so a
 * cached result is serialised once): Yoga's own serialiser walks every value through a replacer
 * to strip error internals, which only matters when there are errors.
 */
const serialised = new WeakMap<object, string>();
/**
 * An error-free result as JSON, serialised once per result object (see above). An answer that is a
 * result with extensions.cost added (limits.ts withCost: a new object per request, around a result
 * the result cache may hand out again) is its result's JSON with the cost appended, as
 * JSON.stringify would write it.
 */
export function serialisedResult(result: object): string {
  const costed = costedFrom(result);
  if (costed && costed.base.extensions === undefined) {
    const body = serialisedOnce(costed.base);
    if (body.length > 2) return `${body.slice(0, -1)},"extensions":{"cost":${JSON.stringify(costed.cost)}}}`;
  }
  return serialisedOnce(result);
}

function serialisedOnce(result: object): string {
  let body = serialised.get(result);
  if (body === undefined) {
    body = JSON.stringify(result);
    serialised.set(result, body);
  }
  return body;
}

const fastSerialisation: Plugin<RequestContext> = {
  onResultProcess(payload) {
    const { request, result } = payload;
    if (Array.isArray(result) || typeof result !== 'object' || result === null || Symbol.asyncIterator in result) return;
    if ((result as ExecutionResult).errors?.length) return;
    const mediaType = negotiatedJsonMediaType(request.headers.get('accept'));
    if (!mediaType) return;
    payload.setResultProcessor(
      (processed, fetchAPI, accepted) =>
        new fetchAPI.Response(serialisedResult(processed as object), {
          status: 200,
          headers: { 'Content-Type': `${accepted}; charset=utf-8` },
        }),
      mediaType,
    );
  },
};

/**
 * An answer no media type of the request's Accept can carry (a query asked as text/html, a
 * subscription as multipart/mixed) is 406 in the contract's envelope, naming the types that would
 * do in `Accept` (test/platform/http-basics.test.ts, test/live/subscriptions.test.ts). Yoga's own
 * 406 has an empty body. The last result hook: it answers only when none before it chose a
 * processor.
 */
const notAcceptable: Plugin<RequestContext> = {
  onResultProcess(payload) {
    if (payload.resultProcessor) return;
    const res = (payload.serverContext as unknown as { res: Response }).res;
    const answered = isSubscriptionRequest(payload.request) ? SUBSCRIPTION_MEDIA_TYPES : ANSWER_MEDIA_TYPES;
    const error = new AppError(
      'NOT_ACCEPTABLE',
      `This answer is sent as ${answered.join(' or ')}; the request's Accept header names none of them.`,
    );
    payload.setResultProcessor(
      (_result, fetchAPI) =>
        new fetchAPI.Response(JSON.stringify(errorBody(error, requestIdOf(res))), {
          status: error.status,
          headers: { 'Content-Type': 'application/json; charset=utf-8', Accept: answered.join(', ') },
        }),
      'application/json',
    );
  },
};

/** Operation names seen as metric labels; a client names its operations, so the set is capped. */
const operationNames = new Set<string>();
const MAX_OPERATION_NAMES = 500;

function operationLabel(name: string | undefined): string {
  if (!name) return 'anonymous';
  if (operationNames.has(name)) return name;
  if (operationNames.size >= MAX_OPERATION_NAMES || name.length > 100) return 'other';
  operationNames.add(name);
  return name;
}

/**
 * Per operation, on every surface: graphql_operations_total and graphql_operation_duration_seconds
 * (src/metrics.ts), and a span (src/tracing.ts). The last plugin to set the execute function, so
 * it wraps whatever executes the operation (compiled, cached); the operation is read once for both.
 */
const operationObservability: Plugin<RequestContext> = {
  onExecute({ args: envelopArgs, executeFn, setExecuteFn }) {
    const args = graphqlArgs(envelopArgs);
    const operation = getOperationAST(args.document, args.operationName);
    const labels = { operation: operationLabel(args.operationName ?? operation?.name?.value), type: operation?.operation ?? 'unknown' };
    const ctx = args.contextValue as RequestContext;
    setExecuteFn((executeArgs) =>
      tracer.startActiveSpan(
        `graphql ${labels.type} ${labels.operation}`,
        { attributes: { 'graphql.operation.type': labels.type, 'graphql.operation.name': labels.operation, 'request.id': ctx.requestId } },
        async (span) => {
          const started = process.hrtime.bigint();
          try {
            const result = (await executeFn(executeArgs)) as ExecutionResult;
            const failed = Boolean(result.errors?.length);
            if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: result.errors![0]!.message });
            graphqlOperations.inc({ ...labels, outcome: failed ? 'error' : 'ok' });
            return result;
          } finally {
            graphqlOperationDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
            span.end();
          }
        },
      ),
    );
  },
};

/**
 * Catalogue results through the result cache (src/http/result-cache.ts), on every surface; every
 * operation with the rights its credential holds as it starts (src/auth/current-rights.ts).
 */
const resultCache: Plugin<RequestContext> = {
  onExecute({ args, executeFn, setExecuteFn }) {
    const ctx = args.contextValue as RequestContext;
    setExecuteFn((envelopArgs) => {
      const executeArgs = graphqlArgs(envelopArgs);
      const run = () =>
        ctx.runtime.resultCache.run(
          {
            document: executeArgs.document,
            operationName: executeArgs.operationName ?? null,
            variableValues: executeArgs.variableValues ?? null,
            contextValue: ctx,
          },
          () => executeFn(envelopArgs) as Promise<ExecutionResult>,
        );
      const judging = currentRights(ctx);
      if (!judging) return run();
      // A refusal here (the credential went) is the operation's answer, in the contract's envelope.
      return judging.then(run, (error: unknown) => {
        if (error instanceof AppError) return { errors: [new GraphQLError(error.message, { originalError: error })] };
        throw error;
      });
    });
  },
};

/**
 * A mutation's faults after it committed some of its work (reading its answer, or a step after a
 * transaction), or below its root field (its resolver returned: its work is done), answer
 * FaultAfterWork: "may have taken effect", on /graphql as on /v1, where an Idempotency-Key keeps
 * that answer rather than running the request again (src/http/idempotency.ts,
 * test/platform/database-outage.test.ts).
 */
const faultsAfterWork: Plugin<RequestContext> = {
  onExecute({ args: envelopArgs, executeFn, setExecuteFn }) {
    const args = graphqlArgs(envelopArgs);
    if (getOperationAST(args.document, args.operationName)?.operation !== OperationTypeNode.MUTATION) return;
    const ctx = args.contextValue as RequestContext;
    setExecuteFn(async (executeArgs) => {
      const commitsBefore = commitsSoFar();
      const result = (await executeFn(executeArgs)) as ExecutionResult;
      const errors = result.errors ?? [];
      const isFault = (error: GraphQLError) => toAppError(error).status >= 500;
      if (!errors.some(isFault)) return result;
      if (commitsSoFar() === commitsBefore && errors.some((error) => (error.path?.length ?? 0) <= 1)) return result;
      return {
        ...result,
        errors: errors.map((error) => {
          if (!isFault(error)) return error;
          if (!(error.originalError instanceof AppError))
            ctx.logger.error({ err: error.originalError ?? error }, 'a fault after a change was saved');
          const fault = new FaultAfterWork();
          return new GraphQLError(fault.message, { nodes: error.nodes, path: error.path, originalError: fault });
        }),
      };
    });
  },
};

/**
 * Expected failures (AppError) become GraphQL errors with the contract's code, details and the
 * headers they carry (Retry-After: Yoga sets `extensions.http.headers` on the HTTP answer, and the
 * REST layer reads them back); anything else is logged and answered as an opaque INTERNAL.
 */
function maskError(logger: Logger) {
  return (error: unknown): GraphQLError => {
    const unavailable = isDatabaseUnavailable(error instanceof GraphQLError ? error.originalError : error);
    const original = unavailable ? databaseUnavailable() : error instanceof GraphQLError ? error.originalError : error;
    const requestId = logScope.getStore()?.requestId;
    const located = error instanceof GraphQLError ? { nodes: error.nodes, path: error.path } : {};
    // A stream ended because its process stops is no fault: passed on as it is, for the transport
    // to drop the stream's connection (src/live/sse.ts).
    if (original instanceof ProcessStopping) return new GraphQLError(original.message, { ...located, originalError: original });
    if (original instanceof AppError) {
      const headers = Object.keys(original.headers).length > 0 ? { http: { headers: original.headers } } : {};
      const Masked = original instanceof FaultAfterWork ? GraphQLFaultAfterWork : GraphQLError;
      return new Masked(original.message, {
        ...located,
        extensions: {
          code: original.code,
          ...(original.details === undefined ? {} : { details: original.details }),
          requestId,
          ...headers,
        },
      });
    }
    if (error instanceof GraphQLError && (!original || isErrorCode(error.extensions?.code))) return error;
    logger.error({ err: original ?? error }, 'unexpected error in a GraphQL resolver');
    return new GraphQLError('An unexpected error occurred.', { ...located, extensions: { code: 'INTERNAL', requestId } });
  };
}

/**
 * `schema` holds every operation (/v1 and /live run theirs on it); `served` is what /graphql
 * answers and introspects, the same types with Relay-only connection arguments. With `keyed`,
 * /graphql's mutations honour Idempotency-Key (src/graphql/keyed-mutations.ts).
 */
export function createGraphqlPipeline(
  runtime: Runtime,
  schema: GraphQLSchema,
  served: GraphQLSchema = schema,
  keyed?: KeyedMutationsOptions,
): GraphqlPipeline {
  const { logger } = runtime;
  const yoga = createYoga<{ req: Request; res: Response }, RequestContext>({
    schema: served,
    graphqlEndpoint: '/graphql',
    // Answered before Yoga, for every answer of /graphql (src/http/middleware.ts adminCors).
    cors: false,
    landingPage: false,
    // The body was read whole and bounded before Yoga (graphqlBody: LIMITS.bodyBytes, 413 in the
    // contract's envelope). Yoga's own limit would pipe that buffer again through a TransformStream
    // per request (a stream pipeline, an AbortController and a DOMException each: ~3% of the API's
    // CPU in the GraphQL list benchmark).
    maxRequestBodySize: false,
    graphiql: {
      title: 'Ticketing service',
      defaultQuery: GRAPHIQL_EXAMPLES,
      headers: JSON.stringify({ Authorization: 'Bearer <token or key>', 'X-Service-Org': '<organisation slug>' }, null, 2),
    },
    // GraphiQL's bundle is ~30 MB of strings once imported: loaded on the first page view, not
    // held by every API process that never serves one (memory).
    renderGraphiQL: async (options) => (await import('@graphql-yoga/render-graphiql')).renderGraphiQL(options),
    // The context was built once by src/http/request-context.ts.
    context: ({ res }) => res.locals.ctx as RequestContext,
    plugins: [
      eventStreamsOnly(),
      operationLimitsPlugin(new CostBudgets(runtime.db, runtime.config, logger)),
      compiledExecution<RequestContext>(),
      resultCache,
      faultsAfterWork,
      keyed ? keyedMutations(keyed, maskError(logger)) : {},
      operationObservability,
      fastSerialisation,
      liveEventStreams(
        { heartbeatMs: runtime.config.LIVE_HEARTBEAT_INTERVAL, flushMs: runtime.config.LIVE_FLUSH_INTERVAL },
        maskError(logger),
      ),
      sharedExecution(),
      notAcceptable,
    ],
    logging: {
      debug: (...args) => logger.debug({ args }, 'yoga'),
      info: (...args) => logger.info({ args }, 'yoga'),
      warn: (...args) => logger.warn({ args }, 'yoga'),
      // Yoga logs at error every error its masking replaced. maskError below has logged the
      // unexpected ones already, and an expected refusal (not found, sold out) is an answer, not a
      // fault: at error level an on-sale would write one line per buyer refused
      // (test/platform/error-logging.test.ts). What Yoga logs that is not an Error stays an error.
      error: (...args) => (args.length === 1 && args[0] instanceof Error ? logger.debug({ args }, 'yoga') : logger.error({ args }, 'yoga')),
    },
    maskedErrors: { maskError: maskError(logger) },
  });
  return {
    schema,
    yoga,
    async execute(document, variableValues, ctx) {
      const { execute } = yoga.getEnveloped(ctx);
      return (await execute({ schema, document, variableValues, contextValue: ctx })) as ExecutionResult;
    },
  };
}
