import { isEnumType } from 'graphql';
import { beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../../schema/index.ts';
import { useTestApp } from '../support/app.ts';
import { api, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';

/**
 * The graph names enum values UPPER_CASE; `/v1` (and `/live`, and webhooks) keep the contract's
 * lower-case values. rest-compat/enums.ts translates at the routes' edge, both ways.
 */
const app = useTestApp();
let org: TestOrganisation;
beforeAll(async () => {
  org = await createOrganisation(app, 'enums');
});
const as = () => ({ token: org.adminToken, org: org.slug });

describe('enum values', () => {
  it('are UPPER_CASE names in the graph, each standing for the contract’s value', () => {
    const enums = Object.values(schema.getTypeMap()).filter((type) => isEnumType(type) && !type.name.startsWith('__'));
    expect(enums.length).toBeGreaterThan(10);
    for (const type of enums) {
      if (!isEnumType(type)) continue;
      for (const value of type.getValues()) {
        expect(value.name, `${type.name}.${value.name}`).toMatch(/^[A-Z][A-Z0-9_]*$/);
        expect(value.name, `${type.name}.${value.name}`).toBe(String(value.value).toUpperCase());
      }
    }
  });

  it('/v1 takes and answers the contract’s values; the graph its names, for the same event', async () => {
    const made = await api(app, 'POST', '/v1/events', {
      ...as(),
      body: { accountId: org.account.id, name: 'Enum night', timezone: 'UTC', status: 'on_sale' },
    });
    expect([made.status, made.body.event.status]).toEqual([201, 'on_sale']);
    const listed = await api(app, 'GET', '/v1/events?status=on_sale', as());
    expect(listed.body.events.map((event: { id: string; status: string }) => [event.id, event.status])).toEqual([
      [made.body.event.id, 'on_sale'],
    ]);

    const graph = await graphql(app, '{ events(status: ON_SALE) { nodes { id status } } }', {}, as());
    expect(graph.body.data.events.nodes).toEqual([{ id: made.body.event.id, status: 'ON_SALE' }]);
    const changed = await graphql(
      app,
      'mutation ($id: ID!, $input: UpdateEventInput!) { updateEvent(id: $id, input: $input) { event { status } } }',
      { id: made.body.event.id, input: { status: 'SOLD_OUT' } },
      as(),
    );
    expect(changed.body.data.updateEvent.event.status).toBe('SOLD_OUT');
    const read = await api(app, 'GET', `/v1/events/${made.body.event.id}`, as());
    expect(read.body.event.status).toBe('sold_out');
  });

  it('a value outside the enum is refused in each surface’s words', async () => {
    const rest = await api(app, 'GET', '/v1/events?status=live', as());
    expect([rest.status, rest.body.details]).toEqual([
      400,
      [{ path: 'query.status', message: 'one of draft, published, on_sale, sold_out, completed, cancelled' }],
    ]);
    const body = await api(app, 'POST', '/v1/events', {
      ...as(),
      body: { accountId: org.account.id, name: 'x', timezone: 'UTC', status: 'ON_SALE' },
    });
    expect(body.body.details).toEqual([{ path: 'status', message: 'one of draft, published, on_sale, sold_out, completed, cancelled' }]);

    const graph = await graphql(app, 'query ($s: EventStatus) { events(status: $s) { nodes { id } } }', { s: 'on_sale' }, as());
    expect(graph.body.errors[0].extensions.details).toEqual([
      { path: 'variables.s', message: 'one of DRAFT, PUBLISHED, ON_SALE, SOLD_OUT, COMPLETED, CANCELLED' },
    ]);
  });
});
