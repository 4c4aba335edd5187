import express, { type Router } from 'express';
import type { GraphqlPipeline } from '../src/graphql/pipeline.ts';
import { jsonBody } from '../src/http/middleware.ts';
import { methodNotAllowed, mountRoutes, requireJsonBody } from './executor.ts';
import { liveRoutes } from './live-routes.ts';
import { buildOpenApiDocument, printOpenApiDocument } from './openapi.ts';
import { v1Routes } from './v1-routes.ts';
import { docsRouter } from '../src/http/docs.ts';

export { v1Routes };

/** Built on first request: the route tables are fixed once the process runs. */
let openApiJson: string | undefined;
let liveOpenApiJson: string | undefined;

/** The management REST compatibility layer, mounted at /v1. */
export function createV1Router(pipeline: GraphqlPipeline): Router {
  const router = express.Router();
  // Before the body parser, and open to anyone: the document describes the API, not a tenant.
  router.get('/openapi.json', (_req, res) => {
    openApiJson ??= printOpenApiDocument(buildOpenApiDocument(v1Routes));
    res.type('application/json').send(openApiJson);
  });
  router.use('/docs', docsRouter('Ticketing service: management API (/v1)'));
  router.use(requireJsonBody, jsonBody);
  mountRoutes(router, pipeline, v1Routes);
  router.use(methodNotAllowed(v1Routes));
  return router;
}

/** The sales API, mounted at /live: channel keys in Authorization or X-Channel-Key. */
export function createLiveRouter(pipeline: GraphqlPipeline): Router {
  const router = express.Router();
  router.get('/openapi.json', (_req, res) => {
    liveOpenApiJson ??= printOpenApiDocument(buildOpenApiDocument(liveRoutes, { surface: 'sales' }));
    res.type('application/json').send(liveOpenApiJson);
  });
  router.use('/docs', docsRouter('Ticketing service: sales API (/live)'));
  router.use(requireJsonBody, jsonBody);
  mountRoutes(router, pipeline, liveRoutes);
  router.use(methodNotAllowed(liveRoutes));
  return router;
}
