import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { as, asAdmin, createApiKey, staffWithRoles } from '../support/credentials.ts';
import { detailPaths } from '../support/expect.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';

const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
let second: { id: string };
let deleted: { id: string };
let viewerToken: string;
let managerToken: string;
beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'venues'), createOrganisation(app, 'venuesother')]);
  second = await createAccount(app, org, 'Second account');
  deleted = await createAccount(app, org, 'Deleted account');
  await app().runtime.db.account.update({ where: { id: deleted.id }, data: { isDeleted: true } });
  viewerToken = (await staffWithRoles(app, org, ['viewer'], org.account.id, 'viewer')).token;
  managerToken = (await staffWithRoles(app, org, ['event_manager'], second.id, 'manager')).token;
});

async function createVenue(body: Record<string, unknown>, token = org.adminToken, o = org) {
  const res = await api(app, 'POST', '/v1/venues', { ...as(token, o), body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.venue as { id: string; accountId: string; name: string };
}

describe('venues', () => {
  it('create (201 {venue}), get and update, every field present, nullables as null', async () => {
    const created = await api(app, 'POST', '/v1/venues', {
      ...asAdmin(org),
      body: { accountId: org.account.id, name: 'Royal Hall', city: 'London', country: 'GB', timezone: 'europe/london', capacity: 2500 },
    });
    expect(created.status).toBe(201);
    expect(created.body.venue).toEqual({
      id: expect.stringMatching(/^vnu_[A-Za-z0-9]+$/),
      organisationId: org.organisation.id,
      accountId: org.account.id,
      name: 'Royal Hall',
      addressLine1: null,
      addressLine2: null,
      city: 'London',
      region: null,
      postalCode: null,
      country: 'GB',
      timezone: 'Europe/London',
      capacity: 2500,
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      updatedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    const id = created.body.venue.id;

    const got = await api(app, 'GET', `/v1/venues/${id}`, asAdmin(org));
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ venue: created.body.venue });

    const patched = await api(app, 'PATCH', `/v1/venues/${id}`, {
      ...asAdmin(org),
      body: { name: 'Royal Albert Hall', addressLine1: 'Kensington Gore', capacity: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.venue).toMatchObject({
      id,
      name: 'Royal Albert Hall',
      addressLine1: 'Kensington Gore',
      capacity: null,
      city: 'London',
    });
  });

  it('refuses invalid input with 400 naming each field', async () => {
    const res = await api(app, 'POST', '/v1/venues', {
      ...asAdmin(org),
      body: { accountId: org.account.id, name: '', country: 'gb', timezone: 'Mars/Olympus', capacity: -1, postalCode: 'x'.repeat(33) },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(detailPaths(res.body)).toEqual(['capacity', 'country', 'name', 'postalCode', 'timezone']);

    expect(
      detailPaths(
        (await api(app, 'POST', '/v1/venues', { ...asAdmin(org), body: { accountId: org.account.id, name: 'x', country: 'ZZ' } })).body,
      ),
    ).toEqual(['country']);
    const missing = await api(app, 'POST', '/v1/venues', { ...asAdmin(org), body: { name: 'No account' } });
    expect(missing.status).toBe(400);
    expect(detailPaths(missing.body)).toEqual(['accountId']);
    const unknown = await api(app, 'POST', '/v1/venues', { ...asAdmin(org), body: { accountId: org.account.id, name: 'x', seats: 3 } });
    expect(unknown.status).toBe(400);
    const badType = await api(app, 'POST', '/v1/venues', {
      ...asAdmin(org),
      body: { accountId: org.account.id, name: 'x', capacity: 1.5 },
    });
    expect(badType.status).toBe(400);
    expect(detailPaths(badType.body)).toEqual(['capacity']);

    const venue = await createVenue({ accountId: org.account.id, name: 'Patch target' });
    const patch = await api(app, 'PATCH', `/v1/venues/${venue.id}`, { ...asAdmin(org), body: { name: null, timezone: 'Nowhere/Land' } });
    expect(patch.status).toBe(400);
    expect(detailPaths(patch.body)).toEqual(['name', 'timezone']);
    const patchZone = await api(app, 'PATCH', `/v1/venues/${venue.id}`, { ...asAdmin(org), body: { timezone: 'Nowhere/Land' } });
    expect(detailPaths(patchZone.body)).toEqual(['timezone']);
    const moveAccount = await api(app, 'PATCH', `/v1/venues/${venue.id}`, { ...asAdmin(org), body: { accountId: second.id } });
    expect(moveAccount.status).toBe(400);
  });

  it("a deleted account or another organisation's account cannot own a venue (404 naming accountId, existence not confirmed)", async () => {
    for (const accountId of [deleted.id, other.account.id, 'acc_nope']) {
      const res = await api(app, 'POST', '/v1/venues', { ...asAdmin(org), body: { accountId, name: 'Nowhere' } });
      expect(res.status).toBe(404);
      expect(res.body.details).toEqual([{ path: 'accountId', message: expect.any(String) }]);
    }
  });

  it('lists with pagination, only on accounts the caller may read, optionally by account', async () => {
    const o = await createOrganisation(app, 'venuelist');
    const extra = await createAccount(app, o, 'Extra');
    for (let i = 0; i < 5; i++) await createVenue({ accountId: o.account.id, name: `Venue ${i}` }, o.adminToken, o);
    await createVenue({ accountId: extra.id, name: 'Elsewhere' }, o.adminToken, o);

    const page1 = await api(app, 'GET', '/v1/venues?limit=4', asAdmin(o));
    expect(page1.status).toBe(200);
    expect(page1.body.pagination).toEqual({ page: 1, limit: 4, total: 6, totalPages: 2, hasNext: true, hasPrev: false });
    expect(page1.body.venues.map((v: { name: string }) => v.name)).toEqual(['Elsewhere', 'Venue 0', 'Venue 1', 'Venue 2']);
    const page2 = await api(app, 'GET', '/v1/venues?limit=4&page=2', asAdmin(o));
    expect(page2.body.pagination).toEqual({ page: 2, limit: 4, total: 6, totalPages: 2, hasNext: false, hasPrev: true });
    expect(page2.body.venues.map((v: { name: string }) => v.name)).toEqual(['Venue 3', 'Venue 4']);

    const byAccount = await api(app, 'GET', `/v1/venues?accountId=${extra.id}`, asAdmin(o));
    expect(byAccount.body.venues.map((v: { name: string }) => v.name)).toEqual(['Elsewhere']);
    expect(byAccount.body.pagination.total).toBe(1);

    const viewer = await staffWithRoles(app, o, ['viewer'], extra.id);
    const seen = await api(app, 'GET', '/v1/venues', as(viewer.token, o));
    expect(seen.body.venues.map((v: { name: string }) => v.name)).toEqual(['Elsewhere']);
    const notTheirs = await api(app, 'GET', `/v1/venues?accountId=${o.account.id}`, as(viewer.token, o));
    expect(notTheirs.body).toMatchObject({ venues: [], pagination: { total: 0, totalPages: 0 } });

    for (const limit of ['0', '101', 'abc', '2.5']) {
      const res = await api(app, 'GET', `/v1/venues?limit=${limit}`, asAdmin(o));
      expect(res.status).toBe(400);
      expect(detailPaths(res.body)).toEqual(['query.limit']);
    }
    expect(detailPaths((await api(app, 'GET', '/v1/venues?page=0', asAdmin(o))).body)).toEqual(['query.page']);
  });

  it('permissions: a viewer reads but cannot write (403); a manager writes only on its account', async () => {
    const venue = await createVenue({ accountId: org.account.id, name: 'Viewer hall' });
    expect((await api(app, 'GET', `/v1/venues/${venue.id}`, as(viewerToken, org))).status).toBe(200);
    const create = await api(app, 'POST', '/v1/venues', { ...as(viewerToken, org), body: { accountId: org.account.id, name: 'Nope' } });
    expect(create.status).toBe(403);
    expect(create.body.code).toBe('FORBIDDEN');
    const patch = await api(app, 'PATCH', `/v1/venues/${venue.id}`, { ...as(viewerToken, org), body: { name: 'Nope' } });
    expect(patch.status).toBe(403);
    expect(patch.body.code).toBe('FORBIDDEN');

    expect(
      (await api(app, 'POST', '/v1/venues', { ...as(managerToken, org), body: { accountId: second.id, name: 'Managed' } })).status,
    ).toBe(201);
    const elsewhere = await api(app, 'POST', '/v1/venues', {
      ...as(managerToken, org),
      body: { accountId: org.account.id, name: 'Not mine' },
    });
    expect(elsewhere.status).toBe(403);
    // The manager cannot see the first account at all: its venue is not confirmed to exist.
    expect((await api(app, 'GET', `/v1/venues/${venue.id}`, as(managerToken, org))).status).toBe(404);
    expect((await api(app, 'PATCH', `/v1/venues/${venue.id}`, { ...as(managerToken, org), body: { name: 'x' } })).status).toBe(404);
  });

  it('an API key without the scope gets 404 on every route; with venues.read it reads but cannot write', async () => {
    const venue = await createVenue({ accountId: org.account.id, name: 'Keyed hall' });
    const noScope = (await createApiKey(app, org, ['events.read'])).key;
    for (const [method, path, body] of [
      ['GET', '/v1/venues', undefined],
      ['POST', '/v1/venues', { accountId: org.account.id, name: 'x' }],
      ['GET', `/v1/venues/${venue.id}`, undefined],
      ['PATCH', `/v1/venues/${venue.id}`, { name: 'x' }],
    ] as const) {
      const res = await api(app, method, path, { ...as(noScope, org), body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.code).toBe('NOT_FOUND');
    }
    const reader = (await createApiKey(app, org, ['venues.read'])).key;
    expect((await api(app, 'GET', `/v1/venues/${venue.id}`, as(reader, org))).status).toBe(200);
    expect((await api(app, 'PATCH', `/v1/venues/${venue.id}`, { ...as(reader, org), body: { name: 'x' } })).status).toBe(404);
    expect((await api(app, 'POST', '/v1/venues', { ...as(reader, org), body: { accountId: org.account.id, name: 'x' } })).status).toBe(404);

    const writer = (await createApiKey(app, org, ['venues.write'], { accountId: second.id })).key;
    const made = await api(app, 'POST', '/v1/venues', { ...as(writer, org), body: { accountId: second.id, name: 'By key' } });
    expect(made.status).toBe(201);
    expect((await api(app, 'POST', '/v1/venues', { ...as(writer, org), body: { accountId: org.account.id, name: 'x' } })).status).toBe(404);
  });

  it("another organisation's venue is 404", async () => {
    const theirs = await createVenue({ accountId: other.account.id, name: 'Theirs' }, other.adminToken, other);
    expect((await api(app, 'GET', `/v1/venues/${theirs.id}`, asAdmin(org))).status).toBe(404);
    const patch = await api(app, 'PATCH', `/v1/venues/${theirs.id}`, { ...asAdmin(org), body: { name: 'Mine' } });
    expect(patch.status).toBe(404);
    expect((await api(app, 'GET', '/v1/venues', asAdmin(org))).body.venues.map((v: { id: string }) => v.id)).not.toContain(theirs.id);
    expect((await api(app, 'GET', `/v1/venues/${theirs.id}`, asAdmin(other))).body.venue.name).toBe('Theirs');
  });

  it('GraphQL: venues connection, mutations with VALIDATION_FAILED details', async () => {
    const res = await graphql(
      app,
      `
        mutation ($input: CreateVenueInput!) {
          createVenue(input: $input) {
            venue {
              id
              name
              timezone
              createdAt
            }
            userErrors {
              code
            }
          }
        }
      `,
      { input: { accountId: org.account.id, name: 'Graph hall', timezone: 'America/New_York' } },
      asAdmin(org),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.createVenue.userErrors).toEqual([]);
    expect(res.body.data.createVenue.venue).toMatchObject({
      name: 'Graph hall',
      timezone: 'America/New_York',
      createdAt: expect.stringMatching(/Z$/),
    });

    const bad = await graphql(
      app,
      `
        mutation ($input: CreateVenueInput!) {
          createVenue(input: $input) {
            venue {
              id
            }
            userErrors {
              field
              code
              message
            }
          }
        }
      `,
      { input: { accountId: org.account.id, name: 'x', country: 'XX' } },
      asAdmin(org),
    );
    expect(bad.body.errors).toBeUndefined();
    expect(bad.body.data.createVenue).toEqual({
      venue: null,
      userErrors: [{ field: ['input', 'country'], code: 'VALIDATION_FAILED', message: expect.any(String) }],
    });

    const list = await graphql(
      app,
      `
        {
          venues(first: 2) {
            edges {
              cursor
              node {
                id
              }
            }
            pageInfo {
              hasNextPage
              endCursor
            }
            pagination {
              total
            }
          }
        }
      `,
      {},
      asAdmin(org),
    );
    expect(list.body.data.venues.edges).toHaveLength(2);
    expect(list.body.data.venues.pageInfo.hasNextPage).toBe(true);
  });
});

describe("a venue's events", () => {
  it('answers the events held there, as events(venueId:) lists them, and only to who may read events', async () => {
    const venue = await createVenue({ accountId: org.account.id, name: `Held ${Date.now()}` });
    const event = async (name: string, venueId?: string) => {
      const res = await api(app, 'POST', '/v1/events', {
        ...asAdmin(org),
        body: { accountId: org.account.id, name, timezone: 'UTC', ...(venueId ? { venueId } : {}) },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.event.id as string;
    };
    const first = await event('First there', venue.id);
    const second = await event('Second there', venue.id);
    await event('Elsewhere');
    const res = await graphql(
      app,
      `
        query ($id: ID!) {
          venue(id: $id) {
            events(first: 10) {
              totalCount
              nodes {
                id
              }
            }
          }
          events(venueId: $id) {
            nodes {
              id
            }
          }
        }
      `,
      { id: venue.id },
      asAdmin(org),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.venue.events).toEqual({ totalCount: 2, nodes: [{ id: second }, { id: first }] });
    expect(res.body.data.events.nodes).toEqual([{ id: second }, { id: first }]);

    const { key } = await createApiKey(app, org, ['venues.read']);
    const refused = await graphql(
      app,
      'query ($id: ID!) { venue(id: $id) { id events { nodes { id } } } }',
      { id: venue.id },
      as(key, org),
    );
    expect(refused.body.data.venue).toEqual({ id: venue.id, events: null });
    expect(refused.body.errors.map((error: { path: string[] }) => error.path.join('.'))).toEqual(['venue.events']);
  });
});
