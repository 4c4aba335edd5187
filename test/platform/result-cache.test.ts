import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { asAdmin, createApiKey } from '../support/credentials.ts';
import { api, createAccount, createOrganisation, graphql, type TestOrganisation } from '../support/fixtures.ts';
import { parse } from 'graphql';
import { ResultCache } from '../../src/http/result-cache.ts';

/** The catalogue result cache (src/http/result-cache.ts) must never change what a caller sees. */
const app = useTestApp();
let org: TestOrganisation;
let other: TestOrganisation;
beforeAll(async () => {
  [org, other] = await Promise.all([createOrganisation(app, 'cache'), createOrganisation(app, 'cacheother')]);
});

const key = async (o: TestOrganisation, accountId?: string) => (await createApiKey(app, o, ['events.*'], { accountId })).key;

describe('cached catalogue reads', () => {
  it('reads its own writes at once: create, update and delete show on the next list', async () => {
    const admin = asAdmin(org);
    expect((await api(app, 'GET', '/v1/events', admin)).body.events).toEqual([]);
    const created = await api(app, 'POST', '/v1/events', { ...admin, body: { accountId: org.account.id, name: 'First', timezone: 'UTC' } });
    const listed = await api(app, 'GET', '/v1/events', admin);
    expect(listed.body.events.map((e: { name: string }) => e.name)).toEqual(['First']);
    await api(app, 'PATCH', `/v1/events/${created.body.event.id}`, { ...admin, body: { name: 'Renamed' } });
    expect((await api(app, 'GET', '/v1/events', admin)).body.events[0].name).toBe('Renamed');
    const viaGraphql = await graphql(app, '{ events { nodes { name } } }', {}, admin);
    expect(viaGraphql.body.data.events.nodes).toEqual([{ name: 'Renamed' }]);
    await api(app, 'DELETE', `/v1/events/${created.body.event.id}`, admin);
    expect((await api(app, 'GET', '/v1/events', admin)).body.events).toEqual([]);
    expect((await graphql(app, '{ events { nodes { name } } }', {}, admin)).body.data.events.nodes).toEqual([]);
  });

  it('never shares a result between callers with different rights, or between organisations', async () => {
    const second = await createAccount(app, org, 'Other account');
    const admin = asAdmin(org);
    await api(app, 'POST', '/v1/events', { ...admin, body: { accountId: org.account.id, name: 'Main event', timezone: 'UTC' } });
    await api(app, 'POST', '/v1/events', { ...admin, body: { accountId: second.id, name: 'Second event', timezone: 'UTC' } });
    const mainKey = await key(org, org.account.id);
    const secondKey = await key(org, second.id);
    const theirKey = await key(other);
    const names = async (token: string, slug: string) =>
      (await api(app, 'GET', '/v1/events?limit=20', { token, org: slug })).body.events.map((e: { name: string }) => e.name);
    for (let round = 0; round < 2; round++) {
      expect(await names(mainKey, org.slug)).toEqual(['Main event']);
      expect(await names(secondKey, org.slug)).toEqual(['Second event']);
      expect(await names(theirKey, other.slug)).toEqual([]);
      expect((await names(org.adminToken, org.slug)).sort()).toEqual(['Main event', 'Second event']);
    }
  });

  it('answers a refused caller with its refusal even right after an allowed caller cached the list', async () => {
    const admin = asAdmin(org);
    await api(app, 'GET', '/v1/events', admin);
    const noScope = await createApiKey(app, org, ['roles.read']);
    expect((await api(app, 'GET', '/v1/events', { token: noScope.key, org: org.slug })).status).toBe(404);
  });
});

describe('the result cache is bounded', () => {
  it('keeps no result past its expiry and at most 1,000, however many distinct queries come', async () => {
    const cache = new ResultCache(50);
    const result = { data: { events: [] } };
    for (let i = 0; i < 1_500; i += 1) cache.set(`org_1|key:${i}`, 'org_1', result);
    expect(cache.size).toBe(1_000);
    expect(cache.get('org_1|key:0')).toBeUndefined(); // the oldest went first
    expect(cache.get('org_1|key:1499')).toBe(result);
    await new Promise((resolve) => setTimeout(resolve, 60));
    // Past the TTL the next result drops every expired one, not only the one it replaces.
    cache.set('org_1|key:new', 'org_1', result);
    expect(cache.size).toBe(1);
    expect(cache.get('org_1|key:new')).toBe(result);
  });
});

describe('the result cache keeps only what is asked for again', () => {
  it('stores a result at its second ask within the TTL and answers the third from memory', async () => {
    const cache = new ResultCache(200);
    const document = parse('{ events { nodes { id } } }');
    const caller = { principal: null, organisation: { id: 'org_1' }, apiVersion: '2026-01-01' };
    let executions = 0;
    const ask = (variables: Record<string, unknown>) =>
      cache.run({ document, variableValues: variables, contextValue: caller }, () => {
        executions += 1;
        return { data: { events: { nodes: [{ id: `run ${executions}` }] } } };
      });
    const first = await ask({ page: 1 });
    expect(cache.size).toBe(0); // asked once: only its key is kept
    const second = await ask({ page: 1 });
    expect(second).not.toBe(first);
    expect(cache.size).toBe(1);
    expect(await ask({ page: 1 })).toBe(second);
    expect(executions).toBe(2);
    await ask({ page: 2 }); // another query: asked once, not kept
    expect(cache.size).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 250));
    // Past the TTL the earlier asks count no more: asked once again, not kept.
    await ask({ page: 2 });
    expect(executions).toBe(4);
    expect(cache.get(cache.keyFor(document, null, { page: 2 }, caller)!)).toBeUndefined();
  });

  it('caches no query whose key would be long (large variables), and keys a document by a digest of its text', () => {
    const cache = new ResultCache(200);
    const document = parse(`{ events { nodes { id ${'name '.repeat(2_000)} } } }`);
    const caller = { principal: null, organisation: { id: 'org_1' }, apiVersion: '2026-01-01' };
    const key = cache.keyFor(document, null, { page: 1 }, caller)!;
    expect(key.length).toBeLessThan(200);
    expect(cache.keyFor(document, null, { q: 'x'.repeat(5_000) }, caller)).toBeNull();
  });
});
