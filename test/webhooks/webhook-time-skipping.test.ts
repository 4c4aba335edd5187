import { randomBytes } from 'node:crypto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createDatabase, type Database } from '../../src/db/client.ts';
import { findTemporalTestServer } from '../../src/embedded/temporal.ts';
import { createLogger } from '../../src/log.ts';
import { bootstrapOrganisation } from '../../src/services/bootstrap-organisation.ts';
import { views } from '../../src/webhooks/payloads.ts';
import type { DeliverWebhookInput, DeliverWebhookResult } from '../../src/webhooks/workflow-contract.ts';
import { createWorker, installTemporalRuntime } from '../../workflows/worker.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { createTestEndpoint, recordTestEvent, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * The production schedule (contract.md: immediately, then after 5 s, 5 min, 30 min, 2 h, 5 h,
 * 10 h, 10 h) run to the end in seconds on Temporal's time-skipping test server, with the real
 * activities against the real database and a real receiver that always fails.
 */

let env: TestWorkflowEnvironment;
let database: TestDatabase;
let db: Database;
let receiver: WebhookReceiver;

beforeAll(async () => {
  const path = await findTemporalTestServer();
  if (!path) throw new Error('No .tools/temporal/temporal-test-server: run `bash scripts/ensure-temporal.sh`');
  installTemporalRuntime({ logger: new DefaultLogger('WARN') });
  env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: { type: 'existing-path', path } } });
  database = await createTestDatabase();
  db = createDatabase({ url: database.url, poolSize: 4 });
  receiver = await startWebhookReceiver({ failAlways: true });
});

afterAll(async () => {
  await receiver?.close();
  await db?.$disconnect();
  await database?.drop();
  await env?.teardown();
});

describe('webhook delivery on the production schedule', () => {
  it(
    'makes 8 attempts over about 27.6 hours, the timer gaps matching the schedule, then marks the delivery failed',
    { timeout: 120_000 },
    async () => {
      const config = loadConfig({
        NODE_ENV: 'test',
        DATABASE_URL: database.url,
        TEMPORAL_TASK_QUEUE: `wh-time-skipping-${randomBytes(4).toString('hex')}`,
        WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
        LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
      });
      // The defaults are the contract's schedule and timeout.
      expect(config.WEBHOOK_RETRY_SCHEDULE).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
      expect(config.WEBHOOK_ATTEMPT_TIMEOUT).toBe(15_000);

      const encryptionKey = randomBytes(32);
      const { worker } = await createWorker({
        config,
        db,
        logger: createLogger(config.LOG_LEVEL),
        prebundled: false,
        encryptionKey,
        connection: env.nativeConnection,
      });
      const org = await bootstrapOrganisation(db, {
        orgSlug: `ts-${randomBytes(4).toString('hex')}`,
        orgName: 'Time skipping',
        email: `admin-${randomBytes(4).toString('hex')}@ts.test`,
        password: 'admin password 1',
      });
      const ids = { organisationId: org.organisation.id, accountId: org.account.id };
      await createTestEndpoint(db, encryptionKey, { ...ids, receiver });
      const { deliveryIds } = await recordTestEvent(db, {
        ...ids,
        type: 'event.created',
        payload: views.event({
          id: 'evt_0000000000000000000002',
          name: 'Night show',
          status: 'draft',
          accountId: ids.accountId,
          venueId: null,
          timezone: 'UTC',
          createdAt: new Date(),
        }),
      });
      const [deliveryId] = deliveryIds as [string];

      const input: DeliverWebhookInput = {
        deliveryId,
        scheduleMs: config.WEBHOOK_RETRY_SCHEDULE,
        attemptTimeoutMs: config.WEBHOOK_ATTEMPT_TIMEOUT,
      };
      const startedAt = Date.now();
      const result = (await worker.runUntil(
        env.client.workflow.execute('deliverWebhook', { taskQueue: config.TEMPORAL_TASK_QUEUE, workflowId: deliveryId, args: [input] }),
      )) as DeliverWebhookResult;
      const realSeconds = (Date.now() - startedAt) / 1000;

      expect(result.status).toBe('failed');
      expect(result.attempts.map((a) => a.attemptNumber)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      // Workflow time between attempts: the schedule's step plus the attempt itself (milliseconds
      // of real time against a local receiver).
      const at = result.attempts.map((a) => Date.parse(a.at));
      const gaps = at.slice(1).map((t, i) => t - at[i]!);
      gaps.forEach((gap, i) => {
        expect(gap).toBeGreaterThanOrEqual(config.WEBHOOK_RETRY_SCHEDULE[i]!);
        expect(gap).toBeLessThan(config.WEBHOOK_RETRY_SCHEDULE[i]! + 5_000);
      });
      const span = at.at(-1)! - at[0]!;
      expect(span / 3_600_000).toBeGreaterThan(27.58);
      expect(span / 3_600_000).toBeLessThan(27.6);
      expect(realSeconds).toBeLessThan(60);

      const delivery = await db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } });
      expect(delivery).toMatchObject({ status: 'failed', attemptCount: 8, nextAttemptAt: null });
      expect(delivery.completedAt).toBeInstanceOf(Date);
      const attempts = await db.webhookAttempt.findMany({ where: { deliveryId }, orderBy: { attemptNumber: 'asc' } });
      expect(attempts.map((a) => [a.attemptNumber, a.statusCode])).toEqual(Array.from({ length: 8 }, (_, i) => [i + 1, 500]));
      expect(receiver.requests).toHaveLength(8);
      expect(new Set(receiver.requests.map((r) => r.headers['service-delivery-id']))).toEqual(new Set([deliveryId]));
      expect(receiver.requests.every((r) => r.verified)).toBe(true);
    },
  );
});
