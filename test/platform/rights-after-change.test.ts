import http from 'node:http';
import { createClient, type ExecutionResult } from 'graphql-sse';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createApiKey } from '../support/credentials.ts';
import { api, createAccount, createOrganisation, createStaffUser, systemRole, type TestOrganisation } from '../support/fixtures.ts';
import { createCatalogue, createChannel, createEvent, placeOrder, seedCatalogue } from '../support/sales.ts';

/**
 * A request authenticates on its headers; its body, a connection or a lock can keep it waiting
 * while an administrator revokes its key, removes a role or changes a channel, and that change
 * answers first. The work then runs with the rights the credential holds when it starts, and
 * nothing computed with the old ones is kept for, or shared with, a later request
 * (src/auth/current-rights.ts).
 */
const app = useTestApp();
let org: TestOrganisation;
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ids = (res: { body: any }) => (res.body.events as Array<{ id: string }>).map((event) => event.id).sort();

/** A request whose headers go now and whose JSON body goes when `release` is called. */
function slowRequest(method: string, path: string, headers: Record<string, string>, body = '{}') {
  const url = new URL(app().url + path);
  let release!: () => void;
  const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.flushHeaders();
    release = () => req.end(body);
  });
  return { answer, release: () => release() };
}

beforeAll(async () => {
  org = await createOrganisation(app, 'rights-moved');
  while (!app().runtime.notices.listening) await wait(20);
});

describe('a request that authenticated before a change and runs after it', () => {
  it('cannot write with a key revoked while its body was on its way', async () => {
    const { key, apiKey } = await createApiKey(app, org, ['events.write', 'events.read']);
    const body = JSON.stringify({ accountId: org.account.id, name: 'After the revoke', timezone: 'Europe/London' });
    const pending = slowRequest('POST', '/v1/events', { authorization: `Bearer ${key}`, 'x-service-org': org.slug }, body);
    await wait(200);
    const revoked = await api(app, 'POST', `/v1/api-keys/${apiKey.id}/revoke`, { token: org.adminToken, org: org.slug });
    expect(revoked.status).toBe(200);
    pending.release();
    const created = await pending.answer;
    expect(created.status).toBe(401);
    expect(created.body.code).toBe('API_KEY_REVOKED');
    const written = await app().runtime.db.event.count({ where: { organisationId: org.organisation.id, name: 'After the revoke' } });
    expect(written).toBe(0);
  });

  /** Sends `body` to `path` as a person holding `role`, whose role is removed while the body is on its way. */
  async function writeAfterRoleRemoval(role: 'event_manager' | 'organisation_admin', path: string, body: unknown) {
    const person = await createStaffUser(app, org, [{ roleId: systemRole(org, role), accountId: org.account.id }], role);
    const pending = slowRequest('POST', path, { authorization: `Bearer ${person.token}`, 'x-service-org': org.slug }, JSON.stringify(body));
    await wait(200);
    const removed = await api(app, 'DELETE', `/v1/user-account-roles/${person.assignments[0]!.id}`, {
      token: org.adminToken,
      org: org.slug,
    });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    pending.release();
    return pending.answer;
  }

  it('cannot write with a role removed while its body was on its way', async () => {
    const created = await writeAfterRoleRemoval('event_manager', '/v1/events', {
      accountId: org.account.id,
      name: 'After the removal',
      timezone: 'Europe/London',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(403);
    const written = await app().runtime.db.event.count({ where: { organisationId: org.organisation.id, name: 'After the removal' } });
    expect(written).toBe(0);
  });

  it('cannot make an account with an organisation role removed while its body was on its way', async () => {
    const created = await writeAfterRoleRemoval('organisation_admin', '/v1/accounts', { name: 'After the removal' });
    expect(created.status, JSON.stringify(created.body)).toBe(403);
    expect(await app().runtime.db.account.count({ where: { organisationId: org.organisation.id, name: 'After the removal' } })).toBe(0);
  });

  it('leaves no cached result of the removed role for the next request', async () => {
    const second = await createAccount(app, org);
    const hidden = await createEvent(app, org, { accountId: second.id, name: 'On the second account' });
    const visible = await createEvent(app, org, { accountId: org.account.id, name: 'On the first account' });
    const viewer = systemRole(org, 'viewer');
    const user = await createStaffUser(app, org, [
      { roleId: viewer, accountId: org.account.id },
      { roleId: viewer, accountId: second.id },
    ]);
    const onSecond = user.assignments.find((assignment) => assignment.accountId === second.id)!;
    const list = () => api(app, 'GET', '/v1/events', { token: user.token, org: org.slug });
    // The first ask leaves the key: the next one would be kept (admission on second sight).
    expect(ids(await list())).toEqual([hidden.id, visible.id].sort());

    const early = slowRequest('GET', '/v1/events', { authorization: `Bearer ${user.token}`, 'x-service-org': org.slug });
    await wait(100);
    const removed = await api(app, 'DELETE', `/v1/user-account-roles/${onSecond.id}`, { token: org.adminToken, org: org.slug });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    early.release();
    const earlyAnswer = await early.answer;
    expect(earlyAnswer.status).toBe(200);
    expect(ids(earlyAnswer)).toEqual([visible.id]);
    expect(ids(await list())).toEqual([visible.id]);
  });

  it('shares no listings page read with the channel as it was', async () => {
    const shop = await createOrganisation(app, 'rights-moved-shop');
    const kept = await createCatalogue(app, shop, { name: 'Kept' });
    const dropped = await createCatalogue(app, shop, { name: 'Dropped' });
    const channel = await createChannel(app, shop, shop.account.id, { sellsAllEvents: true });
    const list = () => api(app, 'GET', '/live/sales/listings', { headers: { 'x-channel-key': channel.publishable } });
    expect(ids(await list())).toEqual([kept.eventId, dropped.eventId].sort());
    await wait(app().runtime.config.LISTINGS_SHARED_FOR + 50);

    const early = slowRequest('GET', '/live/sales/listings', { 'x-channel-key': channel.publishable });
    await wait(100);
    const changed = await api(app, 'PATCH', `/v1/sales-channels/${channel.channelId}`, {
      token: shop.adminToken,
      org: shop.slug,
      body: { sellsAllEvents: false, eventIds: [kept.eventId] },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    early.release();
    const earlyAnswer = await early.answer;
    expect(earlyAnswer.status).toBe(200);
    expect(ids(earlyAnswer)).toEqual([kept.eventId]);
    expect(ids(await list())).toEqual([kept.eventId]);
  });

  it('streams nothing to a subscription whose role went before it started', async () => {
    const catalogue = await seedCatalogue(app, org);
    const user = await createStaffUser(app, org, [{ roleId: systemRole(org, 'viewer'), accountId: org.account.id }], 'leaving');
    const results: ExecutionResult<Record<string, any>, unknown>[] = [];
    const locker = new pg.Client({ connectionString: app().database.url });
    const remover = new pg.Client({ connectionString: app().database.url });
    await Promise.all([locker.connect(), remover.connect()]);
    const client = createClient({
      url: `${app().url}/graphql`,
      headers: { authorization: `Bearer ${user.token}`, 'x-service-org': org.slug },
      retryAttempts: 0,
    });
    let ended = false;
    try {
      // The subscription authenticates, then waits in its resolver, which reads `accounts`.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE');
      const dispose = client.subscribe<Record<string, any>>(
        {
          query: 'subscription ($a: ID!) { orderChanged(accountId: $a) { change order { id } } }',
          variables: { a: org.account.id },
        },
        {
          next: (result) => void results.push(result),
          error: (error) => {
            results.push({ errors: [{ message: String(error) }] } as never);
            ended = true;
          },
          complete: () => void (ended = true),
        },
      );
      await wait(500);
      // Removed from another connection, as another API process would.
      const before = app().runtime.live.rightsVersion(org.organisation.id);
      await remover.query('DELETE FROM role_assignments WHERE id = $1', [user.assignments[0]!.id]);
      await expect.poll(() => app().runtime.live.rightsVersion(org.organisation.id)).not.toBe(before);
      await locker.query('COMMIT');
      await wait(300);
      const { order } = await placeOrder(app, catalogue.channel, catalogue);
      await wait(1_000);
      dispose();
      expect(results.filter((result) => result.data?.orderChanged?.order?.id === order.id)).toEqual([]);
      expect(ended).toBe(true);
      expect(JSON.stringify(results)).toMatch(/FORBIDDEN/);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await Promise.all([locker.end(), remover.end()]);
      client.dispose();
    }
  });
});
