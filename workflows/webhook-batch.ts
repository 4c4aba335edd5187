/**
 * A batch of first attempts (workflow id = the batch id, whb_): one activity sends every delivery
 * of the batch (src/webhooks/batch.ts). A healthy delivery costs a share of one workflow; one whose
 * first attempt fails gets its own retry workflow (webhook-delivery.ts). Sandbox code.
 */
import { proxyLocalActivities } from '@temporalio/workflow';
import type { DeliverBatchInput, DeliverBatchResult } from '../src/webhooks/batch.ts';
import type { Activities } from './activities.ts';

export async function deliverBatch(input: DeliverBatchInput): Promise<DeliverBatchResult> {
  // A local activity: the batch costs one workflow task, not two plus an activity task. Measured
  // on the embedded dev server (bench/webhooks.ts): about half the Temporal server's CPU per batch,
  // the largest share of a delivery's cost. A slow receiver keeps it open up to the attempt timeout;
  // the worker extends its workflow task meanwhile (a heartbeat every 8 s). If the worker dies, the
  // workflow task times out (10 s) and another worker runs the batch again: recorded attempts are
  // replayed, only the ones in flight are sent again.
  const { attemptBatch } = proxyLocalActivities<Activities>({
    // The attempt timeout, plus the wait for slots, the records and the retry starts around it.
    startToCloseTimeout: input.attemptTimeoutMs + 120_000,
    // Only infrastructure failures (the database, Temporal when starting retries) are thrown;
    // retried in the worker up to a minute, then through durable timers.
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
    localRetryThreshold: '1m',
  });
  return attemptBatch(input);
}
