import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../../src/db/migrate.ts';
import type { WebhookWorkflows } from '../../src/webhooks/workflow-contract.ts';
import { WORKFLOW_BUNDLE_PATH } from '../../workflows/worker.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { spawnProcess, TSX, type Spawned } from '../support/process.ts';

let database: TestDatabase;
let connection: Connection;
let client: Client;
beforeAll(async () => {
  database = await createTestDatabase();
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection });
});
afterAll(async () => {
  await connection?.close();
  await database?.drop();
});

function workerEnv(taskQueue: string, extra: Record<string, string> = {}) {
  return {
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    LOG_LEVEL: 'info',
    ...extra,
  };
}

/** Runs the recovery workflow of an endpoint that has no failed deliveries: one activity, one query. */
function recoverNothing(taskQueue: string, name: string) {
  const input = {
    organisationId: 'org_none',
    endpointId: `whe_${name}`,
    since: new Date(0).toISOString(),
    until: new Date().toISOString(),
  };
  return client.workflow.execute<WebhookWorkflows['recoverWebhookEndpoint']>('recoverWebhookEndpoint', {
    taskQueue,
    workflowId: `whr_${name}`,
    args: [input],
  });
}

// Each test starts worker processes that bundle the workflows first: seconds, more on a busy machine.
describe('npm run worker', { timeout: 120_000 }, () => {
  it('two workers on one task queue run workflows end to end against the real Temporal server', async () => {
    const taskQueue = `worker-test-${Date.now()}`;
    const workers: Spawned[] = [
      spawnProcess(['workflows/worker-main.ts'], workerEnv(taskQueue)),
      spawnProcess(['workflows/worker-main.ts'], workerEnv(taskQueue)),
    ];
    try {
      await Promise.all(workers.map((w) => w.waitFor(/worker running/, 90_000)));
      // A real workflow whose activity reads the database: recovering endpoints with no failed deliveries.
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => recoverNothing(taskQueue, `${taskQueue}-${i}`)));
      expect(results).toEqual(Array.from({ length: 6 }, () => ({ attempted: 0, succeeded: 0 })));
    } finally {
      const codes = await Promise.all(workers.map((w) => w.stop('SIGTERM')));
      expect(codes).toEqual([0, 0]);
      expect(workers[0]!.output()).toContain('worker stopped');
    }
  });

  it('in production mode runs the pre-built workflow bundle', async () => {
    const build = spawnSync(TSX, ['workflows/bundle.ts'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
    expect(build.status).toBe(0);
    expect(existsSync(WORKFLOW_BUNDLE_PATH)).toBe(true);

    // A stand-in OpenTelemetry collector: tracing on, the worker runs the traced bundle and exports.
    const exported: string[] = [];
    const collector = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        exported.push(`${req.method} ${req.url} ${body}`);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const collectorPort = (collector.address() as AddressInfo).port;
    const taskQueue = `worker-prod-${Date.now()}`;
    const worker = spawnProcess(
      ['workflows/worker-main.ts'],
      workerEnv(taskQueue, {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collectorPort}`,
        NODE_ENV: 'production',
        JWT_SIGNING_KEYS: JSON.stringify([{ kid: 'k1', secret: 'x'.repeat(32) }]),
        SECRETS_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
        MAIL_OUTBOX_ALLOWED: 'true',
      }),
    );
    try {
      await worker.waitFor(/worker running/, 60_000);
      expect(await recoverNothing(taskQueue, taskQueue)).toEqual({ attempted: 0, succeeded: 0 });
      expect(worker.output()).not.toMatch(/bundling|webpack/i);
    } finally {
      expect(await worker.stop()).toBe(0);
      collector.close();
    }
    // Exported on shutdown at the latest: the workflow's span (from the sandbox, through the sink) and its activity's.
    const traces = exported.filter((entry) => entry.startsWith('POST /v1/traces ')).join('\n');
    expect(traces).toContain('RunWorkflow:recoverWebhookEndpoint');
    expect(traces).toContain('RunActivity:recoverFailedDeliveries');
  });

  it('runs the bundle WORKFLOW_BUNDLE names, as npm start has its worker do, without bundling at start', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'workflow-bundle-')), 'workflows.js');
    const build = spawnSync(TSX, ['workflows/bundle.ts', '--out', file], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
    expect(build.status, build.stderr).toBe(0);
    expect(build.stdout).toContain(`wrote ${file}`);
    const taskQueue = `worker-bundle-${Date.now()}`;
    // Development mode: without WORKFLOW_BUNDLE this worker would bundle the workflows itself.
    const worker = spawnProcess(['workflows/worker-main.ts'], workerEnv(taskQueue, { WORKFLOW_BUNDLE: file, LOG_LEVEL: 'debug' }));
    try {
      await worker.waitFor(/worker running/, 60_000);
      expect(await recoverNothing(taskQueue, taskQueue)).toEqual({ attempted: 0, succeeded: 0 });
      expect(worker.output()).not.toMatch(/webpack|Workflow bundle created/i);
    } finally {
      expect(await worker.stop()).toBe(0);
    }
  });

  it('refuses to start without a database URL, saying so', async () => {
    const worker = spawnProcess(['workflows/worker-main.ts'], { ...workerEnv('x'), DATABASE_URL: '' });
    const code = await new Promise<number | null>((resolve) => worker.child.once('exit', resolve));
    expect(code).toBe(1);
    expect(worker.output()).toContain('DATABASE_URL is required');
  });
});
