import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { query } from '../support/db.ts';
import { createOrganisation, from, newClientAddress, tag, type TestOrganisation } from '../support/fixtures.ts';
import { createCatalogue, createChannel, storefront, type Catalogue } from '../support/sales.ts';
import { freshMinute } from '../support/clock.ts';

/**
 * One client with the public publishable key cannot hold a show's tickets by
 * starting a fresh sales session per cart. Decided: tickets held by pending, unexpired orders per
 * (publishable key, client address) <= CHECKOUT_HOLD_LIMIT_PER_CLIENT (default 20), per customer
 * email on the account <= CHECKOUT_HOLD_LIMIT_PER_EMAIL (default 20). Beyond: 429 RATE_LIMITED,
 * Retry-After = seconds until the earliest such hold expires, nothing held. Secret keys are not
 * limited.
 */

let app: TestApp;
let org: TestOrganisation;
let catalogue: Catalogue;
let keys: { publishable: string; secret: string };

beforeAll(async () => {
  app = await startTestApp();
  org = await createOrganisation(app, 'hoard');
  catalogue = await createCatalogue(app, org, { capacity: 1_000 });
  keys = await createChannel(app, org);
});
afterAll(async () => {
  await app?.stop();
});

/** A fresh browser (new sales session) of client `ip` checking out `quantity` tickets for `email`. */
async function checkout(app: TestApp, key: string, cat: Catalogue, quantity: number, email: string, ip: string) {
  const shop = storefront(app, key);
  const cart = await shop.call(
    'POST',
    '/sales/carts',
    { items: [{ occurrenceId: cat.occurrenceId, ticketTypeId: cat.ticketTypeId, quantity }] },
    from(ip),
  );
  expect(cart.status, JSON.stringify(cart.body)).toBe(201);
  return shop.call('POST', `/sales/carts/${cart.body.cart.id}/checkout`, { customer: { email } }, from(ip));
}

async function heldTickets(cat: Catalogue, on: TestApp = app): Promise<number> {
  const [row] = await query<{ n: number }>(
    on.database.url,
    `SELECT coalesce(sum(li.quantity), 0)::int AS n FROM order_line_items li JOIN orders o ON o.id = li."orderId"
      WHERE li."ticketTypeId" = $1 AND o.status = 'pending' AND o."holdExpiresAt" > now()`,
    [cat.ticketTypeId],
  );
  return row!.n;
}

function expectHoldRefused(res: { status: number; headers: Headers; body: any }) {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status: 429, code: 'RATE_LIMITED' });
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(15 * 60);
}

describe('holds per publishable key and client address (default 20)', () => {
  it('one client starting a fresh session per cart holds at most 20 tickets; the refused checkouts hold nothing', async () => {
    const hoarder = newClientAddress();
    const statuses: number[] = [];
    let refused: Awaited<ReturnType<typeof checkout>> | undefined;
    for (let i = 0; i < 6; i += 1) {
      const res = await checkout(app, keys.publishable, catalogue, 10, `hoarder-${i}-${tag()}@hoard.test`, hoarder);
      statuses.push(res.status);
      if (res.status !== 201) refused ??= res;
    }

    expect(statuses).toEqual([201, 201, 429, 429, 429, 429]);
    expectHoldRefused(refused!);
    expect(await heldTickets(catalogue)).toBe(20);
    expectHoldRefused(await checkout(app, keys.publishable, catalogue, 1, `one-more-${tag()}@hoard.test`, hoarder));
    expect(await heldTickets(catalogue)).toBe(20);

    // Other buyers are not affected, nor is a server with the secret key.
    expect((await checkout(app, keys.publishable, catalogue, 10, `fan-${tag()}@hoard.test`, newClientAddress())).status).toBe(201);
    expect((await checkout(app, keys.secret, catalogue, 30, `box-office-${tag()}@hoard.test`, hoarder)).status).toBe(201);
  });
});

describe('holds per customer email (default 20)', () => {
  it('one email checking out from many addresses holds at most 20 tickets', async () => {
    const cat = await createCatalogue(app, org, { capacity: 1_000, name: 'Second show' });
    const email = `same-${tag()}@hoard.test`;
    expect((await checkout(app, keys.publishable, cat, 10, email, newClientAddress())).status).toBe(201);
    expect((await checkout(app, keys.publishable, cat, 10, email, newClientAddress())).status).toBe(201);

    expectHoldRefused(await checkout(app, keys.publishable, cat, 1, email, newClientAddress()));
    expect(await heldTickets(cat)).toBe(20);
  });
});

describe('configuration', () => {
  it('CHECKOUT_HOLD_LIMIT_PER_CLIENT and CHECKOUT_HOLD_LIMIT_PER_EMAIL set the caps', async () => {
    const small = await startTestApp({ CHECKOUT_HOLD_LIMIT_PER_CLIENT: '3', CHECKOUT_HOLD_LIMIT_PER_EMAIL: '5' });
    try {
      const smallOrg = await createOrganisation(small, 'hoard-cfg');
      const cat = await createCatalogue(small, smallOrg, { capacity: 100 });
      const { publishable } = await createChannel(small, smallOrg);

      const client = newClientAddress();
      expect((await checkout(small, publishable, cat, 3, `c-${tag()}@hoard.test`, client)).status).toBe(201);
      expectHoldRefused(await checkout(small, publishable, cat, 1, `c-${tag()}@hoard.test`, client));

      const email = `e-${tag()}@hoard.test`;
      expect((await checkout(small, publishable, cat, 3, email, newClientAddress())).status).toBe(201);
      expect((await checkout(small, publishable, cat, 2, email, newClientAddress())).status).toBe(201);
      expectHoldRefused(await checkout(small, publishable, cat, 1, email, newClientAddress()));
    } finally {
      await small.stop();
    }
  });
});

describe('checkouts per publishable key and client address (60 a minute)', () => {
  it('the 61st checkout holding tickets in a minute is refused; one refused by a hold limit counts nothing and holds nothing', async () => {
    const busy = await startTestApp({ CHECKOUT_HOLD_LIMIT_PER_CLIENT: '1000', CHECKOUT_HOLD_LIMIT_PER_EMAIL: '1' });
    try {
      const busyOrg = await createOrganisation(busy, 'hoard-rate');
      const cat = await createCatalogue(busy, busyOrg, { capacity: 1_000 });
      const { publishable } = await createChannel(busy, busyOrg);
      const client = newClientAddress();
      // The minute's window is aligned on the clock: start with enough of it left.
      await freshMinute(15_000);
      const started = Math.floor(Date.now() / 60_000);

      // Five checkouts for one email at once: the per-email hold limit refuses four after their
      // orders were written in the same flight, and their transactions roll back with their counts.
      const email = `once-${tag()}@hoard.test`;
      const same = await Promise.all(Array.from({ length: 5 }, () => checkout(busy, publishable, cat, 1, email, client)));
      expect(same.map((res) => res.status).sort()).toEqual([201, 429, 429, 429, 429]);
      same.filter((res) => res.status === 429).forEach(expectHoldRefused);
      // 58 more at once, then the 60th: allowed only if the four refused counted nothing.
      const others = await Promise.all(
        Array.from({ length: 58 }, (_, i) => checkout(busy, publishable, cat, 1, `buyer-${i}-${tag()}@hoard.test`, client)),
      );
      expect(others.filter((res) => res.status !== 201).map((res) => res.body)).toEqual([]);
      const sixtieth = await checkout(busy, publishable, cat, 1, `sixtieth-${tag()}@hoard.test`, client);
      expect(sixtieth.status, JSON.stringify(sixtieth.body)).toBe(201);
      const refused = await checkout(busy, publishable, cat, 1, `late-${tag()}@hoard.test`, client);
      expect(Math.floor(Date.now() / 60_000), 'the checkouts took longer than their window').toBe(started);
      expect({ status: refused.status, code: refused.body?.code }).toEqual({ status: 429, code: 'RATE_LIMITED' });
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      expect(await heldTickets(cat, busy)).toBe(60);
      expect((await checkout(busy, publishable, cat, 1, `next-door-${tag()}@hoard.test`, newClientAddress())).status).toBe(201);
    } finally {
      await busy.stop();
    }
  });
});
