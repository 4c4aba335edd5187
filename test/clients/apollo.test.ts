import { readFileSync } from 'node:fs';
import { ApolloClient, CombinedGraphQLErrors, HttpLink, InMemoryCache } from '@apollo/client';
import { relayStylePagination } from '@apollo/client/utilities';
import { buildClientSchema, buildSchema, getIntrospectionQuery, lexicographicSortSchema, printSchema } from 'graphql';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { as, asAdmin, customRole, staffWithoutRights } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { createOrganisation, createStaffUser, graphql, systemRole, tag, type TestOrganisation } from '../support/fixtures.ts';
import { createEvent, placeOrder, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';
import { SCHEMA } from './codegen.ts';
import { keptOperations, possibleTypes } from './operations.ts';

/**
 * An admin frontend on Apollo Client (its core, without React) and a normalised InMemoryCache,
 * against the live API: the kept operations (test/clients/operations/) normalise into one entry
 * per entity, `fetchMore` over cursor pages neither repeats nor skips a row while rows are added,
 * a mutation's answer updates the cached screens, and a refused mutation leaves the other's payload.
 */
const app = useTestApp();
const ops = keptOperations();
let org: TestOrganisation;
let catalogue: SeededCatalogue;

beforeAll(async () => {
  org = await createOrganisation(app, 'apollo');
  catalogue = await seedCatalogue(app, org);
  await placeOrder(app, catalogue.channel, catalogue);
  await placeOrder(app, catalogue.channel, catalogue, { quantity: 2 });
});

/** The cache an admin frontend sets up (docs/admin-frontends.md, "Typed clients"). */
function adminCache() {
  return new InMemoryCache({
    possibleTypes: possibleTypes(),
    typePolicies: {
      Query: {
        fields: {
          // One cached list per set of filters; the cursor arguments page within it.
          events: relayStylePagination([
            'status',
            'accountId',
            'q',
            'startsFrom',
            'startsTo',
            'startDateFrom',
            'startDateTo',
            'updatedSince',
            'orderBy',
          ]),
          orders: relayStylePagination([
            'status',
            'customerId',
            'accountId',
            'channelId',
            'eventId',
            'occurrenceId',
            'orderNumber',
            'createdAfter',
            'createdBefore',
            'updatedSince',
          ]),
        },
      },
    },
  });
}

/** A client of `who`'s organisation with their token, counting its requests and keeping every JSON answer. */
function adminClient(who: { token?: string; org: string }) {
  const seen = { requests: 0, answers: [] as unknown[] };
  const link = new HttpLink({
    uri: `${app().url}/graphql`,
    headers: { authorization: `Bearer ${who.token ?? ''}`, 'x-service-org': who.org },
    fetch: async (input, init) => {
      seen.requests += 1;
      const res = await fetch(input, init);
      seen.answers.push(await res.clone().json());
      return res;
    },
  });
  return { client: new ApolloClient({ link, cache: adminCache() }), seen };
}

type Entity = { __typename: string; id: string };
const isEntity = (value: unknown): value is Entity =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as Entity).__typename === 'string' &&
  typeof (value as Entity).id === 'string';

/** Every object with `__typename` and `id` anywhere in `value`. */
function entitiesIn(value: unknown, found: Entity[] = []): Entity[] {
  if (Array.isArray(value)) for (const item of value) entitiesIn(item, found);
  else if (typeof value === 'object' && value !== null) {
    if (isEntity(value)) found.push(value);
    for (const child of Object.values(value)) entitiesIn(child, found);
  }
  return found;
}

describe('the schema Apollo reads', () => {
  it('is the printed schema: /graphql introspected prints as schema/schema.graphql', async () => {
    const introspection = getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, inputValueDeprecation: true });
    const res = await graphql(app, introspection, {}, asAdmin(org));
    expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
    const served = printSchema(lexicographicSortSchema(buildClientSchema(res.body.data)));
    const printed = printSchema(lexicographicSortSchema(buildSchema(readFileSync(SCHEMA, 'utf8'))));
    expect(served).toBe(printed);
  });
});

describe('Apollo Client with InMemoryCache', () => {
  it('normalises every entity of the kept operations: one entry `Typename:id` each, no id under two typenames', async () => {
    const { client, seen } = adminClient(asAdmin(org));
    const staff = await staffWithoutRights(app, org, 'apollo-viewer');
    await client.query({ query: ops.EventsList!, variables: { first: 10 } });
    await client.query({ query: ops.EventDetail!, variables: { id: catalogue.eventId } });
    await client.query({ query: ops.OrdersPage!, variables: { eventId: catalogue.eventId, status: 'CONFIRMED' } });
    await client.query({ query: ops.RefetchEvent!, variables: { id: catalogue.eventId } });
    const created = await client.mutate({
      mutation: ops.CreateEvent!,
      variables: { input: { accountId: org.account.id, name: `Created ${tag()}`, timezone: 'UTC', venueId: catalogue.venueId } },
    });
    const eventId = (created.data as any).createEvent.event.id as string;
    await client.mutate({ mutation: ops.UpdateEvent!, variables: { id: eventId, input: { tags: ['matinee'] } } });
    await client.mutate({ mutation: ops.CreateVenue!, variables: { input: { accountId: org.account.id, name: `Hall ${tag()}` } } });
    await client.mutate({
      mutation: ops.AssignRole!,
      variables: { input: { userId: staff.userId, accountId: org.account.id, roleId: systemRole(org, 'viewer') } },
    });

    const stored = client.cache.extract() as Record<string, Record<string, unknown>>;
    const typenamesOf = new Map<string, Set<string>>();
    const embedded: string[] = [];
    for (const [key, value] of Object.entries(stored)) {
      if (key !== 'ROOT_QUERY' && key !== 'ROOT_MUTATION') {
        expect(key).toBe(`${String(value.__typename)}:${String(value.id)}`);
        typenamesOf.set(String(value.id), (typenamesOf.get(String(value.id)) ?? new Set()).add(String(value.__typename)));
      }
      // A normalised entry holds other entities as references ({ __ref }), never as copies.
      for (const child of Object.values(value))
        for (const entity of entitiesIn(child)) embedded.push(`${key} holds ${entity.__typename}:${entity.id}`);
    }
    expect(embedded).toEqual([]);
    const shared = [...typenamesOf].filter(([, typenames]) => typenames.size > 1);
    expect(shared.map(([id, typenames]) => `${id} is a ${[...typenames].join(' and a ')}`)).toEqual([]);

    const answered = entitiesIn(seen.answers);
    expect(answered.filter((entity) => !(`${entity.__typename}:${entity.id}` in stored))).toEqual([]);
    expect(new Set(answered.map((entity) => entity.__typename))).toEqual(
      new Set([
        'Event',
        'Venue',
        'Account',
        'EventOccurrence',
        'TicketType',
        'Order',
        'Customer',
        'OrderLineItem',
        'RoleAssignment',
        'User',
        'Role',
      ]),
    );
  });

  it('pages with fetchMore and relayStylePagination while events are added: no row twice, none missing', async () => {
    const pages = await createOrganisation(app, 'apollo-pages');
    for (let i = 0; i < 5; i += 1) await createEvent(app, pages, { name: `Listed ${i}` });
    const { client } = adminClient(asAdmin(pages));
    const variables = { first: 2 };
    const list = client.watchQuery({ query: ops.EventsList!, variables });
    const subscriptions: Array<{ unsubscribe(): void }> = [];
    try {
      await new Promise((resolve, reject) => {
        subscriptions.push(list.subscribe({ next: (result) => result.dataState === 'complete' && resolve(result), error: reject }));
      });
      const merged = () => client.readQuery<any>({ query: ops.EventsList!, variables })!.events;
      const added: string[] = [];
      // Bounded: a cursor that does not move on would page forever.
      for (let page = 0; page < 20 && merged().pageInfo.hasNextPage; page += 1) {
        // Another admin adds an event before the next page is asked for.
        const other = await graphql(
          app,
          'mutation ($input: CreateEventInput!) { createEvent(input: $input) { event { id } } }',
          { input: { accountId: pages.account.id, name: `Added ${page}`, timezone: 'UTC' } },
          asAdmin(pages),
        );
        added.push(other.body.data.createEvent.event.id);
        await list.fetchMore({ variables: { after: merged().pageInfo.endCursor } });
      }
      expect(added.length).toBeGreaterThan(1);
      // The rows added meanwhile are newer than the first page: one page back before it brings them.
      await list.fetchMore({ variables: { first: null, last: 20, before: merged().pageInfo.startCursor } });

      const ids: string[] = merged().edges.map((edge: any) => edge.node.id);
      expect(new Set(ids).size).toBe(ids.length);
      const truth = await query<{ id: string }>(
        app,
        'SELECT id FROM events WHERE "organisationId" = $1 AND NOT "isDeleted" ORDER BY "createdAt" DESC, id DESC',
        [pages.organisation.id],
      );
      expect(ids).toEqual(truth.map((row) => row.id));
      expect(ids).toEqual(expect.arrayContaining(added));
    } finally {
      for (const subscription of subscriptions) subscription.unsubscribe();
    }
  });

  it('updates the cached event from updateEvent’s answer: the screens re-read the new name without a refetch', async () => {
    const { client, seen } = adminClient(asAdmin(org));
    const detail = { query: ops.EventDetail!, variables: { id: catalogue.eventId } };
    await client.query(detail);
    await client.query({ query: ops.EventsList!, variables: { first: 10 } });
    const name = `Renamed ${tag()}`;
    const requests = seen.requests;
    const renamed = await client.mutate({ mutation: ops.UpdateEvent!, variables: { id: catalogue.eventId, input: { name } } });
    expect((renamed.data as any).updateEvent.userErrors).toEqual([]);
    expect(seen.requests).toBe(requests + 1);

    const reread = await client.query({ ...detail, fetchPolicy: 'cache-only' });
    expect((reread.data as any).event.name).toBe(name);
    const row = client
      .readQuery<any>({ query: ops.EventsList!, variables: { first: 10 } })!
      .events.edges.find((edge: any) => edge.node.id === catalogue.eventId);
    expect(row.node.name).toBe(name);
    expect(seen.requests).toBe(requests + 1);
  });

  describe('a document of two mutations', () => {
    let eventId: string;
    beforeAll(async () => {
      eventId = (await createEvent(app, org, { name: 'Two mutations' })).id;
    });

    it('surfaces a refused mutation in `error` and keeps the other’s payload (errorPolicy all)', async () => {
      // May change events, not venues: createVenue is refused, updateEvent answers.
      const role = await customRole(app, org, ['events.read', 'events.write']);
      const staff = await createStaffUser(app, org, [{ roleId: role.id, accountId: org.account.id }], 'apollo-events');
      const { client } = adminClient(as(staff.token, org));
      const name = `By staff ${tag()}`;
      const variables = { eventId, event: { name }, venue: { accountId: org.account.id, name: 'Refused hall' } };

      const result = await client.mutate({ mutation: ops.RenameEventAndAddVenue!, variables, errorPolicy: 'all' });
      const data = result.data as any;
      expect(data.updateEvent).toMatchObject({ event: { id: eventId, name }, userErrors: [] });
      expect(data.createVenue).toBeNull();
      expect(CombinedGraphQLErrors.is(result.error)).toBe(true);
      const errors = (result.error as CombinedGraphQLErrors).errors;
      expect(errors.map((error) => [error.path, error.extensions?.code])).toEqual([[['createVenue'], 'FORBIDDEN']]);
      // The answered part is cached as any other answer.
      expect((client.cache.extract() as Record<string, unknown>)[`Event:${eventId}`]).toMatchObject({ name });

      // Apollo's default errorPolicy (none) rejects the whole result instead.
      await expect(client.mutate({ mutation: ops.RenameEventAndAddVenue!, variables })).rejects.toSatisfy(CombinedGraphQLErrors.is);
    });

    it('answers an invalid mutation with userErrors while the other commits', async () => {
      const { client } = adminClient(asAdmin(org));
      const variables = { eventId, event: { name: '' }, venue: { accountId: org.account.id, name: `Hall ${tag()}` } };
      const result = await client.mutate({ mutation: ops.RenameEventAndAddVenue!, variables, errorPolicy: 'all' });
      expect(result.error).toBeUndefined();
      const data = result.data as any;
      expect(data.updateEvent.event).toBeNull();
      expect(data.updateEvent.userErrors).toEqual([
        { __typename: 'UserError', field: ['input', 'name'], code: 'VALIDATION_FAILED', message: expect.any(String) },
      ]);
      expect(data.createVenue.venue).toMatchObject({ __typename: 'Venue', name: variables.venue.name });
    });
  });
});
