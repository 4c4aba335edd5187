import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { liveRoutes } from '../../rest-compat/live-routes.ts';
import { v1Routes } from '../../rest-compat/v1-routes.ts';
import { bootstrapOrganisation } from '../../src/services/bootstrap-organisation.ts';
import { startTwoApps, useTestApp, type AppPair, type AppRef } from '../support/app.ts';
import { asAdmin, createApiKey, magicLinkCode, staffWithoutRights } from '../support/credentials.ts';
import { query } from '../support/db.ts';
import { api, createOrganisation, from, newClientAddress, postGraphql, signIn, tag, type TestOrganisation } from '../support/fixtures.ts';
import { buy, cartLine, createChannel, seedCatalogue, storefront, type SeededCatalogue } from '../support/sales.ts';

/**
 * Idempotency-Key as an attacker or a careless client uses it: answers carrying secrets are never
 * replayed, a key's namespace is everything that identifies the caller, storage and waiting are
 * bounded, and a claim is held for as long as its request runs (src/http/idempotency.ts). Also:
 * every route judges the credential before the body.
 */

const withKey = (key: string, extra: Record<string, string> = {}) => ({ 'idempotency-key': key, ...extra });

/** Everything idempotency_keys holds, as text: what an attacker with a copy of the table would read. */
async function storedText(app: AppRef): Promise<string> {
  const rows = await query<{ row: string }>(app, `SELECT row_to_json(k)::text AS row FROM idempotency_keys k`);
  return rows.map((r) => r.row).join('\n');
}

describe('answers that carry secrets', () => {
  const app = useTestApp();
  let org: TestOrganisation;
  beforeAll(async () => {
    org = await createOrganisation(app, 'idem-secrets');
  });

  it('an API key is not replayed, before or after it is revoked; a retry is told where the key is', async () => {
    const body = { name: 'CI key', scopes: ['events.read'] };
    const first = await api(app, 'POST', '/v1/api-keys', { ...asAdmin(org), body, headers: withKey('key-once') });
    expect(first.status).toBe(201);
    const key = first.body.key as string;
    const again = await api(app, 'POST', '/v1/api-keys', { ...asAdmin(org), body, headers: withKey('key-once') });
    expect([again.status, again.body.code]).toEqual([409, 'CONFLICT']);
    expect(again.body.details.created.apiKey.id).toBe(first.body.apiKey.id);
    expect(again.body.details.readWith).toContain('GET /v1/api-keys');
    expect(JSON.stringify(again.body)).not.toContain(key);
    await api(app, 'POST', `/v1/api-keys/${first.body.apiKey.id}/revoke`, { ...asAdmin(org), body: {} });
    const afterRevoke = await api(app, 'POST', '/v1/api-keys', { ...asAdmin(org), body, headers: withKey('key-once') });
    expect(afterRevoke.status).toBe(409);
    expect(JSON.stringify(afterRevoke.body)).not.toContain(key);
    expect(await app().runtime.db.apiKey.count({ where: { organisationId: org.organisation.id, name: 'CI key' } })).toBe(1);
    expect(await storedText(app)).not.toContain(key);
    expect(await storedText(app)).not.toContain('svak_');
  });

  it('a webhook signing secret is not replayed after the endpoint is deleted, nor after a rotation', async () => {
    const body = { accountId: org.account.id, url: 'https://example.com/hooks' };
    const created = await api(app, 'POST', '/v1/webhook-endpoints', { ...asAdmin(org), body, headers: withKey('hook-once') });
    expect(created.status).toBe(201);
    const id = created.body.endpoint.id as string;
    const rotated = await api(app, 'POST', `/v1/webhook-endpoints/${id}/rotate-secret`, {
      ...asAdmin(org),
      body: {},
      headers: withKey('rot'),
    });
    expect(rotated.status).toBe(200);
    const rotatedAgain = await api(app, 'POST', `/v1/webhook-endpoints/${id}/rotate-secret`, {
      ...asAdmin(org),
      body: {},
      headers: withKey('rot'),
    });
    expect([rotatedAgain.status, rotatedAgain.body.details.created.endpoint.id]).toEqual([409, id]);
    expect(JSON.stringify(rotatedAgain.body)).not.toContain(rotated.body.secret);
    await api(app, 'DELETE', `/v1/webhook-endpoints/${id}`, asAdmin(org));
    const replay = await api(app, 'POST', '/v1/webhook-endpoints', { ...asAdmin(org), body, headers: withKey('hook-once') });
    expect(replay.status).toBe(409);
    expect(JSON.stringify(replay.body)).not.toContain(created.body.secret);
    const text = await storedText(app);
    for (const secret of [created.body.secret, rotated.body.secret]) expect(text).not.toContain(secret);
    expect(text).not.toContain('whsec_');
  });

  it('channel keys, a partner account’s publishable key and an embed token are not replayed either', async () => {
    const channel = await createChannel(app, org);
    const cases: Array<{ path: string; body: unknown; secret: (answer: any) => string; token?: string }> = [
      { path: `/v1/sales-channels/${channel.channelId}/keys`, body: { kind: 'secret' }, secret: (a) => a.key },
      {
        path: '/v1/partner/accounts',
        body: { name: `Partner ${tag()}`, salesChannel: { name: 'Partner shop', slug: `p-${tag()}` } },
        secret: (a) => a.publishableKey.key,
      },
      { path: '/v1/embed/sessions', body: { accountId: org.account.id, scopes: ['events.read'] }, secret: (a) => a.token },
    ];
    for (const { path, body, secret } of cases) {
      const first = await api(app, 'POST', path, { ...asAdmin(org), body, headers: withKey(`once-${path}`) });
      expect(first.status, `${path}: ${JSON.stringify(first.body)}`).toBe(201);
      const again = await api(app, 'POST', path, { ...asAdmin(org), body, headers: withKey(`once-${path}`) });
      expect([again.status, again.body.code], path).toEqual([409, 'CONFLICT']);
      expect(JSON.stringify(again.body)).not.toContain(secret(first.body));
      expect(await storedText(app)).not.toContain(secret(first.body));
    }
  });

  it('a refresh token presented twice under one key is caught as reuse: the family is revoked', async () => {
    const session = await signIn(app, org.email, org.password, org.slug);
    const first = await api(app, 'POST', '/v1/auth/refresh', { body: { refreshToken: session.refreshToken }, headers: withKey('K3') });
    expect(first.status).toBe(200);
    const reused = await api(app, 'POST', '/v1/auth/refresh', { body: { refreshToken: session.refreshToken }, headers: withKey('K3') });
    expect([reused.status, reused.headers.get('idempotent-replayed')]).toEqual([401, null]);
    const rotated = await api(app, 'POST', '/v1/auth/refresh', { body: { refreshToken: first.body.refreshToken } });
    expect(rotated.status).toBe(401);
    expect(await storedText(app)).not.toContain(first.body.accessToken);
  });

  it('sign-in answers are never stored: a second sign-in with the key signs in again', async () => {
    const body = { email: org.email, password: org.password };
    const a = await api(app, 'POST', '/v1/auth/login', { body, headers: withKey('login-key') });
    const b = await api(app, 'POST', '/v1/auth/login', { body, headers: withKey('login-key') });
    expect([a.status, b.status, b.headers.get('idempotent-replayed')]).toEqual([200, 200, null]);
    expect(b.body.refreshToken).not.toBe(a.body.refreshToken);
  });

  it('every route whose answer holds a key, secret or token says how it is replayed', () => {
    const SECRET_FIELDS = /^(key|secret|token|accessToken|refreshToken|customerToken)$/;
    const secretPaths = (schema: z.ZodType | undefined, prefix = ''): string[] => {
      if (!schema) return [];
      const def = (schema as unknown as { def: { type: string; innerType?: z.ZodType; element?: z.ZodType } }).def;
      if (def.innerType) return secretPaths(def.innerType, prefix);
      if (def.type === 'array') return secretPaths(def.element, `${prefix}[]`);
      const shape = (schema as unknown as { shape?: Record<string, z.ZodType> }).shape;
      if (!shape) return [];
      return Object.entries(shape).flatMap(([name, field]) =>
        SECRET_FIELDS.test(name) ? [`${prefix}${name}`] : secretPaths(field, `${prefix}${name}.`),
      );
    };
    const undeclared = [...v1Routes, ...liveRoutes]
      .filter((route) => route.method === 'POST' && secretPaths(route.response).length > 0 && route.replay === undefined)
      .map((route) => `${route.method} ${route.path}`);
    expect(undeclared).toEqual([]);
    for (const route of [...v1Routes, ...liveRoutes]) {
      if (typeof route.replay === 'object') expect(secretPaths(route.response), route.path).toEqual([...route.replay.secrets]);
    }
  });
});

describe('the namespace of a key', () => {
  const app = useTestApp();
  let org: TestOrganisation;
  let catalogue: SeededCatalogue;
  beforeAll(async () => {
    org = await createOrganisation(app, 'idem-ns');
    catalogue = await seedCatalogue(app, org);
  });

  it('two anonymous shoppers with one key and body get a cart each; a session replays only its own', async () => {
    const body = { items: [cartLine(catalogue)] };
    const [alice, bob] = [storefront(app, catalogue.channel.publishable), storefront(app, catalogue.channel.publishable)];
    const a = await alice.call('POST', '/sales/carts', body, withKey('cart-k'));
    const b = await bob.call('POST', '/sales/carts', body, withKey('cart-k'));
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.body.cart.id).not.toBe(a.body.cart.id);
    expect(b.headers.get('x-live-session')).not.toBe(a.headers.get('x-live-session'));
    const bobReads = await bob.call('GET', `/sales/carts/${a.body.cart.id}`);
    expect(bobReads.status).toBe(404);
    // Within a session, the key is the shopper's own: a retry is the same cart, another session's is not.
    const second = await alice.call('POST', '/sales/carts', body, withKey('cart-2'));
    const retried = await alice.call('POST', '/sales/carts', body, withKey('cart-2'));
    expect([retried.status, retried.headers.get('idempotent-replayed'), retried.body.cart.id]).toEqual([201, 'true', second.body.cart.id]);
    const bobSame = await bob.call('POST', '/sales/carts', body, withKey('cart-2'));
    expect(bobSame.body.cart.id).not.toBe(second.body.cart.id);
    expect(bobSame.headers.get('idempotent-replayed')).toBeNull();
  });

  it('a session the service did not give out to this channel keeps no key: made up, or another shop’s cookie', async () => {
    const body = { items: [cartLine(catalogue)] };
    const madeUp = `ses_${randomBytes(8).toString('hex')}`;
    const asShopper = (session: Record<string, string>) =>
      api(app, 'POST', '/live/sales/carts', {
        body,
        headers: withKey('first-cart', { 'x-channel-key': catalogue.channel.publishable, ...session, ...from(newClientAddress()) }),
      });
    const alice = await asShopper({ 'x-live-session': madeUp });
    const mallory = await asShopper({ 'x-live-session': madeUp });
    expect([alice.status, mallory.status]).toEqual([201, 201]);
    expect(mallory.headers.get('idempotent-replayed')).toBeNull();
    expect(mallory.headers.get('x-live-session')).not.toBe(alice.headers.get('x-live-session'));
    expect(mallory.body.cart.id).not.toBe(alice.body.cart.id);

    // Another shop's session in the host-wide cookie: an answer planted under it is not the victim's.
    const other = await seedCatalogue(app, await createOrganisation(app, 'idem-ns-other'));
    const elsewhere = storefront(app, other.channel.publishable);
    await elsewhere.call('POST', '/sales/carts', { items: [] });
    const foreign = elsewhere.state.session!;
    const planted = await asShopper({ 'x-live-session': foreign });
    const victim = await asShopper({ cookie: `live_session=${foreign}` });
    expect(victim.headers.get('idempotent-replayed')).toBeNull();
    expect(victim.headers.get('x-live-session')).not.toBe(planted.headers.get('x-live-session'));
  });

  it('a server with the secret key creating carts for two shoppers under one key gets a cart for each session', async () => {
    const [first, second] = [storefront(app, catalogue.channel.publishable), storefront(app, catalogue.channel.publishable)];
    await first.call('POST', '/sales/carts', { items: [] });
    await second.call('POST', '/sales/carts', { items: [] });
    const body = { items: [cartLine(catalogue)] };
    const forShopper = (session: string) =>
      api(app, 'POST', '/live/sales/carts', {
        body,
        headers: withKey('server-cart', { 'x-channel-key': catalogue.channel.secret, 'x-live-session': session }),
      });
    const a = await forShopper(first.state.session!);
    const b = await forShopper(second.state.session!);
    expect([a.status, b.status, b.headers.get('idempotent-replayed')]).toEqual([201, 201, null]);
    expect([a.headers.get('x-live-session'), b.headers.get('x-live-session')]).toEqual([first.state.session, second.state.session]);
    expect(b.body.cart.id).not.toBe(a.body.cart.id);
    // The same shopper again is the first answer.
    const again = await forShopper(first.state.session!);
    expect([again.headers.get('idempotent-replayed'), again.body.cart.id]).toEqual(['true', a.body.cart.id]);
  });

  it('a magic-link code exchanged under a key is not exchanged again by a replay', async () => {
    const email = `shopper-${tag()}@example.com`;
    await buy(app, catalogue.channel.publishable, catalogue, 1, email);
    const code = await magicLinkCode(app, email, { channelKey: catalogue.channel.publishable });
    const headers = withKey('exchange', { 'x-channel-key': catalogue.channel.publishable });
    const first = await api(app, 'POST', '/live/sales/customer-tokens', { body: { code }, headers });
    const again = await api(app, 'POST', '/live/sales/customer-tokens', { body: { code }, headers });
    expect(first.status).toBe(201);
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([409, null]);
    expect(JSON.stringify(again.body)).not.toContain(first.body.customerToken);
    expect(await storedText(app)).not.toContain(first.body.customerToken);
  });

  it('one person in two organisations: a key used in A and then in B runs in B', async () => {
    const b = await bootstrapOrganisation(app().runtime.db, {
      orgSlug: `idem-b-${tag()}`,
      orgName: 'B',
      email: org.email,
      password: org.password,
    });
    const { accessToken } = await signIn(app, org.email, org.password);
    const body = (accountId: string) => ({ accountId, name: 'Twin hall' });
    const inA = await api(app, 'POST', '/v1/venues', {
      token: accessToken,
      org: org.slug,
      body: body(org.account.id),
      headers: withKey('twin'),
    });
    const inB = await api(app, 'POST', '/v1/venues', {
      token: accessToken,
      org: b.organisation.slug,
      body: body(b.account.id),
      headers: withKey('twin'),
    });
    expect([inA.status, inB.status, inB.headers.get('idempotent-replayed')]).toEqual([201, 201, null]);
    expect(inB.body.venue.organisationId).toBe(b.organisation.id);
    expect(await app().runtime.db.venue.count({ where: { organisationId: b.organisation.id, name: 'Twin hall' } })).toBe(1);
  });

  it('the same key under another API version is another request: 409, never run again nor answered in the other version', async () => {
    const versions = await api(app, 'GET', '/v1/meta/versions');
    const supported = (versions.body.versions as Array<{ date: string; status: string }>)
      .filter((v) => v.status !== 'sunset')
      .map((v) => v.date);
    expect(supported.length).toBeGreaterThan(1);
    const name = `Versioned ${tag()}`;
    const body = { accountId: org.account.id, name };
    const send = (version: string) =>
      api(app, 'POST', '/v1/venues', { ...asAdmin(org), body, headers: withKey(`per-version-${name}`, { 'service-version': version }) });
    const first = await send(supported[0]!);
    const other = await send(supported[1]!);
    const again = await send(supported[0]!);
    expect([first.status, first.headers.get('service-version')]).toEqual([201, supported[0]]);
    expect([other.status, other.body.code]).toEqual([409, 'CONFLICT']);
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    expect(await app().runtime.db.venue.count({ where: { organisationId: org.organisation.id, name } })).toBe(1);
  });

  it('a retry after the organisation pinned another version is refused, not run again, on /v1 and /graphql', async () => {
    const pinned = await createOrganisation(app, 'idem-pin');
    const versions = await api(app, 'GET', '/v1/meta/versions');
    const usable = (versions.body.versions as Array<{ date: string; status: string }>)
      .filter((v) => v.status !== 'sunset')
      .map((v) => v.date);
    const pin = async (version: string) =>
      expect((await api(app, 'PATCH', '/v1/organisation', { ...asAdmin(pinned), body: { apiVersion: version } })).status).toBe(200);
    await pin(usable.at(-2)!);
    const name = `Pinned ${tag()}`;
    const rest = () =>
      api(app, 'POST', '/v1/venues', { ...asAdmin(pinned), body: { accountId: pinned.account.id, name }, headers: withKey('pinned-rest') });
    const graph = () =>
      postGraphql(
        app,
        {
          query: 'mutation($input: CreateVenueInput!) { createVenue(input: $input) { venue { id } } }',
          variables: { input: { accountId: pinned.account.id, name } },
        },
        { ...asAdmin(pinned), headers: withKey('pinned-graphql') },
      );
    expect((await rest()).status).toBe(201);
    expect((await graph()).body.data.createVenue.venue.id).toMatch(/^vnu_/);
    await pin(usable.at(-1)!);
    const [restRetry, graphRetry] = [await rest(), await graph()];
    expect([restRetry.status, restRetry.body.code]).toEqual([409, 'CONFLICT']);
    expect(graphRetry.body.errors[0].extensions.code).toBe('CONFLICT');
    expect(await app().runtime.db.venue.count({ where: { organisationId: pinned.organisation.id, name } })).toBe(2);
  });
});

describe('bounded storage', () => {
  const app = useTestApp({ IDEMPOTENCY_KEYS_PER_CREDENTIAL: '5', IDEMPOTENCY_KEYS_PER_ADDRESS: '3' });
  let org: TestOrganisation;
  let catalogue: SeededCatalogue;
  beforeAll(async () => {
    org = await createOrganisation(app, 'idem-quota');
    catalogue = await seedCatalogue(app, org);
  });

  it('anonymous refused requests leave no row behind', async () => {
    const before = await storedText(app);
    const client = newClientAddress();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, n) =>
        api(app, 'POST', '/v1/venues', { org: org.slug, body: { name: 'x' }, headers: withKey(`anon-${n}`, from(client)) }),
      ),
    );
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([401]));
    // A storefront shopper's refused cart is not kept either.
    const shop = storefront(app, catalogue.channel.publishable);
    await shop.call('POST', '/sales/carts', { items: [] }, from(client));
    const refused = await shop.call(
      'POST',
      '/sales/carts',
      { items: [{ ...cartLine(catalogue), quantity: 0 }] },
      withKey('bad-cart', from(client)),
    );
    expect(refused.status).toBe(400);
    expect(await storedText(app)).toBe(before);
  });

  it('a credential stores at most its quota of keys a day: beyond it 429 with Retry-After, and nothing runs', async () => {
    const key = await createApiKey(app, org, ['venues.write', 'venues.read']);
    const answers = [];
    for (let n = 0; n < 7; n += 1) {
      answers.push(
        await api(app, 'POST', '/v1/venues', {
          token: key.key,
          org: org.slug,
          body: { accountId: org.account.id, name: `Quota ${n}` },
          headers: withKey(`quota-${n}`),
        }),
      );
    }
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 201, 201, 429, 429]);
    expect(answers[5]!.body.code).toBe('RATE_LIMITED');
    expect(Number(answers[5]!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await app().runtime.db.venue.count({ where: { name: { in: ['Quota 5', 'Quota 6'] } } })).toBe(0);
    // A replay of a stored key is not a new key: still answered.
    const replay = await api(app, 'POST', '/v1/venues', {
      token: key.key,
      org: org.slug,
      body: { accountId: org.account.id, name: 'Quota 0' },
      headers: withKey('quota-0'),
    });
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
  });

  it('a key sent twice at once is counted whichever twin takes it: beyond the quota neither runs', async () => {
    const key = await createApiKey(app, org, ['venues.write', 'venues.read']);
    const send = (k: string, name: string) =>
      api(app, 'POST', '/v1/venues', { token: key.key, org: org.slug, body: { accountId: org.account.id, name }, headers: withKey(k) });
    for (let n = 0; n < 5; n += 1) expect((await send(`twin-fill-${n}`, `Twin fill ${n}`)).status).toBe(201);
    const statuses: number[] = [];
    for (let n = 0; n < 6; n += 1) {
      const pair = await Promise.all([send(`twin-${n}`, `Twin pair ${n}`), send(`twin-${n}`, `Twin pair ${n}`)]);
      statuses.push(...pair.map((answer) => answer.status));
    }
    expect(new Set(statuses)).toEqual(new Set([429]));
    const ran = await app().runtime.db.venue.count({ where: { organisationId: org.organisation.id, name: { startsWith: 'Twin pair' } } });
    expect(ran).toBe(0);
  });

  it('storefront sessions from one client address share that address’s quota', async () => {
    const client = newClientAddress();
    const statuses = [];
    for (let n = 0; n < 5; n += 1) {
      const shop = storefront(app, catalogue.channel.publishable);
      await shop.call('POST', '/sales/carts', { items: [] }, from(client));
      statuses.push((await shop.call('POST', '/sales/carts', { items: [] }, withKey(`s-${n}`, from(client)))).status);
    }
    expect(statuses).toEqual([201, 201, 201, 429, 429]);
  });
});

describe('waiting for a running request', () => {
  const app = useTestApp({ IDEMPOTENCY_CLAIM_TIMEOUT: '1s' });
  let org: TestOrganisation;
  let locker: pg.Client;
  beforeAll(async () => {
    org = await createOrganisation(app, 'idem-wait');
    locker = new pg.Client({ connectionString: app().database.url });
    await locker.connect();
  });
  afterAll(async () => {
    await locker.end();
  });

  /** Holds the account's row so an event created on it waits (its foreign key check) until `release`. */
  async function holdAccount(): Promise<() => Promise<void>> {
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [org.account.id]);
    return async () => void (await locker.query('COMMIT'));
  }

  const createEvent = (key: string, name: string) =>
    api(app, 'POST', '/v1/events', { ...asAdmin(org), body: { accountId: org.account.id, name, timezone: 'UTC' }, headers: withKey(key) });

  it('a request running longer than the claim timeout keeps its claim: a retry waits and gets its answer', async () => {
    const release = await holdAccount();
    const first = createEvent('long', 'Long running');
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const retry = createEvent('long', 'Long running');
    await new Promise((resolve) => setTimeout(resolve, 500));
    await release();
    const [a, b] = await Promise.all([first, retry]);
    expect([a.status, b.status, b.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
    expect(b.body.event.id).toBe(a.body.event.id);
    expect(await app().runtime.db.event.count({ where: { organisationId: org.organisation.id, name: 'Long running' } })).toBe(1);
  });

  it('waiters do not poll the database in a tight loop, and only so many wait for one key', async () => {
    const scans = async () =>
      (
        await query<{ n: string }>(
          app,
          `SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0) AS n FROM pg_stat_user_tables WHERE relname = 'idempotency_keys'`,
        )
      )[0]!.n;
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const before = Number(await scans());
    const release = await holdAccount();
    const first = createEvent('crowd', 'Crowded');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const waiters = Array.from({ length: 30 }, () => createEvent('crowd', 'Crowded'));
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await release();
    const answers = await Promise.all([first, ...waiters]);
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(21);
    // Beyond the waiters one key may have, a retry is told to come back, at once.
    expect(statuses.filter((s) => s === 409).length).toBeGreaterThanOrEqual(1);
    expect(new Set(answers.filter((a) => a.status === 201).map((a) => a.body.event.id)).size).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    // 20 waiters polling every 50 ms for 3 s would be ~1,200 reads; waiting in memory costs a few each.
    expect(Number(await scans()) - before).toBeLessThan(150);
  });
});

describe('a running request whose process has no connection free', () => {
  let pair: AppPair;
  let org: TestOrganisation;
  let locker: pg.Client;
  beforeAll(async () => {
    pair = await startTwoApps({ IDEMPOTENCY_CLAIM_TIMEOUT: '1s', DATABASE_POOL_SIZE: '2' });
    org = await createOrganisation(pair.a, 'idem-starved');
    locker = new pg.Client({ connectionString: pair.database.url });
    await locker.connect();
  });
  afterAll(async () => {
    await locker?.end();
    await pair?.stop();
  });

  it('keeps its claim: a retry on another process waits and gets its answer, not "interrupted"', async () => {
    const createEvent = (app: AppRef, key: string, name: string) =>
      api(app, 'POST', '/v1/events', {
        ...asAdmin(org),
        body: { accountId: org.account.id, name, timezone: 'UTC' },
        headers: withKey(key),
      });
    // Every connection of the first process waits on the account's row, and a third request on them.
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [org.account.id]);
    const first = createEvent(pair.a, 'starved', 'Starved');
    const others = [createEvent(pair.a, 'starved-2', 'Beside'), createEvent(pair.a, 'starved-3', 'Beside')];
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const retry = createEvent(pair.b, 'starved', 'Starved');
    await new Promise((resolve) => setTimeout(resolve, 500));
    await locker.query('COMMIT');
    const [a, b] = await Promise.all([first, retry, ...others]);
    expect([a.status, b.status, b.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
    expect(b.body.event.id).toBe(a.body.event.id);
    expect(await pair.a.runtime.db.event.count({ where: { organisationId: org.organisation.id, name: 'Starved' } })).toBe(1);
  });
});

describe('work done, answer not yet stored', () => {
  const app = useTestApp({ IDEMPOTENCY_CLAIM_TIMEOUT: '1s' });
  let org: TestOrganisation;
  beforeAll(async () => {
    org = await createOrganisation(app, 'idem-store');
    // The database refuses to mark a key answered the next `refuseAnswers(n)` times (a sequence
    // counts them: it moves even when the refusal rolls the statement back).
    await query(app, `CREATE SEQUENCE idem_refusals`);
    await query(app, `CREATE TABLE idem_refuse_until (n bigint NOT NULL)`);
    await query(
      app,
      `CREATE FUNCTION idem_refuse_answer() RETURNS trigger AS $$
       BEGIN
         IF NEW.state = 'done' AND nextval('idem_refusals') <= coalesce((SELECT max(n) FROM idem_refuse_until), 0) THEN
           RAISE EXCEPTION 'refused by the test';
         END IF;
         RETURN NEW;
       END $$ LANGUAGE plpgsql`,
    );
    await query(
      app,
      `CREATE TRIGGER idem_refuse_answer BEFORE UPDATE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION idem_refuse_answer()`,
    );
  });
  afterAll(async () => {
    await query(app, `DROP TRIGGER idem_refuse_answer ON idempotency_keys`);
  });

  const createVenue = (key: string, name: string) =>
    api(app, 'POST', '/v1/venues', { ...asAdmin(org), body: { accountId: org.account.id, name }, headers: withKey(key) });
  const refuseAnswers = async (times: number) => {
    await query(app, `DELETE FROM idem_refuse_until`);
    await query(app, `INSERT INTO idem_refuse_until SELECT last_value + ${times} FROM idem_refusals`);
  };

  it('an answer the database refused once is stored on a later try: a retry after the claim timeout replays it', async () => {
    await refuseAnswers(1);
    const first = await createVenue('stored-late', 'Stored late');
    expect(first.status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const retry = await createVenue('stored-late', 'Stored late');
    expect([retry.status, retry.headers.get('idempotent-replayed'), retry.body.venue.id]).toEqual([201, 'true', first.body.venue.id]);
    expect(await app().runtime.db.venue.count({ where: { name: 'Stored late' } })).toBe(1);
  });

  it('a request whose answer could never be stored is not run again: a retry is told it was interrupted', async () => {
    await refuseAnswers(1_000);
    const first = await createVenue('never-stored', 'Never stored');
    // The work was done: its answer is still sent.
    expect(first.status).toBe(201);
    await refuseAnswers(0);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const retry = await createVenue('never-stored', 'Never stored');
    expect(retry.status).toBe(409);
    expect(retry.body.code).toBe('CONFLICT');
    expect(retry.body.error).toMatch(/interrupted/);
    expect(await app().runtime.db.venue.count({ where: { name: 'Never stored' } })).toBe(1);
  });
});

describe('credential before body', () => {
  const app = useTestApp();
  let org: TestOrganisation;
  beforeAll(async () => {
    org = await createOrganisation(app, 'idem-cred');
  });

  it('an API key on a signed-in-only route is refused for what it is, whatever it sent', async () => {
    const { key } = await createApiKey(app, org, ['api_keys.write', 'api_keys.read']);
    for (const body of [{ name: '' }, { scopes: 'nope' }, {}]) {
      const res = await api(app, 'POST', '/v1/api-keys', { token: key, org: org.slug, body });
      expect([res.status, res.body.code], JSON.stringify(body)).toEqual([403, 'SIGNED_IN_USER_REQUIRED']);
    }
    const badKey = await api(app, 'POST', '/v1/api-keys', { token: key, org: org.slug, body: {}, headers: withKey('has space') });
    expect([badKey.status, badKey.body.code]).toEqual([403, 'SIGNED_IN_USER_REQUIRED']);
  });

  it('a person without the permission is refused before their body is judged; no credential is 401', async () => {
    const staff = await staffWithoutRights(app, org);
    const res = await api(app, 'POST', '/v1/venues', { token: staff.token, org: org.slug, body: { name: 42 } });
    expect([res.status, res.body.code]).toEqual([403, 'FORBIDDEN']);
    const anonymous = await api(app, 'POST', '/v1/venues', {
      org: org.slug,
      body: { name: 42 },
      headers: withKey(randomBytes(2).toString('hex')),
    });
    expect(anonymous.status).toBe(401);
  });
});
