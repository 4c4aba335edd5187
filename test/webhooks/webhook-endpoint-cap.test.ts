import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { expectDocumentedResponse } from '../support/openapi-check.ts';

/**
 * Endpoints per account are capped, so a tenant cannot multiply its slow
 * receivers (each gets its own share of attempts in flight). The cap holds under concurrent
 * creation, and the refusal is a 400 that names the limit (contract.md, "Decided later").
 */

const CAP = 3;
let app: TestApp;
let org: TestOrganisation;

beforeAll(async () => {
  app = await startTestApp({ WEBHOOK_MAX_ENDPOINTS_PER_ACCOUNT: String(CAP) });
  org = await createOrganisation(app, 'cap');
});
afterAll(async () => {
  await app?.stop();
});

const create = (accountId: string) =>
  api(app, 'POST', '/v1/webhook-endpoints', { token: org.adminToken, org: org.slug, body: { accountId, url: 'http://127.0.0.1:9/cap' } });

describe('webhook endpoints per account', () => {
  it('are 20 at most by default (WEBHOOK_MAX_ENDPOINTS_PER_ACCOUNT)', () => {
    expect(loadConfig({}).WEBHOOK_MAX_ENDPOINTS_PER_ACCOUNT).toBe(20);
  });

  it('refuses the one beyond the limit with 400 naming it; deleting one makes room; other accounts are not affected', async () => {
    const account = (await createAccount(app, org, 'Capped')).id;
    const made = [];
    for (let i = 0; i < CAP; i += 1) {
      const res = await create(account);
      expect(res.status).toBe(201);
      made.push(res.body.endpoint.id as string);
    }
    const refused = await create(account);
    expect([refused.status, refused.body.code]).toEqual([400, 'VALIDATION_FAILED']);
    expect(refused.body.details).toEqual([
      {
        path: 'accountId',
        message: expect.stringMatching(new RegExp(`at most ${CAP} webhook endpoints \\(WEBHOOK_MAX_ENDPOINTS_PER_ACCOUNT\\)`)),
      },
    ]);
    expect(refused.body.error).toMatch(/Limit reached/);
    expectDocumentedResponse('POST', '/webhook-endpoints', refused);
    const gql = await graphql(
      app,
      'mutation($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { createdWebhookEndpoint { secret } userErrors { field code message } } }',
      { input: { accountId: account, url: 'http://127.0.0.1:9/cap' } },
      { token: org.adminToken, org: org.slug },
    );
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.createWebhookEndpoint).toEqual({
      createdWebhookEndpoint: null,
      userErrors: [{ field: ['input', 'accountId'], code: 'VALIDATION_FAILED', message: refused.body.details[0].message }],
    });

    expect((await create((await createAccount(app, org, 'Other')).id)).status).toBe(201);
    await api(app, 'DELETE', `/v1/webhook-endpoints/${made[0]}`, { token: org.adminToken, org: org.slug });
    expect((await create(account)).status).toBe(201);
    expect((await create(account)).status).toBe(400);
  });

  it('holds when many are created at once', async () => {
    const account = (await createAccount(app, org, 'Raced')).id;
    const answers = await Promise.all(Array.from({ length: 12 }, () => create(account)));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(CAP);
    expect(answers.filter((r) => r.status === 400)).toHaveLength(12 - CAP);
    const listed = await api(app, 'GET', `/v1/webhook-endpoints?accountId=${account}`, { token: org.adminToken, org: org.slug });
    expect(listed.body.endpoints).toHaveLength(CAP);
  });
});
