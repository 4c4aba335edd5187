import { describe, expect, it } from 'vitest';
import { AuthCache, CHANNEL_KEY_TABLES, STAFF_TABLES } from './auth-cache.ts';

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
});
