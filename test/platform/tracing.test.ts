import { randomBytes } from 'node:crypto';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing } from '../../src/tracing.ts';
import { createWorker } from '../../workflows/worker.ts';
import { useTestApp } from '../support/app.ts';
import { api, createOrganisation } from '../support/fixtures.ts';
import { createTestEndpoint, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Tracing on (an in-memory exporter in place of OTLP), before the app and the worker exist, as
 * server/main.ts and workflows/worker-main.ts start it: API and worker share this process here, so
 * one exporter sees the spans of both.
 */
const exporter = new InMemorySpanExporter();
await startTracing({ OTEL_SDK_DISABLED: false }, 'api', exporter);

const ENCRYPTION_KEY = randomBytes(32).toString('base64');
const app = useTestApp({ SECRETS_ENCRYPTION_KEY: ENCRYPTION_KEY });
let worker: Worker;
let running: Promise<void>;
let receiver: WebhookReceiver;
beforeAll(async () => {
  ({ worker } = await createWorker({ config: app().config, db: app().runtime.db, logger: app().runtime.logger, prebundled: false }));
  running = worker.run();
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  worker?.shutdown();
  await running;
  await receiver?.close();
});

describe('traces', { timeout: 90_000 }, () => {
  it('one trace follows POST /v1/events through its GraphQL operation, the workflow and its activity to the webhook attempt and the receiver', async () => {
    const org = await createOrganisation(app, 'traces');
    await createTestEndpoint(app().runtime.db, Buffer.from(ENCRYPTION_KEY, 'base64'), {
      organisationId: org.organisation.id,
      accountId: org.account.id,
      receiver,
    });
    // A caller's trace is continued: the request's span becomes a child of this one.
    const callerTraceId = randomBytes(16).toString('hex');
    const created = await api(app, 'POST', '/v1/events', {
      token: org.adminToken,
      org: org.slug,
      body: { accountId: org.account.id, name: 'Traced', timezone: 'Europe/London' },
      headers: { traceparent: `00-${callerTraceId}-${randomBytes(8).toString('hex')}-01` },
    });
    expect(created.status).toBe(201);
    const requestId = created.headers.get('x-request-id');

    const [request] = await receiver.waitForRequests(1, (r) => r.headers['service-event-id'] !== undefined);
    const traceparent = String(request!.headers.traceparent);
    expect(traceparent).toMatch(new RegExp(`^00-${callerTraceId}-[0-9a-f]{16}-01$`));

    let spans: ReadableSpan[] = [];
    for (let i = 0; i < 50; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === callerTraceId);
      if (spans.some((s) => s.name === 'webhook attempt') && spans.some((s) => s.name.startsWith('RunWorkflow'))) break;
    }
    const names = spans.map((s) => s.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'POST /v1/events',
        'graphql mutation CreateEvent',
        'StartWorkflow:deliverBatch',
        'RunWorkflow:deliverBatch',
        'webhook attempt',
      ]),
    );
    expect(names.some((name) => name.startsWith('RunActivity:') || name.startsWith('RunLocalActivity:'))).toBe(true);

    const http = spans.find((s) => s.name === 'POST /v1/events')!;
    expect(http.attributes).toMatchObject({ 'http.route': '/v1/events', 'http.response.status_code': 201, 'request.id': requestId });
    expect(spans.find((s) => s.name === 'graphql mutation CreateEvent')!.attributes['request.id']).toBe(requestId);
    const attempt = spans.find((s) => s.name === 'webhook attempt')!;
    expect(attempt.attributes['http.response.status_code']).toBe(200);
    // The request id travels as baggage: on the workflow start (API) and the attempt (worker) too.
    expect(spans.find((s) => s.name === 'StartWorkflow:deliverBatch')!.attributes['request.id']).toBe(requestId);
    expect(attempt.attributes['request.id']).toBe(requestId);
    expect(request!.headers.baggage).toBeUndefined();
    // The receiver's traceparent names the attempt's span: the receiver continues this trace.
    expect(traceparent.split('-')[2]).toBe(attempt.spanContext().spanId);
  });
});
