/**
 * The delivery workflow: one per webhook delivery (workflow id = the delivery id, whd_), so the
 * retry schedule lives in durable timers and survives any worker's death. Sandbox code: activities
 * are imported as types only.
 */
import { proxyLocalActivities, sleep } from '@temporalio/workflow';
import type { Activities } from './activities.ts';

export interface DeliverWebhookInput {
  deliveryId: string;
  /** Delays after attempt 1, 2, ... (WEBHOOK_RETRY_SCHEDULE at the time the delivery started). */
  scheduleMs: number[];
  /** Per-attempt timeout (WEBHOOK_ATTEMPT_TIMEOUT). */
  attemptTimeoutMs: number;
}

export interface DeliverWebhookResult {
  status: 'succeeded' | 'failed';
  /** Why delivery stopped before the schedule ran out (an endpoint disabled or deleted meanwhile). */
  stoppedBecause?: string;
  /** One entry per attempt, with the workflow clock's time of the attempt (ISO 8601). */
  attempts: Array<{ attemptNumber: number; at: string; ok: boolean; statusCode: number | null; error: string | null }>;
}

/** Longest a receiver's Retry-After may stretch a delay: double the schedule's step, or an hour if that is more. */
const RETRY_AFTER_CAP_MS = 60 * 60 * 1000;

/**
 * The delay before the next attempt: the schedule's step, or the receiver's Retry-After when that
 * is longer, capped at the larger of twice the step and one hour (a receiver cannot push a delivery
 * out indefinitely, nor pull it earlier than the schedule).
 */
export function retryDelayMs(stepMs: number, retryAfterMs?: number): number {
  if (retryAfterMs === undefined || retryAfterMs <= stepMs) return stepMs;
  return Math.min(retryAfterMs, Math.max(2 * stepMs, RETRY_AFTER_CAP_MS));
}

export async function deliverWebhook(input: DeliverWebhookInput): Promise<DeliverWebhookResult> {
  // Local activities: run by the worker that runs the workflow task, recorded as markers. A
  // delivery that succeeds at once then costs the Temporal server one workflow task instead of two
  // plus an activity task; the server is what bounds throughput (bench/webhooks.ts; on the dev
  // server, ~35% more no-op workflows/s than with a regular activity). If the worker dies
  // mid-attempt, the workflow task times out and another worker runs the attempt again:
  // attemptDelivery's record of attempt n makes that safe, as with a retried activity.
  const { attemptDelivery, scheduleNextAttempt, markDeliveryFailed } = proxyLocalActivities<Activities>({
    // The HTTP attempt's own timeout plus room for the database work around it.
    startToCloseTimeout: input.attemptTimeoutMs + 10_000,
    // Only infrastructure failures (the database) are thrown; they are retried until they pass
    // (in the worker up to a minute, then through durable timers). An HTTP failure is a returned
    // result and follows the delivery schedule instead.
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' },
    localRetryThreshold: '1m',
  });

  const total = 1 + input.scheduleMs.length;
  const attempts: DeliverWebhookResult['attempts'] = [];
  for (let n = 1; n <= total; n += 1) {
    const at = new Date().toISOString();
    const result = await attemptDelivery(input.deliveryId, n, { timeoutMs: input.attemptTimeoutMs, lastAttempt: n === total });
    attempts.push({ attemptNumber: n, at, ok: result.ok, statusCode: result.statusCode, error: result.error });
    if (result.ok) return { status: 'succeeded', attempts };
    if (result.stop) {
      return result.stop === 'delivery failed' ? { status: 'failed', attempts } : { status: 'failed', stoppedBecause: result.stop, attempts };
    }
    if (n === total) break;
    const delay = retryDelayMs(input.scheduleMs[n - 1]!, result.retryAfterMs);
    await scheduleNextAttempt(input.deliveryId, new Date(Date.now() + delay).toISOString());
    await sleep(delay);
  }
  // The last attempt's failure settles the delivery in the statement that records it; this covers a
  // last attempt found recorded while the delivery is still pending, and is a no-op otherwise.
  await markDeliveryFailed(input.deliveryId);
  return { status: 'failed', attempts };
}
