import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createApiKey } from '../support/credentials.ts';
import { createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { placeOrder, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';

/**
 * Ids with their entities beside them: an event screen reads its venue and account, an
 * occurrence or a ticket type its event, an order line its event, occurrence and ticket type, in
 * one request. Each entity is shown under its own type's rule.
 */
const app = useTestApp();
let org: TestOrganisation;
let catalogue: SeededCatalogue;
let orderId: string;

beforeAll(async () => {
  org = await createOrganisation(app, 'relations');
  catalogue = await seedCatalogue(app, org);
  orderId = (await placeOrder(app, catalogue.channel, catalogue)).order.id;
});

const as = (token: string) => ({ token, org: org.slug });

describe('relations', () => {
  it('answer the entity beside its id, from an event down to an order line', async () => {
    const res = await graphql(
      app,
      `
        query ($eventId: ID!, $orderId: ID!) {
          event(id: $eventId) {
            venue {
              id
            }
            account {
              id
            }
          }
          eventOccurrences(eventId: $eventId) {
            nodes {
              event {
                id
              }
            }
          }
          ticketTypes(eventId: $eventId) {
            nodes {
              event {
                id
                name
              }
            }
          }
          order(id: $orderId) {
            lineItems {
              event {
                id
              }
              occurrence {
                id
              }
              ticketType {
                id
              }
            }
          }
        }
      `,
      { eventId: catalogue.eventId, orderId },
      as(org.adminToken),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data).toEqual({
      event: { venue: { id: catalogue.venueId }, account: { id: catalogue.accountId } },
      eventOccurrences: { nodes: [{ event: { id: catalogue.eventId } }] },
      ticketTypes: { nodes: [{ event: { id: catalogue.eventId, name: 'Concert' } }] },
      order: {
        lineItems: [
          { event: { id: catalogue.eventId }, occurrence: { id: catalogue.occurrenceId }, ticketType: { id: catalogue.ticketTypeId } },
        ],
      },
    });
  });

  it('show an entity only under its own rule: a key that reads orders but not events sees the line, not the event', async () => {
    const { key } = await createApiKey(app, org, ['orders.read']);
    const res = await graphql(
      app,
      'query ($orderId: ID!) { order(id: $orderId) { id lineItems { quantity event { id name } occurrence { id } } } }',
      { orderId },
      as(key),
    );
    expect(res.body.data.order.id).toBe(orderId);
    expect(res.body.data.order.lineItems).toEqual([{ quantity: 1, event: null, occurrence: null }]);
    // Refused as the contract refuses a key without the scope: NOT_FOUND, at the entity's place.
    const refusals = res.body.errors.map((error: { path: Array<string | number>; extensions: { code: string } }) => [
      error.path.join('.'),
      error.extensions.code,
    ]);
    expect(refusals.sort()).toEqual([
      ['order.lineItems.0.event', 'NOT_FOUND'],
      ['order.lineItems.0.occurrence.id', 'NOT_FOUND'],
    ]);
  });

  it('answer the account beside every accountId of the catalogue and the sales', async () => {
    const res = await graphql(
      app,
      `
        query ($eventId: ID!, $orderId: ID!, $channelId: ID!) {
          venues(first: 1) {
            nodes {
              account {
                id
              }
            }
          }
          eventOccurrences(eventId: $eventId) {
            nodes {
              account {
                id
              }
            }
          }
          ticketTypes(eventId: $eventId) {
            nodes {
              account {
                id
              }
            }
          }
          salesChannel(id: $channelId) {
            account {
              id
            }
          }
          order(id: $orderId) {
            account {
              id
            }
            customer {
              account {
                id
              }
            }
            passes {
              account {
                id
              }
            }
          }
        }
      `,
      { eventId: catalogue.eventId, orderId, channelId: catalogue.channel.channelId },
      as(org.adminToken),
    );
    expect(res.body.errors).toBeUndefined();
    const account = { account: { id: catalogue.accountId } };
    expect(res.body.data).toEqual({
      venues: { nodes: [account] },
      eventOccurrences: { nodes: [account] },
      ticketTypes: { nodes: [account] },
      salesChannel: account,
      order: { ...account, customer: account, passes: [account] },
    });
  });
});
