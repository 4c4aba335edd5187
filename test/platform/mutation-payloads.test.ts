import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { as, asAdmin, createApiKey, customRole } from '../support/credentials.ts';
import { api, createOrganisation, createStaffUser, graphql, type TestOrganisation } from '../support/fixtures.ts';

/**
 * Every mutation answers a payload, `{ <thing>, userErrors }`: in a document of several
 * mutations each answers on its own. Invalid input, a missing thing and a conflict are user
 * errors with the contract's codes; a missing right stays in `errors`, nulling only its own
 * mutation. /v1 runs the same mutations and keeps answering the contract's errors.
 */
const app = useTestApp();
let org: TestOrganisation;
let eventId: string;

beforeAll(async () => {
  org = await createOrganisation(app, 'payloads');
  const created = await api(app, 'POST', '/v1/events', {
    ...asAdmin(org),
    body: { accountId: org.account.id, name: 'First name', timezone: 'Europe/London' },
  });
  eventId = created.body.event.id;
});

const TWO_UPDATES = `
  mutation ($id: ID!, $good: UpdateEventInput!, $bad: UpdateEventInput!) {
    first: updateEvent(id: $id, input: $good) { event { id name } userErrors { field code message } }
    second: updateEvent(id: $id, input: $bad) { event { id name } userErrors { field code message } }
  }
`;

describe('mutation payloads', () => {
  it('answer each mutation of a document on its own: the valid one commits, the invalid one says why', async () => {
    const res = await graphql(app, TWO_UPDATES, { id: eventId, good: { name: 'Renamed' }, bad: { name: '' } }, asAdmin(org));
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.first).toEqual({ event: { id: eventId, name: 'Renamed' }, userErrors: [] });
    expect(res.body.data.second.event).toBeNull();
    expect(res.body.data.second.userErrors).toEqual([{ field: ['input', 'name'], code: 'VALIDATION_FAILED', message: expect.any(String) }]);
    // The first change was committed, and only it.
    const stored = await api(app, 'GET', `/v1/events/${eventId}`, asAdmin(org));
    expect(stored.body.event.name).toBe('Renamed');
  });

  it('say the same as /v1 does for the same input, in the same words', async () => {
    const rest = await api(app, 'PATCH', `/v1/events/${eventId}`, { ...asAdmin(org), body: { name: '' } });
    expect(rest.status).toBe(400);
    expect(rest.body.code).toBe('VALIDATION_FAILED');
    const graph = await graphql(app, TWO_UPDATES, { id: eventId, good: {}, bad: { name: '' } }, asAdmin(org));
    expect(graph.body.data.second.userErrors.map((e: { message: string }) => e.message)).toEqual(
      rest.body.details.map((issue: { message: string }) => issue.message),
    );
  });

  it('answer a missing thing as a user error without a field', async () => {
    const res = await graphql(
      app,
      'mutation ($id: ID!) { deleteEvent(id: $id) { deletedId userErrors { field code message } } }',
      { id: 'evt_0000000000000000000000' },
      asAdmin(org),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.deleteEvent).toEqual({
      deletedId: null,
      userErrors: [{ field: null, code: 'NOT_FOUND', message: expect.any(String) }],
    });
  });

  it('name the input value of a thing it names that is not there', async () => {
    const res = await graphql(
      app,
      'mutation ($id: ID!, $input: UpdateEventInput!) { updateEvent(id: $id, input: $input) { event { id } userErrors { field code } } }',
      { id: eventId, input: { venueId: 'vnu_0000000000000000000000' } },
      asAdmin(org),
    );
    expect(res.body.data.updateEvent).toEqual({ event: null, userErrors: [{ field: ['input', 'venueId'], code: 'NOT_FOUND' }] });
  });

  it('answer a right the input asks to grant, and the caller lacks, as a user error on that value', async () => {
    // May write keys on the account, but holds only events.read to hand out.
    const role = await customRole(app, org, ['api_keys.read', 'api_keys.write', 'events.read']);
    const staff = await createStaffUser(app, org, [{ roleId: role.id, accountId: org.account.id }], 'keymaker');
    const input = { accountId: org.account.id, name: 'Too broad', scopes: ['events.read', 'orders.read'] };
    const res = await graphql(
      app,
      'mutation ($input: CreateApiKeyInput!) { createApiKey(input: $input) { createdApiKey { apiKey { id } } userErrors { field code message } } }',
      { input },
      as(staff.token, org),
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.createApiKey).toEqual({
      createdApiKey: null,
      userErrors: [{ field: ['input', 'scopes'], code: 'FORBIDDEN', message: expect.stringContaining('orders.read') }],
    });
    const rest = await api(app, 'POST', '/v1/api-keys', { ...as(staff.token, org), body: input });
    expect(rest.status).toBe(403);
    expect(rest.body).toMatchObject({ code: 'FORBIDDEN', details: [{ path: 'scopes', message: expect.stringContaining('orders.read') }] });
  });

  it('keep a missing right in errors, nulling only the refused mutation', async () => {
    const { key } = await createApiKey(app, org, ['events.read', 'events.write']);
    const res = await graphql(
      app,
      `mutation ($id: ID!) {
        renamed: updateEvent(id: $id, input: { name: "By key" }) { event { name } userErrors { code } }
        venue: createVenue(input: { accountId: "${org.account.id}", name: "Hall" }) { venue { id } userErrors { code } }
      }`,
      { id: eventId },
      { token: key, org: org.slug },
    );
    expect(res.body.data.renamed).toEqual({ event: { name: 'By key' }, userErrors: [] });
    expect(res.body.data.venue).toBeNull();
    expect(res.body.errors).toHaveLength(1);
    // An API key without the scope is answered as if the thing did not exist (the contract's rule
    // for keys), and it is a refused right: in errors, not a user error.
    expect(res.body.errors[0]).toMatchObject({ path: ['venue'], extensions: { code: 'NOT_FOUND' } });
  });

  it('leave /v1 answering the contract’s errors for the same mutations', async () => {
    const missing = await api(app, 'DELETE', '/v1/events/evt_0000000000000000000000', asAdmin(org));
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('NOT_FOUND');
  });
});
