import { describe, expect, it } from 'vitest';
import { AuthCache, CHANNEL_KEY_TABLES, STAFF_TABLES } from './auth-cache.ts';
import type { Principal } from './principal.ts';

/** Counts loads, answering `value` each time. */
function loader(value: string) {
  let loads = 0;
  return {
    load: () => Promise.resolve({ value: `${value}${++loads}`, organisationId: 'org_a' }),
    get loads() {
      return loads;
    },
  };
}

describe('AuthCache', () => {
  it('forgets an answer on a change notice of a table it depends on, keeps it on any other table', async () => {
    const cache = new AuthCache();
    const key = loader('key');
    const rights = loader('rights');
    const read = () => Promise.all([cache.get('channel-key:h', key.load, CHANNEL_KEY_TABLES), cache.get('user:u', rights.load)]);
    expect(await read()).toEqual(['key1', 'rights1']);
    // An on-sale creates customers by the thousand: the channel key stays cached, the default entry (every table) does not.
    cache.changed('org_a', 'customers');
    expect(await read()).toEqual(['key1', 'rights2']);
    for (const table of ['channel_keys', 'sales_channels', 'accounts', 'organisations']) {
      const before = key.loads;
      cache.changed('org_a', table);
      await read();
      expect(key.loads).toBe(before + 1);
    }
    // Another organisation's change forgets nothing here; forgetOrganisation forgets everything of it.
    const loads = key.loads;
    cache.changed('org_b', 'channel_keys');
    await read();
    expect(key.loads).toBe(loads);
    cache.forgetOrganisation('org_a');
    await read();
    expect(key.loads).toBe(loads + 1);
  });

  it("keeps a person's rights through an on-sale's changes, forgets them when their users, roles or assignments change", async () => {
    const cache = new AuthCache();
    const rights = loader('rights');
    const read = () => cache.get('staff:p:org_a', rights.load, STAFF_TABLES);
    expect(await read()).toBe('rights1');
    for (const table of ['customers', 'channel_keys', 'sales_channels', 'api_keys', 'embed_sessions']) cache.changed('org_a', table);
    expect(await read()).toBe('rights1');
    for (const table of ['users', 'roles', 'role_assignments', 'accounts', 'organisations']) {
      const before = rights.loads;
      cache.changed('org_a', table);
      await read();
      expect(rights.loads).toBe(before + 1);
    }
  });

  it('does not keep an answer loaded while a table it depends on changed (it may predate the change)', async () => {
    const cache = new AuthCache();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let loads = 0;
    const slow = async () => {
      loads += 1;
      await gate;
      return { value: `v${loads}`, organisationId: 'org_a' };
    };
    const pending = cache.get('channel-key:h', slow, CHANNEL_KEY_TABLES);
    cache.changed('org_a', 'channel_keys');
    release();
    expect(await pending).toBe('v1');
    expect(await cache.get('channel-key:h', slow, CHANNEL_KEY_TABLES)).toBe('v2');
    // A change of an unrelated table during the load does not stop it being kept.
    const kept = cache.get('channel-key:k', slow, CHANNEL_KEY_TABLES);
    cache.changed('org_a', 'customers');
    expect(await kept).toBe('v3');
    expect(await cache.get('channel-key:k', slow, CHANNEL_KEY_TABLES)).toBe('v3');
  });

  it('answers the requests that miss an entry at once from one load, unless what it depends on changed meanwhile', async () => {
    const cache = new AuthCache();
    let release!: () => void;
    let gate = new Promise<void>((resolve) => (release = resolve));
    let loads = 0;
    const slow = async () => {
      loads += 1;
      const mine = loads;
      await gate;
      return { value: { load: mine }, organisationId: 'org_a' };
    };
    const read = () => cache.get('channel-key:h', slow, CHANNEL_KEY_TABLES);

    const first = [read(), read(), read()];
    // A change of a table the entry does not depend on: the next request still joins the load.
    cache.changed('org_a', 'customers');
    first.push(read());
    release();
    const answers = await Promise.all(first);
    expect(loads).toBe(1);
    // One answer, the same object, for every request; and kept.
    expect(new Set(answers).size).toBe(1);
    expect(await read()).toBe(answers[0]);

    // A change the entry depends on, while a load runs: a request after it reads again.
    cache.changed('org_a', 'channel_keys');
    gate = new Promise<void>((resolve) => (release = resolve));
    const before = read();
    cache.changed('org_a', 'channel_keys');
    const after = read();
    release();
    expect((await before)!.load).toBe(2);
    expect((await after)!.load).toBe(3);
    expect(loads).toBe(3);
  });

  it('shares no load while entries may not be served, nor a failed one afterwards', async () => {
    let serving = false;
    const cache = new AuthCache(undefined, () => serving);
    const key = loader('key');
    await Promise.all([cache.get('channel-key:h', key.load, CHANNEL_KEY_TABLES), cache.get('channel-key:h', key.load, CHANNEL_KEY_TABLES)]);
    expect(key.loads).toBe(2);

    serving = true;
    let fail = true;
    let loads = 0;
    const flaky = async () => {
      loads += 1;
      await Promise.resolve();
      if (fail) throw new Error('the database went away');
      return { value: 'v', organisationId: 'org_a' };
    };
    const failed = [cache.get('channel-key:f', flaky, CHANNEL_KEY_TABLES), cache.get('channel-key:f', flaky, CHANNEL_KEY_TABLES)];
    for (const answer of failed) await expect(answer).rejects.toThrow('the database went away');
    expect(loads).toBe(1);
    fail = false;
    expect(await cache.get('channel-key:f', flaky, CHANNEL_KEY_TABLES)).toBe('v');
    expect(loads).toBe(2);
  });
});

describe('the credential clock', () => {
  it('tells a reading taken before a change of what a credential depends on from one taken after', () => {
    const cache = new AuthCache();
    const before = cache.now();
    cache.changed('org_a', 'customers');
    // A buyer's new customer row leaves a staff member's and a channel key's readings current.
    expect(cache.changedSince('org_a', before, STAFF_TABLES)).toBe(false);
    expect(cache.changedSince('org_a', before, CHANNEL_KEY_TABLES)).toBe(false);
    cache.changed('org_a', 'role_assignments');
    expect(cache.changedSince('org_a', before, STAFF_TABLES)).toBe(true);
    expect(cache.changedSince('org_b', before, STAFF_TABLES)).toBe(false);
    const after = cache.now();
    expect(cache.changedSince('org_a', after, STAFF_TABLES)).toBe(false);
    // A change this process made itself names no table: every reading of the organisation moved.
    cache.forgetOrganisation('org_a');
    expect(cache.changedSince('org_a', after, CHANNEL_KEY_TABLES)).toBe(true);
    // Missed notices move every organisation.
    const beforeAll = cache.now();
    cache.forgetAll();
    expect(cache.changedSince('org_b', beforeAll, STAFF_TABLES)).toBe(true);
  });

  it('stays bounded by counting every organisation as changed when it forgets their times', () => {
    const cache = new AuthCache();
    const before = cache.now();
    for (let n = 0; n < 10_001; n += 1) cache.changed(`org_${n}`, 'users');
    expect(cache.changedSince('org_quiet', before, STAFF_TABLES)).toBe(true);
    expect(cache.changedSince('org_quiet', cache.now(), STAFF_TABLES)).toBe(false);
  });
});

describe('whose reading a change moves', () => {
  const organisation = { id: 'org_a' };
  const shopper: Principal = {
    kind: 'channel',
    channelKeyId: 'ck',
    channelId: 'ch',
    accountId: 'acc',
    keyKind: 'publishable',
    customerId: 'cus',
  };
  const embed: Principal = { kind: 'embed', sessionId: 'ems', accountId: 'acc', scopes: [], expiresAt: new Date() };

  it('a buyer joining as a customer moves no signed-in shopper, customer or embed session; a revoked key moves the embed sessions', () => {
    const cache = new AuthCache();
    const rightsReadAt = cache.now();
    cache.changed('org_a', 'customers');
    expect(cache.readBeforeChange({ organisation, principal: shopper, rightsReadAt })).toBe(false);
    expect(
      cache.readBeforeChange({ organisation, principal: { kind: 'customer', customerId: 'cus', accountId: 'acc' }, rightsReadAt }),
    ).toBe(false);
    expect(cache.readBeforeChange({ organisation, principal: embed, rightsReadAt })).toBe(false);
    cache.changed('org_a', 'api_keys');
    expect(cache.readBeforeChange({ organisation, principal: embed, rightsReadAt })).toBe(true);
    expect(cache.readBeforeChange({ organisation, principal: shopper, rightsReadAt })).toBe(false);
    cache.changed('org_a', 'channel_keys');
    expect(cache.readBeforeChange({ organisation, principal: shopper, rightsReadAt })).toBe(true);
  });
});
