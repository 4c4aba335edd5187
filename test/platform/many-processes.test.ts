import { readFileSync } from 'node:fs';
import { createClient } from 'graphql-sse';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createDatabase, type Database } from '../../src/db/client.ts';
import { findFreePort } from '../../src/embedded/temporal.ts';
import { bootstrapOrganisation } from '../../src/services/bootstrap-organisation.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { spawnProcess, type Spawned } from '../support/process.ts';

/**
 * Two API processes and two workers on one database and one Temporal server behave as one
 * service. Requests alternate between the API processes as a round-robin load balancer would. Every
 * process is a real child process started the way production starts it.
 */

interface Api {
  url: string;
  process: Spawned;
  port: number;
}

let database: TestDatabase;
let db: Database;
let env: Record<string, string>;
let apis: Api[] = [];
let workers: Spawned[] = [];
const slug = `many-${Date.now().toString(36)}`;
const email = `admin@${slug}.test`;
const password = 'admin password 1';
let accountId: string;

async function startApi(port?: number): Promise<Api> {
  const chosen = port ?? (await findFreePort());
  const child = spawnProcess(
    ['--import', 'tsx', 'server/main.ts'],
    { ...env, PORT: String(chosen), PUBLIC_URL: `http://127.0.0.1:${chosen}` },
    { command: process.execPath },
  );
  await child.waitFor(/API listening/, 60_000);
  return { url: `http://127.0.0.1:${chosen}`, process: child, port: chosen };
}

async function call(
  api: Api,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: {
      ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      'x-service-org': slug,
      ...options.headers,
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** Milliseconds until `check` holds, polling every 5 ms; fails after `limitMs`. */
async function within(limitMs: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > limitMs) throw new Error(`not within ${limitMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function signIn(api: Api): Promise<string> {
  const res = await call(api, 'POST', '/v1/auth/login', { body: { email, password } });
  expect(res.status).toBe(200);
  return res.body.accessToken as string;
}

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDatabase({ url: database.url, poolSize: 2 });
  const { account } = await bootstrapOrganisation(db, { orgSlug: slug, orgName: 'Many processes', email, password });
  accountId = account.id;
  env = {
    NODE_ENV: 'test',
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `many-${database.name}`,
    JWT_SIGNING_KEYS: JSON.stringify([{ kid: 'many', secret: 'a shared signing secret for both API processes' }]),
    SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    SHUTDOWN_DRAIN_DELAY: '1s',
    LOG_LEVEL: 'info',
  };
  apis = await Promise.all([startApi(), startApi()]);
  workers = [0, 1].map(() => spawnProcess(['--import', 'tsx', 'workflows/worker-main.ts'], env, { command: process.execPath }));
  await Promise.all(workers.map((worker) => worker.waitFor(/worker running/, 90_000)));
}, 180_000);

afterAll(async () => {
  await Promise.all([...apis.map((api) => api.process.stop()), ...workers.map((worker) => worker.stop())]);
  await db?.$disconnect();
  await database?.drop();
});

describe('two API processes and two workers on one database', { timeout: 60_000 }, () => {
  it('an API key revoked through A is refused by B (which had just accepted it) within 250 ms', async () => {
    const [a, b] = apis as [Api, Api];
    const token = await signIn(a);
    const created = await call(a, 'POST', '/v1/api-keys', { token, body: { name: 'revoked across processes', scopes: ['events.read'] } });
    expect(created.status).toBe(201);
    expect((await call(b, 'GET', '/v1/events', { token: created.body.key })).status).toBe(200);
    expect((await call(a, 'POST', `/v1/api-keys/${created.body.apiKey.id}/revoke`, { token })).status).toBe(200);
    const ms = await within(250, async () => (await call(b, 'GET', '/v1/events', { token: created.body.key })).status === 401);
    expect(ms).toBeLessThanOrEqual(250);
  });

  it("an event created through A is in B's list (which had just answered) within 250 ms", async () => {
    const [a, b] = apis as [Api, Api];
    const token = await signIn(a);
    const before = await call(b, 'GET', '/v1/events?limit=100', { token });
    expect(before.status).toBe(200);
    const made = await call(a, 'POST', '/v1/events', { token, body: { accountId, name: 'Seen everywhere', timezone: 'UTC' } });
    expect(made.status).toBe(201);
    await within(250, async () =>
      (await call(b, 'GET', '/v1/events?limit=100', { token })).body.events.some((e: { id: string }) => e.id === made.body.event.id),
    );
  });

  it('an account deleted through A stops its channel key on B within 250 ms', async () => {
    const [a, b] = apis as [Api, Api];
    const token = await signIn(a);
    const account = await call(a, 'POST', '/v1/accounts', { token, body: { name: 'Closing soon' } });
    const channel = await call(a, 'POST', '/v1/sales-channels', {
      token,
      body: { accountId: account.body.account.id, name: 'Shop', slug: `shop-${Date.now().toString(36)}` },
    });
    const key = await call(a, 'POST', `/v1/sales-channels/${channel.body.salesChannel.id}/keys`, { token, body: { kind: 'publishable' } });
    const listings = () => fetch(`${b.url}/live/sales/listings`, { headers: { 'x-channel-key': key.body.key } }).then((res) => res.status);
    expect(await listings()).toBe(200);
    expect((await call(a, 'DELETE', `/v1/accounts/${account.body.account.id}`, { token })).status).toBe(200);
    await within(250, async () => (await listings()) === 401);
  });

  it("a change committed through A reaches a subscription streaming from B (graphql-sse's client)", async () => {
    const [a, b] = apis as [Api, Api];
    const token = await signIn(a);
    const endpoint = await call(a, 'POST', '/v1/webhook-endpoints', {
      token,
      body: { accountId, url: 'http://127.0.0.1:9/hooks', eventTypes: ['event.created'] },
    });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    const client = createClient({
      url: `${b.url}/graphql`,
      headers: { authorization: `Bearer ${token}`, 'x-service-org': slug },
      retryAttempts: 0,
    });
    const received: Array<{ data?: any; errors?: unknown }> = [];
    const dispose = client.subscribe(
      {
        query: 'subscription ($id: ID!) { webhookDeliveryChanged(endpointId: $id) { delivery { eventType } } }',
        variables: { id: endpoint.body.endpoint.id },
      },
      {
        next: (result) => void received.push(result),
        error: (error) => void received.push({ errors: [String(error)] }),
        complete: () => undefined,
      },
    );
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const made = await call(a, 'POST', '/v1/events', { token, body: { accountId, name: 'Streamed', timezone: 'UTC' } });
      expect(made.status).toBe(201);
      await within(10_000, async () => received.length > 0);
      expect(received[0]).toEqual({ data: { webhookDeliveryChanged: { delivery: { eventType: 'event.created' } } } });
    } finally {
      dispose();
    }
  });

  it('40 wrong passwords alternating between A and B are throttled (the count is shared)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 40; i += 1) {
      const api = apis[i % 2]!;
      // Many client addresses: only the per-email count can throttle this.
      const res = await call(api, 'POST', '/v1/auth/login', {
        body: { email, password: 'wrong' },
        headers: { 'x-forwarded-for': `10.9.${i}.1` },
      });
      statuses.push(res.status);
    }
    expect(statuses.filter((status) => status === 401).length).toBeLessThanOrEqual(6);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(30);
    // The lock-out holds for the right password too, on either process. On a slow machine the last
    // wait may be running out: let it, fail once more through A (a longer wait), then ask through B.
    const [{ seconds } = { seconds: 0 }] = await db.$queryRaw<Array<{ seconds: number }>>`
      SELECT coalesce(extract(epoch FROM max("blockedUntil") - now()), 0)::float AS seconds FROM throttles`;
    if (seconds < 1) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, seconds * 1000) + 100));
      const again = await call(apis[0]!, 'POST', '/v1/auth/login', {
        body: { email, password: 'wrong' },
        headers: { 'x-forwarded-for': '10.9.99.1' },
      });
      expect(again.status).toBe(401);
    }
    expect((await call(apis[1]!, 'POST', '/v1/auth/login', { body: { email, password } })).status).toBe(429);
    await db.throttle.deleteMany({});
  });

  it('one Idempotency-Key sent to both processes at once creates one thing and answers the same to all, on /v1 and /graphql', async () => {
    const token = await signIn(apis[0]!);
    const key = `venue-${Date.now()}`;
    const body = { accountId, name: 'Idempotent hall' };
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call(apis[i % 2]!, 'POST', '/v1/venues', { token, body, headers: { 'idempotency-key': key } })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(8).fill(201));
    expect(new Set(answers.map((answer) => answer.body.venue.id)).size).toBe(1);
    expect(answers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true')).toHaveLength(7);
    expect(await db.venue.count({ where: { name: 'Idempotent hall' } })).toBe(1);
    const other = await call(apis[1]!, 'POST', '/v1/venues', {
      token,
      body: { ...body, name: 'Another hall' },
      headers: { 'idempotency-key': key },
    });
    expect([other.status, other.body.code]).toEqual([409, 'CONFLICT']);

    // A GraphQL mutation with a key of its own, likewise.
    const mutation = {
      query: 'mutation($input: CreateVenueInput!) { createVenue(input: $input) { venue { id } } }',
      variables: { input: { accountId, name: 'Idempotent stage' } },
    };
    const graphAnswers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        call(apis[i % 2]!, 'POST', '/graphql', { token, body: mutation, headers: { 'idempotency-key': `${key}-graph` } }),
      ),
    );
    expect(new Set(graphAnswers.map((answer) => answer.body.data.createVenue.venue.id)).size).toBe(1);
    expect(graphAnswers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true')).toHaveLength(7);
    expect(await db.venue.count({ where: { name: 'Idempotent stage' } })).toBe(1);
  });

  it('a rolling restart of A under load fails no request: A drains (not ready first), B answers, A comes back', async () => {
    const token = await signIn(apis[1]!);
    const ready = new Map(apis.map((api) => [api.port, true]));
    let polling = true;
    // A load balancer's view: /readyz of each process every 100 ms.
    const health = (async () => {
      while (polling) {
        await Promise.all(
          apis.map(async (api) =>
            ready.set(
              api.port,
              await fetch(`${api.url}/readyz`).then(
                (res) => res.ok,
                () => false,
              ),
            ),
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const failures: string[] = [];
    let served = 0;
    let next = 0;
    const load = (async () => {
      const until = Date.now() + 8_000;
      while (Date.now() < until) {
        const candidates = apis.filter((api) => ready.get(api.port));
        const api = candidates[next++ % Math.max(candidates.length, 1)];
        if (!api) {
          failures.push('no process ready');
          await new Promise((resolve) => setTimeout(resolve, 20));
          continue;
        }
        try {
          const res = await call(api, 'GET', '/v1/events?limit=5', { token });
          if (res.status === 200) served += 1;
          else failures.push(`${api.port}: ${res.status}`);
        } catch (error) {
          failures.push(`${api.port}: ${(error as Error).message}`);
        }
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const old = apis[0]!;
    expect(await old.process.stop('SIGTERM')).toBe(0);
    expect(old.process.output()).toMatch(/shutting down: not ready/);
    apis[0] = await startApi(old.port);
    await load;
    polling = false;
    await health;
    expect(failures).toEqual([]);
    expect(served).toBeGreaterThan(50);
  });
});

describe('API_PROCESSES: one port, several API processes under one primary', { timeout: 120_000 }, () => {
  const listening = (output: string) => [...output.matchAll(/"pid":(\d+)[^\n]*"msg":"API listening"/g)].map((m) => Number(m[1]));
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it('serves one port from two processes, forks again one that dies, and stops them all on SIGTERM', async () => {
    const port = await findFreePort();
    const primary = spawnProcess(
      ['--import', 'tsx', 'server/main.ts'],
      { ...env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, API_PROCESSES: '2' },
      { command: process.execPath },
    );
    try {
      await primary.waitFor(/API primary forked its processes/, 60_000);
      await within(60_000, async () => new Set(listening(primary.output())).size === 2);
      const [first, second] = listening(primary.output());
      expect(first).not.toBe(primary.child.pid);
      expect(second).not.toBe(first);
      // Forked with the API's allocator settings (src/malloc-env.ts; the test's own env has none).
      const environ = readFileSync(`/proc/${first}/environ`, 'utf8').split('\0');
      expect(environ).toContain('MALLOC_ARENA_MAX=1');
      expect(environ).toContain('MALLOC_MMAP_THRESHOLD_=32768');
      const api: Api = { url: `http://127.0.0.1:${port}`, process: primary, port };
      // Signed-in requests on fresh connections, spread over both processes, all answered.
      const token = await signIn(api);
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => call(api, 'GET', '/v1/events', { token, headers: { connection: 'close' } })),
      );
      expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 20 }, () => 200));

      // One process dies: the primary forks another, and the port keeps answering meanwhile.
      process.kill(first!, 'SIGKILL');
      await primary.waitFor(/API process died; forking another/, 10_000);
      expect((await call(api, 'GET', '/v1/events', { token })).status).toBe(200);
      await within(30_000, async () => new Set(listening(primary.output())).size === 3);
      const third = listening(primary.output()).at(-1)!;
      expect(alive(third)).toBe(true);

      // SIGTERM to the primary stops every process, and it exits 0.
      expect(await primary.stop('SIGTERM')).toBe(0);
      await within(5_000, async () => !alive(second!) && !alive(third));
    } finally {
      await primary.stop('SIGKILL').catch(() => undefined);
    }
  });
});
