import {
  getNamedType,
  isCompositeType,
  Kind,
  OperationTypeNode,
  parse,
  type GraphQLCompositeType,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import type { MutationReplay } from '../src/graphql/keyed-mutations.ts';
import { operationOf } from '../src/graphql/variables.ts';
import type { RestRoute } from './route.ts';

/**
 * How /graphql keeps a mutation's answer under an Idempotency-Key, read from the route tables so
 * the surfaces cannot disagree: a root field whose route never replays (its answer is a token pair)
 * is never kept on /graphql either, and each secret a route names is traced to the field that
 * answers it (`CreatedApiKey.key`), which a kept GraphQL answer leaves out wherever it is selected.
 * A secret path that does not lead to a field of its operation fails at start-up.
 */
export function mutationReplay(schema: GraphQLSchema, routes: readonly RestRoute[]): MutationReplay {
  const never = new Set<string>();
  const secretFields = new Set<string>();
  for (const route of routes) {
    const operation = operationOf(parse(route.operation));
    if (!operation || operation.operation !== OperationTypeNode.MUTATION || route.replay === undefined || route.replay === 'replay')
      continue;
    const [root] = operation.selectionSet.selections;
    if (root?.kind !== Kind.FIELD) continue;
    if (route.replay === 'never') {
      never.add(root.name.value);
      continue;
    }
    // The route's answer built from a result whose every leaf is its field's coordinate.
    const answer = route.result(coordinates(operation.selectionSet, schema.getMutationType()!));
    for (const path of route.replay.secrets) {
      const field = path.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], answer);
      if (typeof field !== 'string') throw new Error(`${route.method} ${route.path}: the secret ${path} is not a field of its operation`);
      secretFields.add(field);
    }
  }
  return { never, secretFields };
}

function coordinates(selectionSet: SelectionSetNode, type: GraphQLCompositeType): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const selection of selectionSet.selections) {
    if (selection.kind !== Kind.FIELD || !('getFields' in type)) continue;
    const name = selection.name.value;
    const named = getNamedType(type.getFields()[name]!.type);
    result[selection.alias?.value ?? name] =
      selection.selectionSet && isCompositeType(named) ? coordinates(selection.selectionSet, named) : `${type.name}.${name}`;
  }
  return result;
}
