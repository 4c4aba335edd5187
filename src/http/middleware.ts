import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { AppError, errorBody, toAppError } from '../errors.ts';
import { newId } from '../ids.ts';
import { LIMITS } from '../limits/limits.ts';
import { logScope, type Logger } from '../log.ts';
import type { Runtime } from '../runtime.ts';

/** The HTTP plumbing every surface shares: request ids and logs, health, CORS, bodies, errors. */

const INCOMING_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request id `requestIdAndLog` chose for this response. */
export function requestIdOf(res: Response): string {
  return res.locals.requestId as string;
}

/** Request id first: every later line of this request, and every response, carries it. */
export function requestIdAndLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
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
  };
}

/** The hosted checkout's order id is the page's capability: it stays out of the logs. */
function loggedPath(path: string): string {
  return path.startsWith('/checkout/') ? '/checkout/{orderId}' : path;
}

/**
 * Liveness, and readiness of the database and Temporal. Readiness answers only "ok" or "failed" per
 * part: a driver's error text (hosts, users, query text) is for the logs, never for whoever can
 * reach the port.
 */
export function mountHealth(app: Express, runtime: Runtime): void {
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    if (runtime.draining) {
      const error = new AppError('UNAVAILABLE', 'The process is stopping.', { checks: { draining: 'yes' } }, { 'Retry-After': '1' });
      res.setHeader('Retry-After', '1');
      return void res.status(503).json(errorBody(error, requestIdOf(res)));
    }
    const checks: Record<string, string> = {};
    const failed = (part: string) => (error: unknown) => {
      runtime.logger.warn({ err: error, check: part }, 'readiness check failed');
      checks[part] = 'failed';
    };
    await Promise.all([
      runtime.db.$queryRaw`SELECT 1`.then(() => (checks.database = 'ok'), failed('database')),
      runtime.temporal
        ? runtime.temporal.check().then(() => (checks.temporal = 'ok'), failed('temporal'))
        : Promise.resolve(failed('temporal')(new Error('TEMPORAL_ADDRESS is not configured'))),
    ]);
    if (Object.values(checks).every((value) => value === 'ok')) {
      res.json({ status: 'ready', checks });
    } else {
      const error = new AppError('UNAVAILABLE', 'The service is not ready.', { checks });
      res.status(503).json(errorBody(error, requestIdOf(res)));
    }
  });
}

/**
 * CORS for the sales API: publishable keys live in browsers on the storefront's own origin, so any
 * origin may call /live and read X-Live-Session. No credentials mode: the key travels in a header
 * (never a cookie), so a page elsewhere gains nothing it could not do with the public key itself.
 */
export function salesCors(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader(
    'Access-Control-Expose-Headers',
    'X-Live-Session, X-Request-Id, Service-Version, Deprecation, Sunset, Link, Idempotent-Replayed, Retry-After',
  );
  if (req.method !== 'OPTIONS') return next();
  res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PATCH, OPTIONS');
  res.setHeader(
    'Access-Control-Allow-Headers',
    'Authorization, Content-Type, X-Channel-Key, X-Live-Session, Service-Version, X-Request-Id, Idempotency-Key',
  );
  res.setHeader('Access-Control-Max-Age', '600');
  res.status(204).end();
}

/** Headers a browser client reads beyond the CORS-safelisted ones, on every answer of /graphql. */
const ADMIN_EXPOSED_HEADERS = 'X-Request-Id, Service-Version, Deprecation, Sunset, Link, Idempotent-Replayed, Retry-After';

/**
 * CORS for /graphql, on every answer, a refusal before GraphQL runs (401 for an expired token, 429,
 * 413) included, so an admin frontend on another origin reads why and can refresh its token. Any
 * origin may call by default (GRAPHQL_CORS_ORIGINS): the credential is a bearer token in a header,
 * which a page elsewhere does not have. An origin not listed gets no CORS headers, so its browser
 * shows the page nothing. No credentials mode, so a browser never sends cookies along (the
 * live_session cookie of a hosted page is not for /graphql). Preflights are answered here
 * (test/platform/admin-browser.test.ts).
 */
export function adminCors(allowed: '*' | readonly string[]) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const origin = req.headers.origin;
    if (origin === undefined) return next();
    res.setHeader('Vary', 'Origin');
    const listed = allowed === '*' || allowed.includes(origin);
    if (listed) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Expose-Headers', ADMIN_EXPOSED_HEADERS);
    }
    if (req.method !== 'OPTIONS') return next();
    if (listed) {
      res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
      const asked = req.headers['access-control-request-headers'];
      if (asked) res.setHeader('Access-Control-Allow-Headers', asked);
      res.setHeader('Access-Control-Max-Age', '600');
    }
    res.status(204).end();
  };
}

/** TRUST_PROXY as express takes it: true/false, a hop count, or names and CIDRs. */
export function trustProxy(value: string): boolean | number | string {
  const text = value.trim();
  if (text === 'true' || text === 'false') return text === 'true';
  if (/^\d+$/.test(text)) return Number(text);
  return text;
}

/** `application/json` (with or without parameters) or a `+json` type such as `application/vnd.api+json`. */
export function isJsonMediaType(type: string | undefined): boolean {
  return type !== undefined && /^application\/([\w.-]+\+)?json\s*(;|$)/i.test(type);
}

/**
 * JSON bodies of the REST surfaces, bounded like GraphQL's (LIMITS.bodyBytes: 413 beyond): every
 * type requireJsonBody (rest-compat/executor.ts) lets through is read, so none reaches a use case,
 * or an Idempotency-Key's hash, as no body at all.
 */
export const jsonBody = express.json({
  limit: LIMITS.bodyBytes,
  strict: true,
  type: (req) => isJsonMediaType(req.headers['content-type']),
});

/**
 * A GraphQL request body is read whole and bounded (LIMITS.bodyBytes: 413 beyond) before Yoga sees
 * it, which then takes the buffer as the body.
 */
const graphqlRawBody = express.raw({ type: () => true, limit: LIMITS.bodyBytes });
export function graphqlBody(req: Request, res: Response, next: NextFunction): void {
  if (req.method !== 'POST') return next();
  graphqlRawBody(req, res, next);
}

/** The last handlers: a path nobody serves, and every error answered in the contract's envelope. */
export function mountErrors(app: Express, logger: Logger): void {
  app.use((req, _res, next) => next(new AppError('NOT_FOUND', `No route for ${req.method} ${req.path}.`)));
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const appError = toAppError(error);
    if (appError.code === 'INTERNAL') logger.error({ err: error }, 'unexpected error');
    if (appError.code === 'UNAVAILABLE') logger.warn({ err: error }, 'the database is unavailable');
    for (const [name, value] of Object.entries(appError.headers)) res.setHeader(name, value);
    res.status(appError.status).json(errorBody(appError, requestIdOf(res)));
  });
}
