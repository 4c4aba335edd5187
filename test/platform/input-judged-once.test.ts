import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { api, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';

/**
 * Input is judged once, by the use case's schema (docs/architecture.md, "Input is judged once"):
 * the GraphQL inputs are generated from it and /v1 hands the body over untouched, so both surfaces
 * answer a wrong value with the same details.
 */
const app = useTestApp();
let org: TestOrganisation;
beforeAll(async () => {
  org = await createOrganisation(app, 'judged');
});

const paths = (body: { details?: Array<{ path: string }> }) => (body.details ?? []).map((detail) => detail.path).sort();

describe('a wrong input, on both surfaces', () => {
  const bad = { name: '', status: 'live', timezone: 'Mars/Olympus', onSaleDate: 'soon', tags: 'one tag' };

  it('/v1 names every wrong field of the body', async () => {
    const res = await api(app, 'POST', '/v1/events', { token: org.adminToken, org: org.slug, body: { accountId: org.account.id, ...bad } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(paths(res.body)).toEqual(['name', 'onSaleDate', 'status', 'tags', 'timezone']);
  });

  it('GraphQL names the same fields under the variable, in the same words (an enum by its names)', async () => {
    const rest = await api(app, 'POST', '/v1/events', {
      token: org.adminToken,
      org: org.slug,
      body: { accountId: org.account.id, ...bad },
    });
    const res = await graphql(
      app,
      'mutation ($input: CreateEventInput!) { createEvent(input: $input) { event { id } } }',
      { input: { accountId: org.account.id, ...bad } },
      { token: org.adminToken, org: org.slug },
    );
    const error = res.body.errors[0];
    expect(error.extensions.code).toBe('VALIDATION_FAILED');
    expect(error.extensions.details).toEqual(
      (rest.body.details as Array<{ path: string; message: string }>).map((detail) => ({
        ...detail,
        path: `variables.input.${detail.path}`,
        message: detail.path === 'status' ? `one of ${detail.message.slice('one of '.length).toUpperCase()}` : detail.message,
      })),
    );
    // /v1 speaks the contract's values, the graph its names.
    expect(rest.body.details.find((detail: { path: string }) => detail.path === 'status').message).toMatch(
      /^one of draft, published, on_sale/,
    );
  });

  it('one value where a list goes is refused, not read as a list of one', async () => {
    const res = await api(app, 'POST', '/v1/events', {
      token: org.adminToken,
      org: org.slug,
      body: { accountId: org.account.id, name: 'One tag', timezone: 'UTC', tags: 'festival' },
    });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: 'tags', message: expect.stringMatching(/list/i) }]);
  });

  it('a page larger than any list serves is refused naming the parameter, not as a cost', async () => {
    const res = await api(app, 'GET', '/v1/events?limit=24043', { token: org.adminToken, org: org.slug });
    expect(res.status).toBe(400);
    expect(paths(res.body)).toEqual(['query.limit']);
  });
});
