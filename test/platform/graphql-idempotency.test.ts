import { ApolloClient, CombinedGraphQLErrors, gql, HttpLink, InMemoryCache } from '@apollo/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { asAdmin, createApiKey } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, postGraphql, tag, type TestOrganisation } from '../support/fixtures.ts';
import { freshMinute } from '../support/clock.ts';

/**
 * Idempotency-Key on /graphql's mutations, as an admin frontend on Apollo Client sends it
 * (src/graphql/keyed-mutations.ts): a retried mutation is answered with its first result and done
 * once; secrets are not answered again and token pairs are never kept, as on /v1, whose route table
 * says which (test/platform/idempotency.test.ts and idempotency-attacks.test.ts test the rest).
 */

const app = useTestApp();
let org: TestOrganisation;

beforeAll(async () => {
  org = await createOrganisation(app, 'gql-idem');
});

/** An Apollo Client of the organisation's admin that keeps each answer's headers. */
function adminClient(token = org.adminToken) {
  const answered: Headers[] = [];
  const client = new ApolloClient({
    cache: new InMemoryCache(),
    link: new HttpLink({
      uri: `${app().url}/graphql`,
      headers: { authorization: `Bearer ${token}`, 'x-service-org': org.slug },
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        answered.push(res.headers);
        return res;
      },
    }),
  });
  return { client, answered };
}

const CREATE_VENUE = gql`
  mutation CreateVenue($input: CreateVenueInput!) {
    createVenue(input: $input) {
      venue {
        id
        name
      }
      userErrors {
        code
        message
      }
    }
  }
`;

const venuesNamed = async (name: string) =>
  Number((await query<{ n: string }>(app, `SELECT count(*) AS n FROM venues WHERE name = $1`, [name]))[0]!.n);
const withKey = (key: string) => ({ headers: { 'Idempotency-Key': key } });

/** Everything idempotency_keys holds, as text: what an attacker with a copy of the table would read. */
async function storedText(): Promise<string> {
  const rows = await query<{ row: string }>(app, `SELECT row_to_json(k)::text AS row FROM idempotency_keys k`);
  return rows.map((r) => r.row).join('\n');
}

describe('Idempotency-Key on /graphql', () => {
  it('answers a retried mutation with its first result, does the work once, and refuses the key for another operation', async () => {
    const { client, answered } = adminClient();
    const name = `Hall ${tag()}`;
    const variables = { input: { accountId: org.account.id, name } };
    const key = `venue-${tag()}`;
    const first = await client.mutate({ mutation: CREATE_VENUE, variables, context: withKey(key) });
    const again = await client.mutate({ mutation: CREATE_VENUE, variables, context: withKey(key) });
    expect(again.data).toEqual(first.data);
    expect(answered.map((headers) => headers.get('idempotent-replayed'))).toEqual([null, 'true']);
    expect(await venuesNamed(name)).toBe(1);

    const other = client.mutate({
      mutation: CREATE_VENUE,
      variables: { input: { ...variables.input, name: `${name} 2` } },
      context: withKey(key),
    });
    const refused = await other.catch((error: unknown) => error);
    expect(CombinedGraphQLErrors.is(refused)).toBe(true);
    expect((refused as CombinedGraphQLErrors).errors[0]!.extensions!.code).toBe('CONFLICT');
    expect(await venuesNamed(`${name} 2`)).toBe(0);
    // The key is the caller's on every surface: /v1's request is another request.
    const rest = await api(app, 'POST', '/v1/venues', { ...asAdmin(org), body: variables.input, headers: { 'idempotency-key': key } });
    expect([rest.status, rest.body.code]).toEqual([409, 'CONFLICT']);
  });

  it('runs requests with one key that arrive together once', async () => {
    const name = `Together ${tag()}`;
    const body = { query: CREATE_VENUE.loc!.source.body, variables: { input: { accountId: org.account.id, name } } };
    const answers = await Promise.all(
      [1, 2, 3].map(() => postGraphql(app, body, { ...asAdmin(org), headers: { 'idempotency-key': `together-${name}` } })),
    );
    expect(new Set(answers.map((answer) => answer.body.data.createVenue.venue.id)).size).toBe(1);
    expect(answers.map((answer) => answer.headers.get('idempotent-replayed')).filter(Boolean)).toHaveLength(2);
    expect(await venuesNamed(name)).toBe(1);
  });

  it('replays to a browser with its CORS headers and the media type it asked for', async () => {
    const name = `Browser ${tag()}`;
    const body = { query: CREATE_VENUE.loc!.source.body, variables: { input: { accountId: org.account.id, name } } };
    const headers = { 'idempotency-key': `cors-${name}`, origin: 'https://admin.example.com' };
    const first = await postGraphql(app, body, { ...asAdmin(org), headers });
    const again = await postGraphql(app, body, { ...asAdmin(org), headers });
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    for (const answer of [first, again]) {
      expect(answer.headers.get('access-control-allow-origin')).toBe('https://admin.example.com');
      expect(answer.headers.get('content-type')).toMatch(/^application\/graphql-response\+json/);
    }
  });

  it('replays a result with refused fields as it was, errors and all', async () => {
    const { key } = await createApiKey(app, org, ['venues.write', 'venues.read']);
    const body = {
      query: 'mutation($input: CreateVenueInput!) { createVenue(input: $input) { venue { id account { id name } } } }',
      variables: { input: { accountId: org.account.id, name: `Partly ${tag()}` } },
    };
    const send = () => postGraphql(app, body, { token: key, org: org.slug, headers: { 'idempotency-key': 'partly' } });
    const first = await send();
    expect(first.body.data.createVenue.venue.id).toMatch(/^vnu_/);
    expect(first.body.errors.map((error: { path: string[] }) => error.path.join('.'))).toEqual([
      'createVenue.venue.account.id',
      'createVenue.venue.account.name',
    ]);
    const again = await send();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('runs a query with a key every time: a read changes nothing', async () => {
    const read = () =>
      postGraphql(app, { query: '{ venues(first: 1) { nodes { id } } }' }, { ...asAdmin(org), headers: { 'idempotency-key': 'a-read' } });
    const answers = [await read(), await read()];
    expect(answers.map((answer) => [answer.status, answer.headers.get('idempotent-replayed')])).toEqual([
      [200, null],
      [200, null],
    ]);
  });

  it('does not answer a secret again, under any alias or fragment: a retry is told what was made', async () => {
    const query = `mutation Made($input: CreateApiKeyInput!) { made: createApiKey(input: $input) { ...Made } }
      fragment Made on CreateApiKeyPayload { createdApiKey { apiKey { id name } material: key } userErrors { code } }`;
    const body = { query, variables: { input: { name: `CI ${tag()}`, scopes: ['events.read'] } } };
    const first = await postGraphql(app, body, { ...asAdmin(org), headers: { 'idempotency-key': 'key-once' } });
    const material = first.body.data.made.createdApiKey.material as string;
    expect(material).toMatch(/^svak_/);
    const again = await postGraphql(app, body, { ...asAdmin(org), headers: { 'idempotency-key': 'key-once' } });
    expect(again.body.errors[0].extensions.code).toBe('CONFLICT');
    expect(again.body.errors[0].extensions.details.created.data.made.createdApiKey.apiKey).toEqual(
      first.body.data.made.createdApiKey.apiKey,
    );
    expect(JSON.stringify(again.body)).not.toContain(material);
    expect(await storedText()).not.toContain(material);
    expect(await storedText()).not.toContain('svak_');
  });

  it('never keeps a sign-in: its answer is a token pair', async () => {
    const body = {
      query: 'mutation($input: LoginInput!) { login(input: $input) { session { accessToken refreshToken } } }',
      variables: { input: { email: org.email, password: org.password } },
    };
    const headers = { 'idempotency-key': 'sign-in', 'x-service-org': org.slug };
    const answers = [await postGraphql(app, body, { headers }), await postGraphql(app, body, { headers })];
    expect(answers.map((answer) => answer.headers.get('idempotent-replayed'))).toEqual([null, null]);
    const [one, two] = answers.map((answer) => answer.body.data.login.session.refreshToken as string);
    expect(one).not.toBe(two);
    // The key is still judged, as /v1/auth/login judges it.
    const tooLong = await postGraphql(app, body, { headers: { ...headers, 'idempotency-key': 'k'.repeat(256) } });
    expect(tooLong.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
    expect(tooLong.body.errors[0].extensions.details[0].path).toBe('Idempotency-Key');
  });

  it("runs none of a keyed document's mutations when the caller may not run one of them: a retry finds nothing done", async () => {
    const { key } = await createApiKey(app, org, ['venues.write', 'venues.read']);
    const name = `Refused beside ${tag()}`;
    const body = {
      query: `mutation($input: CreateVenueInput!) {
        venue: createVenue(input: $input) { venue { id } }
        apiKey: createApiKey(input: {name: "beside", scopes: []}) { createdApiKey { key } }
      }`,
      variables: { input: { accountId: org.account.id, name } },
    };
    const send = () => postGraphql(app, body, { token: key, org: org.slug, headers: { 'idempotency-key': `beside-${name}` } });
    for (const answer of [await send(), await send()]) {
      expect(answer.body.data ?? null).toBeNull();
      expect(answer.body.errors.map((error: { extensions: { code: string } }) => error.extensions.code)).toEqual([
        'SIGNED_IN_USER_REQUIRED',
      ]);
    }
    expect(await venuesNamed(name)).toBe(0);
  });

  it('refuses a key on a document that signs in beside other mutations: it runs nothing', async () => {
    const name = `Beside a sign-in ${tag()}`;
    const body = {
      query: `mutation($login: LoginInput!, $venue: CreateVenueInput!) {
        login(input: $login) { session { refreshToken } }
        createVenue(input: $venue) { venue { id } }
      }`,
      variables: { login: { email: org.email, password: org.password }, venue: { accountId: org.account.id, name } },
    };
    const answer = await postGraphql(app, body, { ...asAdmin(org), headers: { 'idempotency-key': 'beside-sign-in' } });
    expect(answer.body.data ?? null).toBeNull();
    expect(answer.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
    expect(answer.body.errors[0].extensions.details[0].path).toBe('Idempotency-Key');
    expect(await venuesNamed(name)).toBe(0);
  });

  it('keeps a document whose later mutation was throttled after an earlier one took effect: a retry does not redo it', async () => {
    const made = await api(app, 'POST', '/v1/webhook-endpoints', {
      ...asAdmin(org),
      body: { accountId: org.account.id, url: 'http://127.0.0.1:9/hooks' },
    });
    const endpointId = made.body.endpoint.id as string;
    // The test limit counts in clock-aligned minutes: ten tests and the document within one.
    await freshMinute();
    for (let i = 0; i < 10; i += 1)
      expect((await api(app, 'POST', `/v1/webhook-endpoints/${endpointId}/test`, asAdmin(org))).status).toBe(201);
    const name = `Before a throttle ${tag()}`;
    const body = {
      query: `mutation($venue: CreateVenueInput!, $endpoint: ID!) {
        createVenue(input: $venue) { venue { id } }
        testWebhookEndpoint(id: $endpoint) { webhookDelivery { id } }
      }`,
      variables: { venue: { accountId: org.account.id, name }, endpoint: endpointId },
    };
    const send = () => postGraphql(app, body, { ...asAdmin(org), headers: { 'idempotency-key': `throttled-${name}` } });
    const first = await send();
    expect(first.body.data.createVenue.venue.id).toMatch(/^vnu_/);
    expect(first.body.errors.map((error: { extensions: { code: string } }) => error.extensions.code)).toEqual(['RATE_LIMITED']);
    const again = await send();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(await venuesNamed(name)).toBe(1);
  });

  it('judges the caller before the key: a credential refused the mutation is told so, whatever key it sends', async () => {
    const { key } = await createApiKey(app, org, ['*.*']);
    const body = { query: 'mutation { createApiKey(input: {name: "x", scopes: []}) { createdApiKey { key } } }' };
    const tooLong = 'k'.repeat(256);
    const refused = await postGraphql(app, body, { token: key, org: org.slug, headers: { 'idempotency-key': tooLong } });
    expect(refused.body.errors.map((error: { extensions: { code: string } }) => error.extensions.code)).toEqual([
      'SIGNED_IN_USER_REQUIRED',
    ]);
    const bad = await postGraphql(
      app,
      { query: CREATE_VENUE.loc!.source.body, variables: { input: { accountId: org.account.id, name: 'x' } } },
      { ...asAdmin(org), headers: { 'idempotency-key': tooLong } },
    );
    expect(bad.body.errors[0].extensions.code).toBe('VALIDATION_FAILED');
    expect(bad.body.errors[0].extensions.details[0].path).toBe('Idempotency-Key');
  });
});
