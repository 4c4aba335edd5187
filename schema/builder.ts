import SchemaBuilder from '@pothos/core';
import { GraphQLScalarType, Kind } from 'graphql';
import PrismaPlugin from '@pothos/plugin-prisma';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import {
  DateTimeResolver,
  EmailAddressResolver,
  HexColorCodeResolver,
  JSONObjectResolver,
  LocalDateResolver,
  SafeIntResolver,
  TimeZoneResolver,
  URLResolver,
} from 'graphql-scalars';
import { signedInCustomer, type RequestContext } from '../src/context.ts';
import type PrismaTypes from '../src/generated/pothos-types.ts';
import { getDatamodel } from '../src/generated/pothos-types.ts';
import { refusal } from './refusal.ts';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../src/pagination.ts';

/**
 * Scopes every root field and every object holding tenant data declares with `authScopes`.
 * Staff permissions, API-key scopes and embed scopes all resolve here, through ctx.access.
 */
export interface AuthScopes {
  /** Anyone, with or without a credential, except a sales channel key (the sales API only). */
  public: boolean;
  /** Any valid management credential (not a sales channel key). */
  authenticated: boolean;
  /** A signed-in person (staff access token); API keys and embed tokens are refused. */
  signedInUser: boolean;
  /** A valid credential acting inside the organisation named by X-Service-Org. */
  organisation: boolean;
  /** `resource.action` allowed on at least one account of the organisation. */
  permission: string;
  /** `resource.action` allowed on every account of the organisation (`:all`). */
  organisationPermission: string;
  /** A sales channel key (svpk_ or svsk_) of an active channel: the sales API. No management credential. */
  salesChannel: boolean;
  /** A storefront customer's token (magic-link sign-in): the sales API's `me` routes. */
  customer: boolean;
}

function split(permission: string): [string, string] {
  const [resource, action] = permission.split('.');
  return [resource!, action!];
}

export const builder = new SchemaBuilder<{
  Context: RequestContext;
  PrismaTypes: PrismaTypes;
  AuthScopes: AuthScopes;
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: string; Output: Date | string };
    EmailAddress: { Input: string; Output: string };
    HexColorCode: { Input: string; Output: string };
    JSONObject: { Input: Record<string, unknown>; Output: Record<string, unknown> };
    LocalDate: { Input: string; Output: string };
    SafeInt: { Input: number; Output: number };
    TimeZone: { Input: string; Output: string };
    URL: { Input: string; Output: URL | string };
  };
}>({
  plugins: [ScopeAuthPlugin, PrismaPlugin, RelayPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    authorizeOnSubscribe: true,
    unauthorizedError: (_parent, context, _info, result) => refusal(context, result.failure),
    authScopes: (ctx) => {
      const kind = ctx.principal?.kind;
      const management = kind !== undefined && kind !== 'channel' && kind !== 'customer';
      return {
        public: kind !== 'channel' && kind !== 'customer',
        authenticated: management,
        signedInUser: ctx.principal?.kind === 'staff',
        organisation: management && ctx.organisation !== null,
        permission: (permission) => management && ctx.organisation !== null && ctx.access.allowsSomewhere(...split(permission)),
        organisationPermission: (permission) => management && ctx.organisation !== null && ctx.access.allows(...split(permission)),
        salesChannel: kind === 'channel' && ctx.organisation !== null,
        customer: signedInCustomer(ctx.principal) !== null && ctx.organisation !== null,
      };
    },
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
    pageInfoTypeOptions: { description: 'Relay cursor position of a page.' },
    hasNextPageFieldOptions: { description: 'Whether items follow this page.' },
    hasPreviousPageFieldOptions: { description: 'Whether items precede this page.' },
    startCursorFieldOptions: { description: 'Cursor of the first item of this page, or null when it is empty.' },
    endCursorFieldOptions: { description: 'Cursor of the last item of this page, or null when it is empty.' },
    edgesFieldOptions: { description: 'The items of this page with their cursors.' },
    pageInfoFieldOptions: { description: 'Relay cursor position.' },
    cursorFieldOptions: {
      description: 'Opaque cursor of this item (its place in the list order): pass it as `after` or `before`.',
    },
    nodeFieldOptions: { description: 'The item.' },
    firstArgOptions: {
      description: `The first rows (0 to ${MAX_LIMIT}), after \`after\` when given; without first or last, the first ${DEFAULT_LIMIT}.`,
    },
    afterArgOptions: { description: "Rows after this cursor (an edge's cursor or pageInfo.endCursor)." },
    lastArgOptions: { description: `The last rows (0 to ${MAX_LIMIT}), before \`before\` when given.` },
    beforeArgOptions: { description: "Rows before this cursor (an edge's cursor or pageInfo.startCursor)." },
  },
});

/**
 * As an input, each of these scalars takes a string and hands it on untouched: the use case's
 * schema judges its format, in the same words on both surfaces (schema/input.ts). As an output
 * each formats as graphql-scalars does.
 */
function handedOver(scalar: GraphQLScalarType, serialize = scalar.serialize.bind(scalar)): GraphQLScalarType {
  const text = (value: unknown): string => {
    if (typeof value !== 'string') throw new TypeError(`${scalar.name} cannot represent a non-string value`);
    return value;
  };
  return new GraphQLScalarType({
    ...scalar.toConfig(),
    serialize,
    parseValue: text,
    parseLiteral: (ast) => text(ast.kind === Kind.STRING ? ast.value : undefined),
  });
}

// graphql-scalars validates a zone by constructing Intl.DateTimeFormat twice per value (~80 µs);
// zones are few, so each is validated once.
const knownZones = new Set<string>();
const checkZone = (validate: (value: unknown) => unknown) => (value: unknown) => {
  if (typeof value === 'string' && knownZones.has(value)) return value;
  const zone = validate(value);
  if (typeof zone === 'string' && knownZones.size < 1000) knownZones.add(zone);
  return zone;
};

builder.addScalarType('DateTime', handedOver(DateTimeResolver));
builder.addScalarType('EmailAddress', handedOver(EmailAddressResolver));
builder.addScalarType('HexColorCode', handedOver(HexColorCodeResolver));
builder.addScalarType('JSONObject', JSONObjectResolver);
builder.addScalarType('LocalDate', handedOver(LocalDateResolver));
// Sums of money (revenue) outgrow GraphQL's 32-bit Int: 2^31 cents are 21 million euros (schema/types/money.ts).
builder.addScalarType('SafeInt', SafeIntResolver);
builder.addScalarType('TimeZone', handedOver(TimeZoneResolver, checkZone(TimeZoneResolver.serialize.bind(TimeZoneResolver))));
builder.addScalarType('URL', handedOver(URLResolver));

builder.queryType({ description: 'Reads of the management API.' });
builder.mutationType({ description: 'Changes through the management API.' });
