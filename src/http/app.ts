import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import express, { type NextFunction, type Request, type Response } from 'express';
import { GraphQLError, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { createLiveRouter, createV1Router } from '../../rest-compat/index.ts';
import { schema as defaultSchema } from '../../schema/index.ts';
import type { RequestContext } from '../context.ts';
import { AppError, errorBody, isErrorCode } from '../errors.ts';
import { newId } from '../ids.ts';
import { logScope } from '../log.ts';
import type { Runtime } from '../runtime.ts';
import { resolveVersion } from '../versions.ts';
import { authenticate } from '../auth/authenticate.ts';
import { tenantDatabase } from '../db/tenant.ts';
import { createCheckoutRouter } from './checkout.ts';
import { operationLimitsPlugin } from '../graphql/limits.ts';
import { LIMITS } from '../limits/limits.ts';

/** Scope of the database handle of a request without an organisation: matches no row. */
const NO_ORGANISATION = 'org_none';

const INCOMING_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface App {
  app: express.Express;
  yoga: YogaServerInstance<{ req: Request; res: Response }, RequestContext>;
}

/**
 * Error-free results are serialised with plain JSON.stringify, once per result object (so a
 * cached result is serialised once): Yoga's own serialiser walks every value through a replacer
 * to strip error internals, which only matters when there are errors.
 */
const serialised = new WeakMap<object, string>();
const JSON_MEDIA_TYPES = ['application/graphql-response+json', 'application/json'];

/** The media type Yoga's regular result processor would answer with (the last match wins, as there). */
function negotiatedJsonMediaType(accept: string | null): string | undefined {
  const requested = (accept ?? '*/*').split(',').map((part) => part.split(';')[0]!.trim().toLowerCase()).filter(Boolean);
  let chosen: string | undefined;
  for (const type of requested.length ? requested : ['*/*']) {
    for (const candidate of JSON_MEDIA_TYPES) {
      if (type === '*/*' || type === candidate || (type.endsWith('/*') && candidate.startsWith(type.slice(0, -1)))) chosen = candidate;
    }
  }
  return chosen;
}

/** Runs Yoga's execution through the same result cache as the REST layer (src/http/result-cache.ts). */
const resultCachePlugin: Plugin<RequestContext> = {
  onResultProcess({ request, result, setResultProcessor }) {
    if (Array.isArray(result) || typeof result !== 'object' || result === null || Symbol.asyncIterator in result) return;
    if ((result as ExecutionResult).errors?.length) return;
    const mediaType = negotiatedJsonMediaType(request.headers.get('accept'));
    if (!mediaType) return;
    setResultProcessor((processed, fetchAPI, accepted) => {
      let body = serialised.get(processed as object);
      if (body === undefined) {
        body = JSON.stringify(processed);
        serialised.set(processed as object, body);
      }
      return new fetchAPI.Response(body, { status: 200, headers: { 'Content-Type': `${accepted}; charset=utf-8` } });
    }, mediaType);
  },
  onExecute({ args, executeFn, setExecuteFn }) {
    const ctx = args.contextValue as RequestContext;
    setExecuteFn((executeArgs) =>
      ctx.runtime.resultCache.run(
        {
          document: executeArgs.document,
          operationName: executeArgs.operationName ?? null,
          variableValues: (executeArgs.variableValues ?? null) as Record<string, unknown> | null,
          contextValue: ctx,
        },
        () => executeFn(executeArgs) as Promise<ExecutionResult>,
      ),
    );
  },
};

export function createApp(runtime: Runtime, schema: GraphQLSchema = defaultSchema): App {
  const { logger } = runtime;
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', trustProxy(runtime.config.TRUST_PROXY));
  app.set('query parser', 'simple');

  // Request id first: every later line of this request, and every response, carries it.
  app.use((req, res, next) => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && INCOMING_REQUEST_ID.test(incoming) ? incoming : newId('request');
    res.setHeader('X-Request-Id', requestId);
    res.locals.requestId = requestId;
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      logScope.run({ requestId }, () =>
        logger.info(
          { method: req.method, path: loggedPath(req.path), status: res.statusCode, durationMs: Math.round(durationMs * 10) / 10 },
          'request',
        ),
      );
    });
    logScope.run({ requestId }, next);
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  // Readiness answers only "ok" or "failed" per part: a driver's error text (hosts, users, query
  // text) is for the logs, never for whoever can reach the port.
  app.get('/readyz', async (_req, res) => {
    const checks: Record<string, string> = {};
    const failed = (part: string) => (error: unknown) => {
      logger.warn({ err: error, check: part }, 'readiness check failed');
      checks[part] = 'failed';
    };
    await Promise.all([
      runtime.db.$queryRaw`SELECT 1`.then(() => (checks.database = 'ok'), failed('database')),
      runtime.temporal
        ? runtime.temporal.check().then(() => (checks.temporal = 'ok'), failed('temporal'))
        : Promise.resolve(failed('temporal')(new Error('TEMPORAL_ADDRESS is not configured'))),
    ]);
    const ready = Object.values(checks).every((value) => value === 'ok');
    if (ready) {
      res.json({ status: 'ready', checks });
    } else {
      const error = new AppError('UNAVAILABLE', 'The service is not ready.', { checks });
      res.status(503).json(errorBody(error, res.locals.requestId));
    }
  });

  // Every API surface gets one request context: who is calling, in which organisation, with
  // which rights, at which version, and the tenant-scoped database handle resolvers use.
  const apiContextFor = (surface: 'management' | 'sales') => async (req: Request, res: Response, next: NextFunction) => {
    const requestId = res.locals.requestId as string;
    const organisationSlug = req.get('x-service-org')?.trim() || null;
    const { principal, organisation, access } = await authenticate(
      runtime.db,
      runtime.tokens,
      { authorization: req.get('authorization'), organisationSlug, surface },
      runtime.authCache,
    );
    const apiVersion = resolveVersion(req.get('service-version'), organisation?.apiVersion);
    res.setHeader('Service-Version', apiVersion);
    if (organisation) logScope.getStore()!.organisationId = organisation.id;
    const ctx: RequestContext = {
      requestId,
      runtime,
      logger,
      apiVersion,
      organisationSlug,
      organisation,
      principal,
      access,
      db: tenantDatabase(runtime.db, organisation?.id ?? NO_ORGANISATION),
      liveSessionId: surface === 'sales' ? liveSessionOf(req) : null,
      clientIp: req.ip ?? '',
      setResponseHeader: (name, value) => res.append(name, value),
    };
    res.locals.ctx = ctx;
    next();
  };

  const yoga = createYoga<{ req: Request; res: Response }, RequestContext>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    graphiql: { title: 'Ticketing service', defaultQuery: '{ apiVersions { current resolved } }' },
    renderGraphiQL,
    context: ({ res }) => res.locals.ctx as RequestContext,
    plugins: [operationLimitsPlugin(), resultCachePlugin],
    logging: {
      debug: (...args) => logger.debug({ args }, 'yoga'),
      info: (...args) => logger.info({ args }, 'yoga'),
      warn: (...args) => logger.warn({ args }, 'yoga'),
      error: (...args) => logger.error({ args }, 'yoga'),
    },
    maskedErrors: {
      maskError(error) {
        const original = error instanceof GraphQLError ? error.originalError : error;
        const requestId = logScope.getStore()?.requestId;
        if (original instanceof AppError) {
          return new GraphQLError(original.message, {
            nodes: (error as GraphQLError).nodes,
            path: (error as GraphQLError).path,
            extensions: {
              code: original.code,
              ...(original.details === undefined ? {} : { details: original.details }),
              requestId,
            },
          });
        }
        if (error instanceof GraphQLError && (!original || isErrorCode(error.extensions.code))) return error;
        logger.error({ err: original ?? error }, 'unexpected error in a GraphQL resolver');
        return new GraphQLError('An unexpected error occurred.', {
          nodes: (error as GraphQLError).nodes,
          path: (error as GraphQLError).path,
          extensions: { code: 'INTERNAL', requestId },
        });
      },
    },
  });

  app.use('/graphql', graphqlBody, apiContextFor('management'), (req: Request, res: Response) => yoga(req, res));
  // A credential refused before GraphQL runs still answers in GraphQL's shape on /graphql.
  app.use('/graphql', (error: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (!(error instanceof AppError)) return next(error);
    res.status(error.status).json({
      errors: [{ message: error.message, extensions: { code: error.code, requestId: res.locals.requestId } }],
    });
  });
  app.use('/v1', apiContextFor('management'), createV1Router(schema));
  app.use('/live', salesCors, apiContextFor('sales'), createLiveRouter(schema));
  app.use('/checkout', createCheckoutRouter(runtime));

  app.use((req, _res, next) => next(new AppError('NOT_FOUND', `No route for ${req.method} ${req.path}.`)));

  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const appError = toAppError(error);
    if (appError.code === 'INTERNAL') logger.error({ err: error }, 'unexpected error');
    for (const [name, value] of Object.entries(appError.headers)) res.setHeader(name, value);
    res.status(appError.status).json(errorBody(appError, res.locals.requestId));
  });

  return { app, yoga };
}

/**
 * CORS for the sales API: publishable keys live in browsers on the storefront's own origin, so any
 * origin may call /live and read X-Live-Session. No credentials mode: the key travels in a header
 * (never a cookie), so a page elsewhere gains nothing it could not do with the public key itself.
 */
function salesCors(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Expose-Headers', 'X-Live-Session, X-Request-Id, Service-Version');
  if (req.method !== 'OPTIONS') return next();
  res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PATCH, OPTIONS');
  res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-Channel-Key, X-Live-Session, Service-Version, X-Request-Id');
  res.setHeader('Access-Control-Max-Age', '600');
  res.status(204).end();
}

/** TRUST_PROXY as express takes it: true/false, a hop count, or names and CIDRs. */
export function trustProxy(value: string): boolean | number | string {
  const text = value.trim();
  if (text === 'true' || text === 'false') return text === 'true';
  if (/^\d+$/.test(text)) return Number(text);
  return text;
}

/** The hosted checkout's order id is the page's capability: it stays out of the logs. */
function loggedPath(path: string): string {
  return path.startsWith('/checkout/') ? '/checkout/{orderId}' : path;
}

const LIVE_SESSION_ID = /^ses_[0-9A-Za-z]{1,64}$/;

/** X-Live-Session, else the live_session cookie; anything not shaped like a session id is ignored. */
function liveSessionOf(req: Request): string | null {
  const header = req.get('x-live-session')?.trim();
  if (header) return LIVE_SESSION_ID.test(header) ? header : null;
  const cookie = /(?:^|;\s*)live_session=([^;]+)/.exec(req.get('cookie') ?? '')?.[1];
  return cookie && LIVE_SESSION_ID.test(cookie) ? cookie : null;
}

/**
 * A GraphQL request body is read whole (bounded like REST's, LIMITS.bodyBytes: 413 beyond) before
 * Yoga sees it, which then takes the buffer as the body.
 */
const graphqlRawBody = express.raw({ type: () => true, limit: LIMITS.bodyBytes });
function graphqlBody(req: Request, res: Response, next: NextFunction): void {
  if (req.method !== 'POST') return next();
  graphqlRawBody(req, res, next);
}

/** Body-parser and router failures, our own errors, and everything else (masked as INTERNAL). */
function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  // A path that does not decode (`/v1/events/%FF`): the caller's input, not a fault.
  if (error instanceof URIError) return AppError.validation([{ path: 'params', message: 'The path is not valid percent-encoded UTF-8.' }]);
  const type = (error as { type?: string } | null)?.type;
  if (type === 'entity.parse.failed') return new AppError('INVALID_JSON');
  if (type === 'entity.too.large') return new AppError('PAYLOAD_TOO_LARGE');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') return new AppError('UNSUPPORTED_MEDIA_TYPE');
  return new AppError('INTERNAL');
}
