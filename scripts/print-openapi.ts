import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { liveRoutes } from '../rest-compat/live-routes.ts';
import { buildOpenApiDocument, printOpenApiDocument } from '../rest-compat/openapi.ts';
import { v1Routes } from '../rest-compat/v1-routes.ts';

/** The committed OpenAPI documents of /v1 and /live; test/platform/openapi.test.ts fails when they drift from the route tables. */
export const OPENAPI_PATH = fileURLToPath(new URL('../schema/openapi.json', import.meta.url));
export const LIVE_OPENAPI_PATH = fileURLToPath(new URL('../schema/openapi-live.json', import.meta.url));

export function printedOpenApi(): string {
  return printOpenApiDocument(buildOpenApiDocument(v1Routes));
}

export function printedLiveOpenApi(): string {
  return printOpenApiDocument(buildOpenApiDocument(liveRoutes, { surface: 'sales' }));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(OPENAPI_PATH, printedOpenApi());
  writeFileSync(LIVE_OPENAPI_PATH, printedLiveOpenApi());
  console.log(`wrote ${OPENAPI_PATH} and ${LIVE_OPENAPI_PATH}`);
}
