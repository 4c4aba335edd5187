import SchemaBuilder from '@pothos/core';
import PrismaPlugin from '@pothos/plugin-prisma';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import {
  DateTimeResolver,
  EmailAddressResolver,
  HexColorCodeResolver,
  JSONObjectResolver,
  LocalDateResolver,
  TimeZoneResolver,
  URLResolver,
} from 'graphql-scalars';
import type { RequestContext } from '../src/context.ts';
import { AppError } from '../src/errors.ts';
import type PrismaTypes from '../src/generated/pothos-types.ts';
import { getDatamodel } from '../src/generated/pothos-types.ts';

/** Scopes every field declares with `authScopes`; evaluated per request in one place. */
export interface AuthScopes {
  /** Anyone, with or without a credential. */
  public: boolean;
}

export const builder = new SchemaBuilder<{
  Context: RequestContext;
  PrismaTypes: PrismaTypes;
  AuthScopes: AuthScopes;
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: Date; Output: Date | string };
    EmailAddress: { Input: string; Output: string };
    HexColorCode: { Input: string; Output: string };
    JSONObject: { Input: Record<string, unknown>; Output: Record<string, unknown> };
    LocalDate: { Input: string; Output: string };
    TimeZone: { Input: string; Output: string };
    URL: { Input: URL; Output: URL | string };
  };
}>({
  plugins: [ScopeAuthPlugin, PrismaPlugin, RelayPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    authorizeOnSubscribe: true,
    unauthorizedError: (_parent, _context, _info, result) => new AppError('FORBIDDEN', result.message),
    authScopes: async () => ({
      public: true,
    }),
  },
  prisma: {
    client: (ctx) => ctx.db,
    dmmf: getDatamodel(),
    exposeDescriptions: true,
    filterConnectionTotalCount: true,
    onUnusedQuery: null,
  },
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    nodeQueryOptions: false,
    nodesQueryOptions: false,
  },
});

builder.addScalarType('DateTime', DateTimeResolver);
builder.addScalarType('EmailAddress', EmailAddressResolver);
builder.addScalarType('HexColorCode', HexColorCodeResolver);
builder.addScalarType('JSONObject', JSONObjectResolver);
builder.addScalarType('LocalDate', LocalDateResolver);
builder.addScalarType('TimeZone', TimeZoneResolver);
builder.addScalarType('URL', URLResolver);

builder.queryType({ description: 'Reads of the management API.' });
