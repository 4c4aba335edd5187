import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from './support/app.ts';
import { createApiKey } from './support/credentials.ts';
import { api, createOrganisation, type TestOrganisation } from './support/fixtures.ts';

/**
 * /graphql answers the common request (a POST of one JSON query, no Origin) on a fast path beside
 * Yoga (src/graphql/fast-path.ts). A request with an Origin always goes through Yoga, so sending
 * each request both ways shows that the fast path answers exactly as Yoga does: status, media
 * type, headers a client reads, and body (request ids aside, which differ per request).
 */
const app = useTestApp();
let org: TestOrganisation;
let venuesOnly: string;
beforeAll(async () => {
  org = await createOrganisation(app, 'fastpath');
  venuesOnly = (await createApiKey(app, org, ['venues.read'])).key;
  for (const name of ['One', 'Two', 'Three']) {
    const res = await api(app, 'POST', '/v1/events', {
      token: org.adminToken,
      org: org.slug,
      body: { accountId: org.account.id, name, timezone: 'UTC' },
    });
    expect(res.status).toBe(201);
  }
});

interface Sent {
  body: string;
  accept?: string;
  contentType?: string;
  /** Sent with an API key that may read venues only (else the administrator's token). */
  venuesOnly?: true;
}

async function send(sent: Sent, origin?: string) {
  const res = await fetch(`${app().url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': sent.contentType ?? 'application/json',
      authorization: `Bearer ${sent.venuesOnly ? venuesOnly : org.adminToken}`,
      'x-service-org': org.slug,
      ...(sent.accept === undefined ? {} : { accept: sent.accept }),
      ...(origin ? { origin } : {}),
    },
    body: sent.body,
  });
  const text = await res.text();
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    retryAfter: res.headers.get('retry-after'),
    serviceVersion: res.headers.get('service-version'),
    body: text.replace(/"requestId":"[^"]*"/g, '"requestId":"…"'),
  };
}

const query = (q: string, variables?: unknown, operationName?: string) => JSON.stringify({ query: q, variables, operationName });
const LIST = '{ events(limit: 2) { nodes { id name status occurrenceCount } pagination { total hasNext } } }';

const cases: Array<[string, Sent]> = [
  ['a list', { body: query(LIST) }],
  ['a list, variables and an operation name', { body: query('query L($n: Int) { events(limit: $n) { nodes { name } } }', { n: 1 }, 'L') }],
  [
    'one of two operations by name',
    { body: query('query A { events { pagination { total } } } query B { venues { nodes { id } } }', null, 'B') },
  ],
  ['two operations, no name', { body: query('query A { events { pagination { total } } } query B { venues { nodes { id } } }') }],
  ['an unknown operation name', { body: query(LIST, null, 'Nope') }],
  ['a missing event (an error in the result)', { body: query('{ event(id: "evt_missing") { id } }') }],
  ['a field the key may not read', { body: query(LIST), venuesOnly: true }],
  ['a syntax error', { body: query('{ events {') }],
  ['a validation error', { body: query('{ nope }') }],
  ['a variable of the wrong type', { body: query('query($n: Int) { events(limit: $n) { nodes { id } } }', { n: 'many' }) }],
  ['a page over the cost budget', { body: query('{ events(limit: 100) { nodes { id occurrences { id } } } }') }],
  ['a mutation', { body: query('mutation { createVenue(input: { name: "" }) { venue { id } } }') }],
  ['an extra parameter', { body: JSON.stringify({ query: LIST, extra: 1 }) }],
  ['a batch', { body: JSON.stringify([{ query: LIST }]) }],
  ['a query that is not a string', { body: JSON.stringify({ query: 1 }) }],
  ['variables that are a list', { body: JSON.stringify({ query: LIST, variables: [1] }) }],
  ['a body that is not JSON', { body: '{ "query": ' }],
  ['Accept: application/json', { body: query(LIST), accept: 'application/json' }],
  ['Accept: application/graphql-response+json', { body: query(LIST), accept: 'application/graphql-response+json' }],
  ['Accept: both, graphql-response first', { body: query(LIST), accept: 'application/graphql-response+json, application/json' }],
  ['Accept: both, json first', { body: query(LIST), accept: 'application/json;charset=utf-8, application/graphql-response+json' }],
  ['Accept: application/*', { body: query(LIST), accept: 'application/*' }],
  ['Accept: a JSON error, graphql-response', { body: query('{ nope }'), accept: 'application/json' }],
  ['Accept: another charset only', { body: query(LIST), accept: 'application/json; charset=utf-16' }],
  ['Accept: an event stream', { body: query(LIST), accept: 'text/event-stream' }],
  ['Content-Type with charset', { body: query(LIST), contentType: 'application/json; charset=utf-8' }],
];

describe('the /graphql fast path answers as Yoga does', () => {
  it.each(cases)('%s', async (_name, sent) => {
    const fast = await send(sent);
    const viaYoga = await send(sent, 'https://admin.example');
    expect(fast).toEqual(viaYoga);
  });

  it('answers a list with its data (so the comparison above is not of two errors)', async () => {
    const res = await send({ body: query(LIST) });
    expect(res.status).toBe(200);
    expect(res.contentType).toBe('application/json; charset=utf-8');
    const body = JSON.parse(res.body);
    expect(body.errors).toBeUndefined();
    expect(body.data.events.pagination).toEqual({ total: 3, hasNext: true });
    expect(body.data.events.nodes.map((e: { name: string }) => e.name)).toEqual(['Three', 'Two']);
    const refused = JSON.parse((await send({ body: query(LIST), venuesOnly: true })).body);
    expect(refused.errors[0].extensions.code).toMatch(/FORBIDDEN|NOT_FOUND/);
  });
});
