import { getIntrospectionQuery } from 'graphql';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { asAdmin, refreshTokenCount } from '../support/credentials.ts';
import { api, createOrganisation, createStaffUser, postGraphql, type TestOrganisation } from '../support/fixtures.ts';

/**
 * GraphQL operation limits, enforced before execution. Decided: body at most
 * 1 MB (413 PAYLOAD_TOO_LARGE), maxTokens 5,000, maxDepth 12 (introspection not counted),
 * maxAliases 30, maxCost 50,000 (lists weighted by limit/first, default 20; 10 without such an
 * argument), signInMutations 1 per document, JSON nesting 32 in variables. A refusal is HTTP 400
 * with errors[0].extensions {code: VALIDATION_FAILED, limit, max}, no data, nothing executed.
 */

const app = useTestApp();
let org: TestOrganisation;

beforeAll(async () => {
  org = await createOrganisation(app, 'gql-limits');
});

type Answer = Awaited<ReturnType<typeof postGraphql>>;

function expectRefused(res: Answer, limits: string | string[], max?: number) {
  expect(res.status).toBe(400);
  const error = res.body.errors?.[0];
  expect(error?.extensions?.code).toBe('VALIDATION_FAILED');
  expect([limits].flat()).toContain(error.extensions.limit);
  if (max !== undefined) expect(error.extensions.max).toBe(max);
  expect(res.body.data ?? null).toBeNull();
}

function expectAnswered(res: Answer) {
  expect(res.status).toBe(200);
  expect(res.body.errors).toBeUndefined();
}

const login = (alias: string, email: string, password: string) =>
  `${alias}: login(input: {email: ${JSON.stringify(email)}, password: ${JSON.stringify(password)}}) { session { accessToken } }`;

describe('sign-in mutations (signInMutations: 1 per document)', () => {
  it('two logins in one document are refused before either runs: no refresh token written', async () => {
    const staff = await createStaffUser(app, org, [], 'two-logins');
    const before = await refreshTokenCount(app, staff.personId);

    const res = await postGraphql(
      app,
      { query: `mutation { ${login('a', staff.email, staff.password)} ${login('b', staff.email, staff.password)} }` },
      { headers: { accept: 'application/json' } },
    );

    expectRefused(res, 'signInMutations', 1);
    expect(await refreshTokenCount(app, staff.personId)).toBe(before);
    expectAnswered(await postGraphql(app, { query: `mutation { ${login('only', staff.email, staff.password)} }` }));
  });

  it('login and refreshTokens together are refused too', async () => {
    const staff = await createStaffUser(app, org, [], 'mixed');
    const before = await refreshTokenCount(app, staff.personId);
    const res = await postGraphql(app, {
      query: `mutation { ${login('a', staff.email, staff.password)} r: refreshTokens(input: {refreshToken: "svrt_x"}) { tokens { accessToken } } }`,
    });
    expectRefused(res, 'signInMutations', 1);
    expect(await refreshTokenCount(app, staff.personId)).toBe(before);
  });

  it('a flood of aliased logins (the 2,000-alias attack, scaled to 40) writes no refresh token', async () => {
    const staff = await createStaffUser(app, org, [], 'flood');
    const before = await refreshTokenCount(app, staff.personId);
    const aliases = Array.from({ length: 40 }, (_, i) => login(`l${i}`, staff.email, staff.password)).join(' ');

    const res = await postGraphql(app, { query: `mutation { ${aliases} }` });

    expectRefused(res, ['signInMutations', 'maxAliases']);
    expect(await refreshTokenCount(app, staff.personId)).toBe(before);
  });
});

describe('document limits', () => {
  it('maxAliases 30: 31 aliases are refused, 30 answered', async () => {
    const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(' ')} }`;
    expectRefused(await postGraphql(app, { query: aliases(31) }), 'maxAliases', 30);
    expectAnswered(await postGraphql(app, { query: aliases(30) }));
  });

  it('refuses an alias beginning with __ (reserved for introspection): a secret aliased __proto__ is never made and lost', async () => {
    const res = await postGraphql(
      app,
      {
        query: 'mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { createdApiKey { __proto__: key apiKey { id } } } }',
        variables: { input: { name: 'Aliased', scopes: ['events.read'] } },
      },
      asAdmin(org),
    );
    expect(res.status).toBe(400);
    expect(res.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    expect(res.body.data ?? null).toBeNull();
    const keys = await api(app, 'GET', '/v1/api-keys?limit=100', asAdmin(org));
    expect(keys.body.apiKeys.map((key: { name: string }) => key.name)).not.toContain('Aliased');
  });

  it('maxTokens 5,000: a document of ~5,200 tokens is refused, one of ~4,000 answered', async () => {
    // Fragment spreads are two tokens each and cost nothing to merge, so only the token count grows.
    const spreads = (n: number) => `{ ${'...F '.repeat(n)}} fragment F on Query { __typename }`;
    expectRefused(await postGraphql(app, { query: spreads(2_600) }), 'maxTokens', 5_000);
    expectAnswered(await postGraphql(app, { query: spreads(2_000) }));
  });

  it('maxDepth 12: a selection 13 fields deep is refused; the introspection query (deeper) is still answered', async () => {
    const nested = (depth: number) => `{ ${Array.from({ length: depth }, (_, i) => `f${i} {`).join(' ')} __typename ${'} '.repeat(depth)}}`;
    const res = await postGraphql(app, { query: nested(13) });
    expect(res.status).toBe(400);
    const depthError = (res.body.errors ?? []).find((e: any) => e.extensions?.limit === 'maxDepth');
    expect(depthError?.extensions).toMatchObject({ code: 'VALIDATION_FAILED', limit: 'maxDepth', max: 12 });
    expect(res.body.data ?? null).toBeNull();

    const introspection = await postGraphql(app, { query: getIntrospectionQuery() });
    expectAnswered(introspection);
    expect(introspection.body.data.__schema.queryType.name).toBe('Query');
  });

  it('maxCost 50,000 with variables: 20 order lists of limit 100 with nested lists are refused; the same document with limit 1 answered', async () => {
    const document = `query($limit: Int) { ${Array.from(
      { length: 20 },
      (_, i) => `o${i}: orders(first: $limit) { nodes { id lineItems { id } passes { id } payments { id } } }`,
    ).join(' ')} }`;
    const as = { token: org.adminToken, org: org.slug };
    expectRefused(await postGraphql(app, { query: document, variables: { limit: 100 } }, as), 'maxCost', 50_000);
    expectAnswered(await postGraphql(app, { query: document, variables: { limit: 1 } }, as));
  });
});

describe('request limits', () => {
  it('a body over 1 MB answers 413 PAYLOAD_TOO_LARGE, as on REST', async () => {
    const res = await postGraphql(app, { query: '{ __typename }', variables: { pad: 'x'.repeat(1_100_000) } });
    expect(res.status).toBe(413);
    expect(res.body.code ?? res.body.errors?.[0]?.extensions?.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('variables nested deeper than 32 are refused with 400 VALIDATION_FAILED', async () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 40; i += 1) deep = { nested: deep };
    const res = await postGraphql(app, { query: '{ __typename }', variables: { deep } });
    expect(res.status).toBe(400);
    expect(res.body.code ?? res.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
  });
});
