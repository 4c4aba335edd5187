import express, { type Router } from 'express';
import type { GraphqlPipeline } from '../src/graphql/pipeline.ts';
import { jsonBody } from '../src/http/middleware.ts';
import { methodNotAllowed, mountRoutes, requireJsonBody } from './executor.ts';
import { liveRoutes } from './live-routes.ts';
import { buildOpenApiDocument, printOpenApiDocument, type Surface } from './openapi.ts';
import { contextOf } from '../src/http/request-context.ts';
import { v1Routes } from './v1-routes.ts';
import { docsRouter } from '../src/http/docs.ts';

export { liveRoutes, v1Routes };

/**
 * Each document is built on its first request, once per version: the route tables are fixed once
 * the process runs. A document describes the request's resolved version (header, else the
 * organisation's pin, else current), like every other answer.
 */
const documents = new Map<string, string>();
function documentAt(surface: Surface, version: string): string {
  const key = `${surface}:${version}`;
  let document = documents.get(key);
  if (document === undefined) {
    document = printOpenApiDocument(buildOpenApiDocument(surface === 'sales' ? liveRoutes : v1Routes, { surface, version }));
    documents.set(key, document);
  }
  return document;
}

/** The management REST compatibility layer, mounted at /v1. */
export function createV1Router(pipeline: GraphqlPipeline): Router {
  const router = express.Router();
  // Before the body parser, and open to anyone: the document describes the API, not a tenant.
  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(documentAt('management', contextOf(res).apiVersion));
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
    res.type('application/json').send(documentAt('sales', contextOf(res).apiVersion));
  });
  router.use('/docs', docsRouter('Ticketing service: sales API (/live)'));
  router.use(requireJsonBody, jsonBody);
  mountRoutes(router, pipeline, liveRoutes);
  router.use(methodNotAllowed(liveRoutes));
  return router;
}
