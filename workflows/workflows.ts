/**
 * Workflow definitions. This file runs in Temporal's deterministic sandbox: it imports
 * activities as types only, never server code.
 */
import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from './activities.ts';

export { deliverBatch } from './webhook-batch.ts';
export { deliverWebhook } from './webhook-delivery.ts';
export { recoverWebhookEndpoint, resendWebhookDelivery } from './webhook-manual.ts';

const { ping: pingActivity } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

/** A trivial workflow that proves a worker is connected and can reach the database. */
export async function ping(name: string): Promise<{ reply: string; workflowId: string; database: string }> {
  const result = await pingActivity(name);
  return { reply: `pong: ${name}`, workflowId: workflowInfo().workflowId, database: result.database };
}
