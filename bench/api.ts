import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { mintKey } from '../src/auth/keys.ts';
import { createDatabase, type Database } from '../src/db/client.ts';
import { findFreePort } from '../src/embedded/temporal.ts';
import { newId } from '../src/ids.ts';
import { bootstrapOrganisation } from '../src/services/bootstrap-organisation.ts';
import { CHANNEL_KEY_PREFIXES } from '../src/auth/channel-keys.ts';
import { loadConfig } from '../src/config.ts';
import { watchStatements } from '../src/db/client.ts';
import { createRuntime } from '../src/runtime.ts';
import { startApi } from '../server/app.ts';
import { spawnProcess, type Spawned } from '../test/support/process.ts';
import { cpuMsOf, freshDatabase, grewAcrossRounds, outputOf, peakRssSampler, rssOf, startBenchApi } from './support.ts';

/**
 * `npm run bench`: the API against real PostgreSQL under traffic that looks like users':
 * many organisations and principals (API keys and staff tokens), random pages, page sizes and
 * filters, single reads, the sales API's listings for 20 channels, and a mix with writes. Every row
 * is measured in one run beside a bare graphql-yoga hello-world (the baseline), at 50 connections.
 *
 * Each row is measured first cold, from the first request of a new production process (the
 * headline), then warm. Each list row has a floor row beside it: bench/floor-server.ts, node:http and
 * pg sending the list's own statement (captured from the API for varied requests) and nothing else.
 *
 * Targets: the two list rows >= 0.35x the baseline's requests/s with p99 < 50 ms and >= 0.9x their
 * floor; the other read rows >= 0.15x with p99 < 100 ms; the write mix >= 0.05x. The warm rows run
 * BENCH_ROUNDS times (3) in the same API process; its RSS is read after each round (target < 200 MB
 * at the end, and no growth from round to round: no leak) and its peak sampled.
 * No cache can be what is measured: principals and pages vary with every request, and the writes
 * of the mix invalidate what is cached.
 */

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const OUTSIDE = process.env.BENCH_OUTSIDE === '1';
const ORGANISATIONS = 10;
const ACCOUNTS_PER_ORGANISATION = 3;
const EVENTS_PER_ORGANISATION = 300;
const STAFF_PER_ORGANISATION = 3;
const KEYS_PER_ORGANISATION = 2;
const CHANNELS_PER_ORGANISATION = 2;
const WORDS = ['jazz', 'rock', 'opera', 'comedy', 'family', 'festival', 'classical', 'theatre', 'dance', 'poetry'];
const STATUSES = ['draft', 'published', 'on_sale', 'sold_out', 'completed', 'cancelled'] as const;
const DAY = 86_400_000;

interface Tenant {
  slug: string;
  accountIds: string[];
  eventIds: string[];
  principals: string[];
  channelKeys: string[];
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

/**
 * The graph rows (`detail`, `orders`) run on an organisation of their own, so the other rows' lists
 * keep their shape: events at a venue with 10 occurrences and 3 ticket types each, and orders placed
 * through the sales API. Their target is statements per request, whatever the page size.
 */
const GRAPH_EVENTS = 300;
const GRAPH_OCCURRENCES = 10;
const GRAPH_TICKET_TYPES = 3;
const GRAPH_ORDERS = 200;
const ORDERS_PAGE = 25;
const STATEMENTS_TARGET = 4;
/** Requests of each graph query whose statements are counted (each a different event or page). */
const STATEMENT_SAMPLES = 20;

interface GraphTenant {
  slug: string;
  organisationId: string;
  accountId: string;
  events: Array<{ id: string; occurrenceIds: string[]; ticketTypeIds: string[] }>;
  secretKey: string;
  principals: string[];
  /** `after` of each page of the orders list (null: the first page). */
  orderPages: Array<string | null>;
}

async function seed(url: string): Promise<Tenant[]> {
  const db = createDatabase({ url, poolSize: 4 });
  const tenants: Tenant[] = [];
  for (let o = 0; o < ORGANISATIONS; o += 1) {
    const slug = `bench-${o}`;
    const boot = await bootstrapOrganisation(db, {
      orgSlug: slug,
      orgName: `Bench ${o}`,
      email: `admin@${slug}.test`,
      password: 'bench password',
    });
    const organisationId = boot.organisation.id;
    const accountIds = [boot.account.id];
    for (let a = 1; a < ACCOUNTS_PER_ORGANISATION; a += 1) {
      const account = await db.account.create({ data: { id: newId('account'), organisationId, name: `Account ${a}` } });
      accountIds.push(account.id);
    }
    const tenant: Tenant = { slug, accountIds, eventIds: [], principals: [], channelKeys: [] };
    await seedCatalogue(db, organisationId, tenant);
    tenants.push(tenant);
  }
  await db.$disconnect();
  return tenants;
}

async function seedCatalogue(db: Database, organisationId: string, tenant: Tenant): Promise<void> {
  const now = Date.now();
  const events = Array.from({ length: EVENTS_PER_ORGANISATION }, (_, i) => ({
    id: newId('event'),
    organisationId,
    accountId: tenant.accountIds[i % tenant.accountIds.length]!,
    name: `${WORDS[i % WORDS.length]} night ${i}`,
    description: `An evening of ${WORDS[(i * 7) % WORDS.length]} (${i})`,
    status: STATUSES[i % STATUSES.length]!,
    timezone: i % 2 ? 'Europe/London' : 'America/New_York',
    tags: [WORDS[i % WORDS.length]!],
    createdAt: new Date(now - i * 60_000),
  }));
  await db.event.createMany({ data: events });
  tenant.eventIds = events.map((event) => event.id);
  await db.eventOccurrence.createMany({
    data: events.flatMap((event, i) =>
      [0, 1].map((n) => ({
        id: newId('occurrence'),
        organisationId,
        accountId: event.accountId,
        eventId: event.id,
        startsAt: new Date(now + ((i * 3 + n * 17) % 365) * DAY),
        timezone: event.timezone,
      })),
    ),
  });
  await db.ticketType.createMany({
    data: events.flatMap((event, i) =>
      Array.from({ length: 1 + (i % 3) }, (_, n) => ({
        id: newId('ticketType'),
        organisationId,
        accountId: event.accountId,
        eventId: event.id,
        name: `Tier ${n}`,
        priceAmount: 1000 + n * 500,
        currency: 'GBP',
        capacity: 200,
      })),
    ),
  });
  for (let c = 0; c < CHANNELS_PER_ORGANISATION; c += 1) {
    const channelId = newId('salesChannel');
    await db.salesChannel.create({
      data: {
        id: channelId,
        organisationId,
        accountId: tenant.accountIds[c % tenant.accountIds.length]!,
        name: `Shop ${c}`,
        slug: `shop-${c}`,
      },
    });
    const { key, keyHash, keyPrefix } = mintKey('svpk_');
    await db.channelKey.create({ data: { id: newId('channelKey'), organisationId, channelId, kind: 'publishable', keyHash, keyPrefix } });
    tenant.channelKeys.push(key);
  }
}

/** The graph rows' organisation: a venue, its events with occurrences and ticket types, a channel and its secret key. */
async function seedGraph(url: string): Promise<GraphTenant> {
  const db = createDatabase({ url, poolSize: 4 });
  const slug = 'bench-graph';
  const boot = await bootstrapOrganisation(db, {
    orgSlug: slug,
    orgName: 'Bench graph',
    email: `admin@${slug}.test`,
    password: 'bench password',
  });
  const organisationId = boot.organisation.id;
  const accountId = boot.account.id;
  const venue = await db.venue.create({
    data: { id: newId('venue'), organisationId, accountId, name: 'Bench Hall', city: 'London', timezone: 'Europe/London' },
  });
  const now = Date.now();
  const events = Array.from({ length: GRAPH_EVENTS }, (_, i) => ({
    id: newId('event'),
    organisationId,
    accountId,
    venueId: venue.id,
    name: `${WORDS[i % WORDS.length]} series ${i}`,
    status: 'on_sale' as const,
    timezone: 'Europe/London',
    createdAt: new Date(now - i * 60_000),
  }));
  await db.event.createMany({ data: events });
  const occurrences = events.flatMap((event, i) =>
    Array.from({ length: GRAPH_OCCURRENCES }, (_, n) => ({
      id: newId('occurrence'),
      organisationId,
      accountId,
      eventId: event.id,
      startsAt: new Date(now + (1 + ((i + n * 7) % 300)) * DAY),
      timezone: 'Europe/London',
      ...(n === 0 ? { capacity: 80 } : {}),
    })),
  );
  await db.eventOccurrence.createMany({ data: occurrences });
  const ticketTypes = events.flatMap((event) =>
    Array.from({ length: GRAPH_TICKET_TYPES }, (_, n) => ({
      id: newId('ticketType'),
      organisationId,
      accountId,
      eventId: event.id,
      name: ['Standing', 'Seated', 'Box'][n]!,
      priceAmount: 1500 + n * 1000,
      currency: 'GBP',
      capacity: 100,
      createdAt: new Date(now - 1000 + n),
    })),
  );
  await db.ticketType.createMany({ data: ticketTypes });
  const channelId = newId('salesChannel');
  await db.salesChannel.create({ data: { id: channelId, organisationId, accountId, name: 'Box office', slug: 'box-office' } });
  const { key, keyHash, keyPrefix } = mintKey(CHANNEL_KEY_PREFIXES.secret);
  await db.channelKey.create({ data: { id: newId('channelKey'), organisationId, channelId, kind: 'secret', keyHash, keyPrefix } });
  await db.$disconnect();
  return {
    slug,
    organisationId,
    accountId,
    events: events.map((event) => ({
      id: event.id,
      occurrenceIds: occurrences.filter((o) => o.eventId === event.id).map((o) => o.id),
      ticketTypeIds: ticketTypes.filter((t) => t.eventId === event.id).map((t) => t.id),
    })),
    secretKey: key,
    principals: [],
    orderPages: [],
  };
}

/**
 * The graph organisation's principals (its administrator and an API key reading what the two
 * queries read) and its orders, placed as a box office's server places them: a cart of one to three
 * lines, checked out for one of 60 customers, three in four confirmed. Then the cursor of each page
 * of its orders list, so the orders row asks for varied pages.
 */
async function graphPrincipalsAndOrders(origin: string, graph: GraphTenant): Promise<void> {
  const headers = { 'content-type': 'application/json', 'x-service-org': graph.slug };
  const login = await post(origin, '/v1/auth/login', headers, { email: `admin@${graph.slug}.test`, password: 'bench password' });
  const admin = { ...headers, authorization: `Bearer ${login.accessToken}` };
  const key = await post(origin, '/v1/api-keys', admin, {
    name: 'graph reader',
    scopes: ['events.read', 'venues.read', 'orders.read', 'customers.read'],
  });
  graph.principals.push(login.accessToken, key.key);
  const sales = { 'content-type': 'application/json', 'x-channel-key': graph.secretKey };
  for (let i = 0; i < GRAPH_ORDERS; i += 1) {
    const event = pick(graph.events.slice(0, 40));
    const items = Array.from({ length: 1 + (i % 3) }, (_, n) => ({
      occurrenceId: event.occurrenceIds[(i + n) % event.occurrenceIds.length]!,
      ticketTypeId: event.ticketTypeIds[n % event.ticketTypeIds.length]!,
      quantity: 1 + (i % 2),
    }));
    const res = await fetch(`${origin}/live/sales/carts`, { method: 'POST', headers: sales, body: JSON.stringify({ items }) });
    const cart = ((await res.json()) as { cart?: { id: string } }).cart;
    if (!cart) throw new Error(`cart: ${res.status}`);
    const session = { ...sales, 'x-live-session': res.headers.get('x-live-session') ?? '' };
    const { order } = await post(origin, `/live/sales/carts/${cart.id}/checkout`, session, {
      customer: { email: `customer${i % 60}@${graph.slug}.test`, firstName: 'Bench', lastName: `Customer ${i % 60}` },
    });
    if (i % 4 !== 3) await post(origin, `/live/sales/orders/${order.id}/confirm`, sales, {});
  }
  let after: string | null = null;
  for (;;) {
    graph.orderPages.push(after);
    const page: any = await post(origin, '/graphql', admin, {
      query: 'query ($after: String) { orders(first: 25, after: $after) { pageInfo { hasNextPage endCursor } } }',
      variables: { after },
    });
    if (!page.data.orders.pageInfo.hasNextPage) break;
    after = page.data.orders.pageInfo.endCursor as string;
  }
}

/**
 * API keys and staff tokens of each organisation, made through the API as their users would: the
 * administrator, API keys (organisation-wide and account-bound), and staff invited as event
 * managers of one account who accept with the code from their mail.
 */
async function principals(origin: string, url: string, tenants: Tenant[]): Promise<void> {
  const db = createDatabase({ url, poolSize: 2 });
  for (const tenant of tenants) {
    const headers = { 'content-type': 'application/json', 'x-service-org': tenant.slug };
    const login = await post(origin, '/v1/auth/login', headers, { email: `admin@${tenant.slug}.test`, password: 'bench password' });
    const admin = { ...headers, authorization: `Bearer ${login.accessToken}` };
    tenant.principals.push(login.accessToken);
    for (let k = 0; k < KEYS_PER_ORGANISATION; k += 1) {
      const key = await post(origin, '/v1/api-keys', admin, {
        name: `bench ${k}`,
        scopes: ['events.read', 'events.write', 'venues.read'],
        ...(k === 1 ? { accountId: tenant.accountIds[0] } : {}),
      });
      tenant.principals.push(key.key);
    }
    const organisationId = (await get(origin, '/v1/organisation', admin)).organisation.id as string;
    const manager = (await db.role.findFirstOrThrow({ where: { organisationId, systemKey: 'event_manager' } })).id;
    for (let s = 1; s < STAFF_PER_ORGANISATION; s += 1) {
      const email = `staff${s}@${tenant.slug}.test`;
      const { invitation } = await post(origin, '/v1/user-invitations', admin, {
        organisationId,
        email,
        roleIds: [manager],
        accountId: tenant.accountIds[s % tenant.accountIds.length],
      });
      const mail = await db.outboxMessage.findFirstOrThrow({ where: { to: email }, orderBy: { createdAt: 'desc' } });
      const code = (mail.meta as { invitationId: string; code: string }).code;
      if ((mail.meta as { invitationId: string }).invitationId !== invitation.id) throw new Error('no invitation mail');
      const session = await post(
        origin,
        '/v1/auth/invitations/redeem',
        { 'content-type': 'application/json' },
        { code, password: 'staff password' },
      );
      tenant.principals.push(session.accessToken);
    }
  }
  await db.$disconnect();
}

async function post(origin: string, path: string, headers: Record<string, string>, body: unknown): Promise<any> {
  const res = await fetch(`${origin}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const json = await res.json();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}

async function get(origin: string, path: string, headers: Record<string, string>): Promise<any> {
  const res = await fetch(`${origin}${path}`, { headers });
  return res.json();
}

interface Row {
  name: string;
  /** Its key in BENCH_ONLY (`list`, `graphql`, ...), and the round it ran in (0: the cold pass). */
  key?: string;
  round?: number;
  kind: 'baseline' | 'floor' | 'list' | 'read' | 'write' | 'graph';
  /** For a graph row: its statements per request, counted apart (countStatements). */
  statements?: StatementCount;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** CPU of the serving process per request, ms: unlike req/s, independent of what else runs on the machine. */
  cpuMs: number;
}

type Request = { method: string; path: string; headers: Record<string, string>; body?: string };

async function measure(name: string, kind: Row['kind'], origin: string, pid: number, next: () => Request, warmUp = true): Promise<Row> {
  const options = (connections: number, duration: number): autocannon.Options => ({
    url: origin,
    connections,
    duration,
    requests: [{ setupRequest: (req) => ({ ...req, ...next() }) as typeof req }],
  });
  if (warmUp) await autocannon(options(10, 2));
  const cpuBefore = cpuMsOf(pid);
  const result = await autocannon(options(CONNECTIONS, DURATION));
  const cpuMs = (cpuMsOf(pid) - cpuBefore) / Math.max(1, result.requests.total);
  return {
    name,
    kind,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    cpuMs,
  };
}

const EVENT_FIELDS =
  'id organisationId accountId name description status venueId timezone onSaleDate offSaleDate occurrenceCount ticketCount productCount tags isDeleted createdAt updatedAt createdBy';

/** A list query a user of `tenant` might send: a page, a size, maybe a filter. */
function listQuery(tenant: Tenant): Record<string, string> {
  const query: Record<string, string> = { page: String(1 + Math.floor(Math.random() * 8)), limit: pick(['10', '20', '50']) };
  const filter = Math.random();
  if (filter < 0.2) query.status = pick(STATUSES);
  else if (filter < 0.4) query.q = pick(WORDS);
  else if (filter < 0.55) {
    const from = new Date(Date.now() + Math.floor(Math.random() * 300) * DAY);
    query.from = from.toISOString().slice(0, 10);
    query.to = new Date(from.getTime() + 30 * DAY).toISOString().slice(0, 10);
  } else if (filter < 0.65) query.accountId = pick(tenant.accountIds);
  return query;
}

function restList(tenants: Tenant[]): Request {
  const tenant = pick(tenants);
  return {
    method: 'GET',
    path: `/v1/events?${new URLSearchParams(listQuery(tenant))}`,
    headers: { authorization: `Bearer ${pick(tenant.principals)}`, 'x-service-org': tenant.slug },
  };
}

/**
 * The same list as an admin frontend asks the graph for it: the filters typed (the status enum,
 * the start range as days), a page of `first` rows. Pages past the first would follow a cursor
 * from the answer before, which a stateless request generator cannot hold: they are /v1's row.
 */
function graphqlList(tenants: Tenant[]): Request {
  const tenant = pick(tenants);
  const { page: _page, limit, status, from, to, ...rest } = listQuery(tenant);
  const variables = {
    ...rest,
    first: Number(limit),
    status: status?.toUpperCase(),
    startDateFrom: from,
    startDateTo: to,
  };
  return {
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${pick(tenant.principals)}`, 'x-service-org': tenant.slug },
    body: JSON.stringify({
      query: `query($first: Int, $status: EventStatus, $q: String, $startDateFrom: LocalDate, $startDateTo: LocalDate, $accountId: ID) {
        events(first: $first, status: $status, q: $q, startDateFrom: $startDateFrom, startDateTo: $startDateTo, accountId: $accountId) {
          nodes { ${EVENT_FIELDS} } pageInfo { hasNextPage endCursor } pagination { total } } }`,
      variables,
    }),
  };
}

function singleEvent(tenants: Tenant[]): Request {
  const tenant = pick(tenants);
  return {
    method: 'GET',
    path: `/v1/events/${pick(tenant.eventIds)}`,
    headers: { authorization: `Bearer ${tenant.principals[0]}`, 'x-service-org': tenant.slug },
  };
}

function listings(tenants: Tenant[]): Request {
  const tenant = pick(tenants);
  return {
    method: 'GET',
    path: `/live/sales/listings?page=${1 + Math.floor(Math.random() * 5)}&limit=${pick(['5', '10', '20'])}`,
    headers: { 'x-channel-key': pick(tenant.channelKeys) },
  };
}

/**
 * An admin's event screen: the event, its venue, a page of its occurrences (8 to 12: the cache key
 * varies as screens do), each with its counters and its ticket types, each with its tickets at that
 * occurrence (the edge's counters) and its price.
 */
const EVENT_DETAIL = `query ($id: ID!, $occurrences: Int!) {
  event(id: $id) {
    id name status timezone onSaleDate
    venue { id name city }
    occurrences(first: $occurrences) {
      pageInfo { hasNextPage endCursor }
      nodes {
        id startsAt status capacity
        sales { capacity sold held available }
        ticketTypes { edges { sales { capacity sold held available } node { id name priceAmount currency } } }
      }
    }
  }
}`;

/** An admin's orders screen: a page of 25 orders, each with its customer and its lines with their event and occurrence. */
const ORDERS_SCREEN = `query ($after: String) {
  orders(first: ${ORDERS_PAGE}, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes {
      id orderNumber status totalAmount currency createdAt
      customer { id email firstName lastName }
      lineItems { id quantity ticketTypeName totalAmount event { id name } occurrence { id startsAt } }
    }
  }
}`;

function graphRequest(graph: GraphTenant, principal: string, body: unknown): Request {
  return {
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${principal}`, 'x-service-org': graph.slug },
    body: JSON.stringify(body),
  };
}

function eventDetail(graph: GraphTenant): Request {
  const variables = { id: pick(graph.events).id, occurrences: 8 + Math.floor(Math.random() * 5) };
  return graphRequest(graph, pick(graph.principals), { query: EVENT_DETAIL, variables });
}

function ordersPage(graph: GraphTenant): Request {
  return graphRequest(graph, pick(graph.principals), { query: ORDERS_SCREEN, variables: { after: pick(graph.orderPages) } });
}

interface StatementCount {
  /** Statements per request, authentication's left out. */
  min: number;
  max: number;
  mean: number;
  /** Requests that also read authentication (rights reloaded after a change notice emptied the cache), and its statements. */
  authReloads: number;
  authStatements: number;
  /** The statements of one request, each as its first words. */
  example: string[];
}

/**
 * What authentication reads (src/auth), first table named: a request reads them only when the
 * authentication cache lost its caller's entry. Every change notice of those tables empties it; an
 * API key's last use is stamped (at most every 10 s), which is one.
 */
const AUTH_READ = /^SELECT [^]*? FROM "public"\."(people|users|organisations|api_keys|roles|role_assignments|embed_sessions|channel_keys)"/;

/** A statement as the API sent it (bench/floor-server.ts sends it again). */
interface FloorSample {
  text: string;
  values: unknown[];
}

/** The events list's statement (src/services/events.ts listEvents): the page, its total and counts. */
const LIST_STATEMENT = /^\s*WITH matching AS MATERIALIZED/;
/** List requests whose statement the floor rows send again, at random. */
const FLOOR_SAMPLES = 300;

/**
 * Statements per request of a graph query, counted on the pool's query path (src/db/client.ts
 * watchStatements: every statement a pooled connection sends, Prisma's and the hand-written ones,
 * attributed to the request by its X-Request-Id) in an API served in this process from the sources,
 * on the same database. One request at a time, each a first ask (no result cache), after each
 * principal's first request (its rights are then in the authentication cache, as in production).
 */
async function countStatements(
  url: string,
  graph: GraphTenant,
  tenants: Tenant[],
): Promise<{ counts: { detail: StatementCount; orders: StatementCount }; floor: Record<'list' | 'graphql', FloorSample[]> }> {
  const config = loadConfig({
    DATABASE_URL: url,
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    MAIL_OUTBOX_ALLOWED: 'true',
    SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    JWT_SIGNING_KEYS: JSON.stringify([{ kid: 'bench', secret: 'b'.repeat(32) }]),
  });
  const runtime = createRuntime(config);
  const server = await startApi(runtime, 0, '127.0.0.1');
  // The authentication cache serves only once change notices are known to arrive (src/db/change-notices.ts).
  for (let waited = 0; !runtime.notices.listening && waited < 10_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
  const byRequest = new Map<string, string[]>();
  const floor: Record<'list' | 'graphql', FloorSample[]> = { list: [], graphql: [] };
  const stop = watchStatements(runtime.db, ({ text, values, requestId }) => {
    if (!requestId) return;
    byRequest.set(requestId, [...(byRequest.get(requestId) ?? []), text]);
    const kind = requestId.split('-')[0];
    if ((kind === 'list' || kind === 'graphql') && LIST_STATEMENT.test(text)) floor[kind].push({ text, values: [...(values ?? [])] });
  });
  try {
    const send = async (request: Request, requestId: string) => {
      const res = await fetch(`${server.url}${request.path}`, {
        method: request.method,
        headers: { ...request.headers, 'x-request-id': requestId },
        body: request.body,
      });
      const body = (await res.json()) as { errors?: unknown };
      if (!res.ok || body.errors) throw new Error(`${request.path}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    };
    for (const principal of graph.principals) {
      await send(graphRequest(graph, principal, { query: '{ venues(first: 1) { nodes { id } } }' }), `warm-${principal.slice(-8)}`);
    }
    const count = async (kind: string, requests: Request[]): Promise<StatementCount> => {
      const counts: number[] = [];
      let example: string[] = [];
      let authReloads = 0;
      let authStatements = 0;
      for (const [i, request] of requests.entries()) {
        const requestId = `${kind}-${i}`;
        await send(request, requestId);
        const sent = byRequest.get(requestId) ?? [];
        const auth = sent.filter((text) => AUTH_READ.test(text)).length;
        if (auth > 0) authReloads += 1;
        authStatements = Math.max(authStatements, auth);
        counts.push(sent.length - auth);
        if (sent.length - auth >= example.length) {
          example = sent.filter((text) => !AUTH_READ.test(text)).map((text) => text.replace(/\s+/g, ' ').trim().slice(0, 60));
        }
      }
      const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
      return { min: Math.min(...counts), max: Math.max(...counts), mean, authReloads, authStatements, example };
    };
    const principalOf = (i: number) => graph.principals[i % graph.principals.length]!;
    const detail = await count(
      'detail',
      graph.events
        .slice(0, STATEMENT_SAMPLES)
        .map((event, i) => graphRequest(graph, principalOf(i), { query: EVENT_DETAIL, variables: { id: event.id, occurrences: 10 } })),
    );
    const orders = await count(
      'orders',
      Array.from({ length: STATEMENT_SAMPLES }, (_, i) =>
        graphRequest(graph, principalOf(i), { query: ORDERS_SCREEN, variables: { after: graph.orderPages[i % graph.orderPages.length] } }),
      ),
    );
    // The floor rows' statements: the list statement of varied requests of each list row.
    for (let i = 0; i < FLOOR_SAMPLES; i += 1) {
      await send(restList(tenants), `list-${i}`);
      await send(graphqlList(tenants), `graphql-${i}`);
    }
    return { counts: { detail, orders }, floor };
  } finally {
    stop();
    await server.stop({ graceMs: 1_000 });
  }
}

let written = 0;
function writeMix(tenants: Tenant[]): Request {
  const roll = Math.random();
  if (roll >= 0.1) return roll < 0.55 ? restList(tenants) : singleEvent(tenants);
  const tenant = pick(tenants);
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${tenant.principals[0]}`, 'x-service-org': tenant.slug };
  written += 1;
  if (written % 2) {
    return {
      method: 'POST',
      path: '/v1/events',
      headers,
      body: JSON.stringify({
        accountId: pick(tenant.accountIds),
        name: `${pick(WORDS)} extra ${written}`,
        timezone: 'UTC',
        status: 'draft',
      }),
    };
  }
  return {
    method: 'PATCH',
    path: `/v1/events/${pick(tenant.eventIds)}`,
    headers,
    body: JSON.stringify({ description: `changed ${written}` }),
  };
}

async function main() {
  console.log(
    `preparing: ${ORGANISATIONS} organisations x ${EVENTS_PER_ORGANISATION} events, occurrences, ticket types, ${CHANNELS_PER_ORGANISATION} channels each ...`,
  );
  const url = await freshDatabase('tks_bench');
  const tenants = await seed(url);
  const graph = await seedGraph(url);

  const { api, origin } = await startBenchApi(url, { ACCESS_TOKEN_TTL: '2h' });
  const basePort = await findFreePort();
  const baseline = spawnProcess(['--import', 'tsx', 'bench/baseline-server.ts'], { PORT: String(basePort) }, { command: process.execPath });
  const rss = peakRssSampler(() => api.child.pid!);
  const floors: Spawned[] = [];
  const floorFiles: string[] = [];
  try {
    await baseline.waitFor(/listening/);
    await principals(origin, url, tenants);
    await graphPrincipalsAndOrders(origin, graph);
    const { counts: statements, floor } = await countStatements(url, graph, tenants);
    const sample = await fetch(`${origin}${restList(tenants).path}`, { headers: restList(tenants).headers });
    if (sample.status !== 200) throw new Error(`GET /v1/events answered ${sample.status}: ${await sample.text()}`);
    console.log(
      `principals: ${tenants.reduce((n, t) => n + t.principals.length, 0)} (API keys and staff tokens); channel keys: ${tenants.reduce((n, t) => n + t.channelKeys.length, 0)}; ` +
        `list statements for the floor rows: ${floor.list.length} (/v1), ${floor.graphql.length} (GraphQL)`,
    );
    const floorOrigins: Record<string, { origin: string; pid: number }> = {};
    for (const kind of ['list', 'graphql'] as const) {
      const file = path.join(os.tmpdir(), `tks-bench-floor-${kind}-${process.pid}.json`);
      writeFileSync(file, JSON.stringify(floor[kind]));
      floorFiles.push(file);
      const port = await findFreePort();
      const server = spawnProcess(
        ['--import', 'tsx', 'bench/floor-server.ts'],
        { PORT: String(port), DATABASE_URL: url, FLOOR_SAMPLES: file, DATABASE_POOL_SIZE: process.env.BENCH_POOL_SIZE ?? '10' },
        { command: process.execPath },
      );
      floors.push(server);
      await server.waitFor(/listening/);
      floorOrigins[kind] = { origin: `http://127.0.0.1:${port}`, pid: server.child.pid! };
    }
    const floorRequest = (kind: 'list' | 'graphql') => (): Request => ({
      method: 'GET',
      path: `/?i=${Math.floor(Math.random() * floor[kind].length)}`,
      headers: {},
    });

    const rows: Row[] = [];
    // BENCH_ONLY=list,graphql,single,listings,writes measures only those rows (for profiling).
    const only = process.env.BENCH_ONLY?.split(',');
    const wanted = (row: string) => !only || only.includes(row);
    rows.push(
      await measure('baseline: bare graphql-yoga hello world', 'baseline', `http://127.0.0.1:${basePort}`, baseline.child.pid!, () => ({
        method: 'POST',
        path: '/graphql',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ hello }' }),
      })),
    );
    const measured: Array<[string, string, Row['kind'], (t: typeof tenants) => Request]> = [
      ['list', 'GET /v1/events (random principal, page, size, filter)', 'list', restList],
      ['graphql', 'GraphQL events(...) (random principal, first page, size, typed filter)', 'list', graphqlList],
      ['single', 'GET /v1/events/{id} (random event)', 'read', singleEvent],
      ['listings', 'GET /live/sales/listings (20 channels, random page)', 'read', listings],
      ['writes', 'write mix: 10% create/update, 90% lists and reads', 'write', writeMix],
      [
        'detail',
        `GraphQL event detail: event, venue, ${GRAPH_OCCURRENCES} occurrences, their ticket types and counters`,
        'graph',
        () => eventDetail(graph),
      ],
      ['orders', `GraphQL orders page: ${ORDERS_PAGE} orders, customer, lines with event and occurrence`, 'graph', () => ordersPage(graph)],
    ];
    const counted: Record<string, StatementCount> = statements;

    // The headline: each read row from the first request of a new production process (no warm-up),
    // the database as warm as the other rows find it.
    for (const [key, name, kind, next] of measured) {
      if (!wanted(key) || kind === 'write') continue;
      const cold = await startBenchApi(url, { ACCESS_TOKEN_TTL: '2h' });
      try {
        const row = await measure(`cold: ${name}`, kind, cold.origin, cold.api.child.pid!, () => next(tenants), false);
        rows.push({ ...row, key, round: 0, statements: counted[key] });
      } finally {
        await cold.api.stop();
      }
    }

    const printWalks = OUTSIDE ? await outsideWalks(url, tenants, `http://127.0.0.1:${basePort}`, wanted) : undefined;

    // BENCH_ROUNDS (3) repeats the rows in the same API process: memory that climbs from round to
    // round is a leak, not V8's heap between collections. Each round measures the floors first.
    const rssAfterRound: number[] = [];
    for (let round = 1; round <= ROUNDS; round += 1) {
      const label = ROUNDS > 1 ? `round ${round}: ` : '';
      for (const kind of ['list', 'graphql'] as const) {
        if (!wanted(kind)) continue;
        const { origin: floorOrigin, pid } = floorOrigins[kind]!;
        const what = kind === 'list' ? '/v1/events' : 'GraphQL events';
        const row = await measure(
          `${label}floor: node:http + pg running ${what}' statement`,
          'floor',
          floorOrigin,
          pid,
          floorRequest(kind),
        );
        rows.push({ ...row, key: kind, round });
      }
      for (const [key, name, kind, next] of measured) {
        if (!wanted(key)) continue;
        const row = await measure(`${label}${name}`, kind, origin, api.child.pid!, () => next(tenants));
        rows.push({ ...row, key, round, statements: counted[key] });
      }
      rssAfterRound.push(rssOf(api.child.pid!));
      console.log(`API RSS after round ${round}: ${rssAfterRound.at(-1)!.toFixed(0)} MB (${await heapOf(origin)})`);
    }
    const endRss = rssOf(api.child.pid!);

    const base = rows[0]!.requestsPerSecond;
    // A list row's floor: that round's (the cold pass is held against the first round's).
    const floorOf = (r: Row) => rows.find((f) => f.kind === 'floor' && f.key === r.key && f.round === Math.max(1, r.round ?? 1));
    console.log(
      `\n${new Date().toISOString()}; node ${process.version} (every process of the run); ${CONNECTIONS} connections, ${DURATION} s per row (cold: from a new process's first request; warm: after a 2 s warm-up); ` +
        `${ORGANISATIONS} organisations, ${ORGANISATIONS * EVENTS_PER_ORGANISATION} events\n`,
    );
    console.log(
      '| run | req/s | p50 ms | p99 ms | ratio to baseline | of the floor | target | CPU ms/request | statements/request | non-2xx | errors |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) {
      const ratio = r.requestsPerSecond / base;
      const floorRow = r.kind === 'list' ? floorOf(r) : undefined;
      const ofFloor = floorRow ? r.requestsPerSecond / floorRow.requestsPerSecond : undefined;
      const target =
        r.kind === 'baseline' || r.kind === 'floor'
          ? '—'
          : r.kind === 'list'
            ? `>= ${LIST_RATIO_TARGET}x, p99 < ${LIST_P99_TARGET_MS} ms, >= ${FLOOR_TARGET}x the floor: ${verdict(
                ratio >= LIST_RATIO_TARGET && r.p99 < LIST_P99_TARGET_MS && ofFloor !== undefined && ofFloor >= FLOOR_TARGET,
              )}`
            : r.kind === 'read'
              ? `>= 0.15x, p99 < 100 ms: ${verdict(ratio >= 0.15 && r.p99 < 100)}`
              : r.kind === 'graph'
                ? `<= ${STATEMENTS_TARGET} statements/request: ${verdict(r.statements !== undefined && r.statements.max <= STATEMENTS_TARGET)}`
                : `>= 0.05x: ${verdict(ratio >= 0.05)}`;
      const perRequest = r.statements
        ? `${r.statements.min === r.statements.max ? r.statements.max : `${r.statements.min}-${r.statements.max}`}` +
          (r.statements.authReloads ? ` (+${r.statements.authStatements} auth in ${r.statements.authReloads} of ${STATEMENT_SAMPLES})` : '')
        : '—';
      console.log(
        `| ${r.name} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${ratio.toFixed(3)}x | ${ofFloor === undefined ? '—' : `${ofFloor.toFixed(2)}x`} | ${target} | ${r.cpuMs.toFixed(2)} | ${perRequest} | ${r.non2xx} | ${r.errors} |`,
      );
    }
    for (const [key, count] of Object.entries(statements)) {
      console.log(
        `\nStatements per ${key} request (${STATEMENT_SAMPLES} requests, one at a time, counted on the pool's query path): ` +
          `${count.min}-${count.max}, mean ${count.mean.toFixed(2)}, besides authentication's reads in ${count.authReloads} ` +
          `(up to ${count.authStatements}: rights reloaded after a change notice emptied the cache); one request's:\n` +
          count.example.map((text) => `  ${text}`).join('\n'),
      );
    }
    console.log(
      `\nAPI process RSS: peak ${rss.peak().toFixed(0)} MB, at the end ${endRss.toFixed(0)} MB (target < ${RSS_TARGET_MB} MB at the end: ${verdict(endRss < RSS_TARGET_MB)})` +
        (ROUNDS > 1
          ? `; after each round ${rssAfterRound.map((mb) => mb.toFixed(0)).join(' / ')} MB (no growth, 10% allowed: ${verdict(
              !grewAcrossRounds(rssAfterRound[0]!, rssAfterRound.at(-1)!),
            )})`
          : ''),
    );
    printWalks?.(rows);
  } finally {
    rss.stop();
    await Promise.all([api.stop(), baseline.stop(), ...floors.map((floor) => floor.stop())]);
    for (const file of floorFiles) rmSync(file, { force: true });
  }
}

/**
 * `BENCH_OUTSIDE=1` (Go installed): bench/outside/lists.go, Go's net/http and nothing of this
 * repository, walks the baseline and each list row of the same shape (principals, pages, sizes,
 * filters) at the same connections for the same time, each list row against a new process from
 * its first request, as the cold pass met it, then the same process again. It walks right after
 * the cold pass, on the catalogue the list rows read (the warm rounds' write mix adds events).
 * The answered function prints the walk beside the rows: the benchmark's cold figure against the
 * walk's cold one and its first warm round against the walk's second (target: within 20%), each
 * one's share of its own baseline beside them.
 */
async function outsideWalks(
  url: string,
  tenants: Tenant[],
  baselineOrigin: string,
  wanted: (row: string) => boolean,
): Promise<(rows: Row[]) => void> {
  const binary = path.join(os.tmpdir(), `tks-bench-lists-walk-${process.pid}`);
  const tenantsFile = path.join(os.tmpdir(), `tks-bench-walk-tenants-${process.pid}.json`);
  type Walked = { requests: number; requestsPerSecond: number; p50: number; p99: number; non2xx: number; errors: number; cpuMs: number };
  const walk = async (row: string, origin: string): Promise<Walked> => {
    const out = await outputOf(binary, [
      `-origin=${origin}`,
      `-row=${row}`,
      `-tenants=${tenantsFile}`,
      `-connections=${CONNECTIONS}`,
      `-duration=${DURATION}s`,
    ]);
    return JSON.parse(out.trim().split('\n').at(-1)!) as Walked;
  };
  const walks: Array<{ key: 'list' | 'graphql'; round: 0 | 1; walked: Walked; apiCpu: number }> = [];
  const rowName = (key: 'list' | 'graphql') => (key === 'list' ? 'GET /v1/events' : 'GraphQL events(...)');
  let base: Walked;
  try {
    await outputOf('go', ['build', '-o', binary, 'bench/outside/lists.go']);
    writeFileSync(tenantsFile, JSON.stringify(tenants.map(({ slug, accountIds, principals }) => ({ slug, accountIds, principals }))));
    base = await walk('baseline', baselineOrigin);
    for (const key of ['list', 'graphql'] as const) {
      if (!wanted(key)) continue;
      const fresh = await startBenchApi(url, { ACCESS_TOKEN_TTL: '2h' });
      try {
        // Cold: the process's first request is the walk's; warm: the same process walked again.
        for (const round of [0, 1] as const) {
          const cpuBefore = cpuMsOf(fresh.api.child.pid!);
          const walked = await walk(key, fresh.origin);
          const apiCpu = (cpuMsOf(fresh.api.child.pid!) - cpuBefore) / Math.max(1, walked.requests);
          walks.push({ key, round, walked, apiCpu });
        }
      } finally {
        await fresh.api.stop();
      }
    }
  } finally {
    rmSync(binary, { force: true });
    rmSync(tenantsFile, { force: true });
  }
  return (rows) => {
    console.log(`\n=== independent walk: bench/outside/lists.go (Go net/http), each list row in a new process, cold then warm ===\n`);
    console.log('| run | req/s | p50 ms | p99 ms | ratio to its baseline | API CPU ms/request | walk CPU ms/request | non-2xx | errors |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    const line = (name: string, w: Walked, apiCpu: string) =>
      console.log(
        `| ${name} | ${w.requestsPerSecond.toFixed(0)} | ${w.p50.toFixed(0)} | ${w.p99.toFixed(0)} | ${(w.requestsPerSecond / base.requestsPerSecond).toFixed(3)}x | ${apiCpu} | ${(w.cpuMs / Math.max(1, w.requests)).toFixed(2)} | ${w.non2xx} | ${w.errors} |`,
      );
    line('walk: bare graphql-yoga hello world', base, '—');
    const compared: string[] = [];
    for (const { key, round, walked, apiCpu } of walks) {
      line(`walk, ${round === 0 ? 'cold' : 'warm'}: ${rowName(key)}`, walked, apiCpu.toFixed(2));
      const ours = rows.find((r) => r.kind === 'list' && r.key === key && r.round === round);
      if (!ours) continue;
      const ratio = ours.requestsPerSecond / walked.requestsPerSecond;
      compared.push(
        `this benchmark's ${round === 0 ? 'cold' : 'first warm'} ${rowName(key)} against the walk's: ` +
          `${ours.requestsPerSecond.toFixed(0)} / ${walked.requestsPerSecond.toFixed(0)} req/s = ${ratio.toFixed(2)}x (within 20%: ${verdict(Math.abs(ratio - 1) <= 0.2)}); ` +
          `share of each one's baseline ${(ours.requestsPerSecond / rows[0]!.requestsPerSecond).toFixed(3)}x / ${(walked.requestsPerSecond / base.requestsPerSecond).toFixed(3)}x; ` +
          `p99 ${ours.p99} / ${walked.p99.toFixed(0)} ms`,
      );
    }
    console.log(`\n${compared.join('\n')}`);
  };
}

const verdict = (ok: boolean) => (ok ? 'met' : 'NOT met');
/** The list rows' targets: a share of the bare baseline, a p99, and a share of the floor row (its own statement alone). */
const LIST_RATIO_TARGET = 0.35;
const LIST_P99_TARGET_MS = 50;
const FLOOR_TARGET = 0.9;
const RSS_TARGET_MB = 200;

/** Where the API's memory is, from its own /metrics (prom-client's process and heap gauges). */
async function heapOf(origin: string): Promise<string> {
  const text = await fetch(`${origin}/metrics`).then(
    (res) => (res.ok ? res.text() : ''),
    () => '',
  );
  const gauge = (name: string) => {
    const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(text);
    return match ? `${(Number(match[1]) / 1_048_576).toFixed(0)} MB` : '?';
  };
  // Collection pauses on the main thread since the process started, per kind of collection
  // (minor: the young generation's scavenges; major: mark-compact; incremental: marking steps).
  const byKind = new Map<string, { seconds: number; count: number }>();
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_(sum|count)\{kind="(\w+)"\} ([0-9.e+-]+)$/gm)) {
    const kind = byKind.get(m[2]!) ?? { seconds: 0, count: 0 };
    if (m[1] === 'sum') kind.seconds = Number(m[3]);
    else kind.count = Number(m[3]);
    byKind.set(m[2]!, kind);
  }
  const gcSeconds = [...byKind.values()].reduce((sum, kind) => sum + kind.seconds, 0);
  const kinds = [...byKind].map(([kind, { seconds, count }]) => `${kind} ${count} ${seconds.toFixed(1)} s`).join(', ');
  return `V8 heap ${gauge('nodejs_heap_size_total_bytes')} of which used ${gauge('nodejs_heap_size_used_bytes')}, external ${gauge('nodejs_external_memory_bytes')}; GC pauses so far ${gcSeconds.toFixed(1)} s (${kinds})`;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
