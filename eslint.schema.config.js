// The printed schema (schema/schema.graphql) as admin frontends' tooling reads it: @graphql-eslint's
// `schema-recommended` and `schema-relay`, run by `npm run lint` beside eslint.config.js (whose
// type-aware TypeScript rules cannot read GraphQL). Where a rule is adjusted, the reason is beside it.
import graphql from '@graphql-eslint/eslint-plugin';

export default graphqlSchemaRules();

/**
 * The printed schema (schema/schema.graphql) under @graphql-eslint's `schema-recommended` and
 * `schema-relay`, as admin frontends' tooling reads it. Where a rule is adjusted, the reason is
 * beside it.
 */
function graphqlSchemaRules() {
  const recommended = graphql.configs['flat/schema-recommended'].rules;
  const [, naming] = recommended['@graphql-eslint/naming-convention'];
  return [
    {
      files: ['schema/schema.graphql'],
      languageOptions: { parser: graphql.parser, parserOptions: { graphQLConfig: { schema: 'schema/schema.graphql' } } },
      plugins: { '@graphql-eslint': graphql },
      rules: {
        ...recommended,
        ...graphql.configs['flat/schema-relay'].rules,
        // Lists of values (tags, permissions, a connection's `nodes`) are not pages: only lists that
        // page are connections of edges.
        '@graphql-eslint/relay-edge-types': [
          'error',
          { listTypeCanWrapOnlyEdgeType: false, shouldImplementNode: true, withEdgeSuffix: true },
        ],
        // Entities carry `id: ID!` and are Nodes (test/platform/node.test.ts). These types are not
        // entities: mutation payloads, pages, answers of an operation, settings, values (Money), and views that
        // name an entity's id (`ListingEvent.eventId`) rather than claiming it.
        '@graphql-eslint/strict-id-in-types': [
          'error',
          {
            acceptedIdNames: ['id'],
            acceptedIdTypes: ['ID'],
            exceptions: {
              suffixes: ['Payload', 'Connection', 'Edge', 'Result', 'Tokens', 'Info', 'Filters', 'Entry', 'Counters'],
              types: [
                'Accepted',
                'ApiVersion',
                'ApiVersions',
                'CreatedApiKey',
                'CreatedChannelKey',
                'CreatedWebhookEndpoint',
                'CurrentEmbedSession',
                'CustomerOrders',
                'CustomerProfile',
                'CustomerToken',
                'EmbedOrganisation',
                'EmbedSession',
                'ListingAvailability',
                'ListingChannel',
                'ListingEvent',
                'ListingOccurrence',
                'ListingTicketType',
                'Money',
                'AuditEntryAddedEvent',
                'OrderChangedEvent',
                'SalesCountersChangedEvent',
                'WebhookDeliveryChangedEvent',
                'MyPermissions',
                'MyRoles',
                'OrganisationMembership',
                'PageInfo',
                'Pagination',
                'PartnerAccountProvisioning',
                'PassRefusal',
                'ProvisionedPublishableKey',
                'ProvisionedSalesChannel',
                'RotatedWebhookEndpointSecret',
                'SalesCartLine',
                'SalesCheckout',
                'SalesListings',
                'UserError',
                'WebhookAttempt',
                'WebhookEventType',
              ],
            },
          },
        ],
        // `TicketType` and `WebhookEventType` are the domain's names (the contract's resources).
        '@graphql-eslint/naming-convention': [
          'error',
          { ...naming, 'ObjectTypeDefinition,ObjectTypeExtension': { forbiddenPrefixes: ['Type'] } },
        ],
        // Field names follow the contract's, which /v1 clients know (`Order.orderNumber`,
        // `CustomerToken.customerToken`).
        '@graphql-eslint/no-typename-prefix': 'off',
      },
    },
  ];
}
