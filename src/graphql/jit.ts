import type { DocumentNode, GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { Plugin } from 'graphql-yoga';
import { graphqlArgs } from './execution-args.ts';

/**
 * Operations run as compiled functions (graphql-jit) instead of graphql-js's interpreter, which
 * walks the document for every object of every list: a page of 50 events is ~1,000 field
 * executions. A document is compiled once (Yoga's parser cache and the REST routes' prepared
 * documents hand the same object back), kept as long as the document lives. One that graphql-jit
 * cannot compile runs as before. Variables were already checked (src/graphql/limits.ts), so both
 * paths see the same values; resolvers, scope checks and error masking are the same functions.
 */
const compiled = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, Map<string, CompiledQuery | null>>>();

function compiledFor(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined): CompiledQuery | null {
  let bySchema = compiled.get(schema);
  if (!bySchema) compiled.set(schema, (bySchema = new WeakMap()));
  let byOperation = bySchema.get(document);
  if (!byOperation) bySchema.set(document, (byOperation = new Map<string, CompiledQuery | null>()));
  const key = operationName ?? '';
  let query = byOperation.get(key);
  if (query === undefined) {
    const result = compileQuery(schema, document, operationName ?? undefined, { disableLeafSerialization: false });
    query = isCompiledQuery(result) ? result : null;
    byOperation.set(key, query);
  }
  return query;
}

export function compiledExecution<Context extends object>(): Plugin<Context> {
  return {
    onExecute({ args: envelopArgs, setExecuteFn }) {
      const args = graphqlArgs(envelopArgs);
      const query = compiledFor(args.schema, args.document, args.operationName);
      if (!query) return;
      setExecuteFn((executeArgs) => {
        const { rootValue, contextValue, variableValues } = graphqlArgs(executeArgs);
        return query.query(rootValue, contextValue, variableValues ?? {});
      });
    },
  };
}
