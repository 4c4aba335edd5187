import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { confirmOrder, createCatalogue, createOccurrence, placeOrder, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';

/**
 * The filters an admin screen puts on the graph's `orders`: by the event or occurrence of a line,
 * by order number, by creation range, and `updatedSince` for a screen that polls.
 */
const app = useTestApp();
let org: TestOrganisation;
let concert: SeededCatalogue;
let play: { eventId: string; occurrenceId: string; ticketTypeId: string; accountId: string };
const made: Record<string, { id: string }> = {};

const ORDERS = `query ($eventId: ID, $occurrenceId: ID, $orderNumber: String, $createdAfter: DateTime, $createdBefore: DateTime, $updatedSince: DateTime) {
  orders(first: 50, eventId: $eventId, occurrenceId: $occurrenceId, orderNumber: $orderNumber, createdAfter: $createdAfter, createdBefore: $createdBefore, updatedSince: $updatedSince) {
    nodes { id orderNumber status }
  }
}`;

async function ids(variables: Record<string, unknown>): Promise<string[]> {
  const res = await graphql(app, ORDERS, variables, { token: org.adminToken, org: org.slug });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data.orders.nodes.map((node: { id: string }) => node.id).sort();
}

beforeAll(async () => {
  org = await createOrganisation(app, 'order-filters');
  concert = await seedCatalogue(app, org);
  play = await createCatalogue(app, org, { name: 'Play' });
  made.concert = (await placeOrder(app, concert.channel, concert)).order;
  made.play = (await placeOrder(app, concert.channel, play)).order;
  const later = await createOccurrence(
    app,
    org,
    { id: concert.eventId, accountId: concert.accountId },
    new Date(Date.now() + 30 * 86_400_000),
  );
  made.later = (await placeOrder(app, concert.channel, { ...concert, occurrenceId: later.id }, { pending: true })).order;
  made.laterOccurrence = { id: later.id };
});

describe('orders, filtered as admin screens filter them', () => {
  it('by the event or the occurrence of a line', async () => {
    expect(await ids({ eventId: concert.eventId })).toEqual([made.concert!.id, made.later!.id].sort());
    expect(await ids({ eventId: play.eventId })).toEqual([made.play!.id]);
    expect(await ids({ occurrenceId: made.laterOccurrence!.id })).toEqual([made.later!.id]);
  });

  it('by order number', async () => {
    const all = await graphql(app, ORDERS, {}, { token: org.adminToken, org: org.slug });
    const number = all.body.data.orders.nodes.find((node: { id: string }) => node.id === made.play!.id).orderNumber;
    expect(await ids({ orderNumber: number })).toEqual([made.play!.id]);
  });

  it('by creation range and by last change', async () => {
    const now = new Date();
    expect(await ids({ createdAfter: new Date(now.getTime() + 1000).toISOString() })).toEqual([]);
    expect((await ids({ createdBefore: now.toISOString() })).length).toBe(3);
    expect(await ids({ updatedSince: now.toISOString() })).toEqual([]);
    await confirmOrder(app, concert.channel.secret, made.later!.id);
    expect(await ids({ updatedSince: now.toISOString() })).toEqual([made.later!.id]);
  });

  it('refuses a creation bound that is not an instant, naming it', async () => {
    const res = await graphql(app, ORDERS, { createdAfter: 'yesterday' }, { token: org.adminToken, org: org.slug });
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'createdAfter' }] });
  });
});
