import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { asAdmin } from '../support/credentials.ts';
import { api, createOrganisation, graphql, postGraphql, tag, type TestOrganisation } from '../support/fixtures.ts';
import { createCatalogue, createChannel, storefront, type Catalogue } from '../support/sales.ts';

/**
 * Malformed input answers 400 in the envelope, never 500. Decided: a NUL
 * (\u0000) or a lone UTF-16 surrogate anywhere in a body string, object key, query string, path
 * parameter or GraphQL variable/literal is 400 VALIDATION_FAILED naming the path (query.customerId,
 * params.id, name, variables.input.name); an undecodable path (%FF) 400; JSON nested deeper than
 * 32 400; a GraphQL list literal nested 10,000 deep 400. details hold at most 20 issues, then
 * {path: "(more)", message: "<n> more issues", count: n}.
 */

const app = useTestApp();
let org: TestOrganisation;
let catalogue: Catalogue;
let keys: { publishable: string; secret: string };

beforeAll(async () => {
  org = await createOrganisation(app, 'fuzz');
  catalogue = await createCatalogue(app, org);
  keys = await createChannel(app, org);
});

const admin = () => asAdmin(org);

type Answer = { status: number; headers: Headers; body: any };

/** 400 VALIDATION_FAILED in the envelope (with the request id), optionally naming `path`. */
function expectRefused(res: Answer, path?: string | RegExp) {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status: 400, code: 'VALIDATION_FAILED' });
  expect(res.body).toMatchObject({ error: expect.any(String), requestId: res.headers.get('x-request-id') });
  if (path !== undefined) {
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(
      expect.arrayContaining([typeof path === 'string' ? path : expect.stringMatching(path)]),
    );
  }
}

/** The raw path as sent (fetch would not re-encode %00 or %FF). */
const get = (path: string) => api(app, 'GET', path, admin());

describe('NUL bytes and lone surrogates on /v1', () => {
  it('in a body string (POST /v1/roles name)', async () => {
    expectRefused(
      await api(app, 'POST', '/v1/roles', { ...admin(), body: { name: `door\u0000staff ${tag()}`, permissions: ['events.read'] } }),
      'name',
    );
  });

  it('a lone surrogate in a body string (POST /v1/roles name)', async () => {
    expectRefused(
      await api(app, 'POST', '/v1/roles', { ...admin(), body: { name: `door\ud800staff ${tag()}`, permissions: ['events.read'] } }),
      'name',
    );
  });

  it('in free-form metadata: a value and a key (PATCH /v1/organisation)', async () => {
    expectRefused(await api(app, 'PATCH', '/v1/organisation', { ...admin(), body: { metadata: { note: 'a\u0000b' } } }), 'metadata.note');
    expectRefused(await api(app, 'PATCH', '/v1/organisation', { ...admin(), body: { metadata: { 'k\u0000ey': 'v' } } }), /^metadata/);
  });

  it('in a key of a POST with an Idempotency-Key: the refusal (naming the key) is stored for replays, never a 500', async () => {
    // Found by the fuzzer (test/platform/schemathesis.test.ts): the answer named the key as it came, and PostgreSQL
    // cannot store a NUL or a lone surrogate in the replay's jsonb.
    for (const key of ['\u0000', 'a\ud800b']) {
      const headers = { 'idempotency-key': `nul-${key.length}` };
      const res = await api(app, 'POST', '/v1/identity-providers', { ...admin(), headers, body: { [key]: 1, providerType: 'oidc' } });
      expectRefused(res, key === '\u0000' ? '\\u0000' : 'a\\ud800b');
      const again = await api(app, 'POST', '/v1/identity-providers', { ...admin(), headers, body: { [key]: 1, providerType: 'oidc' } });
      expect(again.status).toBe(400);
    }
  });

  it('in a query string (GET /v1/passes?customerId=a%00b, GET /v1/events?q=%00)', async () => {
    expectRefused(await get('/v1/passes?customerId=a%00b'), 'query.customerId');
    expectRefused(await get('/v1/events?q=%00'), 'query.q');
  });

  it('in a path parameter (GET /v1/events/a%00b)', async () => {
    expectRefused(await get('/v1/events/a%00b'), 'params.id');
  });

  it('an undecodable path (GET /v1/events/%FF) answers 400 in the envelope', async () => {
    const res = await get('/v1/events/%FF');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: expect.any(String), code: expect.any(String), requestId: res.headers.get('x-request-id') });
  });
});

describe('NUL bytes on the sales API (cart, checkout, confirm)', () => {
  it('in cart lines, checkout customer fields and the order id of a confirm', async () => {
    const shop = storefront(app, keys.publishable);
    expectRefused(
      await shop.call('POST', '/sales/carts', {
        items: [{ occurrenceId: `${catalogue.occurrenceId}\u0000`, ticketTypeId: catalogue.ticketTypeId, quantity: 1 }],
      }),
      'items.0.occurrenceId',
    );
    const cart = await shop.call('POST', '/sales/carts', {
      items: [{ occurrenceId: catalogue.occurrenceId, ticketTypeId: catalogue.ticketTypeId, quantity: 1 }],
    });
    expect(cart.status).toBe(201);
    expectRefused(
      await shop.call('POST', `/sales/carts/${cart.body.cart.id}/checkout`, {
        customer: { email: `buyer-${tag()}@fuzz.test`, firstName: 'A\u0000da' },
      }),
      'customer.firstName',
    );
    const server = storefront(app, keys.secret);
    expectRefused(await server.call('POST', '/sales/orders/ord_a%00b/confirm', {}), 'params.id');
  });
});

describe('NUL bytes in GraphQL', () => {
  it('in a variable (variables.input.name) and in a literal', async () => {
    const variable = await graphql(
      app,
      'mutation($input: CreateRoleInput!) { createRole(input: $input) { role { id } } }',
      { input: { name: `nul\u0000role ${tag()}`, permissions: ['events.read'] } },
      admin(),
    );
    expect(variable.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
    expect(variable.body.errors[0].extensions.details.map((d: { path: string }) => d.path)).toContain('variables.input.name');

    const literal = await graphql(
      app,
      `mutation { createRole(input: {name: "nul\\u0000literal ${tag()}", permissions: ["events.read"]}) { role { id } } }`,
      {},
      admin(),
    );
    expect(literal.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
  });
});

describe('deep nesting', () => {
  const nested = (depth: number) => {
    let value: unknown = 'bottom';
    for (let i = 0; i < depth; i += 1) value = { deeper: value };
    return value;
  };

  it('JSON nested 33 and 3,000 deep in a body answers 400 (metadata is free-form)', async () => {
    expectRefused(await api(app, 'PATCH', '/v1/organisation', { ...admin(), body: { metadata: nested(33) } }));
    expectRefused(await api(app, 'PATCH', '/v1/organisation', { ...admin(), body: { metadata: nested(3_000) } }));
    expect((await api(app, 'PATCH', '/v1/organisation', { ...admin(), body: { metadata: nested(20) } })).status).toBe(200);
  });

  it('a GraphQL list literal nested 10,000 deep answers 400 (token limit), not 500', async () => {
    const res = await postGraphql(app, { query: `{ events(q: ${'['.repeat(10_000)}"x"${']'.repeat(10_000)}) { nodes { id } } }` }, admin());
    expect(res.status).toBe(400);
    expect(res.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_FAILED');
  });
});

describe('error details are capped', () => {
  it('150 invalid permissions answer the first issues and a count of the rest', async () => {
    const permissions = Array.from({ length: 150 }, (_, i) => `not a permission ${i}`);
    const res = await api(app, 'POST', '/v1/roles', { ...admin(), body: { name: `Bad ${tag()}`, permissions } });
    expectRefused(res);
    const details = res.body.details as Array<{ path: string; message: string; count?: number }>;
    expect(details.length).toBeLessThanOrEqual(21);
    const more = details.at(-1)!;
    expect(more).toEqual({ path: '(more)', message: `${more.count} more issues`, count: expect.any(Number) });
    expect(details.length - 1 + more.count!).toBe(150);
    for (const detail of details.slice(0, -1)) expect(detail.path).toMatch(/^permissions\.\d+$/);
  });

  it('a 40 KB body of 10,000 invalid permissions answers a small error, not 1.4 MB', async () => {
    const permissions = Array.from({ length: 10_000 }, () => 'x');
    const res = await fetch(`${app().url}/v1/roles`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${org.adminToken}`, 'x-service-org': org.slug },
      body: JSON.stringify({ name: `Huge ${tag()}`, permissions }),
    });
    const text = await res.text();
    expect(res.status).toBe(400);
    expect(text.length).toBeLessThan(16 * 1024);
    expect(JSON.parse(text).details.length).toBeLessThanOrEqual(21);
  });
});
