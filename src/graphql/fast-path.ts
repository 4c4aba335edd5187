import type { NextFunction, Request, Response } from 'express';
import { getOperationAST, OperationTypeNode, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { processRegularResult } from 'graphql-yoga';
import type { RequestContext } from '../context.ts';
import { graphqlFastPathAnswers } from '../metrics.ts';
import { paramsRefusal } from './limits.ts';
import { negotiatedJsonMediaType } from './media-types.ts';
import { serialisedResult, type GraphqlPipeline } from './pipeline.ts';

const JSON_CONTENT_TYPE = /^application\/json\s*(?:;\s*charset=utf-8\s*)?$/i;
const PARAMS = new Set(['query', 'variables', 'operationName', 'extensions']);

interface Params {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

/**
 * The body of the common request, or undefined for anything Yoga should see: a JSON object with a
 * query, variables that are an object, an operation name, and nothing else (no batch, no
 * extensions).
 */
function plainParams(body: unknown): Params | undefined {
  if (!Buffer.isBuffer(body) || body.length === 0) return undefined;
  let params: unknown;
  try {
    params = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return undefined;
  const { query, variables, operationName, extensions } = params as Record<string, unknown>;
  if (typeof query !== 'string' || query === '') return undefined;
  if (variables != null && (typeof variables !== 'object' || Array.isArray(variables))) return undefined;
  if (operationName != null && typeof operationName !== 'string') return undefined;
  if (extensions != null) return undefined;
  for (const key in params) if (!PARAMS.has(key)) return undefined;
  return params as Params;
}

/**
 * /graphql's common request — a POST of one JSON query from a client that takes a JSON answer — run
 * through the same envelop pipeline Yoga runs (the bounded parser and its cache, validation with
 * the limits rule and its cache, variable and cost checks, the organisation's cost budget and
 * extensions.cost, compiled execution, the result cache, metrics and traces, error masking) and
 * answered as Yoga answers it (its media type negotiation and, for results with errors — a 429 of
 * the cost budget among them, with its Retry-After — its own result processor), without Yoga's
 * fetch-API layer: a Request and a Response object per request, and a chain of promise helpers
 * through every plugin's HTTP hooks, which cost ~0.1 ms of the API's CPU per request — about what
 * the rest of a list request's HTTP handling costs.
 *
 * Everything else goes on to Yoga unchanged, and so does any request this path would answer
 * differently from it: other methods and media types, bodies that are not one plain query object
 * (Yoga answers those with its errors), documents that do not parse or validate, mutations and
 * subscriptions, and parameters over the operation limits. CORS is answered before either
 * (src/http/middleware.ts adminCors).
 * A query whose execution throws (not a result with errors, which is answered here; a throw is an
 * internal failure, resolvers' errors are results) is handed to Yoga to run again, so Yoga answers
 * it: a query changes nothing, so running it twice is safe, though its metrics, span and error log
 * line then count it twice.
 *
 * Yoga's plugins are handed a stand-in request with only a method (see below): a plugin added to
 * the pipeline that reads more of the request while parsing, validating or executing must be
 * checked against this path (test/platform/graphql-fast-path.test.ts compares both answers).
 */
export function graphqlFastPath(pipeline: GraphqlPipeline) {
  const { yoga } = pipeline;
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (req.method !== 'POST' || req.originalUrl.split('?')[0] !== '/graphql') return next();
    const contentType = req.headers['content-type'];
    if (!contentType || !JSON_CONTENT_TYPE.test(contentType)) return next();
    const mediaType = negotiatedJsonMediaType(req.headers.accept);
    if (!mediaType) return next();
    const params = plainParams(req.body);
    if (!params) return next();
    if (paramsRefusal(params)) return next();

    const ctx = res.locals.ctx as RequestContext;
    // The initial context Yoga would hand its plugins (the server's, the request, the parameters);
    // of the request they read only the method while parsing (a parse error is marked a 400, and
    // the error is cached so), so it is all this one has. The operation's context is `ctx`, as for /v1.
    const request = { method: 'POST' } as unknown as globalThis.Request;
    const enveloped = yoga.getEnveloped({ req, res, request, params });
    let document: DocumentNode;
    try {
      document = enveloped.parse(params.query) as DocumentNode;
    } catch {
      return next();
    }
    const schema = enveloped.schema as GraphQLSchema;
    if ((enveloped.validate(schema, document) as readonly unknown[]).length > 0) return next();
    if (getOperationAST(document, params.operationName)?.operation !== OperationTypeNode.QUERY) return next();

    let result: ExecutionResult;
    try {
      result = (await enveloped.execute({
        schema,
        document,
        variableValues: params.variables ?? undefined,
        operationName: params.operationName ?? undefined,
        contextValue: ctx,
      })) as ExecutionResult;
    } catch {
      return next();
    }
    if (typeof result !== 'object' || result === null || Symbol.asyncIterator in result) return next();
    if (result.errors?.length) {
      graphqlFastPathAnswers.inc({ outcome: 'error' });
      const response = processRegularResult(result, yoga.fetchAPI, mediaType);
      res.status(response.status);
      response.headers.forEach((value, name) => res.setHeader(name, value));
      res.end(await response.text());
      return;
    }
    graphqlFastPathAnswers.inc({ outcome: 'ok' });
    res.status(200).setHeader('Content-Type', `${mediaType}; charset=utf-8`);
    res.end(serialisedResult(result));
  };
}
