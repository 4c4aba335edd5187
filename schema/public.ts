import { mapSchema, MapperKind } from '@graphql-tools/utils';
import { getNamedType, type GraphQLSchema } from 'graphql';
import { isConnection } from '../src/graphql/limits.ts';

/**
 * The schema /graphql serves: every connection field takes the Relay arguments only
 * (first/after, last/before). The whole schema, whose connections also take page/limit, is what
 * /v1 and /live run their operations on: page/limit is their contract's pagination. The two share
 * every type and resolver, so they cannot drift (test/platform/cursors.test.ts).
 */
export function relayArgumentsOnly(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field) => {
      if (!isConnection(getNamedType(field.type)) || !field.args || !('page' in field.args)) return field;
      const { page: _page, limit: _limit, ...args } = field.args;
      return { ...field, args };
    },
  });
}
