/**
 * A batch of first attempts (workflow id = the batch id, whb_): one activity sends every delivery
 * of the batch (src/webhooks/batch.ts). A healthy delivery costs a share of one workflow; one whose
 * first attempt fails gets its own retry workflow (webhook-delivery.ts). Sandbox code.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { DeliverBatchInput, DeliverBatchResult } from '../src/webhooks/batch.ts';
import type { Activities } from './activities.ts';

export async function deliverBatch(input: DeliverBatchInput): Promise<DeliverBatchResult> {
  // A regular activity, not a local one: a slow receiver keeps it open up to the attempt timeout,
  // which would pin a workflow task (and heartbeat it) if it were local. Its heartbeats stop when
  // its worker dies, and another worker runs it again: recorded attempts are replayed, only the
  // ones in flight are sent again.
  const { attemptBatch } = proxyActivities<Activities>({
    // The attempt timeout, plus the wait for slots, the records and the retry starts around it.
    startToCloseTimeout: input.attemptTimeoutMs + 120_000,
    heartbeatTimeout: '20s',
    // Only infrastructure failures (the database, Temporal when starting retries) are thrown.
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
  });
  return attemptBatch(input);
}
