import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { Client, Connection } from '@temporalio/client';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EMBEDDED_SEARCH_ATTRIBUTE_VALUE_LIMIT, EMBEDDED_WEBHOOK_BATCH_SIZE } from '../../src/embedded/temporal.ts';
import { newId } from '../../src/ids.ts';
import { ensureSearchAttributes, SEARCH_ATTRIBUTE_NAMES, startBatchWorkflow } from '../../src/webhooks/starts.ts';

/**
 * Operators find every delivery in the Temporal UI by search attribute (docs/operating.md, "Watching
 * deliveries"). The embedded dev server registers them at start (the suite's server is one); a
 * namespace without them still gets its deliveries, started without the attributes and with an
 * error logged, until a worker (or an operator) registers them.
 */

let connection: Connection;
const lines: string[] = [];
const logger = pino({ level: 'info' }, new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) }));

beforeAll(async () => {
  connection = await Connection.connect({ address: inject('temporalAddress') });
});
afterAll(async () => {
  await connection?.close();
});

const label = (i: number) => ({
  deliveryId: `whd_sa${String(i).padStart(20, '0')}`,
  endpointId: 'whe_sa00000000000000000000',
  eventId: `wev_sa${String(i).padStart(20, '0')}`,
  eventType: 'order.created',
  accountId: 'acc_sa00000000000000000000',
  organisationId: 'org_sa00000000000000000000',
});
const settings = { taskQueue: 'no-worker-here', scheduleMs: [1_000], attemptTimeoutMs: 1_000 };

describe('webhook search attributes', () => {
  it('are registered on the embedded dev server, and a batch carries one value per delivery, endpoint and event', async () => {
    const listed = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    for (const name of SEARCH_ATTRIBUTE_NAMES) expect(listed.customAttributes?.[name], name).toBe(7);
    const client = new Client({ connection });
    const batchId = `whb_${randomBytes(8).toString('hex')}`;
    expect(await startBatchWorkflow(client, logger, settings, batchId, [label(1), label(2)])).toBe('started');
    expect(await startBatchWorkflow(client, logger, settings, batchId, [label(1), label(2)])).toBe('already started');
    const description = await client.workflow.getHandle(batchId).describe();
    expect(description.searchAttributes).toMatchObject({
      WebhookDeliveryIds: [label(1).deliveryId, label(2).deliveryId],
      WebhookEndpointIds: [label(1).endpointId],
      WebhookEventIds: [label(1).eventId, label(2).eventId],
    });
    await client.workflow.getHandle(batchId).terminate('test');
  });

  it('a batch of the size npm start and docker compose run keeps every delivery, endpoint and event id searchable', async () => {
    const client = new Client({ connection });
    // The worst case: every delivery of its own endpoint and event.
    const labels = Array.from({ length: EMBEDDED_WEBHOOK_BATCH_SIZE }, () => ({
      ...label(0),
      deliveryId: newId('webhookDelivery'),
      endpointId: newId('webhookEndpoint'),
      eventId: newId('webhookEvent'),
    }));
    const batchId = `whb_${randomBytes(8).toString('hex')}`;
    expect(await startBatchWorkflow(client, logger, settings, batchId, labels)).toBe('started');
    const { searchAttributes } = await client.workflow.getHandle(batchId).describe();
    expect(searchAttributes.WebhookDeliveryIds).toEqual(labels.map((l) => l.deliveryId));
    expect(searchAttributes.WebhookEndpointIds).toHaveLength(EMBEDDED_WEBHOOK_BATCH_SIZE);
    expect(searchAttributes.WebhookEventIds).toHaveLength(EMBEDDED_WEBHOOK_BATCH_SIZE);
    await client.workflow.getHandle(batchId).terminate('test');
  });

  it('a batch whose ids exceed the server’s limit starts without them, says which setting to change, and the next batch keeps its own', async () => {
    const client = new Client({ connection });
    // More 26-character ids than the server's limit holds, whatever their quoting.
    const count = Math.ceil(EMBEDDED_SEARCH_ATTRIBUTE_VALUE_LIMIT / 26) + 1;
    const tooMany = Array.from({ length: count }, () => ({ ...label(0), deliveryId: newId('webhookDelivery') }));
    const large = `whb_${randomBytes(8).toString('hex')}`;
    const before = lines.length;
    expect(await startBatchWorkflow(client, logger, settings, large, tooMany)).toBe('started');
    expect((await client.workflow.getHandle(large).describe()).searchAttributes).not.toHaveProperty('WebhookDeliveryIds');
    const logged = lines.slice(before).join('');
    expect(logged).toContain('lower WEBHOOK_BATCH_SIZE');
    expect(logged).not.toContain('not registered');

    const small = `whb_${randomBytes(8).toString('hex')}`;
    expect(await startBatchWorkflow(client, logger, settings, small, [label(4)])).toBe('started');
    const { searchAttributes } = await client.workflow.getHandle(small).describe();
    expect(searchAttributes).toMatchObject({ WebhookDeliveryIds: [label(4).deliveryId] });
    for (const id of [large, small]) await client.workflow.getHandle(id).terminate('test');
  });

  it('missing on a namespace: batches still start, without them, and the omission is logged; ensureSearchAttributes registers them', async () => {
    const namespace = `nosa-${randomBytes(4).toString('hex')}`;
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: { seconds: 86_400 as never } });
    // A new namespace takes a moment to be served by every service of the dev server.
    const client = new Client({ connection, namespace });
    const batchId = `whb_${randomBytes(8).toString('hex')}`;
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        expect(await startBatchWorkflow(client, logger, settings, batchId, [label(3)])).toBe('started');
        break;
      } catch (error) {
        if (Date.now() > deadline || !/namespace/i.test(String(error))) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    const description = await client.workflow.getHandle(batchId).describe();
    expect(description.searchAttributes).not.toHaveProperty('WebhookDeliveryIds');
    expect(lines.some((line) => line.includes('webhook search attributes are not registered'))).toBe(true);
    await client.workflow.getHandle(batchId).terminate('test');

    expect((await ensureSearchAttributes(connection, namespace)).sort()).toEqual([...SEARCH_ATTRIBUTE_NAMES].sort());
    expect(await ensureSearchAttributes(connection, namespace)).toEqual([]);
  });
});
