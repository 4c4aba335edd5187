import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { as, asAdmin, customRole } from '../support/credentials.ts';
import { api, createOrganisation, createStaffUser, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { cartLine, createCatalogue, placeOrder, seedCatalogue, storefront, type SeededCatalogue } from '../support/sales.ts';

/**
 * An occurrence is moved, re-sized or cancelled after it was made: its times are wall-clock values
 * in its zone, a capacity applies to the next hold (tickets held or sold stay), and a cancelled
 * occurrence sells nothing and lets no pass in, while its orders stay for the organisation to refund.
 */
const app = useTestApp();
let org: TestOrganisation;
let catalogue: SeededCatalogue;

const UPDATE = `mutation ($id: ID!, $input: UpdateEventOccurrenceInput!) {
  updateEventOccurrence(id: $id, input: $input) {
    eventOccurrence { id startDate startTime endDate endTime timezone status capacity }
    userErrors { field code message }
  }
}`;

const update = (id: string, input: Record<string, unknown>, options = asAdmin(org)) => graphql(app, UPDATE, { id, input }, options);

beforeAll(async () => {
  org = await createOrganisation(app, 'occurrence-changes');
  catalogue = await seedCatalogue(app, org);
});

describe('updateEventOccurrence', () => {
  it('moves a show keeping its length, reads the times in its zone, and writes an audit entry', async () => {
    const made = await api(app, 'POST', `/v1/events/${catalogue.eventId}/occurrences`, {
      ...asAdmin(org),
      body: { startDate: '2031-03-01', startTime: '19:30', endTime: '22:00' },
    });
    const id = made.body.eventOccurrence.id as string;
    const moved = await update(id, { startDate: '2031-07-04', startTime: '20:00' });
    expect(moved.body.data.updateEventOccurrence).toEqual({
      eventOccurrence: expect.objectContaining({ startDate: '2031-07-04', startTime: '20:00', endDate: '2031-07-04', endTime: '22:30' }),
      userErrors: [],
    });
    const elsewhere = await update(id, { timezone: 'America/New_York', endTime: null });
    expect(elsewhere.body.data.updateEventOccurrence.eventOccurrence).toMatchObject({
      startTime: '20:00',
      endTime: null,
      timezone: 'America/New_York',
    });
    const audit = await api(app, 'GET', `/v1/audit-entries?targetId=${id}&action=event_occurrence.updated`, asAdmin(org));
    expect(audit.body.auditEntries).toHaveLength(2);
  });

  it('keeps an overnight show overnight when only its end time changes', async () => {
    const made = await api(app, 'POST', `/v1/events/${catalogue.eventId}/occurrences`, {
      ...asAdmin(org),
      body: { startDate: '2031-07-04', startTime: '22:00', endDate: '2031-07-05', endTime: '01:00' },
    });
    const later = await update(made.body.eventOccurrence.id as string, { endTime: '02:00' });
    expect(later.body.data.updateEventOccurrence.eventOccurrence).toMatchObject({ endDate: '2031-07-05', endTime: '02:00' });
    const sameDay = await update(made.body.eventOccurrence.id as string, { endDate: null, endTime: '23:30' });
    expect(sameDay.body.data.updateEventOccurrence.eventOccurrence).toMatchObject({ endDate: '2031-07-04', endTime: '23:30' });
  });

  it('refuses an end before the start, or a time the clocks skip, naming the field, and changes nothing', async () => {
    const res = await update(catalogue.occurrenceId, { endTime: '00:00', endDate: '2000-01-01' });
    expect(res.body.data.updateEventOccurrence.userErrors).toEqual([
      expect.objectContaining({ field: ['input', 'endDate'], code: 'VALIDATION_FAILED' }),
    ]);
    const skipped = await update(catalogue.occurrenceId, { startDate: '2031-03-30', startTime: '01:30' });
    expect(skipped.body.data.updateEventOccurrence.userErrors).toEqual([
      expect.objectContaining({ field: ['input', 'startTime'], code: 'VALIDATION_FAILED' }),
    ]);
  });

  it('applies a smaller capacity to the next hold, keeping what was sold', async () => {
    const small = await createCatalogue(app, org, { capacity: 10 });
    const channel = catalogue.channel;
    await placeOrder(app, channel, small, { quantity: 2 });
    const shrunk = await update(small.occurrenceId, { capacity: 2 });
    expect(shrunk.body.data.updateEventOccurrence.eventOccurrence.capacity).toBe(2);
    const shop = storefront(app, channel.publishable);
    const refused = await shop.call('POST', '/sales/carts', { items: [cartLine(small, 1)] });
    expect([refused.status, refused.body.details?.[0]?.message]).toEqual([409, 'Sold out.']);
  });

  it('cancels: nothing more is sold, passes are refused entry, the orders stay', async () => {
    const show = await createCatalogue(app, org);
    const { order, passes } = await placeOrder(app, catalogue.channel, show);
    const { order: unpaid } = await placeOrder(app, catalogue.channel, show, { pending: true });
    const cancelled = await update(show.occurrenceId, { status: 'CANCELLED' });
    // Tickets held for it go back at once: the unpaid order is cancelled, not left to its hold's end.
    expect((await api(app, 'GET', `/v1/orders/${unpaid.id}`, asAdmin(org))).body.order.status).toBe('cancelled');
    expect(cancelled.body.data.updateEventOccurrence.eventOccurrence.status).toBe('CANCELLED');
    const redeemed = await api(app, 'POST', `/v1/passes/${passes[0]!.id}/redeem`, { ...asAdmin(org), body: {} });
    expect([redeemed.status, redeemed.body.details?.[0]?.reason]).toEqual([409, 'occurrence_cancelled']);
    const shop = storefront(app, catalogue.channel.publishable);
    const cart = await shop.call('POST', '/sales/carts', { items: [cartLine(show, 1)] });
    expect([cart.status, cart.body.details?.[0]?.path]).toEqual([400, 'items.0.occurrenceId']);
    const kept = await api(app, 'GET', `/v1/orders/${order.id}`, asAdmin(org));
    expect(kept.body.order.status).toBe('confirmed');
  });

  it('needs events.write on the account, and hides another organisation’s occurrence', async () => {
    const reader = await customRole(app, org, ['events.read']);
    const staff = await createStaffUser(app, org, [{ roleId: reader.id, accountId: org.account.id }], 'reader');
    const refused = await update(catalogue.occurrenceId, { capacity: 5 }, as(staff.token, org));
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const other = await createOrganisation(app, 'occurrence-other');
    const hidden = await update(catalogue.occurrenceId, { capacity: 5 }, asAdmin(other));
    expect(hidden.body.data.updateEventOccurrence.userErrors).toEqual([expect.objectContaining({ code: 'NOT_FOUND' })]);
  });
});

describe('eventOccurrences filters', () => {
  it('lists the occurrences of a status, starting within a range, in start order', async () => {
    const show = await createCatalogue(app, org);
    const made: string[] = [];
    for (const startDate of ['2031-01-10', '2031-02-10', '2031-03-10']) {
      const res = await api(app, 'POST', `/v1/events/${show.eventId}/occurrences`, {
        ...asAdmin(org),
        body: { startDate, startTime: '19:00' },
      });
      made.push(res.body.eventOccurrence.id as string);
    }
    await update(made[2]!, { status: 'CANCELLED' });
    const listed = async (args: Record<string, unknown>) => {
      const res = await graphql(
        app,
        `
          query ($eventId: ID!, $status: OccurrenceStatus, $startsFrom: DateTime, $startsTo: DateTime) {
            eventOccurrences(eventId: $eventId, status: $status, startsFrom: $startsFrom, startsTo: $startsTo) {
              totalCount
              nodes {
                id
              }
            }
          }
        `,
        { eventId: show.eventId, ...args },
        asAdmin(org),
      );
      expect(res.body.errors).toBeUndefined();
      return (res.body.data.eventOccurrences.nodes as Array<{ id: string }>).map((node) => node.id);
    };
    expect(await listed({ startsFrom: '2031-02-01T00:00:00Z' })).toEqual([made[1], made[2]]);
    expect(await listed({ startsFrom: '2031-01-01T00:00:00Z', startsTo: '2031-02-10T19:00:00Z' })).toEqual([made[0], made[1]]);
    expect(await listed({ status: 'SCHEDULED', startsFrom: '2031-01-01T00:00:00Z' })).toEqual([made[0], made[1]]);
    expect(await listed({ status: 'CANCELLED' })).toEqual([made[2]]);
  });
});
