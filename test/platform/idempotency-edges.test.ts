import net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { asAdmin } from '../support/credentials.ts';
import { api, createOrganisation, tag, type TestOrganisation } from '../support/fixtures.ts';
import { cartLine, createOccurrence, placeOrder, seedCatalogue, type SeededCatalogue } from '../support/sales.ts';

/**
 * Idempotency-Key at the edges of HTTP: bodies of every JSON media type are read before they are
 * hashed, bodies no use case could read are refused before they are hashed, keys are characters
 * (UTF-8), not bytes, and one header is one key (src/http/idempotency.ts).
 */

const app = useTestApp();
let org: TestOrganisation;
let catalogue: SeededCatalogue;
beforeAll(async () => {
  org = await createOrganisation(app, 'idem-review');
  catalogue = await seedCatalogue(app, org);
});

const adminHeaders = () => ({ authorization: `Bearer ${org.adminToken}`, 'x-service-org': org.slug });

async function post(path: string, body: string, headers: Record<string, string>) {
  const res = await fetch(`${app().url}${path}`, { method: 'POST', headers, body });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, body: json };
}

/**
 * A raw HTTP/1.1 POST: header values go out as the UTF-8 bytes of the strings given, and a name may
 * repeat (fetch can do neither).
 */
function rawPost(path: string, headers: Array<[string, string]>, body: string) {
  const url = new URL(path, app().url);
  return new Promise<{ status: number; headers: Record<string, string>; body: any }>((resolve, reject) => {
    const payload = Buffer.from(body, 'utf8');
    const head = Buffer.concat([
      Buffer.from(`POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\nContent-Length: ${payload.length}\r\n`),
      ...headers.map(([name, value]) => Buffer.concat([Buffer.from(`${name}: `), Buffer.from(value, 'utf8'), Buffer.from('\r\n')])),
      Buffer.from('\r\n'),
    ]);
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(Buffer.concat([head, payload])));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const lines = text.slice(0, split).split('\r\n');
      const parsed: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const i = line.indexOf(':');
        parsed[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      let rest = text.slice(split + 4);
      if (parsed['transfer-encoding'] === 'chunked') rest = rest.replace(/^[0-9a-f]+\r\n/, '').replace(/\r\n0\r\n\r\n$/, '');
      let json: any;
      try {
        json = JSON.parse(rest);
      } catch {
        json = rest;
      }
      resolve({ status: Number(lines[0]!.split(' ')[1]), headers: parsed, body: json });
    });
  });
}

describe('a body of a +json media type', () => {
  // Read like application/json (src/http/middleware.ts jsonBody): hashed as it is, never as no body.
  it('is hashed as sent: the same key with another body is 409, not a replay of the first answer', async () => {
    const key = `vnd-cart-${tag()}`;
    const send = (quantity: number) =>
      post('/live/sales/carts', JSON.stringify({ items: [cartLine(catalogue, quantity)] }), {
        'content-type': 'application/vnd.api+json',
        'x-channel-key': catalogue.channel.secret,
        'idempotency-key': key,
      });
    const first = await send(1);
    const other = await send(2);
    // Contract: "the same key with another body answers 409 CONFLICT".
    expect([other.status, other.body.code, other.headers.get('idempotent-replayed')]).toEqual([409, 'CONFLICT', null]);
    // "Bad input gets a clear error and loses nothing": the line sent is in the cart, or the body is refused.
    if (first.status === 201) expect(first.body.cart.items).toHaveLength(1);
    else expect(first.status).toBe(415);
  });

  it('is read: a scanner’s occurrenceId is judged as with application/json', async () => {
    // Another occurrence of the same event: the pass is not for it.
    const event = { id: catalogue.eventId, accountId: org.account.id };
    const elsewhere = await createOccurrence(app, org, event, new Date(Date.now() + 9 * 86_400_000));
    const redeem = async (contentType: string) => {
      const { passes } = await placeOrder(app, catalogue.channel, catalogue);
      return post(`/v1/passes/${passes[0]!.id}/redeem`, JSON.stringify({ occurrenceId: elsewhere.id }), {
        ...adminHeaders(),
        'content-type': contentType,
      });
    };
    // With plain JSON the scanner's occurrence is checked: a pass for another occurrence is refused.
    expect((await redeem('application/json')).status).toBe(409);
    // The same body as application/vnd.api+json: either read (409 again) or refused (415), never run without it.
    const res = await redeem('application/vnd.api+json');
    expect([409, 415], JSON.stringify(res.body)).toContain(res.status);
  });
});

describe('a body nested beyond the bound, with a key', () => {
  // Refused by the edge check (src/http/input-safety.ts) before the key's hash reads it.
  it('answers 400 naming where, with or without a key', async () => {
    const depth = 20_000;
    const body = `{"accountId":"${org.account.id}","name":"Deep","capacity":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const headers = { ...adminHeaders(), 'content-type': 'application/json' };
    const without = await post('/v1/venues', body, headers);
    expect([without.status, without.body.code]).toEqual([400, 'VALIDATION_FAILED']);
    const keyed = await post('/v1/venues', body, { ...headers, 'idempotency-key': `deep-${tag()}` });
    expect([keyed.status, keyed.body.code]).toEqual([400, 'VALIDATION_FAILED']);
  });

  it('the same on /live for a storefront with a sales session', async () => {
    const depth = 20_000;
    const opened = await post('/live/sales/carts', JSON.stringify({ items: [] }), {
      'content-type': 'application/json',
      'x-channel-key': catalogue.channel.publishable,
    });
    const session = opened.headers.get('x-live-session')!;
    const body = `{"items":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const keyed = await post('/live/sales/carts', body, {
      'content-type': 'application/json',
      'x-channel-key': catalogue.channel.publishable,
      'x-live-session': session,
      'idempotency-key': `deep-live-${tag()}`,
    });
    expect([keyed.status, keyed.body.code]).toEqual([400, 'VALIDATION_FAILED']);
  });
});

describe('a key of characters beyond ASCII', () => {
  // HTTP hands header values over a byte a character: the key is read as UTF-8, and its length
  // counted in characters (the contract's "any string up to 255 characters").
  const body = () => JSON.stringify({ accountId: org.account.id, name: `Keyed ${tag()}` });
  const headers = (key: string): Array<[string, string]> => [
    ['content-type', 'application/json'],
    ['authorization', `Bearer ${org.adminToken}`],
    ['x-service-org', org.slug],
    ['idempotency-key', key],
  ];

  it('takes a key with an en dash, a euro sign or CJK characters, none of which is a control character', async () => {
    for (const key of [`order–${tag()}`, `€${tag()}`, `注文-${tag()}`]) {
      const res = await rawPost('/v1/venues', headers(key), body());
      expect([key, res.status, res.body.details?.[0]?.message ?? null]).toEqual([key, 201, null]);
    }
  });

  it('takes 200 characters (600 bytes of UTF-8) as within "up to 255 characters"', async () => {
    const res = await rawPost('/v1/venues', headers('鍵'.repeat(200)), body());
    expect(res.status).toBe(201);
  });
});

describe('two Idempotency-Key headers', () => {
  // Joined, they would be the key "a, b", which a request sending that one key would then replay.
  it('is refused with 400 naming Idempotency-Key', async () => {
    const name = `Two keys ${tag()}`;
    const base: Array<[string, string]> = [
      ['content-type', 'application/json'],
      ['authorization', `Bearer ${org.adminToken}`],
      ['x-service-org', org.slug],
    ];
    const k = tag();
    const body = JSON.stringify({ accountId: org.account.id, name });
    const two = await rawPost('/v1/venues', [...base, ['idempotency-key', `a${k}`], ['idempotency-key', `b${k}`]], body);
    const joined = await rawPost('/v1/venues', [...base, ['idempotency-key', `a${k}, b${k}`]], body);
    expect([two.status, two.body.details?.[0]?.path]).toEqual([400, 'Idempotency-Key']);
    expect(joined.headers['idempotent-replayed']).toBeUndefined();
  });

  it('are refused on /graphql too, and nothing is made', async () => {
    const name = `Two keys ${tag()}`;
    const document = JSON.stringify({
      query: 'mutation($input: CreateVenueInput!) { createVenue(input: $input) { venue { id } } }',
      variables: { input: { accountId: org.account.id, name } },
    });
    const res = await rawPost(
      '/graphql',
      [
        ['content-type', 'application/json'],
        ['authorization', `Bearer ${org.adminToken}`],
        ['x-service-org', org.slug],
        ['idempotency-key', `a${tag()}`],
        ['idempotency-key', `b${tag()}`],
      ],
      document,
    );
    expect(res.body.errors?.[0]?.extensions?.code, JSON.stringify(res.body)).toBe('VALIDATION_FAILED');
    const venues = await api(app, 'GET', '/v1/venues?limit=100', asAdmin(org));
    expect(venues.body.venues.map((venue: { name: string }) => venue.name)).not.toContain(name);
  });
});

describe('the refusal of a retried answer that held a secret', () => {
  it('says where to read the thing in one readable sentence, on /v1 and /graphql', async () => {
    const key = `garbled-${tag()}`;
    const body = { name: `g ${tag()}`, scopes: ['events.read'] };
    await api(app, 'POST', '/v1/api-keys', { ...asAdmin(org), body, headers: { 'idempotency-key': key } });
    const rest = await api(app, 'POST', '/v1/api-keys', { ...asAdmin(org), body, headers: { 'idempotency-key': key } });
    expect(rest.status).toBe(409);
    const q = 'mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { createdApiKey { key apiKey { id } } } }';
    const gkey = `garbled-gql-${tag()}`;
    const vars = { input: { name: `g ${tag()}`, scopes: ['events.read'] } };
    const send = () =>
      fetch(`${app().url}/graphql`, {
        method: 'POST',
        headers: { ...adminHeaders(), 'content-type': 'application/json', 'idempotency-key': gkey },
        body: JSON.stringify({ query: q, variables: vars }),
      }).then((res) => res.json());
    await send();
    const graph = await send();
    for (const message of [rest.body.error as string, graph.errors[0].message as string]) {
      expect(message).not.toMatch(/\.\.$/);
      expect(message).not.toMatch(/made with (The|Read|An) /);
    }
  });
});
