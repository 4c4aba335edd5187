import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { staffWithRoles } from '../support/credentials.ts';
import { createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { createOccurrence, createTicketType, placeOrder, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';

/**
 * Sales counters where admins look: an event, its occurrences and its ticket types answer their
 * capacity and how many tickets are sold, held and available, from the inventory the sales path
 * keeps (src/services/sales-counters.ts).
 */
const app = useTestApp();
const DAY = 86_400_000;
let org: TestOrganisation;
let catalogue: SeededCatalogue;
let secondOccurrence: string;
let secondType: string;

beforeAll(async () => {
  org = await createOrganisation(app, 'counters');
  catalogue = await seedCatalogue(app, org, { capacity: 10 });
  const event = { id: catalogue.eventId, accountId: catalogue.accountId };
  secondOccurrence = (await createOccurrence(app, org, event, new Date(Date.now() + 14 * DAY))).id;
  secondType = (await createTicketType(app, org, event, { name: 'Balcony', capacity: 5 })).id;
  await createOccurrence(app, org, event, new Date(Date.now() + 21 * DAY), { status: 'cancelled' });
  await placeOrder(app, catalogue.channel, catalogue, { quantity: 3 });
  await placeOrder(app, catalogue.channel, catalogue, { quantity: 2, pending: true });
});

const COUNTERS = 'sales { capacity sold held available }';
const DOCUMENT = `query ($eventId: ID!) {
  event(id: $eventId) { ${COUNTERS} }
  eventOccurrences(eventId: $eventId) { nodes { id status ${COUNTERS} } }
  ticketTypes(eventId: $eventId) { nodes { id ${COUNTERS} } }
}`;

describe('sales counters', () => {
  it('count sold, held and available per occurrence, per ticket type and per event, leaving cancelled occurrences out', async () => {
    const res = await graphql(app, DOCUMENT, { eventId: catalogue.eventId }, { token: org.adminToken, org: org.slug });
    expect(res.body.errors).toBeUndefined();
    const { event, eventOccurrences, ticketTypes } = res.body.data;
    // Two scheduled occurrences x (10 + 5) tickets; 3 sold and 2 held of the first type at the first occurrence.
    expect(event.sales).toEqual({ capacity: 30, sold: 3, held: 2, available: 25 });
    const byId = (nodes: Array<{ id: string; sales: unknown }>) => Object.fromEntries(nodes.map((node) => [node.id, node.sales]));
    expect(byId(eventOccurrences.nodes)).toMatchObject({
      [catalogue.occurrenceId]: { capacity: 15, sold: 3, held: 2, available: 10 },
      [secondOccurrence]: { capacity: 15, sold: 0, held: 0, available: 15 },
    });
    const cancelled = eventOccurrences.nodes.find((node: { status: string }) => node.status === 'CANCELLED');
    expect(cancelled.sales).toEqual({ capacity: 0, sold: 0, held: 0, available: 0 });
    expect(byId(ticketTypes.nodes)).toEqual({
      [catalogue.ticketTypeId]: { capacity: 20, sold: 3, held: 2, available: 15 },
      [secondType]: { capacity: 10, sold: 0, held: 0, available: 10 },
    });
  });

  it('say null capacity and availability when a ticket type is unlimited', async () => {
    await createTicketType(app, org, { id: catalogue.eventId, accountId: catalogue.accountId }, { name: 'Standing', capacity: null });
    const res = await graphql(app, DOCUMENT, { eventId: catalogue.eventId }, { token: org.adminToken, org: org.slug });
    expect(res.body.data.event.sales).toEqual({ capacity: null, sold: 3, held: 2, available: null });
  });

  it('are shown only to those who may read the event', async () => {
    const other = await createOrganisation(app, 'counters-other');
    const outsider = await graphql(app, DOCUMENT, { eventId: catalogue.eventId }, { token: other.adminToken, org: other.slug });
    expect(outsider.body.data?.event ?? null).toBeNull();
    const viewer = (await staffWithRoles(app, org, ['viewer'])).token;
    const seen = await graphql(app, DOCUMENT, { eventId: catalogue.eventId }, { token: viewer, org: org.slug });
    expect(seen.body.data.event.sales.sold).toBe(3);
  });
});
