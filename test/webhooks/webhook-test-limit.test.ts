import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { asAdmin } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, type TestOrganisation } from '../support/fixtures.ts';
import { freshMinute } from '../support/clock.ts';

/**
 * The webhook test operation (POST /v1/webhook-endpoints/{id}/test) is limited to 10 a minute per
 * endpoint; beyond, 429 RATE_LIMITED with Retry-After, and no delivery is recorded. Receivers are
 * never reached in this test (no worker runs and the URL is a closed loopback port).
 */

const app = useTestApp();
let org: TestOrganisation;

beforeAll(async () => {
  org = await createOrganisation(app, 'hook-test');
});

const admin = () => asAdmin(org);

async function endpoint() {
  const res = await api(app, 'POST', '/v1/webhook-endpoints', {
    ...admin(),
    body: { accountId: org.account.id, url: 'http://127.0.0.1:9/hooks' },
  });
  expect(res.status).toBe(201);
  return res.body.endpoint.id as string;
}

async function deliveriesOf(endpointId: string): Promise<number> {
  const [row] = await query<{ n: number }>(app, 'SELECT count(*)::int AS n FROM webhook_deliveries WHERE "endpointId" = $1', [endpointId]);
  return row!.n;
}

describe('POST /v1/webhook-endpoints/{id}/test', () => {
  it('answers 429 with Retry-After after 10 tests of one endpoint in a minute; no 11th delivery; another endpoint is unaffected', async () => {
    const tarpit = await endpoint();
    await freshMinute();
    const statuses: number[] = [];
    for (let i = 0; i < 10; i += 1) statuses.push((await api(app, 'POST', `/v1/webhook-endpoints/${tarpit}/test`, admin())).status);
    expect(statuses).toEqual(Array(10).fill(201));

    const eleventh = await api(app, 'POST', `/v1/webhook-endpoints/${tarpit}/test`, admin());

    expect({ status: eleventh.status, code: eleventh.body?.code }).toEqual({ status: 429, code: 'RATE_LIMITED' });
    const retryAfter = Number(eleventh.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(await deliveriesOf(tarpit)).toBe(10);

    const other = await endpoint();
    expect((await api(app, 'POST', `/v1/webhook-endpoints/${other}/test`, admin())).status).toBe(201);
  });

  it('GraphQL testWebhookEndpoint shares the count', async () => {
    const id = await endpoint();
    await freshMinute();
    for (let i = 0; i < 10; i += 1) expect((await api(app, 'POST', `/v1/webhook-endpoints/${id}/test`, admin())).status).toBe(201);
    const res = await api(app, 'POST', '/graphql', {
      ...admin(),
      body: { query: `mutation { testWebhookEndpoint(id: "${id}") { webhookDelivery { id } } }` },
    });
    expect(res.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    expect(await deliveriesOf(id)).toBe(10);
  });
});
