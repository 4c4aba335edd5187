import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { asAdmin } from '../support/credentials.ts';
import { api, createOrganisation, type TestOrganisation } from '../support/fixtures.ts';
import { createCatalogue, createChannel, storefront } from '../support/sales.ts';

/**
 * Idempotency-Key on every POST of /v1 and /live (docs/security.md "Idempotency and secrets"). Concurrency across two API
 * processes: test/platform/many-processes.test.ts; what an attacker tries: test/platform/idempotency-attacks.test.ts.
 */

const app = useTestApp();
let org: TestOrganisation;

beforeAll(async () => {
  org = await createOrganisation(app, 'idem');
});

const as = () => asAdmin(org);
const withKey = (key: string, extra: Record<string, string> = {}) => ({ 'idempotency-key': key, ...extra });

describe('Idempotency-Key', () => {
  it('answers a retry with the first answer and does the work once; another request with the key is 409', async () => {
    const body = { accountId: org.account.id, name: 'Once only', timezone: 'UTC' };
    const first = await api(app, 'POST', '/v1/events', { ...as(), body, headers: withKey('evt-1') });
    const again = await api(app, 'POST', '/v1/events', { ...as(), body, headers: withKey('evt-1') });
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.body).toEqual(first.body);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await app().runtime.db.event.count({ where: { name: 'Once only' } })).toBe(1);
    // The same key with the body written another way is the same request.
    const reordered = await api(app, 'POST', '/v1/events', {
      ...as(),
      body: { timezone: 'UTC', name: 'Once only', accountId: org.account.id },
      headers: withKey('evt-1'),
    });
    expect(reordered.body.event.id).toBe(first.body.event.id);
    const other = await api(app, 'POST', '/v1/events', { ...as(), body: { ...body, name: 'Something else' }, headers: withKey('evt-1') });
    expect([other.status, other.body.code]).toEqual([409, 'CONFLICT']);
    const otherPath = await api(app, 'POST', '/v1/venues', {
      ...as(),
      body: { accountId: org.account.id, name: 'x' },
      headers: withKey('evt-1'),
    });
    expect(otherPath.status).toBe(409);
  });

  it('keeps an answered refusal (a 400) too, but not a throttle or a fault', async () => {
    const bad = { accountId: org.account.id, name: '' };
    const first = await api(app, 'POST', '/v1/venues', { ...as(), body: bad, headers: withKey('bad-1') });
    const again = await api(app, 'POST', '/v1/venues', { ...as(), body: bad, headers: withKey('bad-1') });
    expect([first.status, again.status]).toEqual([400, 400]);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.details).toEqual(first.body.details);
  });

  it('is per credential: two API keys may use the same key for two things', async () => {
    const keys = await Promise.all(
      [1, 2].map(async (n) => {
        const res = await api(app, 'POST', '/v1/api-keys', { ...as(), body: { name: `k${n}`, scopes: ['venues.write', 'venues.read'] } });
        return res.body.key as string;
      }),
    );
    const made = await Promise.all(
      keys.map((key) =>
        api(app, 'POST', '/v1/venues', {
          token: key,
          org: org.slug,
          body: { accountId: org.account.id, name: 'Shared key name' },
          headers: withKey('same'),
        }),
      ),
    );
    expect(made.map((res) => res.status)).toEqual([201, 201]);
    expect(made[0]!.body.venue.id).not.toBe(made[1]!.body.venue.id);
  });

  it('replays a sales answer within its sales session, with the headers it set', async () => {
    const catalogue = await createCatalogue(app, org);
    const { publishable } = await createChannel(app, org);
    const shop = storefront(app, publishable);
    await shop.call('POST', '/sales/carts', { items: [] });
    const body = { items: [{ occurrenceId: catalogue.occurrenceId, ticketTypeId: catalogue.ticketTypeId, quantity: 1 }] };
    const first = await shop.call('POST', '/sales/carts', body, withKey('cart-1'));
    const again = await shop.call('POST', '/sales/carts', body, withKey('cart-1'));
    expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
    expect(again.body.cart.id).toBe(first.body.cart.id);
    expect(again.headers.get('x-live-session')).toBe(first.headers.get('x-live-session'));
    expect(again.headers.get('set-cookie')).toBe(first.headers.get('set-cookie'));
    expect(await app().runtime.db.cart.count({ where: { sessionId: first.body.cart.sessionId } })).toBe(2);
  });

  it('keeps nothing for a storefront call with no sales session yet: the publishable key is every browser’s', async () => {
    const { publishable } = await createChannel(app, org);
    const headers = withKey('first-cart', { 'x-channel-key': publishable });
    const first = await api(app, 'POST', '/live/sales/carts', { body: { items: [] }, headers });
    const again = await api(app, 'POST', '/live/sales/carts', { body: { items: [] }, headers });
    expect([first.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 201, null]);
    expect(again.body.cart.id).not.toBe(first.body.cart.id);
  });

  it('tells a number JSON cannot hold (1e999) from null: the same key with either body is another request', async () => {
    const name = `Unbounded ${Date.now()}`;
    const send = async (capacity: string) => {
      const res = await fetch(`${app().url}/v1/venues`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${org.adminToken}`,
          'x-service-org': org.slug,
          ...withKey(`capacity-${name}`),
        },
        body: `{"accountId":"${org.account.id}","name":"${name}","capacity":${capacity}}`,
      });
      return [res.status, ((await res.json()) as { code?: string }).code ?? null];
    };
    expect(await send('null')).toEqual([201, null]);
    expect(await send('1e999')).toEqual([409, 'CONFLICT']);
    expect(await send('-1e999')).toEqual([409, 'CONFLICT']);
  });

  it('takes any string up to 255 characters as a key, and refuses a longer one or a control character with 400 naming the header', async () => {
    const body = { accountId: org.account.id, name: 'Spaced key' };
    const spaced = await api(app, 'POST', '/v1/venues', { ...as(), body, headers: withKey('order 42: retry #1') });
    const again = await api(app, 'POST', '/v1/venues', { ...as(), body, headers: withKey('order 42: retry #1') });
    expect([spaced.status, again.status, again.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
    expect(again.body.venue.id).toBe(spaced.body.venue.id);
    for (const key of ['a\tb', 'a\u0085b', 'x'.repeat(256)]) {
      const res = await api(app, 'POST', '/v1/venues', { ...as(), body: { accountId: org.account.id, name: 'x' }, headers: withKey(key) });
      expect([res.status, res.body.details?.[0]?.path]).toEqual([400, 'Idempotency-Key']);
    }
  });
});
