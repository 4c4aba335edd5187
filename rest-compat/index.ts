import express, { type Response, type Router } from 'express';
import type { GraphQLSchema } from 'graphql';
import type { RequestContext } from '../src/context.ts';
import { acceptChannelKeyHeader } from '../src/auth/channel-keys.ts';
import { jsonBody, mountRoutes } from './executor.ts';
import { liveRoutes } from './live-routes.ts';
import { buildOpenApiDocument, printOpenApiDocument } from './openapi.ts';
import { v1Routes } from './v1-routes.ts';

export { v1Routes };

const contextOf = (res: Response) => res.locals.ctx as RequestContext;

/** Built on first request: the route tables are fixed once the process runs. */
let openApiJson: string | undefined;
let liveOpenApiJson: string | undefined;

/** The management REST compatibility layer, mounted at /v1. */
export function createV1Router(schema: GraphQLSchema): Router {
  const router = express.Router();
  // Before the body parser, and open to anyone: the document describes the API, not a tenant.
  router.get('/openapi.json', (_req, res) => {
    openApiJson ??= printOpenApiDocument(buildOpenApiDocument(v1Routes));
    res.type('application/json').send(openApiJson);
  });
  router.use(jsonBody);
  mountRoutes(router, schema, v1Routes, contextOf);
  return router;
}

/** The sales API, mounted at /live: channel keys in Authorization (see apiContext) or X-Channel-Key. */
export function createLiveRouter(schema: GraphQLSchema): Router {
  const router = express.Router();
  router.get('/openapi.json', (_req, res) => {
    liveOpenApiJson ??= printOpenApiDocument(buildOpenApiDocument(liveRoutes, { surface: 'sales' }));
    res.type('application/json').send(liveOpenApiJson);
  });
  router.use(jsonBody);
  router.use(acceptChannelKeyHeader);
  mountRoutes(router, schema, liveRoutes, contextOf);
  return router;
}
