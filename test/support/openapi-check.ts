import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { liveRoutes } from '../../rest-compat/live-routes.ts';
import { buildOpenApiDocument, type OpenApiDocument, type Surface } from '../../rest-compat/openapi.ts';
import { v1Routes } from '../../rest-compat/v1-routes.ts';
import { CURRENT_VERSION } from '../../src/versions.ts';

/**
 * Checks real answers of /v1 (or, with surface 'sales', of /live) against the OpenAPI document built from the route table, so a test
 * of any route can assert that what it got is what the document promises:
 *
 *   const res = await api(app, 'GET', `/v1/roles/${id}`, as(org.adminToken));
 *   expectDocumentedResponse('GET', '/roles/{id}', res);
 *
 * The path may be the template or the concrete path (with or without /v1 and a query string).
 * The body is validated with JSON Schema 2020-12 (the dialect of OpenAPI 3.1); response headers
 * the document marks required must be present and match their schema.
 */

type Json = Record<string, unknown>;

export interface ObservedResponse {
  status: number;
  body: unknown;
  headers?: Headers | Record<string, string | undefined>;
}

const SURFACES = {
  management: { routes: v1Routes, prefix: '/v1' },
  sales: { routes: liveRoutes, prefix: '/live' },
} as const;

interface State {
  document: OpenApiDocument;
  ajv: Ajv2020;
  validators: Map<string, ValidateFunction>;
  documentId: string;
  prefix: string;
}

const cached = new Map<string, State>();

/** The checker of one surface's document at one version (each version's document describes its own shapes). */
function state(surface: Surface = 'management', version = CURRENT_VERSION): State {
  const known = cached.get(`${surface}:${version}`);
  if (known) return known;
  const { routes, prefix } = SURFACES[surface];
  const DOCUMENT_ID = `https://openapi.invalid${prefix}/openapi.json`;
  const document = buildOpenApiDocument(routes, { surface, version });
  const ajv = new Ajv2020({ allErrors: true, strictSchema: true, strictTypes: false, strictTuples: false });
  addFormats.default(ajv);
  // Formats ajv-formats does not know (zod emits e.g. cuid, jwt, e164) are annotations, as JSON Schema allows.
  for (const format of formatsIn(document)) if (!ajv.formats[format]) ajv.addFormat(format, true);
  // The whole document is registered so that its own `#/components/...` refs resolve; its top-level
  // members (openapi, info, paths, ...) are not JSON Schema keywords, so they are declared as annotations.
  for (const key of Object.keys(document)) ajv.addKeyword({ keyword: key });
  ajv.addSchema({ ...document, $id: DOCUMENT_ID });
  const built = { document, ajv, validators: new Map(), documentId: DOCUMENT_ID, prefix };
  cached.set(`${surface}:${version}`, built);
  return built;
}

/** The document the checker validates against (the same one schema/openapi.json holds). */
export function documentUnderTest(surface: Surface = 'management'): OpenApiDocument {
  return state(surface).document;
}

/** The path template of the document that `path` names, or undefined. */
export function matchPathTemplate(path: string, document: OpenApiDocument = documentUnderTest(), prefix = '/v1'): string | undefined {
  let concrete = path.split('?')[0]!;
  if (concrete.startsWith(`${prefix}/`)) concrete = concrete.slice(prefix.length);
  if (Object.hasOwn(document.paths, concrete)) return concrete;
  const segments = concrete.split('/');
  // A literal segment wins over a parameter, as OpenAPI prescribes for /roles/mine vs /roles/{id}.
  const candidates = Object.keys(document.paths)
    .filter((template) => {
      const parts = template.split('/');
      return parts.length === segments.length && parts.every((part, i) => /^\{\w+\}$/.test(part) || part === segments[i]);
    })
    .sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0));
  return candidates[0];
}

/** What is wrong with `response` as an answer to `method path` according to the document; [] when nothing. */
export function responseProblems(
  method: string,
  path: string,
  response: ObservedResponse,
  surface: Surface = 'management',
  version = CURRENT_VERSION,
): string[] {
  const { document, ajv, validators, documentId, prefix } = state(surface, version);
  const template = matchPathTemplate(path, document, prefix);
  if (!template) return [`no path of the document matches ${path}`];
  const methodKey = method.toLowerCase() as keyof (typeof document.paths)[string];
  const operation = document.paths[template]![methodKey];
  if (!operation) return [`${method.toUpperCase()} ${template} is not in the document`];

  const status = String(response.status);
  const statusKey = [status, `${status[0]}XX`, 'default'].find((key) => Object.hasOwn(operation.responses, key));
  if (!statusKey) return [`${method.toUpperCase()} ${template} documents no ${status} answer`];
  let pointer = `/paths/${escape(template)}/${methodKey}/responses/${statusKey}`;
  let responseObject = operation.responses[statusKey] as Json;
  if (typeof responseObject.$ref === 'string') {
    pointer = responseObject.$ref.slice(1);
    responseObject = resolve(document, responseObject.$ref);
  }
  if (/^2/.test(status) && statusKey !== status) {
    return [`${method.toUpperCase()} ${template} answered ${status}; the document says ${Object.keys(operation.responses)[0]}`];
  }

  const problems: string[] = [];
  const content = responseObject.content as Record<string, { schema?: unknown }> | undefined;
  if (content?.['application/json']) {
    const schemaPointer = `${pointer}/content/${escape('application/json')}/schema`;
    let validate = validators.get(schemaPointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `${documentId}#${schemaPointer}` });
      validators.set(schemaPointer, validate);
    }
    if (!validate(response.body)) {
      for (const error of validate.errors ?? []) {
        const params = JSON.stringify(error.params);
        problems.push(`body${error.instancePath || ''}: ${error.message} ${params} (schema ${error.schemaPath})`);
      }
    }
    if (response.headers) {
      const contentType = headerOf(response.headers, 'content-type');
      if (!contentType?.startsWith('application/json')) problems.push(`content-type is ${contentType ?? 'missing'}, not application/json`);
    }
  } else if (response.body !== undefined && response.body !== '') {
    problems.push('the document declares no body for this answer, but there is one');
  }

  if (response.headers) {
    for (const [name, header] of Object.entries((responseObject.headers ?? {}) as Record<string, Json>)) {
      const definition = typeof header.$ref === 'string' ? resolve(document, header.$ref) : header;
      const value = headerOf(response.headers, name);
      if (value === undefined) {
        if (definition.required) problems.push(`header ${name} is missing`);
        continue;
      }
      const key = `${name}:${JSON.stringify(definition.schema)}`;
      let validate = validators.get(key);
      if (!validate) {
        validate = ajv.compile((definition.schema ?? {}) as Json);
        validators.set(key, validate);
      }
      if (!validate(value)) problems.push(`header ${name}: ${JSON.stringify(value)} ${ajv.errorsText(validate.errors)}`);
    }
  }
  return problems;
}

/** Throws, naming every problem and the body, when `response` is not what the document promises. */
export function expectDocumentedResponse(
  method: string,
  path: string,
  response: ObservedResponse,
  surface: Surface = 'management',
  version = CURRENT_VERSION,
): void {
  const problems = responseProblems(method, path, response, surface, version);
  if (problems.length > 0) {
    throw new Error(
      `${method.toUpperCase()} ${path} -> ${response.status} does not match the OpenAPI document:\n  ${problems.join('\n  ')}\nbody: ${JSON.stringify(response.body, null, 2)}`,
    );
  }
}

function headerOf(headers: NonNullable<ObservedResponse['headers']>, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const found = Object.entries(headers).find(([key]) => key.toLowerCase() === name.toLowerCase());
  return found?.[1];
}

const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

function resolve(document: OpenApiDocument, ref: string): Json {
  let node: unknown = document;
  for (const part of ref.replace(/^#\//, '').split('/')) {
    node = (node as Json)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  if (!node || typeof node !== 'object') throw new Error(`OpenAPI document: ${ref} does not resolve`);
  return node as Json;
}

function formatsIn(value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((item) => formatsIn(item, found));
  else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key === 'format' && typeof item === 'string') found.add(item);
      else formatsIn(item, found);
    }
  }
  return found;
}
