import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { findFreePort } from '../../src/embedded/temporal.ts';
import { startMetricsServer } from '../../src/http/metrics.ts';
import { views } from '../../src/webhooks/payloads.ts';
import { startTestApp, useTestApp } from '../support/app.ts';
import { api, createOrganisation, graphql } from '../support/fixtures.ts';
import { spawnProcess, type Spawned } from '../support/process.ts';
import { createTestEndpoint, recordTestEvent, startWebhookReceiver } from '../support/webhook-receiver.ts';

/** The samples of a Prometheus text exposition: name, labels, value. */
function samples(text: string): Array<{ name: string; labels: Record<string, string>; value: number }> {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample line: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]));
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

/** The sum of the samples named `name` whose labels include `labels`. */
function value(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples(text).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return found.length === 0 ? undefined : found.reduce((sum, s) => sum + s.value, 0);
}

const ENCRYPTION_KEY = randomBytes(32).toString('base64');
const app = useTestApp({ SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY });
const workers: Spawned[] = [];
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
});

describe('API metrics', () => {
  it('GET /metrics counts requests by route template and status, GraphQL operations by name and outcome, and the pool', async () => {
    const org = await createOrganisation(app, 'metrics');
    const auth = { token: org.adminToken, org: org.slug };
    expect((await api(app, 'GET', '/v1/events', auth)).status).toBe(200);
    const missing = `evt_${'0'.repeat(22)}`;
    expect((await api(app, 'GET', `/v1/events/${missing}`, auth)).status).toBe(404);
    expect((await graphql(app, 'query MetricsProbe { apiVersions { current } }')).status).toBe(200);
    const failing = await graphql(app, 'query MetricsFailing { event(id: "evt_nope") { id } }', {}, auth);
    expect(failing.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    const res = await fetch(`${app().url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(value(text, 'http_requests_total', { method: 'GET', route: '/v1/events', status: '200' })).toBeGreaterThanOrEqual(1);
    // The template, never the id: a label per resource would grow without bound.
    expect(value(text, 'http_requests_total', { method: 'GET', route: '/v1/events/{id}', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(missing);
    expect(value(text, 'http_request_duration_seconds_count', { route: '/v1/events', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(value(text, 'http_request_duration_seconds_bucket', { route: '/v1/events', le: '+Inf' })).toBeGreaterThanOrEqual(1);
    expect(value(text, 'http_requests_total', { method: 'POST', route: '/graphql', status: '200' })).toBeGreaterThanOrEqual(2);
    expect(value(text, 'graphql_operations_total', { operation: 'MetricsProbe', type: 'query', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(
      value(text, 'graphql_operations_total', { operation: 'MetricsFailing', type: 'query', outcome: 'error' }),
    ).toBeGreaterThanOrEqual(1);
    // /v1 routes run their operation through the same pipeline, so they count as operations too.
    expect(value(text, 'graphql_operations_total', { operation: 'Events', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(value(text, 'graphql_operation_duration_seconds_count', { operation: 'MetricsProbe' })).toBeGreaterThanOrEqual(1);
    expect(value(text, 'db_pool_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(0);
    expect(value(text, 'db_pool_connections', { state: 'waiting' })).toBeGreaterThanOrEqual(0);
    expect(value(text, 'webhook_dispatch_backlog')).toBeGreaterThanOrEqual(0);
    expect(value(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('counts throttle refusals by limit name', async () => {
    const before = value(await (await fetch(`${app().url}/metrics`)).text(), 'throttle_refusals_total', { limit: 'webhook-test' }) ?? 0;
    const org = await createOrganisation(app, 'throttle');
    const auth = { token: org.adminToken, org: org.slug };
    const receiver = await startWebhookReceiver();
    try {
      const created = await api(app, 'POST', '/v1/webhook-endpoints', { ...auth, body: { accountId: org.account.id, url: receiver.url } });
      expect(created.status).toBe(201);
      let refused = 0;
      for (let i = 0; i < 25 && refused === 0; i += 1) {
        const test = await api(app, 'POST', `/v1/webhook-endpoints/${created.body.endpoint.id}/test`, auth);
        if (test.status === 429) refused += 1;
      }
      expect(refused).toBe(1);
      const after = value(await (await fetch(`${app().url}/metrics`)).text(), 'throttle_refusals_total', { limit: 'webhook-test' });
      expect(after).toBe(before + 1);
    } finally {
      await receiver.close();
    }
  });

  it('counts what became of each Idempotency-Key', async () => {
    const outcomes = ['stored', 'replayed', 'other_request', 'not_kept'];
    const read = async () => {
      const text = await (await fetch(`${app().url}/metrics`)).text();
      return outcomes.map((outcome) => value(text, 'idempotency_keys_total', { outcome }) ?? 0);
    };
    const org = await createOrganisation(app, 'idem-metrics');
    const auth = { token: org.adminToken, org: org.slug };
    const before = await read();
    const venue = (name: string) =>
      api(app, 'POST', '/v1/venues', { ...auth, body: { accountId: org.account.id, name }, headers: { 'idempotency-key': 'counted' } });
    expect((await venue('Counted')).status).toBe(201);
    expect((await venue('Counted')).headers.get('idempotent-replayed')).toBe('true');
    expect((await venue('Other')).status).toBe(409);
    const signIn = await api(app, 'POST', '/v1/auth/login', {
      body: { email: org.email, password: org.password },
      headers: { 'idempotency-key': 'counted' },
    });
    expect(signIn.status).toBe(200);
    expect((await read()).map((after, i) => after - before[i]!)).toEqual([1, 1, 1, 1]);
  });

  it('is not on the public port when METRICS_ON_API_PORT=false (the production default); METRICS_PORT serves it apart', async () => {
    const closed = await startTestApp({ METRICS_ON_API_PORT: 'false' });
    try {
      expect((await fetch(`${closed.url}/metrics`)).status).toBe(404);
    } finally {
      await closed.stop();
    }
    const { server, port } = await startMetricsServer(0, '127.0.0.1', app().runtime.logger);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      expect(value(await res.text(), 'http_requests_total')).toBeGreaterThan(0);
      expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
      expect((await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' })).status).toBe(404);
    } finally {
      server.close();
    }
  });
});

describe('worker metrics', { timeout: 120_000 }, () => {
  it('a worker serves /metrics on METRICS_PORT with webhook attempts, their latency and settled deliveries', async () => {
    const port = await findFreePort();
    const worker = spawnProcess(['workflows/worker-main.ts'], {
      DATABASE_URL: app().config.DATABASE_URL!,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: app().config.TEMPORAL_TASK_QUEUE,
      SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY,
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      METRICS_PORT: String(port),
      METRICS_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    });
    workers.push(worker);
    await worker.waitFor(/worker running/, 90_000);
    const org = await createOrganisation(app, 'wmetrics');
    const receiver = await startWebhookReceiver();
    try {
      const target = { organisationId: org.organisation.id, accountId: org.account.id };
      await createTestEndpoint(app().runtime.db, Buffer.from(ENCRYPTION_KEY, 'base64'), { ...target, receiver });
      const payload = views.customer({
        id: `cus_${'1'.repeat(22)}`,
        accountId: org.account.id,
        email: 'metrics@example.test',
        firstName: null,
        lastName: null,
        createdAt: new Date(),
        updatedAt: new Date(),
      } as Parameters<typeof views.customer>[0]);
      const { deliveryIds } = await recordTestEvent(app().runtime.db, { ...target, type: 'customer.created', payload });
      app().runtime.dispatcher.dispatch(deliveryIds);
      await receiver.waitForRequests(1);

      let text = '';
      for (let i = 0; i < 50; i += 1) {
        text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        if ((value(text, 'webhook_deliveries_total', { outcome: 'succeeded' }) ?? 0) >= 1) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(value(text, 'webhook_attempts_total', { outcome: 'succeeded', trigger: 'scheduled' })).toBe(1);
      expect(value(text, 'webhook_deliveries_total', { outcome: 'succeeded' })).toBe(1);
      expect(value(text, 'webhook_attempt_duration_seconds_count', { outcome: 'succeeded' })).toBe(1);
      expect(value(text, 'db_pool_connections', { state: 'idle' })).toBeGreaterThanOrEqual(0);
      expect(value(text, 'webhook_dispatch_backlog')).toBeGreaterThanOrEqual(0);
      expect(value(text, 'hold_sweep_cancelled_orders_total')).toBe(0);
    } finally {
      await receiver.close();
      // Not asserted: a clean stop is test/webhooks/worker.test.ts's subject, and tsx's launcher kills a
      // worker whose event loop is busy when the signal comes (143) on a loaded machine.
      await worker.stop('SIGTERM');
    }
  });
});
