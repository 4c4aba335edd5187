import { createServer, type Server } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../log.ts';
import { httpRequestDuration, httpRequests, registry } from '../metrics.ts';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { activeTracing, REQUEST_ID_BAGGAGE, tracer } from '../tracing.ts';
import { requestIdOf } from './middleware.ts';

/** Names the route template of this request for its metrics (the REST routes: `/v1/events/{id}`). */
export function labelRoute(res: Response, template: string): void {
  res.locals.metricsRoute = template;
}

/**
 * The route template of an answered request, for metric labels: the one a route named
 * (`labelRoute`; an error answered later has left its router, and express has reset the mount by
 * then), the express route that matched, or the mount of a sub-app that routes itself
 * (`/graphql`), else `unmatched` (404s, refused methods): never the raw path, whose ids would make
 * a label per resource.
 */
function routeOf(req: Request, res: Response): string {
  if (typeof res.locals.metricsRoute === 'string') return res.locals.metricsRoute;
  const route = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof route === 'string') return `${req.baseUrl}${route}`;
  return req.baseUrl || 'unmatched';
}

/**
 * Per request, once its response has finished: http_requests_total and
 * http_request_duration_seconds (src/metrics.ts) by route template and status, and a server span
 * (src/tracing.ts; a no-op while tracing is off) continuing the caller's trace when it sent
 * `traceparent`. Everything the request does runs in the span's context. Mounted after the request
 * id is chosen (middleware.ts), which the span and its baggage carry.
 */
export function httpObservability(req: Request, res: Response, next: NextFunction): void {
  const started = process.hrtime.bigint();
  const count = (): string => {
    const route = routeOf(req, res);
    const labels = { method: req.method, route, status: String(res.statusCode) };
    httpRequests.inc(labels);
    httpRequestDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    return route;
  };
  // Tracing off (the default): no context, baggage or no-op span to make per request.
  if (activeTracing() === null) {
    res.on('finish', count);
    return next();
  }
  // The caller's trace, not its baggage (which would travel on to partners' webhook receivers):
  // the only baggage is this request's id, which every span started under it records (src/tracing.ts).
  const caller = propagation.extract(ROOT_CONTEXT, { traceparent: req.headers.traceparent, tracestate: req.headers.tracestate });
  const requestId = requestIdOf(res);
  const parent = propagation.setBaggage(caller, propagation.createBaggage({ [REQUEST_ID_BAGGAGE]: { value: requestId } }));
  const span = tracer.startSpan(req.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } }, parent);
  res.on('finish', () => {
    const route = count();
    span.updateName(`${req.method} ${route}`);
    span.setAttributes({ 'http.route': route, 'http.response.status_code': res.statusCode, 'request.id': requestId });
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
  context.with(trace.setSpan(parent, span), next);
}

/** GET /metrics: the Prometheus text of this process. */
export async function metricsHandler(_req: Request, res: Response): Promise<void> {
  const body = await registry.metrics();
  res.setHeader('Content-Type', registry.contentType);
  res.setHeader('Cache-Control', 'no-store');
  res.end(body);
}

/**
 * /metrics on a port of its own (METRICS_PORT), for the worker (which serves nothing else) and for
 * an API whose public port does not expose it. Answers its address once listening.
 */
export async function startMetricsServer(port: number, host: string, logger: Logger): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Only GET /metrics here.\n');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'Content-Type': registry.contentType, 'Cache-Control': 'no-store' }).end(body),
      (error: unknown) => {
        logger.error({ err: error }, 'metrics could not be collected');
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end('Metrics could not be collected.\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  server.unref();
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  logger.info({ port: bound, host }, 'metrics listening (GET /metrics)');
  return { server, port: bound };
}
