import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchStatements } from '../../src/db/client.ts';
import { query } from '../support/db.ts';
import { startTwoApps, useTestApp, type AppPair, type AppRef } from '../support/app.ts';
import { api, createAccount, createOrganisation, type TestOrganisation } from '../support/fixtures.ts';
import { buy, createChannel, createCatalogue, type Catalogue, type Channel } from '../support/sales.ts';

/**
 * An on-sale's buyers ask for the same listings in the same moment. A request for a channel's page
 * that is being read already gets that read's answer; the page is never shared with another channel
 * or organisation, never outlives the key that asked (each request's key is judged anew), and what a
 * cart holds is decided against the inventory itself.
 */
const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
let catalogue: Catalogue;
let channel: Channel;

const LISTINGS_STATEMENT = /^\s*WITH listed AS/;
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const list = (key: string, headers: Record<string, string> = {}) =>
  api(app, 'GET', '/live/sales/listings', { headers: { 'x-channel-key': key, ...headers } });
const availableOf = (res: Awaited<ReturnType<typeof list>>) =>
  res.body.events.find((e: { id: string }) => e.id === catalogue.eventId).occurrences[0].availability[0].available as number;

beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'shared-listings'), createOrganisation(app, 'shared-other')]);
  catalogue = await createCatalogue(app, org, { capacity: 50, name: 'The big on-sale' });
  channel = await createChannel(app, org);
});

describe('listings shared by an on-sale’s buyers', () => {
  it('a burst of buyers is answered from one read of the page, every answer alike', async () => {
    const burst = `burst-${randomBytes(4).toString('hex')}`;
    const sent: string[] = [];
    const stop = watchStatements(app().runtime.db, ({ text, requestId }) => {
      if (requestId?.startsWith(burst) && LISTINGS_STATEMENT.test(text)) sent.push(requestId);
    });
    const buyers = 30;
    try {
      const answers = await Promise.all(
        Array.from({ length: buyers }, (_, i) =>
          list(channel.publishable, { 'x-request-id': `${burst}-${i}`, 'x-forwarded-for': `10.9.0.${i}` }),
        ),
      );
      expect(answers.map((res) => res.status)).toEqual(Array(buyers).fill(200));
      expect(new Set(answers.map((res) => JSON.stringify(res.body))).size).toBe(1);
      expect(availableOf(answers[0]!)).toBe(50);
    } finally {
      stop();
    }
    // One read serves every request that arrives while it runs.
    expect(sent.length).toBeGreaterThanOrEqual(1);
    expect(sent.length).toBeLessThan(buyers / 3);
  });

  it('a burst of buyers on a key the process has not seen reads the key once and writes its last use once', async () => {
    const fresh = await createChannel(app, org);
    await expect.poll(() => app().runtime.notices.listening).toBe(true);
    const burst = `key-burst-${randomBytes(4).toString('hex')}`;
    const reads: string[] = [];
    const writes: string[] = [];
    const stop = watchStatements(app().runtime.db, ({ text, requestId }) => {
      if (!requestId?.startsWith(burst)) return;
      if (/^\s*SELECT[\s\S]*FROM "public"\."channel_keys"/.test(text)) reads.push(requestId);
      if (/^\s*UPDATE "public"\."channel_keys"/.test(text)) writes.push(requestId);
    });
    // The key's table is locked until every buyer has asked, so that all of them miss the cache
    // together, as the first burst meeting a new process does.
    const locker = new pg.Client({ connectionString: app().database.url });
    await locker.connect();
    const buyers = 30;
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE channel_keys IN ACCESS EXCLUSIVE MODE');
      const answers = Promise.all(
        Array.from({ length: buyers }, (_, i) =>
          list(fresh.publishable, { 'x-request-id': `${burst}-${i}`, 'x-forwarded-for': `10.9.1.${i}` }),
        ),
      );
      await wait(500);
      await locker.query('COMMIT');
      expect((await answers).map((res) => res.status)).toEqual(Array(buyers).fill(200));
    } finally {
      stop();
      await locker.end();
    }
    expect(reads).toHaveLength(1);
    expect(writes).toHaveLength(1);
    const [row] = await query<{ lastUsedAt: Date | null }>(
      app,
      'SELECT "lastUsedAt" FROM channel_keys WHERE "channelId" = $1 AND kind = $2',
      [fresh.channelId, 'publishable'],
    );
    expect(row!.lastUsedAt).not.toBeNull();
  });

  it('shows what orders hold within LISTINGS_SHARED_FOR, a change of the catalogue at once, and judges carts exactly', async () => {
    const shared = app().runtime.config.LISTINGS_SHARED_FOR;
    expect(shared).toBeGreaterThan(0);
    await wait(shared + 50);
    const before = availableOf(await list(channel.publishable));
    await buy(app, channel.publishable, catalogue, 4, 'early@shared.test');
    await wait(shared + 50);
    expect(availableOf(await list(channel.publishable))).toBe(before - 4);

    // The administrator raises the capacity: the next buyer sees it, though the page was just read.
    const raised = await api(app, 'PATCH', `/v1/ticket-types/${catalogue.ticketTypeId}`, {
      token: org.adminToken,
      org: org.slug,
      body: { capacity: 60 },
    });
    expect(raised.status, JSON.stringify(raised.body)).toBe(200);
    expect(availableOf(await list(channel.publishable))).toBe(before - 4 + 10);

    // However recent the page shown, a cart asking for more than is left is refused.
    const res = await api(app, 'POST', '/live/sales/carts', {
      headers: { 'x-channel-key': channel.publishable },
      body: { items: [{ occurrenceId: catalogue.occurrenceId, ticketTypeId: catalogue.ticketTypeId, quantity: before - 4 + 11 }] },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(409);
  });

  it('is never shared with another channel, account or organisation asking in the same moment', async () => {
    const account = await createAccount(app, org, 'Second account');
    const theirs = await createCatalogue(app, org, { accountId: account.id, name: 'Another account’s show' });
    const theirChannel = await createChannel(app, org, account.id);
    const foreign = await createCatalogue(app, other, { name: 'Another organisation’s show' });
    const foreignChannel = await createChannel(app, other);

    const [mine, second, third] = await Promise.all([
      list(channel.publishable),
      list(theirChannel.publishable),
      list(foreignChannel.publishable),
    ]);
    const names = (res: Awaited<ReturnType<typeof list>>) => res.body.events.map((e: { id: string }) => e.id);
    expect(names(mine)).toContain(catalogue.eventId);
    expect(names(mine)).not.toContain(theirs.eventId);
    expect(names(second)).toEqual([theirs.eventId]);
    expect(names(third)).toEqual([foreign.eventId]);
    expect(second.body.channel.id).toBe(theirChannel.channelId);
    expect(third.body.channel.id).toBe(foreignChannel.channelId);
  });

  it('a revoked key is refused at once, though its channel’s page is still shared with the channel’s other keys', async () => {
    const issued = await api(app, 'POST', `/v1/sales-channels/${channel.channelId}/keys`, {
      token: org.adminToken,
      org: org.slug,
      body: { kind: 'publishable' },
    });
    const [spare, spareId] = [issued.body.key as string, issued.body.channelKey.id as string];
    expect((await list(spare)).status).toBe(200);
    const revoked = await api(app, 'POST', `/v1/sales-channels/${channel.channelId}/keys/${spareId}/revoke`, {
      token: org.adminToken,
      org: org.slug,
    });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect((await list(spare)).status).toBe(401);
    expect((await list(channel.publishable)).status).toBe(200);
  });
});

describe('listings shared in two API processes', () => {
  let pair: AppPair;
  beforeAll(async () => {
    // Shared for a minute: what reaches the second process's page is its change notice, not the clock.
    pair = await startTwoApps({ LISTINGS_SHARED_FOR: '60s' });
  });
  afterAll(() => pair?.stop());

  it('a catalogue change through one process reaches the other’s shared page by its change notice; sales do not empty it', async () => {
    const o = await createOrganisation(pair.a, 'two-listings');
    const shown = await createCatalogue(pair.a, o, { capacity: 50 });
    const shop = await createChannel(pair.a, o);
    const availableOn = async (app: AppRef) => {
      const res = await api(app, 'GET', '/live/sales/listings', { headers: { 'x-channel-key': shop.publishable } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.events.find((e: { id: string }) => e.id === shown.eventId).occurrences[0].availability[0].available as number;
    };
    await expect.poll(() => pair.b.runtime.notices.listening).toBe(true);
    expect(await availableOn(pair.b)).toBe(50);

    await buy(pair.a, shop.publishable, shown, 4, 'first@two-listings.test');
    expect(await availableOn(pair.a)).toBe(46);
    // The second process keeps answering its page: a sale is not a change of the catalogue.
    expect(await availableOn(pair.b)).toBe(50);

    const raised = await api(pair.a, 'PATCH', `/v1/ticket-types/${shown.ticketTypeId}`, {
      token: o.adminToken,
      org: o.slug,
      body: { capacity: 60 },
    });
    expect(raised.status, JSON.stringify(raised.body)).toBe(200);
    await expect.poll(() => availableOn(pair.b), { timeout: 5_000 }).toBe(56);
  });
});
