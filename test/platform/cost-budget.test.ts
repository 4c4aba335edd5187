import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { bootstrapOrganisation } from '../../src/services/bootstrap-organisation.ts';
import { appOf, startTwoApps, useTestApp, type AppPair, type AppRef } from '../support/app.ts';
import { api, createOrganisation, postGraphql, signIn, tag, type TestOrganisation } from '../support/fixtures.ts';
import { createEvent, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';
import { rawSse } from '../support/sse-client.ts';

/**
 * Every GraphQL answer reports its cost (extensions.cost), and each organisation's operations are
 * charged to a cost budget shared by /graphql and /v1 (admin lane) and by /live (sales lane), across
 * API processes (src/limits/cost-budget.ts): requested before the operation runs, refunded to
 * actual after; 429 RATE_LIMITED with Retry-After when the bucket cannot pay.
 */

/** Organisations with a rate of their own (COST_RATE_OVERRIDES), named before the app starts. */
const steadySlug = `cost-steady-${tag()}`;
const tightSlug = `cost-tight-${tag()}`;
const STEADY = { restoreRate: 1, budget: 100_000 };
const TIGHT = { restoreRate: 200, budget: 1_000 };

const app = useTestApp({
  COST_RATE_OVERRIDES: `${steadySlug}=${STEADY.restoreRate}:${STEADY.budget}, ${tightSlug}=${TIGHT.restoreRate}:${TIGHT.budget}`,
});

/** An organisation under a slug chosen in advance, signed in like createOrganisation's. */
async function organisationNamed(ref: AppRef, slug: string): Promise<TestOrganisation> {
  const email = `admin@${slug}.test`;
  const password = 'admin password 1';
  const result = await bootstrapOrganisation(appOf(ref).runtime.db, { orgSlug: slug, orgName: `Org ${slug}`, email, password });
  const { accessToken } = await signIn(ref, email, password, slug);
  return { ...result, slug, email, password, adminToken: accessToken };
}

async function threeEvents(ref: AppRef, org: TestOrganisation): Promise<void> {
  for (const name of ['One', 'Two', 'Three']) await createEvent(ref, org, { name });
}

/** A page of 50 asked of an organisation with 3 events: requested 1 + 1 + 50·3, actual 1 + 1 + 3·3. */
const PAGE_OF_50 = '{ events(first: 50) { nodes { id name status } } }';
const PAGE_OF_50_REQUESTED = 152;
const PAGE_OF_50_ACTUAL = 11;
/** 30 pages of the 3 events with 5 fields: requested and actual 30 · (1 + 1 + 3·5). */
const HEAVY = `{ ${Array.from({ length: 30 }, (_, i) => `e${i}: events(first: 3) { nodes { id name status timezone createdAt } }`).join(' ')} }`;
const HEAVY_COST = 510;

interface Cost {
  requested: number;
  actual: number;
  budget: number | null;
  remaining: number | null;
  restoreRate: number | null;
}

async function ask(ref: AppRef, org: TestOrganisation, query: string, headers: Record<string, string> = {}) {
  const res = await postGraphql(ref, { query }, { token: org.adminToken, org: org.slug, headers });
  return { ...res, cost: res.body?.extensions?.cost as Cost };
}

let steady: TestOrganisation;
let tight: TestOrganisation;
let other: TestOrganisation;
let shop: SeededCatalogue;

beforeAll(async () => {
  steady = await organisationNamed(app, steadySlug);
  tight = await organisationNamed(app, tightSlug);
  other = await createOrganisation(app, 'cost-other');
  for (const org of [steady, tight, other]) await threeEvents(app, org);
  // Made before the tight organisation's admin bucket is spent (its /v1 calls are charged to it).
  shop = await seedCatalogue(app, tight, { status: 'on_sale' });
});

describe('extensions.cost', () => {
  it('reports requested, actual, the bucket and what remains; remaining goes down by actual, not by requested', async () => {
    const first = await ask(app, steady, PAGE_OF_50);
    expect(first.status).toBe(200);
    expect(first.body.data.events.nodes).toHaveLength(3);
    expect(first.cost).toEqual({
      requested: PAGE_OF_50_REQUESTED,
      actual: PAGE_OF_50_ACTUAL,
      budget: STEADY.budget,
      remaining: expect.any(Number),
      restoreRate: STEADY.restoreRate,
    });
    const started = Date.now();
    const second = await ask(app, steady, PAGE_OF_50);
    const restored = Math.ceil((STEADY.restoreRate * (Date.now() - started)) / 1000);
    // The 3 of a requested 50 are paid: the other 47 pages' worth came back.
    const spent = first.cost.remaining! - second.cost.remaining!;
    expect(spent).toBeGreaterThanOrEqual(PAGE_OF_50_ACTUAL - restored - 1);
    expect(spent).toBeLessThanOrEqual(PAGE_OF_50_ACTUAL + 1);
    expect(second.cost.actual).toBeLessThanOrEqual(second.cost.requested);
  });

  it('is on the fast path and on Yoga, for mutations and for results with errors', async () => {
    const viaYoga = await ask(app, steady, PAGE_OF_50, { origin: 'https://admin.example' });
    expect(viaYoga.cost).toMatchObject({ requested: PAGE_OF_50_REQUESTED, actual: PAGE_OF_50_ACTUAL, budget: STEADY.budget });

    const missing = await ask(app, steady, '{ event(id: "evt_missing") { id name } }');
    expect(missing.body.errors[0].extensions.code).toBe('NOT_FOUND');
    expect(missing.cost).toMatchObject({ requested: 3, budget: STEADY.budget });
    expect(missing.cost.actual).toBeLessThanOrEqual(1);

    const created = await ask(
      app,
      steady,
      `mutation { createVenue(input: { accountId: "${steady.account.id}", name: "Hall", timezone: "UTC" }) { venue { id name } userErrors { code } } }`,
    );
    expect(created.body.data.createVenue.venue.name).toBe('Hall');
    expect(created.cost).toMatchObject({ budget: STEADY.budget, restoreRate: STEADY.restoreRate });
    expect(created.cost.actual).toBeGreaterThan(0);
    expect(created.cost.actual).toBeLessThanOrEqual(created.cost.requested);
  });

  it('actual counts fields of fragments, and not skipped ones', async () => {
    const viaFragment = await ask(app, steady, '{ events(first: 50) { nodes { ...F } } } fragment F on Event { id name status }');
    expect(viaFragment.cost).toMatchObject({ requested: PAGE_OF_50_REQUESTED, actual: PAGE_OF_50_ACTUAL });
    const skipped = await ask(app, steady, '{ events(first: 50) { nodes { id name @skip(if: true) ... on Event { status } } } }');
    expect(skipped.body.data.events.nodes[0]).not.toHaveProperty('name');
    expect(skipped.cost).toMatchObject({ requested: PAGE_OF_50_REQUESTED, actual: 1 + 1 + 3 * 2 });
  });

  it('a caller charged to no organisation sees the cost and no bucket', async () => {
    const res = await postGraphql(app, { query: '{ apiVersions { current } }' });
    expect(res.status).toBe(200);
    expect(res.body.extensions.cost).toEqual({ requested: 2, actual: 2, budget: null, remaining: null, restoreRate: null });
  });

  it('an organisation without an override has the default bucket', async () => {
    const { cost } = await ask(app, other, PAGE_OF_50);
    const config = appOf(app).config;
    expect(cost).toMatchObject({ budget: config.COST_ADMIN_BUDGET, restoreRate: config.COST_ADMIN_RESTORE_RATE });
    expect(cost.remaining).toBeGreaterThan(config.COST_ADMIN_BUDGET - 10_000);
  });

  it('a subscription is charged once as it starts; one refused as it starts is charged nothing, and its refusal says so', async () => {
    const headers = { authorization: `Bearer ${steady.adminToken}`, 'x-service-org': steady.slug };
    const subscribe = (accountId: string, ms: number) =>
      rawSse(
        `${app().url}/graphql`,
        {
          headers,
          body: {
            query: `subscription ($a: ID!) { orderChanged(accountId: $a) { cursor order { id status customer { email } } } }`,
            variables: { a: accountId },
          },
        },
        ms,
      );
    const before = await ask(app, steady, PAGE_OF_50);
    const started = Date.now();
    const refused = await subscribe('acc_missing', 1_500);
    // A stream refused as it starts: its one result, the error, then complete.
    const result = JSON.parse(refused.text.match(/^data: (.+)$/m)![1]!);
    expect(result.errors[0].extensions.code).toBe('NOT_FOUND');
    const { cost } = result.extensions;
    expect(cost).toMatchObject({ actual: 0, budget: STEADY.budget });
    expect(cost.requested).toBeGreaterThanOrEqual(5);
    // Nor is one asked as anything but an event stream (406 before it starts).
    const asJson = await rawSse(`${app().url}/graphql`, {
      headers: { ...headers, accept: 'application/json' },
      body: { query: `subscription ($a: ID!) { orderChanged(accountId: $a) { cursor } }`, variables: { a: steady.account.id } },
    });
    expect(asJson.status).toBe(406);
    // An open stream is charged what it requested; the refused ones nothing.
    await subscribe(steady.account.id, 500);
    const after = await ask(app, steady, PAGE_OF_50);
    const restored = Math.ceil((STEADY.restoreRate * (Date.now() - started)) / 1000);
    const spent = before.cost.remaining! - after.cost.remaining!;
    expect(spent).toBeGreaterThanOrEqual(cost.requested + PAGE_OF_50_ACTUAL - restored - 1);
    expect(spent).toBeLessThanOrEqual(cost.requested + PAGE_OF_50_ACTUAL + 1);
  });

  it('an operation asking for more than the whole budget is refused as over maxCost (400): waiting would not help', async () => {
    // 1 + 1 + 100 · 11: more than the tight organisation's 1,000, far less than maxCost.
    const fields = 'id name status timezone createdAt updatedAt description tags venueId accountId onSaleDate';
    const res = await postGraphql(
      app,
      { query: `{ events(first: 100) { nodes { ${fields} } } }` },
      { token: tight.adminToken, org: tight.slug },
    );
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'VALIDATION_FAILED', limit: 'maxCost', max: TIGHT.budget });
    expect(res.body.extensions.cost).toMatchObject({ actual: 0, budget: TIGHT.budget });
  });
});

describe('an exhausted budget', () => {
  let retryAfter: number;

  it('answers 429 RATE_LIMITED with Retry-After on /graphql, before the operation runs', async () => {
    let refused: Awaited<ReturnType<typeof ask>> | undefined;
    for (let i = 0; i < 20 && !refused; i += 1) {
      const res = await ask(app, tight, HEAVY);
      if (res.status === 429) refused = res;
      else expect(res.cost.actual).toBe(HEAVY_COST);
    }
    expect(refused, 'the tight budget was never exhausted').toBeDefined();
    expect(refused!.body.data ?? null).toBeNull();
    expect(refused!.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused!.cost).toMatchObject({ requested: HEAVY_COST, actual: 0, budget: TIGHT.budget, restoreRate: TIGHT.restoreRate });
    expect(refused!.cost.remaining).toBeLessThan(HEAVY_COST);
    // Yoga itself (a request with an Origin) answers the same way.
    const viaYoga = await ask(app, tight, HEAVY, { origin: 'https://admin.example' });
    expect(viaYoga.status).toBe(429);
    expect(viaYoga.body.errors[0].extensions.code).toBe('RATE_LIMITED');
    expect(Number(viaYoga.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('answers 429 on /v1 in the contract envelope, and restores after Retry-After', async () => {
    // A page of 50 asks for ~900 points: more than the spent bucket holds.
    const refused = await api(app, 'GET', '/v1/events?limit=50', { token: tight.adminToken, org: tight.slug });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: expect.stringContaining('cost budget'), code: 'RATE_LIMITED', requestId: expect.any(String) });
    retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil(TIGHT.budget / TIGHT.restoreRate));

    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000 + 100));
    const restored = await api(app, 'GET', '/v1/events?limit=50', { token: tight.adminToken, org: tight.slug });
    expect(restored.status).toBe(200);
    expect(restored.body.events.length).toBeGreaterThanOrEqual(3);
  });

  it('leaves other organisations and the organisation’s own sales lane alone', async () => {
    // Spent again: the admin lane refuses…
    let status = 200;
    for (let i = 0; i < 20 && status !== 429; i += 1) status = (await ask(app, tight, HEAVY)).status;
    expect(status).toBe(429);
    // …while the storefront of the same organisation sells from its own lane (a page of 2 asks
    // for less than the tight admin budget: charged to that lane it would be refused, not 400),
    const listings = await api(app, 'GET', '/live/sales/listings?limit=2', { headers: { 'x-channel-key': shop.channel.publishable } });
    expect(listings.status).toBe(200);
    expect(listings.body.events.length).toBeGreaterThanOrEqual(1);
    // and another organisation is answered from its own, full bucket.
    const elsewhere = await ask(app, other, HEAVY);
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.cost.actual).toBe(HEAVY_COST);
    expect(elsewhere.cost.remaining).toBeGreaterThan(appOf(app).config.COST_ADMIN_BUDGET - 10_000);
  });
});

describe('two API processes', () => {
  const sharedSlug = `cost-shared-${tag()}`;
  const SHARED = { restoreRate: 20, budget: 2_000 };
  let pair: AppPair;
  let org: TestOrganisation;

  beforeAll(async () => {
    pair = await startTwoApps({ COST_RATE_OVERRIDES: `${sharedSlug}=${SHARED.restoreRate}:${SHARED.budget}` });
    org = await organisationNamed(pair.a, sharedSlug);
    await threeEvents(pair.a, org);
  });
  afterAll(async () => {
    await pair?.stop();
  });

  it('spend from one bucket: what one spends, the other sees as spent', async () => {
    const started = Date.now();
    const spentOnA = [await ask(pair.a, org, HEAVY), await ask(pair.a, org, HEAVY)];
    for (const res of spentOnA) expect(res.cost.actual).toBe(HEAVY_COST);
    const onB = await ask(pair.b, org, PAGE_OF_50);
    expect(onB.status).toBe(200);
    const restored = (SHARED.restoreRate * (Date.now() - started)) / 1000;
    // B leased after A spent: A's spending is in the row B read (the bound of cost-budget.ts:
    // at most the slices other processes hold, 2 · budget/20, are unknown to B).
    const spent = 2 * HEAVY_COST + PAGE_OF_50_ACTUAL;
    expect(onB.cost.remaining).toBeLessThanOrEqual(SHARED.budget - spent + restored + 1);
    expect(onB.cost.remaining).toBeGreaterThanOrEqual(SHARED.budget - spent - 2 * (SHARED.budget / 20));

    // Spent down on A until refused; B is refused too.
    let status = 200;
    for (let i = 0; i < 10 && status !== 429; i += 1) status = (await ask(pair.a, org, HEAVY)).status;
    expect(status).toBe(429);
    const refusedOnB = await ask(pair.b, org, HEAVY);
    expect(refusedOnB.status).toBe(429);
    expect(refusedOnB.body.errors[0].extensions.code).toBe('RATE_LIMITED');
  });
});

describe('COST_RATE_OVERRIDES', () => {
  it('reads <slug or id>[/sales]=<points per second>[:<budget>] and names a malformed one', () => {
    const config = loadConfig({ COST_RATE_OVERRIDES: 'acme=5, org_123/sales=2.5:10' });
    expect(config.COST_RATE_OVERRIDES).toEqual([
      { organisation: 'acme', lane: 'admin', restoreRate: 5, budget: undefined },
      { organisation: 'org_123', lane: 'sales', restoreRate: 2.5, budget: 10 },
    ]);
    expect(() => loadConfig({ COST_RATE_OVERRIDES: 'acme=fast' })).toThrow(ConfigError);
    expect(() => loadConfig({ COST_RATE_OVERRIDES: 'acme/other=5' })).toThrow(/COST_RATE_OVERRIDES/);
  });
});
