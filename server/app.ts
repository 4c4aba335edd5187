import express, { type NextFunction, type Request, type Response } from 'express';
import { createLiveRouter, createV1Router, liveRoutes, v1Routes } from '../rest-compat/index.ts';
import { mutationReplay } from '../rest-compat/mutation-replay.ts';
import { rootFieldRefusal } from '../schema/root-field-access.ts';
import { publicSchema, schema } from '../schema/index.ts';
import { toAppError } from '../src/errors.ts';
import { graphqlFastPath } from '../src/graphql/fast-path.ts';
import { createGraphqlPipeline, type GraphqlPipeline } from '../src/graphql/pipeline.ts';
import { createCheckoutRouter } from '../src/http/checkout.ts';
import {
  adminCors,
  graphqlBody,
  mountErrors,
  mountHealth,
  requestIdAndLog,
  requestIdOf,
  salesCors,
  trustProxy,
} from '../src/http/middleware.ts';
import { httpObservability, metricsHandler } from '../src/http/metrics.ts';
import { requestContext } from '../src/http/request-context.ts';
import { startServer, type RunningServer } from '../src/http/server.ts';
import type { Runtime } from '../src/runtime.ts';

/**
 * The composition root of the API process: the one module that knows every layer. src/ (services,
 * auth, the GraphQL pipeline, HTTP plumbing) knows neither schema/ nor rest-compat/; they know src/;
 * this wires them onto one express app.
 *
 *   request ─▶ request id + log ─▶ metrics + trace span ─▶ requestContext (authenticate once)
 *     ├─▶ /graphql fast path | Yoga┐
 *     ├─▶ /v1, /live route table ──┴─▶ GraphQL pipeline ─▶ resolver ─▶ service ─▶ PostgreSQL
 *     └─▶ /checkout hosted page ─▶ service
 */
export interface App {
  app: express.Express;
  pipeline: GraphqlPipeline;
}

export function createApp(runtime: Runtime): App {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', trustProxy(runtime.config.TRUST_PROXY));
  app.set('query parser', 'simple');
  app.use(requestIdAndLog(runtime.logger), httpObservability);
  mountHealth(app, runtime);
  // Outside production by default; production serves it on METRICS_PORT (docs/operating.md "Metrics").
  if (runtime.config.METRICS_ON_API_PORT) app.get('/metrics', metricsHandler);

  const pipeline = createGraphqlPipeline(runtime, schema, publicSchema, {
    ...mutationReplay(schema, [...v1Routes, ...liveRoutes]),
    refusal: (field, ctx) => rootFieldRefusal(schema, 'mutation', field, ctx),
  });
  app.use(
    '/graphql',
    adminCors(runtime.config.GRAPHQL_CORS_ORIGINS),
    graphqlBody,
    requestContext(runtime, 'management'),
    graphqlFastPath(pipeline),
    (req: Request, res: Response) => pipeline.yoga(req, res),
  );
  // A credential refused before GraphQL runs still answers in GraphQL's shape on /graphql.
  app.use('/graphql', (error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const appError = toAppError(error);
    if (appError.code === 'INTERNAL') runtime.logger.error({ err: error }, 'unexpected error');
    for (const [name, value] of Object.entries(appError.headers)) res.setHeader(name, value);
    res.status(appError.status).json({
      errors: [{ message: appError.message, extensions: { code: appError.code, requestId: requestIdOf(res) } }],
    });
  });
  app.use('/v1', requestContext(runtime, 'management'), createV1Router(pipeline));
  app.use('/live', salesCors, requestContext(runtime, 'sales'), createLiveRouter(pipeline));
  app.use('/checkout', createCheckoutRouter(runtime));
  mountErrors(app, runtime.logger);
  return { app, pipeline };
}

/** The API on `port` (0: any free one). */
export function startApi(runtime: Runtime, port: number, host: string): Promise<RunningServer> {
  return startServer(createApp(runtime).app, runtime, port, host);
}
