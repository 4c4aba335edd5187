import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { asAdmin } from '../support/credentials.ts';
import { api, createOrganisation, type TestOrganisation } from '../support/fixtures.ts';
import { seedCatalogue, storefront, type SeededCatalogue } from '../support/sales.ts';

/**
 * A `/v1` or `/live` request naming a query parameter or body field its route does not take is
 * refused, naming it, and nothing happens: a misspelt filter must not answer the whole list, a
 * misspelt field must not leave the value as it was while answering success.
 */
const app = useTestApp();
let org: TestOrganisation;
let catalogue: SeededCatalogue;

beforeAll(async () => {
  org = await createOrganisation(app, 'unknown-input');
  catalogue = await seedCatalogue(app, org);
});

describe('unknown input on /v1 and /live', () => {
  it('refuses a misspelt filter instead of answering the unfiltered list', async () => {
    const res = await api(app, 'GET', '/v1/events?stauts=draft&limit=5', asAdmin(org));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ path: 'query.stauts', message: expect.stringContaining('status') }],
    });
  });

  it('refuses a body field the route does not take, and changes nothing', async () => {
    const res = await api(app, 'PATCH', `/v1/events/${catalogue.eventId}`, {
      ...asAdmin(org),
      body: { name: 'Renamed', descripton: 'typo' },
    });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([expect.objectContaining({ path: 'descripton' })]);
    const event = await api(app, 'GET', `/v1/events/${catalogue.eventId}`, asAdmin(org));
    expect(event.body.event.name).not.toBe('Renamed');
  });

  it('refuses a storefront body that is not an object, or names an unknown field, and makes no cart', async () => {
    const shop = storefront(app, catalogue.channel.publishable);
    const array = await shop.call('POST', '/sales/carts', [1, 2, 3]);
    expect(array.status).toBe(400);
    expect(array.body.details).toEqual([{ path: '(root)', message: 'a JSON object' }]);
    const bogus = await shop.call('POST', '/sales/carts', { items: [], bogus: 1 });
    expect(bogus.status).toBe(400);
    expect(bogus.body.details).toEqual([expect.objectContaining({ path: 'bogus' })]);
    const magic = await shop.call('POST', '/sales/customer-auth/magic-link', { email: 'buyer@example.com', bogus: 1 });
    expect(magic.status).toBe(400);
  });

  it('still takes every parameter and field a route documents, and page and limit on every list', async () => {
    const list = await api(app, 'GET', '/v1/events?status=draft&page=1&limit=5', asAdmin(org));
    expect(list.status).toBe(200);
    expect((await api(app, 'GET', '/v1/me/roles?page=1&limit=20', asAdmin(org))).status).toBe(200);
    const shop = storefront(app, catalogue.channel.publishable);
    const cart = await shop.call('POST', '/sales/carts', { items: [] });
    expect(cart.status).toBe(201);
  });
});
