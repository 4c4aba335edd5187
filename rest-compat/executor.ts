import type { NextFunction, Request, Response, Router } from 'express';
import {
  getNamedType,
  Kind,
  OperationTypeNode,
  parse,
  specifiedRules,
  typeFromAST,
  validate,
  type DocumentNode,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import type { RequestContext } from '../src/context.ts';
import { AppError, toAppError, type ValidationIssue } from '../src/errors.ts';
import { operationLimitsRule } from '../src/graphql/limits.ts';
import type { GraphqlPipeline } from '../src/graphql/pipeline.ts';
import { idempotently } from '../src/http/idempotency.ts';
import { inputProblem } from '../src/http/input-safety.ts';
import { contextOf } from '../src/http/request-context.ts';
import { isJsonMediaType } from '../src/http/middleware.ts';
import { operationOf, refusedEnum } from '../src/graphql/variables.ts';
import { WORDS } from '../src/validation.ts';
import { enumPlaces, namesIn, valuesIn } from './enums.ts';
import type { Binding, RestRoute, Source } from './route.ts';
import { labelRoute } from '../src/http/metrics.ts';
import { routeVersioning, type RouteVersioning } from './versioned.ts';
import { rootFieldRefusal } from '../schema/root-field-access.ts';
import { failuresAsErrors } from '../schema/payload.ts';

interface PreparedRoute {
  route: RestRoute;
  document: DocumentNode;
  versioning: RouteVersioning;
  /** The operation's one root field, whose scopes are judged before the request's input. */
  root: { operation: 'query' | 'mutation'; field: string };
}

/**
 * Parses and validates every route's operation once (with the same rules as /graphql, limits
 * included), so a broken route fails at start-up and no request re-validates its document.
 */
export function prepareRoutes(schema: GraphQLSchema, routes: readonly RestRoute[]): PreparedRoute[] {
  return routes.map((route) => {
    const document = parse(route.operation);
    const errors = validate(schema, document, [...specifiedRules, operationLimitsRule]);
    if (errors.length > 0) {
      throw new Error(`REST route ${route.method} ${route.path}: ${errors.map((e) => e.message).join('; ')}`);
    }
    const operation = operationOf(document)!;
    const [first] = operation.selectionSet.selections;
    if (
      operation.selectionSet.selections.length !== 1 ||
      first?.kind !== Kind.FIELD ||
      operation.operation === OperationTypeNode.SUBSCRIPTION
    ) {
      throw new Error(`REST route ${route.method} ${route.path}: the operation must be a query or mutation of one root field`);
    }
    return {
      route,
      document,
      versioning: routeVersioning(route.response, route.body),
      root: { operation: operation.operation, field: first.name.value },
    };
  });
}

/** `/accounts/{id}` -> `/accounts/:id` */
export function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/**
 * A request body that is not JSON answers 415 (docs/spec/contract.md) instead of being
 * ignored: `text/plain`, a form, or a body sent with no Content-Type at all. Mounted before the
 * JSON parser. A request without a body (no Content-Length or 0, no Transfer-Encoding) passes.
 */
export function requireJsonBody(req: Request, _res: Response, next: NextFunction): void {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  const type = req.headers['content-type'];
  if (hasBody && !isJsonMediaType(type)) {
    return next(
      new AppError(
        'UNSUPPORTED_MEDIA_TYPE',
        `The request body must be application/json${type ? `, not ${type.slice(0, 100)}` : ' (no Content-Type was sent)'}.`,
      ),
    );
  }
  next();
}

/**
 * The last handler of a route table: a path the table serves, asked with a method it does not,
 * answers 405 with `Allow` (docs/spec/contract.md); anything else goes on to 404.
 */
export function methodNotAllowed(routes: readonly RestRoute[]) {
  const patterns = routes.map((route) => ({
    method: route.method.toUpperCase(),
    match: new RegExp(
      `^${route.path
        .split('/')
        .map((part) => (/^\{\w+\}$/.test(part) ? '[^/]+' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
        .join('/')}/?$`,
    ),
  }));
  return (req: Request, _res: Response, next: NextFunction): void => {
    const allowed = [...new Set(patterns.filter((pattern) => pattern.match.test(req.path)).map((pattern) => pattern.method))];
    if (allowed.length === 0) return next();
    if (allowed.includes('GET')) allowed.push('HEAD');
    const allow = allowed.join(', ');
    next(
      new AppError('METHOD_NOT_ALLOWED', `${req.method} is not served on ${req.path}; it serves ${allow}.`, undefined, { Allow: allow }),
    );
  };
}

export function mountRoutes(router: Router, pipeline: GraphqlPipeline, routes: readonly RestRoute[]): void {
  const idempotency = (route: RestRoute, config: RequestContext['runtime']['config']) => ({
    replay: route.replay ?? 'replay',
    claimTimeoutMs: config.IDEMPOTENCY_CLAIM_TIMEOUT,
    keysPerCredential: config.IDEMPOTENCY_KEYS_PER_CREDENTIAL,
    keysPerAddress: config.IDEMPOTENCY_KEYS_PER_ADDRESS,
  });
  for (const { route, document, versioning, root } of prepareRoutes(pipeline.schema, routes)) {
    const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
    const inputTypes = variableInputTypes(pipeline.schema, document);
    const types = new Map([...inputTypes].map(([name, type]) => [name, getNamedType(type).name]));
    const places = enumPlaces(pipeline.schema, document);
    router[method](expressPath(route.path), async (req: Request, res: Response) => {
      labelRoute(res, `${req.baseUrl}${route.path}`);
      const ctx = contextOf(res);
      if (route.organisation && !ctx.organisationSlug) {
        throw new AppError(ctx.principal ? 'ORG_REQUIRED' : 'UNAUTHENTICATED');
      }
      // Who is calling is judged before what they sent (the body, the Idempotency-Key).
      const refused = await rootFieldRefusal(pipeline.schema, root.operation, root.field, ctx);
      if (refused) throw refused;
      // What no use case could read (NUL, lone surrogates, nesting beyond the bound) is refused
      // before anything reads it, the Idempotency-Key's hash of the body included.
      for (const [where, value] of [
        ['params', req.params],
        ['query', req.query],
        ['body', req.body],
      ] as const) {
        const problem = inputProblem(value, where === 'body' ? '' : where);
        if (problem) throw AppError.validation([{ ...problem, path: problem.path || '(root)' }]);
      }
      const answer = async () => {
        // A body in an older version's shape is read in the current one (src/versions.ts).
        req.body = versioning.body(req.body, ctx.apiVersion);
        const unbound = unboundInput(route.bind ?? {}, types, req);
        if (unbound.length > 0) throw AppError.validation(unbound, 'The request names parameters or fields this route does not take.');
        const variables = variablesOf(route.bind ?? {}, types, req);
        for (const [name, type] of inputTypes) if (name in variables) variables[name] = namesIn(variables[name], type);
        try {
          const data = valuesIn(await runOperation(pipeline, document, variables, ctx), places);
          return { status: route.status ?? 200, body: versioning.response(route.result(data), ctx.apiVersion) };
        } catch (error) {
          throw restPaths(error, route.bind ?? {}, req, inputTypes);
        }
      };
      if (route.method === 'POST') await idempotently(ctx.runtime.db, ctx, req, res, idempotency(route, ctx.runtime.config), answer);
      else {
        const { status, body } = await answer();
        res.status(status).json(body);
      }
    });
  }
}

/** The input type of each variable of the operation. */
function variableInputTypes(schema: GraphQLSchema, document: DocumentNode): Map<string, GraphQLInputType> {
  const types = new Map<string, GraphQLInputType>();
  for (const definition of operationOf(document)?.variableDefinitions ?? []) {
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    if (type) types.set(definition.variable.name.value, type);
  }
  return types;
}

/**
 * The operation's variables, read from the request as the route binds them. Path and query values
 * arrive as text: one that reads as the number or boolean its variable's type wants becomes it;
 * anything else goes on as it came, for the operation's types to refuse in the service's words.
 */
function variablesOf(bind: Binding, types: Map<string, string>, req: Request): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  const spread = bind['...'];
  const body = isObject(req.body) ? (req.body as Record<string, unknown>) : {};
  if (spread === 'query') Object.assign(variables, req.query);
  if (spread === 'body') Object.assign(variables, body);
  for (const [name, source] of Object.entries(bind)) {
    if (name === '...' || source === undefined) continue;
    variables[name] = source === 'body' ? (req.body ?? {}) : readSource(source, req, body);
  }
  for (const [name, value] of Object.entries(variables)) {
    if (typeof value !== 'string' || (spread !== 'query' && !String(bind[name] ?? '').match(/^(params|query)\./))) continue;
    variables[name] = fromText(value, types.get(name));
  }
  return variables;
}

/**
 * Query parameters and body fields that no variable of the operation takes: refused, naming each,
 * rather than dropped (a misspelt filter would otherwise answer the whole list, a misspelt field
 * leave the value unchanged). A body bound whole is its input type's to judge; a route that binds
 * no body field takes none (test/platform/rest-unknown-input.test.ts).
 */
function unboundInput(bind: Binding, types: Map<string, string>, req: Request): ValidationIssue[] {
  const named = Object.entries(bind).filter((entry): entry is [string, Source] => entry[0] !== '...' && entry[1] !== undefined);
  if (named.some(([, source]) => source === 'body')) return unboundQuery(bind, named, types, req);
  const bodyFields = new Set(named.flatMap(([, source]) => (source.startsWith('body.') ? [source.slice('body.'.length)] : [])));
  if (bind['...'] === 'body') for (const name of spreadable(named, types)) bodyFields.add(name);
  const issues = unboundQuery(bind, named, types, req);
  const body: unknown = req.body;
  if (body === undefined || body === null) return issues;
  if (!isObject(body)) return [...issues, { path: '(root)', message: 'a JSON object' }];
  for (const field of Object.keys(body)) {
    if (bodyFields.has(field)) continue;
    issues.push({ path: field, message: takes('field', bodyFields) });
  }
  return issues;
}

function unboundQuery(bind: Binding, named: Array<[string, Source]>, types: Map<string, string>, req: Request): ValidationIssue[] {
  const parameters = new Set(named.flatMap(([, source]) => (source.startsWith('query.') ? [source.slice('query.'.length)] : [])));
  // Every list takes page and limit (docs/spec/contract.md): a client that always sends them is
  // not refused on one whose answer is never more than a page.
  const paging = req.method === 'GET' ? PAGE_PARAMETERS : [];
  if (bind['...'] === 'query') for (const name of spreadable(named, types)) parameters.add(name);
  return Object.keys(req.query)
    .filter((parameter) => !parameters.has(parameter) && !paging.includes(parameter))
    .map((parameter) => ({ path: `query.${parameter.slice(0, 100)}`, message: takes('parameter', parameters) }));
}

const PAGE_PARAMETERS = ['page', 'limit'];

/** The operation's variables a `'...'` spread may fill: those no named source fills. */
function spreadable(named: Array<[string, Source]>, types: Map<string, string>): string[] {
  const taken = new Set(named.map(([name]) => name));
  return [...types.keys()].filter((name) => !taken.has(name));
}

function takes(what: 'parameter' | 'field', known: Set<string>): string {
  if (known.size === 0) return `unknown ${what}: this route takes none`;
  return `unknown ${what}: this route takes ${[...known].sort().join(', ')}`;
}

function readSource(source: string, req: Request, body: Record<string, unknown>): unknown {
  const [part, key] = source.split('.', 2) as ['params' | 'query' | 'body', string];
  if (part === 'params') return req.params[key];
  if (part === 'query') return (req.query as Record<string, unknown>)[key];
  return body[key];
}

function fromText(text: string, type: string | undefined): unknown {
  if (type === 'Int' && /^-?\d{1,15}$/.test(text)) return Number(text);
  if (type === 'Float' && text.trim() !== '' && Number.isFinite(Number(text))) return Number(text);
  if (type === 'Boolean' && (text === 'true' || text === 'false')) return text === 'true';
  return text;
}

function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A refusal as the REST client sent it: an issue about a variable (`variables.page`, or a field a
 * service checked, `status`) names where that value came from (`query.page`, `params.id`, a body
 * field). Body fields keep their bare path, as the contract's details always had them.
 */
function restPaths(error: unknown, bind: Binding, req: Request, inputTypes: Map<string, GraphQLInputType>): unknown {
  const appError = toAppError(error);
  if (appError.code !== 'VALIDATION_FAILED' || !Array.isArray(appError.details)) return error;
  const queryKeys = new Set(Object.keys(req.query));
  const placeOf = (variable: string): string | undefined => {
    const source = bind[variable];
    if (source === 'body') return '';
    if (typeof source === 'string' && source.includes('.')) return source.startsWith('body.') ? source.slice('body.'.length) : source;
    if (bind['...'] === 'query' && (queryKeys.has(variable) || !isObject(req.body))) return `query.${variable}`;
    return undefined;
  };
  const details = (appError.details as ValidationIssue[]).map((given) => {
    let issue = given;
    const segments = issue.path.split('.');
    const fromVariables = segments[0] === 'variables';
    const [variable, ...rest] = fromVariables ? segments.slice(1) : segments;
    // A value outside an enum is described by the contract's values, not the graph's names.
    const type = fromVariables && variable !== undefined ? inputTypes.get(variable) : undefined;
    const enumType = type && refusedEnum(type, rest, issue.message);
    if (enumType) {
      issue = { ...issue, message: WORDS.oneOf(enumType.getValues().map((value) => value.value as string)) };
    }
    const place = variable === undefined ? undefined : placeOf(variable);
    if (place === undefined) return fromVariables ? { ...issue, path: [variable, ...rest].join('.') } : issue;
    return { ...issue, path: [place, ...rest].filter((part) => part !== '').join('.') || '(root)' };
  });
  return new AppError(appError.code, appError.message, details, appError.headers);
}
/** Runs one operation through the GraphQL pipeline; the first error becomes the REST error with the same code. */
export async function runOperation(
  pipeline: GraphqlPipeline,
  document: DocumentNode,
  variableValues: Record<string, unknown>,
  ctx: RequestContext,
): Promise<Record<string, unknown>> {
  failuresAsErrors(ctx);
  const result = await pipeline.execute(document, variableValues, ctx);
  const [first] = result.errors ?? [];
  if (first) throw toAppError(first);
  return result.data ?? {};
}
