import { getNamedType, isObjectType, type GraphQLObjectType } from 'graphql';
import { beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../../schema/index.ts';
import { useTestApp } from '../support/app.ts';
import { staffWithRoles } from '../support/credentials.ts';
import { api, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';

function pothosOptions(field: { extensions?: Record<string, unknown> | null }) {
  return (field.extensions?.pothosOptions ?? {}) as { authScopes?: unknown };
}

describe('every root field declares who may use it', () => {
  it.each(['Query', 'Mutation'])('%s fields all have authScopes', (typeName) => {
    const type = schema.getType(typeName) as GraphQLObjectType;
    const missing = Object.values(type.getFields())
      .filter((field) => pothosOptions(field).authScopes === undefined)
      .map((field) => field.name);
    expect(missing).toEqual([]);
  });

  it('every object type backed by a tenant-owned table declares authScopes', () => {
    const missing = Object.values(schema.getTypeMap())
      .filter(isObjectType)
      .filter((type) => (type.extensions as { pothosPrismaModel?: string }).pothosPrismaModel !== undefined)
      .filter((type) => (type.extensions as { pothosOptions?: { authScopes?: unknown } }).pothosOptions?.authScopes === undefined)
      .map((type) => type.name);
    expect(missing).toEqual([]);
  });
});

describe('every field that answers events answers what a use case authorised', () => {
  it('is one of the fields that return the events use cases (src/services/events.ts) answer', () => {
    // Event's plain columns skip the per-field type check (schema/types/event.ts): which events a
    // caller sees is decided by the use cases. A new field answering events must answer a use
    // case's authorised result too, and be added here.
    const producers = Object.values(schema.getTypeMap())
      .filter(isObjectType)
      .flatMap((type) =>
        Object.values(type.getFields())
          .filter((field) => ['Event', 'EventConnection', 'EventEdge'].includes(getNamedType(field.type).name))
          .map((field) => `${type.name}.${field.name}`),
      )
      .sort();
    expect(producers).toEqual([
      // The events of an account, read where events(accountId:) would list them (events.read on it), by
      // src/services/child-lists.ts under the same conditions (schema/types/event.ts).
      'Account.events',
      'CreateEventPayload.event',
      // Through relatedEvent, as the relations below.
      'DeleteTicketTypePayload.event',
      'EventConnection.edges',
      'EventConnection.nodes',
      'EventEdge.node',
      // Relations answer their event through relatedEvent (schema/types/event.ts), which asks the type's rule.
      'EventOccurrence.event',
      'OrderLineItem.event',
      'Query.event',
      'Query.events',
      'SalesChannel.events',
      'TicketType.event',
      'UpdateEventPayload.event',
      // As Account.events: read where events(venueId:) would list them (events.read on the venue's account).
      'Venue.events',
    ]);
  });
});

describe('authorisation does not depend on field order', () => {
  const app = useTestApp();
  let org: TestOrganisation;
  let viewerToken: string;
  beforeAll(async () => {
    org = await createOrganisation(app, 'order');
    viewerToken = (await staffWithRoles(app, org, ['viewer'])).token;
  });

  const fields = [
    'me { id }',
    'roles { nodes { id } }',
    'apiVersions { current }',
    'myRoles { isOrgAdmin }',
    'roleAssignments { nodes { id } }',
  ];

  function outcome(body: { data?: Record<string, unknown> | null; errors?: Array<{ path?: string[]; extensions?: { code?: string } }> }) {
    const codes = Object.fromEntries(
      (body.errors ?? [])
        .map((error) => [error.path?.[0] ?? '(none)', error.extensions?.code ?? '(none)'])
        .sort(([a], [b]) => a!.localeCompare(b!)),
    );
    const answered = Object.keys(body.data ?? {})
      .filter((key) => body.data![key] !== null)
      .sort();
    return { codes, answered };
  }

  it('gives every permutation of the same fields the same answer, for a limited user and for an API key', async () => {
    const { body: keyBody } = await api(app, 'POST', '/v1/api-keys', {
      token: org.adminToken,
      org: org.slug,
      body: { name: 'order', scopes: ['role_assignments.read'] },
    });
    for (const token of [viewerToken, keyBody.key as string]) {
      const results = new Set<string>();
      const permutations = [
        fields,
        [...fields].reverse(),
        [fields[2], fields[0], fields[4], fields[1], fields[3]],
        [fields[1], fields[3], fields[0], fields[4], fields[2]],
      ];
      for (const order of permutations) {
        const res = await graphql(app, `{ ${order.join(' ')} }`, {}, { token, org: org.slug });
        results.add(JSON.stringify(outcome(res.body)));
      }
      expect([...results]).toHaveLength(1);
      const [only] = [...results];
      expect(JSON.parse(only!).answered).toContain('apiVersions');
    }
  });

  it('answers each refused field with its own code while the others resolve', async () => {
    const res = await graphql(
      app,
      '{ apiVersions { current } roles { nodes { id } } me { id } }',
      {},
      { token: viewerToken, org: org.slug },
    );
    expect(outcome(res.body)).toEqual({ codes: { roles: 'FORBIDDEN' }, answered: ['apiVersions', 'me'] });
  });
});
