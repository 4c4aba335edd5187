import type { Request, Response, Router } from 'express';
import { parse, specifiedRules, validate, type DocumentNode, type GraphQLSchema } from 'graphql';
import type { RequestContext } from '../src/context.ts';
import { AppError, issuesFrom, toAppError } from '../src/errors.ts';
import { operationLimitsRule } from '../src/graphql/limits.ts';
import type { GraphqlPipeline } from '../src/graphql/pipeline.ts';
import { inputProblem } from '../src/http/input-safety.ts';
import { contextOf } from '../src/http/request-context.ts';
import type { RestRoute } from './route.ts';

interface PreparedRoute {
  route: RestRoute;
  document: DocumentNode;
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
    return { route, document };
  });
}

/** `/accounts/{id}` -> `/accounts/:id` */
export function expressPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

export function mountRoutes(router: Router, pipeline: GraphqlPipeline, routes: readonly RestRoute[]): void {
  for (const { route, document } of prepareRoutes(pipeline.schema, routes)) {
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
      const data = await runOperation(pipeline, document, route.variables?.(input) ?? {}, ctx);
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

/** Runs one operation through the GraphQL pipeline; the first error becomes the REST error with the same code. */
export async function runOperation(
  pipeline: GraphqlPipeline,
  document: DocumentNode,
  variableValues: Record<string, unknown>,
  ctx: RequestContext,
): Promise<Record<string, unknown>> {
  const result = await pipeline.execute(document, variableValues, ctx);
  const [first] = result.errors ?? [];
  if (first) throw toAppError(first);
  return (result.data ?? {}) as Record<string, unknown>;
}
