import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoApps, type AppPair, type TestApp } from '../support/app.ts';
import { createApiKey } from '../support/credentials.ts';
import { api, createOrganisation, tag, type TestOrganisation } from '../support/fixtures.ts';

/**
 * An organisation API key pinned to an account dies with the account, as the account's channel
 * keys, customer tokens and embed sessions do: once the account is deleted (and while it is
 * inactive), every request with the key answers 401 UNAUTHENTICATED, on the /v1 routes and on
 * /graphql, whether or not the key was cached, in the process that changed the account and in
 * another one (two API processes on one database).
 */

let pair: AppPair;
let org: TestOrganisation;

beforeAll(async () => {
  pair = await startTwoApps();
  org = await createOrganisation(pair.a, 'keylife');
});
afterAll(async () => {
  await pair?.stop();
});

const admin = () => ({ token: org.adminToken, org: org.slug });

/** A fresh account made over the API, with an event in it and a key pinned to it that reads and writes events. */
async function pinnedKey() {
  const account = await api(pair.a, 'POST', '/v1/accounts', { ...admin(), body: { name: `Closing ${tag()}` } });
  expect(account.status, JSON.stringify(account.body)).toBe(201);
  const accountId = account.body.account.id as string;
  const event = await api(pair.a, 'POST', '/v1/events', { ...admin(), body: { accountId, name: 'Last show', timezone: 'UTC' } });
  expect(event.status, JSON.stringify(event.body)).toBe(201);
  const { key } = await createApiKey(pair.a, org, ['events.read', 'events.write'], { accountId });
  return { accountId, eventId: event.body.event.id as string, key };
}

const deleteAccount = async (accountId: string) =>
  expect((await api(pair.a, 'DELETE', `/v1/accounts/${accountId}`, admin())).status).toBe(200);

/** What an integration holding the key sends: list and change the account's events, over /v1 and /graphql. */
async function uses(app: TestApp, key: string, eventId: string) {
  const as = { token: key, org: org.slug };
  const list = await api(app, 'GET', '/v1/events', as);
  const patch = await api(app, 'PATCH', `/v1/events/${eventId}`, { ...as, body: { name: `Renamed ${tag()}` } });
  const graphql = await api(app, 'POST', '/graphql', {
    ...as,
    body: {
      query: 'mutation($id: ID!, $name: String) { updateEvent(id: $id, input: { name: $name }) { event { id } } }',
      variables: { id: eventId, name: `Renamed ${tag()}` },
    },
  });
  return {
    list: { status: list.status, code: list.body?.code, error: list.body?.error },
    patch: { status: patch.status, code: patch.body?.code, error: patch.body?.error },
    graphql: { status: graphql.status, code: graphql.body?.errors?.[0]?.extensions?.code, data: graphql.body?.data?.updateEvent ?? null },
  };
}

const working = (eventId: string) => ({
  list: { status: 200, code: undefined, error: undefined },
  patch: { status: 200, code: undefined, error: undefined },
  graphql: { status: 200, code: undefined, data: { event: { id: eventId } } },
});
const REFUSED_BODY = { status: 401, code: 'UNAUTHENTICATED', error: 'The account of this API key was deleted.' };
const REFUSED = { list: REFUSED_BODY, patch: REFUSED_BODY, graphql: { status: 401, code: 'UNAUTHENTICATED', data: null } };

describe('an API key pinned to an account', () => {
  it('is refused (401 UNAUTHENTICATED) on GET and PATCH /v1/events and on /graphql once its account is deleted, though cached', async () => {
    const { accountId, eventId, key } = await pinnedKey();
    expect(await uses(pair.a, key, eventId)).toEqual(working(eventId));

    await deleteAccount(accountId);

    expect(await uses(pair.a, key, eventId)).toEqual(REFUSED);
  });

  it('is refused on its first use after its account was deleted (nothing cached)', async () => {
    const { accountId, eventId, key } = await pinnedKey();

    await deleteAccount(accountId);

    expect(await uses(pair.b, key, eventId)).toEqual(REFUSED);
    expect(await uses(pair.a, key, eventId)).toEqual(REFUSED);
  });

  it('is refused by another process that had just accepted it, through the change notice of the account (not the cache TTL)', async () => {
    const { accountId, eventId, key } = await pinnedKey();
    expect(await uses(pair.b, key, eventId)).toEqual(working(eventId));

    await deleteAccount(accountId);

    const started = Date.now();
    let seen = await api(pair.b, 'GET', '/v1/events', { token: key, org: org.slug });
    // Well inside the auth cache's 60 s TTL: only the notice can have told process b.
    while (seen.status !== 401 && Date.now() - started <= 5_000)
      seen = await api(pair.b, 'GET', '/v1/events', { token: key, org: org.slug });
    expect({ status: seen.status, code: seen.body?.code }).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
    expect(await uses(pair.b, key, eventId)).toEqual(REFUSED);
  });

  it('is refused while its account is inactive (not trading), and works again once it is reactivated', async () => {
    const { accountId, eventId, key } = await pinnedKey();
    expect(await uses(pair.b, key, eventId)).toEqual(working(eventId));
    const setStatus = async (status: string) => {
      const res = await api(pair.a, 'PATCH', `/v1/accounts/${accountId}`, { ...admin(), body: { status } });
      expect([res.status, res.body.account?.status]).toEqual([200, status]);
    };

    await setStatus('inactive');
    const inactive = {
      status: 401,
      code: 'UNAUTHENTICATED',
      error: 'The account of this API key is inactive; an administrator can reactivate it.',
    };
    await expect
      .poll(() => uses(pair.b, key, eventId), { timeout: 2_000 })
      .toEqual({
        list: inactive,
        patch: inactive,
        graphql: REFUSED.graphql,
      });

    await setStatus('active');
    await expect.poll(() => uses(pair.b, key, eventId), { timeout: 2_000 }).toEqual(working(eventId));
  });
});

describe('an organisation-wide API key', () => {
  it('keeps working when one of the accounts is deleted', async () => {
    const { accountId } = await pinnedKey();
    const { key } = await createApiKey(pair.a, org, ['events.read', 'events.write']);
    const event = await api(pair.a, 'POST', '/v1/events', {
      ...admin(),
      body: { accountId: org.account.id, name: 'Stays', timezone: 'UTC' },
    });

    await deleteAccount(accountId);

    expect(await uses(pair.b, key, event.body.event.id)).toEqual(working(event.body.event.id));
  });
});
