import { STATUS_CODES } from 'node:http';
import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '../src/errors.ts';
import { overrideDocumented } from '../src/limits/limits.ts';
import { API_VERSIONS, CURRENT_VERSION } from '../src/versions.ts';
import type { RestRoute } from './route.ts';
import { schemaAtVersion } from './versioned.ts';

/**
 * The OpenAPI 3.1 documents of /v1 and of the sales API (/live), built from the route tables and nothing else: paths, parameters
 * and bodies come from each route's zod schemas, error answers from ERROR_CODES, versions from
 * src/versions.ts. schema/openapi.json is this document printed (scripts/print-openapi.ts);
 * test/platform/openapi.test.ts fails when the two drift.
 */

type Json = Record<string, unknown>;
type Method = RestRoute['method'];

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  servers: Array<{ url: string; description?: string }>;
  tags: Array<{ name: string }>;
  paths: Record<string, Partial<Record<Lowercase<Method>, OpenApiOperation>>>;
  components: {
    securitySchemes: Record<string, Json>;
    parameters: Record<string, Json>;
    headers: Record<string, Json>;
    schemas: Record<string, Json>;
    responses: Record<string, Json>;
  };
}

export interface OpenApiOperation {
  operationId: string;
  summary: string;
  tags: string[];
  security: Array<Record<string, string[]>>;
  parameters: Json[];
  requestBody?: Json;
  responses: Record<string, Json>;
}

export const STAFF_TOKEN_SCHEME = 'staffOrEmbedToken';
export const API_KEY_SCHEME = 'organisationApiKey';
export const CHANNEL_KEY_SCHEME = 'channelKey';
export const CHANNEL_KEY_HEADER_SCHEME = 'channelKeyHeader';
export const CUSTOMER_TOKEN_SCHEME = 'customerToken';

/** The surface a document describes: the management REST layer (/v1) or the sales API (/live). */
export type Surface = 'management' | 'sales';

/** docs/spec/contract.md: these need no X-Service-Org; /meta/versions needs no credential, /auth/* take theirs in the body. */
const isMetaVersions = (route: RestRoute) => route.path === '/meta/versions';
const isAuth = (route: RestRoute) => route.path.startsWith('/auth/');
export const needsCredential = (route: RestRoute) => route.organisation || !(isMetaVersions(route) || isAuth(route));

/** Sales API routes that take a customer token instead of a channel key. */
const isCustomerRoute = (route: RestRoute) => route.path.startsWith('/sales/me/');
/** Sales API routes that read and answer the sales session (X-Live-Session). */
const isSessionRoute = (route: RestRoute) => route.path.startsWith('/sales/carts');

function securityOf(route: RestRoute, surface: Surface): Array<Record<string, string[]>> {
  if (surface === 'sales') {
    return isCustomerRoute(route) ? [{ [CUSTOMER_TOKEN_SCHEME]: [] }] : [{ [CHANNEL_KEY_SCHEME]: [] }, { [CHANNEL_KEY_HEADER_SCHEME]: [] }];
  }
  return needsCredential(route) ? [{ [STAFF_TOKEN_SCHEME]: [] }, { [API_KEY_SCHEME]: [] }] : [];
}

const MANAGEMENT_SECURITY_SCHEMES: Record<string, Json> = {
  [STAFF_TOKEN_SCHEME]: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'A staff access token (POST /auth/login, /auth/refresh, /auth/federate, /auth/invitations/redeem) or an embed session token (POST /embed/sessions), sent as Authorization: Bearer <token> together with X-Service-Org.',
  },
  [API_KEY_SCHEME]: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'svak_…',
    description:
      "An organisation API key (prefix svak_) for servers, sent as Authorization: Bearer <key> together with X-Service-Org naming the key's organisation. A revoked or expired key answers 401; a route outside the key's scopes answers 404. Routes for signed-in people (/me/*, /api-keys) refuse it with 403 SIGNED_IN_USER_REQUIRED.",
  },
};

const SALES_SECURITY_SCHEMES: Record<string, Json> = {
  [CHANNEL_KEY_SCHEME]: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'svpk_… or svsk_…',
    description:
      'A sales channel key as Authorization: Bearer <key>: publishable (svpk_) for browsers and apps, secret (svsk_) for servers only. The key names the organisation, account and channel. Unknown, revoked, inactive-channel or deleted-account keys answer 401; management credentials answer 401.',
  },
  [CHANNEL_KEY_HEADER_SCHEME]: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Channel-Key',
    description: 'The same channel key in X-Channel-Key instead of Authorization.',
  },
  [CUSTOMER_TOKEN_SCHEME]: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      "A customer token (POST /sales/customer-tokens, from a magic-link code) as Authorization: Bearer <token>: the customer's own orders, nothing else.",
  },
};

/** Method order inside a path item, so the printed document does not depend on table order within a path. */
const METHOD_ORDER: readonly Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

const ref = (section: keyof OpenApiDocument['components'], name: string) => ({ $ref: `#/components/${section}/${name}` });

/** `GET /api-keys/{id}/revoke` -> `getApiKeysByIdRevoke` */
export function operationIdOf(method: Method, path: string): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .flatMap((segment) => {
      const param = /^\{(\w+)\}$/.exec(segment);
      const parts = (param ? param[1]! : segment).split(/[^A-Za-z0-9]+/).filter(Boolean);
      return param ? ['By', ...parts] : parts;
    });
  return method.toLowerCase() + words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
}

const pascal = (name: string) => name[0]!.toUpperCase() + name.slice(1);

/** Error codes of ERROR_CODES grouped by HTTP status, in table order. */
function codesByStatus(): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const [code, { status }] of Object.entries(ERROR_CODES) as Array<[ErrorCode, { status: number }]>) {
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return new Map([...byStatus].sort(([a], [b]) => a - b));
}

/** Statuses of error answers a route documents; any other error status falls to `default`. */
function errorStatuses(route: RestRoute): number[] {
  const statuses = [400];
  if (needsCredential(route) || isAuth(route)) statuses.push(401);
  if (needsCredential(route)) statuses.push(403, 404);
  if (needsCredential(route) && route.method !== 'GET') statuses.push(409);
  return statuses;
}

/**
 * zod -> JSON Schema 2020-12 (the dialect of OpenAPI 3.1). `$defs` (recursive or id'd schemas) are
 * hoisted into components.schemas, since a `#/$defs/...` pointer would resolve against the
 * document root once the schema is embedded.
 */
class SchemaConverter {
  readonly hoisted: Record<string, Json> = {};

  constructor(private readonly reserved: ReadonlySet<string>) {}

  convert(schema: z.ZodType, io: 'input' | 'output', hint: string): Json {
    const raw = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', override: overrideDocumented }) as Json;
    const { $schema: _dialect, $defs, ...rest } = raw;
    const defs = Object.entries(($defs ?? {}) as Record<string, Json>);
    // Anonymous defs (cycles) are named after the operation; id'd ones (`.meta({ id })`) keep their id,
    // with an Input suffix when the input form differs from the output form already placed.
    const names = new Map(defs.map(([name], index) => [name, name.startsWith('__') ? `${hint}Def${index}` : name]));
    const clashes = (rewritten: Json[]) => defs.some(([name], i) => this.clashes(names.get(name)!, rewritten[i]!));
    let rewritten = defs.map(([, def]) => rewriteRefs(def, names) as Json);
    if (io === 'input' && clashes(rewritten)) {
      for (const [name] of defs) if (!name.startsWith('__')) names.set(name, `${name}Input`);
      rewritten = defs.map(([, def]) => rewriteRefs(def, names) as Json);
    }
    defs.forEach(([name], i) => {
      const final = names.get(name)!;
      if (this.clashes(final, rewritten[i]!)) {
        throw new Error(`OpenAPI: two different schemas want components.schemas.${final}; give them distinct ids.`);
      }
      this.hoisted[final] = rewritten[i]!;
    });
    return rewriteRefs(rest, names) as Json;
  }

  private clashes(name: string, def: Json): boolean {
    if (this.reserved.has(name)) return true;
    return Object.hasOwn(this.hoisted, name) && JSON.stringify(this.hoisted[name]) !== JSON.stringify(def);
  }
}

function rewriteRefs(value: unknown, names: Map<string, string>): unknown {
  if (Array.isArray(value)) return value.map((item) => rewriteRefs(item, names));
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [key, item] of Object.entries(value)) {
    const local = key === '$ref' && typeof item === 'string' ? /^#\/\$defs\/(.+)$/.exec(item) : null;
    out[key] = local && names.has(local[1]!) ? `#/components/schemas/${names.get(local[1]!)}` : rewriteRefs(item, names);
  }
  return out;
}

export function buildOpenApiDocument(
  routes: readonly RestRoute[],
  options: { serverUrl?: string; surface?: Surface; version?: string } = {},
): OpenApiDocument {
  const surface = options.surface ?? 'management';
  // Responses and bodies are described at this version (the served document follows the request's).
  const version = options.version ?? CURRENT_VERSION;
  const byStatus = codesByStatus();
  const errorResponseName = (status: number) => `Error${status}`;
  const converter = new SchemaConverter(new Set(['ErrorResponse', 'ValidationIssue']));

  const seen = new Map<string, string>();
  const paths: OpenApiDocument['paths'] = {};
  const tags: string[] = [];

  const ordered = routes
    .map((route, index) => ({ route, index }))
    .sort((a, b) => {
      const pathA = routes.findIndex((r) => r.path === a.route.path);
      const pathB = routes.findIndex((r) => r.path === b.route.path);
      return pathA - pathB || METHOD_ORDER.indexOf(a.route.method) - METHOD_ORDER.indexOf(b.route.method) || a.index - b.index;
    })
    .map(({ route }) => route);

  for (const route of ordered) {
    const key = `${route.method} ${route.path}`;
    const operationId = operationIdOf(route.method, route.path);
    const clash = seen.get(operationId);
    if (clash) throw new Error(`OpenAPI: ${key} and ${clash} both map to operationId ${operationId}.`);
    seen.set(operationId, key);
    if (!tags.includes(route.tag)) tags.push(route.tag);
    const hint = pascal(operationId);

    const parameters: Json[] = [];
    const paramsSchema = route.params ? converter.convert(route.params, 'input', `${hint}Params`) : undefined;
    for (const [, name] of route.path.matchAll(/\{(\w+)\}/g)) {
      parameters.push(parameter(name!, 'path', true, propertyOf(paramsSchema, name!) ?? { type: 'string' }));
    }
    if (route.query) {
      const querySchema = converter.convert(route.query, 'input', `${hint}Query`);
      const required = new Set((querySchema.required as string[] | undefined) ?? []);
      for (const name of Object.keys((querySchema.properties as Json | undefined) ?? {})) {
        parameters.push(parameter(name, 'query', required.has(name), propertyOf(querySchema, name)!));
      }
    }
    if (route.organisation) parameters.push(ref('parameters', 'X-Service-Org'));
    if (surface === 'sales' && isSessionRoute(route)) parameters.push(ref('parameters', 'X-Live-Session'));
    parameters.push(ref('parameters', 'Service-Version'));
    if (route.method === 'POST') parameters.push(ref('parameters', 'Idempotency-Key'));

    // The executor reads a missing body as {}: the body is optional exactly when {} is valid.
    const requestBody = route.body && {
      required: !route.body.safeParse({}).success,
      content: {
        'application/json': {
          schema: schemaAtVersion(converter.convert(route.body, 'input', `${hint}Body`), route.body, version, 'input'),
        },
      },
    };

    const status = route.status ?? 200;
    const responses: Record<string, Json> = {
      [String(status)]: {
        description: STATUS_CODES[status] ?? 'Success',
        headers: {
          'X-Request-Id': ref('headers', 'X-Request-Id'),
          'Service-Version': ref('headers', 'Service-Version'),
          ...(surface === 'sales' && isSessionRoute(route) ? { 'X-Live-Session': ref('headers', 'X-Live-Session') } : {}),
        },
        content: {
          'application/json': {
            schema: route.response
              ? schemaAtVersion(converter.convert(route.response, 'output', `${hint}Response`), route.response, version, 'output')
              : {},
          },
        },
      },
    };
    for (const errorStatus of errorStatuses(route)) responses[String(errorStatus)] = ref('responses', errorResponseName(errorStatus));
    responses.default = ref('responses', 'Error');

    const operation: OpenApiOperation = {
      operationId,
      summary: route.summary,
      tags: [route.tag],
      security: securityOf(route, surface),
      parameters,
      ...(requestBody ? { requestBody } : {}),
      responses,
    };

    const item = (paths[route.path] ??= {});
    const method = route.method.toLowerCase() as Lowercase<Method>;
    if (item[method]) throw new Error(`OpenAPI: ${key} is in the route table twice.`);
    item[method] = operation;
  }

  const errorHeaders = {
    'X-Request-Id': ref('headers', 'X-Request-Id'),
    'Service-Version': ref('headers', 'Service-Version-If-Resolved'),
  };
  const responses: Record<string, Json> = {};
  for (const [status, codes] of byStatus) {
    responses[errorResponseName(status)] = {
      description: `${STATUS_CODES[status] ?? status}: ${codes.map((code) => `${code} (${ERROR_CODES[code].message})`).join('; ')}`,
      headers: errorHeaders,
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/ErrorResponse', type: 'object', properties: { code: { enum: codes } } },
        },
      },
    };
  }
  responses.Error = {
    description: 'Any other error, e.g. 410 GONE, 413, 415, 429 RATE_LIMITED (with Retry-After), 500 INTERNAL, 503.',
    headers: errorHeaders,
    content: { 'application/json': { schema: ref('schemas', 'ErrorResponse') } },
  };

  const usable = API_VERSIONS.filter((v) => v.status !== 'sunset').map((v) => v.date);
  const versionLines = API_VERSIONS.map(
    (v) => `- ${v.date} (${v.status}): ${v.summary}${v.breakingChanges.length > 0 ? ` Changes: ${v.breakingChanges.join('; ')}.` : ''}`,
  ).join('\n');

  const sales = surface === 'sales';
  return {
    openapi: '3.1.0',
    info: {
      title: sales ? 'Ticketing sales API' : 'Ticketing management API (REST compatibility layer)',
      version,
      description: [
        sales
          ? 'The sales API at /live, for storefronts: listings, carts, checkout, secret-key confirmation and customer sign-in. Every route runs an operation of the GraphQL schema in-process. Routes take a sales channel key (publishable svpk_ for browsers, secret svsk_ for servers); the key names the organisation, so X-Service-Org is not needed. GET /sales/me/orders takes a customer token instead. A pending order is paid on the hosted checkout page (checkoutUrl of the checkout answer).'
          : 'The management REST API at /v1. Every route runs an operation of the GraphQL API (/graphql) in-process, with the same rights and errors.',
        '',
        `The API is versioned by date. A request may pin a version with the Service-Version header; otherwise the organisation's pinned version applies, then the current one. Every response names the version it was answered at in its Service-Version header, and is shaped at that version (the same changes shape webhook payloads); a request body in an older version's shape is accepted. This document describes version ${version}: fetched with a Service-Version header (or an organisation's credentials) it describes the version that resolves to. Each version's changes are listed below. A response at a deprecated version carries Deprecation, Sunset (when announced) and Link headers. An unknown or sunset version answers 400 UNSUPPORTED_VERSION.`,
        '',
        versionLines,
        '',
        'Errors answer {error, code, details?, requestId} with the status of their code; every response carries X-Request-Id.',
      ].join('\n'),
    },
    servers: [{ url: options.serverUrl ?? (sales ? '/live' : '/v1') }],
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: sales ? SALES_SECURITY_SCHEMES : MANAGEMENT_SECURITY_SCHEMES,
      parameters: {
        'X-Service-Org': {
          name: 'X-Service-Org',
          in: 'header',
          required: true,
          description:
            "Slug of the organisation the request is for. Must be the credential's organisation (403 ORG_MISMATCH otherwise); missing answers 400 ORG_REQUIRED.",
          schema: { type: 'string', minLength: 1 },
        },
        ...(sales
          ? {
              'X-Live-Session': {
                name: 'X-Live-Session',
                in: 'header',
                required: false,
                description:
                  'The sales session (ses_) the first cart answered; hosted pages may send the live_session cookie instead. A cart is reached with its session (or any cart of the channel with a secret key).',
                schema: { type: 'string' },
              },
            }
          : {}),
        'Idempotency-Key': {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Makes a POST safe to retry: the same key from the same credential with the same request within 24 hours answers the first answer again (header Idempotent-Replayed: true) without doing the work twice; the same key with another request answers 409 CONFLICT.',
          schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[^\\x00-\\x1f\\x7f]+$' },
        },
        'Service-Version': {
          name: 'Service-Version',
          in: 'header',
          required: false,
          description: `Dated API version to answer at. Default: the organisation's pinned version, then ${CURRENT_VERSION}.`,
          schema: { type: 'string', enum: usable },
        },
      },
      headers: {
        'X-Request-Id': {
          description:
            "Id of this request, also in error bodies as requestId and in the service's logs. A well-formed incoming X-Request-Id is kept.",
          required: true,
          schema: { type: 'string' },
        },
        'Service-Version': {
          description: 'The dated API version the request was answered at.',
          required: true,
          schema: { type: 'string', enum: usable },
        },
        ...(sales
          ? {
              'X-Live-Session': {
                description: 'The sales session of the cart (also set as the live_session cookie: HttpOnly, SameSite=Lax, 24 h).',
                required: false,
                schema: { type: 'string' },
              },
            }
          : {}),
        'Service-Version-If-Resolved': {
          description:
            'The dated API version the request was answered at; absent when the request was refused before its version was resolved (credential refused, unknown Service-Version).',
          required: false,
          schema: { type: 'string', enum: usable },
        },
      },
      schemas: {
        ErrorResponse: {
          type: 'object',
          description: 'The body of every error answer.',
          properties: {
            error: { type: 'string', description: 'Human-readable message; not for matching.' },
            code: {
              type: 'string',
              enum: Object.keys(ERROR_CODES),
              description: 'Stable error code; GraphQL errors carry the same in extensions.code.',
            },
            details: { description: 'For VALIDATION_FAILED a list of {path, message}; for some other codes an object.' },
            requestId: { type: 'string', description: 'Equal to the X-Request-Id header.' },
          },
          required: ['error', 'code', 'requestId'],
          additionalProperties: false,
          if: { type: 'object', properties: { code: { const: 'VALIDATION_FAILED' } }, required: ['code'] },
          then: {
            type: 'object',
            properties: { details: { type: 'array', items: ref('schemas', 'ValidationIssue') } },
            required: ['details'],
          },
        },
        ValidationIssue: {
          type: 'object',
          properties: {
            path: {
              type: 'string',
              description:
                'Dotted path of the offending value; query. and params. prefix query and path values; (root) for the whole body; (more) for the entry that counts the issues left out.',
            },
            message: { type: 'string' },
            limit: { type: 'string', description: 'For a refused limit: its name (docs/security.md).' },
            max: { type: 'integer', description: 'For a refused limit: its number.' },
            count: { type: 'integer', description: 'For the (more) entry: how many issues were left out (at most 20 are listed).' },
          },
          required: ['path', 'message'],
          additionalProperties: false,
        },
        ...converter.hoisted,
      },
      responses,
    },
  };
}

function parameter(name: string, where: 'path' | 'query', required: boolean, schema: Json): Json {
  const { description, ...rest } = schema;
  return {
    name,
    in: where,
    required,
    ...(typeof description === 'string' ? { description } : {}),
    schema: rest,
  };
}

function propertyOf(objectSchema: Json | undefined, name: string): Json | undefined {
  return (objectSchema?.properties as Record<string, Json> | undefined)?.[name];
}

/** The document as committed in schema/openapi.json: 2-space JSON and a final newline. */
export function printOpenApiDocument(document: OpenApiDocument): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
