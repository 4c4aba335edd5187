import express, { type Request, type Response, type Router } from 'express';
import { execute, GraphQLError, parse, specifiedRules, validate, type DocumentNode, type GraphQLSchema } from 'graphql';
import type { RequestContext } from '../src/context.ts';
import { AppError, isErrorCode, issuesFrom } from '../src/errors.ts';
import type { RestRoute } from './route.ts';
import { inputProblem } from '../src/http/input-safety.ts';
import { costRefusal, operationLimitsRule } from '../src/graphql/limits.ts';
import { LIMITS } from '../src/limits/limits.ts';

interface PreparedRoute {
  route: RestRoute;
  document: DocumentNode;
}

/** Parses and validates every route's operation once, so a broken route fails at start-up. */
export function prepareRoutes(schema: GraphQLSchema, routes: readonly RestRoute[]): PreparedRoute[] {
  return routes.map((route) => {
    const document = parse(route.operation);
    const errors = validate(schema, document, [...specifiedRules, operationLimitsRule]);
    if (errors.length > 0) {
      throw new Error(`REST route ${route.method} ${route.path}: ${errors.map((e) => e.message).join('; ')}`);
    }
    return { route, document };
  });
}

/** `/accounts/{id}` -> `/accounts/:id` */
export function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

export function mountRoutes(
  router: Router,
  schema: GraphQLSchema,
  routes: readonly RestRoute[],
  contextOf: (res: Response) => RequestContext,
): void {
  for (const { route, document } of prepareRoutes(schema, routes)) {
    const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
    router[method](expressPath(route.path), async (req: Request, res: Response) => {
      const ctx = contextOf(res);
      if (route.organisation && !ctx.organisationSlug) {
        throw new AppError(ctx.principal ? 'ORG_REQUIRED' : 'UNAUTHENTICATED');
      }
      for (const [where, value] of [['params', req.params], ['query', req.query], ['body', req.body]] as const) {
        const problem = inputProblem(value, where === 'body' ? '' : where);
        if (problem) throw AppError.validation([{ ...problem, path: problem.path || '(root)' }]);
      }
      const input = {
        params: parsePart(route.params, req.params, 'params'),
        query: parsePart(route.query, req.query, 'query'),
        body: parsePart(route.body, req.body, 'body'),
      };
      const data = await runOperation(schema, document, route.variables?.(input) ?? {}, ctx);
      res.status(route.status ?? 200).json(route.result(data));
    });
  }
}

function parsePart(schema: RestRoute['params'] | RestRoute['body'], value: unknown, where: string): unknown {
  if (!schema) return value;
  const result = schema.safeParse(where === 'body' && value === undefined ? {} : value);
  if (!result.success) {
    const issues = issuesFrom(result.error.issues).map((issue) => ({
      ...issue,
      path: where === 'body' ? issue.path : `${where}.${issue.path}`,
    }));
    throw AppError.validation(issues);
  }
  return result.data;
}

/** Runs one operation in-process; the first error becomes the REST error with the same code. */
export async function runOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  variableValues: Record<string, unknown>,
  contextValue: RequestContext,
): Promise<Record<string, unknown>> {
  // The same budget as /graphql: a route's page size is bounded, but its document is checked alike.
  const refusal = costRefusal(schema, document, null, variableValues);
  if (refusal) throw AppError.validation([{ path: '(operation)', message: refusal.message, limit: 'maxCost', max: LIMITS.maxCost }]);
  const result = await contextValue.runtime.resultCache.run({ document, variableValues, contextValue }, () =>
    execute({ schema, document, variableValues, contextValue }),
  );
  const [first] = result.errors ?? [];
  if (first) throw toAppError(first);
  return result.data ?? {};
}

function toAppError(error: GraphQLError): Error {
  if (error.originalError instanceof AppError) return error.originalError;
  const code = error.extensions?.code;
  if (isErrorCode(code)) return new AppError(code, error.message, error.extensions?.details);
  // A GraphQL-level error (variable coercion, e.g. an Int beyond 32 bits) means the route's own
  // schema let bad input through: still the caller's input, so a 400, never a 500.
  if (!error.originalError || error.originalError instanceof GraphQLError) {
    return AppError.validation([{ path: '(root)', message: error.message }]);
  }
  // Anything else (a resolver bug, an unexpected fault) reaches the REST error handler as a 500.
  return error.originalError ?? error;
}

/** JSON body parsing shared by the REST routers; its failures use the contract's codes. */
export const jsonBody = express.json({ limit: LIMITS.bodyBytes, strict: true });
