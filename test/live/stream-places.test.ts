import pg from 'pg';
import { createClient } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTwoApps, type AppPair, type TestApp } from '../support/app.ts';
import { query } from '../support/db.ts';
import { bootstrapOrganisation } from '../../src/services/bootstrap-organisation.ts';
import { createOrganisation, signIn, tag, type TestOrganisation } from '../support/fixtures.ts';
import { ORDER_CHANGED, eventually, follow, rawSse, sleep } from '../support/sse-client.ts';

/**
 * The places open streams take in PostgreSQL (`live_stream_places`, src/live/live.ts), which the
 * per-credential and per-organisation bounds count across API processes: given back however a
 * stream ends, never taken again once given back, and a stream whose place lapsed is dropped for
 * its client to take one again within the bounds. Two API processes on one database.
 */

let pair: AppPair;

beforeAll(async () => {
  pair = await startTwoApps({ LIVE_SUBSCRIPTIONS_PER_CREDENTIAL: '2', LIVE_STREAM_LEASE: '3s' });
});

afterAll(async () => {
  await pair?.stop();
});

const on = (app: TestApp, org: TestOrganisation) =>
  follow(
    createClient({
      url: `${app.url}/graphql`,
      headers: { authorization: `Bearer ${org.adminToken}`, 'x-service-org': org.slug },
      retryAttempts: 0,
    }),
    ORDER_CHANGED,
    { accountId: org.account.id },
  );

const placesOf = async (org: TestOrganisation) =>
  (
    await query<{ id: string }>(pair.a, `SELECT id FROM live_stream_places WHERE "organisationId" = $1 ORDER BY id`, [org.organisation.id])
  ).map((row) => row.id);

/** A connection of its own, for holding rows or locks the service then waits on. */
async function locker(app: TestApp): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: app.database.url });
  await client.connect();
  return client;
}

describe('places of open streams', () => {
  it('are not taken again by a renewal under way when their stream ends', async () => {
    const org = await createOrganisation(pair.a, 'places-renewal');
    const first = on(pair.b, org);
    await eventually('the first stream admitted', async () => (await placesOf(org)).length === 1);
    const [held] = await placesOf(org);
    const second = on(pair.b, org);
    await eventually('the second stream admitted', async () => (await placesOf(org)).length === 2);
    const given = (await placesOf(org)).find((id) => id !== held)!;
    // The first place's row is held elsewhere: the process's next renewal (every second) waits on it.
    const holder = await locker(pair.a);
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM live_stream_places WHERE id = $1 FOR UPDATE', [held]);
    await sleep(1_300);
    second.dispose();
    await eventually('the second place given back', async () => !(await placesOf(org)).includes(given));
    await holder.query('ROLLBACK');
    await holder.end();
    await sleep(300);
    expect(await placesOf(org)).toEqual([held]);
    // One stream open against a bound of 2: another opens, through the other process.
    const third = on(pair.a, org);
    await eventually('the third stream admitted', async () => (await placesOf(org)).length === 2);
    expect(third.results).toEqual([]);
    for (const stream of [first, third]) stream.dispose();
  });

  it('are given back when their process stops while they are being taken, and the stream is dropped for its client to reconnect', async () => {
    const own = await startTwoApps({ LIVE_STREAM_LEASE: '30s' });
    try {
      const org = await createOrganisation(own.a, 'places-stopping');
      // The organisation's admissions wait on its lock, held here.
      const holder = await locker(own.a);
      await holder.query(`SELECT pg_advisory_lock(hashtextextended('live_stream_places organisation ' || $1, 0))`, [org.organisation.id]);
      // Read raw: a dropped connection is a failed fetch, an error would be an answer.
      const seen = rawSse(`${own.b.url}/graphql`, {
        headers: { authorization: `Bearer ${org.adminToken}`, 'x-service-org': org.slug },
        body: { query: ORDER_CHANGED, variables: { accountId: org.account.id } },
      }).then(
        (answer) => `${answer.status} ${answer.text}`,
        () => 'dropped',
      );
      await eventually('the stream waiting for its place', () => own.b.runtime.live.open === 1);
      const closing = own.b.runtime.live.close();
      await sleep(200);
      await holder.query('SELECT pg_advisory_unlock_all()');
      await holder.end();
      await closing;
      expect(await seen).toBe('dropped');
      expect(await query(own.a, `SELECT id FROM live_stream_places WHERE "organisationId" = $1`, [org.organisation.id])).toEqual([]);
      expect(own.b.runtime.live.open).toBe(0);
    } finally {
      await own.stop();
    }
  });

  it("count a person's streams in all their organisations together", async () => {
    const first = await createOrganisation(pair.a, 'places-person');
    // The same person made the administrator of a second organisation.
    const slug = `places-second-${tag()}`;
    const made = await bootstrapOrganisation(pair.a.runtime.db, {
      orgSlug: slug,
      orgName: 'Second',
      email: first.email,
      password: first.password,
    });
    expect(made.user.personId).toBe(first.user.personId);
    const { accessToken } = await signIn(pair.a, first.email, first.password, slug);
    const second: TestOrganisation = { ...made, slug, email: first.email, password: first.password, adminToken: accessToken };
    const open = [on(pair.a, first), on(pair.b, second)];
    await eventually('both streams admitted', async () => (await placesOf(first)).length + (await placesOf(second)).length === 2);
    expect(open.map((stream) => stream.results)).toEqual([[], []]);
    for (const [app, org] of [
      [pair.a, second],
      [pair.b, first],
    ] as const) {
      const refused = on(app, org);
      const [refusal] = await refused.take(1);
      refused.dispose();
      expect(refusal!.errors![0]!.message).toContain('429');
    }
    for (const stream of open) stream.dispose();
  });

  it('drops a stream whose place lapsed, so that its client takes one again within the bounds', async () => {
    const org = await createOrganisation(pair.a, 'places-lapsed');
    const before = [on(pair.b, org), on(pair.b, org)];
    await eventually('both streams admitted', async () => (await placesOf(org)).length === 2);
    // As if the process had not reached the database for longer than the lease: its places lapsed,
    // and the other process's streams took them.
    await query(pair.a, `UPDATE live_stream_places SET "leaseUntil" = now() - interval '1 second' WHERE "organisationId" = $1`, [
      org.organisation.id,
    ]);
    const after = [on(pair.a, org), on(pair.a, org)];
    await eventually('the other process admits two streams', () => pair.a.runtime.live.open === 2);
    expect(after.map((stream) => stream.results)).toEqual([[], []]);
    // At its next renewal the first process drops the streams whose places are gone.
    await eventually('the streams without places dropped', () => before.every((stream) => stream.done));
    expect(after.map((stream) => stream.done)).toEqual([false, false]);
    expect((await placesOf(org)).length).toBe(2);
    expect(pair.b.runtime.live.open).toBe(0);
    for (const stream of after) stream.dispose();
  });
});
