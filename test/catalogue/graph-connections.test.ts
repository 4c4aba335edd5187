import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { watchStatements } from '../../src/db/client.ts';
import { newId } from '../../src/ids.ts';
import { useTestApp } from '../support/app.ts';
import { asAdmin, customRole } from '../support/credentials.ts';
import { createStaffUser, graphql, type TestOrganisation, createOrganisation } from '../support/fixtures.ts';
import { createEvent, createOccurrence, createTicketType, placeOrder, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';
import { recordFailedDeliveries } from '../support/webhook-receiver.ts';

/**
 * Connections on parents: an admin screen walks from an account to its events, from an event to
 * its occurrences and ticket types (each with its tickets at that occurrence), from a customer to
 * their orders, from a webhook endpoint to its deliveries and their attempts. Each page is the
 * root list's (same rows, same order, same cursors), shown under the root list's rule, and the
 * pages of every parent of a page are read by one statement, whatever the number of parents.
 */
const app = useTestApp();
let org: TestOrganisation;
let catalogue: SeededCatalogue;
const DAY = 86_400_000;

/** An event with `occurrences` occurrences (the second cancelled) and two ticket types plus a deleted one. */
async function eventWithChildren(occurrences: number, name = `Festival ${randomBytes(2).toString('hex')}`) {
  const event = await createEvent(app, org, { name, status: 'on_sale' });
  const made = [];
  for (let i = 0; i < occurrences; i += 1) {
    made.push(
      await createOccurrence(app, org, event, new Date(Date.now() + (10 + i) * DAY), i === 1 ? { status: 'cancelled' } : { capacity: 40 }),
    );
  }
  const early = await createTicketType(app, org, event, { name: 'Early', capacity: 50, createdAt: new Date(Date.now() - 2000) });
  const late = await createTicketType(app, org, event, { name: 'Late', capacity: null, createdAt: new Date(Date.now() - 1000) });
  await createTicketType(app, org, event, { name: 'Gone', isDeleted: true });
  return { event, occurrences: made, ticketTypes: [early, late] };
}

const as = (token: string) => ({ token, org: org.slug });

beforeAll(async () => {
  org = await createOrganisation(app, 'graph');
  catalogue = await seedCatalogue(app, org);
});

describe('Event.occurrences and Event.ticketTypes', () => {
  it('answer the rows of eventOccurrences(eventId:) and ticketTypes(eventId:), in their order, with their cursors', async () => {
    const { event, occurrences, ticketTypes } = await eventWithChildren(4);
    const res = await graphql(
      app,
      `
        query ($id: ID!) {
          event(id: $id) {
            occurrences {
              pagination {
                total
              }
              edges {
                cursor
                node {
                  id
                  status
                }
              }
            }
            ticketTypes {
              nodes {
                id
                name
              }
            }
          }
          eventOccurrences(eventId: $id) {
            edges {
              cursor
              node {
                id
              }
            }
          }
        }
      `,
      { id: event.id },
      asAdmin(org),
    );
    expect(res.body.errors).toBeUndefined();
    const { occurrences: page, ticketTypes: types } = res.body.data.event;
    expect(page.pagination.total).toBe(4);
    expect(page.edges.map((edge: { node: { id: string } }) => edge.node.id)).toEqual(occurrences.map((o) => o.id));
    expect(page.edges[1].node.status).toBe('CANCELLED');
    // The same cursors as the root list's: either pages the other.
    expect(page.edges.map((edge: { cursor: string }) => edge.cursor)).toEqual(
      res.body.data.eventOccurrences.edges.map((edge: { cursor: string }) => edge.cursor),
    );
    expect(types.nodes).toEqual(ticketTypes.map((t) => ({ id: t.id, name: t.name })));
  });

  it('page forward and back with first/after and last/before', async () => {
    const { event, occurrences } = await eventWithChildren(5);
    const ids = occurrences.map((o) => o.id);
    const page = async (args: string) => {
      const res = await graphql(
        app,
        `query ($id: ID!) { event(id: $id) { occurrences(${args}) {
          pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
          pagination { page limit total hasNext hasPrev }
          nodes { id }
        } } }`,
        { id: event.id },
        asAdmin(org),
      );
      expect(res.body.errors).toBeUndefined();
      const connection = res.body.data.event.occurrences;
      return { ...connection, ids: connection.nodes.map((node: { id: string }) => node.id) };
    };
    const first = await page('first: 2');
    expect(first.ids).toEqual(ids.slice(0, 2));
    expect(first.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: false });
    expect(first.pagination).toEqual({ page: 1, limit: 2, total: 5, hasNext: true, hasPrev: false });
    const second = await page(`first: 2, after: "${first.pageInfo.endCursor}"`);
    expect(second.ids).toEqual(ids.slice(2, 4));
    expect(second.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    expect(second.pagination).toMatchObject({ page: 2, total: 5 });
    const third = await page(`first: 2, after: "${second.pageInfo.endCursor}"`);
    expect(third.ids).toEqual(ids.slice(4));
    expect(third.pageInfo.hasNextPage).toBe(false);
    const back = await page(`last: 2, before: "${third.pageInfo.startCursor}"`);
    expect(back.ids).toEqual(ids.slice(2, 4));
    expect(back.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
    expect(back.pagination).toMatchObject({ page: 2, total: 5 });
    const start = await page(`last: 2, before: "${back.pageInfo.startCursor}"`);
    expect(start.ids).toEqual(ids.slice(0, 2));
    expect(start.pageInfo.hasPreviousPage).toBe(false);
    expect((await page('last: 2')).ids).toEqual(ids.slice(3));
  });

  it('refuse a cursor of another list at its field', async () => {
    const { event } = await eventWithChildren(1);
    const orderCursor = Buffer.from(JSON.stringify([3, 'x'])).toString('base64url');
    const res = await graphql(
      app,
      `
        query ($id: ID!, $after: String) {
          event(id: $id) {
            name
            occurrences(after: $after) {
              nodes {
                id
              }
            }
          }
        }
      `,
      { id: event.id, after: orderCursor },
      asAdmin(org),
    );
    expect(res.body.data.event.name).toBe(event.name);
    expect(res.body.data.event.occurrences).toBeNull();
    expect(res.body.errors.map((e: { path: string[]; extensions: { code: string } }) => [e.path.join('.'), e.extensions.code])).toEqual([
      ['event.occurrences', 'VALIDATION_FAILED'],
    ]);
  });
});

describe('EventOccurrence.ticketTypes', () => {
  it('carry on each edge the tickets of that type at that occurrence, which add up to the occurrence’s', async () => {
    const { event, occurrences, ticketTypes } = await eventWithChildren(2);
    const [open, cancelled] = occurrences;
    const [early, late] = ticketTypes;
    const channel = catalogue.channel;
    // Sell 3 Early at the open occurrence, through the storefront, as buyers do.
    const sold = { eventId: event.id, occurrenceId: open!.id, ticketTypeId: early!.id, accountId: event.accountId };
    await placeOrder(app, channel, sold, { quantity: 3 });
    await placeOrder(app, channel, sold, { quantity: 1, pending: true });
    const res = await graphql(
      app,
      `
        query ($id: ID!) {
          event(id: $id) {
            occurrences {
              nodes {
                id
                sales {
                  capacity
                  sold
                  held
                  available
                }
                ticketTypes {
                  edges {
                    sales {
                      capacity
                      sold
                      held
                      available
                    }
                    node {
                      id
                      sales {
                        sold
                        held
                      }
                    }
                  }
                }
              }
            }
          }
        }
      `,
      { id: event.id },
      asAdmin(org),
    );
    expect(res.body.errors).toBeUndefined();
    const [atOpen, atCancelled] = res.body.data.event.occurrences.nodes;
    expect(atOpen.id).toBe(open!.id);
    expect(atOpen.ticketTypes.edges).toEqual([
      // The occurrence's capacity (40) overrides the ticket type's.
      { sales: { capacity: 40, sold: 3, held: 1, available: 36 }, node: { id: early!.id, sales: { sold: 3, held: 1 } } },
      { sales: { capacity: 40, sold: 0, held: 0, available: 40 }, node: { id: late!.id, sales: { sold: 0, held: 0 } } },
    ]);
    expect(atOpen.sales).toEqual({ capacity: 80, sold: 3, held: 1, available: 76 });
    // A cancelled occurrence counts nothing, as its own sales say.
    expect(atCancelled.id).toBe(cancelled!.id);
    expect(atCancelled.sales).toEqual({ capacity: 0, sold: 0, held: 0, available: 0 });
    expect(atCancelled.ticketTypes.edges.map((edge: { sales: unknown }) => edge.sales)).toEqual([
      { capacity: 0, sold: 0, held: 0, available: 0 },
      { capacity: 0, sold: 0, held: 0, available: 0 },
    ]);
  });
});

describe('Account.events, Customer.orders, WebhookEndpoint.deliveries and WebhookDelivery.attempts', () => {
  it('answer the rows of events(accountId:), orders(customerId:) and webhookDeliveries(endpointId:), newest first', async () => {
    const account = (await graphql(app, 'query { accounts { nodes { id } } }', {}, asAdmin(org))).body.data.accounts.nodes[0].id;
    const email = `regular-${randomBytes(3).toString('hex')}@shop.test`;
    const older = await placeOrder(app, catalogue.channel, catalogue, { email });
    const newer = await placeOrder(app, catalogue.channel, catalogue, { email, pending: true });
    const res = await graphql(
      app,
      `
        query ($account: ID!, $customer: ID!) {
          account(id: $account) {
            events(first: 3) {
              nodes {
                id
              }
            }
          }
          events(accountId: $account, first: 3) {
            nodes {
              id
            }
          }
          customer(id: $customer) {
            orders {
              pagination {
                total
              }
              nodes {
                id
              }
            }
          }
        }
      `,
      { account, customer: older.order.customerId },
      asAdmin(org),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.account.events.nodes).toEqual(res.body.data.events.nodes);
    expect(res.body.data.customer.orders).toEqual({ pagination: { total: 2 }, nodes: [{ id: newer.order.id }, { id: older.order.id }] });
  });

  it('page an endpoint’s deliveries and a delivery’s attempts', async () => {
    const db = app().runtime.db;
    const endpoint = await db.webhookEndpoint.create({
      data: {
        id: newId('webhookEndpoint'),
        organisationId: org.organisation.id,
        accountId: org.account.id,
        url: 'https://receiver.test/hooks',
        eventTypes: [],
        apiVersion: '2026-01-01',
        secretCiphertext: 'unused',
      },
    });
    const deliveries = await recordFailedDeliveries(db, { organisationId: org.organisation.id, accountId: org.account.id }, 3);
    const mine = await db.webhookDelivery.findMany({ where: { id: { in: deliveries }, endpointId: endpoint.id } });
    const target = mine[0]!;
    for (let n = 1; n <= 3; n += 1) {
      await db.webhookAttempt.create({
        data: {
          id: newId('webhookAttempt'),
          organisationId: org.organisation.id,
          deliveryId: target.id,
          attemptNumber: n,
          trigger: n === 3 ? 'manual' : 'scheduled',
          attemptedAt: new Date(Date.now() - (4 - n) * 60_000),
          statusCode: 500,
          durationMs: 10 * n,
        },
      });
    }
    const res = await graphql(
      app,
      `
        query ($endpoint: ID!, $delivery: ID!) {
          webhookEndpoint(id: $endpoint) {
            deliveries(first: 2) {
              pagination {
                total
              }
              nodes {
                id
                endpoint {
                  id
                }
              }
            }
          }
          webhookDeliveries(endpointId: $endpoint, first: 2) {
            nodes {
              id
            }
          }
          webhookDelivery(id: $delivery) {
            attempts(first: 2) {
              pageInfo {
                endCursor
              }
              nodes {
                id
                attemptNumber
                trigger
              }
            }
            allAttempts {
              attemptNumber
            }
          }
        }
      `,
      { endpoint: endpoint.id, delivery: target.id },
      asAdmin(org),
    );
    expect(res.body.errors).toBeUndefined();
    const { deliveries: page } = res.body.data.webhookEndpoint;
    expect(page.pagination.total).toBe(mine.length);
    expect(page.nodes.map((node: { id: string }) => ({ id: node.id }))).toEqual(res.body.data.webhookDeliveries.nodes);
    expect(page.nodes[0].endpoint).toEqual({ id: endpoint.id });
    const { attempts, allAttempts } = res.body.data.webhookDelivery;
    expect(attempts.nodes.map((a: { attemptNumber: number }) => a.attemptNumber)).toEqual([1, 2]);
    expect(allAttempts).toEqual([{ attemptNumber: 1 }, { attemptNumber: 2 }, { attemptNumber: 3 }]);
    const rest = await graphql(
      app,
      'query ($delivery: ID!, $after: String) { webhookDelivery(id: $delivery) { attempts(after: $after) { nodes { attemptNumber trigger } } } }',
      { delivery: target.id, after: attempts.pageInfo.endCursor },
      asAdmin(org),
    );
    expect(rest.body.data.webhookDelivery.attempts.nodes).toEqual([{ attemptNumber: 3, trigger: 'MANUAL' }]);
    // An attempt is a node: read again by its id, through its delivery.
    const node = await graphql(
      app,
      'query ($id: ID!) { node(id: $id) { id ... on WebhookAttempt { attemptNumber } } }',
      {
        id: attempts.nodes[0].id,
      },
      asAdmin(org),
    );
    expect(node.body.data.node).toEqual({ id: attempts.nodes[0].id, attemptNumber: 1 });
  });
});

describe('a connection the caller may not read', () => {
  it('is null with FORBIDDEN at its path while the rest answers', async () => {
    // Reads customers and accounts, not orders or events.
    const role = await customRole(app, org, ['customers.read', 'accounts.read']);
    const staff = await createStaffUser(app, org, [{ roleId: role.id, accountId: org.account.id }], 'customers-only');
    const { order } = await placeOrder(app, catalogue.channel, catalogue);
    const res = await graphql(
      app,
      `
        query ($customer: ID!, $account: ID!) {
          customer(id: $customer) {
            id
            orders {
              nodes {
                id
              }
            }
          }
          account(id: $account) {
            id
            events {
              nodes {
                id
              }
            }
          }
        }
      `,
      { customer: order.customerId, account: org.account.id },
      as(staff.token),
    );
    expect(res.body.data).toEqual({
      customer: { id: order.customerId, orders: null },
      account: { id: org.account.id, events: null },
    });
    const refusals = res.body.errors.map((e: { path: string[]; extensions: { code: string } }) => [e.path.join('.'), e.extensions.code]);
    expect(refusals.sort()).toEqual([
      ['account.events', 'FORBIDDEN'],
      ['customer.orders', 'FORBIDDEN'],
    ]);
  });
});

/** The statements the API sends for one GraphQL request (src/db/client.ts watchStatements), by its request id. */
async function statementsOf(query: string, variables: Record<string, unknown>) {
  // The caller's rights come from the authentication cache, which the fixtures' writes emptied.
  await graphql(app, '{ me { id } }', {}, asAdmin(org));
  const requestId = `count-${randomBytes(6).toString('hex')}`;
  const sent: string[] = [];
  const stop = watchStatements(app().runtime.db, (statement) => {
    if (statement.requestId === requestId) sent.push(statement.text);
  });
  try {
    const res = await graphql(app, query, variables, { ...asAdmin(org), headers: { 'x-request-id': requestId } });
    expect(res.body.errors).toBeUndefined();
    return { statements: sent.length, data: res.body.data, sent };
  } finally {
    stop();
  }
}

describe('statements per request', () => {
  it('do not grow with the parents of a page: 2 events or 20 with their occurrences, ticket types and counters', async () => {
    const { accountId } = await createOrganisationAccount();
    for (let i = 0; i < 20; i += 1) {
      const event = await createEvent(app, org, { accountId, name: `Series ${i}`, createdAt: new Date(Date.now() - i * 1000) });
      await createOccurrence(app, org, event, new Date(Date.now() + (i + 1) * DAY));
      await createOccurrence(app, org, event, new Date(Date.now() + (i + 2) * DAY));
      await createTicketType(app, org, event);
    }
    const query = `query ($account: ID!, $n: Int) {
      events(accountId: $account, first: $n) {
        nodes {
          id
          venue { id }
          ticketTypes { nodes { id sales { sold } } }
          occurrences(first: 10) {
            nodes {
              id
              sales { capacity sold held available }
              ticketTypes { edges { sales { sold available } node { id name } } }
            }
          }
        }
      }
    }`;
    const two = await statementsOf(query, { account: accountId, n: 2 });
    const twenty = await statementsOf(query, { account: accountId, n: 20 });
    expect(two.data.events.nodes).toHaveLength(2);
    expect(twenty.data.events.nodes).toHaveLength(20);
    expect(twenty.data.events.nodes[19].occurrences.nodes[1].ticketTypes.edges).toHaveLength(1);
    expect(twenty.statements, `2 parents:\n${two.sent.join('\n')}\n20 parents:\n${twenty.sent.join('\n')}`).toBe(two.statements);
  });

  it('answer totalCount, the whole list on every page, root and child alike, without a statement more', async () => {
    const { accountId } = await createOrganisationAccount();
    for (let i = 0; i < 3; i += 1) {
      const event = await createEvent(app, org, { accountId, name: `Counted ${i}` });
      for (let j = 0; j <= i; j += 1) await createOccurrence(app, org, event, new Date(Date.now() + (j + 1) * DAY));
    }
    const query = (counted: boolean) => `query ($account: ID!) {
      events(accountId: $account, first: 2) {
        ${counted ? 'totalCount' : ''}
        nodes { name occurrences(first: 1) { ${counted ? 'totalCount' : ''} nodes { id } } }
      }
    }`;
    const plain = await statementsOf(query(false), { account: accountId });
    const counted = await statementsOf(query(true), { account: accountId });
    expect(counted.data.events.totalCount).toBe(3);
    expect(counted.data.events.nodes.map((event: { occurrences: { totalCount: number } }) => event.occurrences.totalCount)).toEqual([3, 2]);
    expect(counted.statements).toBe(plain.statements);
  });

  it('do not grow with the orders of a page: their customers, lines and the lines’ events and occurrences', async () => {
    const email = `counted-${randomBytes(3).toString('hex')}@shop.test`;
    for (let i = 0; i < 20; i += 1) await placeOrder(app, catalogue.channel, catalogue, { email: i % 2 ? email : undefined });
    const query = `query ($n: Int) {
      orders(first: $n) {
        nodes {
          id
          customer { email orders(first: 2) { nodes { id } } }
          channel { id }
          lineItems { quantity event { name } occurrence { startsAt } ticketType { name } }
          passes { code redeemedAt }
          payments { amount }
        }
      }
    }`;
    const two = await statementsOf(query, { n: 2 });
    const twenty = await statementsOf(query, { n: 20 });
    expect(twenty.data.orders.nodes).toHaveLength(20);
    expect(twenty.data.orders.nodes[19].lineItems[0].event.name).toBe('Concert');
    expect(twenty.statements, `2 parents:\n${two.sent.join('\n')}\n20 parents:\n${twenty.sent.join('\n')}`).toBe(two.statements);
  });
});

/** A new account of the organisation, so a page of its events holds only the events made here. */
async function createOrganisationAccount() {
  const account = await app().runtime.db.account.create({
    data: { id: newId('account'), organisationId: org.organisation.id, name: `Counted ${randomBytes(2).toString('hex')}` },
  });
  return { accountId: account.id };
}
