import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { as, asAdmin, customRole } from '../support/credentials.ts';
import { api, createOrganisation, createStaffUser, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { seedCatalogue, type SeededCatalogue } from '../support/sales.ts';

/**
 * Values judged whole, with their bounds. Dates and instants are in years 1 to 9999 (what
 * PostgreSQL and an ISO 8601 answer both hold), written as ISO 8601 with Z or an offset, the same
 * on every field and both surfaces: outside that, a 400 naming the field, never a 500, never a date
 * silently moved. Stored JSON and lists name the limit they exceed.
 */
const app = useTestApp();
let org: TestOrganisation;
let catalogue: SeededCatalogue;

beforeAll(async () => {
  org = await createOrganisation(app, 'ranges');
  catalogue = await seedCatalogue(app, org);
});

const CREATE_EVENT = 'mutation ($input: CreateEventInput!) { createEvent(input: $input) { event { id } userErrors { field code } } }';

describe('instants out of range', () => {
  const event = { name: 'Far', timezone: 'UTC' };

  it('are refused naming the field, on /v1 and /graphql', async () => {
    for (const onSaleDate of ['0000-01-01T00:00:00Z', '9999-12-31T23:59:59-14:00']) {
      const rest = await api(app, 'POST', '/v1/events', { ...asAdmin(org), body: { ...event, accountId: org.account.id, onSaleDate } });
      expect([onSaleDate, rest.status, rest.body.details?.[0]?.path]).toEqual([onSaleDate, 400, 'onSaleDate']);
    }
    const graph = await graphql(
      app,
      CREATE_EVENT,
      { input: { ...event, accountId: org.account.id, onSaleDate: '0000-01-01T00:00:00Z' } },
      asAdmin(org),
    );
    expect(graph.body.data.createEvent.userErrors).toEqual([{ field: ['input', 'onSaleDate'], code: 'VALIDATION_FAILED' }]);
  });

  it('are refused in filters', async () => {
    expect((await api(app, 'GET', '/v1/events?from=0000-01-01', asAdmin(org))).status).toBe(400);
    expect((await api(app, 'GET', '/v1/audit-entries?from=0000-01-01T00:00:00Z', asAdmin(org))).status).toBe(400);
    const polled = await graphql(app, 'query { accounts(updatedSince: "0000-01-01T00:00:00Z") { totalCount } }', {}, asAdmin(org));
    expect(polled.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    // The earliest and latest instants are taken.
    expect((await api(app, 'GET', '/v1/events?from=0001-01-01T00:00:00Z&to=9999-12-31T00:00:00Z', asAdmin(org))).status).toBe(200);
  });
});

describe('local dates', () => {
  it('keep years before 100 as written, never as 19xx', async () => {
    const res = await api(app, 'POST', `/v1/events/${catalogue.eventId}/occurrences`, {
      ...asAdmin(org),
      body: { startDate: '0050-06-01', startTime: '19:00' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.eventOccurrence.startDate).toBe('0050-06-01');
  });

  it('refuse year 0, and a wall clock whose instant falls beyond year 9999', async () => {
    const year0 = await api(app, 'POST', `/v1/events/${catalogue.eventId}/occurrences`, {
      ...asAdmin(org),
      body: { startDate: '0000-06-01', startTime: '19:00' },
    });
    expect([year0.status, year0.body.details?.[0]?.path]).toEqual([400, 'startDate']);
    const beyond = await api(app, 'POST', `/v1/events/${catalogue.eventId}/occurrences`, {
      ...asAdmin(org),
      body: { startDate: '9999-12-31', startTime: '23:00', timezone: 'America/Los_Angeles' },
    });
    expect([beyond.status, beyond.body.details?.[0]?.path]).toEqual([400, 'startTime']);
  });
});

describe("an API key's expiresAt", () => {
  const key = (expiresAt: string) =>
    api(app, 'POST', '/v1/api-keys', { ...asAdmin(org), body: { name: 'Expiring', scopes: ['events.read'], expiresAt } });

  it('is an ISO 8601 instant like every other: no guessed formats, no impossible dates, no 500', async () => {
    for (const expiresAt of ['Jan 1 2030', '1 2 2030', '2030-02-30', '2030-01-01', '99999']) {
      const res = await key(expiresAt);
      expect([expiresAt, res.status, res.body.details?.[0]?.path]).toEqual([expiresAt, 400, 'expiresAt']);
    }
    const taken = await key('2030-01-01T00:00:00+01:00');
    expect(taken.status).toBe(201);
    expect(taken.body.apiKey.expiresAt).toBe('2029-12-31T23:00:00.000Z');
  });
});

describe('stored JSON and lists', () => {
  it("bound an organisation's metadata by its size, naming the limit", async () => {
    const metadata = Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`key${i}`, 'value']));
    const res = await api(app, 'PATCH', '/v1/organisation', { ...asAdmin(org), body: { metadata } });
    expect([res.status, res.body.details?.[0]]).toEqual([
      400,
      expect.objectContaining({ path: 'metadata', limit: 'maxBytes', max: 16_384 }),
    ]);
    expect((await api(app, 'PATCH', '/v1/organisation', { ...asAdmin(org), body: { metadata: { crm: 'x' } } })).status).toBe(200);
  });

  it("name the limit an event's tags exceed, as sent and once duplicates are removed", async () => {
    const create = (tags: string[]) =>
      api(app, 'POST', '/v1/events', { ...asAdmin(org), body: { accountId: org.account.id, name: 'Tagged', timezone: 'UTC', tags } });
    const distinct = await create(Array.from({ length: 51 }, (_, i) => `tag${i}`));
    expect([distinct.status, distinct.body.details?.[0]]).toEqual([
      400,
      expect.objectContaining({ path: 'tags', limit: 'maxItems', max: 50 }),
    ]);
    const sent = await create(Array.from({ length: 201 }, () => 'same'));
    expect([sent.status, sent.body.details?.[0]]).toEqual([400, expect.objectContaining({ path: 'tags', limit: 'maxItems', max: 200 })]);
    expect((await create(Array.from({ length: 200 }, () => 'same'))).status).toBe(201);
  });
});

describe('ids named in a body', () => {
  it('answer one of another kind as one of another organisation: 404 naming the field, on every use case', async () => {
    const event = catalogue.eventId; // an id, but not an account's
    const named = [
      ['POST', '/v1/api-keys', { name: 'k', scopes: ['events.read'], accountId: event }],
      ['POST', '/v1/embed/sessions', { accountId: event, scopes: ['events.read'] }],
      ['POST', '/v1/venues', { accountId: event, name: 'Hall' }],
      ['POST', '/v1/events', { accountId: event, name: 'Show', timezone: 'UTC' }],
      ['POST', '/v1/user-account-roles', { userId: org.user.id, accountId: event, roleId: org.assignment.roleId }],
    ] as const;
    for (const [method, path, body] of named) {
      const res = await api(app, method, path, { ...asAdmin(org), body });
      expect([path, res.status, res.body.code, res.body.details?.[0]?.path]).toEqual([path, 404, 'NOT_FOUND', 'accountId']);
    }
  });
});

describe("a role's account-scoped permission", () => {
  it('names an account of the organisation, else 404 naming the permission', async () => {
    const other = await createOrganisation(app, 'ranges-other');
    const create = (permissions: string[]) =>
      api(app, 'POST', '/v1/roles', { ...asAdmin(org), body: { name: `Scoped ${permissions.length}-${Date.now()}`, permissions } });
    const theirs = await create(['events.read', `events.write:${other.account.id}`]);
    expect([theirs.status, theirs.body.code, theirs.body.details?.[0]?.path]).toEqual([404, 'NOT_FOUND', 'permissions.1']);
    expect((await create([`events.write:${org.account.id}`])).status).toBe(201);
  });

  it("is judged after the caller's rights, so it tells nothing of accounts they may not hand out", async () => {
    const writer = await customRole(app, org, ['roles.read:all', 'roles.write:all']);
    const staff = await createStaffUser(app, org, [{ roleId: writer.id, accountId: org.account.id }], 'rolewriter');
    for (const account of ['acc_doesnotexist0000000000', org.account.id]) {
      const res = await api(app, 'POST', '/v1/roles', {
        ...as(staff.token, org),
        body: { name: `Probe ${account}`, permissions: [`events.read:${account}`] },
      });
      expect([account, res.status]).toEqual([account, 403]);
    }
  });
});
