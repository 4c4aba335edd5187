import { beforeAll, describe, expect, it } from 'vitest';
import { instantsAt, localParts, startOfLocalDay } from '../../src/time-zones.ts';
import { useTestApp } from '../support/app.ts';
import { as, asAdmin, createApiKey, staffWithoutRights, staffWithRoles } from '../support/credentials.ts';
import { detailPaths } from '../support/expect.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';

const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
let second: { id: string };
let deletedAccount: { id: string };
beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'events'), createOrganisation(app, 'eventsother')]);
  second = await createAccount(app, org, 'Second account');
  deletedAccount = await createAccount(app, org, 'Deleted account');
  await app().runtime.db.account.update({ where: { id: deletedAccount.id }, data: { isDeleted: true } });
});

const iso = (date: Date | undefined) => date?.toISOString();

type EventBody = { id: string; accountId: string; name: string; occurrenceCount: number; ticketCount: number; productCount: number };

async function newEvent(body: Record<string, unknown>, o = org, token = o.adminToken): Promise<EventBody> {
  const res = await api(app, 'POST', '/v1/events', {
    ...as(token, o),
    body: { accountId: o.account.id, timezone: 'Europe/London', ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.event;
}

async function addOccurrence(eventId: string, body: Record<string, unknown>, o = org) {
  const res = await api(app, 'POST', `/v1/events/${eventId}/occurrences`, { ...asAdmin(o), body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.eventOccurrence as { id: string; startDate: string; startTime: string };
}

async function addTicketType(eventId: string, body: Record<string, unknown> = {}, o = org) {
  const res = await api(app, 'POST', `/v1/events/${eventId}/ticket-types`, {
    ...asAdmin(o),
    body: { name: 'General admission', priceAmount: 2500, currency: 'GBP', ...body },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.ticketType as { id: string };
}

describe('wall-clock times and instants (no library: Intl)', () => {
  it('Europe/London: GMT and BST, the skipped hour and the repeated hour', () => {
    expect(instantsAt('2026-01-15', '19:30', 'Europe/London').map(iso)).toEqual(['2026-01-15T19:30:00.000Z']);
    expect(instantsAt('2026-07-04', '19:30', 'Europe/London').map(iso)).toEqual(['2026-07-04T18:30:00.000Z']);
    // 29 March 2026: 01:00 GMT becomes 02:00 BST.
    expect(instantsAt('2026-03-29', '00:30', 'Europe/London').map(iso)).toEqual(['2026-03-29T00:30:00.000Z']);
    expect(instantsAt('2026-03-29', '01:30', 'Europe/London')).toEqual([]);
    expect(instantsAt('2026-03-29', '02:30', 'Europe/London').map(iso)).toEqual(['2026-03-29T01:30:00.000Z']);
    // 25 October 2026: 02:00 BST becomes 01:00 GMT, so 01:30 happens twice.
    expect(instantsAt('2026-10-25', '01:30', 'Europe/London').map(iso)).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-25T01:30:00.000Z']);
    expect(localParts(new Date('2026-10-25T01:30:00Z'), 'Europe/London')).toEqual({ date: '2026-10-25', time: '01:30' });
    expect(localParts(new Date('2026-03-29T01:30:00Z'), 'Europe/London')).toEqual({ date: '2026-03-29', time: '02:30' });
  });

  it('America/New_York: EST and EDT, the skipped hour and the repeated hour', () => {
    // 8 March 2026: 02:00 EST becomes 03:00 EDT.
    expect(instantsAt('2026-03-08', '01:30', 'America/New_York').map(iso)).toEqual(['2026-03-08T06:30:00.000Z']);
    expect(instantsAt('2026-03-08', '02:30', 'America/New_York')).toEqual([]);
    expect(instantsAt('2026-03-08', '03:30', 'America/New_York').map(iso)).toEqual(['2026-03-08T07:30:00.000Z']);
    // 1 November 2026: 02:00 EDT becomes 01:00 EST.
    expect(instantsAt('2026-11-01', '01:30', 'America/New_York').map(iso)).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T06:30:00.000Z',
    ]);
    expect(localParts(new Date('2026-07-05T01:00:00Z'), 'America/New_York')).toEqual({ date: '2026-07-04', time: '21:00' });
  });

  it('the start of a day whose midnight is skipped is the moment the clocks jump to', () => {
    expect(iso(startOfLocalDay('2026-07-04', 'Europe/London'))).toBe('2026-07-03T23:00:00.000Z');
    expect(iso(startOfLocalDay('2026-07-04', 'UTC'))).toBe('2026-07-04T00:00:00.000Z');
    // Chile: on 6 September 2026 the clocks go from 00:00 to 01:00 (-04 to -03).
    expect(iso(startOfLocalDay('2026-09-06', 'America/Santiago'))).toBe('2026-09-06T04:00:00.000Z');
  });
});

describe('events', () => {
  it('create (201 {event}) with exactly the spec fields, nullables as null; get; update; delete', async () => {
    const created = await api(app, 'POST', '/v1/events', {
      ...asAdmin(org),
      body: { accountId: org.account.id, name: 'Spring gala', timezone: 'Europe/London', tags: ['gala', 'spring', 'gala'] },
    });
    expect(created.status).toBe(201);
    const event = created.body.event;
    expect(event).toEqual({
      id: expect.stringMatching(/^evt_[A-Za-z0-9]+$/),
      organisationId: org.organisation.id,
      accountId: org.account.id,
      name: 'Spring gala',
      description: null,
      status: 'draft',
      venueId: null,
      timezone: 'Europe/London',
      onSaleDate: null,
      offSaleDate: null,
      occurrenceCount: 0,
      ticketCount: 0,
      productCount: 0,
      tags: ['gala', 'spring'],
      isDeleted: false,
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      updatedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      createdBy: org.user.id,
    });

    const got = await api(app, 'GET', `/v1/events/${event.id}`, asAdmin(org));
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ event });

    const patched = await api(app, 'PATCH', `/v1/events/${event.id}`, {
      ...asAdmin(org),
      body: {
        name: 'Spring gala 2026',
        description: 'An evening',
        status: 'on_sale',
        onSaleDate: '2026-03-01T09:00:00+00:00',
        offSaleDate: '2026-04-01T18:00:00+01:00',
        tags: [],
      },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.event).toMatchObject({
      id: event.id,
      name: 'Spring gala 2026',
      description: 'An evening',
      status: 'on_sale',
      onSaleDate: '2026-03-01T09:00:00.000Z',
      offSaleDate: '2026-04-01T17:00:00.000Z',
      tags: [],
      createdBy: org.user.id,
    });
    const cleared = await api(app, 'PATCH', `/v1/events/${event.id}`, { ...asAdmin(org), body: { description: null, onSaleDate: null } });
    expect(cleared.body.event).toMatchObject({ description: null, onSaleDate: null, offSaleDate: '2026-04-01T17:00:00.000Z' });

    const removed = await api(app, 'DELETE', `/v1/events/${event.id}`, asAdmin(org));
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ success: true, id: event.id });
    expect((await api(app, 'GET', `/v1/events/${event.id}`, asAdmin(org))).status).toBe(404);
    expect((await api(app, 'PATCH', `/v1/events/${event.id}`, { ...asAdmin(org), body: { name: 'x' } })).status).toBe(404);
    expect((await api(app, 'DELETE', `/v1/events/${event.id}`, asAdmin(org))).status).toBe(404);
    expect((await api(app, 'GET', `/v1/events/${event.id}/occurrences`, asAdmin(org))).status).toBe(404);
    expect((await api(app, 'GET', `/v1/events/${event.id}/ticket-types`, asAdmin(org))).status).toBe(404);
    const listed = await api(app, 'GET', '/v1/events?limit=100', asAdmin(org));
    expect(listed.body.events.map((e: { id: string }) => e.id)).not.toContain(event.id);
    const [row] = await app().runtime.db.event.findMany({ where: { id: event.id } });
    expect(row!.isDeleted).toBe(true);
  });

  it("the time zone defaults to the venue's; the venue must belong to the same account", async () => {
    const venue = await api(app, 'POST', '/v1/venues', {
      ...asAdmin(org),
      body: { accountId: org.account.id, name: 'Carnegie', timezone: 'America/New_York' },
    });
    const event = await newEvent({ name: 'At Carnegie', venueId: venue.body.venue.id, timezone: undefined });
    expect(event).toMatchObject({ venueId: venue.body.venue.id, timezone: 'America/New_York' });

    const noZone = await api(app, 'POST', '/v1/events', { ...asAdmin(org), body: { accountId: org.account.id, name: 'Nowhere' } });
    expect(noZone.status).toBe(400);
    expect(detailPaths(noZone.body)).toEqual(['timezone']);

    const wrongAccount = await api(app, 'POST', '/v1/events', {
      ...asAdmin(org),
      body: { accountId: second.id, name: 'Elsewhere', timezone: 'UTC', venueId: venue.body.venue.id },
    });
    expect(wrongAccount.status).toBe(404);
    expect(detailPaths(wrongAccount.body)).toEqual(['venueId']);
    const theirVenue = await api(app, 'POST', '/v1/venues', { ...asAdmin(other), body: { accountId: other.account.id, name: 'Theirs' } });
    const foreign = await api(app, 'PATCH', `/v1/events/${event.id}`, { ...asAdmin(org), body: { venueId: theirVenue.body.venue.id } });
    expect(foreign.status).toBe(404);
    expect(detailPaths(foreign.body)).toEqual(['venueId']);
    const unset = await api(app, 'PATCH', `/v1/events/${event.id}`, { ...asAdmin(org), body: { venueId: null } });
    expect(unset.body.event).toMatchObject({ venueId: null, timezone: 'America/New_York' });
  });

  it('refuses invalid input with 400 naming each field', async () => {
    const post = (body: Record<string, unknown>) =>
      api(app, 'POST', '/v1/events', { ...asAdmin(org), body: { accountId: org.account.id, name: 'Valid', timezone: 'UTC', ...body } });

    const many = await post({ name: '', description: 'd'.repeat(5001), timezone: 'Mars/Olympus_Mons', tags: ['ok', '', 't'.repeat(51)] });
    expect(many.status).toBe(400);
    expect(many.body.code).toBe('VALIDATION_FAILED');
    expect(detailPaths(many.body)).toEqual(['description', 'name', 'tags.1', 'tags.2', 'timezone']);

    expect(detailPaths((await post({ name: 'n'.repeat(256) })).body)).toEqual(['name']);
    expect(detailPaths((await post({ status: 'live' })).body)).toEqual(['status']);
    expect(detailPaths((await post({ timezone: '+01:00' })).body)).toEqual(['timezone']);
    expect(detailPaths((await post({ tags: Array.from({ length: 51 }, (_, i) => `t${i}`) })).body)).toEqual(['tags']);
    expect(detailPaths((await post({ onSaleDate: 'tomorrow' })).body)).toEqual(['onSaleDate']);
    expect(detailPaths((await post({ onSaleDate: '2026-05-01T10:00:00Z', offSaleDate: '2026-05-01T10:00:00Z' })).body)).toEqual([
      'offSaleDate',
    ]);
    expect(detailPaths((await post({ colour: 'red' })).body)).toEqual(['colour']);
    expect((await post({ tags: [...Array.from({ length: 50 }, (_, i) => `t${i}`), 't0', 't1'] })).status).toBe(201);

    const event = await newEvent({ name: 'Patch me', onSaleDate: '2026-05-01T10:00:00Z' });
    const patch = await api(app, 'PATCH', `/v1/events/${event.id}`, { ...asAdmin(org), body: { offSaleDate: '2026-04-01T10:00:00Z' } });
    expect(detailPaths(patch.body)).toEqual(['offSaleDate']);
    const move = await api(app, 'PATCH', `/v1/events/${event.id}`, { ...asAdmin(org), body: { accountId: second.id } });
    expect(move.status).toBe(400);
  });

  it("a deleted or another organisation's account cannot own an event (404 naming accountId, existence not confirmed)", async () => {
    for (const accountId of [deletedAccount.id, other.account.id, 'acc_missing']) {
      const res = await api(app, 'POST', '/v1/events', { ...asAdmin(org), body: { accountId, name: 'Orphan', timezone: 'UTC' } });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('NOT_FOUND');
      expect(res.body.details).toEqual([{ path: 'accountId', message: expect.any(String) }]);
    }
  });

  it('an API key creates events with createdBy null', async () => {
    const key = (await createApiKey(app, org, ['events.write', 'events.read'], { accountId: org.account.id })).key;
    const res = await api(app, 'POST', '/v1/events', {
      ...as(key, org),
      body: { accountId: org.account.id, name: 'By key', timezone: 'UTC' },
    });
    expect(res.status).toBe(201);
    expect(res.body.event.createdBy).toBeNull();
  });

  it('counts are true to the data: non-cancelled occurrences, non-deleted ticket types and products, for a whole page', async () => {
    const o = await createOrganisation(app, 'evcount');
    const a = await newEvent({ name: 'Counted' }, o);
    const b = await newEvent({ name: 'Also counted' }, o);
    await addOccurrence(a.id, { startDate: '2026-06-01', startTime: '19:00' }, o);
    await addOccurrence(a.id, { startDate: '2026-06-02', startTime: '19:00' }, o);
    await addOccurrence(a.id, { startDate: '2026-06-03', startTime: '19:00', status: 'cancelled' }, o);
    await addOccurrence(b.id, { startDate: '2026-06-01', startTime: '19:00' }, o);
    const kept = await addTicketType(a.id, {}, o);
    const dropped = await addTicketType(a.id, { name: 'VIP', priceAmount: 9900 }, o);
    await addTicketType(b.id, {}, o);
    await addTicketType(b.id, {}, o);
    await addTicketType(b.id, {}, o);
    const removed = await graphql(
      app,
      'mutation($id: ID!) { deleteTicketType(id: $id) { deletedId userErrors { code } } }',
      { id: dropped.id },
      asAdmin(o),
    );
    expect(removed.body.data.deleteTicketType).toEqual({ deletedId: dropped.id, userErrors: [] });
    const got = await api(app, 'GET', `/v1/events/${a.id}`, asAdmin(o));
    expect(got.body.event).toMatchObject({ occurrenceCount: 2, ticketCount: 1, productCount: 0 });
    const list = await api(app, 'GET', '/v1/events', asAdmin(o));
    const counts = Object.fromEntries(list.body.events.map((e: EventBody) => [e.name, [e.occurrenceCount, e.ticketCount, e.productCount]]));
    expect(counts).toEqual({ Counted: [2, 1, 0], 'Also counted': [1, 3, 0] });
    const types = await api(app, 'GET', `/v1/events/${a.id}/ticket-types`, asAdmin(o));
    expect(types.body.ticketTypes.map((t: { id: string }) => t.id)).toEqual([kept.id]);
    expect((await api(app, 'PATCH', `/v1/ticket-types/${dropped.id}`, { ...asAdmin(o), body: { name: 'x' } })).status).toBe(404);
  });

  it('counts are kept on the event by the database, whoever writes occurrences and ticket types, also at once', async () => {
    const o = await createOrganisation(app, 'evkept');
    const a = await newEvent({ name: 'Kept A' }, o);
    const b = await newEvent({ name: 'Kept B' }, o);
    // Ten transactions adding an occurrence and a ticket type to one event at the same time.
    await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        await addOccurrence(a.id, { startDate: `2026-07-${String(i + 1).padStart(2, '0')}`, startTime: '19:00' }, o);
        await addTicketType(a.id, { name: `Tier ${i}` }, o);
      }),
    );
    const countsOf = async (id: string) => {
      const got = await api(app, 'GET', `/v1/events/${id}`, asAdmin(o));
      return [got.body.event.occurrenceCount, got.body.event.ticketCount];
    };
    expect(await countsOf(a.id)).toEqual([10, 10]);
    // An operator's SQL: cancel two, move three to the other event, delete one; delete a ticket type, move another.
    const db = app().runtime.db;
    const occurrences = await db.eventOccurrence.findMany({ where: { eventId: a.id }, orderBy: { startsAt: 'asc' } });
    const types = await db.ticketType.findMany({ where: { eventId: a.id }, orderBy: { name: 'asc' } });
    await db.eventOccurrence.updateMany({ where: { id: { in: occurrences.slice(0, 2).map((x) => x.id) } }, data: { status: 'cancelled' } });
    await db.eventOccurrence.updateMany({ where: { id: { in: occurrences.slice(2, 5).map((x) => x.id) } }, data: { eventId: b.id } });
    await db.eventOccurrence.delete({ where: { id: occurrences[9]!.id } });
    await db.ticketType.update({ where: { id: types[0]!.id }, data: { isDeleted: true } });
    await db.ticketType.update({ where: { id: types[1]!.id }, data: { eventId: b.id } });
    expect(await countsOf(a.id)).toEqual([4, 8]);
    expect(await countsOf(b.id)).toEqual([3, 1]);
    // Undoing a cancellation counts the occurrence again; the list reads what the single read does.
    await db.eventOccurrence.update({ where: { id: occurrences[0]!.id }, data: { status: 'scheduled' } });
    const list = await api(app, 'GET', '/v1/events', asAdmin(o));
    const counts = Object.fromEntries(list.body.events.map((e: EventBody) => [e.name, [e.occurrenceCount, e.ticketCount]]));
    expect(counts).toEqual({ 'Kept A': [5, 8], 'Kept B': [3, 1] });
  });
});

describe('event lists: pagination', () => {
  let o: TestOrganisation;
  beforeAll(async () => {
    o = await createOrganisation(app, 'evpage');
    for (let i = 1; i <= 41; i++) await newEvent({ name: `Event ${String(i).padStart(2, '0')}` }, o);
  });

  it('41 events, limit 20: pages 1, 2 and 3 with the right totals and flags; page 4 is empty', async () => {
    const get = (query: string) => api(app, 'GET', `/v1/events?${query}`, asAdmin(o));
    const page1 = await get('limit=20');
    expect(page1.status).toBe(200);
    expect(page1.body.pagination).toEqual({ page: 1, limit: 20, total: 41, totalPages: 3, hasNext: true, hasPrev: false });
    expect(page1.body.events).toHaveLength(20);
    expect(page1.body.events[0].name).toBe('Event 41');
    const page2 = await get('limit=20&page=2');
    expect(page2.body.pagination).toEqual({ page: 2, limit: 20, total: 41, totalPages: 3, hasNext: true, hasPrev: true });
    expect(page2.body.events).toHaveLength(20);
    const page3 = await get('page=3&limit=20');
    expect(page3.body.pagination).toEqual({ page: 3, limit: 20, total: 41, totalPages: 3, hasNext: false, hasPrev: true });
    expect(page3.body.events.map((e: EventBody) => e.name)).toEqual(['Event 01']);
    const page4 = await get('page=4&limit=20');
    expect(page4.body).toEqual({ events: [], pagination: { page: 4, limit: 20, total: 41, totalPages: 3, hasNext: false, hasPrev: true } });

    const all = [...page1.body.events, ...page2.body.events, ...page3.body.events].map((e: EventBody) => e.name);
    expect(new Set(all).size).toBe(41);
    expect(all).toEqual(Array.from({ length: 41 }, (_, i) => `Event ${String(41 - i).padStart(2, '0')}`));

    const defaults = await get('');
    expect(defaults.body.pagination).toMatchObject({ page: 1, limit: 20, total: 41 });
    const whole = await get('limit=100');
    expect(whole.body.pagination).toEqual({ page: 1, limit: 100, total: 41, totalPages: 1, hasNext: false, hasPrev: false });
    const exact = await get('limit=41');
    expect(exact.body.pagination).toMatchObject({ totalPages: 1, hasNext: false });
  });

  it('limit outside 1 to 100 or not a whole number is 400 naming query.limit', async () => {
    for (const limit of ['0', '101', 'abc', '-1', '1.5', '']) {
      const res = await api(app, 'GET', `/v1/events?limit=${limit}`, asAdmin(o));
      expect(res.status, `limit=${limit}`).toBe(400);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(detailPaths(res.body)).toEqual(['query.limit']);
    }
    for (const page of ['0', 'x']) {
      expect(detailPaths((await api(app, 'GET', `/v1/events?page=${page}`, asAdmin(o))).body)).toEqual(['query.page']);
    }
  });

  it('GraphQL: first/after cursors walk the same order as the pages', async () => {
    const rest: string[] = [];
    for (const page of [1, 2, 3]) {
      rest.push(...(await api(app, 'GET', `/v1/events?limit=20&page=${page}`, asAdmin(o))).body.events.map((e: EventBody) => e.id));
    }
    const walked: string[] = [];
    let after: string | null = null;
    for (let round = 0; round < 10; round++) {
      const res = await graphql(
        app,
        `
          query ($after: String) {
            events(first: 15, after: $after) {
              edges {
                cursor
                node {
                  id
                }
              }
              pageInfo {
                hasNextPage
                hasPreviousPage
                endCursor
              }
              pagination {
                total
              }
            }
          }
        `,
        { after },
        asAdmin(o),
      );
      expect(res.body.errors).toBeUndefined();
      const connection = res.body.data.events;
      expect(connection.pagination.total).toBe(41);
      expect(connection.pageInfo.hasPreviousPage).toBe(after !== null);
      walked.push(...connection.edges.map((edge: { node: { id: string } }) => edge.node.id));
      if (!connection.pageInfo.hasNextPage) break;
      after = connection.pageInfo.endCursor;
    }
    expect(walked).toEqual(rest);

    // The graph pages with the Relay arguments only; page/limit are /v1's.
    const pageArgs = await graphql(app, '{ events(page: 3, limit: 20) { nodes { id } } }', {}, asAdmin(o));
    expect(pageArgs.body.errors[0].message).toMatch(/Unknown argument "page"/);
    const badFirst = await graphql(app, '{ events(first: 101) { nodes { id } } }', {}, asAdmin(o));
    expect(badFirst.body.errors[0].extensions).toMatchObject({ code: 'VALIDATION_FAILED', details: [{ path: 'first' }] });
  });
});

describe('event lists: filters', () => {
  let o: TestOrganisation;
  let extra: { id: string };
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    o = await createOrganisation(app, 'evfilter');
    extra = await createAccount(app, o, 'Extra');
    const a = await newEvent({ name: 'Summer Jazz', status: 'published' }, o);
    const b = await newEvent(
      { accountId: extra.id, name: 'Opera night', description: 'An evening of JAZZ standards', timezone: 'America/New_York' },
      o,
    );
    const c = await newEvent({ name: 'Rock 100% live', status: 'on_sale' }, o);
    const d = await newEvent({ name: 'Unscheduled' }, o);
    Object.assign(ids, { a: a.id, b: b.id, c: c.id, d: d.id });
    await addOccurrence(a.id, { startDate: '2026-07-04', startTime: '20:00' }, o);
    // 21:00 on 4 July in New York is 01:00 on 5 July in UTC.
    await addOccurrence(b.id, { startDate: '2026-07-04', startTime: '21:00' }, o);
    await addOccurrence(c.id, { startDate: '2026-07-10', startTime: '20:00' }, o);
    await addOccurrence(c.id, { startDate: '2026-07-04', startTime: '12:00', status: 'cancelled' }, o);
  });

  async function names(query: string) {
    const res = await api(app, 'GET', `/v1/events?${query}`, asAdmin(o));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.pagination.total).toBe(res.body.events.length);
    return res.body.events.map((e: EventBody) => e.name).sort();
  }

  it('by status, account and text (case-insensitive, name or description; wildcards are literal)', async () => {
    expect(await names('status=published')).toEqual(['Summer Jazz']);
    expect(await names('status=on_sale')).toEqual(['Rock 100% live']);
    expect(await names(`accountId=${extra.id}`)).toEqual(['Opera night']);
    expect(await names('q=jazz')).toEqual(['Opera night', 'Summer Jazz']);
    expect(await names('q=SUMMER%20jazz')).toEqual(['Summer Jazz']);
    expect(await names('q=100%25')).toEqual(['Rock 100% live']);
    expect(await names('q=%25')).toEqual(['Rock 100% live']);
    expect(await names('q=_')).toEqual([]);
    expect(await names('q=%5C')).toEqual([]);
    expect(await names('q=jazz&status=draft')).toEqual(['Opera night']);
  });

  it("by date range: a date is a whole day in the occurrence's own time zone; cancelled occurrences do not count", async () => {
    expect(await names('from=2026-07-04&to=2026-07-04')).toEqual(['Opera night', 'Summer Jazz']);
    expect(await names('from=2026-07-05')).toEqual(['Rock 100% live']);
    expect(await names('to=2026-07-04')).toEqual(['Opera night', 'Summer Jazz']);
    expect(await names('from=2026-07-05&to=2026-07-09')).toEqual([]);
    expect(await names('from=2026-07-01&to=2026-07-31')).toEqual(['Opera night', 'Rock 100% live', 'Summer Jazz']);
    expect(await names(`from=2026-07-01&accountId=${extra.id}`)).toEqual(['Opera night']);
  });

  it("by date range in the zones farthest from UTC: a local day's first and last minutes are in it", async () => {
    const far = await createOrganisation(app, 'evfarzone');
    // 00:30 on 4 July at UTC+14 is 10:30 on 3 July in UTC; 23:30 on 4 July at UTC-11 is 10:30 on 5 July.
    const east = await newEvent({ name: 'Kiritimati dawn', timezone: 'Pacific/Kiritimati' }, far);
    const west = await newEvent({ name: 'Pago Pago midnight', timezone: 'Pacific/Pago_Pago' }, far);
    await addOccurrence(east.id, { startDate: '2026-07-04', startTime: '00:30' }, far);
    await addOccurrence(west.id, { startDate: '2026-07-04', startTime: '23:30' }, far);
    const farNames = async (query: string) => {
      const res = await api(app, 'GET', `/v1/events?${query}`, asAdmin(far));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.pagination.total).toBe(res.body.events.length);
      return res.body.events.map((e: EventBody) => e.name).sort();
    };
    expect(await farNames('from=2026-07-04&to=2026-07-04')).toEqual(['Kiritimati dawn', 'Pago Pago midnight']);
    expect(await farNames('from=2026-07-05')).toEqual([]);
    expect(await farNames('to=2026-07-03')).toEqual([]);
    expect(await farNames('from=2026-07-03&to=2026-07-03')).toEqual([]);
    expect(await farNames('from=2026-07-05&to=2026-07-05')).toEqual([]);
  });

  it('by instant range: a date and time is exact', async () => {
    expect(await names('from=2026-07-05T00:00:00Z')).toEqual(['Opera night', 'Rock 100% live']);
    expect(await names('from=2026-07-04T19:00:00Z&to=2026-07-04T19:00:00Z')).toEqual(['Summer Jazz']);
    expect(await names(`to=${encodeURIComponent('2026-07-04T20:59:00-04:00')}`)).toEqual(['Summer Jazz']);
    expect(await names(`to=${encodeURIComponent('2026-07-04T21:00:00-04:00')}`)).toEqual(['Opera night', 'Summer Jazz']);
  });

  it("in the graph, the start range is typed: startsFrom/startsTo instants, startDateFrom/startDateTo days in the occurrence's zone", async () => {
    const graphNames = async (args: string, variables: Record<string, unknown> = {}) => {
      const types: Record<string, string> = { a: 'DateTime', b: 'DateTime', c: 'LocalDate', d: 'LocalDate' };
      const declared = Object.keys(variables).map((name) => `$${name}: ${types[name]}`);
      const res = await graphql(
        app,
        `query (${declared.join(', ')}) { events(first: 100, ${args}) { nodes { name } } }`,
        variables,
        asAdmin(o),
      );
      return res.body as {
        data?: { events: { nodes: Array<{ name: string }> } };
        errors?: Array<{ extensions: { details?: Array<{ path: string }> } }>;
      };
    };
    const sorted = async (args: string, variables: Record<string, unknown>) => {
      const body = await graphNames(args, variables);
      expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
      return body.data!.events.nodes.map((e) => e.name).sort();
    };
    expect(await sorted('startDateFrom: $c, startDateTo: $d', { c: '2026-07-04', d: '2026-07-04' })).toEqual([
      'Opera night',
      'Summer Jazz',
    ]);
    expect(await sorted('startsFrom: $a', { a: '2026-07-05T00:00:00Z' })).toEqual(['Opera night', 'Rock 100% live']);
    expect(await sorted('startDateFrom: $c, startsTo: $b', { c: '2026-07-05', b: '2026-07-30T00:00:00Z' })).toEqual(['Rock 100% live']);
    // A day is not an instant, nor an instant a day (judged by the use case, naming the argument);
    // one bound of each end; the range in order.
    const refused = async (args: string, variables: Record<string, unknown>) =>
      ((await graphNames(args, variables)).errors?.[0]?.extensions.details ?? []).map((d) => d.path);
    expect(await refused('startsFrom: $a', { a: '2026-07-04' })).toEqual(['startsFrom']);
    expect(await refused('startDateFrom: $c', { c: '2026-07-04T00:00:00Z' })).toEqual(['startDateFrom']);
    expect(await refused('startsFrom: $a, startDateFrom: $c', { a: '2026-07-04T00:00:00Z', c: '2026-07-04' })).toEqual(['startDateFrom']);
    expect(await refused('startDateFrom: $c, startDateTo: $d', { c: '2026-07-05', d: '2026-07-04' })).toEqual(['startDateTo']);
    // /v1's one-string filter is not an argument of the graph /graphql serves.
    const untyped = await graphql(app, 'query { events(from: "2026-07-04") { nodes { id } } }', {}, asAdmin(o));
    expect(untyped.body.errors[0].message).toMatch(/Unknown argument "from"/);
  });

  it('refuses bad filters with 400 naming the parameter', async () => {
    const bad = async (query: string) => detailPaths((await api(app, 'GET', `/v1/events?${query}`, asAdmin(o))).body);
    expect(await bad('status=live')).toEqual(['query.status']);
    expect(await bad('from=yesterday')).toEqual(['query.from']);
    expect(await bad('to=2026-02-30')).toEqual(['query.to']);
    expect(await bad('from=2026-07-05&to=2026-07-04')).toEqual(['query.to']);
    // In the graph the filter is the EventStatus enum: a value outside it is refused as a variable …
    const graph = await graphql(app, 'query ($s: EventStatus) { events(status: $s) { nodes { id } } }', { s: 'live' }, asAdmin(o));
    expect(graph.body.errors[0].extensions).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ path: 'variables.s', message: expect.stringContaining('ON_SALE') }],
    });
    // … and, written into the document, the document itself is invalid.
    const literal = await graphql(app, '{ events(status: live) { nodes { id } } }', {}, asAdmin(o));
    expect(literal.body.errors[0].extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED' });
  });
});

describe('event occurrences', () => {
  it("dates and times are wall-clock values in the event's zone, stored as instants across DST", async () => {
    const london = await newEvent({ name: 'London shows', timezone: 'Europe/London' });
    const created = await api(app, 'POST', `/v1/events/${london.id}/occurrences`, {
      ...asAdmin(org),
      body: { startDate: '2026-03-29', startTime: '19:30', endDate: '2026-03-29', endTime: '22:00', capacity: 100 },
    });
    expect(created.status).toBe(201);
    expect(created.body.eventOccurrence).toEqual({
      id: expect.stringMatching(/^eoc_[A-Za-z0-9]+$/),
      organisationId: org.organisation.id,
      accountId: org.account.id,
      eventId: london.id,
      startDate: '2026-03-29',
      startTime: '19:30',
      endDate: '2026-03-29',
      endTime: '22:00',
      timezone: 'Europe/London',
      status: 'scheduled',
      capacity: 100,
    });
    await addOccurrence(london.id, { startDate: '2026-03-28', startTime: '19:30' });
    // Across the autumn change: 22:00 BST to 03:00 GMT is six hours.
    await addOccurrence(london.id, { startDate: '2026-10-24', startTime: '22:00', endDate: '2026-10-25', endTime: '03:00' });
    // The repeated hour means its first occurrence (BST).
    await addOccurrence(london.id, { startDate: '2026-10-25', startTime: '01:30', endTime: '02:30' });
    // Overridden zone.
    await addOccurrence(london.id, { startDate: '2026-03-08', startTime: '19:00', timezone: 'America/New_York' });

    const graph = await graphql(
      app,
      `
        query ($id: ID!) {
          eventOccurrences(eventId: $id) {
            nodes {
              startDate
              startTime
              endDate
              endTime
              timezone
              startsAt
              endsAt
            }
          }
        }
      `,
      { id: london.id },
      asAdmin(org),
    );
    expect(graph.body.errors).toBeUndefined();
    expect(graph.body.data.eventOccurrences.nodes).toEqual([
      {
        startDate: '2026-03-08',
        startTime: '19:00',
        endDate: null,
        endTime: null,
        timezone: 'America/New_York',
        startsAt: '2026-03-08T23:00:00.000Z',
        endsAt: null,
      },
      {
        startDate: '2026-03-28',
        startTime: '19:30',
        endDate: null,
        endTime: null,
        timezone: 'Europe/London',
        startsAt: '2026-03-28T19:30:00.000Z',
        endsAt: null,
      },
      {
        startDate: '2026-03-29',
        startTime: '19:30',
        endDate: '2026-03-29',
        endTime: '22:00',
        timezone: 'Europe/London',
        startsAt: '2026-03-29T18:30:00.000Z',
        endsAt: '2026-03-29T21:00:00.000Z',
      },
      {
        startDate: '2026-10-24',
        startTime: '22:00',
        endDate: '2026-10-25',
        endTime: '03:00',
        timezone: 'Europe/London',
        startsAt: '2026-10-24T21:00:00.000Z',
        endsAt: '2026-10-25T03:00:00.000Z',
      },
      {
        startDate: '2026-10-25',
        startTime: '01:30',
        endDate: '2026-10-25',
        endTime: '02:30',
        timezone: 'Europe/London',
        startsAt: '2026-10-25T00:30:00.000Z',
        endsAt: '2026-10-25T02:30:00.000Z',
      },
    ]);
  });

  it('America/New_York: the spring-forward gap is refused, the fall-back hour is its first (EDT) occurrence', async () => {
    const ny = await newEvent({ name: 'New York shows', timezone: 'America/New_York' });
    const gap = await api(app, 'POST', `/v1/events/${ny.id}/occurrences`, {
      ...asAdmin(org),
      body: { startDate: '2026-03-08', startTime: '02:30' },
    });
    expect(gap.status).toBe(400);
    expect(gap.body.details).toEqual([{ path: 'startTime', message: expect.stringContaining('does not exist in America/New_York') }]);
    await addOccurrence(ny.id, { startDate: '2026-03-08', startTime: '03:30' });
    await addOccurrence(ny.id, { startDate: '2026-11-01', startTime: '01:30' });
    await addOccurrence(ny.id, { startDate: '2026-07-04', startTime: '21:00' });
    const graph = await graphql(
      app,
      `
        query ($id: ID!) {
          eventOccurrences(eventId: $id) {
            nodes {
              startDate
              startTime
              startsAt
            }
          }
        }
      `,
      { id: ny.id },
      asAdmin(org),
    );
    expect(graph.body.data.eventOccurrences.nodes).toEqual([
      { startDate: '2026-03-08', startTime: '03:30', startsAt: '2026-03-08T07:30:00.000Z' },
      { startDate: '2026-07-04', startTime: '21:00', startsAt: '2026-07-05T01:00:00.000Z' },
      { startDate: '2026-11-01', startTime: '01:30', startsAt: '2026-11-01T05:30:00.000Z' },
    ]);
  });

  it('lists in start order with pagination', async () => {
    const event = await newEvent({ name: 'Residency' });
    for (const day of ['05', '01', '03', '02', '04']) await addOccurrence(event.id, { startDate: `2026-09-${day}`, startTime: '20:00' });
    const page1 = await api(app, 'GET', `/v1/events/${event.id}/occurrences?limit=2`, asAdmin(org));
    expect(page1.status).toBe(200);
    expect(page1.body.eventOccurrences.map((x: { startDate: string }) => x.startDate)).toEqual(['2026-09-01', '2026-09-02']);
    expect(page1.body.pagination).toEqual({ page: 1, limit: 2, total: 5, totalPages: 3, hasNext: true, hasPrev: false });
    const page3 = await api(app, 'GET', `/v1/events/${event.id}/occurrences?limit=2&page=3`, asAdmin(org));
    expect(page3.body.eventOccurrences.map((x: { startDate: string }) => x.startDate)).toEqual(['2026-09-05']);
    expect(page3.body.pagination).toMatchObject({ hasNext: false, hasPrev: true });
    expect(detailPaths((await api(app, 'GET', `/v1/events/${event.id}/occurrences?limit=101`, asAdmin(org))).body)).toEqual([
      'query.limit',
    ]);
  });

  it('refuses invalid input with 400 naming each field', async () => {
    const event = await newEvent({ name: 'Invalid occurrences' });
    const post = (body: Record<string, unknown>) => api(app, 'POST', `/v1/events/${event.id}/occurrences`, { ...asAdmin(org), body });
    const bad = await post({ startDate: '2026-02-30', startTime: '25:00', capacity: -1, timezone: 'Atlantis/Central' });
    expect(bad.status).toBe(400);
    expect(detailPaths(bad.body)).toEqual(['capacity', 'startDate', 'startTime', 'timezone']);
    expect(detailPaths((await post({ startDate: '2026-05-01', startTime: '20:00', endTime: '19:00' })).body)).toEqual(['endTime']);
    expect(
      detailPaths((await post({ startDate: '2026-05-01', startTime: '20:00', endDate: '2026-04-30', endTime: '23:00' })).body),
    ).toEqual(['endDate']);
    expect(detailPaths((await post({ startDate: '2026-05-01', startTime: '20:00', endDate: '2026-05-02' })).body)).toEqual(['endTime']);
    expect(detailPaths((await post({ startDate: '2026-05-01', startTime: '20:00', status: 'postponed' })).body)).toEqual(['status']);
    expect(detailPaths((await post({ startTime: '20:00' })).body)).toEqual(['startDate']);
    expect(detailPaths((await post({ startDate: '2026-05-01', startTime: '8pm' })).body)).toEqual(['startTime']);
  });
});

describe('ticket types', () => {
  it('create (201), list, update; every field present, nullables as null', async () => {
    const event = await newEvent({ name: 'Ticketed' });
    const created = await api(app, 'POST', `/v1/events/${event.id}/ticket-types`, {
      ...asAdmin(org),
      body: { name: 'Standing', priceAmount: 3550, currency: 'EUR' },
    });
    expect(created.status).toBe(201);
    const ticketType = created.body.ticketType;
    expect(ticketType).toEqual({
      id: expect.stringMatching(/^tkt_[A-Za-z0-9]+$/),
      organisationId: org.organisation.id,
      accountId: org.account.id,
      eventId: event.id,
      name: 'Standing',
      description: null,
      priceAmount: 3550,
      currency: 'EUR',
      capacity: null,
      maxPerOrder: null,
      salesStartAt: null,
      salesEndAt: null,
      createdAt: expect.stringMatching(/Z$/),
      updatedAt: expect.stringMatching(/Z$/),
    });
    await addTicketType(event.id, {
      name: 'Seated',
      priceAmount: 0,
      capacity: 0,
      maxPerOrder: 4,
      salesStartAt: '2026-05-01T09:00:00Z',
      salesEndAt: '2026-06-01T09:00:00+02:00',
    });

    const list = await api(app, 'GET', `/v1/events/${event.id}/ticket-types`, asAdmin(org));
    expect(list.status).toBe(200);
    expect(list.body.ticketTypes.map((t: { name: string }) => t.name)).toEqual(['Standing', 'Seated']);
    expect(list.body.ticketTypes[1]).toMatchObject({
      priceAmount: 0,
      capacity: 0,
      maxPerOrder: 4,
      salesStartAt: '2026-05-01T09:00:00.000Z',
      salesEndAt: '2026-06-01T07:00:00.000Z',
    });
    expect(list.body.pagination).toEqual({ page: 1, limit: 20, total: 2, totalPages: 1, hasNext: false, hasPrev: false });

    const patched = await api(app, 'PATCH', `/v1/ticket-types/${ticketType.id}`, {
      ...asAdmin(org),
      body: { priceAmount: 4000, capacity: 200, description: 'Front of house' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.ticketType).toMatchObject({
      id: ticketType.id,
      priceAmount: 4000,
      capacity: 200,
      description: 'Front of house',
      currency: 'EUR',
    });
    const unlimited = await api(app, 'PATCH', `/v1/ticket-types/${ticketType.id}`, { ...asAdmin(org), body: { capacity: null } });
    expect(unlimited.body.ticketType.capacity).toBeNull();
    expect((await api(app, 'GET', `/v1/events/${event.id}`, asAdmin(org))).body.event.ticketCount).toBe(2);
  });

  it('refuses invalid input with 400 naming each field', async () => {
    const event = await newEvent({ name: 'Invalid ticket types' });
    const post = (body: Record<string, unknown>) =>
      api(app, 'POST', `/v1/events/${event.id}/ticket-types`, {
        ...asAdmin(org),
        body: { name: 'T', priceAmount: 100, currency: 'GBP', ...body },
      });
    const bad = await post({ name: '', priceAmount: -1, currency: 'gbp', capacity: -5, maxPerOrder: 0 });
    expect(bad.status).toBe(400);
    expect(detailPaths(bad.body)).toEqual(['capacity', 'currency', 'maxPerOrder', 'name', 'priceAmount']);
    expect(detailPaths((await post({ currency: 'XYZ' })).body)).toEqual(['currency']);
    expect(detailPaths((await post({ priceAmount: 1.5 })).body)).toEqual(['priceAmount']);
    expect(detailPaths((await post({ priceAmount: '10' })).body)).toEqual(['priceAmount']);
    expect(detailPaths((await post({ salesStartAt: '2026-06-01T00:00:00Z', salesEndAt: '2026-05-01T00:00:00Z' })).body)).toEqual([
      'salesEndAt',
    ]);
    const tt = await addTicketType(event.id);
    const patch = await api(app, 'PATCH', `/v1/ticket-types/${tt.id}`, { ...asAdmin(org), body: { currency: null } });
    expect(detailPaths(patch.body)).toEqual(['currency']);
    const graph = await graphql(
      app,
      'mutation($e: ID!) { createTicketType(eventId: $e, input: { name: "G", priceAmount: 1, currency: "usd" }) { ticketType { id } userErrors { field code } } }',
      { e: event.id },
      asAdmin(org),
    );
    expect(graph.body.errors).toBeUndefined();
    expect(graph.body.data.createTicketType).toEqual({
      ticketType: null,
      userErrors: [{ field: ['input', 'currency'], code: 'VALIDATION_FAILED' }],
    });
  });
});

describe('access', () => {
  let event: EventBody;
  let ticketTypeId: string;
  beforeAll(async () => {
    event = await newEvent({ name: 'Guarded' });
    await addOccurrence(event.id, { startDate: '2026-08-01', startTime: '20:00' });
    ticketTypeId = (await addTicketType(event.id)).id;
  });

  const routes = (id: string, ticketType: string) =>
    [
      ['GET', '/v1/events', undefined],
      ['POST', '/v1/events', { accountId: org.account.id, name: 'x', timezone: 'UTC' }],
      ['GET', `/v1/events/${id}`, undefined],
      ['PATCH', `/v1/events/${id}`, { name: 'x' }],
      ['DELETE', `/v1/events/${id}`, undefined],
      ['GET', `/v1/events/${id}/occurrences`, undefined],
      ['POST', `/v1/events/${id}/occurrences`, { startDate: '2026-08-02', startTime: '20:00' }],
      ['GET', `/v1/events/${id}/ticket-types`, undefined],
      ['POST', `/v1/events/${id}/ticket-types`, { name: 'x', priceAmount: 1, currency: 'GBP' }],
      ['PATCH', `/v1/ticket-types/${ticketType}`, { name: 'x' }],
    ] as const;

  it('a staff viewer reads everything on its account and gets 403 FORBIDDEN on every write', async () => {
    const viewer = await staffWithRoles(app, org, ['viewer'], org.account.id, 'viewer');
    for (const [method, path, body] of routes(event.id, ticketTypeId)) {
      const res = await api(app, method, path, { ...as(viewer.token, org), body });
      if (method === 'GET') {
        expect(res.status, `${method} ${path}`).toBe(200);
      } else {
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(res.body.code).toBe('FORBIDDEN');
      }
    }
  });

  it('a staff user without any role is refused with 403; one who cannot see the account gets 404 for its things', async () => {
    const nobody = await staffWithoutRights(app, org, 'nobody');
    const list = await api(app, 'GET', '/v1/events', as(nobody.token, org));
    expect(list.status).toBe(403);
    expect(list.body.code).toBe('FORBIDDEN');

    const elsewhere = await staffWithRoles(app, org, ['event_manager'], second.id, 'manager');
    expect((await api(app, 'GET', `/v1/events/${event.id}`, as(elsewhere.token, org))).status).toBe(404);
    expect((await api(app, 'PATCH', `/v1/events/${event.id}`, { ...as(elsewhere.token, org), body: { name: 'x' } })).status).toBe(404);
    expect((await api(app, 'PATCH', `/v1/ticket-types/${ticketTypeId}`, { ...as(elsewhere.token, org), body: { name: 'x' } })).status).toBe(
      404,
    );
    const own = await api(app, 'POST', '/v1/events', {
      ...as(elsewhere.token, org),
      body: { accountId: second.id, name: 'Mine', timezone: 'UTC' },
    });
    expect(own.status).toBe(201);
    const notOwn = await api(app, 'POST', '/v1/events', {
      ...as(elsewhere.token, org),
      body: { accountId: org.account.id, name: 'Not mine', timezone: 'UTC' },
    });
    expect(notOwn.status).toBe(403);
    const seen = await api(app, 'GET', '/v1/events?limit=100', as(elsewhere.token, org));
    expect(seen.body.events.every((e: EventBody) => e.accountId === second.id)).toBe(true);
    expect(seen.body.events.map((e: EventBody) => e.id)).toContain(own.body.event.id);
  });

  it('an API key without the scope gets 404 NOT_FOUND on every route; events.read reads but cannot write', async () => {
    const noScope = (await createApiKey(app, org, ['venues.read', 'venues.write'])).key;
    for (const [method, path, body] of routes(event.id, ticketTypeId)) {
      const res = await api(app, method, path, { ...as(noScope, org), body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.code).toBe('NOT_FOUND');
    }
    const reader = (await createApiKey(app, org, ['events.read'])).key;
    for (const [method, path, body] of routes(event.id, ticketTypeId)) {
      const res = await api(app, method, path, { ...as(reader, org), body });
      expect(res.status, `${method} ${path}`).toBe(method === 'GET' ? 200 : 404);
    }
  });

  it("another organisation's ids are 404 on every route", async () => {
    const theirs = await newEvent({ accountId: other.account.id, name: 'Theirs' }, other);
    const theirType = await addTicketType(theirs.id, {}, other);
    for (const [method, path, body] of routes(theirs.id, theirType.id).filter(([, path]) => path !== '/v1/events')) {
      const res = await api(app, method, path, { ...asAdmin(org), body });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    const list = await api(app, 'GET', '/v1/events?limit=100', asAdmin(org));
    expect(list.body.events.map((e: EventBody) => e.id)).not.toContain(theirs.id);
    const filtered = await api(app, 'GET', `/v1/events?accountId=${other.account.id}`, asAdmin(org));
    expect(filtered.body.pagination.total).toBe(0);
    expect((await api(app, 'GET', `/v1/events/${theirs.id}`, asAdmin(other))).body.event.name).toBe('Theirs');
  });

  it('GraphQL answers the same codes in extensions.code', async () => {
    const viewer = await staffWithRoles(app, org, ['viewer'], org.account.id, 'gviewer');
    const write = await graphql(app, 'mutation($id: ID!) { deleteEvent(id: $id) { deletedId } }', { id: event.id }, as(viewer.token, org));
    expect(write.body.errors[0].extensions.code).toBe('FORBIDDEN');
    const key = (await createApiKey(app, org, ['venues.read'])).key;
    const read = await graphql(app, '{ events { nodes { id } } }', {}, as(key, org));
    expect(read.body.errors[0].extensions.code).toBe('NOT_FOUND');
    expect(read.body.data).toEqual({ events: null });
  });
});
