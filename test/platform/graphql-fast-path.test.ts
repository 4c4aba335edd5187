import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createApiKey } from '../support/credentials.ts';
import { api, createOrganisation, type TestOrganisation } from '../support/fixtures.ts';

/**
 * /graphql answers the common request (a POST of one JSON query) on a fast path beside Yoga
 * (src/graphql/fast-path.ts). A request with `extensions` always goes through Yoga, so sending
 * each request both ways shows that the fast path answers exactly as Yoga does: status, media
 * type, headers a client reads, and body (request ids and the cost budget's remaining points aside,
 * which differ per request).
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

/** The same request with an empty `extensions`, which Yoga reads as none and the fast path leaves to Yoga. */
function forYoga(body: string): string {
  try {
    const params: unknown = JSON.parse(body);
    if (typeof params === 'object' && params !== null && !Array.isArray(params) && !('extensions' in params)) {
      return JSON.stringify({ ...params, extensions: {} });
    }
  } catch {
    // Not JSON: Yoga answers it either way.
  }
  return body;
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
    // What the cost budget has left moves with every request (and with time).
    body: text.replace(/"requestId":"[^"]*"/g, '"requestId":"…"').replace(/"remaining":\d+/g, '"remaining":0'),
  };
}

/** graphql_fast_path_total of the app's process, over its outcomes. */
async function fastPathAnswers(): Promise<number> {
  const text = await (await fetch(`${app().url}/metrics`)).text();
  return [...text.matchAll(/^graphql_fast_path_total\{[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
}

const query = (q: string, variables?: unknown, operationName?: string) => JSON.stringify({ query: q, variables, operationName });
/** 20 lists of orders with nested lists: over the cost budget (maxCost) at a limit of 100. */
const OVER_BUDGET = `query($limit: Int) { ${Array.from(
  { length: 20 },
  (_, i) => `o${i}: orders(first: $limit) { nodes { id lineItems { id } passes { id } payments { id } } }`,
).join(' ')} }`;
const LIST = '{ events(first: 2) { nodes { id name status occurrenceCount } pagination { total hasNext } } }';

/** Each case, and whether the fast path answers it (else Yoga does). */
const cases: Array<[string, Sent, boolean]> = [
  ['a list', { body: query(LIST) }, true],
  [
    'a list, variables and an operation name',
    { body: query('query L($n: Int) { events(first: $n) { nodes { name } } }', { n: 1 }, 'L') },
    true,
  ],
  [
    'one of two operations by name',
    { body: query('query A { events { pagination { total } } } query B { venues { nodes { id } } }', null, 'B') },
    true,
  ],
  ['two operations, no name', { body: query('query A { events { pagination { total } } } query B { venues { nodes { id } } }') }, false],
  ['an unknown operation name', { body: query(LIST, null, 'Nope') }, false],
  ['a missing event (an error in the result)', { body: query('{ event(id: "evt_missing") { id } }') }, true],
  ['a field the key may not read', { body: query(LIST), venuesOnly: true }, true],
  ['a syntax error', { body: query('{ events {') }, false],
  ['a validation error', { body: query('{ nope }') }, false],
  ['a variable of the wrong type', { body: query('query($n: Int) { events(first: $n) { nodes { id } } }', { n: 'many' }) }, true],
  ['a field that does not exist', { body: query('{ events(first: 100) { nodes { id occurrences { id } } } }') }, false],
  ['pages over the cost budget (refused before execution)', { body: query(OVER_BUDGET, { limit: 100 }) }, true],
  ['a mutation', { body: query('mutation { createVenue(input: { name: "" }) { venue { id } } }') }, false],
  ['an extra parameter', { body: JSON.stringify({ query: LIST, extra: 1 }) }, false],
  ['a batch', { body: JSON.stringify([{ query: LIST }]) }, false],
  ['a query that is not a string', { body: JSON.stringify({ query: 1 }) }, false],
  ['variables that are a list', { body: JSON.stringify({ query: LIST, variables: [1] }) }, false],
  ['a body that is not JSON', { body: '{ "query": ' }, false],
  ['Accept: application/json', { body: query(LIST), accept: 'application/json' }, true],
  ['Accept: application/graphql-response+json', { body: query(LIST), accept: 'application/graphql-response+json' }, true],
  ['Accept: both, graphql-response first', { body: query(LIST), accept: 'application/graphql-response+json, application/json' }, true],
  ['Accept: both, json first', { body: query(LIST), accept: 'application/json;charset=utf-8, application/graphql-response+json' }, true],
  ['Accept: application/*', { body: query(LIST), accept: 'application/*' }, true],
  ['Accept: a JSON error, graphql-response', { body: query('{ nope }'), accept: 'application/json' }, false],
  ['Accept: another charset only', { body: query(LIST), accept: 'application/json; charset=utf-16' }, false],
  ['Accept: an event stream', { body: query(LIST), accept: 'text/event-stream' }, false],
  ['Content-Type with charset', { body: query(LIST), contentType: 'application/json; charset=utf-8' }, true],
];

describe('the /graphql fast path answers as Yoga does', () => {
  it.each(cases)('%s', async (_name, sent, onFastPath) => {
    const before = await fastPathAnswers();
    // A browser's request (with an Origin) is the common request too.
    const fast = await send(sent, 'https://admin.example');
    const afterFast = await fastPathAnswers();
    const viaYoga = await send({ ...sent, body: forYoga(sent.body) }, 'https://admin.example');
    expect(fast).toEqual(viaYoga);
    // Which path answered (graphql_fast_path_total): with extensions always Yoga.
    expect(afterFast - before).toBe(onFastPath ? 1 : 0);
    expect(await fastPathAnswers()).toBe(afterFast);
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
