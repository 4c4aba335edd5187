import { isInterfaceType, isNonNullType, isObjectType } from 'graphql';
import { beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../../schema/index.ts';
import { NODE_TYPES } from '../../schema/node.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, createApiKey } from '../support/credentials.ts';
import { createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { placeOrder, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';

/**
 * Global object identification: every entity is a Node with an id unique across the graph, and
 * node(id:)/nodes(ids:) read any of them as the entity's own root field does, so a client (Relay's
 * @refetchable, Apollo's cache) can refetch anything by id alone.
 */
const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
let catalogue: SeededCatalogue;
let theirs: SeededCatalogue;
let order: { id: string; lineItemId: string };

beforeAll(async () => {
  org = await createOrganisation(app, 'node');
  other = await createOrganisation(app, 'node-other');
  catalogue = await seedCatalogue(app, org);
  theirs = await seedCatalogue(app, other);
  const placed = await placeOrder(app, catalogue.channel, catalogue);
  const lines = await graphql(app, 'query ($id: ID!) { order(id: $id) { lineItems { id } } }', { id: placed.order.id }, asAdmin(org));
  order = { id: placed.order.id, lineItemId: lines.body.data.order.lineItems[0].id };
});

const NODES = `
  query ($ids: [ID!]!) {
    nodes(ids: $ids) {
      __typename
      id
      ... on Event { name }
      ... on OrderLineItem { quantity }
    }
  }
`;

describe('node and nodes', () => {
  it('read any entity by id, typed by its prefix, nested ones through their parent', async () => {
    const mine = await graphql(app, '{ myRoles { roles { id } } organisation { id } }', {}, asAdmin(org));
    const assignmentId = mine.body.data.myRoles.roles[0].id;
    const ids = [catalogue.eventId, catalogue.venueId, order.id, order.lineItemId, assignmentId, mine.body.data.organisation.id];
    const res = await graphql(app, NODES, { ids }, asAdmin(org));
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.nodes.map((node: { __typename: string; id: string }) => [node.__typename, node.id])).toEqual([
      ['Event', catalogue.eventId],
      ['Venue', catalogue.venueId],
      ['Order', order.id],
      ['OrderLineItem', order.lineItemId],
      ['RoleAssignment', assignmentId],
      ['Organisation', mine.body.data.organisation.id],
    ]);
    expect(res.body.data.nodes[3].quantity).toBeGreaterThan(0);
  });

  it('answer an unknown id, or another organisation’s, null with NOT_FOUND at its index; the others answer', async () => {
    const ids = [catalogue.eventId, 'evt_0000000000000000000000', theirs.eventId, 'nonsense'];
    const res = await graphql(app, NODES, { ids }, asAdmin(org));
    expect(res.body.data.nodes[0]).toMatchObject({ __typename: 'Event', id: catalogue.eventId });
    expect(res.body.data.nodes.slice(1)).toEqual([null, null, null]);
    const errors = res.body.errors.map((error: { path: unknown[]; extensions: { code: string } }) => [error.path, error.extensions.code]);
    expect(errors.sort((a: [unknown[]], b: [unknown[]]) => String(a[0]).localeCompare(String(b[0])))).toEqual([
      [['nodes', 1], 'NOT_FOUND'],
      [['nodes', 2], 'NOT_FOUND'],
      [['nodes', 3], 'NOT_FOUND'],
    ]);
  });

  it('apply the entity’s own root field rules: a key without events.read reads a venue, not an event', async () => {
    const { key } = await createApiKey(app, org, ['venues.read']);
    const asKey = { token: key, org: org.slug };
    const venue = await graphql(app, 'query ($id: ID!) { node(id: $id) { id } }', { id: catalogue.venueId }, asKey);
    expect(venue.body).toEqual({ data: { node: { id: catalogue.venueId } }, extensions: { cost: expect.any(Object) } });
    const direct = await graphql(app, 'query ($id: ID!) { event(id: $id) { id } }', { id: catalogue.eventId }, asKey);
    const viaNode = await graphql(app, 'query ($id: ID!) { node(id: $id) { id } }', { id: catalogue.eventId }, asKey);
    expect(viaNode.body.data.node).toBeNull();
    expect(viaNode.body.errors[0].extensions.code).toBe(direct.body.errors[0].extensions.code);
    // An order line is shown to whoever may read its order: this key may not.
    const line = await graphql(app, 'query ($id: ID!) { node(id: $id) { id } }', { id: order.lineItemId }, asKey);
    expect(line.body.data.node).toBeNull();
  });

  it('are bounded: more than 100 ids are refused', async () => {
    const ids = Array.from({ length: 101 }, () => catalogue.eventId);
    const res = await graphql(app, 'query ($ids: [ID!]!) { nodes(ids: $ids) { id } }', { ids }, asAdmin(org));
    expect(res.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
  });
});

describe('the schema', () => {
  it('makes every entity a Node whose id is an ID', () => {
    const node = schema.getType('Node');
    expect(isInterfaceType(node)).toBe(true);
    for (const name of NODE_TYPES) {
      const type = schema.getType(name);
      expect(isObjectType(type), name).toBe(true);
      if (!isObjectType(type)) continue;
      expect(
        type.getInterfaces().map((i) => i.name),
        name,
      ).toContain('Node');
      const id = type.getFields().id!.type;
      expect(isNonNullType(id) && String(id.ofType), name).toBe('ID');
    }
  });

  it('gives an `id` only to entities: a type showing another entity names its id (`eventId`), so no id has two types', () => {
    // Not Nodes, with ids of their own that no other type carries: the person behind users
    // (sign-in and `me`), a storefront's cart (the sales API), a webhook recovery (an operation).
    const own = ['Person', 'SalesCart', 'WebhookRecovery'];
    const withId = Object.values(schema.getTypeMap())
      .filter((type) => isObjectType(type) && !type.name.startsWith('__') && 'id' in type.getFields())
      .map((type) => type.name)
      .filter((name) => !own.includes(name))
      .sort();
    expect(withId).toEqual([...NODE_TYPES].sort());
  });

  it('has one type per entity: an assignment answers the Role, Account and User types themselves', async () => {
    const res = await graphql(
      app,
      '{ roleAssignments(first: 5) { nodes { id role { __typename id } account { __typename id } user { __typename id email } } } }',
      {},
      asAdmin(org),
    );
    expect(res.body.errors).toBeUndefined();
    const [assignment] = res.body.data.roleAssignments.nodes;
    expect([assignment.role.__typename, assignment.account.__typename, assignment.user.__typename]).toEqual(['Role', 'Account', 'User']);
    const user = await graphql(
      app,
      'query ($id: ID!) { node(id: $id) { ... on User { email } } }',
      { id: assignment.user.id },
      asAdmin(org),
    );
    expect(user.body.data.node.email).toBe(assignment.user.email);
  });
});
