import autocannon from 'autocannon';
import { loadConfig } from '../src/config.ts';
import { createDatabase } from '../src/db/client.ts';
import { findFreePort } from '../src/embedded/temporal.ts';
import { newId } from '../src/ids.ts';
import { bootstrapOrganisation } from '../src/services/bootstrap-organisation.ts';
import { spawnProcess } from '../test/support/process.ts';
import { freshDatabase } from './support.ts';

/**
 * `npm run bench`: the API against real PostgreSQL with 1,000 events in one account, measured with
 * autocannon in one run beside a bare graphql-yoga hello-world (the baseline):
 *   - GET /v1/events?limit=20 with an organisation API key,
 *   - the same list through GraphQL with a staff access token.
 * Prints requests/s, p50 and p99 for each and each one's ratio to the baseline.
 * Target (issue 4): each authenticated list >= 0.35x the baseline's requests/s, p99 < 50 ms at
 * 50 connections. Needs PostgreSQL: TEST_PG_ADMIN_URL, else the local server scripts/ensure-postgres.sh starts.
 */

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const EVENTS = 1000;

function prepareDatabase(): Promise<string> {
  return freshDatabase('tks_bench');
}

async function seed(url: string) {
  const db = createDatabase({ url, poolSize: 4 });
  const org = await bootstrapOrganisation(db, { orgSlug: 'bench', orgName: 'Bench', email: 'bench@bench.test', password: 'bench password' });
  const now = Date.now();
  await db.event.createMany({
    data: Array.from({ length: EVENTS }, (_, i) => ({
      id: newId('event'),
      organisationId: org.organisation.id,
      accountId: org.account.id,
      name: `Event ${i}`,
      description: `The ${i}th event`,
      status: 'on_sale' as const,
      timezone: 'Europe/London',
      tags: ['bench'],
      createdAt: new Date(now - i * 1000),
    })),
  });
  await db.$disconnect();
  return org;
}

async function waitForHttp(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

interface Figures {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function measure(name: string, options: autocannon.Options): Promise<Figures> {
  await autocannon({ ...options, connections: 10, duration: 2 });
  const result = await autocannon({ ...options, connections: CONNECTIONS, duration: DURATION });
  return {
    name,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

async function main() {
  console.log(`preparing: PostgreSQL database with ${EVENTS} events in one account ...`);
  const url = await prepareDatabase();
  const org = await seed(url);

  const apiPort = await findFreePort();
  const api = spawnProcess(['server/main.ts'], {
    DATABASE_URL: url,
    PORT: String(apiPort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    NODE_ENV: 'development',
    JWT_SIGNING_KEYS: JSON.stringify([{ kid: 'bench', secret: 'b'.repeat(32) }]),
    DATABASE_POOL_SIZE: '10',
  });
  const basePort = await findFreePort();
  const baseline = spawnProcess(['bench/baseline-server.ts'], { PORT: String(basePort) });
  try {
    await Promise.all([waitForHttp(`http://127.0.0.1:${apiPort}/healthz`), baseline.waitFor(/listening/)]);
    const origin = `http://127.0.0.1:${apiPort}`;
    const login = await fetch(`${origin}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-org': 'bench' },
      body: JSON.stringify({ email: 'bench@bench.test', password: 'bench password' }),
    }).then((r) => r.json());
    const key = await fetch(`${origin}/v1/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-org': 'bench', authorization: `Bearer ${login.accessToken}` },
      body: JSON.stringify({ name: 'bench', scopes: ['events.read'] }),
    }).then((r) => r.json());

    const check = await fetch(`${origin}/v1/events?limit=20`, { headers: { authorization: `Bearer ${key.key}`, 'x-service-org': 'bench' } });
    const checked = await check.json();
    if (check.status !== 200 || checked.events?.length !== 20 || checked.pagination?.total !== EVENTS) {
      throw new Error(`GET /v1/events did not answer 20 of ${EVENTS} events: ${check.status} ${JSON.stringify(checked).slice(0, 300)}`);
    }
    const eventFields = 'id organisationId accountId name description status venueId timezone onSaleDate offSaleDate occurrenceCount ticketCount productCount tags isDeleted createdAt updatedAt createdBy';

    const results = [
      await measure('baseline: bare graphql-yoga hello world', {
        url: `http://127.0.0.1:${basePort}/graphql`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ hello }' }),
      }),
      await measure('GET /v1/events?limit=20 (API key)', {
        url: `${origin}/v1/events?limit=20`,
        headers: { authorization: `Bearer ${key.key}`, 'x-service-org': 'bench' },
      }),
      await measure('GraphQL events(limit: 20) (staff token)', {
        url: `${origin}/graphql`,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${login.accessToken}`, 'x-service-org': 'bench' },
        body: JSON.stringify({ query: `{ events(limit: 20) { nodes { ${eventFields} } pagination { page limit total totalPages hasNext hasPrev } } }` }),
      }),
    ];
    const base = results[0]!.requestsPerSecond;
    console.log(`\n${CONNECTIONS} connections, ${DURATION} s each, after a 2 s warm-up; ${EVENTS} events in one account\n`);
    console.log('| run | req/s | p50 ms | p99 ms | ratio to baseline | target | non-2xx | errors |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const [i, r] of results.entries()) {
      const ratio = r.requestsPerSecond / base;
      const target = i === 0 ? '—' : `>= 0.35x and p99 < 50 ms: ${ratio >= 0.35 && r.p99 < 50 ? 'met' : 'NOT met'}`;
      console.log(`| ${r.name} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${ratio.toFixed(2)}x | ${target} | ${r.non2xx} | ${r.errors} |`);
    }
  } finally {
    await Promise.all([api.stop(), baseline.stop()]);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
