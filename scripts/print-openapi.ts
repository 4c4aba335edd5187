import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument, printOpenApiDocument } from '../rest-compat/openapi.ts';
import { v1Routes } from '../rest-compat/v1-routes.ts';

/** The committed OpenAPI document of /v1; test/openapi.test.ts fails when it drifts from the route table. */
export const OPENAPI_PATH = fileURLToPath(new URL('../schema/openapi.json', import.meta.url));

export function printedOpenApi(): string {
  return printOpenApiDocument(buildOpenApiDocument(v1Routes));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(OPENAPI_PATH, printedOpenApi());
  console.log(`wrote ${OPENAPI_PATH}`);
}
