import { mapSchema, MapperKind } from '@graphql-tools/utils';
import { getNamedType, type GraphQLSchema } from 'graphql';
import { isConnection } from '../src/graphql/limits.ts';

/**
 * The schema /graphql serves: every connection field takes the Relay arguments only (first/after,
 * last/before), and filters their typed arguments (`events(startsFrom:)`, not /v1's `from`: the
 * arguments marked REST_ONLY in schema/pagination.ts are left out). The whole schema, whose
 * connections also take page/limit, is what /v1 and /live run their operations on: page/limit is
 * their contract's pagination. The two share every type and resolver, so they cannot drift
 * (test/platform/cursors.test.ts). Lists that are not connections (a storefront's pages) keep
 * page/limit: it is their only paging.
 */
export function relayArgumentsOnly(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field) => {
      if (!field.args) return field;
      const connection = isConnection(getNamedType(field.type));
      const kept = Object.entries(field.args).filter(
        ([name, arg]) => !arg.extensions?.restOnly && !(connection && (name === 'page' || name === 'limit')),
      );
      return kept.length === Object.keys(field.args).length ? field : { ...field, args: Object.fromEntries(kept) };
    },
  });
}
